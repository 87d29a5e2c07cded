"""MSER-5 (zsim.steady): the warm-up it deletes and when it calls a series unsettled."""

from __future__ import annotations

import numpy as np

from zsim.steady import BATCH, mser5, mser5_many


def _lindley(rng, n, rho, start):
    """Waiting plus service times of n customers of an M/M/1 queue (service mean 1)."""
    arrivals, services = rng.exponential(1 / rho, n), rng.exponential(1.0, n)
    out, wait = np.empty(n), start
    for i in range(n):
        out[i] = wait + services[i]
        wait = max(0.0, wait + services[i] - arrivals[i])
    return out


def test_too_few_observations_get_no_verdict():
    assert mser5(np.ones(99)) is None
    assert mser5(np.ones(100)) is not None


def test_a_constant_series_has_no_warm_up():
    verdict = mser5(np.full(1000, 3.0))
    assert (verdict.deleted, verdict.settled) == (0, True)


def test_an_initial_transient_is_deleted():
    rng = np.random.default_rng(0)
    series = np.r_[np.linspace(10, 1, 200), 1 + rng.normal(0, 0.1, 1800)]
    verdict = mser5(series)
    assert verdict.settled and 150 <= verdict.deleted <= 260
    step = mser5(np.r_[np.zeros(100), np.ones(900)])
    assert (step.deleted, step.settled) == (100, True)


def test_a_trend_through_the_run_is_not_settled():
    rng = np.random.default_rng(0)
    assert not mser5(np.linspace(0, 1, 1000) + rng.normal(0, 0.01, 1000)).settled
    growing = [mser5(_lindley(rng, 2000, 1.2, 0.0)).settled for _ in range(40)]
    assert growing.count(False) >= 24  # 79 % over 200 series


def test_the_end_of_the_run_does_not_pose_as_a_settled_tail():
    # the last copies (in flight at the horizon) all lost: a tail of identical values
    rng = np.random.default_rng(0)
    series = np.r_[rng.exponential(1.0, 2000), np.full(25, 10.0)]
    assert mser5(series).settled


def test_stationary_series_are_rarely_called_unsettled():
    rng = np.random.default_rng(0)
    iid = [mser5(rng.exponential(1.0, 200)).settled for _ in range(200)]
    assert iid.count(False) <= 4  # 0.5 % measured
    queue = [mser5(_lindley(rng, 20_000, 0.9, rng.exponential(10.0) if rng.random() < 0.9 else 0.0)).settled for _ in range(20)]
    assert queue.count(False) == 0


def test_the_warm_up_minimises_the_statistic_alone_or_grouped():
    # mser5_many computes the series of one batch count together, as rows of one array:
    # each verdict is the series' own (the same as alone), and it is the first d in the
    # first half minimising sum((Y_j - mean_d)^2 for j >= d) / (m - d)^2 over batch means Y
    rng = np.random.default_rng(5)
    series = [rng.exponential(1.0, n) for n in (99, 100, 100, 104, 500, 500, 2000)]
    series += [np.r_[np.linspace(4, 0, 150), rng.exponential(1.0, 350)], (rng.random(600) < 0.2).astype(float)]
    together = mser5_many(series)
    for values, verdict in zip(series, together, strict=True):
        assert verdict == mser5(values)
        m = len(values) // BATCH
        if verdict is None:
            assert m < 20
            continue
        means = values[: m * BATCH].reshape(m, BATCH).mean(axis=1)
        statistic = [((means[d:] - means[d:].mean()) ** 2).sum() / (m - d) ** 2 for d in range(m // 2 + 1)]
        assert verdict.deleted == BATCH * int(np.argmin(statistic)) and verdict.observations == len(values)
        assert verdict.settled == (int(np.argmin(statistic)) < m // 2)
