"""Serve the evaluation flow from this process, the Python equivalent of `prefect.yaml`.

`python deployments/serve.py` registers the `evaluate` deployment with the Prefect server
named by PREFECT_API_URL and runs its flow runs here until stopped.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flows.evaluate import EvaluationRequest, evaluate  # noqa: E402


def main() -> None:
    evaluate.serve(
        name="evaluate",
        description="Evaluate one suite with one agent, on demand.",
        parameters={"request": EvaluationRequest(suite="examples/weather/weather.evalset.json").model_dump()},
    )


if __name__ == "__main__":
    main()
