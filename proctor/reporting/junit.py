"""JUnit XML for CI systems: one testcase per case; below threshold is a failure, a case that
could not be scored (files, agent or evaluation failed) is an error."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from sqlmodel import Session

from models.tables import EvalRun
from proctor.storage.runs import iter_results

ERROR_STATES = {"FILES_FAILED", "AGENT_FAILED", "EVALUATION_FAILED"}


def junit_xml(*, session: Session, run: EvalRun) -> str:
    suite = ET.Element("testsuite", name=run.suite_name, timestamp=str(run.started_at), id=str(run.id))
    counts = {"tests": 0, "failures": 0, "errors": 0}
    for row, metrics in iter_results(session=session, run_id=run.id):
        counts["tests"] += 1
        case = ET.SubElement(
            suite,
            "testcase",
            classname=run.suite_id,
            name=row.case_name or row.case_id,
            time=f"{row.execution_ms / 1000:.3f}",
        )
        failed = [m for m in metrics if not m.passed]
        if row.state in ERROR_STATES:
            counts["errors"] += 1
            ET.SubElement(case, "error", message="; ".join(row.errors)[:1000], type=row.state)
        elif not row.passed:
            counts["failures"] += 1
            reasons = [
                f"{m.metric_name}: {m.score if m.score is not None else 'n/a'} < {m.threshold}"
                for m in failed
            ]
            if row.tools_matched is False:
                reasons.append(f"expected tools not called: {row.expected_tools}")
            ET.SubElement(case, "failure", message="; ".join(reasons)[:1000], type="BelowThreshold")
        ET.SubElement(case, "system-out").text = row.response or ""
    for key, value in counts.items():
        suite.set(key, str(value))
    suite.set("time", f"{(run.duration_ms or 0) / 1000:.3f}")
    return ET.tostring(ET.ElementTree(suite).getroot(), encoding="unicode", xml_declaration=True)
