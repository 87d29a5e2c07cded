"""The designs of ``zsim compare``: which scenarios are compared, and what each is called.

Designs. Several scenario files (``zsim compare A.toml B.toml``); or variants of one file
(``--vary PATH=V1,V2``, any path a sweep axis takes, with ``--link`` and ``--set`` as in a
sweep file: the variants are planned and validated by ``zsim.sweep.plan``); or the points
of a sweep file (its axes, ``[set]``, ``[link]``, named values and ``[report.derived]``
metrics). Names: the file stem, ``path=value``, the sweep's ``label=name``, or ``--name``.

Every design is validated as a run would validate it before anything runs, so a bad path or
value is one ``ScenarioError`` naming the flag or the file's field.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import files
from .. import spec as scenario_spec
from ..errors import ScenarioError
from ..fields import short
from ..textsafe import one_line

#: Replications per design unless ``-n`` (or a sweep file) says otherwise.
DEFAULT_REPLICATIONS = 10
#: Designs one comparison may have (a comparison of more is a sweep: ``zsim sweep``).
MAX_DESIGNS = 32


@dataclass(frozen=True)
class Design:
    """One design: a whole scenario, where it came from, and its name in every table."""

    name: str
    raw: Mapping[str, Any] = field(repr=False)
    base_dir: str
    source: str
    #: what the design sets on top of its source (``--vary``/``--set``/``[link]``, a sweep's point)
    overrides: Mapping[str, Any] = field(default_factory=dict)
    digest: str = ""
    #: the paths that make it this design (a sweep point's axes; the --vary paths), for tables
    coords: Mapping[str, Any] = field(default_factory=dict)
    #: what is set in every design (``--set``, a sweep's ``[set]``; also in ``overrides``)
    fixed: Mapping[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """``pipeline.toml with socket.w5_in.open_at_s = 0.05 (and 7 linked paths); set
        scenario.until_s = 5``."""
        text = one_line(self.source)
        if self.coords:
            text += " with " + ", ".join(f"{p} = {_value_text(v)}" for p, v in self.coords.items())
        linked = len(set(self.overrides) - set(self.coords) - set(self.fixed))
        if linked:
            text += f" (and {linked} linked path{'s' if linked > 1 else ''})"
        if self.fixed:
            shown = list(self.fixed.items())
            text += "; set " + ", ".join(f"{p} = {_value_text(v)}" for p, v in shown[:3])
            text += f" and {len(shown) - 3} more" if len(shown) > 3 else ""
        return text


def toml_value(text: str) -> Any:
    """A command-line value as TOML reads it (``1000``, ``0.5``, ``true``, ``"x"``,
    ``{ dist = "exponential", mean_s = 0.001 }``), else the text itself."""
    try:
        return files.parse_toml(f"v = {text}", "value")["v"]
    except ScenarioError:
        return text.strip()


def parse_values(text: str, flag: str) -> list[Any]:
    """``V1,V2,...`` of ``--vary``: a TOML array without its brackets, so tables and
    strings with commas work (``{ dist = "uniform", low_s = 0.001, high_s = 0.01 },
    0.005``); bare words are strings."""
    try:
        values = files.parse_toml(f"v = [{text}]", "values")["v"]
    except ScenarioError:
        values = [toml_value(part) for part in text.split(",")]
    if not isinstance(values, list) or not values or any(v == "" for v in values):
        raise ScenarioError(flag, f"needs a comma-separated list of values after '=', got {short(text)}")
    return values


def assignment(text: str, flag: str, example: str) -> tuple[str, str]:
    path, sep, value = text.partition("=")
    if not sep or not path.strip() or not value.strip():
        raise ScenarioError(flag, f"expected {example}, got {short(text)}")
    return path.strip(), value.strip()


def _check_design_count(count: int, where: str) -> None:
    if count > MAX_DESIGNS:
        raise ScenarioError(where, f"gives {count} designs; a comparison has at most {MAX_DESIGNS} (a larger study is a sweep: "
                                   "zsim sweep)")


def _validated(raw: Mapping[str, Any], base_dir: str, source: str) -> str:
    """Validate a scenario (and its profile) as a run would; its digest."""
    from .. import profile as profile_module

    scenario = scenario_spec.from_dict(copy.deepcopy(dict(raw)), base_dir=base_dir, source=source)
    profile_module.load(scenario.profile, base_dir)
    return scenario.digest


def unique_names(names: list[str]) -> list[str]:
    """Every design its own name, shown as one line (control characters escaped): the
    second ``a`` becomes ``a (2)``, or ``a (3)`` when another design is called ``a (2)``."""
    names = [one_line(name) for name in names]
    taken = set(names)
    used: set[str] = set()
    out = []
    for name in names:
        if name in used:
            k = 2
            while f"{name} ({k})" in taken or f"{name} ({k})" in used:
                k += 1
            name = f"{name} ({k})"
        used.add(name)
        out.append(name)
    return out


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value, sort_keys=True, separators=(", ", " = ")).replace('"', "")


#: A design's source: a scenario or sweep file, or (from Python) a dict with its TOML structure.
Source = str | Path | Mapping[str, Any]


@dataclass(frozen=True)
class _Loaded:
    raw: dict[str, Any]
    base_dir: str
    shown: str  # in tables and errors: the file as given, or ``<dict N>``
    stem: str  # the design's default name


def _load_source(source: Source, index: int, what: str) -> _Loaded:
    """A file as ``files.load_toml`` reads it (relative paths in it are relative to the
    file), or a copy of a dict (relative paths relative to the working directory, as
    ``zsim.run(dict)`` takes them); named by the file's stem or the dict's scenario name."""
    if isinstance(source, Mapping):
        raw = copy.deepcopy(dict(source))
        head = raw.get("scenario")
        name = head.get("name") if isinstance(head, Mapping) else None
        return _Loaded(raw, str(Path.cwd()), f"<dict {index + 1}>", str(name) if name else f"design{index + 1}")
    return _Loaded(files.load_toml(source, what), str(Path(source).resolve().parent), files.shown_path(source), Path(source).stem)


def _from_files(sources: Sequence[Source], sets: Sequence[tuple[str, Any]]) -> list[Design]:
    loaded = []
    for index, source in enumerate(sources):
        found = _load_source(source, index, "scenario file")
        raw, where = found.raw, found.shown
        if "sweep" in raw:
            raise ScenarioError(where, "is a sweep file; give a sweep file alone (its points are the designs)")
        for set_path, value in sets:
            try:
                scenario_spec.set_path(raw, set_path, copy.deepcopy(value))
            except ScenarioError as exc:
                raise ScenarioError(f"--set {set_path}", f"{where}: {exc.reason}") from None
        try:
            digest = _validated(raw, found.base_dir, where)
        except ScenarioError as exc:
            raise ScenarioError(f"{where}: {exc.path}" if exc.path else where, exc.reason) from None
        loaded.append((found, digest))
    names = unique_names([found.stem for found, _ in loaded])
    return [Design(name=name, raw=found.raw, base_dir=found.base_dir, source=found.shown, overrides=dict(sets), digest=digest,
                   fixed=dict(sets))
            for name, (found, digest) in zip(names, loaded, strict=True)]


def _flag_error(exc: ScenarioError) -> ScenarioError:
    """A sweep planner's error in the words of the command line (``axes.x`` -> ``--vary x``)."""
    for section, flag in (("axes.", "--vary "), ("link.", "--link "), ("set.", "--set ")):
        if exc.path.startswith(section):
            return ScenarioError(flag + exc.path[len(section):], exc.reason)
    return exc


def _from_plan(plan: Any, name_of: Callable[[Any], str]) -> list[Design]:
    from ..sweep.plan import _canonical

    sweep = plan.sweep
    fixed = json.loads(_canonical(dict(sweep.fixed)))
    designs = []
    for point in plan.points:
        raw = plan.scenario_raw(point.id)
        designs.append(Design(name=name_of(point), raw=raw, base_dir=sweep.base_dir, source=files.shown_path(sweep.base_source),
                              overrides={**fixed, **json.loads(_canonical(dict(point.overrides)))}, fixed=fixed,
                              digest=scenario_spec.from_dict(copy.deepcopy(raw), base_dir=sweep.base_dir).digest,
                              coords=json.loads(_canonical(dict(point.coords)))))
    names = unique_names([d.name for d in designs])
    return [dataclasses.replace(d, name=n) for d, n in zip(designs, names, strict=True)]


def _from_variants(source: Source, varies: Sequence[tuple[str, list[Any]]], links: Sequence[tuple[str, str]],
                   sets: Sequence[tuple[str, Any]], replications: int) -> list[Design]:
    from ..sweep import plan as sweep_plan

    found = _load_source(source, 0, "scenario file")
    raw, path = found.raw, found.shown
    if "sweep" in raw:
        raise ScenarioError("--vary", f"{path} is a sweep file: its axes are the designs; --vary varies a scenario file")
    count = math.prod(len(values) for _, values in varies)
    _check_design_count(count, "--vary")
    table: dict[str, Any] = {
        "sweep": {"name": "compare", "replications": replications, "seed": 0},
        "axes": {p: values for p, values in varies},
        "link": dict(links),
        "set": dict(sets),
    }
    for p, _ in varies:
        if sum(1 for q, _ in varies if q == p) > 1:
            raise ScenarioError(f"--vary {p}", "is given twice; give all its values in one --vary PATH=V1,V2")
    try:
        sweep = sweep_plan.from_dict(table, base=raw, base_dir=found.base_dir, base_source=path, source=path)
        plan = sweep_plan.expand(sweep, max_runs=None)
    except ScenarioError as exc:
        raise _flag_error(exc) from None
    if len(plan.points) < 2:
        raise ScenarioError("--vary", "gives one design; a comparison needs at least two values")
    return _from_plan(plan, lambda point: ", ".join(f"{p}={_value_text(v)}" for p, v in point.coords))


def _from_sweep(source: Source, replications: int | None, seed: int | None) -> tuple[list[Design], Any]:
    from ..sweep import plan as sweep_plan

    sweep = sweep_plan.parse(source)
    path = "<dict 1>" if isinstance(source, Mapping) else files.shown_path(source)
    changes: dict[str, Any] = {"common_random_numbers": True}
    if replications is not None:
        changes["replications"] = replications
    if seed is not None:
        changes["seed"] = seed
    sweep = dataclasses.replace(sweep, **changes)
    size = sweep_plan.check_size(sweep, None)
    _check_design_count(size.points, f"{path} (its points)")
    plan = sweep_plan.expand(sweep, max_runs=None)

    def name_of(point: Any) -> str:
        parts = []
        for axis, (_, value) in zip(sweep.axes, point.coords, strict=True):
            if axis.names is not None and axis.values is not None:
                index = [sweep_plan._canonical(v) for v in axis.values].index(sweep_plan._canonical(value))
                parts.append(f"{axis.label}={axis.names[index]}")
            else:
                parts.append(f"{axis.label}={_value_text(value)}")
        return ", ".join(parts)

    return _from_plan(plan, name_of), sweep


@dataclass(frozen=True)
class DesignSet:
    designs: list[Design]
    replications: int
    seed: int
    derived: Mapping[str, str] = field(default_factory=dict)
    report_metrics: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def make_designs(sources: Sequence[Source], *, vary: Sequence[str] = (), link: Sequence[str] = (), set_: Sequence[str] = (),
                 names: Sequence[str] = (), replications: int | None = None, seed: int | None = None) -> DesignSet:
    """The designs of a comparison from the command line's words, every scenario validated
    (a bad path or value is one ``ScenarioError`` naming the flag or the file's field)."""
    if not sources:
        raise ScenarioError("DESIGN", "name two or more scenario files, one with --vary PATH=V1,V2, or a sweep file")
    varies = []
    for text in vary:
        path, values = assignment(text, "--vary", "PATH=V1,V2,... (e.g. socket.pub.options.sndhwm=1000,100000)")
        scenario_spec.check_path(path, "--vary")
        varies.append((path, parse_values(values, f"--vary {path}")))
    links = [assignment(text, "--link", "PATH=VARIED_PATH (the path takes the value of the --vary path)") for text in link]
    for path, varied in links:
        scenario_spec.check_path(path, "--link")
        scenario_spec.check_path(varied, "--link")
    sets = []
    for text in set_:
        path, value = assignment(text, "--set", "PATH=VALUE (e.g. scenario.until_s=5)")
        scenario_spec.check_path(path, "--set")
        sets.append((path, toml_value(value)))
    if replications is not None and replications < 1:
        raise ScenarioError("--replications", f"must be >= 1, got {replications}")
    first_found = _load_source(sources[0], 0, "scenario or sweep file")
    first, shown = first_found.raw, first_found.shown
    derived: Mapping[str, str] = {}
    report_metrics: tuple[str, ...] = ()
    notes: list[str] = []
    n = replications if replications is not None else DEFAULT_REPLICATIONS
    root = seed if seed is not None else 0
    if "sweep" in first:
        if len(sources) > 1:
            raise ScenarioError(shown, "is a sweep file: its points are the designs; give it alone")
        for flag, given in (("--vary", vary), ("--link", link), ("--set", set_)):
            if given:
                raise ScenarioError(flag, f"{shown} is a sweep file; put the change in its [axes], [link] or [set]")
        designs, sweep = _from_sweep(sources[0], replications, seed)
        n, root = sweep.replications, sweep.seed
        report = sweep.report or {}
        derived = dict(report.get("derived", {}))
        report_metrics = tuple(report.get("metrics", ()))
        if sweep.raw.get("sweep", {}).get("common_random_numbers") is False:
            notes.append(f"{shown} sets common_random_numbers = false; a comparison always pairs replications")
    elif vary:
        if len(sources) > 1:
            raise ScenarioError("--vary", f"varies one scenario file; got {len(sources)} files")
        designs = _from_variants(sources[0], varies, links, sets, n)
    else:
        if link:
            raise ScenarioError("--link", "links a path to a --vary path; there is no --vary")
        if len(sources) < 2:
            raise ScenarioError("DESIGN", f"one design ({shown}); a comparison needs two or more scenario files, or "
                                          "--vary PATH=V1,V2")
        _check_design_count(len(sources), "DESIGN")
        designs = _from_files(sources, sets)
    seeded = sorted({d.source for d in designs if isinstance(d.raw.get("scenario"), Mapping) and "seed" in d.raw["scenario"]})
    if seeded:
        notes.append(f"{', '.join(seeded)} set{'s' if len(seeded) == 1 else ''} scenario.seed; a comparison does not use it: "
                     f"replication r of every design runs with the r-th seed from the root seed ({root}, --seed), so that "
                     "every design sees the same random numbers")
    if names:
        if len(names) != len(designs):
            raise ScenarioError("--name", f"give one name per design: {len(designs)} designs, {len(names)} names")
        from ..limits import check_text

        names = [one_line(check_text(name, "--name")) for name in names]
        if len(set(names)) != len(names) or not all(name.strip() for name in names):
            raise ScenarioError("--name", f"the names must be different and non-empty, got {list(names)}")
        designs = [dataclasses.replace(d, name=name) for d, name in zip(designs, names, strict=True)]
    return DesignSet(designs=designs, replications=n, seed=root, derived=derived, report_metrics=report_metrics, notes=tuple(notes))
