"""Reports show a metric's name as written, first letter up: never "Classificationaccuracy"."""

from __future__ import annotations

import pytest

from proctor.rendering import title


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("ClassificationAccuracy", "ClassificationAccuracy"),
        ("TrajectoryEvaluator", "TrajectoryEvaluator"),
        ("classification_accuracy", "Classification accuracy"),
        ("Politeness (geval)", "Politeness (geval)"),
    ],
)
def test_metric_names_are_not_mangled(name: str, shown: str) -> None:
    assert title(name) == shown
