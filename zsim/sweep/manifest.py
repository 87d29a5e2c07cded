"""The plan a results folder carries, ``_sweep.json``, read back as data from elsewhere.

``zsim sweep`` and ``zsim search`` write it (``Plan.manifest``); ``zsim report``,
``zsim explain --sweep``, a resumed sweep, search or ``--precision`` round read it. A
results folder travels, so every field any of them reads is checked here, once, before
use: a field of the wrong kind, a number out of range, a table nested past
``MAX_NESTING`` is one ``ScenarioError`` naming the file and the field
(``out/sweep=s/_sweep.json: points[3].id: must be text, got a number``), exit 2, instead
of an error deep inside a report. The reason names the kind of value found, never the
value itself (it could be megabytes, or text meant for a terminal). Fields zsim does not
read are left alone (a newer zsim may add some).

What the checks do not decide: a manifest's ``base_scenario`` is a scenario, checked as
one (``zsim.spec.from_dict``) when a run is rebuilt from it; its ``base_dir`` is where that
scenario's relative paths (a profile file) start, never where app code may come from
(``zsim explain --sweep``, docs/safety.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..errors import ScenarioError
from ..files import nesting_depth

#: Deepest nesting of lists and tables in a manifest: a scenario (four levels in TOML, see
#: ``zsim.files.MAX_NESTING``) inside a point's overrides inside the points list.
MAX_NESTING = 40
#: Longest text of a name, a path, an id in a manifest.
MAX_TEXT = 10_000
#: Largest root seed (numpy's SeedSequence takes any size; zsim's seeds are 64-bit).
MAX_SEED = 2**64 - 1
REQUIRED = ("name", "axes", "points", "replications")
AXIS_KINDS = ("int", "float", "bool", "str", "json")


def kind(value: Any) -> str:
    """What a JSON value is, in words (never the value itself)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int):
        return "a number"
    if isinstance(value, float):
        return "a decimal number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a table"
    return type(value).__name__


class _Checker:
    def __init__(self, label: str) -> None:
        self.label = label

    def bad(self, field: str, reason: str) -> ScenarioError:
        return ScenarioError(f"{self.label}: {field}", reason)

    def text(self, value: Any, field: str, *, optional: bool = False, empty: bool = True) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str):
            raise self.bad(field, f"must be text, got {kind(value)}")
        if len(value) > MAX_TEXT:
            raise self.bad(field, f"is {len(value):,} characters long; at most {MAX_TEXT:,} are accepted")
        if not empty and not value:
            raise self.bad(field, "must not be empty")

    def whole(self, value: Any, field: str, low: int, high: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.bad(field, f"must be a whole number, got {kind(value)}")
        if not low <= value <= high:
            raise self.bad(field, f"must be from {low:,} to {high:,}, got a number out of that range")

    def number(self, value: Any, field: str) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            found = "NaN or infinity" if isinstance(value, float) else kind(value)
            raise self.bad(field, f"must be a finite number or null, got {found}")

    def table(self, value: Any, field: str, *, optional: bool = True) -> dict[str, Any]:
        if value is None and optional:
            return {}
        if not isinstance(value, Mapping):
            raise self.bad(field, f"must be a table, got {kind(value)}")
        return dict(value)

    def listed(self, value: Any, field: str, *, optional: bool = False) -> list[Any]:
        if value is None and optional:
            return []
        if not isinstance(value, list):
            raise self.bad(field, f"must be a list, got {kind(value)}")
        return value


def check(manifest: Any, label: str) -> dict[str, Any]:
    """``manifest`` (parsed JSON of file ``label``) if every field zsim reads is what
    ``Plan.manifest`` writes; else one ``ScenarioError`` naming the field."""
    from .plan import DESIGNS, MAX_REPLICATIONS, SCALES

    if not isinstance(manifest, dict) or not all(key in manifest for key in REQUIRED):
        raise ScenarioError(label, "is not a zsim sweep manifest (no name, axes, points, replications); "
                                   "run the sweep again to rewrite it")
    depth = nesting_depth(manifest)
    if depth > MAX_NESTING:
        raise ScenarioError(label, f"nests lists or tables {depth} levels deep; a zsim sweep manifest has at most {MAX_NESTING}")
    c = _Checker(label)
    c.text(manifest["name"], "name", empty=False)
    c.whole(manifest["replications"], "replications", 1, MAX_REPLICATIONS)
    for key in ("description", "source", "source_path", "base_dir", "base_source"):
        if key in manifest:
            c.text(manifest[key], key, optional=True)
    if "design" in manifest and manifest["design"] not in DESIGNS:
        raise c.bad("design", f"must be one of {', '.join(DESIGNS)}")
    if "seed" in manifest:
        c.whole(manifest["seed"], "seed", 0, MAX_SEED)
    if "common_random_numbers" in manifest and not isinstance(manifest["common_random_numbers"], bool):
        raise c.bad("common_random_numbers", f"must be true or false, got {kind(manifest['common_random_numbers'])}")
    for key in ("set", "report"):
        c.table(manifest.get(key), key)
    if "base_scenario" in manifest:
        c.table(manifest["base_scenario"], "base_scenario", optional=False)
    for key, value in c.table(manifest.get("links"), "links").items():
        c.text(value, f"links.{key}")
    _check_axes(c, manifest["axes"], SCALES)
    _check_points(c, manifest["points"])
    for point, n in c.table(manifest.get("point_replications"), "point_replications").items():
        c.whole(n, f"point_replications.{point}", 1, MAX_REPLICATIONS)
    return manifest


def _check_axes(c: _Checker, axes: Any, scales: tuple[str, ...]) -> None:
    for i, axis in enumerate(c.listed(axes, "axes")):
        where = f"axes[{i}]"
        axis = c.table(axis, where, optional=False)
        c.text(axis.get("path"), f"{where}.path", empty=False)
        c.text(axis.get("label"), f"{where}.label", optional=True)
        if axis.get("kind", "float") not in AXIS_KINDS:
            raise c.bad(f"{where}.kind", f"must be one of {', '.join(AXIS_KINDS)}")
        if axis.get("scale", "linear") not in scales:
            raise c.bad(f"{where}.scale", f"must be one of {', '.join(scales)}")
        for key in ("low", "high"):
            c.number(axis.get(key), f"{where}.{key}")
        values = c.listed(axis.get("values"), f"{where}.values", optional=True)
        for j, value in enumerate(values):
            if isinstance(value, float) and not math.isfinite(value):
                raise c.bad(f"{where}.values[{j}]", "must be a finite number, got NaN or infinity")
        names = axis.get("names")
        if names is not None:
            names = c.listed(names, f"{where}.names")
            if len(names) != len(values):
                raise c.bad(f"{where}.names", f"names {len(names)} values, the axis has {len(values)}")
            for j, name in enumerate(names):
                c.text(name, f"{where}.names[{j}]")


def _check_points(c: _Checker, points: Any) -> None:
    for i, point in enumerate(c.listed(points, "points")):
        where = f"points[{i}]"
        point = c.table(point, where, optional=False)
        c.text(point.get("id"), f"{where}.id", empty=False)
        if "index" in point:
            c.whole(point["index"], f"{where}.index", 0, 2**63 - 1)
        for key in ("coords", "overrides"):
            if key in point:
                c.table(point[key], f"{where}.{key}", optional=False)
