"""Reliability figures for docs/reliability.md: hostile inputs tried, faults survived, results lost.

Writes cases through the real group-commit writer (checkpoint, then final write with a
metric), on SQLite and, with --postgres, PostgreSQL, the way a run does:

- every answer, tool argument and judge reason is a generated hostile string (NUL, lone
  surrogates, control characters, every Unicode plane, megabyte strings; the same generator
  as tests/resilience/test_hostile_text.py);
- one case in every `--refuse-every` is refused by the database itself (a trigger), the
  class of fault "one bad write";

then counts, from the database, the cases stored with a final state exactly once. A result
is lost when a case the writer was given is missing, stored twice or left unfinished.

    python bench/reliability.py [--cases 2000] [--suites] \
        [--postgres postgresql://postgres@127.0.0.1:5432/test]

`--suites` also runs the fault suite (tests/resilience) and the malformed-input corpus, and
prints how many of each held, counted from pytest's JUnit record.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from pathlib import Path

from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from proctor.models.agentflow import ToolCall  # noqa: E402
from proctor.models.case import Case, Turn  # noqa: E402
from proctor.models.outcome import AgentTurn, CaseOutcome, CaseState, ScoredMetric  # noqa: E402
from proctor.models.tables import EvalRun  # noqa: E402
from proctor.storage import get_engine  # noqa: E402
from proctor.storage.writer import DatabaseWriteError, ResultWriter  # noqa: E402
from tests.resilience.test_hostile_text import hostile_texts  # noqa: E402
from tests.resilience.test_integrity import POSTGRES_REFUSAL, SQLITE_REFUSAL  # noqa: E402


def _fresh_postgres(server: str) -> str:
    import psycopg
    from sqlalchemy.engine import make_url

    from proctor.storage.db import normalize_url

    base = make_url(normalize_url(server))
    name = f"proctor_bench_{uuid.uuid4().hex[:10]}"
    admin = base.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return base.set(drivername="postgresql", database=name).render_as_string(hide_password=False)


def _drop_postgres(url: str) -> None:
    """The bench's database dropped once measured: nothing of it is left on the server."""
    import psycopg
    from sqlalchemy.engine import make_url

    from proctor.storage.db import dispose_engines

    dispose_engines()  # the writer's pooled connections would keep the database in use
    parsed = make_url(url)
    admin = parsed.set(database="postgres").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{parsed.database}" WITH (FORCE)')


async def _write_all(writer: ResultWriter, run_id: uuid.UUID, texts: list[str], refuse_every: int) -> int:
    """Checkpoint and final write of every case, as the pipeline does; returns the refused ones."""
    refused = 0

    async def one(index: int, answer: str) -> None:
        nonlocal refused
        poisoned = refuse_every and index % refuse_every == 0
        if poisoned:
            answer = "poison " + answer
            refused += 1
        case = Case(case_id=f"case-{index:05d}", turns=[Turn(turn_id="t1", input=f"question {index}")])
        outcome = CaseOutcome(case_id=case.case_id)
        call = ToolCall(name="lookup", args={"q": answer})
        outcome.turns = [AgentTurn(turn_id="t1", input="q", response=answer, tool_calls=[call])]
        outcome.state = CaseState.AGENT_COMPLETE
        await writer.save(run_id, case, outcome, index)
        outcome.metrics = [
            ScoredMetric(
                metric_name="judge", score=1.0, passed=True, evaluation_time_ms=1, reason=answer[:5000]
            )
        ]
        outcome.state = CaseState.COMPLETE
        try:
            await writer.save(run_id, case, outcome, index)
        except DatabaseWriteError as error:  # would fail the chunk: the case stays for resume
            print(f"  write failed: {error}", file=sys.stderr)

    await asyncio.gather(*(one(index, answer) for index, answer in enumerate(texts)))
    return refused


def measure(url: str, cases: int, refuse_every: int) -> dict[str, float]:
    engine = get_engine(url)
    with engine.begin() as connection:
        for statement in SQLITE_REFUSAL if url.startswith("sqlite") else POSTGRES_REFUSAL:
            connection.execute(text(statement))
    run = EvalRun(
        suite_id="bench",
        suite_name="bench",
        suite_path="-",
        source_format="native",
        agent="-",
        proctor_version="bench",
    )
    from sqlmodel import Session

    with Session(engine, expire_on_commit=False) as session:
        session.add(run)
        session.commit()
    texts = hostile_texts(cases, seed=2026)
    writer = ResultWriter(engine)
    started = time.perf_counter()
    refused = asyncio.run(_write_all(writer, run.id, texts, refuse_every))
    elapsed = time.perf_counter() - started
    writer.close()
    with engine.connect() as connection:
        finals = dict(
            connection.execute(
                text(
                    "SELECT case_id, count(*) FROM case_result WHERE run_id = :r AND state IN "
                    "('COMPLETE', 'EVALUATION_FAILED') GROUP BY case_id"
                ),
                {"r": run.id if not url.startswith("sqlite") else run.id.hex},
            ).all()
        )
        noted = connection.execute(
            text(
                "SELECT count(*) FROM case_result "
                "WHERE run_id = :r AND CAST(notes AS TEXT) NOT IN ('null', '[]')"
            ),
            {"r": run.id if not url.startswith("sqlite") else run.id.hex},
        ).scalar_one()
    once = sum(1 for count in finals.values() if count == 1)
    return {
        "inputs": len(texts),
        "faults": refused,
        "stored_once": once,
        "lost": len(texts) - once,
        "noted": noted,
        "seconds": elapsed,
    }


SUITES = {
    "faults survived (tests/resilience)": "tests/resilience",
    "malformed inputs answered with exit 2 (tests/loaders/test_malformed_inputs.py)": (
        "tests/loaders/test_malformed_inputs.py"
    ),
}


def count_suites() -> None:
    """Run the fault suite and the malformed-input corpus and print how many held, from
    pytest's own JUnit record: docs/reliability.md's figures are these, not typed."""
    import subprocess
    import xml.etree.ElementTree as ElementTree

    root = Path(__file__).resolve().parent.parent
    for label, target in SUITES.items():
        with tempfile.TemporaryDirectory() as folder:
            record = Path(folder) / "junit.xml"
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    target,
                    f"--junitxml={record}",
                ],
                cwd=root,
                capture_output=True,
            )
            cases = ElementTree.parse(record).getroot().iter("testcase")
            outcomes = [next((child.tag for child in case), "passed") for case in cases]
        held = outcomes.count("passed")
        print(f"{label}: {held:,} of {len(outcomes):,} held ({outcomes.count('skipped')} skipped)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--refuse-every", type=int, default=50)
    parser.add_argument("--postgres", help="a PostgreSQL server URL; a fresh database is made on it")
    parser.add_argument(
        "--suites", action="store_true", help="also run the fault suite and the malformed-input corpus"
    )
    args = parser.parse_args()
    if args.suites:
        count_suites()
    targets = [("SQLite", f"sqlite:///{tempfile.mkdtemp(prefix='proctor-bench-')}/results.db")]
    if args.postgres:
        targets.append(("PostgreSQL", _fresh_postgres(args.postgres)))
    print(
        "| database | hostile inputs tried | refused writes (faults) | stored exactly once | results lost "
        "| cases with a storage note | time |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, url in targets:
        try:
            figures = measure(url, args.cases, args.refuse_every)
        finally:
            if label == "PostgreSQL":
                _drop_postgres(url)
        print(
            f"| {label} | {figures['inputs']:,} | {figures['faults']:,} | {figures['stored_once']:,} | "
            f"{figures['lost']:,} | {figures['noted']:,} | {figures['seconds']:.1f} s |"
        )


if __name__ == "__main__":
    main()
