"""Which google-adk release Proctor's ADK metrics follow, and ADK's prebuilt metric names it
refuses, with the reason: kept apart from the metrics so the registry can name them without
importing any metric module."""

from __future__ import annotations

ADK_VERSION = "2.13.0"
"""The google-adk release whose scores Proctor's ADK metrics reproduce (the `adk` extra pins it)."""

_VERTEX = (
    "google-adk {version} scores it with Vertex AI's hosted evaluation service ({what}), whose "
    "judge prompt is not part of google-adk; Proctor cannot give ADK's score for it"
)
_LATER = "not implemented in Proctor yet (google-adk {version}: {what})"
_INFORMATIONAL = "informational, takes no threshold"

ADK_METRICS_NOT_SCORED = {
    "response_evaluation_score": _VERTEX.format(version=ADK_VERSION, what="COHERENCE, 1-5"),
    "safety_v1": _VERTEX.format(version=ADK_VERSION, what="PrebuiltMetric.SAFETY v1"),
    "multi_turn_task_success_v1": _VERTEX.format(version=ADK_VERSION, what="MULTI_TURN_TASK_SUCCESS"),
    "multi_turn_trajectory_quality_v1": _VERTEX.format(
        version=ADK_VERSION, what="MULTI_TURN_TRAJECTORY_QUALITY"
    ),
    "multi_turn_tool_use_quality_v1": _VERTEX.format(version=ADK_VERSION, what="MULTI_TURN_TOOL_USE_QUALITY"),
    "tool_call_count_v1": _LATER.format(version=ADK_VERSION, what=_INFORMATIONAL),
    "inference_call_count_v1": _LATER.format(version=ADK_VERSION, what=_INFORMATIONAL),
    "token_usage_v1": _LATER.format(version=ADK_VERSION, what=_INFORMATIONAL),
    "invocation_duration_v1": _LATER.format(version=ADK_VERSION, what=_INFORMATIONAL),
}
"""ADK 2.13.0's prebuilt metrics that Proctor refuses, by name, with the reason."""
