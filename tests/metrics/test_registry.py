"""The metric registry: unique names, helpful errors, well-described metrics."""

from __future__ import annotations

import pytest

from proctor.metrics import DEFAULT_METRICS, REGISTRY, MetricConfigError, MetricRegistry
from proctor.metrics.text import Contains, NotContains
from proctor.metrics.tools import ToolsCalled
from proctor.models.case import MetricSpec


def test_two_metrics_with_one_name_are_rejected() -> None:
    class Impostor(NotContains):
        name = "contains"

    with pytest.raises(ValueError, match="two metrics are named 'contains'"):
        MetricRegistry([Contains, Impostor])


def test_the_same_metric_twice_is_rejected() -> None:
    with pytest.raises(ValueError, match="two metrics are named 'tools_called'"):
        MetricRegistry([ToolsCalled, ToolsCalled])


def test_an_unknown_name_suggests_the_closest_and_lists_the_valid_names() -> None:
    registry = MetricRegistry([NotContains, Contains])
    with pytest.raises(MetricConfigError) as error:
        registry.get("contain")
    assert str(error.value) == (
        "unknown metric 'contain'; did you mean 'contains'? valid metrics are: contains, not_contains"
    )
    with pytest.raises(MetricConfigError) as error:
        registry.get("bleu")  # nothing close: no guess
    assert str(error.value) == "unknown metric 'bleu'; valid metrics are: contains, not_contains"


def test_building_an_unknown_metric_is_a_config_error() -> None:
    with pytest.raises(MetricConfigError, match="unknown metric 'no_such_metric'"):
        REGISTRY.build(MetricSpec(name="no_such_metric"))


def test_a_misspelt_argument_names_the_metric_and_the_field() -> None:
    spec = MetricSpec(name="contains", args={"values": ["x"], "case_senstive": True})
    with pytest.raises(MetricConfigError) as error:
        REGISTRY.build(spec)
    assert str(error.value) == "metric 'contains': case_senstive: Extra inputs are not permitted"


def test_a_missing_argument_names_the_metric_and_the_field() -> None:
    with pytest.raises(MetricConfigError) as error:
        REGISTRY.build(MetricSpec(name="tools_called"))
    assert str(error.value) == "metric 'tools_called': tools: Field required"


def test_an_invalid_value_names_the_metric_and_the_field() -> None:
    with pytest.raises(MetricConfigError, match=r"^metric 'max_execution_time': max_ms: .*greater than 0"):
        REGISTRY.build(MetricSpec(name="max_execution_time", args={"max_ms": -1}))


def test_a_nested_bad_value_names_its_path() -> None:
    with pytest.raises(MetricConfigError, match=r"^metric 'contains': values\.1: "):
        REGISTRY.build(MetricSpec(name="contains", args={"values": ["ok", 3]}))


def test_build_returns_the_configured_metric() -> None:
    metric = REGISTRY.build(MetricSpec(name="contains", args={"values": ["x"], "case_sensitive": True}))
    assert isinstance(metric, Contains)
    assert metric.arguments() == {"values": ["x"], "case_sensitive": True}


def test_every_default_metric_has_a_unique_name() -> None:
    names = [metric.name for metric in DEFAULT_METRICS]
    assert len(names) == len(set(names))
    assert REGISTRY.names() == sorted(names)


@pytest.mark.parametrize("metric", DEFAULT_METRICS, ids=lambda metric: metric.name)
def test_every_default_metric_is_described(metric) -> None:
    assert metric.name in REGISTRY
    assert REGISTRY.get(metric.name) is metric
    assert metric.summary.strip()
    assert 0.0 <= metric.default_threshold <= 1.0


def test_a_metric_module_is_imported_only_when_a_suite_names_it() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from proctor.metrics import REGISTRY; from proctor.models.case import MetricSpec; "
        "before = {m for m in sys.modules if m.startswith('proctor.metrics.')}; "
        "REGISTRY.build(MetricSpec(name='bleu')); "
        "print(sorted(before), 'sacrebleu' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    before, bleu_loaded = done.stdout.strip().rsplit(" ", 1)
    assert "proctor.metrics.nlp" not in before and "proctor.metrics.judged" not in before, done.stderr
    assert bleu_loaded == "True"
