"""What a run spent: agent and judge tokens, cached judge calls, and an estimated cost.

The cost comes from the price table of the `cost` metric (US dollars per million tokens, list
prices); `PROCTOR_PRICES` may name a JSON file `{"model": [input, output]}` that adds to or
overrides it. A model the table does not know makes the estimate "unknown",
never 0: a total that silently leaves out an unpriced model would read as cheaper than it was.
The agent's model is known for an `openai:` agent (its `model.name`, stored on the run); any
other agent's tokens are counted but priced only when there are none.

The prices a run used are stored with it when its cases end (`EvalRun.prices`), and every later
reading prices it from those: a run reads the same cost in every report, whoever reads it and
whatever their `PROCTOR_PRICES`. Runs stored before prices were kept are priced with the table
of the reader.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from sqlalchemy import func
from sqlmodel import Session, select

from proctor.models.tables import CaseResultRow, EvalRun, MetricResultRow

PRICES_ENV = "PROCTOR_PRICES"


def _table() -> dict[str, tuple[float, float]]:
    """The `cost` metric's built-in table (one table of list prices in Proctor), plus
    `PROCTOR_PRICES`."""
    from proctor.metrics.budget import DEFAULT_PRICES

    table = {model: (p.input_per_million, p.output_per_million) for model, p in DEFAULT_PRICES.items()}
    extra = os.environ.get(PRICES_ENV)
    return table | _extra_prices(extra) if extra else table


@lru_cache(maxsize=4)
def _extra_prices(path: str) -> dict[str, tuple[float, float]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {str(model): (float(pair[0]), float(pair[1])) for model, pair in data.items()}


def price_of(model: str, table: dict[str, tuple[float, float]] | None = None) -> tuple[float, float] | None:
    """The model's (input, output) price per million tokens, from `table` (else today's); a
    dated snapshot name (`gpt-4o-mini-2024-07-18`) is priced as its model. None when unknown."""
    table = _table() if table is None else table
    if model in table:
        return table[model]
    prefixes = [name for name in table if model.startswith(name + "-")]
    return table[max(prefixes, key=len)] if prefixes else None


@dataclass
class RunTotals:
    """One run's spend; `cost_usd` is None ("unknown") when any tokens are unpriced."""

    agent_prompt_tokens: int = 0
    agent_completion_tokens: int = 0
    judge_prompt_tokens: int = 0
    judge_completion_tokens: int = 0
    judge_saved_tokens: int = 0
    judge_calls: int = 0
    cached_judge_calls: int = 0
    cost_usd: float | None = 0.0
    unpriced: list[str] = field(default_factory=list)
    agent_retries: int = 0  # requests the agent's client sent again (a 429, a 5xx)
    judge_retries: int = 0  # judge calls the metric runner made again after a failed attempt

    @property
    def agent_tokens(self) -> int:
        return self.agent_prompt_tokens + self.agent_completion_tokens

    @property
    def judge_tokens(self) -> int:
        return self.judge_prompt_tokens + self.judge_completion_tokens

    @property
    def cost_text(self) -> str:
        if self.cost_usd is None:
            return f"unknown (no price for {', '.join(self.unpriced)})"
        return f"${self.cost_usd:.4f}"

    def line(self) -> str:
        """One line for a terminal, a Slack message or a Markdown summary."""
        return (
            f"agent tokens {self.agent_tokens:,} · judge tokens {self.judge_tokens:,} "
            f"({self.cached_judge_calls:,} of {self.judge_calls:,} judge calls cached, "
            f"{self.judge_saved_tokens:,} tokens saved) · estimated cost {self.cost_text} · "
            f"retried: agent {self.agent_retries:,}, judge {self.judge_retries:,}"
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "agent_tokens": self.agent_tokens,
            "judge_tokens": self.judge_tokens,
            "judge_tokens_saved_by_cache": self.judge_saved_tokens,
            "judge_calls": self.judge_calls,
            "cached_judge_calls": self.cached_judge_calls,
            "estimated_cost_usd": self.cost_usd,
            "cost": self.cost_text,
            "agent_retries": self.agent_retries,
            "judge_retries": self.judge_retries,
        }


def agent_model_of(agent: str) -> str | None:
    """The model an agent target calls, when Proctor can know it: an `openai:` agent's."""
    if not agent.startswith("openai:"):
        return None
    try:
        from proctor.agents.targets import load_target

        config = getattr(load_target(agent), "config", None)
    except Exception:  # the run itself reports an agent that does not load
        return None
    model = getattr(getattr(config, "model", None), "name", None)
    return model if isinstance(model, str) and model else None


def _judge_models(session: Session, run_id: uuid.UUID) -> list[tuple[str | None, int, int, int, int, int]]:
    return session.exec(  # type: ignore[return-value]
        select(
            MetricResultRow.model_used,
            func.coalesce(func.sum(MetricResultRow.prompt_tokens), 0),
            func.coalesce(func.sum(MetricResultRow.completion_tokens), 0),
            func.coalesce(
                func.sum(MetricResultRow.saved_prompt_tokens + MetricResultRow.saved_completion_tokens), 0
            ),
            func.coalesce(func.sum(MetricResultRow.judge_calls), 0),
            func.coalesce(func.sum(MetricResultRow.cached_calls), 0),
        )
        .where(MetricResultRow.run_id == run_id)
        .group_by(MetricResultRow.model_used)
    ).all()


def prices_used(*, session: Session, run: EvalRun) -> dict[str, list[float]]:
    """The prices the run's models have now (its agent's and its judges'), to store with it;
    a model with no price is left out, so it reads as unknown later too."""
    models = [model for model, *_ in _judge_models(session, run.id) if model and "," not in model]
    if run.agent_model:
        models.append(run.agent_model)
    table = _table()
    prices = {model: price_of(model, table) for model in models}
    return {model: list(price) for model, price in sorted(prices.items()) if price is not None}


def run_totals(*, session: Session, run_id: uuid.UUID) -> RunTotals:
    """The run's totals, from SQL aggregates (no row is loaded), priced as the run stored them."""
    run = session.get(EvalRun, run_id)
    table = _table()
    if run is not None and run.prices is not None:
        table = {str(model): (float(pair[0]), float(pair[1])) for model, pair in run.prices.items()}
    agent_prompt, agent_completion, agent_retries = session.exec(
        select(
            func.coalesce(func.sum(CaseResultRow.prompt_tokens), 0),
            func.coalesce(func.sum(CaseResultRow.completion_tokens), 0),
            func.coalesce(func.sum(CaseResultRow.agent_retries), 0),
        ).where(CaseResultRow.run_id == run_id)
    ).one()
    totals = RunTotals(
        agent_prompt_tokens=int(agent_prompt),
        agent_completion_tokens=int(agent_completion),
        agent_retries=int(agent_retries),
        judge_retries=int(
            session.exec(
                select(func.coalesce(func.sum(MetricResultRow.retry_count), 0)).where(
                    MetricResultRow.run_id == run_id
                )
            ).one()
        ),
    )
    cost = 0.0
    unpriced: list[str] = []
    if totals.agent_tokens:
        agent_model = run.agent_model if run is not None else None
        price = price_of(agent_model, table) if agent_model else None
        if price is None:
            unpriced.append(agent_model or "the agent's model")
        else:
            cost += (totals.agent_prompt_tokens * price[0] + totals.agent_completion_tokens * price[1]) / 1e6
    for model, prompt, completion, saved, calls, cached in _judge_models(session, run_id):
        totals.judge_prompt_tokens += int(prompt)
        totals.judge_completion_tokens += int(completion)
        totals.judge_saved_tokens += int(saved)
        totals.judge_calls += int(calls)
        totals.cached_judge_calls += int(cached)
        if not (prompt or completion):
            continue
        price = price_of(model or "", table) if model and "," not in model else None
        if price is None:
            unpriced.append(model or "an unnamed judge model")
        else:
            cost += (int(prompt) * price[0] + int(completion) * price[1]) / 1_000_000
    totals.unpriced = unpriced
    totals.cost_usd = None if unpriced else cost
    return totals
