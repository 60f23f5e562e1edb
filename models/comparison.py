"""The labels a run's comparison with its history gives each case, as stored with the run
(`EvalRun.comparison`) and shown by every report, Slack message and the console."""

from __future__ import annotations

LABELS = ("newly_failing", "still_failing", "flaky", "fixed", "added", "removed")
LABEL_NAMES = {
    "newly_failing": "newly failing",
    "still_failing": "still failing",
    "flaky": "flaky",
    "fixed": "fixed",
    "added": "added",
    "removed": "removed",
    "passing": "passing",
}
