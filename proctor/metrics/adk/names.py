"""Which google-adk release Proctor's ADK metrics follow, ADK's prebuilt metric names it refuses
(with the reason) and the efficiency metrics ADK reports for every eval: kept apart from the
metrics so the registry and the loaders can name them without importing any metric module."""

from __future__ import annotations

ADK_VERSION = "2.13.0"
"""The google-adk release whose scores Proctor's ADK metrics reproduce (the `adk` extra pins it)."""

_VERTEX = (
    "google-adk {version} scores it with Vertex AI's hosted evaluation service ({what}), whose "
    "judge prompt is not part of google-adk; Proctor cannot give ADK's score for it"
)

ADK_EFFICIENCY_METRICS = (
    "tool_call_count_v1",
    "inference_call_count_v1",
    "token_usage_v1",
    "invocation_duration_v1",
)
"""google-adk 2.13.0's informational metrics, in the order it appends them to every eval
(`eval_config._DEFAULT_EFFICIENCY_METRICS`): reported for every ADK case, never named in criteria."""

ADK_METRICS_NOT_SCORED = {
    "response_evaluation_score": _VERTEX.format(version=ADK_VERSION, what="COHERENCE, 1-5"),
    "safety_v1": _VERTEX.format(version=ADK_VERSION, what="PrebuiltMetric.SAFETY v1"),
    "multi_turn_task_success_v1": _VERTEX.format(version=ADK_VERSION, what="MULTI_TURN_TASK_SUCCESS"),
    "multi_turn_trajectory_quality_v1": _VERTEX.format(
        version=ADK_VERSION, what="MULTI_TURN_TRAJECTORY_QUALITY"
    ),
    "multi_turn_tool_use_quality_v1": _VERTEX.format(version=ADK_VERSION, what="MULTI_TURN_TOOL_USE_QUALITY"),
}
"""ADK 2.13.0's prebuilt metrics that Proctor refuses, by name, with the reason."""
