"""Serve Proctor's deployments from this process: the Python equivalent of `prefect.yaml`.

`python deployments/serve.py` (installed: `python -m proctor.deployments.serve`) registers the
`nightly` and `evaluate` deployments with the
Prefect server named by PREFECT_API_URL and runs their flow runs here until stopped (no work
pool or worker needed). The schedule and defaults match `prefect.yaml`; change both together.
"""

from __future__ import annotations

from prefect import serve
from prefect.schedules import Cron

from proctor.flows.evaluate import EvaluationRequest, evaluate
from proctor.models.notify import NotifyPolicy, SlackSettings

EXAMPLE_SUITE = "examples/weather/weather.evalset.json"
NIGHTLY_CRON, NIGHTLY_TIMEZONE = "0 3 * * *", "Europe/Paris"


def nightly_request() -> EvaluationRequest:
    return EvaluationRequest(
        suite=EXAMPLE_SUITE,
        min_pass_rate=80,
        slack=SlackSettings(channel="#agent-evals", notify=NotifyPolicy.REGRESSION),
    )


def deployments() -> list:
    nightly = evaluate.to_deployment(
        name="nightly",
        description="Nightly regression run, compared with the last good run and posted to Slack.",
        schedule=Cron(NIGHTLY_CRON, timezone=NIGHTLY_TIMEZONE),
        parameters={"request": nightly_request().model_dump(mode="json", exclude_defaults=True)},
        tags=["proctor", "nightly"],
        concurrency_limit=1,
    )
    on_demand = evaluate.to_deployment(
        name="evaluate",
        description="Evaluate one suite with one agent (or variants), on demand.",
        parameters={"request": {"suite": EXAMPLE_SUITE}},
        tags=["proctor", "on-demand"],
    )
    return [nightly, on_demand]


def main() -> None:
    serve(*deployments())


if __name__ == "__main__":
    main()
