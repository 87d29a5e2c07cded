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

    __slots__ = ("_dist", "_rng", "_integer", "_block", "_index", "_length", "_constant", "_size", "_packed")

    def __init__(self, dist: Any, rng: np.random.Generator | None, integer: bool = False,
                 shared_stream: bool = False) -> None:
        self._dist = dist
        self._rng = rng
        self._integer = integer
        self._block: Any = []
        self._index = 0
        self._length = 0
        # a stream shared with other draws must keep its draws in the same order: full
        # blocks from the start (growing ones would interleave differently), held packed
        # (8 bytes a value, not a 32-byte float object: 32 KB a sampler, not 130 KB; one
        # per tcp connection and one per link)
        self._size = BLOCK if shared_stream else FIRST_BLOCK
        self._packed = shared_stream
        self._constant: float | int | None = None
        if dist.kind == "constant":
            self._constant = int(round(dist.value)) if integer else dist.value
        elif rng is None:
            raise ValueError("a random distribution needs a random stream")

    def _refill(self) -> None:
        dist, rng = self._dist, self._rng
        assert rng is not None
        size = self._size
        self._size = min(2 * size, BLOCK)
        if dist.kind == "exponential":
            block = rng.exponential(dist.mean, size) if dist.mean > 0 else np.zeros(size)
        elif dist.kind == "uniform":
            block = rng.uniform(dist.low, dist.high, size)
        elif dist.kind == "lognormal":
            mu = math.log(dist.mean) - dist.sigma**2 / 2.0
            block = rng.lognormal(mu, dist.sigma, size)
        else:  # empirical
            block = rng.choice(np.asarray(dist.values, dtype=float), size)
        if self._integer:
            values = np.rint(block).astype(np.int64)
            self._block = array("q", values.tobytes()) if self._packed else values.tolist()
        else:
            self._block = array("d", block.tobytes()) if self._packed else block.tolist()
        self._index = 0
        self._length = size

    @property
    def constant(self) -> float | int | None:
        """The value of a constant distribution, else None."""
        return self._constant

    @property
    def held(self) -> int:
        """How many drawn values the sampler holds now (its memory: 8 bytes each packed, else ~32)."""
        return len(self._block)

    def next(self) -> Any:
        if self._constant is not None:
            return self._constant
        index = self._index
        if index >= self._length:
            self._refill()
            index = 0
        self._index = index + 1
        return self._block[index]
