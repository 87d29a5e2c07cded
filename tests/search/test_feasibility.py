"""The sequential feasibility test: its error rate at the edges of the indifference zone
is at most beta on normal replications (Fabian's bound, Kim & Nelson 2001), and replaying
it over batches gives the fully sequential decision."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from zsim.search.feasibility import FAILS, MEETS, decide, h_squared

N0 = 10
EPS = 0.5


def error_rate(mean: float, wrong: str, beta: float, trials: int, seed: int) -> tuple[int, int]:
    rng = np.random.default_rng(seed)
    h2 = h_squared(N0, beta)
    errors = 0
    for _ in range(trials):
        values = rng.normal(mean, 1.0, size=N0)
        while True:
            decision = decide(values, 0.0, 1, EPS, h2, N0)
            if decision.verdict is not None:
                break
            values = np.concatenate([values, rng.normal(mean, 1.0, size=decision.predicted - len(values))])
        errors += decision.verdict == wrong
    return errors, trials


@pytest.mark.parametrize(("mean", "wrong"), [(-EPS, FAILS), (EPS, MEETS)])
def test_wrong_verdict_at_the_zone_edge_is_at_most_beta(mean: float, wrong: str) -> None:
    beta = 0.05
    errors, trials = error_rate(mean, wrong, beta, 4000, seed=7)
    # H0: the error rate is at most beta; refused at the 0.1 % level (a correct test fails
    # this with probability below 0.001)
    assert stats.binomtest(errors, trials, beta, alternative="greater").pvalue > 0.001, errors
    # and the test is not vacuous: in the zone's middle it answers both ways
    middle, _ = error_rate(0.0, MEETS, beta, 400, seed=8)
    assert 0 < middle < 400


def test_replaying_a_batch_gives_the_fully_sequential_decision() -> None:
    rng = np.random.default_rng(3)
    h2 = h_squared(N0, 0.01)
    for _ in range(200):
        values = rng.normal(rng.uniform(-1, 1), 1.0, size=400)
        whole = decide(values, 0.0, 1, EPS, h2, N0)
        assert whole.verdict is not None
        exact = decide(values[:whole.used], 0.0, 1, EPS, h2, N0)
        assert (exact.verdict, exact.used) == (whole.verdict, whole.used)
        if whole.used > N0:  # one replication fewer: still open
            assert decide(values[:whole.used - 1], 0.0, 1, EPS, h2, N0).verdict is None


def test_above_mirrors_below() -> None:
    h2 = h_squared(N0, 0.01)
    values = np.array([0.9, 1.1, 1.0, 0.95, 1.05, 1.0, 0.98, 1.02, 1.01, 0.99])
    assert decide(values, 0.5, 1, 0.1, h2, N0).verdict == FAILS  # mean 1.0 is not below 0.5
    assert decide(values, 0.5, -1, 0.1, h2, N0).verdict == MEETS  # it is above 0.5


def test_equal_first_stage_decides_at_n0_by_the_sign() -> None:
    h2 = h_squared(N0, 0.01)
    zeros = np.zeros(N0)
    decision = decide(zeros, 0.001, 1, 0.0005, h2, N0)
    assert (decision.verdict, decision.used, decision.variance) == (MEETS, N0, 0.0)
    assert decide(zeros + 0.002, 0.001, 1, 0.0005, h2, N0).verdict == FAILS


def test_h_squared_grows_as_the_error_shrinks() -> None:
    assert h_squared(10, 0.05) == pytest.approx(9 * (0.1 ** (-2 / 9) - 1))
    assert h_squared(10, 0.001) > h_squared(10, 0.01) > h_squared(10, 0.05)
    with pytest.raises(ValueError):
        h_squared(1, 0.05)
