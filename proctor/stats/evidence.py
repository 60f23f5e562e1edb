"""The statistics behind a nightly verdict: how surprising tonight's failures are, given each
case's own history. Pure functions of pass counts, so their false-alarm rate and power can be
simulated (bench/alarms.py) without a database, an agent or Prefect.

The model (docs/regressions.md): case i passes each attempt with its own probability p_i,
the same on every night of the history window and tonight unless something changed, attempts
independent. Before any history, p_i is uniform (a Beta(1, 1) prior); after k passes in n
attempts it is Beta(1 + k, 1 + n - k). Tonight's failures of the case then follow a
Beta-Binomial distribution (the posterior predictive): it carries the uncertainty of an
estimate from few nights, so a short history makes the tests cautious rather than jumpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

PRIOR_PASSES = 1.0
PRIOR_FAILURES = 1.0


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def failure_pmf(attempts: int, passed_before: int, failed_before: int) -> list[float]:
    """P(j of `attempts` fail), j = 0..attempts, for a case that passed `passed_before` and
    failed `failed_before` attempts in its history (Beta-Binomial posterior predictive)."""
    fail_shape = PRIOR_FAILURES + failed_before
    pass_shape = PRIOR_PASSES + passed_before
    if attempts == 1:  # the nightly case: one attempt, in closed form (Laplace's rule)
        failing = fail_shape / (fail_shape + pass_shape)
        return [1.0 - failing, failing]
    base = _log_beta(fail_shape, pass_shape)
    return [
        math.exp(
            math.lgamma(attempts + 1)
            - math.lgamma(j + 1)
            - math.lgamma(attempts - j + 1)
            + _log_beta(fail_shape + j, pass_shape + attempts - j)
            - base
        )
        for j in range(attempts + 1)
    ]


def failure_tail(failed: int, attempts: int, passed_before: int, failed_before: int) -> float:
    """P(at least `failed` of `attempts` fail) had nothing changed: how surprising tonight is."""
    if failed <= 0:
        return 1.0
    if attempts == 1:  # one attempt, failed: the predictive chance of a failure
        fail_shape = PRIOR_FAILURES + failed_before
        return fail_shape / (fail_shape + PRIOR_PASSES + passed_before)
    return min(1.0, sum(failure_pmf(attempts, passed_before, failed_before)[failed:]))


def all_fail(attempts: int, passed_before: int, failed_before: int) -> float:
    """P(every one of `attempts` fails) had nothing changed (the tail at `failed = attempts`,
    in closed form)."""
    fail_shape = PRIOR_FAILURES + failed_before
    pass_shape = PRIOR_PASSES + passed_before
    return math.exp(_log_beta(fail_shape + attempts, pass_shape) - _log_beta(fail_shape, pass_shape))


@dataclass(frozen=True)
class Surprise:
    """How one case's recent failures compare with its history.

    `tonight`: the tail probability of tonight's failures given the whole window.
    `streak_runs`: the runs, tonight's included, in which the case passed no attempt, back to
    its last pass; `streak`: the probability that all their attempts fail, given the history
    before them (a case that broke two nights ago and fails again is judged on both nights,
    not on tonight against a history that already holds the first failure).
    `p_value`: the smaller of the two: the case-level evidence of a change.
    """

    tonight: float
    streak: float
    streak_runs: int
    passed_before: int  # in the history before the streak
    attempts_before: int

    @property
    def p_value(self) -> float:
        return min(self.tonight, self.streak)


def surprise(
    history: Sequence[tuple[int, int]], now: tuple[int, int], totals: tuple[int, int] | None = None
) -> Surprise:
    """`history`: the case's (passed, attempts) per run of the window, oldest first; `now`:
    tonight's; `totals`: the history's (passed, attempts) when the caller has them. A case that
    passed every attempt tonight is no surprise (p = 1)."""
    passed_now, attempts_now = now
    if totals is None:
        totals = (sum(k for k, _ in history), sum(n for _, n in history))
    passed, attempts = totals
    failed_now = attempts_now - passed_now
    tonight = failure_tail(failed_now, attempts_now, passed, attempts - passed)
    if passed_now > 0 or attempts_now == 0:
        return Surprise(tonight, 1.0 if failed_now == 0 else tonight, 0, passed, attempts)
    streak_runs, streak_attempts = 1, attempts_now
    before_passed, before_attempts = passed, attempts
    for k, n in reversed(history):
        if k > 0 or n == 0:
            break
        streak_runs += 1
        streak_attempts += n
        before_attempts -= n
    streak = all_fail(streak_attempts, before_passed, before_attempts - before_passed)
    return Surprise(tonight, streak, streak_runs, before_passed, before_attempts)


def sum_tail(pmfs: Sequence[Sequence[float]], observed: int) -> float:
    """P(S >= observed) for S the sum of independent variables with these pmfs (each over
    0, 1, 2, ...): the failures of a whole run had nothing changed. Exact (convolution),
    pairwise so 10,000 cases cost a few hundred milliseconds."""
    if observed <= 0:
        return 1.0
    import numpy as np

    layer = [np.asarray(pmf, dtype=float) for pmf in pmfs if len(pmf)]
    if not layer:
        return 0.0
    while len(layer) > 1:
        paired = [np.convolve(layer[i], layer[i + 1]) for i in range(0, len(layer) - 1, 2)]
        if len(layer) % 2:
            paired.append(layer[-1])
        layer = paired
    total = layer[0]
    if observed >= len(total):
        return 0.0
    return float(min(1.0, max(0.0, total[observed:].sum())))


def expected_failures(pmfs: Sequence[Sequence[float]]) -> float:
    return sum(j * p for pmf in pmfs for j, p in enumerate(pmf))
