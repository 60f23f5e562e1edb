"""What the fault tests share: a small suite and its agents, running it, and reading back
what a run left in the database and in its report folder.

Every fault test ends the same way: the results that were computed are rows in the
database, and the failure shows in the run row, in each case's state and errors, in
report.md, report.html and junit.xml, and in the flow's Prefect state.
"""

from __future__ import annotations

import asyncio
import textwrap
import uuid
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import escape
from prefect.states import State
from sqlalchemy import func
from sqlmodel import Session, col, select

from proctor.flows.evaluate import EvaluationRequest, GateFailed, RunSummary, evaluate
from proctor.models.tables import CaseResultRow, EvalRun, MetricResultRow
from proctor.rendering import md_inline
from proctor.storage import get_engine

CASES = {
    "opening": ("When do you open?", "We open at 9am."),
    "closing": ("When do you close?", "We close at 5pm."),
    "weekend": ("Are you open on Sunday?", "We are closed on Sunday."),
}
MORE_CASES = {
    **CASES,
    "holiday": ("Open on holidays?", "No."),
    "typed": ("Open at noon?", "Yes."),
}

# Agents that misbehave on every case. The answers of `good` contain the word each case's
# `contains` metric looks for, so a judged metric's failure is the only thing wrong.
AGENTS = """
import asyncio
import threading

ANSWERS = {
    "opening": "We open at 9am.",
    "closing": "We close at 5pm.",
    "weekend": "We are closed on Sunday.",
}


class ToolBackendDown(RuntimeError):
    pass


def good(request):
    return ANSWERS[request.case_id]


FAULTS = {
    "opening": lambda case: ToolBackendDown(f"hours service down while answering {case}"),
    "closing": lambda case: RuntimeError(),  # no message at all: the type must still be reported
    "weekend": lambda case: SystemExit(f"agent called sys.exit on {case}"),
    "holiday": lambda case: asyncio.CancelledError(),  # a stray one, nobody cancelled the agent
}


def raises(request):
    request.record_tool_call("lookup_hours", {"case": request.case_id}, {"partial": True})
    request.record_usage(prompt_tokens=11, completion_tokens=0)
    raise FAULTS[request.case_id](request.case_id)


async def raises_async(request):
    await asyncio.sleep(0)
    raises(request)


CALLED = []  # the cases the agent was really called for
RELEASE = threading.Event()  # lets hung threads go when a test is done


async def hangs(request):
    CALLED.append(request.case_id)
    await asyncio.sleep(30)
    return "too late"


def hangs_sync(request):
    CALLED.append(request.case_id)
    RELEASE.wait(10)  # a thread cannot be interrupted: the timeout has to leave it behind
    return "too late"


WRONG = {
    "opening": 42,
    "closing": {"tool_calls": []},
    "weekend": b"We are closed on Sunday.",
    "holiday": None,
    "typed": {"answer": ["We", "open"]},
}


def malformed(request):
    return WRONG[request.case_id]
"""


def write_suite(
    folder: Path,
    *,
    metrics: str,
    cases: dict[str, tuple[str, str]] | None = None,
    agents: str = AGENTS,
) -> tuple[Path, str]:
    """A HoloDeck agent.yaml with the given cases and metrics block, and the agents module.

    Returns the suite's path and the `file.py:` prefix of the agents (add the agent's name).
    """
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fault_agents.py").write_text(agents)
    lines = [
        f"  - name: {name}\n    input: {text!r}\n    ground_truth: {truth!r}"
        for name, (text, truth) in (cases or CASES).items()
    ]
    suite = folder / "agent.yaml"
    suite.write_text(
        "name: fault-suite\ntest_cases:\n"
        + "\n".join(lines)
        + "\nevaluations:\n  model: {name: judge-model}\n  metrics:\n"
        + textwrap.indent(textwrap.dedent(metrics).strip(), "    ")
        + "\n"
    )
    return suite, f"{folder / 'fault_agents.py'}:"


def run_flow(**fields: Any) -> tuple[State, RunSummary | BaseException]:
    """Run the flow for real and return its final Prefect state with its result (or error);
    a run whose gate did not hold comes back with its summary."""
    state = asyncio.run(evaluate(EvaluationRequest(**fields), return_state=True))
    try:
        return state, state.result()
    except GateFailed as verdict:
        return state, verdict.summary
    except BaseException as error:  # a failed flow's state holds the exception
        return state, error


def ended_with_verdict(state: State) -> bool:
    """The run completed (every result stored and reported): Completed when its gate held,
    else Failed and named after why, never Crashed or failed by an exception."""
    return state.is_completed() or (
        state.is_failed() and state.name in {"Failed cases", "Regressed", "Below pass rate"}
    )


@dataclass
class Stored:
    """What the database holds for one run."""

    run: EvalRun
    cases: dict[str, CaseResultRow]
    metrics: list[MetricResultRow]
    case_rows: int  # counted in SQL, so a duplicate row would show
    metric_rows: int

    def metric(self, case_id: str, name: str) -> MetricResultRow:
        (row,) = [m for m in self.metrics if m.case_id == case_id and m.metric_name == name]
        return row


def stored(database_url: str, run_id: uuid.UUID | None = None) -> Stored:
    """The run (the latest one unless named), its case rows and metric rows."""
    with Session(get_engine(database_url)) as session:
        if run_id is None:
            run = session.exec(select(EvalRun).order_by(col(EvalRun.started_at).desc())).first()
            assert run is not None, "no run was stored"
        else:
            run = session.get(EvalRun, run_id)
            assert run is not None, f"run {run_id} was not stored"
        cases = session.exec(select(CaseResultRow).where(CaseResultRow.run_id == run.id)).all()
        metrics = session.exec(select(MetricResultRow).where(MetricResultRow.run_id == run.id)).all()
        case_count = session.exec(
            select(func.count()).select_from(CaseResultRow).where(CaseResultRow.run_id == run.id)
        ).one()
        metric_count = session.exec(
            select(func.count()).select_from(MetricResultRow).where(MetricResultRow.run_id == run.id)
        ).one()
        session.expunge_all()
    by_id = {row.case_id: row for row in cases}
    assert len(by_id) == len(cases), "a case was stored twice"
    return Stored(run, by_id, list(metrics), int(case_count), int(metric_count))


@dataclass
class Reports:
    markdown: str
    html: str
    junit: ET.Element

    def junit_case(self, case_id: str) -> ET.Element:
        (case,) = [c for c in self.junit.iter("testcase") if c.get("name", "").startswith(case_id)]
        return case

    def shows(self, text: str) -> bool:
        """Whether a message is in the Markdown and the HTML report (as each escapes it)."""
        return md_inline(text) in self.markdown and str(escape(text)) in self.html


def reports(directory: Path) -> Reports:
    return Reports(
        markdown=(directory / "report.md").read_text(),
        html=(directory / "report.html").read_text(),
        junit=ET.fromstring((directory / "junit.xml").read_text()),
    )
