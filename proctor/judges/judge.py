"""A judge as a metric uses it: a model, a prompt template, a reply schema, and the cache.

`Judge.ask` renders the prompt (the metric's template, or the user's `custom_prompt`), calls
the model, parses the reply into the metric's schema and runs the metric's own checks on it
(scale, every rubric answered). A reply that fails any of them is an error that keeps the raw
text, never a score; only replies that pass every check are cached, so a retry really asks
again and a later run never repeats a bad answer.

Tokens are counted when a reply arrives, before it is checked: a reply that turns out to be
unusable was still paid for. What the cache answered is counted apart, as tokens saved.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, TypeVar

from jinja2 import Environment, PackageLoader, StrictUndefined
from jinja2.sandbox import SandboxedEnvironment
from pydantic import BaseModel, ValidationError

from proctor.calls.limits import call_in_slot, held_call_timeout
from proctor.judges.cache import JudgeCache
from proctor.judges.client import CallOptions, JudgeClient, JudgeReply, JudgeReplyError, cache_key
from proctor.models.case import MetricSpec

T = TypeVar("T", bound=BaseModel)
P = TypeVar("P")

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


class _RepeatedKey(ValueError):
    pass


def _one_value_per_key(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise _RepeatedKey(repr(key))
        data[key] = value
    return data


@lru_cache(maxsize=64)
def _number_fields(schema: type[BaseModel]) -> tuple[str, ...]:
    """The fields of a reply's schema that hold a number (JSON's true would pass as 1)."""
    numbers = (int, float, int | None, float | None)
    return tuple(name for name, info in schema.model_fields.items() if info.annotation in numbers)


def parse_reply(text: str, schema: type[T]) -> T:
    """The reply as `schema`; accepts a ```json fence or prose around one JSON object."""
    candidate = text.strip()
    fenced = _FENCE.match(candidate)
    if fenced:
        candidate = fenced.group(1)
    try:
        try:
            data = json.loads(candidate, object_pairs_hook=_one_value_per_key)
        except json.JSONDecodeError:
            start, end = candidate.find("{"), candidate.rfind("}")
            try:
                data = (
                    json.loads(candidate[start : end + 1], object_pairs_hook=_one_value_per_key)
                    if start != -1 and end > start
                    else None
                )
            except json.JSONDecodeError:
                data = None
            if data is None:
                raise JudgeReplyError("judge reply is not JSON", raw=text) from None
    except _RepeatedKey as repeated:  # {"score": 1, "score": 5}: which one did the judge mean?
        raise JudgeReplyError(f"judge reply gives {repeated} more than once", raw=text) from None
    for name in _number_fields(schema):
        if isinstance(data, dict) and isinstance(data.get(name), bool):  # {"score": true} is not 1
            raise JudgeReplyError(
                f"judge reply's {name} is {str(data[name]).lower()}, not a number", raw=text
            )
    try:
        return schema.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'reply'}: {e['msg']}" for e in error.errors())
        raise JudgeReplyError(f"judge reply does not fit the expected shape ({problems})", raw=text) from None


@dataclass
class Usage:
    """What a metric's judge calls cost, summed over samples and steps.

    `calls` counts every answer (from the model or the cache); `prompt_tokens` and
    `completion_tokens` are what the model was paid for, `saved_*` what the cache answered
    instead (the tokens the original call cost)."""

    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    saved_prompt_tokens: int = 0
    saved_completion_tokens: int = 0
    models: set[str] = field(default_factory=set)

    def add(self, reply: JudgeReply) -> None:
        self.calls += 1
        if reply.cached:
            self.cached += 1
            self.saved_prompt_tokens += reply.prompt_tokens
            self.saved_completion_tokens += reply.completion_tokens
        else:
            self.prompt_tokens += reply.prompt_tokens
            self.completion_tokens += reply.completion_tokens
        self.models.add(reply.model)

    def merge(self, other: Usage) -> None:
        self.calls += other.calls
        self.cached += other.cached
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.saved_prompt_tokens += other.saved_prompt_tokens
        self.saved_completion_tokens += other.saved_completion_tokens
        self.models |= other.models


# Every judge answer of the metric being scored, across all its attempts. A metric's own `Usage`
# is lost with the exception when an attempt fails (a reply off the scale, a timeout after some
# samples); the runner sets this ledger around all attempts so failed ones are paid for too.
spending: ContextVar[Usage | None] = ContextVar("judge_spending", default=None)


def _record(usage: Usage, reply: JudgeReply) -> None:
    usage.add(reply)
    ledger = spending.get()
    if ledger is not None and ledger is not usage:
        ledger.add(reply)


def _verdict(reply: JudgeReply, schema: type[T], check: Callable[[T], None] | None) -> T:
    """The reply as `schema`, having passed the metric's checks; an error keeps the raw text."""
    verdict = parse_reply(reply.text, schema)
    if check is not None:
        try:
            check(verdict)
        except JudgeReplyError as error:
            error.raw = error.raw or reply.text
            raise
    return verdict


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
        check: Callable[[T], None] | None = None,
        **variables: Any,
    ) -> T:
        """The judge's verdict. `check` raises `JudgeReplyError` for a reply the metric cannot
        use (a score off its scale, a rubric left out): such a reply is never cached."""
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
        cached = await self.cache.get(key) if self.cache is not None else None
        if cached is not None:
            try:
                verdict = _verdict(cached, schema, check)
            except JudgeReplyError:  # stored before the checks existed: ask again
                pass
            else:
                _record(usage, cached)
                return verdict
        reply = await self._complete(messages, temperature)
        _record(usage, reply)
        verdict = _verdict(reply, schema, check)
        if self.cache is not None:
            await self.cache.put(key, reply)
        return verdict

    async def _complete(
        self, messages: list[dict[str, Any]], temperature: float | None, options: CallOptions | None = None
    ) -> Any:
        """One call to the judge model, inside the model-call slot when a limit is set; without
        `options` it asks for JSON (Proctor's own prompts)."""
        try:
            return await self._call(messages, temperature, options)
        except JudgeReplyError as error:
            ledger = spending.get()
            if error.reply is not None and ledger is not None:  # an unusable reply is paid for too
                ledger.add(error.reply)
            raise

    async def _call(
        self, messages: list[dict[str, Any]], temperature: float | None, options: CallOptions | None
    ) -> Any:
        return await call_in_slot(
            self.gate,
            lambda: self.client.complete(
                model=self.model,
                messages=messages,
                temperature=temperature,
                json_mode=options.json_mode if options else True,
                timeout_s=self.timeout_s if self.gate is None else held_call_timeout(self.timeout_s),
                max_tokens=(options.max_tokens if options else None) or self.max_tokens,
                params=options.params if options else None,
            ),
        )

    async def ask_text(
        self,
        template: str,
        usage: Usage,
        parse: Callable[[str], P | None],
        *,
        sample: int = 0,
        temperature: float | None = None,
        options: CallOptions | None = None,
        **variables: Any,
    ) -> tuple[P | None, str]:
        """A judge asked as Google ADK asks it: the rendered prompt is the only message (no
        system prompt, no schema, no JSON mode), and the reply is free text read by `parse`, a
        port of ADK's own reply parser. `options` carry what the criterion's
        `judge_model_config` sets (a system instruction, JSON, sampling parameters). Returns
        (parsed or None, raw text); a reply `parse` cannot read is returned, not raised, because
        ADK drops such a sample and keeps the others, and it is never cached."""
        options = options or CallOptions()
        messages = [{"role": "system", "content": options.system}] if options.system else []
        messages.append({"role": "user", "content": render_prompt(template, self.custom_prompt, **variables)})
        temperature = self.temperature if temperature is None else temperature
        params = {
            "temperature": temperature,
            "sample": sample,
            "max_tokens": options.max_tokens or self.max_tokens,
            "json_mode": options.json_mode,
            **options.params,
        }
        key = cache_key(self.client.base_url, self.model, messages, params)
        cached = await self.cache.get(key) if self.cache is not None else None
        if cached is not None and (parsed := parse(cached.text)) is not None:
            _record(usage, cached)
            return parsed, cached.text
        reply = await self._complete(messages, temperature, options)
        _record(usage, reply)
        parsed = parse(reply.text)
        if parsed is not None and self.cache is not None:
            await self.cache.put(key, reply)
        return parsed, reply.text
