"""Metrics under the names Google ADK uses, with its semantics (Vanna's: `metrics/vanna.py`).

The deterministic criteria (`tool_trajectory_avg_score`, `response_match_score`) live in
`proctor.metrics.adk`, the judged ones (`final_response_match_v2`,
`hallucinations_v1`) in `proctor.metrics.adk_judged`, the rubric judges in `adk_rubric` and the
informational efficiency metrics in `adk_efficiency`; this module names them together.
"""

from __future__ import annotations

from proctor.metrics.adk import ResponseMatchScore, ToolTrajectoryAvgScore
from proctor.metrics.adk_efficiency import ADK_EFFICIENCY
from proctor.metrics.adk_judged import FinalResponseMatchV2, HallucinationsV1, majority
from proctor.metrics.adk_rubric import (
    AdkRubric,
    RubricBasedFinalResponseQualityV1,
    RubricBasedToolUseQualityV1,
)
from proctor.metrics.base import Metric

__all__ = ["AdkRubric", "COMPAT_METRICS", "majority"]

COMPAT_METRICS: tuple[type[Metric], ...] = (
    ToolTrajectoryAvgScore,
    ResponseMatchScore,
    FinalResponseMatchV2,
    RubricBasedFinalResponseQualityV1,
    RubricBasedToolUseQualityV1,
    HallucinationsV1,
    *ADK_EFFICIENCY,
)
