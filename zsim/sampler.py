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

    __slots__ = ("_dist", "_rng", "_integer", "_values", "_index", "_length", "_constant", "_constant_float", "_size")

    def __init__(self, dist: Any, rng: np.random.Generator | None, integer: bool = False) -> None:
        self._dist = dist
        self._rng = rng
        self._integer = integer
        # the values held, packed (8 bytes each: a list of floats would cost 32 bytes a value,
        # spread over the heap, and a garbage-collector visit of each at every collection);
        # an array('d'), read through a typed view when compiled (the view keeps it alive)
        self._values: Any = array("d")
        self._index = 0
        self._length = 0  # values held in _values
        self._size = FIRST_BLOCK  # of the next block
        self._constant: float | int | None = None
        self._constant_float = 0.0  # the constant as a double (next_float)
        if dist.kind == "constant":
            self._constant = int(round(dist.value)) if integer else dist.value
            self._constant_float = float(self._constant)
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

    def _refill(self) -> None:
        """Draw the next block: 16 values first, twice as many each time up to ``BLOCK``."""
        rng = self._rng
        assert rng is not None
        size = self._size
        self._size = min(2 * size, BLOCK)
        block = np.ascontiguousarray(self._draw(rng, size), dtype=np.float64)
        if self._integer:
            block = np.rint(block)  # whole numbers, exact as doubles (sizes are far below 2**53)
        self._values = array("d", block.tobytes())
        self._length = size
        self._index = 0

    @property
    def constant(self) -> float | int | None:
        """The value of a constant distribution, else None."""
        return self._constant

    @property
    def mean(self) -> float:
        """The distribution's mean (a workload's typical wait, for its sleep lateness)."""
        return float(self._dist.expected())

    @property
    def held(self) -> int:
        """How many drawn values the sampler holds now (its memory: 8 bytes each)."""
        return self._length

    def next_float(self) -> float:
        """``next()`` of a distribution of times, as a double: what the model adds to the
        clock, with no Python float made for it (compiled)."""
        if self._constant is not None:
            return self._constant_float
        index = self._index
        if index >= self._length:
            self._refill()
            index = self._index
        self._index = index + 1
        return self._values[index]  # type: ignore[no-any-return]

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
