"""An agent behind an HTTP endpoint: each turn is a POST of JSON, the answer read from the reply.

Configured in YAML (`--agent http:endpoint.yaml`):

    url: http://127.0.0.1:8000/chat
    headers: {Authorization: "Bearer ${AGENT_TOKEN}"}   # values from the environment
    request:                                             # a Jinja2 template per JSON value
      message: "{{ input }}"
      session: "{{ thread_id }}"
    response: {answer: output.text, tool_calls: output.tools, usage: usage}   # dotted paths
    timeout_s: 60
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import httpx
from jinja2 import TemplateSyntaxError, meta
from jinja2.sandbox import SandboxedEnvironment
from pydantic import BaseModel, ConfigDict, Field, field_validator

from proctor import secrets as known_secrets
from proctor.agents.protocol import AgentRequest, AgentResponse
from proctor.env import ENV_REFERENCE, expand_env
from proctor.judges.credentials import redact

_templates = SandboxedEnvironment(autoescape=False)


class ResponsePaths(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer: str = "answer"
    tool_calls: str | None = None
    usage: str | None = None


TEMPLATE_VARIABLES = (
    "input", "thread_id", "case_id", "turn_id", "history", "files", "config", "state", "metadata"
)  # fmt: skip
"""What a request template may use: anything else would render as an empty string on every call."""


class HttpAgentConfig(BaseModel):
    """Checked when it is loaded (`validate` and the start of `run`), not at the first call:
    a bad template or URL would otherwise fail every case of a run, after it started."""

    model_config = ConfigDict(extra="forbid")

    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    request: dict[str, Any] = Field(
        default_factory=lambda: {"input": "{{ input }}", "thread_id": "{{ thread_id }}"}
    )
    response: ResponsePaths = Field(default_factory=ResponsePaths)
    timeout_s: float = Field(default=60.0, gt=0)

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        """An http(s) URL with a host; `${VAR}`s in it (a token in the query, say) come from the
        environment, as in headers, and must be set."""
        unset = [variable for variable in ENV_REFERENCE.findall(url) if not os.environ.get(variable)]
        if unset:
            raise ValueError(f"{url!r} names {', '.join(unset)}, not set in the environment")
        try:
            parsed = httpx.URL(expand_env(url, _missing))
        except httpx.InvalidURL as error:
            raise ValueError(f"{url!r} is not a URL ({error})") from None
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ValueError(f"expected an http:// or https:// URL with a host; got {url!r}")
        return url

    @field_validator("request")
    @classmethod
    def _templates_render(cls, request: dict[str, Any]) -> dict[str, Any]:
        for where, template in _template_strings(request, "request"):
            try:
                names = meta.find_undeclared_variables(_templates.parse(template))
            except TemplateSyntaxError as error:
                raise ValueError(f"{where}: the template {template!r} does not parse: {error}") from None
            unknown = sorted(names - set(TEMPLATE_VARIABLES))
            if unknown:
                raise ValueError(
                    f"{where}: the template {template!r} uses {', '.join(unknown)}; "
                    f"expected only {', '.join(TEMPLATE_VARIABLES)}"
                )
        return request

    @field_validator("headers")
    @classmethod
    def _header_variables_set(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            unset = [variable for variable in ENV_REFERENCE.findall(value) if not os.environ.get(variable)]
            if unset:
                raise ValueError(f"header {name!r} names {', '.join(unset)}, not set in the environment")
        return headers


def _template_strings(template: Any, where: str) -> list[tuple[str, str]]:
    """Every text in a request template, with where it sits (`request.session.id`)."""
    if isinstance(template, dict):
        children = [(f"{where}.{key}", value) for key, value in template.items()]
        return [pair for place, value in children for pair in _template_strings(value, place)]
    if isinstance(template, list):
        items = [(f"{where}[{index}]", value) for index, value in enumerate(template)]
        return [pair for place, value in items for pair in _template_strings(value, place)]
    return [(where, template)] if isinstance(template, str) else []


class HttpAgentError(RuntimeError):
    pass


def _missing(name: str) -> str:
    raise HttpAgentError(f"environment variable {name} is not set")


def _render(template: Any, variables: dict[str, Any]) -> Any:
    if isinstance(template, dict):
        return {key: _render(value, variables) for key, value in template.items()}
    if isinstance(template, list):
        return [_render(value, variables) for value in template]
    if isinstance(template, str):
        whole = re.fullmatch(r"\{\{\s*(\w+)\s*\}\}", template)
        if whole and whole.group(1) in variables:  # keep lists and dicts as JSON, not text
            return variables[whole.group(1)]
        return _templates.from_string(template).render(**variables)
    return template


def _path(data: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if isinstance(data, list) and part.isdigit():
            data = data[int(part)]
        elif isinstance(data, dict) and part in data:
            data = data[part]
        else:
            raise HttpAgentError(f"the reply has no {dotted!r} (stopped at {part!r})")
    return data


class HttpAgent:
    def __init__(self, config: HttpAgentConfig) -> None:
        self.config = config

    async def __call__(self, request: AgentRequest) -> AgentResponse:
        variables = {
            "input": request.input,
            "thread_id": request.thread_id,
            "case_id": request.case_id,
            "turn_id": request.turn_id,
            "history": request.history,
            "files": request.files_markdown,
            "config": request.config,
            "state": request.state,
            "metadata": request.metadata,
        }  # TEMPLATE_VARIABLES
        headers = {name: expand_env(value, _missing) for name, value in self.config.headers.items()}
        url = expand_env(self.config.url, _missing)
        secrets = [
            os.environ.get(variable)
            for value in [self.config.url, *self.config.headers.values()]
            for variable in ENV_REFERENCE.findall(value)
        ]
        for secret in secrets:  # scrubbed from whatever else stores or prints them
            known_secrets.remember(secret)
        try:
            return await self._post(request, variables, url, headers)
        except HttpAgentError as error:  # its message is stored: never with a header's secret in it
            raise HttpAgentError(redact(str(error), *secrets)) from None
        except httpx.TimeoutException as error:  # its own message is empty
            raise HttpAgentError(
                f"{self.config.url}: {type(error).__name__}: no answer within {self.config.timeout_s:g} s"
            ) from None
        except httpx.HTTPError as error:
            detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
            raise HttpAgentError(redact(f"{self.config.url}: {detail}", *secrets)) from None

    async def _post(
        self, request: AgentRequest, variables: dict[str, Any], url: str, headers: dict[str, str]
    ) -> AgentResponse:
        body = _render(self.config.request, variables)
        async with httpx.AsyncClient(timeout=self.config.timeout_s) as client:
            # The agent's own time is its endpoint's: the request and its reply, not the
            # client's set-up (its TLS context alone can take tens of ms on a busy machine).
            started = time.perf_counter()
            try:
                reply = await client.post(url, json=body, headers=headers)
            finally:
                request.own_ms = (time.perf_counter() - started) * 1000
        if reply.status_code >= 400:
            raise HttpAgentError(f"{self.config.url} answered HTTP {reply.status_code}: {reply.text[:200]}")
        try:
            data = reply.json()
        except ValueError:
            raise HttpAgentError(f"{self.config.url} answered with something that is not JSON") from None
        paths = self.config.response
        answer = _path(data, paths.answer)
        if not isinstance(answer, str):
            raise HttpAgentError(f"the reply's {paths.answer!r} is a {type(answer).__name__}, not text")
        raw_calls = _path(data, paths.tool_calls) if paths.tool_calls else []
        for call in raw_calls or []:
            request.record_tool_call(
                call.get("name", "?"), call.get("args") or call.get("arguments") or {}, call.get("result")
            )
        if paths.usage:
            usage = _path(data, paths.usage) or {}
            request.record_usage(  # the turn's tokens, not one model call's: how many is not known
                int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)), model_calls=0
            )
        return AgentResponse(answer=answer)


def load_http_agent(config_path: Path) -> HttpAgent:
    from proctor.loaders.documents import read_document

    return HttpAgent(HttpAgentConfig.model_validate(read_document(config_path)))
