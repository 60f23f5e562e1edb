"""Seeded nights of an agent whose cases pass with known probabilities, written to a real
results database and judged by the real verdict (`proctor.stats.regression.record_comparison`), so
the false-alarm rate and the detection delays of the nightly verdict can be measured: by
bench/alarms.py at full size, by tests/stats/test_nightly_simulation.py small.

No agent runs: each night stores one completed run whose case rows pass or fail as drawn,
exactly the rows a real run leaves (`passed` per attempt), and the verdict reads them back.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import insert
from sqlalchemy.engine import Engine
from sqlmodel import Session

from proctor.models.request import DEFAULT_HISTORY_WINDOW, DEFAULT_SIGNIFICANCE
from proctor.models.tables import CaseResultRow, EvalRun, RunStatus
from proctor.stats.regression import Regression, record_comparison

Rates = dict[str, float]  # case id -> pass probability of each attempt


@dataclass
class NightVerdict:
    """What one night's verdict said, as the bench counts it."""

    night: int
    regressed: bool
    history_runs: int
    history_line: str = ""  # what the verdict says of its history (warming up, window)
    labels: dict[str, str] = field(default_factory=dict)  # case id -> label, listed cases only
    significant: list[str] = field(default_factory=list)
    # The rule this verdict replaced: cases that passed the night before and fail now.
    pass_to_fail: int = 0

    def count(self, label: str) -> int:
        return sum(1 for value in self.labels.values() if value == label)

    def flagged(self, case_id: str) -> bool:
        """The case is named as broken: newly failing, or still failing after that."""
        return self.labels.get(case_id) in ("newly_failing", "still_failing")


def spread_rates(rng: random.Random, cases: int, low: float = 0.5, high: float = 1.0) -> Rates:
    """`cases` cases with pass probabilities drawn uniformly from [low, high]."""
    return {f"case_{i:05d}": rng.uniform(low, high) for i in range(cases)}


class SimulatedSuite:
    """One suite's nights in a results database: its own suite id, so many share a database."""

    def __init__(
        self,
        engine: Engine,
        *,
        repeat: int = 1,
        window: int = DEFAULT_HISTORY_WINDOW,
        significance: float = DEFAULT_SIGNIFICANCE,
        suite_id: str | None = None,
        start: datetime | None = None,
        config: dict | None = None,
    ) -> None:
        self.engine = engine
        self.repeat = repeat
        self.window = window
        self.significance = significance
        self.suite_id = suite_id or f"simulated-{uuid.uuid4().hex[:12]}"
        self.start = start or datetime(2026, 1, 1, 3, tzinfo=UTC)
        self.nights = 0
        self.last: dict[str, list[bool]] = {}
        self.config = config or {}  # stored with every run, as a real run stores its request

    def store_night(self, outcomes: dict[str, list[bool]]) -> EvalRun:
        """A completed run whose cases passed (True) or failed per attempt, as given."""
        started = self.start + timedelta(days=self.nights)
        self.nights += 1
        with Session(self.engine, expire_on_commit=False) as session:
            passed = sum(all(attempts) for attempts in outcomes.values())
            run = EvalRun(
                suite_id=self.suite_id,
                suite_name=self.suite_id,
                suite_path=f"{self.suite_id}.evalset.json",
                source_format="native",
                agent="simulated.py:agent",
                status=RunStatus.COMPLETED,
                started_at=started,
                finished_at=started + timedelta(minutes=5),
                proctor_version="simulation",
                config=self.config,
                repeat=self.repeat,
                total_cases=len(outcomes),
                passed_cases=passed,
                failed_cases=len(outcomes) - passed,
                pass_rate=100.0 * passed / len(outcomes) if outcomes else None,
            )
            session.add(run)
            session.flush()
            rows = [
                {
                    "id": uuid.uuid4(),
                    "run_id": run.id,
                    "case_id": case_id,
                    "attempt": attempt,
                    "position": position,
                    "state": "passed" if ok else "failed",
                    "passed": ok,
                    "input": "simulated",
                    "turns": [],
                    "tool_calls": [],
                    "errors": [],
                    "files": [],
                    "tags": [],
                    "vanna_case": {},
                    "started_at": started,
                }
                for position, (case_id, attempts) in enumerate(outcomes.items())
                for attempt, ok in enumerate(attempts)
            ]
            for offset in range(0, len(rows), 5_000):
                session.execute(insert(CaseResultRow), rows[offset : offset + 5_000])
            session.commit()
            return run

    def draw(self, rng: random.Random, rates: Rates) -> dict[str, list[bool]]:
        return {case: [rng.random() < p for _ in range(self.repeat)] for case, p in rates.items()}

    def judge(self, run: EvalRun) -> Regression | None:
        with Session(self.engine, expire_on_commit=False) as session:
            stored = session.get(EvalRun, run.id)
            assert stored is not None
            verdict = record_comparison(
                session=session, run=stored, significance=self.significance, window=self.window
            )
            session.commit()
            return verdict

    def night(self, rng: random.Random, rates: Rates) -> NightVerdict | None:
        """Store one night drawn from `rates` and judge it; None on the first night (no history)."""
        number = self.nights
        outcomes = self.draw(rng, rates)
        pass_to_fail = sum(
            1 for case, now in outcomes.items() if all(self.last.get(case, [False])) and not all(now)
        )
        self.last = outcomes
        verdict = self.judge(self.store_night(outcomes))
        if verdict is None:
            return None
        return NightVerdict(
            night=number,
            regressed=verdict.regressed,
            history_runs=verdict.history_runs,
            history_line=verdict.history_line,
            labels={case.case_id: case.label for case in verdict.cases},
            significant=list(verdict.significant_cases),
            pass_to_fail=pass_to_fail,
        )


def a_a_nights(engine: Engine, seed: int, *, nights: int, cases: int, repeat: int = 1) -> list[NightVerdict]:
    """Nothing changes: every night is drawn from the same pass probabilities (0.5-1.0)."""
    rng = random.Random(seed)
    rates = spread_rates(rng, cases)
    suite = SimulatedSuite(engine, repeat=repeat)
    return [v for v in (suite.night(rng, rates) for _ in range(nights)) if v is not None]


@dataclass
class Detection:
    """After a change: the first night (1 = the night of the change) the changed case was
    flagged, and the first night the run was Regressed; None when not within the nights run."""

    case_night: int | None
    run_night: int | None


def change_nights(
    engine: Engine,
    seed: int,
    *,
    warm_nights: int,
    nights_after: int,
    cases: int,
    change: Callable[[random.Random, Rates], tuple[Rates, Rates, str | None]],
    repeat: int = 1,
) -> Detection:
    """`warm_nights` drawn from the `before` rates, then `nights_after` from the `after` rates
    that `change` returns (with the case that changed, or None for a broad change)."""
    rng = random.Random(seed)
    before, after, changed = change(rng, spread_rates(rng, cases))
    suite = SimulatedSuite(engine, repeat=repeat)
    for _ in range(warm_nights):
        suite.night(rng, before)
    case_night = run_night = None
    for night in range(1, nights_after + 1):
        verdict = suite.night(rng, after)
        assert verdict is not None
        if case_night is None and changed is not None and verdict.flagged(changed):
            case_night = night
        if run_night is None and verdict.regressed:
            run_night = night
    return Detection(case_night, run_night)


def stable_case_breaks(rng: random.Random, rates: Rates) -> tuple[Rates, Rates, str]:
    """One case, stable before (pass probability 0.95-1.0), passes never after."""
    case = next(iter(rates))
    before = rates | {case: rng.uniform(0.95, 1.0)}
    return before, before | {case: 0.0}, case


def flaky_case_breaks(rng: random.Random, rates: Rates) -> tuple[Rates, Rates, str]:
    """One case passing 70 % of the time passes never after."""
    case = next(iter(rates))
    before = rates | {case: 0.7}
    return before, before | {case: 0.0}, case


def broad_drop(points: float) -> Callable[[random.Random, Rates], tuple[Rates, Rates, None]]:
    """Every case's pass probability falls by `points` (0.15: fifteen points)."""

    def change(rng: random.Random, rates: Rates) -> tuple[Rates, Rates, None]:
        return rates, {case: max(0.0, p - points) for case, p in rates.items()}, None

    return change
