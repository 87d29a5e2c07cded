"""Samplers: the values of one distribution drawn from one random stream, in blocks.

Drawing one value at a time from numpy costs about a microsecond; a block costs a few
nanoseconds a value, and the simulator's hot path draws about twice per message. This
module is compiled with the model (``zsim/native.py``; C declarations in ``sampler.pxd``)
so that ``next()`` is a C call from the compiled workloads, not a Python frame.

A ``Sampler`` reads its distribution's fields (``kind``, ``value``, ``mean``, ``low``,
``high``, ``sigma``, ``values``: a ``zsim.distributions.Distribution``) only when it
starts and when it refills.
"""

from __future__ import annotations

import math
from array import array
from typing import Any

import numpy as np

BLOCK = 4096
#: a sampler's first block: blocks double up to ``BLOCK``, so the many samplers of a large
#: topology that draw a few values each hold a few hundred bytes, not 4096 floats (numpy's
#: generators give the same values in blocks of any size: results do not change)
FIRST_BLOCK = 16


class Sampler:
    """Draws values of one distribution from one random stream, in blocks.

    ``next()`` returns a Python float (or int for sizes). A constant distribution never
    touches the random stream, so adding a constant workload leaves every other stream alone.
    """

    __slots__ = ("_dist", "_rng", "_integer", "_values", "_index", "_length", "_drawn", "_replay", "_constant", "_size",
                 "_shared")

    def __init__(self, dist: Any, rng: np.random.Generator | None, integer: bool = False,
                 shared_stream: bool = False) -> None:
        self._dist = dist
        self._rng = rng
        self._integer = integer
        # the values held, packed (8 bytes each: a list of floats would cost 32 bytes a value,
        # spread over the heap, and a garbage-collector visit of each at every collection);
        # an array('d'), read through a typed view when compiled (the view keeps it alive)
        self._values: Any = array("d")
        self._index = 0
        self._length = 0  # values held in _values
        self._drawn = 0  # values drawn from the stream for the current block (more than held: see _refill)
        self._replay: Any = None  # the stream's state before the current block, while it is held in part
        # a stream shared with other draws must keep its draws in the same order: full
        # blocks from the start (growing ones would interleave differently)
        self._size = BLOCK if shared_stream else FIRST_BLOCK
        self._shared = shared_stream
        self._constant: float | int | None = None
        if dist.kind == "constant":
            self._constant = int(round(dist.value)) if integer else dist.value
        elif rng is None:
            raise ValueError("a random distribution needs a random stream")

    def _draw(self, rng: np.random.Generator, size: int) -> Any:
        dist = self._dist
        if dist.kind == "exponential":
            return rng.exponential(dist.mean, size) if dist.mean > 0 else np.zeros(size)
        if dist.kind == "uniform":
            return rng.uniform(dist.low, dist.high, size)
        if dist.kind == "lognormal":
            mu = math.log(dist.mean) - dist.sigma**2 / 2.0
            return rng.lognormal(mu, dist.sigma, size)
        return rng.choice(np.asarray(dist.values, dtype=float), size)  # empirical

    def _hold(self, block: Any, keep: int) -> None:
        block = np.ascontiguousarray(block[:keep], dtype=np.float64)
        if self._integer:
            block = np.rint(block)  # whole numbers, exact as doubles (sizes are far below 2**53)
        self._values = array("d", block.tobytes())
        self._length = keep

    def _refill(self) -> None:
        """Hold the next values: more of the current block, or a new block.

        A shared stream's block is drawn whole (4096 values, so the stream's other draws
        come after it, as they always have) but held in part: its first 16 values, then 8x
        more each time they run out, drawn again from the stream's state saved before the
        block (numpy gives the same values from the same state). A connection's handshake
        sampler uses one value or a few, not 32 KB of them.
        """
        if self._length < self._drawn:
            replay = np.random.Generator(type(self._rng.bit_generator)())  # type: ignore[union-attr]
            replay.bit_generator.state = self._replay
            keep = min(self._drawn, 8 * self._length)
            self._hold(self._draw(replay, self._drawn), keep)
            if keep == self._drawn:
                self._replay = None
            return  # _index goes on where it was
        rng = self._rng
        assert rng is not None
        size = self._size
        self._size = min(2 * size, BLOCK)
        state = rng.bit_generator.state if self._shared and size > FIRST_BLOCK else None
        block = self._draw(rng, size)
        self._drawn = size
        self._index = 0
        if state is not None:
            self._replay = state
            self._hold(block, FIRST_BLOCK)
        else:
            self._hold(block, size)

    @property
    def constant(self) -> float | int | None:
        """The value of a constant distribution, else None."""
        return self._constant

    @property
    def held(self) -> int:
        """How many drawn values the sampler holds now (its memory: 8 bytes each)."""
        return self._length

    def next(self) -> Any:
        if self._constant is not None:
            return self._constant
        index = self._index
        if index >= self._length:
            self._refill()
            index = self._index
        self._index = index + 1
        value = self._values[index]
        if self._integer:
            return int(value)
        return value
