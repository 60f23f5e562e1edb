"""Embedding similarity (the `embeddings` extra), offline, with the packaged model."""

from __future__ import annotations

import pytest

from proctor.metrics import REGISTRY, MetricConfigError, semantic
from proctor.models.case import MetricSpec
from tests.factories import agent_turn, make_case, make_ctx

_skip_without_extra = pytest.mark.skipif(
    not semantic.embeddings_available(),
    reason="embeddings extra not installed (pip install torch==2.13.0, then pip install -e '.[embeddings]')",
)


def needs_extra(test):
    """Skipped without the extra; marked so CI runs it again with the extra installed."""
    return pytest.mark.needs_extra(_skip_without_extra(test))


def _score(answer: str, expected: str) -> float:
    metric = REGISTRY.build(MetricSpec(name="semantic_similarity"))
    return metric.evaluate(make_ctx(make_case(expected_response=expected), agent_turn(answer))).value


@needs_extra
def test_a_paraphrase_is_similar_and_an_unrelated_answer_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    close = _score("Tokyo has clear skies and 22 degrees.", "The weather in Tokyo is 22°C and sunny.")
    far = _score("I like turtles.", "The weather in Tokyo is 22°C and sunny.")
    assert close > 0.6 > 0.2 > far >= 0.0
    assert _score("same words", "same words") == pytest.approx(1.0, abs=1e-5)


@needs_extra
def test_it_does_not_apply_without_an_expected_answer() -> None:
    metric = REGISTRY.build(MetricSpec(name="semantic_similarity"))
    assert not metric.applies_to(make_ctx(make_case(), agent_turn("anything")))


def test_without_the_extra_the_suite_is_refused_with_the_install_command(monkeypatch) -> None:
    monkeypatch.setattr(semantic, "embeddings_available", lambda: False)
    with pytest.raises(MetricConfigError, match=r"pip install -e '.\[embeddings\]'"):
        REGISTRY.build(MetricSpec(name="semantic_similarity"))


@needs_extra
def test_loading_the_model_draws_no_progress_bar() -> None:
    import subprocess
    import sys

    script = (
        "from proctor.metrics.semantic import cosine_similarities; print(cosine_similarities([('a', 'b')]))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Loading weights" not in done.stderr and "it/s" not in done.stderr
