"""google-adk's own judge code against the local OpenAI-compatible test server.

ADK's evaluators call their judge through a `BaseLlm` (Gemini over google-genai, or LiteLLM,
which this environment does not have: the litellm releases google-adk 2.13.0 accepts need
openai<3). `OpenAIJudge` is a `BaseLlm` that sends ADK's request to the server with the real
`openai` client, one user message per prompt, as Proctor's judge sends it; an evaluator given
it runs its own `evaluate_invocations` (prompt, samples, parser, aggregation) unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import openai
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.genai import types


class OpenAIJudge(BaseLlm):
    base_url: str

    async def generate_content_async(
        self, llm_request: Any, stream: bool = False
    ) -> AsyncGenerator[LlmResponse]:
        client = openai.AsyncOpenAI(base_url=self.base_url, api_key="sk-adk", max_retries=0)
        prompt = "".join(part.text for content in llm_request.contents for part in content.parts if part.text)
        reply = await client.chat.completions.create(
            model=self.model, messages=[{"role": "user", "content": prompt}]
        )
        text = reply.choices[0].message.content or ""
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


def run_adk(evaluator: Any, base_url: str, attribute: str, *args: Any, **kwargs: Any) -> Any:
    """ADK's own `evaluate_invocations`, its judge model (`attribute`) on the test server."""
    setattr(evaluator, attribute, OpenAIJudge(model="judge-model", base_url=base_url))
    return asyncio.run(evaluator.evaluate_invocations(*args, **kwargs))
