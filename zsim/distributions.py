"""Distributions of times and sizes, as written in scenario files, and their samplers.

A distribution is written as a plain number (a constant) or as a table::

    { dist = "constant",    value_s = 0.1 }
    { dist = "exponential", mean_s = 0.1 }
    { dist = "uniform",     low_s = 0.05, high_s = 0.15 }
    { dist = "lognormal",   mean_s = 0.1, sigma = 0.5 }
    { dist = "empirical",   values_s = [0.1, 0.2, 0.4] }

Sizes use ``_bytes`` in place of ``_s``. ``lognormal`` is parametrised by its mean (not
the mean of the logarithm) so that changing ``sigma`` keeps the offered load constant.

``Distribution.sampler(rng)`` gives a ``zsim.sampler.Sampler``, which draws its values in
blocks from the numpy ``Generator`` passed in by the caller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ScenarioError
from .sampler import Sampler

__all__ = ["KINDS", "MAX_MESSAGE_BYTES", "Distribution", "Sampler", "parse_distribution"]

KINDS = ("constant", "exponential", "uniform", "lognormal", "empirical")

#: parameter names per kind, without the unit suffix
_PARAMS: dict[str, tuple[str, ...]] = {
    "constant": ("value",),
    "exponential": ("mean",),
    "uniform": ("low", "high"),
    "lognormal": ("mean",),
    "empirical": ("values",),
}

@dataclass(frozen=True)
class Distribution:
    """A validated distribution of a non-negative quantity (seconds or bytes)."""

    kind: str
    unit: str  # "s" or "bytes"
    value: float = 0.0  # constant
    mean: float = 0.0  # exponential, lognormal
    low: float = 0.0  # uniform
    high: float = 0.0  # uniform
    sigma: float = 0.0  # lognormal
    values: tuple[float, ...] = ()  # empirical

    @staticmethod
    def constant(value: float, unit: str = "s") -> Distribution:
        return Distribution("constant", unit, value=float(value))

    @property
    def is_constant(self) -> bool:
        return self.kind == "constant"

    def expected(self) -> float:
        """The mean of the distribution."""
        if self.kind == "constant":
            return self.value
        if self.kind in ("exponential", "lognormal"):
            return self.mean
        if self.kind == "uniform":
            return (self.low + self.high) / 2.0
        return float(sum(self.values) / len(self.values))

    def to_raw(self) -> Any:
        """The scenario-file form of this distribution (for provenance and round trips)."""
        suffix = "_s" if self.unit == "s" else "_bytes"
        if self.kind == "constant":
            return {"dist": "constant", "value" + suffix: self.value}
        if self.kind == "exponential":
            return {"dist": "exponential", "mean" + suffix: self.mean}
        if self.kind == "uniform":
            return {"dist": "uniform", "low" + suffix: self.low, "high" + suffix: self.high}
        if self.kind == "lognormal":
            return {"dist": "lognormal", "mean" + suffix: self.mean, "sigma": self.sigma}
        return {"dist": "empirical", "values" + suffix: list(self.values)}

    def sampler(self, rng: np.random.Generator | None, integer: bool = False) -> Sampler:
        return Sampler(self, rng, integer)


def _got(value: Any, echo: bool) -> str:
    """``, got <value>`` for a file of the user's; nothing for one that may not be theirs
    (a profile file: ``zsim.profile``, whose errors never repeat what they read)."""
    return f", got {value!r}" if echo else ""


def _got_g(number: float, echo: bool) -> str:
    return f", got {number:g}" if echo else ""


def _number(value: Any, path: str, echo: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError(path, f"must be a number{_got(value, echo)}")
    if isinstance(value, int) and abs(value) > 2**63 or not math.isfinite(float(value)):  # 10**400 has no float
        raise ScenarioError(path, f"must be finite{_got(value, echo) if isinstance(value, float) else ''}")
    if value < 0:
        raise ScenarioError(path, f"must be >= 0{_got(value, echo)}")
    return float(value)


#: Largest message size (bytes) zsim accepts: 4 GiB - 1, the largest frame a 32-bit
#: length would carry; far above anything a queueing study needs, and well inside the
#: integers that a float64 ledger holds exactly.
MAX_MESSAGE_BYTES = 2**32 - 1


def parse_distribution(raw: Any, path: str, unit: str = "s", echo: bool = True) -> Distribution:
    """Parse a number or a distribution table; errors name ``path`` and the reason (and,
    with ``echo``, the value found)."""
    dist = _parse_distribution(raw, path, unit, echo)
    if unit == "s":
        from .limits import MAX_SECONDS

        for name in ("value", "mean", "low", "high"):
            number = getattr(dist, name)
            if number > MAX_SECONDS:
                where = path if not isinstance(raw, dict) else f"{path}.{name}_s"
                raise ScenarioError(where, f"must be at most {MAX_SECONDS:g} s (about 32 years; zsim.limits.MAX_SECONDS)"
                                           f"{_got_g(number, echo)}")
        if dist.values and max(dist.values) > MAX_SECONDS:
            raise ScenarioError(f"{path}.values_s", f"must be at most {MAX_SECONDS:g} s (about 32 years; zsim.limits.MAX_SECONDS)"
                                                    f"{_got_g(max(dist.values), echo)}")
    if unit == "bytes":
        for name in ("value", "mean", "low", "high"):
            number = getattr(dist, name, None)
            if number is not None and number > MAX_MESSAGE_BYTES:
                where = path if not isinstance(raw, dict) else f"{path}.{name}_bytes"
                raise ScenarioError(where, f"must be <= {MAX_MESSAGE_BYTES:,} bytes (4 GiB){_got_g(number, echo)}")
        if dist.values and max(dist.values) > MAX_MESSAGE_BYTES:
            raise ScenarioError(f"{path}.values_bytes", f"must be <= {MAX_MESSAGE_BYTES:,} bytes (4 GiB){_got_g(max(dist.values), echo)}")
    return dist


def _parse_distribution(raw: Any, path: str, unit: str, echo: bool) -> Distribution:
    suffix = "_s" if unit == "s" else "_bytes"
    if not isinstance(raw, dict):
        return Distribution.constant(_number(raw, path, echo), unit)
    kind = raw.get("dist")
    if kind is None:
        raise ScenarioError(f"{path}.dist", f"missing; one of {', '.join(KINDS)}")
    if kind not in KINDS:
        raise ScenarioError(f"{path}.dist", f"unknown distribution{' ' + repr(kind) if echo else ''}; one of {', '.join(KINDS)}")
    allowed = {"dist"} | {name + suffix for name in _PARAMS[kind]}
    if kind == "lognormal":
        allowed.add("sigma")
    for key in raw:
        if key not in allowed:
            hint = ""
            other = "_bytes" if unit == "s" else "_s"
            if key.endswith(other):
                hint = f" (this field is in {'seconds' if unit == 's' else 'bytes'}: use the '{suffix}' suffix)"
            raise ScenarioError(
                f"{path}.{key}", f"not a parameter of a {kind} distribution; expected {sorted(allowed - {'dist'})}{hint}"
            )
    for key in allowed - {"dist"}:
        if key not in raw:
            raise ScenarioError(f"{path}.{key}", f"missing (a {kind} distribution needs {sorted(allowed - {'dist'})})")
    if kind == "constant":
        return Distribution("constant", unit, value=_number(raw["value" + suffix], f"{path}.value{suffix}", echo))
    if kind == "exponential":
        mean = _number(raw["mean" + suffix], f"{path}.mean{suffix}", echo)
        return Distribution("exponential", unit, mean=mean)
    if kind == "uniform":
        low = _number(raw["low" + suffix], f"{path}.low{suffix}", echo)
        high = _number(raw["high" + suffix], f"{path}.high{suffix}", echo)
        if high < low:
            raise ScenarioError(f"{path}.high{suffix}", f"must be >= low{suffix}" + (f" ({low}), got {high}" if echo else ""))
        return Distribution("uniform", unit, low=low, high=high)
    if kind == "lognormal":
        mean = _number(raw["mean" + suffix], f"{path}.mean{suffix}", echo)
        sigma = _number(raw["sigma"], f"{path}.sigma", echo)
        if sigma > 10:
            raise ScenarioError(f"{path}.sigma", f"must be <= 10 (a lognormal with sigma {sigma:g} spans more than 40 decades), got "
                                                 f"{sigma:g}" if echo else "must be <= 10 (a larger sigma spans more than 40 decades)")
        if mean <= 0:
            raise ScenarioError(f"{path}.mean{suffix}", f"must be > 0 for a lognormal{_got(mean, echo)}")
        return Distribution("lognormal", unit, mean=mean, sigma=sigma)
    values_raw = raw["values" + suffix]
    if not isinstance(values_raw, list) or not values_raw:
        raise ScenarioError(f"{path}.values{suffix}", "must be a non-empty list of numbers")
    values = tuple(_number(v, f"{path}.values{suffix}[{i}]", echo) for i, v in enumerate(values_raw))
    return Distribution("empirical", unit, values=values)
