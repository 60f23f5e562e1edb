"""Resource budgets: how many tool calls, how many tokens, how much money a case used."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from proctor.metrics.base import Metric, MetricContext, Score
from proctor.models.outcome import AgentTurn


class ToolCallCount(Metric):
    """1 if the number of tool calls (of one tool, or all) lies within [min, max], else 0."""

    name = "tool_call_count"
    summary = "The number of tool calls (of one tool, or in all) lies within min..max."
    how_it_scores = (
        "1 if the number of calls (of `tool`, else of all tools) lies within the bounds `min`..`max`"
    )

    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=0)
    tool: str | None = None

    @model_validator(mode="after")
    def _bounds(self) -> ToolCallCount:
        if self.min is None and self.max is None:
            raise ValueError("give min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError("min must not exceed max")
        return self

    def evaluate(self, ctx: MetricContext) -> Score:
        count = sum(1 for name in ctx.tool_names if self.tool is None or name == self.tool)
        within = (self.min is None or count >= self.min) and (self.max is None or count <= self.max)
        what = f"{self.tool} calls" if self.tool else "tool calls"
        bounds = f"{self.min if self.min is not None else 0}..{self.max if self.max is not None else '∞'}"
        return Score(
            value=float(within),
            reason=f"{count} {what} (allowed {bounds})",
            details={"count": count, "tool": self.tool, "min": self.min, "max": self.max},
        )


def _tokens(ctx: MetricContext) -> tuple[int, int]:
    prompt = sum(turn.usage.prompt_tokens for turn in ctx.turns)
    completion = sum(turn.usage.completion_tokens for turn in ctx.turns)
    return prompt, completion


def _turn_tokens(turn: AgentTurn) -> int:
    """The reported total, or prompt + completion if larger: agents report one, the other or both."""
    return max(turn.usage.total_tokens, turn.usage.prompt_tokens + turn.usage.completion_tokens)


class TokenBudget(Metric):
    """1 within `max_tokens` (all turns), else max_tokens / used.

    Applies only if the agent reported tokens: one that reports none would pass by counting 0.
    """

    name = "token_budget"
    summary = "The agent's tokens over all turns stay within max_tokens."
    how_it_scores = (
        "1 within budget (all turns), else budget / used; not applied when the agent reported no tokens"
    )

    max_tokens: int = Field(gt=0)

    def applies_to(self, ctx: MetricContext) -> bool:
        return any(_turn_tokens(turn) for turn in ctx.turns)

    def evaluate(self, ctx: MetricContext) -> Score:
        used = sum(_turn_tokens(turn) for turn in ctx.turns)
        value = 1.0 if used <= self.max_tokens else self.max_tokens / used
        return Score(
            value=value,
            reason=f"{used} tokens (budget {self.max_tokens})",
            details={"tokens": used, "max_tokens": self.max_tokens},
        )


class Price(BaseModel):
    """US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input_per_million: float = Field(ge=0)
    output_per_million: float = Field(ge=0)


# OpenAI's standard-tier list prices (uncached input), USD per million tokens, as published in
# March 2026. Prices change and dated snapshots may differ: pass `prices` to override or to
# price another model.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-5": Price(input_per_million=1.25, output_per_million=10.00),
    "gpt-5.1": Price(input_per_million=1.25, output_per_million=10.00),
    "gpt-5-mini": Price(input_per_million=0.25, output_per_million=2.00),
    "gpt-5-nano": Price(input_per_million=0.05, output_per_million=0.40),
    "gpt-4.1": Price(input_per_million=2.00, output_per_million=8.00),
    "gpt-4.1-mini": Price(input_per_million=0.40, output_per_million=1.60),
    "gpt-4.1-nano": Price(input_per_million=0.10, output_per_million=0.40),
    "gpt-4o": Price(input_per_million=2.50, output_per_million=10.00),
    "gpt-4o-mini": Price(input_per_million=0.15, output_per_million=0.60),
    "o3": Price(input_per_million=2.00, output_per_million=8.00),
    "o3-mini": Price(input_per_million=1.10, output_per_million=4.40),
    "o4-mini": Price(input_per_million=1.10, output_per_million=4.40),
}


class Cost(Metric):
    """The agent's token cost for `model`; 1 within `max_usd`, else max_usd / cost.

    cost = prompt tokens x input price + completion tokens x output price (per million).
    `prices` adds models to the built-in table or overrides its entries. Applies only if the
    agent reported prompt or completion tokens (a bare total cannot be priced).
    """

    name = "cost"
    summary = "The agent's token cost (from a price table) stays within max_usd."
    how_it_scores = (
        "1 within budget, else budget / cost; the cost in USD is in `details`; not applied without "
        "prompt and completion tokens. `pricing_model` names the model whose prices apply (in "
        "agentflow criteria also `model`; in HoloDeck and Vanna files a metric's `model` is its "
        "judge, refused here); `prices` replaces the built-in table of OpenAI list prices: pass your "
        "own for other models"
    )

    max_usd: float = Field(gt=0)
    # The model whose prices apply. `pricing_model` is the unambiguous name: in HoloDeck and
    # Vanna files a metric's `model:` is its judge model, never the priced one.
    pricing_model: str | None = None
    model: str | None = None
    prices: dict[str, Price] | None = None

    @property
    def price(self) -> Price:
        return {**DEFAULT_PRICES, **(self.prices or {})}[self.model or ""]

    @model_validator(mode="after")
    def _priced(self) -> Cost:
        if (self.pricing_model is None) == (self.model is None):
            raise ValueError("name the priced model once: pricing_model (or, in agentflow criteria, model)")
        if self.pricing_model is not None:
            object.__setattr__(self, "model", self.pricing_model)
        known = {**DEFAULT_PRICES, **(self.prices or {})}
        if self.model not in known:
            raise ValueError(
                f"no price for model {self.model!r}; known: {', '.join(sorted(known))} "
                "(or give its price in `prices`)"
            )
        return self

    def applies_to(self, ctx: MetricContext) -> bool:
        return sum(_tokens(ctx)) > 0

    def evaluate(self, ctx: MetricContext) -> Score:
        price = self.price
        prompt, completion = _tokens(ctx)
        usd = (prompt * price.input_per_million + completion * price.output_per_million) / 1_000_000
        value = 1.0 if usd <= self.max_usd else self.max_usd / usd
        return Score(
            value=value,
            reason=f"${usd:.6f} for {prompt}+{completion} tokens on {self.model} (budget ${self.max_usd:g})",
            details={
                "usd": usd,
                "max_usd": self.max_usd,
                "model": self.model,
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "price": price.model_dump(),
            },
        )


BUDGET_METRICS: tuple[type[Metric], ...] = (ToolCallCount, TokenBudget, Cost)
