"""The judge cache: replies to identical judge calls, kept in the results database.

A rerun of the same suite with the same judge pays for no call it already made. Keys hash
the endpoint, model, full prompt and parameters (see `client.cache_key`), never the API key.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from proctor.models.tables import JudgeCacheRow
from proctor.secrets import scrub

if TYPE_CHECKING:
    from proctor.judges.client import JudgeReply


class JudgeCache:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def _get(self, key: str) -> JudgeReply | None:
        from proctor.judges.client import JudgeReply

        with Session(self.engine) as session:
            row = session.get(JudgeCacheRow, key)
            if row is None:
                return None
            return JudgeReply(
                text=row.reply,
                model=row.model,
                prompt_tokens=row.prompt_tokens,
                completion_tokens=row.completion_tokens,
                cached=True,
            )

    def _put(self, key: str, reply: JudgeReply) -> None:
        with Session(self.engine) as session:
            # merge: a reply stored by an older version that failed today's checks is replaced
            session.merge(
                JudgeCacheRow(
                    key=key,
                    model=reply.model,
                    reply=scrub(reply.text),  # a judge quoting the key it was sent
                    prompt_tokens=reply.prompt_tokens,
                    completion_tokens=reply.completion_tokens,
                )
            )
            try:
                session.commit()
            except IntegrityError:  # another case stored the same call first
                session.rollback()

    async def get(self, key: str) -> JudgeReply | None:
        return await asyncio.to_thread(self._get, key)

    async def put(self, key: str, reply: JudgeReply) -> None:
        await asyncio.to_thread(self._put, key, reply)
