"""Metrics under the names Google ADK uses, with its semantics (Vanna's: `metrics/vanna/evaluators.py`).

The deterministic criteria (`tool_trajectory_avg_score`, `response_match_score`) live in
`proctor.metrics.adk.criteria`, `final_response_match_v2` in `adk_judged`, `hallucinations_v1` in
`adk_hallucinations`, the rubric judges in `adk_rubric` and `adk_multi_turn`,
`per_turn_user_simulator_quality_v1` in `simulator_quality` and the informational
efficiency metrics in `adk_efficiency`; this module names them together.
"""

from __future__ import annotations

from proctor.metrics.adk.criteria import ResponseMatchScore, ToolTrajectoryAvgScore
from proctor.metrics.adk.efficiency import ADK_EFFICIENCY
from proctor.metrics.adk.hallucinations import HallucinationsV1
from proctor.metrics.adk.judged import FinalResponseMatchV2, majority
from proctor.metrics.adk.multi_turn import RubricBasedMultiTurnTrajectoryQualityV1
from proctor.metrics.adk.rubric import (
    AdkRubric,
    RubricBasedFinalResponseQualityV1,
    RubricBasedToolUseQualityV1,
)
from proctor.metrics.adk.simulator_quality import PerTurnUserSimulatorQualityV1
from proctor.metrics.base import Metric

__all__ = ["AdkRubric", "COMPAT_METRICS", "majority"]

COMPAT_METRICS: tuple[type[Metric], ...] = (
    ToolTrajectoryAvgScore,
    ResponseMatchScore,
    FinalResponseMatchV2,
    RubricBasedFinalResponseQualityV1,
    RubricBasedToolUseQualityV1,
    HallucinationsV1,
    RubricBasedMultiTurnTrajectoryQualityV1,
    PerTurnUserSimulatorQualityV1,
    *ADK_EFFICIENCY,
)
