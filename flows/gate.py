"""How a finished run's verdict reaches Prefect: a gate that does not hold ends the flow run
in a Failed-type state, named after why, so the UI shows it red, `prefect deployment run
--watch` exits 1 and automations on failed flow runs fire; and how in-process callers (the
CLI, tests, benches) still get the run's summary back.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import Any

from proctor.models.request import EvaluationRequest, RunSummary

# The summaries of runs that finished inside the current `run_evaluation` call: once a run has
# stored everything, Prefect's own bookkeeping of the flow run's end (a state proposal that
# times out on a loaded API and is retried, a result it cannot read back) must not turn a
# complete run into an error for the in-process caller.
_FINISHED: ContextVar[list[RunSummary] | None] = ContextVar("proctor_finished_runs", default=None)


class GateFailed(RuntimeError):
    """The run completed and stored everything, but its gate did not hold. Raised to an
    in-process caller of the flow; `summary` is the run's summary."""

    def __init__(self, summary: RunSummary, message: str) -> None:
        super().__init__(message)
        self.summary = summary


def gate_name(summary: RunSummary) -> str:
    runs = summary.variants or [summary]
    if summary.regressed:
        return "Regressed"
    if any(run.min_pass_rate is not None for run in runs):
        return "Below pass rate"
    return "Failed cases"


def gate_details(summary: RunSummary) -> str:
    return "; ".join(
        f"{run.variant + ': ' if run.variant else ''}{run.passed}/{run.total} passed, {run.errored} errored"
        + (", regressed against its history" if (run.regression or {}).get("regressed") else "")
        for run in summary.variants or [summary]
    )


async def gate_state(summary: RunSummary) -> Any:
    """The summary itself when the gate holds; else a Failed state named after why.

    Prefect retries a flow run that proposes Failed while it has retries left; a gate failure
    is a verdict, not an accident, so the run's retries are set to none first. Not on a run
    that is itself a retry: Prefect 3.8 then hands the first attempt's exception to an
    in-process caller when the flow returns a state, so that retry ends plain Completed.
    """
    from prefect.context import FlowRunContext
    from prefect.states import Failed

    finished = _FINISHED.get()
    if finished is not None:
        finished.append(summary)
    context = FlowRunContext.get()
    run = context.flow_run if context else None
    if summary.all_passed or (run is not None and (run.run_count or 1) > 1):
        return summary
    if run is not None and run.empirical_policy.retries:
        policy = run.empirical_policy.model_copy(update={"retries": 0})
        await context.client.update_flow_run(run.id, empirical_policy=policy)  # type: ignore[union-attr]
    message = gate_details(summary)
    return Failed(name=gate_name(summary), message=message, data=GateFailed(summary, message))


async def run_evaluation(request: EvaluationRequest) -> RunSummary:
    """Run the flow in this process and return its summary, whether or not its gate held
    (`summary.all_passed` says which); a run that could not complete raises."""
    from proctor.flows.evaluate import evaluate
    from proctor.storage.opening import password_by_reference

    # The flow's parameters are stored by Prefect: the database password goes by reference.
    request = request.model_copy(update={"database_url": password_by_reference(request.database_url)})
    finished: list[RunSummary] = []
    token = _FINISHED.set(finished)
    try:
        return await evaluate(request)
    except GateFailed as verdict:
        return verdict.summary
    except Exception as error:
        if not finished:
            raise
        # Everything was stored and reported before this: only the flow run's end, as the
        # Prefect API records it, went wrong. The summary is the run's; the UI may lag.
        logging.getLogger("proctor").warning(
            "run %s finished, but Prefect could not record the flow run's end: %s", finished[-1].run_id, error
        )
        return finished[-1]
    finally:
        _FINISHED.reset(token)
