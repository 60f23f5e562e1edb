"""HoloDeck `prompt` tools: a template filled with the model's arguments and sent to a model,
whose reply is the tool's result.

HoloDeck 0.7.1 defines the entry (`PromptTool`: `template` or `file`, `parameters`, `model`) and
documents it as "planned": none of its backends runs it (its OpenAI backend skips such a tool
with a warning, so the model is never offered it). Proctor runs it as HoloDeck's documentation
describes, and a warning says so when the suite loads:

* the model is offered a function named after the tool, with the tool's `description` and its
  `parameters` as the JSON-schema properties (each one without a `default` is required);
* the template (`{{name}}`; HoloDeck's documented `{{#if x}}...{{else}}...{{/if}}` and
  `{{#each items}}...{{this}}...{{/each}}` blocks too) is rendered with Jinja2 in a sandbox; a
  parameter the model left out renders as nothing;
* the rendered prompt is sent as one user message to the agent's model, or to the agent's model
  with the tool's `model` fields over it (another `name`, `temperature`, an `endpoint`...),
  through the same provider routing as the agent; its tokens count as the agent's;
* a failed model call is the tool's result ("Error: ..."), as HoloDeck's documentation says
  ("LLM failure is a soft failure"); the case goes on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from jinja2 import TemplateSyntaxError
from jinja2.sandbox import SandboxedEnvironment
from pydantic import ValidationError

from proctor.agents.tools.runner import ToolContext, ToolOpenError
from proctor.models.holodeck import LLMProvider
from proctor.models.holodeck_tools import PromptTool

if TYPE_CHECKING:
    from proctor.agents.protocol import AgentRequest

_BLOCKS = [
    (re.compile(r"\{\{#if\s+([^}]+?)\s*\}\}"), r"{% if \1 %}"),
    (re.compile(r"\{\{else\}\}"), "{% else %}"),
    (re.compile(r"\{\{/if\}\}"), "{% endif %}"),
    (re.compile(r"\{\{#each\s+([^}]+?)\s*\}\}"), r"{% for this in \1 %}"),
    (re.compile(r"\{\{/each\}\}"), "{% endfor %}"),
]


def jinja_source(template: str) -> str:
    """HoloDeck's documented Handlebars blocks as Jinja2 ones (`{{name}}` is the same in both)."""
    for pattern, replacement in _BLOCKS:
        template = pattern.sub(replacement, template)
    return template


def _problems(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(part) for part in issue['loc']) or 'entry'}: {issue['msg']}"
        for issue in error.errors()
    )


class PromptRunner:
    def __init__(self, entry: Mapping[str, Any], context: ToolContext) -> None:
        try:
            self.tool = PromptTool.model_validate(dict(entry))
        except ValidationError as error:
            raise ValueError(_problems(error)) from None
        self.context = context
        self.model = self._model(context.model, self.tool.model)
        source = self.tool.template
        if self.tool.file is not None:
            path = (context.base_dir / self.tool.file).resolve()
            from proctor.files import allowed_roots

            if not any(path.is_relative_to(root) for root in allowed_roots(context.base_dir)):
                raise ValueError(f"file: {self.tool.file} leaves the agent's folder")
            if not path.is_file():
                raise ValueError(f"file: {self.tool.file} not found (looked in {context.base_dir})")
            source = path.read_text(encoding="utf-8")
        try:
            self.template = SandboxedEnvironment(autoescape=False).from_string(jinja_source(source or ""))
        except TemplateSyntaxError as error:
            raise ValueError(f"template: {error.message} (line {error.lineno})") from None

    @staticmethod
    def _model(agent_model: LLMProvider, override: dict[str, Any] | None) -> LLMProvider:
        if not override:
            return agent_model
        merged = {**agent_model.model_dump(exclude_none=True), "api_key": agent_model.api_key, **override}
        try:
            return LLMProvider.model_validate(merged)
        except ValidationError as error:
            raise ValueError(f"model: {_problems(error)}") from None

    async def open(self) -> None:
        from proctor.agents.providers import ProviderError, make_client

        try:
            make_client(self.model)  # a provider that cannot be reached is refused before any case
        except (ProviderError, ValueError) as error:
            raise ToolOpenError(f"prompt tool {self.tool.name!r}: {error}") from None

    def schemas(self) -> list[dict[str, Any]]:
        parameters = self.tool.parameters
        return [
            {
                "type": "function",
                "function": {
                    "name": self.tool.name,
                    "description": self.tool.description,
                    "parameters": {
                        "type": "object",
                        "properties": parameters,
                        "required": [name for name, spec in parameters.items() if "default" not in spec],
                    },
                },
            }
        ]

    async def call(self, name: str, args: dict[str, Any], request: AgentRequest) -> Any:
        import openai

        from proctor.agents.providers import make_client
        from proctor.judges.credentials import redact

        prompt = self.template.render(**args)
        client, key = make_client(self.model)
        model = self.model
        try:
            completion = await client.chat.completions.create(
                model=model.name,
                messages=[{"role": "user", "content": prompt}],
                temperature=model.temperature if model.temperature is not None else openai.NOT_GIVEN,
                max_tokens=model.max_tokens or openai.NOT_GIVEN,
                top_p=model.top_p if model.top_p is not None else openai.NOT_GIVEN,
            )
        except openai.APIError as error:
            return f"Error: the prompt tool's model failed: {redact(str(error), key)}"
        finally:
            await client.close()
        usage = completion.usage
        request.record_usage(usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0)
        if not completion.choices:
            return "Error: the prompt tool's model returned no choices"
        return completion.choices[0].message.content or ""

    async def aclose(self) -> None:
        pass
