"""Resource budgets: how many tool calls, how many tokens, how much money a case used."""

from __future__ import annotations

from pydantic import BaseModel, Field, model_validator

from proctor.metrics.base import Metric, MetricContext, Score


class ToolCallCount(Metric):
    """1 if the number of tool calls (of one tool, or all) lies within [min, max], else 0."""

    name = "tool_call_count"
    summary = "The number of tool calls (of one tool, or in all) lies within min..max."

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
            value=float(within), reason=f"{count} {what} (allowed {bounds})", details={"count": count}
        )


def _tokens(ctx: MetricContext) -> tuple[int, int]:
    prompt = sum(turn.usage.prompt_tokens for turn in ctx.turns)
    completion = sum(turn.usage.completion_tokens for turn in ctx.turns)
    return prompt, completion


class TokenBudget(Metric):
    """1 within `max_tokens` (all turns, prompt + completion), else max_tokens / used."""

    name = "token_budget"
    summary = "The agent's tokens over all turns stay within max_tokens."

    max_tokens: int = Field(gt=0)

    def evaluate(self, ctx: MetricContext) -> Score:
        used = sum(_tokens(ctx))
        value = 1.0 if used <= self.max_tokens else self.max_tokens / used
        return Score(
            value=value, reason=f"{used} tokens (budget {self.max_tokens})", details={"tokens": used}
        )


class Price(BaseModel):
    """US dollars per million tokens."""

    input_per_million: float = Field(ge=0)
    output_per_million: float = Field(ge=0)


# Published list prices, USD per million tokens, as of November 2026. Prices change: pass
# `prices` to override or to price another model.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o": Price(input_per_million=2.50, output_per_million=10.00),
    "gpt-4o-mini": Price(input_per_million=0.15, output_per_million=0.60),
    "gpt-4.1": Price(input_per_million=2.00, output_per_million=8.00),
    "gpt-4.1-mini": Price(input_per_million=0.40, output_per_million=1.60),
    "gpt-4.1-nano": Price(input_per_million=0.10, output_per_million=0.40),
    "o3-mini": Price(input_per_million=1.10, output_per_million=4.40),
}


class Cost(Metric):
    """The agent's token cost for `model` from a price table; 1 within `max_usd`, else max_usd / cost."""

    name = "cost"
    summary = "The agent's token cost (from a price table) stays within max_usd."

    max_usd: float = Field(gt=0)
    model: str
    prices: dict[str, Price] | None = None

    @model_validator(mode="after")
    def _priced(self) -> Cost:
        if self.model not in {**DEFAULT_PRICES, **(self.prices or {})}:
            known = ", ".join(sorted({**DEFAULT_PRICES, **(self.prices or {})}))
            raise ValueError(f"no price for model {self.model!r}; known: {known} (or pass prices)")
        return self

    def evaluate(self, ctx: MetricContext) -> Score:
        price = {**DEFAULT_PRICES, **(self.prices or {})}[self.model]
        prompt, completion = _tokens(ctx)
        usd = (prompt * price.input_per_million + completion * price.output_per_million) / 1_000_000
        value = 1.0 if usd <= self.max_usd else self.max_usd / usd
        return Score(
            value=value,
            reason=f"${usd:.6f} for {prompt}+{completion} tokens on {self.model} (budget ${self.max_usd:g})",
            details={"usd": usd, "prompt_tokens": prompt, "completion_tokens": completion},
        )


BUDGET_METRICS: tuple[type[Metric], ...] = (ToolCallCount, TokenBudget, Cost)
