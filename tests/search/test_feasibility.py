"""The sequential feasibility test: its error rate at the edges of the indifference zone
is at most beta on normal replications (Fabian's bound, Kim & Nelson 2001), and replaying
it over batches gives the fully sequential decision."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from zsim.search.feasibility import FAILS, MEETS, decide, equal_runs_needed, h_squared

N0 = 10
EPS = 0.5


def error_rate(mean: float, wrong: str, beta: float, trials: int, seed: int) -> tuple[int, int]:
    rng = np.random.default_rng(seed)
    errors = 0
    for _ in range(trials):
        values = rng.normal(mean, 1.0, size=N0)
        while True:
            decision = decide(values, 0.0, 1, EPS, beta, N0)
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
    for _ in range(200):
        values = rng.normal(rng.uniform(-1, 1), 1.0, size=400)
        whole = decide(values, 0.0, 1, EPS, 0.01, N0)
        assert whole.verdict is not None
        exact = decide(values[:whole.used], 0.0, 1, EPS, 0.01, N0)
        assert (exact.verdict, exact.used) == (whole.verdict, whole.used)
        if whole.used > N0:  # one replication fewer: still open
            assert decide(values[:whole.used - 1], 0.0, 1, EPS, 0.01, N0).verdict is None


def test_above_mirrors_below() -> None:
    values = np.array([0.9, 1.1, 1.0, 0.95, 1.05, 1.0, 0.98, 1.02, 1.01, 0.99])
    assert decide(values, 0.5, 1, 0.1, 0.01, N0).verdict == FAILS  # mean 1.0 is not below 0.5
    assert decide(values, 0.5, -1, 0.1, 0.01, N0).verdict == MEETS  # it is above 0.5


def test_equal_runs_of_an_unbounded_metric_never_decide() -> None:
    # ten runs without a loss say nothing about a metric that may be huge once in a while:
    # no verdict, and the plan asks for twice as many runs
    zeros = np.zeros(N0)
    decision = decide(zeros, 0.001, 1, 0.0005, 0.01, N0)
    assert (decision.verdict, decision.used, decision.variance, decision.predicted) == (None, N0, 0.0, 2 * N0)
    assert decide(np.zeros(5000), 0.001, 1, 0.0005, 0.01, N0).verdict is None


def test_equal_runs_of_a_bounded_metric_decide_at_the_binomial_bound() -> None:
    # a loss fraction in [0, 1], no loss in any run: "meets < 0.001 (+- 0.0005)" needs the
    # probability of a run that loses everything bounded below 0.0015 at error beta
    beta, limit = 0.01, 0.0015
    needed, verdict = equal_runs_needed(0.0, 0.001, 1, 0.0005, beta, (0.0, 1.0))
    assert verdict == MEETS
    # exactly the fewest r with (1 - limit)^r <= beta: a design as bad as the zone's edge
    # shows r equal runs with probability at most beta, and r - 1 would not do
    assert (1 - limit) ** needed <= beta < (1 - limit) ** (needed - 1)
    assert needed == 3068
    zeros = np.zeros(needed)
    assert decide(zeros[:needed - 1], 0.001, 1, 0.0005, beta, N0, (0.0, 1.0)).verdict is None
    decision = decide(zeros, 0.001, 1, 0.0005, beta, N0, (0.0, 1.0))
    assert (decision.verdict, decision.used, decision.how) == (MEETS, needed, "bound")
    # a tighter declared range decides sooner: a run can lose at most 1 %
    few, _ = equal_runs_needed(0.0, 0.001, 1, 0.0005, beta, (0.0, 0.01))
    assert (1 - 0.15) ** few <= beta < (1 - 0.15) ** (few - 1)
    # equal runs on the wrong side fail; "above" mirrors "below"
    assert decide(np.full(N0, 0.5), 0.001, 1, 0.0005, beta, N0, (0.0, 1.0)).verdict == FAILS
    assert decide(np.full(N0, 0.5), 0.001, -1, 0.0005, beta, N0, (0.0, 1.0)).verdict == MEETS
    # a range that puts every run past the target decides on the first stage
    assert equal_runs_needed(0.0012, 0.001, 1, 0.0005, beta, (0.0012, 1.0)) == (1, FAILS)


def test_a_value_that_differs_ends_the_first_stage() -> None:
    # twelve runs without a loss, then one that loses 5 %: the first stage is those 13 and
    # the sequential test goes on with their variance
    rng = np.random.default_rng(5)
    values = np.concatenate([np.zeros(12), [0.05], rng.uniform(0, 0.01, size=1000)])
    decision = decide(values, 0.001, 1, 0.0005, 0.01, N0)
    assert decision.first == 13
    assert decision.variance == pytest.approx(np.var(values[:13], ddof=1))
    assert decision.verdict == FAILS and decision.how == "sequential"
    # the same decision over batches as at once
    assert decide(values[:decision.used], 0.001, 1, 0.0005, 0.01, N0).verdict == FAILS


def test_rare_heavy_losses_are_not_read_from_a_lucky_first_stage() -> None:
    # one run in 40 loses 10 % (mean 0.25 %, far above a 0.1 % target): ten lucky runs
    # without a loss (probability 0.78) used to decide "meets" at n0. Now, over 500 such
    # designs, a "meets" comes at most as often as the error allows
    rng = np.random.default_rng(11)
    beta, wrong = 0.01, 0
    for _ in range(500):
        values = np.where(rng.random(3000) < 1 / 40, 0.10, 0.0)
        decision = decide(values, 0.001, 1, 0.0005, beta, N0, (0.0, 1.0))
        wrong += decision.verdict == MEETS
    assert stats.binomtest(wrong, 500, beta, alternative="greater").pvalue > 0.001, wrong


def test_h_squared_grows_as_the_error_shrinks() -> None:
    assert h_squared(10, 0.05) == pytest.approx(9 * (0.1 ** (-2 / 9) - 1))
    assert h_squared(10, 0.001) > h_squared(10, 0.01) > h_squared(10, 0.05)
    with pytest.raises(ValueError):
        h_squared(1, 0.05)
