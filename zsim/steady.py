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
simulated series each (``tests/test_steady.py`` repeats a smaller set): an M/M/1 waiting
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
    n = len(values)
    m = n // BATCH
    if m < MIN_BATCHES:
        return None
    batches = np.asarray(values[: m * BATCH], dtype=np.float64).reshape(m, BATCH).mean(axis=1)
    batches = batches - batches.mean()  # centred: less cancellation in the sums below
    tail_sum = np.cumsum(batches[::-1])[::-1]
    tail_sq = np.cumsum((batches * batches)[::-1])[::-1]
    remaining = m - np.arange(m, dtype=np.float64)
    spread = np.maximum(tail_sq - tail_sum * tail_sum / remaining, 0.0)
    half = m // 2
    statistic = (spread / (remaining * remaining))[: half + 1]
    # the first of the minima: a constant series has spread 0 everywhere (rounding leaves
    # noise near 0, hence the tolerance)
    floor = statistic.min()
    d = int(np.argmax(statistic <= floor + 1e-12 * max(float(statistic[0]), 1e-300)))
    return Warmup(deleted=d * BATCH, observations=n, settled=d < half)
