"""Field checks by path: every file zsim reads (scenarios, sweep files, profiles) checks its
fields with these, so one mistake reads the same wherever it is made: one line naming the
field (``ScenarioError(path, reason)``), and an integer is an integer in all of them (a
TOML ``2.0`` is 2 everywhere; ``2.5`` and ``true`` are refused everywhere)."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import ScenarioError


def short(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters (an error message stays one short line)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + " ..."


def kind_of(value: Any) -> str:
    """What ``value`` is, in words, without its content (an error about a file that may
    hold someone's secrets names the type it found, never the value)."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number with a fraction" if math.isfinite(value) else "nan or inf"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list):
        return "a list"
    return "a date or time" if hasattr(value, "isoformat") else type(value).__name__


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate a mistyped ``word`` most likely meant, or None."""
    matches = difflib.get_close_matches(word, sorted(candidates), n=1, cutoff=0.75)
    return matches[0] if matches else None


def check_keys(table: Mapping[str, Any], allowed: set[str], path: str) -> None:
    """Every key of ``table`` is one of ``allowed``; else one line with the closest."""
    for key in table:
        if key not in allowed:
            close = closest(key, allowed)
            hint = f" (did you mean {close!r}?)" if close else ""
            shown = key if len(key) <= 80 else key[:76] + " ..."  # one short line, whatever the file's key
            raise ScenarioError(f"{path}.{shown}" if path else shown, f"unknown field{hint}; known: {', '.join(sorted(allowed))}")


def integer(value: Any, path: str, minimum: int | None = None, maximum: int | None = None, echo: bool = True) -> int:
    """An integer (a float with an integral value is one; a bool is not) within the bounds.
    ``echo=False``: the error says what kind of value was found, not the value (a file
    that may not be the user's, such as a profile)."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ScenarioError(path, f"must be an integer, got {short(value) if echo else kind_of(value)}")
    if minimum is not None and value < minimum:
        raise ScenarioError(path, f"must be >= {minimum}" + (f", got {value}" if echo else ""))
    if maximum is not None and value > maximum:
        raise ScenarioError(path, f"must be at most {maximum:,}" + (f", got {value:,}" if echo else ""))
    return value


def number(value: Any, path: str, what: str = "", minimum: float | None = None) -> float:
    """A finite number (not a bool), at least ``minimum`` if given."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise ScenarioError(path, f"must be a finite number{' of ' + what if what else ''}, got {short(value)}")
    if minimum is not None and value < minimum:
        raise ScenarioError(path, f"must be >= {minimum:g}, got {short(value)}")
    return float(value)
