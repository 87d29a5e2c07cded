"""Has a run's output settled? MSER-5 warm-up detection on one receiver's series.

A designer asks for steady-state numbers (the slow subscriber's loss, the fast ones' p99);
a run gives the numbers of its horizon. The start biases them (empty queues: the first
copies see no backlog), and a horizon too short leaves only that start.

MSER-5 (White 1997; Franklin and White 2008): the series (a receiver's latency per
delivered copy in delivery order, or its 0/1 "not delivered" indicator per copy meant for
it in send order) is cut into batches of 5; for each candidate warm-up of d batches the
statistic is the squared standard error of the mean of what remains,
``sum((Y_j - mean_d)^2 for j > d) / (m - d)^2``. The warm-up is the d in the first half of
the run that minimises it; deleting it gives the steady-state estimate. When the minimum
is at the end of that search (half of the run), the statistic was still falling: the
series had not settled by the middle of the run, the horizon is too short for this
metric, and its value describes the run, not a steady state.

Searching only the first half keeps the end of the run (copies still in flight at the
horizon, the drain after the last send) from posing as a settled tail. Measured on 200
simulated series each (``tests/model/test_steady.py`` repeats a smaller set): an M/M/1 waiting
time at rho 0.9 started in steady state is called unsettled 0 % of the time over 20,000
customers and 3.5 % over 2,000 (shorter than its relaxation time); iid exponential (200)
0.5 %; iid Pareto(1.5) (2,000) 0 %; a queue growing at rho 1.2 (2,000 customers) 79 %,
at rho 1.05 (5,000) 40 % (``zsim.checks`` warns about overload separately).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: observations per batch (the "5" of MSER-5)
BATCH = 5
#: below this many batches (100 observations) no verdict is given
MIN_BATCHES = 20


@dataclass(frozen=True)
class Warmup:
    """MSER-5's verdict on one series: the first ``deleted`` observations are warm-up;
    ``settled`` is False when the warm-up reaches half of the series."""

    deleted: int
    observations: int
    settled: bool


def mser5(values: np.ndarray) -> Warmup | None:
    """The MSER-5 warm-up of ``values`` (in order), or None when there are too few."""
    return mser5_many([values])[0]


def mser5_many(series: list[np.ndarray]) -> list[Warmup | None]:
    """``mser5`` of each series. Series of the same number of batches are computed together
    as the rows of one array: a summary asks this of every receiving socket, and at 1,000
    subscribers one set of numpy calls per socket cost more than the arithmetic. A row
    goes through the same floating-point operations as a series alone (a reduction or a
    cumulative sum along a row is the one along a vector), so the verdicts do not depend on
    which series share a batch count (``tests/model/test_steady.py``)."""
    found: list[Warmup | None] = [None] * len(series)
    by_batches: dict[int, list[int]] = {}
    for i, values in enumerate(series):
        m = len(values) // BATCH
        if m >= MIN_BATCHES:
            by_batches.setdefault(m, []).append(i)
    for m, rows in by_batches.items():
        block = np.stack([np.asarray(series[i][: m * BATCH], dtype=np.float64) for i in rows])
        half = m // 2
        for i, d in zip(rows, _warmups(block, m, half), strict=True):
            found[i] = Warmup(deleted=d * BATCH, observations=len(series[i]), settled=d < half)
    return found


def _warmups(block: np.ndarray, m: int, half: int) -> list[int]:
    """The warm-up in batches of each row of ``block`` (rows of ``m`` batches)."""
    batches = np.add.reduce(block.reshape(len(block), m, BATCH), axis=2) / BATCH
    batches -= (np.add.reduce(batches, axis=1) / m)[:, None]  # centred: less cancellation below
    backwards = batches[:, ::-1]
    tail_sum = np.cumsum(backwards, axis=1)[:, ::-1][:, : half + 1]  # for d = 0 .. half
    tail_sq = np.cumsum(backwards * backwards, axis=1)[:, ::-1][:, : half + 1]
    remaining = np.arange(m, m - half - 1, -1, dtype=np.float64)
    statistic = np.maximum(tail_sq - tail_sum * tail_sum / remaining, 0.0) / (remaining * remaining)
    # the first of the minima: a constant series has spread 0 everywhere (rounding leaves
    # noise near 0, hence the tolerance)
    floor = statistic.min(axis=1) + 1e-12 * np.maximum(statistic[:, 0], 1e-300)
    return np.argmax(statistic <= floor[:, None], axis=1).tolist()
