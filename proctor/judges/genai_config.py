"""google-genai's `GenerateContentConfig` (an ADK criterion's `judge_model_config`, the simulated
user's `model_configuration`) as a call to an OpenAI-compatible endpoint.

ADK hands the config to its model as the request's config. What its adapter for non-Gemini
models sends an OpenAI-compatible endpoint (google-adk 2.13.0 models/lite_llm.py,
`_get_completion_inputs`) is what Proctor sends: `temperature`, `top_p`, `max_output_tokens`
(as `max_tokens`, the cap Proctor's judges already send), `stop_sequences` (as `stop`), `seed`,
`presence_penalty`, `frequency_penalty`, and the system instruction (text, or a Content's text
parts joined by newlines) as a system message. `response_mime_type: application/json` asks for
JSON (JSON mode), as it makes Gemini answer in JSON. `automatic_function_calling` is what ADK
overrides for every judge call (judges send no tools), so it changes nothing here either.
Every other field is named by `unsent_fields`, for a loader's warning.
"""

from __future__ import annotations

from typing import Any

from proctor.judges.client import CallOptions

_PARAMS = {
    "top_p": "top_p",
    "stop_sequences": "stop",
    "seed": "seed",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
}
_PLAIN_TEXT = ("text/plain",)
_OVERRIDDEN_BY_ADK = {"automatic_function_calling"}


def system_text(value: Any) -> str | None:
    """The system instruction as ADK's adapter extracts it: a string, or a Content's text parts
    joined by newlines; None for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("parts"), list):
        texts = [part["text"] for part in value["parts"] if isinstance(part, dict) and part.get("text")]
        return "\n".join(texts) if texts else None
    return None


def _honoured(name: str, value: Any) -> bool:
    if name in _PARAMS or name in ("temperature", "max_output_tokens") or name in _OVERRIDDEN_BY_ADK:
        return True
    if name == "system_instruction":
        return system_text(value) is not None
    if name == "response_mime_type":
        return value == "application/json" or value in _PLAIN_TEXT
    return False


def unsent_fields(config: dict[str, Any]) -> list[str]:
    """The fields of a config (set, by snake_case name) that a judge call does not carry."""
    return [name for name, value in config.items() if not _honoured(name, value)]


def call_options(config: dict[str, Any] | None) -> tuple[float | None, CallOptions]:
    """The config's temperature (None when unset) and the rest of what the call carries."""
    config = config or {}
    return config.get("temperature"), CallOptions(
        system=system_text(config.get("system_instruction")),
        json_mode=config.get("response_mime_type") == "application/json",
        max_tokens=config.get("max_output_tokens"),
        params={_PARAMS[name]: value for name, value in config.items() if name in _PARAMS},
    )
