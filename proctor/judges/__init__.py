"""LLM judges: credentials, the OpenAI-compatible client, prompts, reply parsing and the cache."""

from proctor.judges.cache import JudgeCache
from proctor.judges.client import CallOptions, JudgeClient, JudgeError, JudgeReply, JudgeReplyError
from proctor.judges.credentials import CredentialError, redact, resolve_api_key, resolve_base_url
from proctor.judges.judge import Judge, Usage, parse_reply, render_prompt

__all__ = [
    "CallOptions",
    "CredentialError",
    "Judge",
    "JudgeCache",
    "JudgeClient",
    "JudgeError",
    "JudgeReply",
    "JudgeReplyError",
    "Usage",
    "parse_reply",
    "redact",
    "render_prompt",
    "resolve_api_key",
    "resolve_base_url",
]
