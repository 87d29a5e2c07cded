"""Numbers for people: durations in us/ms/s and sizes in B/KB/MB by their size."""

from __future__ import annotations

import math
from collections.abc import Iterable


def time_unit(seconds: Iterable[float]) -> tuple[float, str]:
    """The scale and unit that show these durations best: us below 1 ms, ms below 1 s."""
    values = [abs(float(v)) for v in seconds if v is not None and v == v and math.isfinite(float(v)) and v != 0]
    largest = max(values) if values else 1e-3
    if largest < 1e-3:
        return 1e6, "us"
    if largest < 1.0:
        return 1e3, "ms"
    return 1.0, "s"


def human_time(seconds: float) -> str:
    """``40 us``, ``1 ms``, ``1.5 s``."""
    value = float(seconds)
    if value == 0:
        return "0 s"
    scale, unit = time_unit([value])
    return f"{value * scale:.3g} {unit}"


def human_bits(rate_bps: float) -> str:
    """A rate in bits per second in the unit that reads best: ``9.48 Mb/s``, ``300 b/s``."""
    value = float(rate_bps)
    for unit, scale in (("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} b/s"


def human_bytes(size: float) -> str:
    """``200 B``, ``4 KB``, ``64 KB``, ``1 MB`` (1 KB = 1024 bytes)."""
    value = float(size)
    for unit, factor in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {unit}"
    return f"{value:.0f} B"
