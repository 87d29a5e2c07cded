"""Levels over time in bounded memory: pipe depths, link-direction occupancy and the
network links' queues and busy time for a run report (``zsim run --report``).

A pipe's depth and a link direction's kernel and engine levels are piecewise constant:
they change at every write and read, millions of times in a long run. The report needs
them over time, not point by point, so the points are folded as the run goes on into a
fixed grid of time buckets that keeps, per bucket, the lowest level, the highest level and
the level at the end of the bucket. When the run outgrows the grid, neighbouring buckets
merge and the bucket width doubles (``SeriesSet.coarsen``), so a series never holds more
than ``buckets`` rows whatever the horizon; and when a run has so many pipes and links that
their levels would outgrow ``MAX_LEVEL_BYTES`` together, every series gets fewer, wider
buckets (``SeriesSet.fit``). The highest level of the run survives
every merge: ``max(hi)`` of a series is exactly the peak the model saw (a pipe's
``max_depth``, a direction's ``Occupancy.peak``), not an estimate.

Where the points come from: a pipe with a ``trace`` list (``World.trace_depth``) appends
``time, depth`` after every write and read (``Pipe.write``/``Pipe.read``); a link direction
created inside ``zsim.model.occupancy.recording()`` appends ``time`` and its six levels
(``RecordedOccupancy.update``); a [[link]]'s direction created inside it appends ``time``,
its queue, the serialization of every frame it accepted so far, when its last frame leaves
and its drops after every train it queues, and a point where its queue ran empty
(``zsim.model.transport.network.Direction.trace``: the serialization done by a bucket's end
is the accepted serialization less what was still queued then, exactly). ``SeriesRecorder.poll``, called by the run's monitor every
few thousand events (``zsim.runner.Guard``), folds those lists into the grid and empties
them once they hold more than ``pending`` values together, so the raw points in memory are
bounded too. With ``keep_traces`` (``--out`` also asked for every depth change as Parquet)
the pipes' lists are left whole and folded once at the end.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model.occupancy import FIELDS as OCCUPANCY_FIELDS
from ..model.occupancy import recording
from ..model.transport.network import TRACE_FIELDS

#: buckets of a series: a figure 1,000 pixels wide shows each as about two pixels
BUCKETS = 512
#: raw values (times and levels) held in the trace lists before they are folded
PENDING = 400_000
#: the most bytes the dense levels of all series may take (buckets x channels x lo/hi/last
#: x 8 bytes, summed over every pipe and link direction): a run with thousands of pipes
#: gets fewer buckets rather than gigabytes (1,000 tcp subscribers: 4,000 pipes and 2,000
#: directions of 6 channels would take 196 MB at 512 buckets)
MAX_LEVEL_BYTES = 64 * 2**20
#: fewer buckets than this are not worth a figure: beyond it the budget is exceeded, and said
MIN_BUCKETS = 32
#: bucket width before anything is known about the horizon (doubles as the run grows)
FIRST_WIDTH_S = 1e-3


class Series:
    """One piecewise-constant signal of ``channels`` integer levels, folded into buckets.

    Rows are the buckets in which the signal changed (``idx``, sorted), each with the
    lowest (``lo``), highest (``hi``) and last (``last``) level in it; a bucket without a
    row holds the last level of the row before (0 before the first).
    """

    __slots__ = ("channels", "idx", "lo", "hi", "last", "n", "value")

    def __init__(self, channels: int) -> None:
        self.channels = channels
        self.idx = np.zeros(8, dtype=np.int64)
        self.lo = np.zeros((8, channels), dtype=np.int64)
        self.hi = np.zeros((8, channels), dtype=np.int64)
        self.last = np.zeros((8, channels), dtype=np.int64)
        self.n = 0
        self.value = np.zeros(channels, dtype=np.int64)  # the level after the last point

    @property
    def nbytes(self) -> int:
        return int(self.idx.nbytes + self.lo.nbytes + self.hi.nbytes + self.last.nbytes)

    def _grow(self, rows: int) -> None:
        size = len(self.idx)
        if rows <= size:
            return
        while size < rows:
            size *= 2
        for name in ("idx", "lo", "hi", "last"):
            old = getattr(self, name)
            new = np.zeros((size, *old.shape[1:]), dtype=old.dtype)
            new[: self.n] = old[: self.n]
            setattr(self, name, new)

    def fold(self, times: np.ndarray, values: np.ndarray, width: float) -> None:
        """Add points (``times`` non-decreasing, ``values`` of shape (n, channels)): the
        level becomes ``values[i]`` at ``times[i]``."""
        count = len(times)
        if count == 0:
            return
        bucket = np.floor(times / width).astype(np.int64)
        change = np.flatnonzero(bucket[1:] != bucket[:-1]) + 1
        starts = np.concatenate(([0], change))
        ends = np.concatenate((change, [count])) - 1
        # the level each group's bucket held before its first point counts too: it was
        # the level from the bucket's start until that point
        before = np.empty((len(starts), self.channels), dtype=np.int64)
        before[0] = self.value
        before[1:] = values[starts[1:] - 1]
        lo = np.minimum(np.minimum.reduceat(values, starts, axis=0), before)
        hi = np.maximum(np.maximum.reduceat(values, starts, axis=0), before)
        last = values[ends]
        groups = bucket[starts]
        first = 0
        n = self.n
        if n and self.idx[n - 1] == groups[0]:  # the run's current bucket goes on
            self.lo[n - 1] = np.minimum(self.lo[n - 1], lo[0])
            self.hi[n - 1] = np.maximum(self.hi[n - 1], hi[0])
            self.last[n - 1] = last[0]
            first = 1
        added = len(groups) - first
        if added:
            self._grow(n + added)
            self.idx[n : n + added] = groups[first:]
            self.lo[n : n + added] = lo[first:]
            self.hi[n : n + added] = hi[first:]
            self.last[n : n + added] = last[first:]
            self.n = n + added
        self.value = values[-1].copy()

    def compact(self) -> None:
        """Give back the rows the arrays hold beyond twice those in use (after coarsening)."""
        size = max(8, 2 * self.n)
        if len(self.idx) > size:
            for name in ("idx", "lo", "hi", "last"):
                setattr(self, name, getattr(self, name)[:size].copy())

    def coarsen(self) -> None:
        """Merge buckets 2k and 2k+1 into bucket k (the grid's width doubled)."""
        n = self.n
        if not n:
            return
        idx = self.idx[:n] // 2
        starts = np.concatenate(([0], np.flatnonzero(idx[1:] != idx[:-1]) + 1))
        ends = np.concatenate((starts[1:], [n])) - 1
        m = len(starts)
        self.lo[:m] = np.minimum.reduceat(self.lo[:n], starts, axis=0)
        self.hi[:m] = np.maximum.reduceat(self.hi[:n], starts, axis=0)
        self.last[:m] = self.last[ends]
        self.idx[:m] = idx[starts]
        self.n = m

    def dense(self, buckets: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(lo, hi, last)`` for every bucket ``0 .. buckets - 1``, each ``(buckets, channels)``."""
        n = self.n
        zeros = np.zeros((buckets, self.channels), dtype=np.int64)
        if not n:
            return zeros, zeros.copy(), zeros.copy()
        idx = self.idx[:n]
        k = np.arange(buckets)
        pos = np.searchsorted(idx, k, side="right") - 1
        safe = np.maximum(pos, 0)
        touched = (pos >= 0) & (idx[safe] == k)
        carried = np.where((pos >= 0)[:, None], self.last[safe], 0)
        lo = np.where(touched[:, None], self.lo[safe], carried)
        hi = np.where(touched[:, None], self.hi[safe], carried)
        last = np.where(touched[:, None], self.last[safe], carried)
        return lo, hi, last


class SeriesSet:
    """Series on one time grid (buckets of ``width`` seconds from t = 0, at most
    ``buckets`` of them), so that all of a run's series can be drawn and added together."""

    def __init__(self, buckets: int = BUCKETS, horizon_s: float | None = None, max_bytes: int = MAX_LEVEL_BYTES) -> None:
        self.buckets = buckets
        self.asked = buckets  # before the memory budget halved them
        self.max_bytes = max_bytes
        # the last bucket starts before the horizon, so a change at the horizon fits
        self.width = horizon_s / (buckets - 1) if horizon_s else FIRST_WIDTH_S
        self.series: list[Series] = []
        self.channels = 0

    def new(self, channels: int) -> Series:
        series = Series(channels)
        self.series.append(series)
        self.channels += channels
        return series

    def level_bytes(self) -> int:
        """What the dense levels of every series take at the current number of buckets."""
        return self.buckets * self.channels * 3 * 8

    def fit(self) -> None:
        """Halve the buckets (doubling their width: the span covered stays) until the dense
        levels fit ``max_bytes``, down to ``MIN_BUCKETS``."""
        shrunk = False
        while self.level_bytes() > self.max_bytes and self.buckets // 2 >= MIN_BUCKETS:
            self.buckets //= 2
            self.coarsen()
            shrunk = True
        if shrunk:
            for series in self.series:
                series.compact()

    def coarsen(self) -> None:
        self.width *= 2
        for series in self.series:
            series.coarsen()

    def cover(self, t: float) -> None:
        """Widen the buckets until time ``t`` falls inside the grid."""
        while t >= self.width * self.buckets:
            self.coarsen()

    def count(self, end_s: float) -> int:
        """Buckets from 0 up to the one holding ``end_s``."""
        return min(self.buckets, math.floor(end_s / self.width) + 1)

    @property
    def nbytes(self) -> int:
        return sum(series.nbytes for series in self.series)


@dataclass
class Levels:
    """One series made dense for drawing: per bucket starting at ``times[k]`` the lowest,
    highest and last level of each channel (arrays of shape (buckets, channels))."""

    times: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    last: np.ndarray


@dataclass
class RunSeries:
    """What a report draws over time: per pipe (by the index of the world's pipe table) its
    depth, per link direction its six levels (``zsim.model.occupancy.FIELDS``)."""

    width_s: float
    end_s: float
    #: buckets asked for, and how many the memory budget (``MAX_LEVEL_BYTES``) allowed
    buckets_asked: int = BUCKETS
    buckets: int = BUCKETS
    pipes: dict[int, Levels] = field(default_factory=dict)
    #: (link index in the world's table, direction name "writer->reader", levels)
    directions: list[tuple[int, str, Levels]] = field(default_factory=list)
    #: per direction of a [[link]]: (link name, direction "a->b", levels of ``TRACE_FIELDS``:
    #: bytes queued after each train, serialization accepted so far in ns, when its last frame
    #: leaves in ns, packets dropped or lost so far)
    network: list[tuple[str, str, Levels]] = field(default_factory=list)


class SeriesRecorder:
    """Records a run's levels over time for ``zsim.runner.run(..., recorder=...)``.

    ``recording()`` is entered around building and simulating the model (link directions
    record only if created inside it), ``attach`` gets the model, ``poll`` is called by the
    run's monitor, ``finish`` when the run is over; then ``result`` holds the series.
    """

    def __init__(self, keep_traces: bool = False, buckets: int = BUCKETS, pending: int = PENDING,
                 max_bytes: int = MAX_LEVEL_BYTES) -> None:
        self.keep_traces = keep_traces
        self.buckets = buckets
        self.pending = pending
        self.max_bytes = max_bytes
        self.model: Any = None
        self.grid = SeriesSet(buckets, max_bytes=max_bytes)
        self.pipe_series: dict[int, Series] = {}
        self.wire_series: dict[tuple[int, int], Series] = {}
        self.network_series: dict[tuple[str, str], Series] = {}
        self.result: RunSeries | None = None
        self.folds = 0  # how many times the raw points were folded (tests check it is bounded)

    def recording(self) -> AbstractContextManager[None]:
        return recording()

    def attach(self, model: Any) -> None:
        self.model = model
        self.grid = SeriesSet(self.buckets, model.scenario.until_s, self.max_bytes)

    # -- the raw points ------------------------------------------------------------------

    def _wires(self) -> Iterator[tuple[tuple[int, int], Any]]:
        for index, link in enumerate(self.model.world.links):
            for which, wire in enumerate((link.c2b, link.b2c)):
                if getattr(wire.occupancy, "trace", None) is not None:
                    yield (index, which), wire

    def _directions(self) -> Iterator[tuple[tuple[str, str], Any]]:
        """The directions of the scenario's [[link]]s that record (``Direction.trace``)."""
        network = self.model.world.network
        for link, directions in (network.links.items() if network is not None else ()):
            for direction in directions:
                if direction.trace is not None:
                    yield (link, direction.name), direction

    def _held(self) -> int:
        held = 0
        if not self.keep_traces:
            for pipe in self.model.world.pipes:
                if pipe.trace:
                    held += len(pipe.trace)
        for _key, wire in self._wires():
            held += len(wire.occupancy.trace)
        for _way, direction in self._directions():
            held += len(direction.trace)
        return held

    def poll(self) -> None:
        """Fold the raw points if they have grown past ``pending`` values."""
        if self.model is not None and self._held() >= self.pending:
            self._fold(pipes=not self.keep_traces)

    def _take(self, chunks: list[tuple[Series, np.ndarray]], trace: list[float] | None, table: dict[Any, Series], key: Any,
              channels: int, keep: bool = False) -> None:
        """Add a raw trace (``time`` and ``channels`` levels per point) to ``chunks`` with the
        series it folds into (``table[key]``, made on first use), emptying it unless ``keep``."""
        if not trace:
            return
        points = np.asarray(trace, dtype=np.float64).reshape(-1, 1 + channels)
        if not keep:
            del trace[:]
        series = table.get(key)
        if series is None:
            series = table[key] = self.grid.new(channels)
        chunks.append((series, points))

    def _fold(self, pipes: bool) -> None:
        """Fold the link directions' points, and the pipes' if ``pipes`` (emptying their
        lists unless they are kept whole for ``--out``)."""
        self.folds += 1
        chunks: list[tuple[Series, np.ndarray]] = []
        for pipe in self.model.world.pipes if pipes else ():
            self._take(chunks, pipe.trace, self.pipe_series, pipe.index, 1, keep=self.keep_traces)
        for key, wire in self._wires():
            self._take(chunks, wire.occupancy.trace, self.wire_series, key, len(OCCUPANCY_FIELDS))
        for way, direction in self._directions():
            self._take(chunks, direction.trace, self.network_series, way, len(TRACE_FIELDS))
        latest = max((float(points[-1, 0]) for _series, points in chunks), default=0.0)
        self.grid.fit()  # new series this time: the budget may call for fewer buckets
        self.grid.cover(latest)
        width = self.grid.width
        for series, points in chunks:
            series.fold(points[:, 0], points[:, 1:].astype(np.int64), width)

    def finish(self, now: float) -> None:
        """The run is over at ``now``: fold what is left and make the series dense."""
        if self.model is None:
            return
        for _way, direction in self._directions():
            direction.trace_idle(now)
        self._fold(pipes=True)
        self.grid.cover(now)
        buckets = self.grid.count(now)
        times = np.arange(buckets) * self.grid.width
        result = RunSeries(width_s=self.grid.width, end_s=now, buckets_asked=self.grid.asked, buckets=self.grid.buckets)
        for index, series in self.pipe_series.items():
            lo, hi, last = series.dense(buckets)
            result.pipes[index] = Levels(times, lo, hi, last)
        for (link, which), series in sorted(self.wire_series.items()):
            wire = (self.model.world.links[link].c2b, self.model.world.links[link].b2c)[which]
            lo, hi, last = series.dense(buckets)
            result.directions.append((link, wire.name, Levels(times, lo, hi, last)))
        for (link_name, direction_name), series in self.network_series.items():
            lo, hi, last = series.dense(buckets)
            result.network.append((link_name, direction_name, Levels(times, lo, hi, last)))
        self.result = result
