"""The feasibility check of one design against one constraint: a fully sequential test
with an indifference zone, on replications that are independent and roughly normal.

The statistic is the running sum of the differences from the target, ``Z(r) = sum over
j <= r of s (Y_j - q)`` (``s = +1`` for ``below = q``, ``-1`` for ``above = q``), and the
test stops the first time it leaves the triangular continuation region ``(-R(r), R(r))``
with

    R(r) = max(0, h^2 S^2 / (2 eps) - eps r / 2),
    h^2  = (n0 - 1) ((2 beta)^(-2 / (n0 - 1)) - 1),

where ``S^2`` is the sample variance of the first ``n0`` replications and ``eps`` the
indifference zone: below ``-R`` the design meets the constraint, above ``+R`` it does not.
This is the continuation region of Kim and Nelson's fully sequential procedure KN (Kim &
Nelson 2001, "A fully sequential procedure for indifference-zone selection in
simulation", ACM TOMACS 11(3)) with ``c = 1`` and ``k = 2``, applied to one system against
a known threshold as in Batur and Kim's feasibility check (Batur & Kim 2010, "Finding
feasible systems in the presence of constraints on multiple performance measures", ACM
TOMACS 20(3), procedure F_B with one tolerance ``eps`` on both sides). By Fabian's bound
(Fabian 1974, the lemma both papers rest on), for normal replications:

* if ``E[Y] <= q - eps`` (clearly meets) the test says "does not meet" with probability
  at most ``beta``;
* if ``E[Y] >= q + eps`` (clearly fails) it says "meets" with probability at most
  ``beta``;
* in between either answer is acceptable (the indifference zone).

The region closes at ``r = h^2 S^2 / eps^2``, so the test ends after at most that many
replications. Where the first ``n0`` values are all equal (``S^2 = 0``, e.g. no run lost
anything) the region is empty and the test decides at ``n0`` by the sign of ``Z(n0)``: the
normal model does not hold there, and ``docs/search.md`` says so.

Runs are made in batches, but ``decide`` replays the test one replication at a time and
stops at the first exit, so its decision is exactly that of the fully sequential test;
replications after the exit are counted as spent and not used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MEETS = "meets"
FAILS = "fails"


def h_squared(n0: int, beta: float) -> float:
    """``h^2`` of the continuation region for ``n0`` first-stage replications and error
    ``beta`` per test (Kim & Nelson 2001, eq. for eta with k = 2, c = 1)."""
    if n0 < 2:
        raise ValueError(f"n0 must be >= 2, got {n0}")
    if not 0 < beta < 0.5:
        raise ValueError(f"beta must be in (0, 0.5), got {beta}")
    return (n0 - 1) * ((2 * beta) ** (-2 / (n0 - 1)) - 1)


def half_width(r: int | np.ndarray, h2: float, variance: float, eps: float) -> float | np.ndarray:
    """``R(r)``: the half-width of the continuation region after ``r`` replications."""
    return np.maximum(0.0, h2 * variance / (2 * eps) - eps * np.asarray(r) / 2)


@dataclass(frozen=True)
class Decision:
    """Where the test stands after the replications it was given."""

    verdict: str | None  # MEETS, FAILS, or None: still open
    used: int  # replications the verdict rests on (all given, if open)
    variance: float  # S^2 of the first n0
    closes_at: int  # the replication at which the region closes (the most the test needs)
    #: the replication at which it would exit if the mean difference stays as it is now
    #: (at least used + 1, at most closes_at), for planning the next batch; 0 when decided
    predicted: int


def decide(values: np.ndarray, target: float, sense: int, eps: float, h2: float, n0: int) -> Decision:
    """Replay the test over ``values`` (replications in order, at least ``n0``)."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    if n < n0:
        raise ValueError(f"the test needs {n0} replications first, got {n}")
    variance = float(np.var(values[:n0], ddof=1))
    closes_at = max(n0, math.ceil(h2 * variance / eps**2)) if variance > 0 else n0
    sums = np.cumsum(sense * (values - target))
    r = np.arange(1, n + 1)
    bound = half_width(r, h2, variance, eps)
    after = r >= n0
    meets = after & ((sums <= -bound) if variance > 0 else (sums <= 0))
    fails = after & ((sums >= bound) if variance > 0 else (sums > 0))
    exits = np.flatnonzero(meets | fails)
    if len(exits):
        at = int(exits[0])
        return Decision(MEETS if meets[at] else FAILS, at + 1, variance, closes_at, 0)
    drift = abs(float(sums[-1])) / n
    a = h2 * variance / (2 * eps)
    guess = math.ceil(1.1 * a / (drift + eps / 2))
    return Decision(None, n, variance, closes_at, min(closes_at, max(n + 1, guess)))
