"""Contextual embeddings for a `hierarchical_document` tool: before a chunk is embedded, a model
writes a short context situating it in its document, and the chunk is indexed as
"<context>\\n\\n<chunk>" (Anthropic's contextual retrieval, as HoloDeck 0.7.1's
`LLMContextGenerator` does it, through the `openai` client here instead of LiteLLM).

The prompt, the document truncation (at most 8,000 cl100k tokens, its first and last halves
kept around "[... document truncated ...]"), `max_tokens` = the tool's `context_max_tokens`, at
most `context_concurrency` calls at once, three attempts per chunk, and the fallback to the
bare chunk when all fail are HoloDeck's. As in HoloDeck, the context model's own `temperature`
and `max_tokens` are not sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from proctor.agents.tools.retrieval.structure import DocumentChunk, _encoding
from proctor.models.holodeck import LLMProvider

CONTEXT_PROMPT_TEMPLATE = """!---DOCUMENT START---!
{document}
!---DOCUMENT END---!
Here is the chunk we want to situate within the whole document
!---CHUNK START---!
{chunk}
!---CHUNK END---!
Please give a short succinct context to situate this chunk within the overall \
document for the purposes of improving search retrieval of the chunk. \
Answer only with the succinct context and nothing else."""
MAX_DOCUMENT_TOKENS = 8000
ATTEMPTS = 3


def truncate_document(document: str, limit: int = MAX_DOCUMENT_TOKENS) -> str:
    encoding = _encoding()
    tokens = encoding.encode(document) if document else []
    if len(tokens) <= limit:
        return document
    half = limit // 2
    return (
        encoding.decode(tokens[:half])
        + "\n\n[... document truncated ...]\n\n"
        + encoding.decode(tokens[-half:])
    )


class ContextGenerator:
    def __init__(
        self, model: LLMProvider, max_tokens: int, concurrency: int, warn: Callable[[str], None]
    ) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self.concurrency = concurrency
        self.warn = warn
        self.calls = 0

    async def _context(self, client: object, prompt: str) -> str:
        import openai

        for attempt in range(ATTEMPTS):
            try:
                self.calls += 1
                response = await client.chat.completions.create(  # type: ignore[attr-defined]
                    model=self.model.name,
                    messages=[{"role": "user", "content": prompt}],
                    max_tokens=self.max_tokens,
                )
                content = response.choices[0].message.content if response.choices else None
                return str(content).strip() if content else ""
            except openai.APIError:
                if attempt == ATTEMPTS - 1:
                    return ""
                await asyncio.sleep(min(2.0**attempt, 10.0))
        return ""

    async def contextualize(self, chunks: list[DocumentChunk], document: str) -> list[str]:
        """Each chunk's text to embed, in order: its context and itself, or itself alone."""
        from proctor.agents.providers import make_client

        client, _key = make_client(self.model)
        truncated = truncate_document(document)
        semaphore = asyncio.Semaphore(self.concurrency)

        async def one(chunk: DocumentChunk) -> str:
            async with semaphore:
                context = await self._context(
                    client, CONTEXT_PROMPT_TEMPLATE.format(document=truncated, chunk=chunk.content)
                )
            return f"{context}\n\n{chunk.content}" if context else chunk.content

        try:
            results = await asyncio.gather(*(one(chunk) for chunk in chunks))
        finally:
            await client.close()
        failed = sum(1 for chunk, text in zip(chunks, results, strict=True) if text == chunk.content)
        if failed:
            self.warn(f"context model {self.model.name!r}: no context for {failed} of {len(chunks)} chunks")
        return list(results)
