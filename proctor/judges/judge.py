"""A judge as a metric uses it: a model, a prompt template, a reply schema, and the cache.

`Judge.ask` renders the prompt (the metric's template, or the user's `custom_prompt`), calls
the model, and parses the reply into the metric's schema. A reply that does not parse is an
error that keeps the raw text, never a score; only replies that parse are cached, so a retry
really asks again.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, TypeVar

from jinja2 import Environment, PackageLoader, StrictUndefined
from jinja2.sandbox import SandboxedEnvironment
from pydantic import BaseModel, ValidationError

from proctor.judges.cache import JudgeCache
from proctor.judges.client import JudgeClient, JudgeReply, JudgeReplyError, cache_key
from proctor.models.case import MetricSpec

T = TypeVar("T", bound=BaseModel)

SYSTEM_PROMPT = (
    "You are an impartial evaluator of an AI assistant's work. Judge only what you are shown. "
    "Answer with a single JSON object and nothing else, in exactly this shape: {schema}"
)
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


@lru_cache(maxsize=1)
def templates() -> Environment:
    return Environment(
        loader=PackageLoader("proctor.judges", "templates"),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # prompts are plain text for a model, not HTML
    )


@lru_cache(maxsize=1)
def _custom_templates() -> SandboxedEnvironment:
    # A suite's custom prompt is input from whoever wrote the suite: render it sandboxed.
    return SandboxedEnvironment(undefined=StrictUndefined, autoescape=False)


def render_prompt(template: str, custom_prompt: str | None, **variables: Any) -> str:
    if custom_prompt:
        return _custom_templates().from_string(custom_prompt).render(**variables)
    return templates().get_template(template).render(**variables)


def parse_reply(text: str, schema: type[T]) -> T:
    """The reply as `schema`; accepts a ```json fence or prose around one JSON object."""
    candidate = text.strip()
    fenced = _FENCE.match(candidate)
    if fenced:
        candidate = fenced.group(1)
    try:
        data = json.loads(candidate)
    except json.JSONDecodeError:
        start, end = candidate.find("{"), candidate.rfind("}")
        try:
            data = json.loads(candidate[start : end + 1]) if start != -1 and end > start else None
        except json.JSONDecodeError:
            data = None
        if data is None:
            raise JudgeReplyError("judge reply is not JSON", raw=text) from None
    try:
        return schema.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'reply'}: {e['msg']}" for e in error.errors())
        raise JudgeReplyError(f"judge reply does not fit the expected shape ({problems})", raw=text) from None


@dataclass
class Usage:
    """What a metric's judge calls cost, summed over samples and steps."""

    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    models: set[str] = field(default_factory=set)

    def add(self, reply: JudgeReply) -> None:
        self.calls += 1
        self.cached += reply.cached
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        self.models.add(reply.model)


@dataclass(frozen=True)
class Judge:
    """Everything a judged metric needs to ask its model one question."""

    client: JudgeClient
    model: str
    temperature: float = 0.0
    custom_prompt: str | None = None
    timeout_s: float | None = None
    max_tokens: int | None = None
    cache: JudgeCache | None = None
    gate: Callable[[], AbstractAsyncContextManager[Any]] | None = None  # e.g. a cross-worker call limit

    @classmethod
    def for_spec(
        cls,
        spec: MetricSpec,
        client: JudgeClient,
        cache: JudgeCache | None,
        *,
        default_model: str,
        timeout_s: float,
    ) -> Judge:
        """The judge a metric spec asks for: its model (else the default), prompt and timeout."""
        provider = spec.model
        return cls(
            client=client,
            model=provider.name if provider else default_model,
            temperature=provider.temperature if provider and provider.temperature is not None else 0.0,
            max_tokens=provider.max_tokens if provider else None,
            custom_prompt=spec.custom_prompt,
            timeout_s=spec.timeout_ms / 1000 if spec.timeout_ms else timeout_s,
            cache=cache,
        )

    async def ask(
        self,
        template: str,
        schema: type[T],
        usage: Usage,
        *,
        sample: int = 0,
        temperature: float | None = None,
        **variables: Any,
    ) -> T:
        schema_hint = json.dumps(
            getattr(schema, "example", {"score": "<number>", "reason": "<one sentence>"})
        )
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT.format(schema=schema_hint)},
            {"role": "user", "content": render_prompt(template, self.custom_prompt, **variables)},
        ]
        temperature = self.temperature if temperature is None else temperature
        params = {"temperature": temperature, "sample": sample, "max_tokens": self.max_tokens}
        key = cache_key(self.client.base_url, self.model, messages, params)
        reply = await self.cache.get(key) if self.cache is not None else None
        if reply is None:
            async with self.gate() if self.gate else contextlib.nullcontext():
                reply = await self.client.complete(
                    model=self.model,
                    messages=messages,
                    temperature=temperature,
                    timeout_s=self.timeout_s,
                    max_tokens=self.max_tokens,
                )
            verdict = parse_reply(reply.text, schema)
            if self.cache is not None:
                await self.cache.put(key, reply)
        else:
            verdict = parse_reply(reply.text, schema)
        usage.add(reply)
        return verdict
