"""Agent text and case names are data, never markup: a real run whose agent answers with HTML,
Markdown and Slack markup, under a case id and name made of the same, and every report read
back with a real parser (html.parser, markdown-it, xml.etree, json) and Slack's bodies."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
import xml.etree.ElementTree as ET
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest
from markdown_it import MarkdownIt
from sqlmodel import Session

from proctor.cli import EXIT_FAILED, main
from proctor.flows.evaluate import EvaluationRequest, run_evaluation
from proctor.models.notify import SlackSettings
from proctor.models.tables import EvalRun
from proctor.rendering import md_inline
from proctor.reporting.junit import JUnitBuilder
from proctor.storage import get_engine
from tests.fakes.slack_server import FakeSlack

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

NASTY = (
    "<script>alert(1)</script> <img src=x onerror=alert(2)>\n"
    "| pipe | table |\n"
    "# heading\n"
    "[link](javascript:alert(3)) `tick` ```fence``` ![img](x.png) <https://evil.example>\n"
    "<!channel> <@U123> *bold* _under_ ~strike~ [/x] [bold]rich[/bold] "
    "&amp; &#60;b&#62; \"double\" 'single' ]]> --> {{ 7 * 7 }}"
)
NASTY_ID = "id <script>alert(4)</script> | # [x](javascript:alert(5)) `id` <!channel> <@U123> *id*"
NASTY_NAME = "name <img src=y onerror=alert(6)> | ## [n](javascript:alert(7)) `n` <!channel> <@U123> [/x]"
NASTY_TOOL = "tool<script>alert(8)</script>|*t*"
AGENT = """
NASTY = {nasty!r}
TOOL = {tool!r}


def agent(request):
    if request.input == "raise":
        raise RuntimeError(NASTY)
    if request.input == "pass":
        return "The expected answer."
    request.record_tool_call(TOOL, {{"query": NASTY}}, NASTY)
    return NASTY
"""
HEADINGS = re.compile(
    r"^(Test Report: |Summary$|Test Results$|Cases that did not pass every repeat$|Failing cases$"
    r"|Against the baseline$|[✅❌] Test \d+: |[✅❌] escaping-suite: )"
)


def _case(case_id: str, text: str, expected: str, name: str | None = None) -> dict:
    turn = {
        "invocation_id": "turn_1",
        "user_content": {"role": "user", "content": text},
        "expected_final_response": {"role": "assistant", "content": expected},
    }
    return {"eval_id": case_id, **({"name": name} if name else {}), "conversation": [turn]}


@pytest.fixture
def nasty_suite(tmp_path: Path) -> Path:
    (tmp_path / "agent.py").write_text(AGENT.format(nasty=NASTY, tool=NASTY_TOOL))
    suite = {
        "eval_set_id": "escaping",
        "name": "escaping-suite",
        "metadata": {"agent": "agent.py:agent", "eval_config": {"criteria": {"response_match": 0.7}}},
        "eval_cases": [
            _case(NASTY_ID, "say it", "A calm and ordinary answer.", name=NASTY_NAME),
            _case("raises", "raise", "Anything."),
            _case("passes", "pass", "The expected answer."),
        ],
    }
    path = tmp_path / "escaping.evalset.json"
    path.write_text(json.dumps(suite, indent=2))
    return path


class _Page(HTMLParser):
    """Elements, attributes and text of a page, as a browser's tokenizer sees them."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    handle_startendtag = handle_starttag

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _html_problems(html: str) -> list[str]:
    page = _Page(html)
    problems = [f"<{tag}>" for tag, _ in page.tags if tag in {"script", "img", "iframe", "a", "object"}]
    for tag, attrs in page.tags:
        problems += [f"<{tag} {name}=…>" for name, _ in attrs if name.startswith("on")]
        problems += [f"<{tag} {name}={value}>" for name, value in attrs if "javascript:" in (value or "")]
    text = "".join(page.text)
    for shown in ("<script>alert(1)</script>", "<img src=x onerror=alert(2)>", NASTY_NAME):
        if shown not in text:
            problems.append(f"{shown!r} is not shown as text")
    return problems


def _markdown_problems(markdown: str, *, shows: tuple[str, ...] = ()) -> list[str]:
    """Raw HTML, links, images or headings that agent text made, and table rows whose column
    count differs from their header's (GFM: a pipe not preceded by a backslash ends a cell,
    inside a code span too)."""
    problems = []
    parser = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    parser.validateLink = lambda url: True  # any link that survived escaping becomes one
    tokens = parser.parse(markdown)
    for index, token in enumerate(tokens):
        if token.type in {"html_block", "html_inline"}:
            problems.append(f"raw HTML: {token.content!r}")
        if token.type == "heading_open" and not HEADINGS.match(tokens[index + 1].content):
            problems.append(f"heading: {tokens[index + 1].content!r}")
        for child in token.children or []:
            if child.type in {"html_inline", "link_open", "image"}:
                problems.append(f"{child.type}: {child.content or child.attrs!r}")
    header_cells = None
    for line in markdown.splitlines():
        if not line.startswith("|"):
            header_cells = None
            continue
        cells = len(re.findall(r"(?<!\\)\|", line))
        if header_cells is None:
            header_cells = cells
        elif cells != header_cells:
            problems.append(f"{cells - 1} columns instead of {header_cells - 1}: {line}")
    text = re.sub(r"<[^>]+>", "", parser.render(markdown))
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")
    problems += [f"{shown!r} is not shown as text" for shown in shows if shown not in text]
    return problems


def _one_line(text: str) -> str:
    return " ".join(text.split())


async def _summary_artifact(flow_run_id: str) -> str:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterType

    async with get_client() as client:
        (artifact,) = await client.read_artifacts(
            artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[uuid.UUID(flow_run_id)]),
                type=ArtifactFilterType(any_=["markdown"]),
            )
        )
    return artifact.data


def test_every_report_shows_agent_text_as_text(
    nasty_suite: Path, sqlite_url: str, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-escaping")
    out = tmp_path / "reports"
    with FakeSlack(token="xoxb-escaping") as slack:
        request = EvaluationRequest(
            suite=str(nasty_suite),
            database_url=sqlite_url,
            report_dir=str(out),
            repeat=2,  # the pass-count table lists the case ids
            slack=SlackSettings(channel="#agent-evals", notify="always", api_url=slack.api_url),
        )
        summary = asyncio.run(run_evaluation(request))
    assert (summary.total, summary.passed) == (6, 2) and summary.notification["status"] == "sent"

    html = (out / "report.html").read_text()
    assert not _html_problems(html), _html_problems(html)
    assert "<script" not in html and "<img" not in html and "&lt;script&gt;alert(1)" in html

    markdown = (out / "report.md").read_text()
    assert NASTY_ID.split()[0] in markdown and "Cases that did not pass every repeat" in markdown
    problems = _markdown_problems(markdown, shows=(_one_line(NASTY), NASTY_NAME, NASTY_TOOL))
    assert not problems, problems

    with Session(get_engine(sqlite_url)) as session:
        flow_run_id = session.get(EvalRun, summary.run_id).flow_run_id
    artifact = asyncio.run(_summary_artifact(flow_run_id))
    assert "Failing cases" in artifact
    problems = _markdown_problems(artifact, shows=(NASTY_NAME,))
    assert not problems, problems

    junit = ET.parse(out / "junit.xml").getroot()
    cases = {case.get("name"): case for case in junit.iter("testcase")}
    assert cases[NASTY_NAME].find("system-out").text == NASTY
    assert cases[f"{NASTY_NAME} (repeat 2)"].find("failure") is not None
    assert NASTY in cases["raises"].find("error").get("message")

    report = json.loads((out / "report.json").read_text())
    (result,) = [r for r in report["results"] if r["test_name"] == NASTY_NAME]
    assert result["agent_response"] == NASTY and result["tool_calls"] == [NASTY_TOOL]
    (raised,) = [r for r in report["results"] if r["test_name"] == "raises"]
    assert raised["errors"] == [f"agent failed on turn turn_1: {NASTY}"]
    eval_report = json.loads((out / "eval_report.json").read_text())
    assert NASTY_ID in {r["eval_id"] for r in eval_report["results"]}

    bodies = json.dumps([request["body"] for request in slack.requests], ensure_ascii=False)
    for markup in ("<!channel>", "<@U123>", "<script", "*bold*", "<https://evil"):
        assert markup not in bodies, markup
    assert "&lt;!channel&gt;" in bodies and "&lt;@U123&gt;" in bodies  # shown, as text
    assert len(slack.messages()) == 2  # the summary and its thread of failing cases


def test_markdown_shows_control_characters_as_symbols() -> None:
    """ESC and friends in report.md would drive the terminal of whoever runs `cat report.md`."""
    assert md_inline("red \x1b[31mtext\x1b[0m\x07 \x00end\x7f") == "red ␛\\[31mtext␛\\[0m␇ ␀end␡"
    assert md_inline("tab\tand\r\nnewline") == "tab and newline"


def test_junit_xml_stays_well_formed_with_control_characters() -> None:
    run = SimpleNamespace(
        suite_name="s",
        suite_id="s",
        started_at=datetime(2026, 11, 23, 8, 35, 56, 884124),
        id="r",
        duration_ms=1,
    )
    row = SimpleNamespace(
        case_name=None,
        case_id="ansi\x1b[31m",
        attempt=0,
        execution_ms=1.0,
        state="AGENT_FAILED",
        errors=["agent failed: \x1b[31mred\x00"],
        passed=False,
        response="\x1b[31mred\x1b[0m",
    )
    builder = JUnitBuilder(run)
    builder.add(row, [])
    ET.fromstring(builder.xml().encode())


def test_the_cli_prints_agent_text_literally(nasty_suite: Path, sqlite_url: str, tmp_path, capsys) -> None:
    code = main(
        ["run", str(nasty_suite), "--db", sqlite_url, "--output", str(tmp_path / "cli"), "--no-progress"]
    )
    out = capsys.readouterr().out
    assert code == EXIT_FAILED
    assert "[/x]" in out and "[bold]rich[/bold]" in out
