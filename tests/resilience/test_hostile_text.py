"""Any text an agent, a tool or a judge can produce is stored, once per case, and reported.

Property-style: a seeded generator mixes NUL, lone surrogates, C0/C1 control characters,
terminal escape sequences, byte-order and non-characters, text from every Unicode plane and
megabyte strings, and feeds them through agent answers, tool-call arguments, judge replies
and case names, on SQLite and PostgreSQL. Whatever no database can store (NUL, lone
surrogates) is replaced with U+FFFD and the case says so in its notes; everything else is
stored exactly as produced. Suites carrying text no agent could receive fail `validate`.
"""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from proctor.cli import EXIT_BAD_INPUT
from proctor.flows.evaluate import GateFailed
from proctor.storage.text import storable
from tests.fakes import FakeOpenAI, judged
from tests.resilience.harness import run_flow, stored, write_suite
from tests.resilience.test_integrity import database, fresh_postgres  # noqa: F401 - fixtures

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

SEED = 14
CONTROLS = "".join(map(chr, [*range(1, 32), *range(0x7F, 0xA0)]))
FIXED = [
    "\x00",
    "before\x00after",
    "\ud800",
    "tail \udfff",
    "half a pair \ud83d here",
    "\x1b[2J\x1b[31mcleared and red\x1b[0m\x07",
    CONTROLS,
    "\ufeff\ufffe\uffff\u2028\u2029\u202eRTL",
    "".join(chr(plane * 0x10000 + 0x100 + plane) for plane in range(1, 17)),
    "a" * 1_000_000,
    ("\x00\ud800" * 500_000),
    "<script>alert(1)</script> | `code` ]]> & &amp; {{ jinja }} {% raw %}",
]


def _random_char(rng: random.Random) -> str:
    pick = rng.random()
    if pick < 0.1:
        return "\x00"
    if pick < 0.2:
        return chr(rng.randrange(0xD800, 0xE000))  # a lone surrogate
    if pick < 0.35:
        return rng.choice(CONTROLS)
    if pick < 0.6:
        return chr(rng.randrange(0x20, 0x7F))
    plane = rng.randrange(0, 17)
    code = plane * 0x10000 + rng.randrange(0, 0x10000)
    return chr(code) if not 0xD800 <= code < 0xE000 else "x"


def hostile_texts(count: int, seed: int = SEED) -> list[str]:
    """The fixed nasties, then random mixes of every class up to `count` strings."""
    rng = random.Random(seed)
    texts = list(FIXED)
    while len(texts) < count:
        texts.append("".join(_random_char(rng) for _ in range(rng.randrange(0, 300))))
    return texts[:count]


def case_names(count: int) -> list[str]:
    """Case ids a suite may hold (no control characters), with text from every plane."""
    names = []
    for index in range(count):
        plane = index % 17
        letter = chr(plane * 0x10000 + 0x100 + index) if plane else "é"
        names.append(f"c{index:02d}_{letter}_\u202e<b>|`")
    return names


AGENTS = """
import json, pathlib

TEXTS = json.loads((pathlib.Path(__file__).parent / "hostile.json").read_text())


def hostile(request):
    text = TEXTS[request.case_id]
    request.record_tool_call("lookup", {"q": text, "nested": [text, {"k": text}]}, text[:100])
    return text
"""

METRICS = """
- metric: contains
  values: ["a"]
- metric: llm_judge
  threshold: 0.5
  timeout_ms: 60000
"""


@pytest.fixture
def hostile_judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """A judge whose reasons are hostile text too, a different one per call."""
    reasons = hostile_texts(400, seed=SEED + 1)
    calls = itertools.count()  # thread-safe enough: next() on a count is atomic under the GIL

    with FakeOpenAI(default=lambda body: judged(4, reasons[next(calls) % len(reasons)])) as api:
        monkeypatch.setenv("PROCTOR_JUDGE_BASE_URL", api.base_url)
        monkeypatch.setenv("PROCTOR_JUDGE_API_KEY", "sk-hostile")
        yield api


def test_hostile_text_is_stored_once_per_case_and_every_report_renders(
    database: str,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    hostile_judge: FakeOpenAI,
) -> None:
    # As the agent reads them back from JSON (an escaped surrogate pair becomes one character).
    texts = [json.loads(json.dumps(text)) for text in hostile_texts(40)]
    names = case_names(len(texts))
    folder = tmp_path / "suite"
    suite, agents = write_suite(
        folder,
        metrics=METRICS,
        cases={name: (f"question {index}", "a") for index, name in enumerate(names)},
        agents=AGENTS,
    )
    (folder / "hostile.json").write_text(json.dumps(dict(zip(names, texts, strict=True))))  # ASCII, escaped
    state, summary = run_flow(
        suite=str(suite),
        agent=agents + "hostile",
        database_url=database,
        report_dir=str(tmp_path / "reports"),
        concurrency=8,
    )
    # The run ended on its own terms: completed, or its gate's verdict (a Failed state that
    # carries the summary), never a crash.
    assert state.is_completed() or isinstance(state.result(raise_on_failure=False), GateFailed), summary

    db = stored(database, summary.run_id)
    assert db.case_rows == len(texts) and sorted(db.cases) == sorted(names)  # each case exactly once
    assert db.metric_rows == 2 * len(texts)
    assert (db.run.status, db.run.total_cases) == ("completed", len(texts))
    for name, text in zip(names, texts, strict=True):
        row, expected = db.cases[name], storable(text, "", [])
        assert row.response == expected, name  # stored as produced, bar what no database holds
        (call,) = row.tool_calls
        assert call["args"] == {"q": expected, "nested": [expected, {"k": expected}]}
        unstorable = expected != text
        assert bool(row.notes) >= unstorable, (name, row.notes)
        if unstorable:
            assert any(note.startswith("response: ") and "U+FFFD" in note for note in row.notes), row.notes

    reports = tmp_path / "reports"
    for name in ("report.json", "eval_report.json"):
        json.loads((reports / name).read_text())
    ET.fromstring((reports / "junit.xml").read_text())
    for name in ("report.md", "report.html"):
        assert (reports / name).stat().st_size > 0
    assert not list(reports.glob("*.tmp"))


def _validate(folder: Path, document: dict) -> subprocess.CompletedProcess[str]:
    path = folder / "suite.evalset.json"
    path.write_text(json.dumps(document))  # ASCII: "\\ud800" escapes survive as lone surrogates
    (folder / "agent.py").write_text("def agent(request):\n    return 'ok'\n")
    proctor = str(Path(sys.executable).with_name("proctor"))
    return subprocess.run([proctor, "validate", str(path)], capture_output=True, text=True, timeout=300)


def _evalset(case_id: str, text: str) -> dict:
    return {
        "eval_set_id": "hostile",
        "metadata": {"agent": "agent.py:agent"},
        "eval_cases": [
            {
                "eval_id": case_id,
                "conversation": [
                    {"invocation_id": "t1", "user_content": {"role": "user", "content": text}},
                ],
            }
        ],
    }


@pytest.mark.parametrize(
    ("case_id", "text", "expected"),
    [
        ("ok", "a lone \ud800 surrogate", "a lone UTF-16 surrogate is not text any agent can receive"),
        ("nul\x00id", "fine", "a case id may not hold control characters"),
        ("esc\x1b[2Jid", "fine", "a case id may not hold control characters"),
        ("empty", "   ", "an empty user message"),
    ],
    ids=["surrogate-in-input", "nul-in-id", "escape-in-id", "empty-message"],
)
def test_text_no_run_could_carry_fails_validate(
    tmp_path: Path, case_id: str, text: str, expected: str
) -> None:
    done = _validate(tmp_path, _evalset(case_id, text))
    assert done.returncode == EXIT_BAD_INPUT, done.stdout + done.stderr
    assert expected in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
