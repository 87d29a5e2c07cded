"""A small TOML writer for the subset zsim writes (profiles, sweep manifests, the scenario
file of a chosen design).

Nested dicts become tables, dicts with a ``dist`` key become inline tables (distributions),
a list of tables becomes an array of tables (``[[socket]]``, each item's own tables
inline: ``options = { sndhwm = 5 }``, as scenario files are written by hand), keys
starting with ``_`` are skipped. Reading uses the standard library's ``tomllib``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        text = repr(value)
        return text if any(c in text for c in ".eEn") else text + ".0"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def value_text(value: Any) -> str:
    """One value as TOML writes it (``5``, ``0.5``, ``"x"``, ``{ dist = "exponential", mean_s = 0.001 }``):
    the right-hand side of ``key = value``, and of ``--set PATH=VALUE``."""
    return _toml_value(value)


def _is_inline(value: Any) -> bool:
    """Distributions (dicts with a ``dist`` key) are written as inline tables."""
    return isinstance(value, dict) and "dist" in value


def _is_table_array(value: Any) -> bool:
    """A non-empty list of tables (not distributions): written as ``[[name]]`` blocks."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) and not _is_inline(v) for v in value)


def to_toml(data: dict, header: str = "") -> str:
    """Serialise nested dicts to TOML: plain keys first, then sub-tables and arrays of
    tables in their order; private keys skipped."""
    lines: list[str] = [header.rstrip("\n")] if header else []

    def head(text: str) -> None:
        if lines:
            lines.append("")
        lines.append(text)

    def emit(path: list[str], table: dict) -> None:
        scalars = [(k, v) for k, v in table.items()
                   if not k.startswith("_") and (not isinstance(v, dict) or _is_inline(v)) and not _is_table_array(v)]
        tables = [(k, v) for k, v in table.items()
                  if not k.startswith("_") and ((isinstance(v, dict) and not _is_inline(v)) or _is_table_array(v))]
        if path and (scalars or not tables):
            head("[" + ".".join(_toml_key(p) for p in path) + "]")
        for key, value in scalars:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
        for key, value in tables:
            if isinstance(value, dict):
                emit(path + [key], value)
                continue
            for item in value:  # [[key]]: each item's keys, its own tables inline
                head("[[" + ".".join(_toml_key(p) for p in path + [key]) + "]]")
                for item_key, item_value in item.items():
                    if not item_key.startswith("_"):
                        lines.append(f"{_toml_key(item_key)} = {_toml_value(item_value)}")

    emit([], data)
    return "\n".join(lines) + "\n"
