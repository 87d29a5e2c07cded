"""The search file: a base scenario, the decision variables with their candidate values,
the cost of a design, the constraints, the confidence, the indifference zone and a budget.

Parsed once, at the edge, into a frozen ``Search``; every bad field is one
``ScenarioError`` naming it (``variables.socket.pub.options.sndhwm.step: must be > 0``).
The variables, ``[set]``, ``[link]`` and the constraints' metrics are checked by the sweep
planner (``zsim.sweep.plan``): a search's designs are the points of a grid sweep, and its
rows are that sweep's rows.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import expressions, fields, files, metrics
from ..errors import ScenarioError
from ..sweep import plan as sweep_plan

TOP_KEYS = {"search", "variables", "conditions", "set", "link", "constraint", "derived", "base"}
SEARCH_KEYS = {"name", "description", "base", "seed", "confidence", "indifference", "budget_runs", "initial_replications",
               "width", "cost", "run_timeout_s"}
VARIABLE_KEYS = {"values", "low", "high", "step", "monotone", "label"}
CONDITION_KEYS = {"values", "low", "high", "step", "label"}
CONSTRAINT_KEYS = {"metric", "below", "above", "indifference", "range"}
MONOTONE = {"decreasing": -1, "increasing": 1}
#: designs a search may have (its grid): the sweep planner checks every one before any run
MAX_DESIGNS = 100_000
DEFAULT_BUDGET_RUNS = 10_000
DEFAULT_INITIAL_REPLICATIONS = 10


@dataclass(frozen=True)
class Variable:
    path: str
    values: tuple[Any, ...]
    monotone: int  # 0: not declared; -1: every constraint's metric falls as it grows; +1: rises
    label: str


@dataclass(frozen=True)
class ConstraintSpec:
    metric: str
    sense: int  # +1: below; -1: above
    target: float
    indifference: float
    #: the least and most a run's value can be (a loss or drop fraction: 0 and 1; else the
    #: file's ``range``, or None: unknown)
    bounds: tuple[float, float] | None = None


@dataclass(frozen=True)
class Search:
    name: str
    description: str
    seed: int
    confidence: float
    budget_runs: int
    initial_replications: int
    width: int
    cost: str
    variables: tuple[Variable, ...]
    constraints: tuple[ConstraintSpec, ...]
    derived: Mapping[str, str]
    #: the grid sweep whose points are the designs (``zsim.sweep.plan.Sweep``); with
    #: conditions, its axes are the variables then the conditions
    sweep: sweep_plan.Sweep = field(repr=False)
    source: str = "<dict>"
    #: ``[conditions]``: axes the search answers once each (one answer per combination of
    #: their values), not chosen; empty: one answer
    conditions: tuple[Variable, ...] = ()


def load(path: str | Path) -> Search:
    """Read a search file and its base scenario (``search.base``, relative to the file)."""
    path = Path(path)
    raw = files.load_toml(path, "search file")
    head = raw.get("search")
    base_ref = head.get("base") if isinstance(head, Mapping) else None
    base: dict[str, Any] | None = None
    base_source, base_dir = str(path), str(path.resolve().parent)
    if isinstance(base_ref, str):
        base_path = Path(base_ref) if Path(base_ref).is_absolute() else path.resolve().parent / base_ref
        if not base_path.is_file():
            raise ScenarioError("search.base", f"no such scenario file {str(base_path)!r}")
        base = files.load_toml(base_path, "scenario file (search.base)")
        base_source, base_dir = str(base_path), str(base_path.resolve().parent)
    return from_dict(raw, base=base, base_dir=base_dir, base_source=base_source, source=str(path))


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ScenarioError(where, f"must be a number, got {fields.short(value)}")
    return float(value)


def _variable(path: str, spec: Any, table: str = "variables") -> tuple[Variable, dict[str, Any]]:
    where = f"{table}.{path}"
    if isinstance(spec, list):
        spec = {"values": spec}
    fields.check_keys(spec, VARIABLE_KEYS if table == "variables" else CONDITION_KEYS, where)
    if "values" in spec:
        for key in ("low", "high", "step"):
            if key in spec:
                raise ScenarioError(f"{where}.{key}", "not with values (a variable is a list of values or low, high and step)")
        values = spec["values"]
        if not isinstance(values, list) or not values:
            raise ScenarioError(f"{where}.values", f"must be a non-empty list, got {fields.short(values)}")
    else:
        for key in ("low", "high", "step"):
            if key not in spec:
                raise ScenarioError(f"{where}.{key}", "missing: a variable is a list of values, or low, high and step")
        low, high, step = (_number(spec[k], f"{where}.{k}") for k in ("low", "high", "step"))
        if step <= 0:
            raise ScenarioError(f"{where}.step", f"must be > 0, got {spec['step']!r}")
        if high < low:
            raise ScenarioError(f"{where}.high", f"must be >= low ({spec['low']!r}), got {spec['high']!r}")
        count = math.floor((high - low) / step + 1e-9) + 1
        if count > MAX_DESIGNS:
            raise ScenarioError(f"{where}.step", f"makes {count:,} values; a variable has at most {MAX_DESIGNS:,}")
        integral = all(isinstance(spec[k], int) for k in ("low", "high", "step"))
        values = [int(spec["low"]) + i * int(spec["step"]) if integral else low + i * step for i in range(count)]
    monotone = spec.get("monotone")
    if monotone is not None and monotone not in MONOTONE:
        raise ScenarioError(f"{where}.monotone", f"must be \"decreasing\" or \"increasing\" (how every constraint's metric "
                                                 f"moves as the variable grows), got {fields.short(monotone)}")
    if monotone is not None and not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise ScenarioError(f"{where}.monotone", "needs numeric values (it orders them)")
    label = spec.get("label", path)
    axis: dict[str, Any] = {"values": values, "label": label}
    return Variable(path, tuple(values), MONOTONE.get(monotone, 0) if monotone else 0, str(label)), axis


def _constraint(i: int, spec: Any, indifference: float | None) -> ConstraintSpec:
    where = f"constraint[{i}]"
    if not isinstance(spec, Mapping):
        raise ScenarioError(where, "must be a table ([[constraint]] with metric and below or above)")
    fields.check_keys(spec, CONSTRAINT_KEYS, where)
    if "metric" not in spec:
        raise ScenarioError(f"{where}.metric", "missing: the metric a run row has (e.g. socket.sub.loss_fraction)")
    if ("below" in spec) == ("above" in spec):
        raise ScenarioError(where, "needs exactly one of below or above (the target)")
    key = "below" if "below" in spec else "above"
    target = _number(spec[key], f"{where}.{key}")
    if "indifference" in spec:
        eps = _number(spec["indifference"], f"{where}.indifference")
    elif indifference is not None:
        eps = indifference
    else:
        raise ScenarioError(f"{where}.indifference", "missing: give search.indifference or this constraint's indifference "
                                                     "(the practical margin around its target, in its metric's unit)")
    if eps <= 0:
        raise ScenarioError(f"{where}.indifference", f"must be > 0 (a margin in the metric's unit), got {eps!r}")
    metric = str(spec["metric"])
    bounds = metrics.bounds(metric)
    if "range" in spec:
        given = spec["range"]
        if not (isinstance(given, list) and len(given) == 2):
            raise ScenarioError(f"{where}.range", f"must be [least, most]: the values a run's {metric} can take, got {fields.short(given)}")
        lo, hi = (_number(v, f"{where}.range") for v in given)
        if not lo < hi:
            raise ScenarioError(f"{where}.range", f"must be [least, most] with least < most, got {fields.short(given)}")
        if not lo <= target <= hi:
            raise ScenarioError(f"{where}.range", f"must contain the target {target:g}, got {fields.short(given)}")
        bounds = (lo, hi)
    return ConstraintSpec(metric, 1 if key == "below" else -1, target, eps, bounds)


def _renamed(exc: ScenarioError, conditions: Iterable[str] = ()) -> ScenarioError:
    """An error of the sweep planner, with the search file's names for the fields."""
    path = exc.path
    for condition in conditions:
        if path == f"axes.{condition}" or path.startswith(f"axes.{condition}."):
            return ScenarioError("conditions." + path[len("axes."):], exc.reason)
    for old, new in (("axes.", "variables."), ("report.derived.", "derived.")):
        if path.startswith(old):
            path = new + path[len(old):]
    if path.startswith("report.metrics["):
        index = int(path[len("report.metrics["):].split("]", 1)[0])
        path = f"constraint[{index}].metric"
    return ScenarioError(path, exc.reason)


def from_dict(raw: Mapping[str, Any], *, base: Mapping[str, Any] | None = None, base_dir: str = ".", base_source: str = "<dict>",
              source: str = "<dict>") -> Search:
    """Parse a search given as the TOML structure; ``base`` is the scenario ``search.base``
    names (read by ``load``), else the file's inline ``[base]``."""
    if not isinstance(raw, Mapping):
        raise ScenarioError("", "a search file must be a table")
    fields.check_keys(raw, TOP_KEYS, "")
    head = raw.get("search")
    if not isinstance(head, Mapping):
        raise ScenarioError("search", "missing [search] table (name, base, seed, confidence, indifference, budget_runs, cost)")
    fields.check_keys(head, SEARCH_KEYS, "search")
    name = head.get("name", Path(source).stem if source != "<dict>" else "search")
    if not isinstance(name, str) or not sweep_plan.NAME_PATTERN.match(name):
        raise ScenarioError("search.name", f"must be letters, digits, '_', '.', '-' (it names a directory), got {name!r}")
    description = head.get("description", "")
    if not isinstance(description, str):
        raise ScenarioError("search.description", "must be a string")
    seed = fields.integer(head.get("seed", 0), "search.seed", 0)
    confidence = _number(head.get("confidence", 0.95), "search.confidence")
    if not 0.5 <= confidence < 1:
        raise ScenarioError("search.confidence", f"must be at least 0.5 and below 1 (e.g. 0.95), got {head.get('confidence')!r}")
    indifference = _number(head["indifference"], "search.indifference") if "indifference" in head else None
    if indifference is not None and indifference <= 0:
        raise ScenarioError("search.indifference", f"must be > 0 (a margin in the constraints' unit), got {indifference!r}")
    budget = fields.integer(head.get("budget_runs", DEFAULT_BUDGET_RUNS), "search.budget_runs", 1)
    n0 = fields.integer(head.get("initial_replications", DEFAULT_INITIAL_REPLICATIONS), "search.initial_replications", 2, 10_000)
    width = fields.integer(head.get("width", 4), "search.width", 1, 10_000)

    table = raw.get("variables")
    if not isinstance(table, Mapping) or not table:
        raise ScenarioError("variables", "missing: at least one variable, e.g. \"socket.pub.options.sndhwm\" = { low = 1, high = 64, "
                                         "step = 1, monotone = \"decreasing\" }")
    pairs = list(_variables(table, ""))
    variables, axes = [], {}
    for path, spec in pairs:
        variable, axis = _variable(path, spec)
        variables.append(variable)
        axes[path] = axis
    conditions = []
    table = raw.get("conditions", {})
    if not isinstance(table, Mapping):
        raise ScenarioError("conditions", "must be a table of scenario paths with their values, e.g. "
                                          "\"send.pub.rate_per_s\" = [500, 1000] (one answer per combination)")
    for path, spec_ in _variables(table, "", "conditions"):
        if path in axes:
            raise ScenarioError(f"conditions.{path}", "is a variable too (a field is chosen by the search or fixed per condition)")
        condition, axis = _variable(path, spec_, "conditions")
        conditions.append(condition)
        axes[path] = axis
    designs = math.prod(len(v.values) for v in variables) * math.prod(len(c.values) for c in conditions)
    if designs > MAX_DESIGNS:
        raise ScenarioError("conditions" if conditions else "variables",
                            f"make {designs:,} designs; a search has at most {MAX_DESIGNS:,}")

    cost = head.get("cost")
    if not isinstance(cost, str) or not cost.strip():
        raise ScenarioError("search.cost", "missing: an expression over the variables, e.g. \"socket.pub.options.sndhwm * 1000\"")
    try:
        used = expressions.names(cost)
    except ValueError as exc:
        raise ScenarioError("search.cost", str(exc)) from None

    constraints_raw = raw.get("constraint")
    if not isinstance(constraints_raw, list) or not constraints_raw:
        raise ScenarioError("constraint", "missing: at least one [[constraint]] with metric and below (or above)")
    constraints = tuple(_constraint(i, c, indifference) for i, c in enumerate(constraints_raw))
    derived = raw.get("derived", {})
    if not isinstance(derived, Mapping):
        raise ScenarioError("derived", 'must be a table of name = "expression"')

    timeout = head.get("run_timeout_s", sweep_plan.DEFAULT_RUN_TIMEOUT_S)
    sweep_raw: dict[str, Any] = {
        "sweep": {"name": name, "description": description or f"zsim search {name}", "seed": seed, "replications": 1,
                  "run_timeout_s": timeout},
        "axes": axes,
        "report": {"metrics": [c.metric for c in constraints], "derived": dict(derived)},
    }
    for key in ("set", "link", "base"):
        if key in raw:
            sweep_raw[key] = copy.deepcopy(raw[key])
    try:
        if base is None and "base" not in raw:
            raise ScenarioError("search.base", "missing: the base scenario file (or an inline [base] table)")
        sweep = sweep_plan.from_dict(sweep_raw, base=base, base_dir=base_dir, base_source=base_source, source=source)
    except ScenarioError as exc:
        if exc.path == "sweep.run_timeout_s":
            raise ScenarioError("search.run_timeout_s", exc.reason) from None
        raise _renamed(exc, [c.path for c in conditions]) from None
    numeric = {v.path for v in (*variables, *conditions) if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v.values)}
    for name_used in used:
        target = sweep.links.get(name_used, name_used)
        if target not in axes:
            raise ScenarioError("search.cost", f"reads {name_used!r}, which is not a variable, a condition or a [link] "
                                               f"(variables: {', '.join(v.path for v in variables)})")
        if target not in numeric:
            raise ScenarioError("search.cost", f"reads {name_used!r}, whose values are not all numbers")
    return Search(name=name, description=description, seed=seed, confidence=confidence, budget_runs=budget,
                  initial_replications=n0, width=width, cost=cost, variables=tuple(variables), constraints=constraints,
                  derived=dict(derived), sweep=sweep, source=source, conditions=tuple(conditions))


def _variables(table: Mapping[str, Any], prefix: str, name: str = "variables") -> Iterator[tuple[str, Any]]:
    """``a.b.c = {...}`` is a nested table in TOML: the (dotted path, spec) pairs."""
    for key, value in table.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, list) or (isinstance(value, Mapping) and ("values" in value or "low" in value or "step" in value)):
            yield path, value
        elif isinstance(value, Mapping) and value:
            yield from _variables(value, path, name)
        else:
            raise ScenarioError(f"{name}.{path}", f"a {name[:-1]} is a list of values, {{ values = [...] }} or {{ low, high, step }}, "
                                                     f"got {fields.short(value)}")


def plan(search: Search) -> sweep_plan.Plan:
    """The designs: every point of the search's grid, each derived scenario checked before
    any run (``zsim.sweep.plan.expand``), errors named by the search file's fields."""
    try:
        return sweep_plan.expand(search.sweep, max_runs=None)
    except ScenarioError as exc:
        raise _renamed(exc, (c.path for c in search.conditions)) from None
