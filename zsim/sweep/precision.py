"""Replications until a target precision: ``--precision METRIC=HALF_WIDTH``, for
``zsim sweep`` (each point on its own) and ``zsim compare`` (every design and difference).

A fixed number of replications leaves some intervals wider than the difference a
designer cares about and spends runs where the answer was clear after a few. The rule
here is the one JMT's what-if analysis and most simulators apply to a single run's
estimate, made over replications: start with the planned number ``n``, and while the 95 %
interval of METRIC's mean is wider than +- HALF_WIDTH (absolute, in the metric's unit;
or ``5%``: relative to the mean's size), ask for ``n (width / target)^2`` replications (an
interval narrows as ``1 / sqrt(n)``), at least 1.2 and at most 4 times ``n``, within the
run budget. Replication ``r`` keeps its seed whatever the final number, so earlier rounds'
runs are kept and a plain sweep with that many replications gives the same rows.

The stopping rule looks at the data, so for the first rounds' few values the 95 % is
approximate; it is exact as the target shrinks (Chow and Robbins 1965, "On the asymptotic
theory of fixed-width sequential confidence intervals for the mean", Ann. Math. Statist.
36(2)).

In a sweep each point stops at its own precision: a quiet point keeps its planned
replications and a noisy one gets more (rows per point differ; ``zsim report``'s per-point
tables count them in ``runs``; ``_sweep.json`` records each point's count). A point whose
runs give the metric no value (NaN in every row) or one value, or whose mean is 0 under a
relative target, cannot be held to a width: it keeps what it has and the outcome names it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import ScenarioError
from ..fields import short
from ..stats import mean_half_width

_T = TypeVar("_T", bound="Target")

#: each round asks for at least this many times the replications a point has
MIN_GROWTH = 1.2
#: and at most this many times
MAX_GROWTH = 4


@dataclass(frozen=True)
class Target:
    """One ``METRIC=HALF_WIDTH`` target."""

    metric: str
    half_width: float
    relative: bool

    @classmethod
    def parse(cls: type[_T], text: str, flag: str = "--precision") -> _T:
        name, sep, value = (part.strip() for part in text.partition("="))
        if not sep or not name or not value:
            raise ScenarioError(flag, f"expected METRIC=HALF_WIDTH (e.g. socket.sub.loss_fraction=0.001 or "
                                      f"socket.sub.latency_p99_s=5%), got {short(text)}")
        relative = value.endswith("%")
        try:
            number = float(value[:-1] if relative else value)
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and number > 0) or (relative and number >= 100):
            raise ScenarioError(f"{flag} {name}", f"the half-width must be a number > 0 (or a percentage below 100 %), "
                                                  f"got {short(value)}")
        return cls(name, number / 100 if relative else number, relative)

    def text(self) -> str:
        return f"{self.metric} +- {self.half_width * 100:g} % of its mean" if self.relative else f"{self.metric} +- {self.half_width:g}"

    def goal(self, means: Sequence[float]) -> float:
        """The half-width to reach: the absolute one, or the share of the largest |mean|."""
        return self.half_width * max((abs(m) for m in means), default=0.0) if self.relative else self.half_width


def grow(n: int, width: float, goal: float) -> int:
    """The replications to ask for next, ``n`` if ``width`` is within ``goal``."""
    if width <= goal:
        return n
    need = MAX_GROWTH * n if not (math.isfinite(width) and goal > 0) else math.ceil(n * (width / goal) ** 2)
    return min(MAX_GROWTH * n, max(need, math.ceil(MIN_GROWTH * n)))


def point_width(values: Sequence[Any]) -> tuple[float, float, int]:
    """The 95 % half-width of the mean of a point's finite values, that mean, and how many
    there are (half-width inf below two)."""
    finite = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    n = len(finite)
    if n < 2:
        return math.inf, (finite[0] if finite else math.nan), n
    mean = math.fsum(finite) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in finite) / (n - 1))
    return mean_half_width(n, sd), mean, n


@dataclass(frozen=True)
class Round:
    """What one look at a sweep's rows decides: the replications each point asks for next
    (only the points that need more), and per target the widest half-width now and the
    points that cannot be held to it (fewer than two values)."""

    wanted: Mapping[str, int]
    widest: Mapping[str, float]
    unmeasurable: Mapping[str, tuple[str, ...]]


def next_round(rows_by_point: Mapping[str, Sequence[Mapping[str, Any]]], counts: Mapping[str, int],
               targets: Sequence[Target]) -> Round:
    """Each point's next replications: its rows with ``replication < counts[point]`` (the
    failed ones carry no value) against every target (a ``[report.derived]`` one is a
    column of the rows, ``zsim.metrics.add_derived_frame``)."""
    wanted: dict[str, int] = {}
    widest = {t.metric: 0.0 for t in targets}
    unmeasurable: dict[str, list[str]] = {t.metric: [] for t in targets}
    for point, n in counts.items():
        rows = [row for row in rows_by_point.get(point, ()) if row["replication"] < n]
        ask = n
        for target in targets:
            values = [row.get(target.metric) if row.get("ok") else None for row in rows]
            width, mean, have = point_width(values)
            goal = target.goal([mean]) if have else 0.0
            if have < 2 or (goal <= 0 and width > 0):  # a share of a mean of 0 is no width to reach
                unmeasurable[target.metric].append(point)
                continue
            widest[target.metric] = max(widest[target.metric], width)
            ask = max(ask, grow(n, width, goal))
        if ask > n:
            wanted[point] = ask
    return Round(wanted, widest, {m: tuple(p) for m, p in unmeasurable.items()})
