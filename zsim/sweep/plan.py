"""Sweep planning: from a sweep file to points, runs and seeds, without running anything.

A sweep is a base scenario, a few *axes* (scenario fields named by their dotted path, each
with the values it takes), a *design* that turns the axes into points (``grid``: every
combination; ``random``: independent uniform draws; ``lhs``: a Latin hypercube), a number
of replications per point and a root seed.

Everything here is pure (no Spark, no processes, no files except ``load``, which reads the
sweep file and its base scenario): ``expand`` validates every derived scenario before any
work starts, so a bad axis path or value is an error naming it, not a failed run an hour
later.

Identity and seeds. A point's id is a hash of its *derived scenario* (plus the root seed
and seed scheme), so it does not depend on the point's position in the grid, on how the
runs are batched, on the engine or on the number of executors; adding values to an axis
later keeps the ids (and finished rows) of the old points. A run's seed comes from
``SeedSequence(root seed, spawn_key=(replication,))``: with common random numbers (the
default) replication ``r`` uses the same seed at every point, so differences between
points are not blurred by different arrival and service draws (zsim gives every random
source its own stream keyed by its name, see ``zsim.build``). With
``common_random_numbers = false`` the point id is mixed into the spawn key.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from .. import fields, files, metrics
from .. import spec as scenario_spec
from ..errors import ScenarioError

DESIGNS = ("grid", "random", "lhs")
SCALES = ("linear", "log")
#: Keys that make a table an axis specification rather than a level of dotted path.
AXIS_KEYS = {"values", "low", "high", "num", "scale", "integer", "label", "names"}
SWEEP_KEYS = {
    "name",
    "description",
    "base",
    "design",
    "points",
    "replications",
    "seed",
    "common_random_numbers",
    "batch_size",
    "run_timeout_s",
    "member_columns",
}
TOP_KEYS = {"sweep", "axes", "set", "link", "base", "report"}
FIGURE_KINDS = ("line", "heatmap", "scatter", "threshold")
FIGURE_KEYS = {"kind", "x", "y", "metric", "series", "facet", "where", "logx", "logy", "title", "file", "band"}
THRESHOLD_KEYS = {"metric", "below", "minimise", "by", "confidence", "title"}
REPORT_KEYS = {"metrics", "figure", "threshold", "default_figures", "derived"}
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
#: Column names a row always has (an axis may not use them).
RESERVED_COLUMNS = {"sweep", "point", "replication", "seed", "ok", "error", "wall_s", "scenario_digest", "zsim_version"}

# Size limits. A plan's runs are counted before anything is expanded (``plan_size``), so
# a typo such as ``num = 1000000000`` costs nothing: it is refused in microseconds.
#: Runs a plan may have unless the caller raises the limit (``zsim sweep --max-runs N``):
#: ten times the buffer-sizing study (10,080 runs), some hours on a few cores. Planning
#: itself costs ~0.2 ms and ~1 KB per point, the run list ~100 bytes per run.
DEFAULT_MAX_RUNS = 100_000
#: Values one grid axis may have (``num``, or the length of its list).
MAX_AXIS_VALUES = 100_000
#: Points a random or Latin-hypercube design may draw (``points``), and points of any plan.
MAX_POINTS = 1_000_000
#: Replications per point.
MAX_REPLICATIONS = 1_000_000
#: Wall-clock seconds one run may take unless ``sweep.run_timeout_s`` says otherwise
#: (0 = no limit): a run that reaches it is a failed row, not a stalled sweep.
DEFAULT_RUN_TIMEOUT_S = 600.0
#: A template with more members than this is summarised in a sweep's rows by its
#: aggregates only (``socket.<template>.sum_delivered``, ...; ``sweep.member_columns``):
#: a 5,000-member template would otherwise add ~170,000 per-member columns.
DEFAULT_MEMBER_COLUMNS = 32
MAX_MEMBER_COLUMNS = 10_000
#: Columns a sweep's row may have, estimated for every point before any run
#: (``row_columns``): Parquet slows down badly past some tens of thousands.
MAX_COLUMNS = 50_000


# --------------------------------------------------------------------------------------
# Sweep specification


@dataclass(frozen=True)
class Axis:
    """One varied scenario field.

    ``values`` is set for a list (a grid axis, or a categorical axis in a random design);
    ``low``/``high`` for a range (grids also need ``num``).
    """

    path: str
    label: str
    values: tuple[Any, ...] | None = None
    low: float | None = None
    high: float | None = None
    num: int | None = None
    scale: str = "linear"
    integer: bool = False
    #: names of ``values`` in reports (``names = ["4 workers", "8 workers"]``), in the order
    #: reports use for them instead of the values' own order
    names: tuple[str, ...] | None = None

    @property
    def column(self) -> str:
        """The Parquet column holding this axis's value (the dotted path itself)."""
        return self.path

    def grid_values(self) -> tuple[Any, ...]:
        if self.values is not None:
            return self.values
        assert self.low is not None and self.high is not None and self.num is not None
        if self.scale == "log":
            raw = np.geomspace(self.low, self.high, self.num)
        else:
            raw = np.linspace(self.low, self.high, self.num)
        return _dedupe(_number(v, self.integer) for v in raw)

    def value_at(self, u: float) -> Any:
        """The value at quantile ``u`` in [0, 1) (random and Latin-hypercube designs)."""
        if self.values is not None:
            return self.values[min(int(u * len(self.values)), len(self.values) - 1)]
        assert self.low is not None and self.high is not None
        if self.scale == "log":
            value = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        else:
            value = self.low + u * (self.high - self.low)
        return _number(value, self.integer)


@dataclass(frozen=True)
class Sweep:
    """A parsed, not yet expanded, sweep file."""

    name: str
    description: str
    design: str
    n_points: int | None
    replications: int
    seed: int
    common_random_numbers: bool
    batch_size: int
    run_timeout_s: float | None
    axes: tuple[Axis, ...]
    links: Mapping[str, str]
    fixed: Mapping[str, Any]
    base: Mapping[str, Any] = field(repr=False)
    base_dir: str = "."
    base_source: str = "<dict>"
    report: Mapping[str, Any] = field(default_factory=dict, repr=False)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)
    source: str = "<dict>"
    #: templates with more members than this have only their aggregates in a row
    member_columns: int = DEFAULT_MEMBER_COLUMNS

    def axis(self, key: str) -> Axis:
        """An axis by path, label, or unambiguous last path component(s)."""
        return resolve_axis(self.axes, key)


@dataclass(frozen=True)
class Point:
    index: int
    id: str
    coords: tuple[tuple[str, Any], ...]  # (axis path, value), in axis order
    overrides: Mapping[str, Any]  # every path set at this point (axes and links)

    @property
    def values(self) -> dict[str, Any]:
        return dict(self.coords)


@dataclass(frozen=True, order=True)
class Task:
    """One run: a point, a replication and its seed."""

    point: str
    replication: int
    seed: int


@dataclass(frozen=True)
class Plan:
    sweep: Sweep
    points: tuple[Point, ...]
    base: Mapping[str, Any] = field(repr=False)  # base scenario with [set] applied
    merged: int = 0  # duplicate points of a random design merged into one

    @property
    def total_runs(self) -> int:
        return len(self.points) * self.sweep.replications

    @cached_property
    def _by_id(self) -> dict[str, Point]:
        return {point.id: point for point in self.points}

    def point(self, point_id: str) -> Point:
        return self._by_id[point_id]

    def tasks(self) -> list[Task]:
        """Every run, ordered by point then replication."""
        sweep = self.sweep
        if sweep.common_random_numbers:  # the same seed for replication r at every point
            seeds = [seed_for(sweep.seed, "", rep, True) for rep in range(sweep.replications)]
            return [Task(point.id, rep, seeds[rep]) for point in self.points for rep in range(sweep.replications)]
        return [self.task(point.id, rep) for point in self.points for rep in range(sweep.replications)]

    def task(self, point_id: str, replication: int) -> Task:
        """The run of one point and replication (any replication: ``--precision`` adds
        some beyond the planned count, with the seeds a larger count would give)."""
        sweep = self.sweep
        crn = sweep.common_random_numbers
        return Task(point_id, replication, seed_for(sweep.seed, "" if crn else point_id, replication, crn))

    def scenario_raw(self, point_id: str) -> dict[str, Any]:
        """The derived scenario of a point, as a raw dict (``zsim.spec.from_dict`` input)."""
        return scenario_spec.with_overrides(self.base, self.point(point_id).overrides)

    def scenario(self, point_id: str) -> scenario_spec.Scenario:
        """The validated scenario of a point: ``zsim.run(plan.scenario(row.point), row.seed)``
        reproduces a row of the results."""
        return scenario_spec.from_dict(self.scenario_raw(point_id), base_dir=self.sweep.base_dir, source=self.sweep.base_source)

    def worker_payload(self) -> dict[str, Any]:
        """What a worker needs to run any task of this plan (small, picklable, JSON-able)."""
        payload = {
            "base": self.base,
            "base_dir": self.sweep.base_dir,
            "source": self.sweep.base_source,
            "points": {p.id: {"overrides": dict(p.overrides), "coords": [[k, v] for k, v in p.coords]} for p in self.points},
            "axes": [[a.path, column_kind(a, self)] for a in self.sweep.axes],
            "run_timeout_s": self.sweep.run_timeout_s,
        }
        if self.sweep.member_columns != DEFAULT_MEMBER_COLUMNS:  # the digest of older plans stays as it was
            payload["member_columns"] = self.sweep.member_columns
        payload["digest"] = _digest(payload)
        return payload

    def manifest(self) -> dict[str, Any]:
        """The plan as written next to the results (``_sweep.json``), read by ``zsim report``."""
        sweep = self.sweep
        return {
            "format": 1,
            "name": sweep.name,
            "description": sweep.description,
            "source": sweep.source,
            # read again by zsim report for its [report] settings (from any working directory)
            "source_path": str(Path(sweep.source).resolve()) if sweep.source != "<dict>" else None,
            "design": sweep.design,
            "replications": sweep.replications,
            "seed": sweep.seed,
            "common_random_numbers": sweep.common_random_numbers,
            "axes": [
                {"path": a.path, "label": a.label, "kind": column_kind(a, self), "scale": a.scale,
                 "values": list(a.values) if a.values is not None else None,
                 "low": a.low, "high": a.high, "names": list(a.names) if a.names is not None else None}
                for a in sweep.axes
            ],
            "links": dict(sweep.links),
            "set": dict(sweep.fixed),
            "report": dict(sweep.report),
            # each point's changes to the base, and where the base's relative paths start:
            # enough to run any row again from the results folder alone (zsim explain --sweep)
            "points": [{"id": p.id, "index": p.index, "coords": {k: v for k, v in p.coords}, "overrides": dict(p.overrides)}
                       for p in self.points],
            "base_scenario": self.base,
            "base_dir": sweep.base_dir,
            "base_source": sweep.base_source,
        }


# --------------------------------------------------------------------------------------
# Parsing


def load(path: str | Path) -> Sweep:
    """Read a sweep TOML file (and its base scenario file) and parse it.

    Both must be regular UTF-8 files of sane size (``zsim.files``): a folder, a FIFO, a
    device or a binary file is one ``ScenarioError`` line, an unreadable one an
    ``EnvironmentFault`` line.
    """
    path = Path(path)
    raw = files.load_toml(path, "sweep file")
    base_dir = path.resolve().parent
    sweep_table = raw.get("sweep", {})
    base_ref = sweep_table.get("base") if isinstance(sweep_table, dict) else None
    base_raw: dict[str, Any] | None = None
    base_source = str(path)
    scenario_dir = str(base_dir)
    if isinstance(base_ref, str):
        base_path = Path(base_ref)
        if not base_path.is_absolute():
            base_path = base_dir / base_path
        if not base_path.exists():
            raise ScenarioError("sweep.base", f"no such scenario file {str(base_path)!r}")
        base_raw = files.load_toml(base_path, "scenario file (sweep.base)")
        base_source = str(base_path)
        scenario_dir = str(base_path.resolve().parent)
    return from_dict(raw, base=base_raw, base_dir=scenario_dir, base_source=base_source, source=str(path))


def from_dict(
    raw: Mapping[str, Any],
    *,
    base: Mapping[str, Any] | None = None,
    base_dir: str = ".",
    base_source: str = "<dict>",
    source: str = "<dict>",
) -> Sweep:
    """Parse a sweep given as a dict (the TOML structure).

    The base scenario is ``base`` if given (the file that ``sweep.base`` names, read by
    ``load``), else the sweep's own ``[base]`` table.
    """
    if not isinstance(raw, Mapping):
        raise ScenarioError("", "a sweep must be a table")
    _check_keys(raw, TOP_KEYS, "")
    head = raw.get("sweep")
    if not isinstance(head, Mapping):
        raise ScenarioError("sweep", "missing [sweep] table (name, base, replications, seed, ...)")
    _check_keys(head, SWEEP_KEYS, "sweep")

    default_name = Path(source).stem if source != "<dict>" else "sweep"
    name = head.get("name", default_name)
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise ScenarioError("sweep.name", f"must be letters, digits, '_', '.', '-' (it names a directory), got {name!r}")
    description = head.get("description", "")
    if not isinstance(description, str):
        raise ScenarioError("sweep.description", "must be a string")

    if base is None:
        if "base" in raw:
            base = raw["base"]
            if not isinstance(base, Mapping):
                raise ScenarioError("base", "must be a table (an inline scenario)")
            if isinstance(head.get("base"), str):
                raise ScenarioError("sweep.base", "give the base scenario either as a file (sweep.base) or inline ([base]), not both")
        elif "base" in head:
            raise ScenarioError("sweep.base", "must be a scenario file path (read with zsim.sweep.plan.load)")
        else:
            raise ScenarioError("sweep.base", "missing: the base scenario file (or an inline [base] table)")
    base = copy.deepcopy(dict(base))

    design = head.get("design", "grid")
    if design not in DESIGNS:
        raise ScenarioError("sweep.design", f"must be one of {', '.join(DESIGNS)}, got {design!r}")
    n_points = head.get("points")
    if design == "grid":
        if n_points is not None:
            raise ScenarioError("sweep.points", "only for random and lhs designs (a grid has one point per combination)")
    else:
        n_points = _int(n_points, "sweep.points", 1, MAX_POINTS) if n_points is not None else None
        if n_points is None:
            raise ScenarioError("sweep.points", f"missing: how many points the {design} design draws")
    replications = _int(head.get("replications", 1), "sweep.replications", 1, MAX_REPLICATIONS)
    seed = _int(head.get("seed", 0), "sweep.seed", 0)
    crn = head.get("common_random_numbers", True)
    if not isinstance(crn, bool):
        raise ScenarioError("sweep.common_random_numbers", f"must be true or false, got {crn!r}")
    batch_size = _int(head.get("batch_size", 0), "sweep.batch_size", 0)
    timeout = check_run_timeout(head.get("run_timeout_s", DEFAULT_RUN_TIMEOUT_S), "sweep.run_timeout_s")
    member_columns = _int(head.get("member_columns", DEFAULT_MEMBER_COLUMNS), "sweep.member_columns", 0, MAX_MEMBER_COLUMNS)

    axes_table = raw.get("axes")
    if not isinstance(axes_table, Mapping) or not axes_table:
        raise ScenarioError("axes", "missing: at least one axis, e.g. \"socket.pub.options.sndhwm\" = [10, 100, 1000]")
    axes = tuple(_parse_axis(path, value, design) for path, value in _flatten_axes(axes_table, ""))
    labels = [a.label for a in axes]
    for axis in axes:
        if axis.path in RESERVED_COLUMNS:
            raise ScenarioError(f"axes.{axis.path}", "is not a scenario field path")
        if labels.count(axis.label) > 1:
            raise ScenarioError(f"axes.{axis.path}.label", f"two axes are labelled {axis.label!r}")

    fixed = dict(_flatten_leaves(raw.get("set", {}), "set"))
    axis_paths = {a.path for a in axes}
    for path in fixed:
        if path in axis_paths:
            raise ScenarioError(f"set.{path}", "is also an axis; a field is either fixed or varied")
    links: dict[str, str] = {}
    for path, target in _flatten_leaves(raw.get("link", {}), "link"):
        if not isinstance(target, str):
            raise ScenarioError(f"link.{path}", f"must name an axis (a dotted path string), got {target!r}")
        if path in axis_paths or path in fixed:
            raise ScenarioError(f"link.{path}", "is already an axis or fixed in [set]")
        try:
            links[path] = resolve_axis(axes, target).path
        except KeyError as exc:
            raise ScenarioError(f"link.{path}", str(exc.args[0])) from None

    report = raw.get("report", {})
    _check_report(report, axes, base)

    return Sweep(
        name=name,
        description=description,
        design=design,
        n_points=n_points,
        replications=replications,
        seed=seed,
        common_random_numbers=crn,
        batch_size=batch_size,
        run_timeout_s=timeout,
        axes=axes,
        links=links,
        fixed=fixed,
        base=base,
        base_dir=base_dir,
        base_source=base_source,
        report=copy.deepcopy(dict(report)),
        raw=copy.deepcopy(dict(raw)),
        source=source,
        member_columns=member_columns,
    )


_check_keys = fields.check_keys
_short = fields.short


_int = fields.integer


def check_run_timeout(value: Any, path: str) -> float | None:
    """A run's wall-clock limit in seconds as a user gives it: a number >= 0, 0 = none."""
    from ..limits import MAX_SECONDS

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise ScenarioError(path, f"must be a number of seconds >= 0 (0: no limit), got {_short(value)}")
    if value > MAX_SECONDS:  # a timer the OS cannot set (1e308): every run would fail
        raise ScenarioError(path, f"must be at most {MAX_SECONDS:g} s (about 32 years; zsim.limits.MAX_SECONDS; 0: no limit), "
                                  f"got {_short(value)}")
    return float(value) if value > 0 else None


def _is_axis_spec(value: Any) -> bool:
    return isinstance(value, Mapping) and ("values" in value or ("low" in value and "high" in value))


def _is_leaf_table(value: Mapping[str, Any]) -> bool:
    """A table that is a value in itself (a distribution), not a level of a dotted path."""
    return "dist" in value


def _flatten_axes(table: Mapping[str, Any], prefix: str) -> Iterable[tuple[str, Any]]:
    """``a.b.c = [...]`` is a nested table in TOML; give back ("a.b.c", [...]) pairs."""
    for key, value in table.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, list) or _is_axis_spec(value):
            scenario_spec.check_path(path, f"axes.{scenario_spec.shown_path(path)}")  # before any line names it whole
            yield path, value
        elif isinstance(value, Mapping) and not _is_leaf_table(value):
            if not value:
                raise ScenarioError(f"axes.{path}", "empty table; an axis is a list of values or {low, high}")
            yield from _flatten_axes(value, path)
        else:
            raise ScenarioError(f"axes.{path}", f"an axis is a list of values, {{ values = [...] }} or {{ low, high }}, got {value!r}")


def _flatten_leaves(table: Any, section: str, prefix: str = "") -> Iterable[tuple[str, Any]]:
    if not isinstance(table, Mapping):
        raise ScenarioError(section, "must be a table of dotted paths")
    for key, value in table.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and not _is_leaf_table(value):
            yield from _flatten_leaves(value, section, path)
        else:
            scenario_spec.check_path(path, f"{section}.{scenario_spec.shown_path(path)}")
            yield path, value


def _number(value: float, integer: bool) -> Any:
    if integer:
        return int(round(float(value)))
    return float(value)


def _dedupe(values: Iterable[Any]) -> tuple[Any, ...]:
    """The values in order, each once (a dict keeps order: linear time, not quadratic)."""
    return tuple(dict.fromkeys(values))


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _parse_axis(path: str, value: Any, design: str) -> Axis:
    where = f"axes.{path}"
    if isinstance(value, list):
        spec: Mapping[str, Any] = {"values": value}
    else:
        spec = value
        _check_keys(spec, AXIS_KEYS, where)
    label = spec.get("label", path)
    if not isinstance(label, str) or not label:
        raise ScenarioError(f"{where}.label", "must be a non-empty string")
    if "values" in spec:
        for key in ("low", "high", "num", "scale", "integer"):
            if key in spec:
                raise ScenarioError(f"{where}.{key}", "not with values (an axis is either a list of values or a range)")
        values = spec["values"]
        if not isinstance(values, list) or not values:
            raise ScenarioError(where, f"needs a non-empty list of values, got {_short(values)}")
        if len(values) > MAX_AXIS_VALUES:
            raise ScenarioError(where, f"has {len(values):,} values; an axis has at most {MAX_AXIS_VALUES:,}")
        first: dict[str, int] = {}
        for i, value in enumerate(values):
            if first.setdefault(_canonical(value), i) != i:
                raise ScenarioError(f"{where}[{i}]", f"duplicate value {_short(value)}")
        names = spec.get("names")
        if names is not None:
            if (not isinstance(names, list) or len(names) != len(values)
                    or not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names)):
                raise ScenarioError(f"{where}.names", f"must be {len(values)} different non-empty strings, one per value, "
                                                      f"got {_short(names)}")
        return Axis(path=path, label=label, values=tuple(values), names=tuple(names) if names is not None else None)
    if "names" in spec:
        raise ScenarioError(f"{where}.names", "only with a list of values")
    low, high = spec["low"], spec["high"]
    for key, number in (("low", low), ("high", high)):
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number):
            raise ScenarioError(f"{where}.{key}", f"must be a number, got {number!r}")
    if not low < high:
        raise ScenarioError(where, f"needs low < high, got low={low}, high={high}")
    scale = spec.get("scale", "linear")
    if scale not in SCALES:
        raise ScenarioError(f"{where}.scale", f"must be one of {', '.join(SCALES)}, got {scale!r}")
    if scale == "log" and low <= 0:
        raise ScenarioError(f"{where}.low", f"a log scale needs low > 0, got {low}")
    integer = spec.get("integer", isinstance(low, int) and isinstance(high, int))
    if not isinstance(integer, bool):
        raise ScenarioError(f"{where}.integer", f"must be true or false, got {integer!r}")
    num = spec.get("num")
    if num is not None:
        num = _int(num, f"{where}.num", 1, MAX_AXIS_VALUES)
    if design == "grid" and num is None:
        raise ScenarioError(where, "a grid axis needs a list of values, or low, high and num (how many values)")
    if design != "grid" and num is not None:
        raise ScenarioError(f"{where}.num", f"only for grid designs; a {design} design draws from [low, high]")
    return Axis(path=path, label=label, low=float(low), high=float(high), num=num, scale=scale, integer=integer)


def resolve_axis(axes: Sequence[Axis], key: str) -> Axis:
    """An axis by its path, its label, or an unambiguous suffix of its path."""
    for axis in axes:
        if key in (axis.path, axis.label):
            return axis
    matches = [a for a in axes if a.path.endswith("." + key)]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(a.path for a in axes)
    if matches:
        raise KeyError(f"{key!r} matches several axes ({', '.join(a.path for a in matches)}); use the full path")
    raise KeyError(f"{key!r} is not an axis; axes: {known}")


def check_metric(value: Any, where: str, known: set[str] | None) -> None:
    if not isinstance(value, str) or not value:
        raise ScenarioError(where, f"must be a metric name (a string), got {_short(value)}")
    if known is None or value in known:
        return
    raise ScenarioError(where, metrics.unknown_metric(value, known))


def _check_axis_key(axes: Sequence[Axis], value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise ScenarioError(where, f"must name an axis (a string), got {_short(value)}")
    try:
        resolve_axis(axes, value)
    except KeyError as exc:
        raise ScenarioError(where, str(exc.args[0])) from None


def _check_report(report: Any, axes: Sequence[Axis], base: Mapping[str, Any] | None = None) -> None:
    """Every axis and metric a ``[report]`` names must exist: a typo is one line now, not a
    pandas traceback in ``zsim report`` after the runs."""
    if not isinstance(report, Mapping):
        raise ScenarioError("report", "must be a table")
    _check_keys(report, REPORT_KEYS, "report")
    known = metrics.known_metrics(base) if base is not None else None
    metrics.check_derived(report.get("derived", {}), known)
    if known is not None:
        known.update(report.get("derived", {}))
    listed = report.get("metrics", [])
    if not isinstance(listed, list):
        raise ScenarioError("report.metrics", f"must be a list of metric names, got {_short(listed)}")
    for i, metric in enumerate(listed):
        check_metric(metric, f"report.metrics[{i}]", known)
    default_figures = report.get("default_figures", False)
    if not isinstance(default_figures, bool):
        raise ScenarioError("report.default_figures", f"must be true or false, got {_short(default_figures)}")
    figures = report.get("figure", [])
    if not isinstance(figures, list):
        raise ScenarioError("report.figure", "must be an array of tables ([[report.figure]])")
    for i, figure in enumerate(figures):
        where = f"report.figure[{i}]"
        if not isinstance(figure, Mapping):
            raise ScenarioError(where, "must be a table")
        _check_keys(figure, FIGURE_KEYS, where)
        kind = figure.get("kind", "line")
        if kind not in FIGURE_KINDS:
            raise ScenarioError(f"{where}.kind", f"must be one of {', '.join(FIGURE_KINDS)}, got {kind!r}")
        for key in ("x", "series", "facet") + (("y",) if kind == "heatmap" else ()):
            if key in figure:
                _check_axis_key(axes, figure[key], f"{where}.{key}")
        for key in ("x",) + (("y",) if kind == "heatmap" else ()):
            if key not in figure:
                raise ScenarioError(f"{where}.{key}", f"missing: the axis of a {kind} figure's {key}")
        where_table = figure.get("where", {})
        if not isinstance(where_table, Mapping):
            raise ScenarioError(f"{where}.where", "must be a table of axis = value")
        for key in where_table:
            _check_axis_key(axes, key, f"{where}.where.{key}")
        if "metric" in figure:
            check_metric(figure["metric"], f"{where}.metric", known)
        if "y" in figure and kind in ("line", "scatter"):
            ys = figure["y"]
            if isinstance(ys, list):
                if not ys:
                    raise ScenarioError(f"{where}.y", "must name at least one metric")
                for j, metric in enumerate(ys):
                    check_metric(metric, f"{where}.y[{j}]", known)
            else:
                check_metric(ys, f"{where}.y", known)
        for key in ("title", "file"):
            if key in figure and (not isinstance(figure[key], str) or not figure[key]):
                raise ScenarioError(f"{where}.{key}", f"must be a non-empty string, got {_short(figure[key])}")
        name = figure.get("file")
        if name is not None and (name != Path(name).name or name.startswith(".")):
            raise ScenarioError(f"{where}.file", f"must be a plain file name (it is written into the report folder), got {name!r}")
    thresholds = report.get("threshold", [])
    if not isinstance(thresholds, list):
        raise ScenarioError("report.threshold", "must be an array of tables ([[report.threshold]])")
    for i, threshold in enumerate(thresholds):
        where = f"report.threshold[{i}]"
        if not isinstance(threshold, Mapping):
            raise ScenarioError(where, "must be a table")
        _check_keys(threshold, THRESHOLD_KEYS, where)
        for key in ("metric", "below", "minimise"):
            if key not in threshold:
                raise ScenarioError(f"{where}.{key}", "missing")
        check_metric(threshold["metric"], f"{where}.metric", known)
        below = threshold["below"]
        if isinstance(below, bool) or not isinstance(below, (int, float)) or not math.isfinite(below):
            raise ScenarioError(f"{where}.below", f"must be a number, got {_short(below)}")
        _check_axis_key(axes, threshold["minimise"], f"{where}.minimise")
        by = threshold.get("by", [])
        if not isinstance(by, list):
            raise ScenarioError(f"{where}.by", f"must be a list of axes, got {_short(by)}")
        for j, key in enumerate(by):
            _check_axis_key(axes, key, f"{where}.by[{j}]")
        if "title" in threshold and not isinstance(threshold["title"], str):
            raise ScenarioError(f"{where}.title", f"must be a string, got {_short(threshold['title'])}")


# --------------------------------------------------------------------------------------
# Expansion


def seed_for(root_seed: int, point_id: str, replication: int, common_random_numbers: bool = True) -> int:
    """The seed of one run: a 63-bit integer from ``SeedSequence(root, spawn_key)``.

    With common random numbers the spawn key is ``(replication,)``, the same at every point;
    otherwise it is ``(point hash, replication)``. Nothing else enters: not the point's
    position, the batch, the engine or the executor.
    """
    key: tuple[int, ...] = (replication,)
    if not common_random_numbers:
        key = (int(point_id.lstrip("p"), 16), replication)
    state = np.random.SeedSequence(root_seed, spawn_key=key).generate_state(2, np.uint32)
    return ((int(state[0]) << 32) | int(state[1])) >> 1


def _digest(value: Any, length: int = 16) -> str:
    return hashlib.sha256(_canonical(value).encode()).hexdigest()[:length]


def point_id(derived_scenario: Mapping[str, Any], sweep: Sweep) -> str:
    """``p`` + 12 hex digits of a hash of what decides a point's rows."""
    return "p" + _digest({"scenario": derived_scenario, "seed": sweep.seed, "crn": sweep.common_random_numbers}, 12)


def _design_quantiles(sweep: Sweep) -> np.ndarray:
    """n_points x n_axes numbers in [0, 1) from the root seed (its own stream)."""
    n, d = sweep.n_points or 0, len(sweep.axes)
    # The design has its own stream (spawn key 0x5EED, 0xDE516); run seeds use (replication,).
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(sweep.seed, spawn_key=(0x5EED, 0xDE516))))
    if sweep.design == "random":
        return rng.random((n, d))
    # Latin hypercube: each axis cut into n equal strata, one draw per stratum, the strata
    # of different axes paired by independent permutations.
    quantiles = np.empty((n, d))
    for j in range(d):
        quantiles[:, j] = (rng.permutation(n) + rng.random(n)) / n
    return quantiles


def _coordinates(sweep: Sweep) -> list[tuple[Any, ...]]:
    if sweep.design == "grid":
        return list(itertools.product(*(axis.grid_values() for axis in sweep.axes)))
    quantiles = _design_quantiles(sweep)
    return [tuple(axis.value_at(float(u)) for axis, u in zip(sweep.axes, row, strict=True)) for row in quantiles]


def _validate(raw: dict[str, Any], sweep: Sweep) -> scenario_spec.Scenario:
    scenario = scenario_spec.from_dict(raw, base_dir=sweep.base_dir, source=sweep.base_source)
    from .. import profile as profile_module

    profile_module.load(scenario.profile, sweep.base_dir)
    return scenario


def row_columns(scenario: scenario_spec.Scenario, member_columns: int = DEFAULT_MEMBER_COLUMNS) -> tuple[int, str]:
    """About how many columns a sweep row of ``scenario`` has (``zsim.metrics.flat_metrics``
    with the members of templates over ``member_columns`` left out), and the field that
    drives the count: ``socket``/``send`` for the scenario's own entities,
    ``sweep.member_columns`` for template members kept. Counted from the parsed scenario,
    before any run: per socket its fields, per sender its fields, per connection a pipe's
    and (tcp/ipc) a link's both directions, per template its aggregates."""
    big = {m for t in scenario.templates if t.count > member_columns for m in t.members}
    own = members = 0

    def add(count: int, name: str, member: bool) -> None:
        nonlocal own, members
        if name in big:
            return
        if member:
            members += count
        else:
            own += count

    member_names = {m for t in scenario.templates for m in t.members}
    link_fields = len(metrics.LINK_LEVELS) * 2
    for sock in scenario.sockets:
        member = sock.name in member_names
        add(len(metrics.PER_SOCKET), sock.name, member)
        for endpoint in sock.connect:
            stream = endpoint.transport != "inproc"
            add(len(metrics.PIPE_FIELDS) * 2 + (link_fields if stream else 0), sock.name, member)
    for send in scenario.sends:
        add(len(metrics.SENDER_FIELDS) + 2, send.name, send.name in member_names)
    for recv in scenario.recvs:
        add(2, recv.name, recv.name in member_names)
    aggregates = sum(len(metrics.PER_SOCKET if t.kind == "socket" else metrics.SENDER_FIELDS) * len(metrics.MEMBER_STATS) + 1
                     for t in scenario.templates if t.kind in ("socket", "send"))
    total = own + members + aggregates + 200  # pooled figures and warning counts
    return total, ("sweep.member_columns" if members > own else "socket")


def _blame(sweep: Sweep, base: dict[str, Any], overrides: Mapping[str, Any], coords: Sequence[tuple[str, Any]],
           error: ScenarioError) -> ScenarioError:
    """Turn a derived scenario's error into one naming the axis (and value) responsible."""
    for path, value in coords:
        single = {path: value}
        single.update({link: value for link, target in sweep.links.items() if target == path})
        try:
            _validate(scenario_spec.with_overrides(base, single), sweep)
        except ScenarioError as exc:
            return ScenarioError(f"axes.{path} = {_canonical(value)}", str(exc))
    point = ", ".join(f"{p} = {_canonical(v)}" for p, v in coords)
    return ScenarioError(f"point ({point})", str(error))


@dataclass(frozen=True)
class PlanSize:
    """How big a sweep's plan is, counted without expanding it."""

    points: int  # grid: the product of the axis lengths; random/lhs: ``points`` (before merging)
    runs: int
    factors: tuple[tuple[str, int], ...]  # (field, count) that multiply to ``runs``

    @property
    def field(self) -> str:
        """The field contributing the largest factor: the one to change first (on a tie,
        ``sweep.replications``, the cheapest to change)."""
        return max(reversed(self.factors), key=lambda item: item[1])[0]

    def describe(self) -> str:
        *shape, (_, replications) = self.factors
        grid = " x ".join(f"{n:,}" for _, n in shape)
        per = f"{grid} = {self.points:,} points" if len(shape) > 1 else f"{self.points:,} points"
        return f"{per} x {replications:,} replications = {self.runs:,} runs"


def _axis_field(axis: Axis) -> str:
    return f"axes.{axis.path}" + (".num" if axis.values is None else "")


def plan_size(sweep: Sweep) -> PlanSize:
    """Points and runs of ``sweep`` in time linear in its axes' lengths (nothing is expanded)."""
    factors: list[tuple[str, int]]
    if sweep.design == "grid":
        factors = [(_axis_field(axis), len(axis.grid_values())) for axis in sweep.axes]
    else:
        factors = [("sweep.points", sweep.n_points or 0)]
    points = math.prod(n for _, n in factors)
    factors.append(("sweep.replications", sweep.replications))
    return PlanSize(points=points, runs=points * sweep.replications, factors=tuple(factors))


def check_size(sweep: Sweep, max_runs: int | None = DEFAULT_MAX_RUNS) -> PlanSize:
    """``plan_size(sweep)``, or ``ScenarioError`` naming the field that makes it too big:
    more than ``MAX_POINTS`` points, or more than ``max_runs`` runs (None: no run limit)."""
    size = plan_size(sweep)
    if size.points > MAX_POINTS:
        shape = [item for item in size.factors if item[0] != "sweep.replications"]
        field_name = max(shape, key=lambda item: item[1])[0]
        raise ScenarioError(field_name, f"the plan has {size.points:,} points ({size.describe()}); "
                                        f"a sweep has at most {MAX_POINTS:,} points")
    if max_runs is not None and size.runs > max_runs:
        raise ScenarioError(size.field, f"{size.describe()}, more than the limit of {max_runs:,} runs; make the sweep smaller "
                                        "or raise the limit (zsim sweep --max-runs N, 0 for none)")
    return size


#: Points between two calls of ``expand``'s ``progress``.
PROGRESS_EVERY = 500


def expand(sweep: Sweep, *, max_runs: int | None = DEFAULT_MAX_RUNS, progress: Callable[[int, int], None] | None = None) -> Plan:
    """Every point of the sweep, each derived scenario validated, with stable ids.

    Raises ``ScenarioError`` naming the axis (or the ``[set]``/``[link]`` path) at fault,
    or the field that makes the plan bigger than ``max_runs`` runs (``check_size``; None:
    no limit), before anything is expanded. ``progress(points done, points)`` is called
    every ``PROGRESS_EVERY`` points (validating costs ~0.2 ms a point).
    """
    size = check_size(sweep, max_runs)
    base = scenario_spec.with_overrides(sweep.base, {})
    for path, value in sweep.fixed.items():
        try:
            scenario_spec.set_path(base, path, copy.deepcopy(value))
        except ScenarioError as exc:
            raise ScenarioError(f"set.{path}", exc.reason) from None
    try:
        _validate(base, sweep)
    except ScenarioError as exc:
        where = "base scenario" if not sweep.fixed else "base scenario with [set]"
        raise ScenarioError(f"{where} ({sweep.base_source})", str(exc)) from None

    points: list[Point] = []
    seen: set[str] = set()
    merged = 0
    for done, coords_values in enumerate(_coordinates(sweep)):
        if progress is not None and done and done % PROGRESS_EVERY == 0:
            progress(done, size.points)
        coords = tuple((axis.path, value) for axis, value in zip(sweep.axes, coords_values, strict=True))
        overrides: dict[str, Any] = {}
        for path, value in coords:
            overrides[path] = value
        for link, target in sweep.links.items():
            overrides[link] = overrides[target]
        try:
            derived = copy.deepcopy(base)
            for path, value in overrides.items():
                try:
                    scenario_spec.set_path(derived, path, copy.deepcopy(value))
                except ScenarioError as exc:
                    section = "link" if path in sweep.links else "axes"
                    raise ScenarioError(f"{section}.{path}", exc.reason) from None
            scenario = _validate(derived, sweep)
        except ScenarioError as exc:
            if exc.path.startswith(("axes.", "link.")):
                raise
            raise _blame(sweep, base, overrides, coords, exc) from None
        columns, driver = row_columns(scenario, sweep.member_columns)
        if columns > MAX_COLUMNS:
            where = ", ".join(f"{p} = {_canonical(v)}" for p, v in coords)
            hint = ("lower sweep.member_columns (templates above it are summarised by their aggregates)"
                    if driver == "sweep.member_columns" else "sweep fewer entities, or write them as a template (summarised)")
            raise ScenarioError(driver, f"a row of the point ({where}) would have about {columns:,} columns, more than the "
                                        f"limit of {MAX_COLUMNS:,}; {hint}")
        pid = point_id(derived, sweep)
        if pid in seen:
            merged += 1
            continue
        seen.add(pid)
        points.append(Point(index=len(points), id=pid, coords=coords, overrides=overrides))
    return Plan(sweep=sweep, points=tuple(points), base=base, merged=merged)


def parse(source: str | Path | Sweep | Mapping[str, Any]) -> Sweep:
    """A sweep file path, a dict or a ``Sweep``, as a ``Sweep``."""
    if isinstance(source, Sweep):
        return source
    if isinstance(source, Mapping):
        return from_dict(source)
    return load(source)


def plan(source: str | Path | Sweep | Mapping[str, Any], *, max_runs: int | None = DEFAULT_MAX_RUNS) -> Plan:
    """``expand(load(path))``, or of a parsed sweep or dict."""
    return expand(parse(source), max_runs=max_runs)


def column_kind(axis: Axis, plan: Plan | None = None) -> str:
    """The Parquet type of an axis column: int, float, bool, str, or json (anything else)."""
    if axis.values is None:
        return "int" if axis.integer else "float"
    values = axis.values
    if all(isinstance(v, bool) for v in values):
        return "bool"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "int"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return "float"
    if all(isinstance(v, str) for v in values):
        return "str"
    return "json"


def column_value(value: Any, kind: str) -> Any:
    if kind == "float":
        return float(value)
    if kind == "json":
        return _canonical(value)
    return value


# --------------------------------------------------------------------------------------
# Batching


def batches(tasks: Sequence[Task], slots: int, batch_size: int = 0, max_batch: int = 50) -> list[list[Task]]:
    """Cut ``tasks`` (kept in order, so a batch covers few points) into batches.

    ``batch_size > 0`` gives fixed-size batches. Otherwise the size is guided: each batch
    is about 1/(3 x slots) of what remains, at most ``max_batch``, so batches are big while
    there is a lot to do (per-task overhead is tens of milliseconds) and shrink towards one
    run at the end (no slot waits long for a straggler).
    """
    out: list[list[Task]] = []
    i, n = 0, len(tasks)
    slots = max(1, slots)
    while i < n:
        if batch_size > 0:
            size = batch_size
        else:
            size = max(1, min(max_batch, math.ceil((n - i) / (3 * slots))))
        out.append(list(tasks[i : i + size]))
        i += size
    return out
