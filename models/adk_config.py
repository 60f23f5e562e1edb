"""Google ADK 2.13.0's configuration models, as a `test_config.json` writes them: a criterion's
`judge_model_options` (eval_metrics.py `JudgeModelOptions`), its `judge_model_config` and the
simulated user's `model_configuration` (google-genai's `GenerateContentConfig`), the LLM-backed
user simulator's config (simulation/llm_backed_user_simulator.py
`LlmBackedUserSimulatorConfig`), and EvalConfig's `live_model_config` and `custom_metrics`.

Keys are ADK's, in snake_case or camelCase. An unknown key is an error, as it is in ADK (whose
models forbid extra fields here too). What Proctor does with every field is in docs/suites/adk.md
(`test_config.json`); `proctor.judges.genai_config` turns a GenerateContentConfig into a judge call.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator
from pydantic.alias_generators import to_camel


class AdkModel(BaseModel):
    """ADK's `EvalBaseModel` settings: camelCase aliases, snake_case names, no extra fields."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


# google-genai's GenerateContentConfig fields, in its order (the google-genai google-adk 2.13.0
# installs; tests/loaders/adk/test_config.py checks the list against it when it is installed).
GENERATE_CONTENT_CONFIG_FIELDS = (
    "http_options",
    "should_return_http_response",
    "system_instruction",
    "temperature",
    "top_p",
    "top_k",
    "candidate_count",
    "max_output_tokens",
    "stop_sequences",
    "response_logprobs",
    "logprobs",
    "presence_penalty",
    "frequency_penalty",
    "seed",
    "response_mime_type",
    "response_schema",
    "response_json_schema",
    "routing_config",
    "model_selection_config",
    "safety_settings",
    "tools",
    "tool_config",
    "labels",
    "cached_content",
    "response_modalities",
    "media_resolution",
    "speech_config",
    "audio_timestamp",
    "automatic_function_calling",
    "thinking_config",
    "image_config",
    "enable_enhanced_civic_answers",
    "model_armor_config",
    "service_tier",
    "audio_transcription_config",
    "continuation_token",
    "automatic_continuation",
    "generation_output_config",
    "store",
)
_TYPED: dict[str, Any] = {  # the fields a judge call sends are checked; the rest are kept as given
    "temperature": (float | None, Field(default=None, ge=0.0, le=2.0)),
    "top_p": (float | None, Field(default=None, ge=0.0, le=1.0)),
    "max_output_tokens": (int | None, Field(default=None, gt=0)),
    "stop_sequences": (list[str] | None, None),
    "seed": (int | None, None),
    "presence_penalty": (float | None, None),
    "frequency_penalty": (float | None, None),
    "response_mime_type": (str | None, None),
}
GenerateContentConfig = create_model(  # type: ignore[call-overload]
    "GenerateContentConfig",
    __base__=AdkModel,
    __doc__="google-genai's `GenerateContentConfig`: every field ADK accepts, none other.",
    **{name: _TYPED.get(name, (Any, None)) for name in GENERATE_CONTENT_CONFIG_FIELDS},
)


def set_fields(config: BaseModel | None) -> dict[str, Any]:
    """The fields a GenerateContentConfig sets (null is unset), by snake_case name."""
    return {} if config is None else config.model_dump(mode="json", exclude_none=True)


class JudgeModelOptions(AdkModel):
    """ADK's `JudgeModelOptions`. Unset fields take ADK's defaults where the metric reads them
    (num_samples 5, parallelism_limit 1); `judge_model` unset is Proctor's default judge model
    (ADK's is gemini-2.5-flash, which an OpenAI-compatible endpoint does not serve)."""

    judge_model: str | None = None
    judge_model_config: GenerateContentConfig | None = None  # type: ignore[valid-type]
    num_samples: int | None = Field(default=None, ge=1)
    parallelism_limit: int | None = Field(default=None, ge=1)


def is_valid_user_simulator_template(template: str, required: list[str]) -> bool:
    """ADK's `is_valid_user_simulator_template`: valid Jinja naming every required variable."""
    from jinja2 import StrictUndefined, exceptions, meta
    from jinja2.sandbox import SandboxedEnvironment

    try:
        parsed = SandboxedEnvironment(undefined=StrictUndefined).parse(template)
    except (exceptions.TemplateSyntaxError, exceptions.UndefinedError):
        return False
    return all(name in meta.find_undeclared_variables(parsed) for name in required)


class AdkUserSimulatorConfig(AdkModel):
    """ADK's `LlmBackedUserSimulatorConfig` (`type` "llm_backed", the default): the simulated
    user of `conversation_scenario` cases. `model` unset is Proctor's default simulator model
    (ADK's is gemini-2.5-flash)."""

    type: str = "llm_backed"
    model: str | None = None
    model_configuration: GenerateContentConfig | None = None  # type: ignore[valid-type]
    max_allowed_invocations: int = 20
    custom_instructions: str | None = None
    include_function_calls: bool = False

    @field_validator("type")
    @classmethod
    def _text_simulator(cls, value: str) -> str:
        if value == "llm_audio":
            raise ValueError(
                "ADK's audio user simulator (llm_audio) speaks to Live (bidirectional audio) agents; "
                "Proctor runs text conversations only: use type llm_backed"
            )
        if value != "llm_backed":
            raise ValueError(f"expected type llm_backed (ADK's LLM-backed user simulator); found {value!r}")
        return value

    @field_validator("max_allowed_invocations")
    @classmethod
    def _some_conversation(cls, value: int) -> int:
        if value == 0 or value < -1:
            raise ValueError(
                "expected -1 (no limit) or at least 1 (the starting prompt counts as one invocation, "
                f"as in ADK); {value} would run no conversation"
            )
        return value

    @field_validator("custom_instructions")
    @classmethod
    def _placeholders(cls, value: str | None) -> str | None:
        required = ["stop_signal", "conversation_plan", "conversation_history"]
        if value is not None and not is_valid_user_simulator_template(value, required):
            raise ValueError(  # ADK's own message
                "custom_instructions must contain each of the following formatting placeholders using "
                "Jinja syntax: {{ stop_signal }}, {{ conversation_plan }}, {{ conversation_history }}"
            )
        return value


class LiveModelConfig(AdkModel):
    """ADK's `LiveModelConfig`: only for Live (bidirectional streaming) runs."""

    timeout_seconds: int = 300


ADK_SIMULATOR_KEYS = {
    "type",
    "model_configuration",
    "modelConfiguration",
    "max_allowed_invocations",
    "maxAllowedInvocations",
    "custom_instructions",
    "customInstructions",
    "include_function_calls",
    "includeFunctionCalls",
}


def simulator_config(value: Any) -> Any:
    """`user_simulator_config` as ADK's (any of its own keys) or agentflow's (model, goals,
    max_invocations, instructions); each loader refuses the other's with the reason."""
    from proctor.models.agentflow import UserSimulatorConfig

    if not isinstance(value, dict):
        return value
    if ADK_SIMULATOR_KEYS & set(value):
        return AdkUserSimulatorConfig.model_validate(value)
    return UserSimulatorConfig.model_validate(value)


def refuse_custom_metrics(value: Any) -> Any:
    if value is not None:
        raise ValueError(
            "ADK custom metrics (a code_config function with ADK's evaluator signature) are not run by "
            "Proctor: name a Proctor metric in criteria, or a HoloDeck code grader (type: code)"
        )
    return value
