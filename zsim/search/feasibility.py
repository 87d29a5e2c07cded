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
replications.

**A first stage without variance.** Where the first ``n0`` values are all equal (``S^2 =
0``: no run lost anything, say), the normal model says nothing, and deciding by the sign
would trust ``n0`` identical runs of a metric whose losses may come once in a hundred
runs. So the test does not decide there. It goes on in one of two ways, whichever comes
first:

* **a value differs** at replication ``k > n0``: the first stage is extended to the ``k``
  values so far (``n0' = k``, ``S^2`` and ``h^2`` of those ``k``) and the test goes on as
  above from there;
* **the values stay equal, and the metric's range is known** (``bounds = (lo, hi)``: a
  loss fraction lies in [0, 1]): after ``r`` equal values ``v``, the probability ``p``
  that a run differs from ``v`` is at most ``p_u = 1 - beta^(1/r)`` with confidence ``1 -
  beta`` (the exact binomial bound for no event in ``r`` trials, Clopper and Pearson
  1934), so the mean lies in ``[v - p_u (v - lo), v + p_u (hi - v)]``; the test says
  "meets" once that whole interval is on the right side of ``target + eps`` ("fails": of
  ``target - eps``), which keeps the error at most ``beta`` without any assumption on the
  values' distribution. A metric without a known range cannot be bounded this way and
  stays open until a value differs (or the budget ends).

**Runs that drew nothing random.** A run whose model drew no random value (every time
and size constant, a profile without distributions, no link loss, no app code: the run's
``seed_independent`` column, ``zsim.build.Streams``) gives the same result under every
seed, so its value is the design's exact value and there is nothing to estimate: the
test compares it with the target directly (``exact``) and decides with certainty. The
value on the target itself counts as meeting it, as the bound's verdict does.

The bound is honest and costly: to say a loss fraction in [0, 1] is below ``q + eps``
from runs without a loss takes ``ln(beta) / ln(1 - q - eps)`` runs (for ``q + eps =
0.0015`` and ``beta = 1e-4``, about 6,100), because one run in 650 losing everything
would be as bad. A constraint can state a tighter range (``[[constraint]] range``) where
the design bounds the metric.

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
    variance: float  # S^2 of the first stage (0.0 while every value so far is equal)
    closes_at: int  # the replication at which the region closes (the most the test needs)
    #: the replication at which it would exit if the mean difference stays as it is now
    #: (at least used + 1, at most closes_at), for planning the next batch; 0 when decided
    predicted: int
    #: the first stage's size: n0, or more where the first n0 values were all equal
    first: int = 0
    #: how it was decided: "sequential" (the triangular region), "bound" (every value
    #: equal, the metric's range and the binomial bound) or "exact" (runs that drew no
    #: random value: their value is the design's); "" while open
    how: str = ""
    #: while open with every value equal: the verdict that value points to (MEETS or
    #: FAILS, by the side of the target it is on); "" otherwise
    lean: str = ""


def lean(value: float, target: float, sense: int) -> str:
    """The verdict a value points to: MEETS on the target's side (or on it), else FAILS."""
    return MEETS if sense * (value - target) <= 0 else FAILS


def equal_runs_needed(value: float, target: float, sense: int, eps: float, beta: float,
                      bounds: tuple[float, float]) -> tuple[int, str]:
    """For a run of equal values ``value`` of a metric within ``bounds``: the fewest equal
    values after which the binomial bound decides, and the verdict. Some number always
    does: ``value`` is at least ``eps`` inside the side it decides for."""
    lo, hi = bounds
    s = sense
    # the verdict the bound can reach: meets if value is on the right side, fails otherwise
    verdict = lean(value, target, sense)
    if verdict == MEETS:
        # sense +1: v + p (hi - v) < q + eps;  sense -1: v - p (v - lo) > q - eps
        room, span = (target + eps - value, hi - value) if s > 0 else (value - (target - eps), value - lo)
    else:
        # sense +1: v - p (v - lo) > q - eps;  sense -1: v + p (hi - v) < q + eps
        room, span = (value - (target - eps), value - lo) if s > 0 else (target + eps - value, hi - value)
    if span <= room:  # the whole range is on the right side: one value decides
        return 1, verdict
    p = room / span  # need p_u = 1 - beta^(1/r) < p  <=>  r > ln(beta) / ln(1 - p)
    return math.floor(math.log(beta) / math.log1p(-p)) + 1, verdict


def decide(values: np.ndarray, target: float, sense: int, eps: float, beta: float, n0: int,
           bounds: tuple[float, float] | None = None, exact: bool = False) -> Decision:
    """Replay the test over ``values`` (replications in order, at least ``n0``) at error
    ``beta``; ``bounds``: the range every run's value lies in, where known; ``exact``: the
    runs drew no random value, so each gives the design's exact value (they must agree)."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    if exact:
        if n < 1:
            raise ValueError("an exact decision needs a run")
        if np.any(values != values[0]):
            raise ValueError(f"runs that drew no random value differ: {values[0]!r} and "
                             f"{values[np.flatnonzero(values != values[0])[0]]!r} (please report this as a bug in zsim)")
        return Decision(lean(float(values[0]), target, sense), 1, 0.0, 1, 0, 1, "exact")
    if n < n0:
        raise ValueError(f"the test needs {n0} replications first, got {n}")
    first = n0
    if np.all(values[:n0] == values[0]):
        differs = np.flatnonzero(values != values[0])
        equal_to = int(differs[0]) if len(differs) else n  # values[:equal_to] are all equal
        needed = equal_runs_needed(float(values[0]), target, sense, eps, beta, bounds) if bounds else None
        if needed is not None and max(needed[0], n0) <= equal_to:
            return Decision(needed[1], max(needed[0], n0), 0.0, max(needed[0], n0), 0, n0, "bound")
        if not len(differs):
            # open: wait for a value that differs (doubling), or for the bound's count
            guess = 2 * n if needed is None else min(2 * n, needed[0])
            return Decision(None, n, 0.0, needed[0] if needed else 0, max(n + 1, guess), n0, "",
                            lean(float(values[0]), target, sense))
        first = equal_to + 1  # the first stage: up to and including the first value that differs
    h2 = h_squared(first, beta)
    variance = float(np.var(values[:first], ddof=1))
    closes_at = max(first, math.ceil(h2 * variance / eps**2))
    sums = np.cumsum(sense * (values - target))
    r = np.arange(1, n + 1)
    bound = half_width(r, h2, variance, eps)
    after = r >= first
    meets = after & (sums <= -bound)
    fails = after & (sums >= bound)
    exits = np.flatnonzero(meets | fails)
    if len(exits):
        at = int(exits[0])
        return Decision(MEETS if meets[at] else FAILS, at + 1, variance, closes_at, 0, first, "sequential")
    drift = abs(float(sums[-1])) / n
    a = h2 * variance / (2 * eps)
    guess = math.ceil(1.1 * a / (drift + eps / 2))
    return Decision(None, n, variance, closes_at, min(closes_at, max(n + 1, guess)), first)
