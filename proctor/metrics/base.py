"""What every metric is made of: the context it reads, the score it returns, its base class.

A metric is a Pydantic model whose fields are its configuration (validated, with unknown
arguments rejected, before a run starts) and whose `evaluate` reads one `MetricContext`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from proctor.models.agentflow import ToolCall
from proctor.models.case import Case
from proctor.models.holodeck import ProcessedFileInput
from proctor.models.outcome import RETRIEVAL_TOOLS, AgentTurn

if TYPE_CHECKING:
    from proctor.judges import Judge


@dataclass(frozen=True)
class MetricContext:
    """Everything a metric may look at for one case: expectations and what the agent did."""

    case: Case
    turns: list[AgentTurn]
    processed_files: list[ProcessedFileInput] = field(default_factory=list)
    agent_ms: float = 0.0
    judge: Judge | None = None
    scale: int | None = None
    threshold: float | None = None  # the pass mark, for metrics whose per-turn verdicts use it (ADK)
    turn_offset: int = 0  # the position of `case.turns[0]` in the conversation, when scored per turn
    # Why the agent failed, when a case is scored after its agent failed (Vanna's evaluators
    # score such a case: `AgentResult.error`); None when the agent answered.
    agent_error: str | None = None
    # What retrieval tools returned in a conversation's earlier turns, when scored per turn:
    # HoloDeck keeps it for the session, so a later turn's RAG metrics still have it.
    earlier_retrieval: tuple[str, ...] = ()

    @property
    def final_response(self) -> str:
        return (self.turns[-1].response or "") if self.turns else ""

    @property
    def expected_response(self) -> str | None:
        return self.case.ground_truth

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [call for turn in self.turns for call in turn.tool_calls]

    @property
    def context_text(self) -> str:
        """What the answer may be grounded in: the retrieved chunks the case states (HoloDeck's
        `retrieval_context`), the attached files and every tool result."""
        parts = [chunk for turn in self.case.turns for chunk in turn.retrieval_context or []]
        parts += [f.markdown_content for f in self.processed_files if f.error is None and f.markdown_content]
        for call in self.tool_calls:
            if call.result is not None:
                result = call.result if isinstance(call.result, str) else json.dumps(call.result, default=str)
                parts.append(f"{call.name}({json.dumps(call.args or {}, default=str)}) -> {result}")
        return "\n\n".join(parts)

    @property
    def retrieval_context(self) -> list[str]:
        """HoloDeck's `retrieval_context` for its RAG judges: the chunks the case (or turn) states,
        else what the agent's retrieval tools returned (`retrieval_results`), in this turn and the
        conversation's earlier ones. Other tools' results and attached files are not in it."""
        stated = [chunk for turn in self.case.turns for chunk in turn.retrieval_context or []]
        return stated or [*self.earlier_retrieval, *retrieval_results(self.turns)]

    @property
    def tool_names(self) -> list[str]:
        return [call.name for call in self.tool_calls]

    def paired_turns(self) -> list[tuple[Any, AgentTurn | None]]:
        """Each expected turn with the agent's turn of the same position (None if missing)."""
        return [
            (expected, self.turns[index] if index < len(self.turns) else None)
            for index, expected in enumerate(self.case.turns)
        ]


def retrieval_results(turns: list[AgentTurn]) -> list[str]:
    """The results of the calls each turn's agent names as retrieval (`RETRIEVAL_TOOLS` in the
    turn's metadata), as HoloDeck's `build_retrieval_context_from_tools` takes them: a text as it
    is, a list item by item; empty results and other shapes are left out."""
    found: list[str] = []
    for turn in turns:
        names = set(turn.metadata.get(RETRIEVAL_TOOLS) or ())
        for call in turn.tool_calls:
            if call.name not in names or not call.result:
                continue
            if isinstance(call.result, str):
                found.append(call.result)
            elif isinstance(call.result, list):
                found += [str(item) for item in call.result if item is not None and str(item)]
    return found


@dataclass
class Score:
    """A metric's verdict: a value in 0..1, and why.

    `passed` is set only by metrics whose verdict is a label rather than a threshold on
    the value; otherwise the runner compares the value with the threshold.
    """

    value: float
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    passed: bool | None = None
    model_used: str | None = None
    judge_calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.value <= 1.0:
            raise ValueError(f"a score must lie in 0..1; got {self.value}")


@dataclass
class Measurement:
    """What an informational metric returns: a value in its own unit (tool calls, tokens,
    seconds), never a verdict. `value` is None when the agent did not report what it measures
    (n/a), which is not the same as zero.
    """

    value: float | None
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.value is not None and not math.isfinite(self.value):
            raise ValueError(f"a measurement must be a finite number or None; got {self.value}")


class Metric(BaseModel):
    """Base of every metric. Subclasses set `name` and implement `evaluate`.

    `applies_to` returns False when a case has nothing for the metric to check (no
    expected response for response matching, say); the metric is then not recorded
    for that case rather than scored as a failure.

    An `informational` metric (ADK's efficiency metrics) returns a `Measurement` instead of a
    `Score`: its value is stored and shown, but it never passes or fails a case, takes no
    threshold, does not count as scoring a case and is left out of pass rates and regression
    detection. The runner and reports read this flag, never the metric's name.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    kind: ClassVar[str] = "deterministic"
    default_threshold: ClassVar[float] = 1.0
    summary: ClassVar[str] = ""
    # How it scores, in full, for the manual's reference table (docs/metrics/index.md, generated
    # by scripts/docs_reference.py); `summary` is the one-line version.
    how_it_scores: ClassVar[str] = ""
    informational: ClassVar[bool] = False
    # The upstream system's own pass rule decides the verdict (Vanna's `passed = score >= 0.7`,
    # its judge's PASSED line): a threshold other than `default_threshold` would be shown and
    # never applied, so the loaders refuse one and keep the rule's own mark.
    own_pass_rule: ClassVar[str | None] = None
    # Scoring that may take long or fail outside Proctor (user code, a model to load; every
    # `kind == "llm"` metric too): the agent's turns are stored before it starts.
    slow_scoring: ClassVar[bool] = False

    @classmethod
    def scores_slowly(cls) -> bool:
        return cls.slow_scoring or cls.kind == "llm"

    def applies_to(self, ctx: MetricContext) -> bool:
        return self.applies_to_case(ctx.case)

    def applies_to_case(self, case: Case) -> bool:
        """Whether the case states what this metric checks (an expected answer, expected tools),
        known before any agent answers: `validate` warns about cases no metric applies to. A
        metric whose applicability depends on the answer (tokens used, goals reported)
        overrides `applies_to` and leaves this True."""
        return True

    def evaluate(self, ctx: MetricContext) -> Score | Measurement:
        raise NotImplementedError

    async def aevaluate(self, ctx: MetricContext) -> Score | Measurement:
        """Async entry point; I/O-bound metrics (judges) override this instead.

        CPU-bound metrics run inline: a thread would not run pure Python in parallel and
        would cost more than most of them take.
        """
        return self.evaluate(ctx)

    def aggregate(self, per_turn: list[float | None]) -> float | None:
        """An informational metric's value for a conversation from its turns' values, when the
        case is scored turn by turn (HoloDeck multi-turn); verdict metrics are rolled up by mean."""
        raise NotImplementedError

    def arguments(self) -> dict[str, Any]:
        """The configuration as stored with every result, for replay and comparison."""
        return self.model_dump(mode="json")
