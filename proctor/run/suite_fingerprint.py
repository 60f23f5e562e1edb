"""What a run was started with, so `resume` never mixes two versions of a suite.

A run stores a fingerprint of the cases it selected: a digest per case (its turns, expected
answers, metrics and thresholds, files, metadata) and one over all of them, in order. On
`resume` the suite is loaded again; if any case changed, was added or was removed, the resume
is refused and the changed cases are named, since finished cases were scored against the old
version and the rest would be scored against the new one (17 of 31 cases, matching neither,
in the run that found this). A run stored before fingerprints existed resumes as it did.
"""

from __future__ import annotations

import hashlib
from typing import Any

from proctor.models.case import Case

# Above this many cases only the whole suite's digest is kept, not one per case: the run row
# stays small, and a refusal then says that the suite changed without listing the cases.
PER_CASE_UP_TO = 20_000
SHOWN = 5


def case_digest(case: Case) -> str:
    return hashlib.sha256(case.model_dump_json().encode("utf-8", "surrogatepass")).hexdigest()[:16]


def fingerprint(cases: list[Case]) -> dict[str, Any]:
    """The stored form: `sha256` over every case in order, and `cases` (id -> digest)."""
    digests = {case.case_id: case_digest(case) for case in cases}
    whole = hashlib.sha256(
        "\n".join(f"{key}\t{value}" for key, value in digests.items()).encode("utf-8", "surrogatepass")
    )
    stored: dict[str, Any] = {"sha256": whole.hexdigest(), "count": len(cases)}
    if len(cases) <= PER_CASE_UP_TO:
        stored["cases"] = digests
    return stored


def _names(ids: list[str]) -> str:
    shown = ", ".join(repr(case_id) for case_id in ids[:SHOWN])
    return shown + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")


def differences(recorded: dict[str, Any] | None, current: dict[str, Any]) -> str | None:
    """How the suite now differs from what a run was started with, in one line; None when it
    is the same (or the run recorded nothing to compare with)."""
    if not recorded or recorded.get("sha256") == current["sha256"]:
        return None
    before, now = recorded.get("cases"), current.get("cases")
    if not isinstance(before, dict) or now is None:
        return f"its {recorded.get('count', '?')} cases are not the {current['count']} the suite has now"
    changed = [case_id for case_id, digest in now.items() if case_id in before and before[case_id] != digest]
    added = [case_id for case_id in now if case_id not in before]
    removed = [case_id for case_id in before if case_id not in now]
    parts = [
        f"{len(ids)} {what}: {_names(ids)}"
        for what, ids in (("changed", changed), ("added", added), ("removed", removed))
        if ids
    ]
    return "; ".join(parts) or "its cases are in another order"
