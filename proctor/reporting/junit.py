"""JUnit XML for CI systems: one testcase per case; below threshold is a failure, a case that
could not be scored (files, agent or evaluation failed) is an error."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from sqlmodel import Session

from proctor.models.tables import EvalRun
from proctor.reporting.convert import case_label
from proctor.storage.runs import iter_results

ERROR_STATES = {"FILES_FAILED", "AGENT_FAILED", "EVALUATION_FAILED"}
# Characters XML 1.0 forbids anywhere (common in tool output): shown as their symbols.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def xml_text(text: str) -> str:
    """Text an XML 1.0 parser accepts: forbidden control characters become ␀-␟ (or U+FFFD)."""
    return _NOT_XML.sub(lambda m: chr(0x2400 + ord(m.group())) if ord(m.group()) < 32 else "\ufffd", text)


class JUnitBuilder:
    """Collects testcases as results stream past, so the XML costs no extra pass over the rows."""

    def __init__(self, run: EvalRun) -> None:
        self.run = run
        self.suite = ET.Element(
            "testsuite",
            name=xml_text(run.suite_name),
            timestamp=run.started_at.replace(tzinfo=None, microsecond=0).isoformat(),  # JUnit's ISO 8601
            id=str(run.id),
        )
        # `skipped` as JUnit's schema has it: Proctor runs every case it plans, so none is skipped.
        self.counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        self.testcases: list[str] = []

    def add(self, row: Any, metrics: list[Any]) -> None:
        self.counts["tests"] += 1
        case = ET.Element(
            "testcase",
            classname=xml_text(self.run.suite_id),
            name=xml_text(case_label(row)),
            time=f"{row.execution_ms / 1000:.3f}",
        )
        if row.state in ERROR_STATES:
            self.counts["errors"] += 1
            ET.SubElement(case, "error", message=xml_text("; ".join(row.errors)[:1000]), type=row.state)
        elif not row.passed:
            self.counts["failures"] += 1
            reasons = [
                f"{m.metric_name}: {m.score if m.score is not None else 'n/a'} < {m.threshold}"
                for m in metrics
                if not m.passed and not m.informational
            ]
            if row.tools_matched is False:
                reasons.append(f"expected tools not called: {row.expected_tools}")
            ET.SubElement(case, "failure", message=xml_text("; ".join(reasons)[:1000]), type="BelowThreshold")
        ET.SubElement(case, "system-out").text = xml_text(row.response or "")
        # Serialised now: a string per case costs a fraction of a live element tree.
        self.testcases.append(ET.tostring(case, encoding="unicode"))

    def xml(self) -> str:
        for key, value in self.counts.items():
            self.suite.set(key, str(value))
        self.suite.set("time", f"{(self.run.duration_ms or 0) / 1000:.3f}")
        self.suite.text = "\n"
        head, _, tail = ET.tostring(self.suite, encoding="unicode", xml_declaration=True).rpartition(
            "</testsuite>"
        )
        if not _:  # an empty suite is written as <testsuite ... />
            head, tail = ET.tostring(self.suite, encoding="unicode", xml_declaration=True)[:-3] + ">", ""
        return head + "\n".join(self.testcases) + "\n</testsuite>" + tail


def junit_xml(*, session: Session, run: EvalRun) -> str:
    builder = JUnitBuilder(run)
    for row, metrics in iter_results(session=session, run_id=run.id):
        builder.add(row, metrics)
    return builder.xml()
