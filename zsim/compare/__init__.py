"""``zsim compare``: two or more designs side by side, paired, with a verdict per metric.

A designer's question is often not "what does this topology do?" but "which of these two
does it better?": four workers or eight, an XPUB SNDHWM of 1000 or 100,000. This is JMT's
what-if analysis for zsim: every design runs the same replications, and each metric gets
every design's mean with its 95 % interval, each design's difference from the first (the
baseline) with its interval, and a verdict.

Designs. Several scenario files (``zsim compare A.toml B.toml``); or variants of one file
(``--vary PATH=V1,V2``, any path a sweep axis takes, with ``--link`` and ``--set`` as in a
sweep file: the variants are planned and validated by ``zsim.sweep.plan``); or the points
of a sweep file (its axes, ``[set]``, ``[link]``, named values and ``[report.derived]``
metrics). Names: the file stem, ``path=value``, the sweep's ``label=name``, or ``--name``.

Common random numbers. Replication ``r`` of every design runs with the same seed,
``plan.seed_for(root seed, "", r)`` (the seed a sweep with common random numbers gives
replication ``r`` at every point), and zsim gives every random source its own stream keyed
by its name (``zsim.build``), so the same arrivals and service times meet each design and
a difference between designs is not blurred by different draws.

Statistics. A design's mean gets a Student-t interval, mean +- t(0.975, n-1) sd / sqrt(n),
over its runs that finished with a value (NaN: a socket that received nothing). A
difference is paired: ``d_r = x_r(design) - x_r(baseline)`` over the replications where
both have a value, and gets the same t interval. The verdict:

* ``identical``: the two designs give the same number in every replication;
* ``better`` / ``worse`` when the difference's interval excludes 0, in the direction the
  metric prefers (``PREFERENCES``); ``higher`` / ``lower`` for a metric that prefers
  neither; a difference that is the same in every replication (a deterministic model) has
  an interval of zero width and counts as excluding 0;
* ``no detectable difference`` when the interval contains 0;
* ``too few replications`` with fewer than two pairs.

A metric that is the same number in every run of every design has no variance: it is shown
as ``identical``, never with an interval of zero width that looks like a measurement.

Warnings. A run that warned about what a metric measures (``overloaded``,
``backlog_at_end``, ``latency_not_settled``, ``loss_not_settled`` of the socket the metric
describes; ``rate_not_achieved`` for a sender's metric; any of them for a pooled or
derived metric) marks that design's numbers for the metric with ``!`` and the warning, and
its verdict with "runs warned": an overloaded consumer's drops or latency grow with the
run's length, so they are an artefact of the horizon, not an answer.

Selection. Without ``--metric``: the metrics whose difference from the baseline is beyond
noise (an interval that excludes 0) in some design, ranked by effect size: the largest
relative change of the mean, ``|mean(d) - mean(baseline)| / max(|mean(d)|,
|mean(baseline)|)``, then the standardised paired difference ``|mean| / sd``; one metric of
each entity and kind first (sockets, senders, pooled and derived before pipes and links);
metrics with the same numbers under two names once; ``NOT_DEFAULT`` and old aliases never;
at most ``--max-metrics`` (12), with lines saying how many more differ beyond noise, only
within noise, or not at all. When nothing differs beyond noise, the metrics that differ
within noise are shown (their verdict is the answer). ``--metric NAME`` (also a glob:
``'socket.slow.*'``) names them instead.

Runs go through the sweep engines (``zsim.sweep.execute.make_engine``: serial, local
process pool, Spark) and ``zsim.sweep.worker.run_batch``, so every engine gives the same
rows, and the same seed gives the same output.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import fnmatch
import functools
import json
import math
import re
import statistics
import sys
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeGuard

from .. import __version__, files, trust
from .. import spec as scenario_spec
from ..errors import EnvironmentFault, ScenarioError, ZsimError
from ..stats import fdr_adjust, t975, t_quantile, t_test_p, zero_upper
from ..textsafe import Code, md, md_code, md_table, md_url, one_line, terminal
from ..units import time_unit

#: Replications per design unless ``-n`` (or a sweep file) says otherwise.
DEFAULT_REPLICATIONS = 10
#: Metrics shown without ``--metric`` (the rest are counted in one line).
DEFAULT_MAX_METRICS = 12
#: Designs one comparison may have (a comparison of more is a sweep: ``zsim sweep``).
MAX_DESIGNS = 32
#: Runs one comparison may have unless ``--max-runs`` says otherwise.
DEFAULT_MAX_RUNS = 10_000
#: The false discovery rate the verdicts keep over every difference a comparison tests.
FDR = 0.05
#: The smallest relative change of a mean that counts as a difference unless
#: ``--min-effect`` says otherwise: 5 % of the larger mean (a reply pipe's mean depth of
#: 0.00450 against 0.00466 messages is detectable with common random numbers, and no answer).
DEFAULT_MIN_EFFECT = 0.05

#: The direction each metric family prefers, decided from the metric's name: the first
#: rule whose pattern is found in the metric's last name part (``socket.slow.dropped`` ->
#: ``dropped``; a derived metric's whole name) decides. None: no preferred direction (the
#: verdict says "higher" or "lower"). ``--prefer METRIC=lower|higher|none`` overrides.
PREFERENCES: tuple[tuple[str, str | None, str], ...] = (
    # what the designer sets or the run's length decides, not a quality
    (r"requested_rate|offered_utilisation|^copies$|^sent$|first_recv|last_recv|finished_at|warmup_end|sim_time|^wall_s$"
     r"|^seed_independent$|^random_streams_drawn$|^sending_s$|cwnd|max_sndbuf",
     None, "load, inputs and times of events"),
    (r"drop|loss|lost|discard|unroutable", "lower", "losses and drops"),
    (r"depth|queued|backlog|_messages$|_bytes$", "lower", "queue depth and backlog"),  # before latency: p99_depth is a depth
    (r"latency|rtt|(^|_)p\d|_wait", "lower", "latency"),
    (r"blocked|again|window_limited|sndbuf_limited", "lower", "blocked time, refused sends, a window or send buffer holding TCP back"),
    (r"warning|overloaded|not_settled|starts_after|no_subscription|matches_nothing|rate_not_achieved", "lower",
     "warnings"),
    (r"deliver|received|forwarded|achieved|throughput|goodput|_rate_per_s$", "higher", "delivered and throughput"),
)
#: Run warnings that question a metric's number (``zsim.checks``); others (a socket that
#: starts after the horizon, a subscription matching nothing) are listed per design only.
QUESTIONING = ("overloaded", "backlog_at_end", "latency_not_settled", "loss_not_settled", "rate_not_achieved")
#: Per-socket 0/1 flags of the questioning warnings in a row (``zsim.results.SOCKET_FLAGS``).
SOCKET_FLAGS = ("overloaded", "backlog_at_end", "latency_not_settled", "loss_not_settled")
#: Row columns that are not metrics.
NOT_METRICS = {"point", "replication", "seed", "ok", "error", "scenario_digest", "zsim_version", "zsim_code"}
#: Metrics never chosen by default (they can still be named): a run's cost and its horizon,
#: and whether it drew random values (``seed_independent``: a property of the model, not a quality).
NOT_DEFAULT = {"wall_s", "sim_time_s", "seed_independent", "random_streams_drawn"}
#: Verdicts that say the designs differ.
DIFFERENT = ("better", "worse", "higher", "lower")

_GLOB = re.compile(r"[*?\[]")


# --------------------------------------------------------------------------------------
# Designs


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
        raise ScenarioError(flag, f"needs a comma-separated list of values after '=', got {text!r}")
    return values


def assignment(text: str, flag: str, example: str) -> tuple[str, str]:
    path, sep, value = text.partition("=")
    if not sep or not path.strip() or not value.strip():
        raise ScenarioError(flag, f"expected {example}, got {text!r}")
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


def _unique_names(names: list[str]) -> list[str]:
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
    names = _unique_names([found.stem for found, _ in loaded])
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
    names = _unique_names([d.name for d in designs])
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
        varies.append((path, parse_values(values, f"--vary {path}")))
    links = [assignment(text, "--link", "PATH=VARIED_PATH (the path takes the value of the --vary path)") for text in link]
    sets = []
    for text in set_:
        path, value = assignment(text, "--set", "PATH=VALUE (e.g. scenario.until_s=5)")
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


# --------------------------------------------------------------------------------------
# Running (through the sweep engines)


def seeds(root_seed: int, replications: int) -> list[int]:
    """The seed of each replication, the same for every design (common random numbers)."""
    from ..sweep.plan import seed_for

    return [seed_for(root_seed, "", rep, True) for rep in range(replications)]


def check_apps(designs: Sequence[Design], allow: trust.AppPermission, stream: IO[str] | None = None) -> dict[str, Any]:
    """The code the designs' ``[[app]]`` tables name, checked against ``allow`` before any
    run (``ScenarioError`` naming the design's file and the field if not allowed), each file
    announced on ``stream``: what the workers may run (``AppPermission.to_payload``)."""
    scenarios = ((d.source, scenario_spec.from_dict(copy.deepcopy(dict(d.raw)), base_dir=d.base_dir, source=d.source))
                 for d in designs)
    codes = trust.check_scenarios(scenarios, allow)
    if stream is not None:
        for line in trust.announcements(codes):
            stream.write(line + "\n")
    return allow.to_payload(codes)


def payload(designs: Sequence[Design], run_timeout_s: float | None, apps: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What a sweep worker needs to run any run of the comparison: each design is a point
    ``d<i>`` carrying its whole scenario and folder (``zsim.sweep.worker``); ``apps``, the
    code the workers may run (``check_apps``; None: none)."""
    from ..sweep.plan import _digest

    body: dict[str, Any] = {
        "base": {},
        "base_dir": ".",
        "source": "<compare>",
        "points": {f"d{i}": {"overrides": {}, "coords": [], "scenario": copy.deepcopy(dict(d.raw)), "base_dir": d.base_dir,
                             "source": d.source}
                   for i, d in enumerate(designs)},
        "axes": [],
        "run_timeout_s": run_timeout_s,
    }
    if apps is not None:
        body["apps"] = dict(apps)
    body["digest"] = _digest(body)
    return body


def run_designs(designs: Sequence[Design], replications: int, root_seed: int, *, engine: str = "spark", jobs: int | None = None,
                master: str | None = None, conf: Mapping[str, str] | None = None, run_timeout_s: float | None = None,
                stream: IO[str] | None = None, apps: Mapping[str, Any] | None = None, start: int = 0) -> list[list[dict[str, Any]]]:
    """Every design's rows, ``rows[design][replication - start]`` for replications ``start``
    .. ``replications - 1``, run on ``engine`` (``serial``: in this process; ``local``:
    worker processes; ``spark``). Replication r has the same seed whatever ``start`` is, so
    more replications extend a comparison exactly. A batch an engine loses (a worker
    killed) is run once more; lost again, it is an ``EnvironmentFault``."""
    from ..sweep.execute import ENGINES, make_engine
    from ..sweep.plan import DEFAULT_RUN_TIMEOUT_S, Task, batches

    if engine not in ENGINES:
        raise ScenarioError("--engine", f"must be one of {', '.join(ENGINES)}, got {engine!r}")
    if master is not None and engine != "spark":
        raise ScenarioError("--master", "is for --engine spark")
    if engine == "spark":
        from ..sweep.spark import preflight

        if master is None and jobs is not None:
            master = f"local[{jobs}]"
        preflight(master)
    timeout = DEFAULT_RUN_TIMEOUT_S if run_timeout_s is None else (run_timeout_s or None)
    body = payload(designs, timeout, apps)
    run_seeds = seeds(root_seed, replications)
    todo = [Task(f"d{i}", rep, run_seeds[rep]) for i in range(len(designs)) for rep in range(start, replications)]
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    say = (lambda text: (stream.write(terminal(text)), stream.flush())) if stream is not None else (lambda text: None)
    tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
    started = time.perf_counter()
    runner = make_engine(engine, body, master=master, workers=jobs, conf=conf, app_name="zsim compare")
    with runner:
        which = f"replications {start}..{replications - 1}" if start else f"{replications} replications"
        say(f"[compare] {len(designs)} designs x {which} = {len(todo)} runs on {runner.describe()}\n")
        for attempt in range(2):
            lost: list[Task] = []
            for completion in runner.run(batches(todo, runner.slots)):
                if completion is None:
                    continue
                if completion.error is not None or completion.rows is None:
                    lost.extend(completion.batch)
                    error = f"{type(completion.error).__name__}: {completion.error}".splitlines()[0][:300]
                    say(f"\n[compare] a batch of {len(completion.batch)} runs was lost ({error})" +
                        ("; running it again\n" if attempt == 0 else "\n"))
                    continue
                for row in completion.rows:
                    rows[(row["point"], row["replication"])] = row
                if tty:
                    say(f"\r\033[K[compare] runs {len(rows)}/{len(designs) * (replications - start)}")
            if not lost:
                break
            todo = lost
        else:
            raise EnvironmentFault(f"--engine {engine}", f"{len(todo)} runs were lost twice (a worker died each time); "
                                                         "run again, or with --engine serial to see why")
    if tty:
        say("\n")
    say(f"[compare] {len(rows)} runs in {time.perf_counter() - started:.1f} s\n")
    return [[rows[(f"d{i}", rep)] for rep in range(start, replications)] for i in range(len(designs))]


# --------------------------------------------------------------------------------------
# Statistics


@dataclass(frozen=True)
class Sample:
    """A metric over one design's replications (or over paired differences)."""

    n: int  # values there are (finite)
    missing: int  # replications without a value (failed runs, NaN)
    mean: float | None
    sd: float | None
    low: float | None  # 95 % interval; None below two values
    high: float | None
    constant: bool  # every value the same (no interval to speak of)

    @property
    def half_width(self) -> float | None:
        return None if self.low is None or self.high is None else (self.high - self.low) / 2


def _finite(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def describe(values: Sequence[float | None]) -> Sample:
    """Mean, standard deviation and Student-t 95 % interval of the finite ``values``."""
    finite = [float(v) for v in values if _finite(v)]
    n = len(finite)
    if n == 0:
        return Sample(0, len(values), None, None, None, None, False)
    mean = statistics.fmean(finite)
    constant = min(finite) == max(finite)
    if constant:
        mean = finite[0]
    if n < 2:
        return Sample(n, len(values) - n, mean, None, None, None, constant)
    sd = 0.0 if constant else statistics.stdev(finite)
    half = t975(n - 1) * sd / math.sqrt(n)
    return Sample(n, len(values) - n, mean, sd, mean - half, mean + half, constant)


@dataclass(frozen=True)
class Difference:
    """``design - baseline``, paired by replication."""

    sample: Sample
    identical: bool  # the same number in every replication of both (every difference 0)
    verdict: str
    #: the paired t test's two-sided p-value, and the Benjamini-Hochberg q-value over every
    #: difference the comparison tested (``control``); None when not tested
    p: float | None = None
    q: float | None = None
    #: |change of the mean| / the larger |mean| (1 when one design has no value)
    relative: float | None = None


def verdict(sample: Sample, identical: bool, prefers: str | None) -> str:
    """``identical``, ``better``/``worse`` (or ``higher``/``lower`` without a preferred
    direction), ``no detectable difference``, ``too few replications`` or ``no paired
    values`` (no replication where both have one; ``paired`` says ``no values`` when
    neither design has a value in any replication)."""
    if identical:
        return "identical"
    if sample.n == 0:
        return "no paired values"
    if sample.n < 2 or sample.mean is None or sample.low is None or sample.high is None:
        return "too few replications"
    if sample.low <= 0.0 <= sample.high:
        return "no detectable difference"
    return _direction_verdict(sample.mean, prefers)


def paired(baseline: Sequence[float | None], other: Sequence[float | None], prefers: str | None) -> Difference:
    """The paired difference ``other[r] - baseline[r]`` over the replications where both
    have a value, its interval and its verdict."""
    if len(baseline) != len(other):
        raise ValueError("paired samples need the same replications")
    diffs: list[float | None] = [float(o) - float(b) if _finite(b) and _finite(o) else None
                                 for b, o in zip(baseline, other, strict=True)]
    sample = describe(diffs)
    if not any(_finite(v) for v in (*baseline, *other)):
        return Difference(sample, False, "no values")
    presence_same = all(_finite(b) == _finite(o) for b, o in zip(baseline, other, strict=True))
    identical = presence_same and all(d == 0.0 for d in diffs if d is not None)
    return Difference(sample, identical, verdict(sample, identical, prefers))


def relative_change(base: float | None, other: float | None) -> float:
    """|other - base| / max(|other|, |base|): 1 when one of them has no value, 0 when both are 0."""
    if base is None or other is None:
        return 1.0
    scale = max(abs(base), abs(other))
    return abs(other - base) / scale if scale > 0 else 0.0


def _direction_verdict(mean: float, prefers: str | None) -> str:
    direction = "higher" if mean > 0 else "lower"
    if prefers is None:
        return direction
    return "better" if direction == prefers else "worse"


@dataclass
class Control:
    """How the verdicts were decided over the whole comparison."""

    #: differences tested (every design against the baseline, every metric considered)
    tests: int = 0
    #: the false discovery rate the verdicts keep (None: not controlled, scipy missing)
    fdr: float | None = FDR
    #: the smallest relative change of the mean that counts as a difference
    min_effect: float = DEFAULT_MIN_EFFECT


def control(results: Sequence[MetricResult], min_effect: float = 0.0, fdr: float = FDR) -> Control:
    """Decide every verdict of ``results`` over the comparison as one family: a difference is
    beyond noise when its Benjamini-Hochberg q-value (over every difference tested, every
    metric and design against the baseline) is at most ``fdr``, and it counts (``better`` /
    ``worse``) when the mean also changed by at least ``min_effect`` of the larger mean;
    a difference beyond noise but smaller is ``negligible``. Without scipy the verdicts stay
    the per-comparison 95 % ones (``Control.fdr`` None) and only ``min_effect`` applies.
    Edits the metrics' ``differences`` in place."""
    tested: list[tuple[MetricResult, int, float | None]] = []
    for metric in results:
        for index, difference in enumerate(metric.differences):
            if difference is None or difference.identical or difference.verdict in ("no values", "no paired values",
                                                                                   "too few replications"):
                continue
            d = difference.sample
            assert d.mean is not None and d.sd is not None
            tested.append((metric, index, t_test_p(d.mean, d.sd, d.n)))
    p_values = [p for _, _, p in tested if p is not None]
    controlled = len(p_values) == len(tested)
    q_values: list[float | None] = list(fdr_adjust(p_values)) if controlled else [None] * len(tested)
    for (metric, index, p), q in zip(tested, q_values, strict=True):
        difference = metric.differences[index]
        assert difference is not None and difference.sample.mean is not None
        relative = relative_change(metric.samples[0].mean, metric.samples[index].mean)
        beyond = q <= fdr if q is not None else difference.verdict in DIFFERENT
        if not beyond:
            verdict_text = "no detectable difference"
        elif relative < min_effect:
            verdict_text = "negligible"
        else:
            verdict_text = _direction_verdict(difference.sample.mean, metric.prefers)
        metric.differences[index] = dataclasses.replace(difference, p=p, q=q, relative=relative, verdict=verdict_text)
    return Control(tests=len(tested), fdr=fdr if controlled else None, min_effect=min_effect)


@dataclass(frozen=True)
class Best:
    """The best design for one metric, every other design tested against it."""

    design: int
    ties: list[int]  # not distinguishable from it (or by less than the practical effect)
    worse: list[tuple[int, float]]  # (design, mean paired difference from the best)
    comparisons: int  # the Bonferroni family: the other designs with values
    warned: bool  # the best design's runs warned about what the metric measures


def best_design(metric: MetricResult, min_effect: float = 0.0, alpha: float = FDR) -> Best | None:
    """The design with the best mean of ``metric`` (in the direction it prefers; among the
    designs whose runs did not warn about it, when there is one), and each other design
    tested against it: paired differences over the replications, simultaneous Student-t
    intervals at ``1 - alpha`` over the ``k - 1`` comparisons (Bonferroni); a design whose
    interval contains 0, or whose mean is within ``min_effect`` of the best's, ties with it.
    None for a metric without a preferred direction, fewer than three designs with values,
    or one number everywhere."""
    if metric.prefers is None or metric.identical:
        return None
    with_values = [i for i, s in enumerate(metric.samples) if s.mean is not None]
    if len(with_values) < 3:
        return None
    quiet = [i for i in with_values if not metric.warned[i]] or with_values
    sign = 1.0 if metric.prefers == "lower" else -1.0
    best = min(quiet, key=lambda i: (sign * float(metric.samples[i].mean), i))  # type: ignore[arg-type]
    others = [i for i in with_values if i != best]
    level = 1 - alpha / (2 * len(others))
    ties, worse = [], []
    for other in others:
        d = describe([float(o) - float(b) if _finite(b) and _finite(o) else None
                      for b, o in zip(metric.values[best], metric.values[other], strict=True)])
        if d.mean is None or d.sd is None or d.n < 2:
            ties.append(other)
            continue
        half = t_quantile(level, d.n - 1) * d.sd / math.sqrt(d.n)
        excludes = (d.mean - half > 0) if sign > 0 else (d.mean + half < 0)
        if excludes and relative_change(metric.samples[best].mean, metric.samples[other].mean) >= min_effect:
            worse.append((other, d.mean))
        else:
            ties.append(other)
    return Best(best, ties, worse, len(others), bool(metric.warned[best]))


def preference(metric: str, overrides: Mapping[str, str | None] | None = None) -> tuple[str | None, str]:
    """(the direction ``metric`` prefers: ``lower``, ``higher`` or None; its family)."""
    if overrides and metric in overrides:
        return overrides[metric], "--prefer"
    if metric == "warnings" or metric.startswith("warning."):  # a run that warned less is better, whatever the code
        return "lower", "warnings"
    if metric.startswith(("rtt.", "e2e.")):  # request -> reply, source -> sink: times, and how many
        counted = metric.endswith((".count", "_count"))  # how many (over a template: sum_count, max_count, ...)
        return (None, "load, inputs and times of events") if counted else ("lower", "latency")
    entity_metric = metric.startswith(("socket.", "sender.", "pipe.", "link.", "network.", "warning."))
    field_name = metric.rsplit(".", 1)[-1] if entity_metric else metric
    for pattern, direction, family in PREFERENCES:
        if re.search(pattern, field_name):
            return direction, family
    return None, "no preferred direction"


# --------------------------------------------------------------------------------------
# Comparing


@dataclass
class DesignResult:
    design: Design
    runs: int
    failed: int
    errors: list[str]
    #: warning code -> runs that raised it
    warnings: dict[str, int]
    #: socket -> {flag: runs} (the per-socket questioning warnings)
    socket_flags: dict[str, dict[str, int]]


@dataclass
class MetricResult:
    name: str
    label: str
    prefers: str | None
    family: str
    values: list[list[float | None]]  # [design][replication]
    samples: list[Sample]
    differences: list[Difference | None]  # None for the baseline
    warned: list[dict[str, int]]  # per design: questioning warning -> runs
    identical: bool  # one number in every run of every design
    #: other metrics with the same number as this one in every run (shown once, under this name)
    same_as: list[str] = field(default_factory=list)
    #: the best design and every other tested against it (``best_design``; shown metrics only)
    best: Best | None = None

    def key(self) -> tuple[tuple[float | None, ...], ...]:
        """Its numbers, run by run (two metrics with the same key say the same thing)."""
        return tuple(tuple(v if _finite(v) else None for v in values) for values in self.values)

    @property
    def detectable(self) -> bool:
        return any(d is not None and d.verdict in DIFFERENT for d in self.differences)

    @property
    def differs(self) -> bool:
        return any(d is not None and not d.identical and d.verdict != "no values" for d in self.differences)

    def effect(self) -> tuple[float, float]:
        """(largest relative change of the mean against the baseline, largest |mean| / sd of
        the paired differences): the ranking of the default selection."""
        relative, standard = 0.0, 0.0
        base = self.samples[0].mean
        for sample, difference in zip(self.samples[1:], self.differences[1:], strict=True):
            if difference is None or difference.identical:
                continue
            relative = max(relative, relative_change(base, sample.mean))  # 1 for a value in one design only
            if base is None or sample.mean is None:
                continue
            d = difference.sample
            if d.mean is not None and d.sd is not None:
                standard = max(standard, math.inf if d.sd == 0 and d.mean != 0 else (abs(d.mean) / d.sd if d.sd else 0.0))
        return relative, standard


@dataclass
class Selection:
    named: bool
    differ: int = 0
    detectable: int = 0
    identical: int = 0
    more: list[str] = field(default_factory=list)  # metrics of the shown kind not shown (beyond the cap)
    noise: list[str] = field(default_factory=list)  # metrics that differ only within noise, not shown


@dataclass
class Comparison:
    designs: list[DesignResult]
    replications: int
    seed: int
    seeds: list[int]
    metrics: list[MetricResult]
    selection: Selection
    notes: list[str] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    control: Control = field(default_factory=Control)

    def text(self) -> str:
        """What ``zsim compare`` prints."""
        return format_text(self)

    def to_json(self) -> dict[str, Any]:
        """What ``zsim compare --json`` prints, as a dict."""
        return to_json(self)

    def to_frame(self) -> Any:
        """The shown metrics as a pandas DataFrame, one row per metric and design (index
        ``metric``, ``design``): ``baseline`` (the first design), ``runs`` (with a value),
        ``mean``, ``ci_low``, ``ci_high`` (95 %, Student-t), the paired difference from the
        baseline ``diff_mean``, ``diff_ci_low``, ``diff_ci_high``, its ``verdict`` (empty
        for the baseline), ``prefers`` (lower, higher or empty) and ``warned`` (the warnings
        that question this design's number: code -> runs that raised it; ``{}`` if none). Numbers in SI units, as in ``to_json``."""
        from ..results import _pandas

        pd = _pandas()
        records = []
        for metric in self.metrics:
            for index, result in enumerate(self.designs):
                sample = metric.samples[index]
                difference = metric.differences[index]
                diff = difference.sample if difference is not None else None
                records.append({
                    "metric": metric.name, "design": result.design.name, "baseline": index == 0, "runs": sample.n,
                    "mean": _json_number(sample.mean), "ci_low": _json_number(sample.low), "ci_high": _json_number(sample.high),
                    "diff_mean": _json_number(diff.mean) if diff is not None else None,
                    "diff_ci_low": _json_number(diff.low) if diff is not None else None,
                    "diff_ci_high": _json_number(diff.high) if diff is not None else None,
                    "verdict": difference.verdict if difference is not None else "", "prefers": metric.prefers or "",
                    "warned": dict(metric.warned[index])})
        frame = pd.DataFrame.from_records(records)
        for column in ("mean", "ci_low", "ci_high", "diff_mean", "diff_ci_low", "diff_ci_high"):
            frame[column] = frame[column].astype(float)
        return frame.set_index(["metric", "design"]) if records else frame


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    return None


def _add_derived(rows: list[list[dict[str, Any]]], derived: Mapping[str, str]) -> None:
    """``[report.derived]`` of a sweep file: one more number per run."""
    if not derived:
        return
    from .. import expressions
    from ..sweep.plan import check_derived

    order = check_derived(derived, None)
    parsed = {name: expressions.parse(derived[name]) for name in order}
    columns = {key for design_rows in rows for row in design_rows for key in row}
    for design_rows in rows:
        for row in design_rows:
            if not row.get("ok"):
                continue

            def lookup(key: str, row: dict[str, Any] = row) -> float | None:
                # as zsim report's table: a metric other runs have is NaN here (max() and min() skip it)
                return _number(row[key]) if key in row else (math.nan if key in columns else None)

            for name, expression in parsed.items():
                value = expression.evaluate(lookup)
                row[name] = math.nan if value is None else float(value)


def _design_result(design: Design, rows: Sequence[Mapping[str, Any]]) -> DesignResult:
    failed = [row for row in rows if not row.get("ok")]
    warnings: dict[str, int] = {}
    flags: dict[str, dict[str, int]] = {}
    for row in rows:
        if not row.get("ok"):
            continue
        for key, value in row.items():
            if key.startswith("warning.") and _number(value):
                code = key[len("warning."):]
                warnings[code] = warnings.get(code, 0) + 1
            elif key.startswith("socket.") and _number(value):
                socket, flag = key[len("socket."):].rsplit(".", 1)
                if flag.startswith("max_") and f"socket.{socket}.members" in row:
                    flag = flag[len("max_"):]  # a template: some member warned (zsim.results._member_aggregates)
                if flag in SOCKET_FLAGS:
                    counts = flags.setdefault(socket, {})
                    counts[flag] = counts.get(flag, 0) + 1
    errors = [f"replication {row['replication']} (seed {row['seed']}): {str(row.get('error')).splitlines()[0][:300]}"
              for row in failed]
    return DesignResult(design, len(rows), len(failed), errors, dict(sorted(warnings.items())), flags)


def _metric_warnings(metric: str, result: DesignResult) -> dict[str, int]:
    """The questioning warnings of a design's runs that concern ``metric`` (warning -> runs)."""
    if metric.startswith("socket."):
        socket = metric[len("socket."):].rsplit(".", 1)[0]
        return {f"{flag} ({socket})": runs for flag, runs in result.socket_flags.get(socket, {}).items()}
    if metric.startswith("sender."):
        runs = result.warnings.get("rate_not_achieved", 0)
        return {"rate_not_achieved": runs} if runs else {}
    if metric.startswith("warning") or metric in NOT_DEFAULT:
        return {}
    return {code: runs for code, runs in result.warnings.items() if code in QUESTIONING}


def _metric_names(rows: Sequence[Sequence[Mapping[str, Any]]]) -> list[str]:
    names: dict[str, None] = {}
    for design_rows in rows:
        for row in design_rows:
            if row.get("ok"):
                for key, value in row.items():
                    if key not in NOT_METRICS and _number(value) is not None:
                        names[key] = None
    return sorted(names)


def _close(name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if close:
        return "did you mean " + ", ".join(repr(c) for c in close) + "?"
    prefixes = sorted({k.split(".", 2)[0] + "." + k.split(".", 2)[1] + ".*" for k in known if k.count(".") >= 2})[:8]
    return "metrics are pooled names (delivered, pooled_loss_fraction, ...) and " + ", ".join(prefixes)


def resolve_metrics(wanted: Sequence[str], known: Sequence[str]) -> list[str]:
    """Metric names and globs, in the order given, each once; an unknown name or a glob that
    matches nothing is a ``ScenarioError`` naming close matches."""
    out: dict[str, None] = {}
    known_set = set(known)
    for name in wanted:
        if name in known_set:
            out[name] = None
        elif _GLOB.search(name):
            matches = [k for k in known if fnmatch.fnmatchcase(k, name)]
            if not matches:
                raise ScenarioError(f"--metric {name}", f"matches no metric; {_close(name.replace('*', ''), known)}")
            out.update(dict.fromkeys(matches))
        else:
            raise ScenarioError(f"--metric {name}", f"unknown metric; {_close(name, known)}")
    return list(out)


#: the sections of metric names ``known_metrics`` lists in full before any run
_LISTED_SECTIONS = ("socket", "sender", "warning")


def check_metric_names(wanted: Sequence[str], designs: DesignSet) -> None:
    """Before any run: every ``--metric`` must be a metric some design's runs can have
    (``zsim.sweep.plan.known_metrics``) or a derived one; pipe and link names, made by the
    model, and globs over them are checked after the runs."""
    from ..sweep.plan import known_metrics

    sets = [known_metrics(d.raw) for d in designs.designs]
    listed = sorted({name for known in sets if known is not None for name in known} | set(designs.derived))
    for name in wanted:
        if "." in name and name.split(".", 1)[0] not in _LISTED_SECTIONS or any(known is None for known in sets):
            continue  # made by the model (pipe., link., machine., thread., ...): checked against the runs' rows
        if _GLOB.search(name):
            if not any(fnmatch.fnmatchcase(k, name) for k in listed):
                raise ScenarioError(f"--metric {name}", f"matches no metric; {_close(name.replace('*', ''), listed)}")
        elif name not in designs.derived and not any(known is not None and name in known for known in sets):
            raise ScenarioError(f"--metric {name}", f"unknown metric; {_close(name, listed)}")


def metric_result(name: str, rows: Sequence[Sequence[Mapping[str, Any]]], results: Sequence[DesignResult],
                  prefer: Mapping[str, str | None] | None = None) -> MetricResult:
    """One metric compared: every design's sample, every design's paired difference from the
    first, verdicts and the warnings that concern it."""
    from ..sweep.report import metric_label

    prefers, family = preference(name, prefer)
    label = metric_label(name)
    if label.startswith("copies meant for it (copies for "):
        label = "copies meant for " + label[len("copies meant for it (copies for "):-1]
    steady = re.fullmatch(r"socket\.(.+)\.steady_latency_(\w+?)_s", name)
    if steady:
        label = f"steady-state {steady.group(2).replace('_', '.')} latency of {steady.group(1)} (after MSER-5's warm-up)"
    elif name.startswith(("pipe.", "link.")) and name.count(".") >= 2:
        kind, rest = name.split(".", 1)
        entity, field_name = rest.rsplit(".", 1)
        what = {"dropped": "copies dropped at"}.get(field_name, f"{field_name.replace('_', ' ')} of")
        label = f"{what} {kind} {entity}"
    elif name.startswith("network.") and name.count(".") >= 3:  # network.<link>.<a>-><b>.<field>
        link_name, rest = name[len("network."):].split(".", 1)
        direction, field_name = rest.rsplit(".", 1)
        label = f"{field_name.replace('_', ' ')} of link {link_name} {direction}"
    values = [[_number(row.get(name)) if row.get("ok") else None for row in design_rows] for design_rows in rows]
    samples = [describe(v) for v in values]
    from ..sweep.report import metric_kind

    if metric_kind(name) == "fraction":  # a share lies in [0, 1]: so does its interval (differences may be negative)
        samples = [s if s.low is None or s.high is None else dataclasses.replace(s, low=max(0.0, s.low), high=min(1.0, s.high))
                   for s in samples]
    differences: list[Difference | None] = [None] + [paired(values[0], v, prefers) for v in values[1:]]
    finite = [v for design_values in values for v in design_values if _finite(v)]
    presence = {tuple(_finite(v) for v in design_values) for design_values in values}
    identical = bool(finite) and min(finite) == max(finite) and len(presence) == 1
    warned = [_metric_warnings(name, result) for result in results]
    return MetricResult(name, label, prefers, family, values, samples, differences, warned, identical)


def _select(all_results: list[MetricResult], wanted: Sequence[str], max_metrics: int,
            candidates: Sequence[str] = ()) -> tuple[list[MetricResult], Selection]:
    from ..results import POOLED_ALIASES

    by_name = {m.name: m for m in all_results}
    if wanted:
        return [by_name[name] for name in wanted], Selection(named=True)
    pool = [by_name[c] for c in candidates if c in by_name] if candidates else [
        m for m in all_results if not _not_default(m.name) and m.name not in POOLED_ALIASES]
    differ = [m for m in pool if m.differs]
    # pooled figures of a one-receiver scenario, a steady latency without warm-up: the same
    # numbers under two names are one metric, shown under the name ranked first
    ranked: list[MetricResult] = []
    first: dict[Any, MetricResult] = {}
    for metric in sorted(differ, key=lambda m: (not m.detectable, *(-x for x in m.effect()), _name_rank(m.name), m.name)):
        leader = first.setdefault(metric.key(), metric)
        if leader is metric:
            ranked.append(metric)
        else:
            leader.same_as.append(metric.name)
    ranked = _spread(ranked)
    detectable = [m for m in ranked if m.detectable]
    # beyond noise only; when nothing is, the closest calls (their verdict is the answer)
    shown = detectable if detectable else ranked
    selection = Selection(named=False, differ=len(ranked), detectable=len(detectable),
                          identical=sum(1 for m in pool if not m.differs), more=[m.name for m in shown[max_metrics:]],
                          noise=[m.name for m in ranked if not m.detectable] if detectable else [])
    return shown[:max_metrics], selection


def _with_derived(design_set: DesignSet, derive: Sequence[str]) -> DesignSet:
    """``--derive NAME=EXPR`` added to the designs' derived metrics, checked as a sweep
    file's ``[report.derived]`` (names, expressions, no cycle) before any run."""
    from ..sweep.plan import check_derived

    derived = dict(design_set.derived)
    for text in derive:
        name, expression = assignment(text, "--derive", "NAME=EXPR, e.g. loss=socket.sub.dropped/socket.sub.copies")
        if name in derived:
            raise ScenarioError(f"--derive {name}", "is defined twice")
        derived[name] = expression
    try:
        reads = check_derived(derived, None)
    except ScenarioError as exc:
        raise ScenarioError(exc.path.replace("report.derived.", "--derive "), exc.reason) from None
    extended = dataclasses.replace(design_set, derived=derived)
    for name, used in reads.items():
        try:
            check_metric_names(used, extended)
        except ScenarioError as exc:
            raise ScenarioError(f"--derive {name}", f"reads {exc.path.removeprefix('--metric ')}: {exc.reason}") from None
    return extended


def _not_default(name: str) -> bool:
    """A run's cost, its horizon, and MSER-5's warm-up end (a diagnostic of the steady-state
    figures): never chosen by default (they can be named)."""
    return name in NOT_DEFAULT or name.endswith(".warmup_end_s")


def _group(metric: MetricResult) -> tuple[str, str]:
    """(entity, family): ``socket.fast#`` and ``latency`` for ``socket.fast1.latency_p99_s``
    (entities that differ only by a number, like seven fast subscribers, are one group)."""
    if metric.name.startswith(("socket.", "sender.", "pipe.", "link.", "network.")):
        entity = re.sub(r"\d+", "#", metric.name.rsplit(".", 1)[0])
    else:
        entity = "pooled" if metric.name in _pooled_names() else metric.name
    return entity, metric.family


def _pooled_names() -> set[str]:
    from ..results import POOLED_ALIASES

    return {"sent", "copies", "delivered", "forwarded", "dropped", "discarded", "lost_on_close", "queued_at_end", "warnings",
            *POOLED_ALIASES, *POOLED_ALIASES.values()}


def _spread(ranked: list[MetricResult]) -> list[MetricResult]:
    """The ranking with variety: among the detectable differences (then among the others),
    the first metric of each (entity, family) first, in ranked order, those of sockets,
    senders, pooled and derived metrics before the internals (pipes, links, network links); then the rest.
    So the top of the list shows losses, latency, depth and throughput of each kind of
    entity rather than six latency percentiles of one socket or the depth of eight pipes."""
    out: list[MetricResult] = []
    for detectable in (True, False):
        tier = [m for m in ranked if m.detectable == detectable]
        tier.sort(key=lambda m: m.name.startswith(("pipe.", "link.", "network.")))  # stable: ranked order within each
        groups: dict[tuple[str, str], list[MetricResult]] = {}
        for metric in tier:
            groups.setdefault(_group(metric), []).append(metric)
        # a group's leader: its best-ranked plain figure (a steady-state latency only if it has no plain one)
        chosen = {id(min(members, key=lambda m: _name_rank(m.name))) for members in groups.values()}
        leaders = [m for m in tier if id(m) in chosen]
        out += leaders + [m for m in tier if m not in leaders]
    return out


def _name_rank(name: str) -> int:
    """Among metrics with the same numbers, the one that names its entity comes first, then
    the plain (not steady-state) figure."""
    return (0 if name.startswith(("socket.", "sender.", "pipe.", "link.", "network.")) else 2) + (1 if "steady_" in name else 0)


@dataclass(frozen=True)
class Precision:
    """``--precision METRIC=HALF_WIDTH``: replications are added until the 95 % interval of
    METRIC is at most +- HALF_WIDTH for every design's mean and for every paired difference
    from the baseline (what the verdicts rest on). HALF_WIDTH is in the metric's unit (SI:
    seconds, a fraction 0..1), or relative with ``%`` (``5%``: 5 % of the larger mean)."""

    metric: str
    half_width: float
    relative: bool

    @classmethod
    def parse(cls, text: str) -> Precision:
        name, value = assignment(text, "--precision", "METRIC=HALF_WIDTH (e.g. socket.sub.loss_fraction=0.001 or "
                                                      "socket.sub.latency_p99_s=5%)")
        relative = value.endswith("%")
        try:
            number = float(value[:-1] if relative else value)
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and number > 0) or (relative and number >= 100):
            raise ScenarioError(f"--precision {name}", f"the half-width must be a number > 0 (or a percentage below 100 %), "
                                                       f"got {value!r}")
        return cls(name, number / 100 if relative else number, relative)

    def text(self) -> str:
        return f"{self.metric} +- {self.half_width:.0%} of its mean" if self.relative else f"{self.metric} +- {self.half_width:g}"

    def widest(self, rows: Sequence[Sequence[Mapping[str, Any]]]) -> tuple[float, float, int]:
        """The widest half-width now (means and paired differences), the target it is held
        to, and the values it rests on (the fewest over the designs)."""
        values = [[_number(row.get(self.metric)) if row.get("ok") else None for row in design_rows] for design_rows in rows]
        samples = [describe(v) for v in values] + [paired(values[0], v, None).sample for v in values[1:]]
        widths = [math.inf if s.half_width is None else s.half_width for s in samples]
        target = self.half_width
        if self.relative:
            means = [abs(s.mean) for s in samples[:len(values)] if s.mean is not None]
            target = self.half_width * max(means, default=0.0)
        return max(widths), target, min(s.n for s in samples[:len(values)])


def _to_precision(design_set: DesignSet, rows: list[list[dict[str, Any]]], targets: Sequence[Precision], max_runs: int | None,
                  stream: IO[str] | None, run_more: Callable[..., list[list[dict[str, Any]]]]) -> DesignSet:
    """Add replications (``rows`` extended in place) until every ``targets`` is met: each
    round asks for ``n (width / target)^2`` replications (the half-width falls as 1 /
    sqrt(n)), at least 1.2 n and at most 4 n, within ``max_runs``. The stopping rule is
    sequential, so the 95 % is approximate for the first rounds' few values (Chow and
    Robbins 1965: exact as the target shrinks). Notes say what was reached."""
    n = design_set.replications
    designs = len(design_set.designs)
    cap = max_runs // designs if max_runs else None
    notes = list(design_set.notes)
    say = (lambda text: (stream.write(terminal(text) + "\n"), stream.flush())) if stream is not None else (lambda text: None)
    while True:
        wanted = n
        for target in targets:
            width, goal, _ = target.widest(rows)
            if width > goal:
                need = n * 4 if not (math.isfinite(width) and goal > 0) else math.ceil(n * (width / goal) ** 2)
                wanted = max(wanted, min(4 * n, max(need, math.ceil(1.2 * n))))
        if wanted == n:
            notes.append(f"--precision: met at {n} replications (" + "; ".join(
                f"{t.text()}: widest +- {t.widest(rows)[0]:.4g}" for t in targets) + ")")
            break
        if cap is not None and wanted > cap:
            wanted = cap
        if wanted <= n:
            notes.append(f"--precision: NOT met at {n} replications, the most --max-runs allows ({designs} designs): " + "; ".join(
                f"{t.text()}: widest +- {t.widest(rows)[0]:.4g}" for t in targets))
            break
        say(f"[compare] --precision: {n} replications are not enough; running {wanted}")
        more = run_more(wanted, start=n)
        _add_derived(more, design_set.derived)
        for design_rows, extra in zip(rows, more, strict=True):
            design_rows.extend(extra)
        n = wanted
    return dataclasses.replace(design_set, replications=n, notes=tuple(notes))


def compare(sources: Sequence[Source], *, vary: Sequence[str] = (), link: Sequence[str] = (), set_: Sequence[str] = (),
            names: Sequence[str] = (), replications: int | None = None, seed: int | None = None, metrics: Sequence[str] = (),
            prefer: Sequence[str] = (), max_metrics: int = DEFAULT_MAX_METRICS, engine: str = "spark", jobs: int | None = None,
            master: str | None = None, conf: Mapping[str, str] | None = None, run_timeout_s: float | None = None,
            max_runs: int | None = DEFAULT_MAX_RUNS, report: str | Path | None = None,
            stream: IO[str] | None = sys.stderr, allow_apps: bool | trust.AppPermission = False,
            min_effect: float = DEFAULT_MIN_EFFECT, derive: Sequence[str] = (), precision: Sequence[str] = ()) -> Comparison:
    """Run every design over the same replications (common random numbers) and compare them
    metric by metric; with ``report``, write the Markdown page, JSON and one figure per
    metric there. What ``zsim compare`` calls. Bad input: ``ScenarioError`` before any run.
    ``allow_apps``: run the code the designs' ``[[app]]`` tables name (``zsim.trust``).
    ``min_effect``: the smallest relative change of a mean that counts (``control``);
    ``derive``: ``NAME=EXPR`` metrics computed from each run's row, as a sweep file's
    ``[report.derived]``; ``precision``: ``METRIC=HALF_WIDTH`` targets (``Precision``):
    replications are added until every one is met or ``max_runs`` stops them."""
    targets = [Precision.parse(text) for text in precision]
    prefers: dict[str, str | None] = {}
    for text in prefer:
        name, direction = assignment(text, "--prefer", "METRIC=lower|higher|none")
        if direction not in ("lower", "higher", "none"):
            raise ScenarioError(f"--prefer {name}", f"must be lower, higher or none, got {direction!r}")
        prefers[name] = None if direction == "none" else direction
    if max_metrics < 1:
        raise ScenarioError("--max-metrics", f"must be >= 1, got {max_metrics}")
    if not (isinstance(min_effect, (int, float)) and 0 <= min_effect < 1):
        raise ScenarioError("--min-effect", f"must be a fraction from 0 to below 1 (0.05: 5 %), got {min_effect!r}")
    design_set = make_designs(sources, vary=vary, link=link, set_=set_, names=names, replications=replications, seed=seed)
    if derive:
        design_set = _with_derived(design_set, derive)
    designs = design_set.designs
    runs = len(designs) * design_set.replications
    if max_runs and runs > max_runs:
        raise ScenarioError("--replications", f"{len(designs)} designs x {design_set.replications} replications = {runs:,} runs, "
                                              f"more than the limit of {max_runs:,} (--max-runs N, 0 for none)")
    check_metric_names(list(metrics) + list(prefers) + [t.metric for t in targets], design_set)
    apps = check_apps(designs, trust.permission(allow_apps), stream)
    if report is not None:
        files.prepare_output_dir(report, "the report folder (--report)")
    for note in design_set.notes:
        if stream is not None:
            stream.write(terminal(f"[compare] note: {note}") + "\n")
    rows = run_designs(designs, design_set.replications, design_set.seed, engine=engine, jobs=jobs, master=master, conf=conf,
                       run_timeout_s=run_timeout_s, stream=stream, apps=apps)
    _add_derived(rows, design_set.derived)
    if targets:
        design_set = _to_precision(design_set, rows, targets, max_runs, stream, functools.partial(
            run_designs, designs, root_seed=design_set.seed, engine=engine, jobs=jobs, master=master, conf=conf,
            run_timeout_s=run_timeout_s, stream=stream, apps=apps))
    results = [_design_result(d, r) for d, r in zip(designs, rows, strict=True)]
    for result in results:
        if result.failed == result.runs:
            raise ScenarioError(f"design {result.design.name!r}", f"all {result.runs} runs failed; the first: "
                                                                   f"{result.errors[0]}")
    known = _metric_names(rows)
    wanted = resolve_metrics(metrics, known)
    for name in prefers:
        if name not in known:
            raise ScenarioError(f"--prefer {name}", f"no run has this metric; {_close(name, known)}")
    if wanted:
        all_results = [metric_result(name, rows, results, prefers) for name in wanted]
    else:
        all_results = [metric_result(name, rows, results, prefers) for name in known]
    candidates = [m for m in design_set.report_metrics if m in known]
    # the family: what was named, or every metric the default selection may show (a run's
    # wall time is noise that differs from one call to the next: the same seed must give the
    # same verdicts)
    decided = control(all_results if wanted else [m for m in all_results if not _not_default(m.name)], min_effect)
    shown, selection = _select(all_results, wanted, max_metrics, candidates)
    for metric in shown:
        metric.best = best_design(metric, min_effect)
    comparison = Comparison(results, design_set.replications, design_set.seed, seeds(design_set.seed, design_set.replications),
                            shown, selection, list(design_set.notes), control=decided)
    if report is not None:
        comparison.written = write_report(comparison, report)
    return comparison


# --------------------------------------------------------------------------------------
# Output


@dataclass(frozen=True)
class Unit:
    """How one metric's numbers are shown: ``value * scale`` and the unit's text."""

    scale: float
    unit: str  # after a value ("ms", "%", "/s", "KB", "")
    diff_unit: str  # after a difference ("pp" for a fraction's percentage points)
    diff_scale: float = 0.0  # a difference's scale (0: ``scale``): times of differences get their own unit


def unit_for(metric: str, values: Sequence[float], differences: Sequence[float] = ()) -> Unit:
    """Units of a metric's values and differences: ``zsim.units`` for times (differences
    in their own unit: 2.8 s against -73 ms), % and percentage points for fractions."""
    from ..sweep.report import metric_kind

    kind = metric_kind(metric)
    if kind == "fraction":
        return Unit(100.0, "%", "pp")
    if kind == "time":
        scale, unit = time_unit(values)
        diff_scale, diff_unit = time_unit(differences) if differences else (scale, unit)
        return Unit(scale, unit, diff_unit, diff_scale)
    if kind == "rate":
        return Unit(1.0, "/s", "/s")
    if kind == "bytes":
        largest = max((abs(v) for v in values if _finite(v)), default=0.0)
        for unit, factor in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
            if largest >= factor:
                return Unit(1.0 / factor, unit, unit)
        return Unit(1.0, "B", "B")
    return Unit(1.0, "", "")


def _num(value: float, signed: bool = False) -> str:
    if value == 0:
        return "0"
    size = abs(value)
    if size >= 1000:
        text = f"{value:,.0f}"
    else:
        text = f"{value:.4g}"
        if "e" in text:
            text = f"{value:.3e}"
    return f"+{text}" if signed and value > 0 else text


def _with_unit(value: float | None, unit: Unit, signed: bool = False, diff: bool = False) -> str:
    if value is None:
        return "-"
    suffix = unit.diff_unit if diff else unit.unit
    text = _num(value * (unit.diff_scale or unit.scale if diff else unit.scale), signed)
    if not suffix:
        return text
    return f"{text}{suffix}" if suffix == "/s" else f"{text} {suffix}"


def _interval(sample: Sample, unit: Unit, diff: bool = False) -> str:
    if sample.mean is None:
        return ""
    if sample.constant:
        return "same in every replication" if diff else "same in every run"
    if sample.low is None or sample.high is None:
        return f"({sample.n} value{'s' if sample.n != 1 else ''}: no interval)"
    return f"{_with_unit(sample.low, unit, diff, diff)} .. {_with_unit(sample.high, unit, diff, diff)}"


def _warned_text(warned: Mapping[str, int], runs: int) -> str:
    """``! overloaded (slow), backlog_at_end (slow): 10/10 runs``."""
    if not warned:
        return ""
    counts = set(warned.values())
    if len(counts) == 1:
        return f"! {', '.join(warned)}: {counts.pop()}/{runs} runs"
    return "! " + ", ".join(f"{code} {count}/{runs}" for code, count in warned.items())


def _metric_unit(metric: MetricResult) -> Unit:
    values: list[float] = []
    for sample in metric.samples:
        values += [v for v in (sample.mean, sample.low, sample.high) if v is not None]
    differences: list[float] = []
    for difference in metric.differences:
        if difference is not None and not difference.identical:
            differences += [abs(v) for v in (difference.sample.mean, difference.sample.low, difference.sample.high) if v is not None]
    return unit_for(metric.name, values, differences)


def _prefers_text(metric: MetricResult) -> str:
    if metric.prefers is None:
        return "no preferred direction"
    return f"{metric.prefers} is better ({metric.family})"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)).rstrip()

    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]


def metric_rows(metric: MetricResult, comparison: Comparison) -> tuple[list[str], list[list[str]], list[bool]]:
    """One metric as a table: per design its mean, interval, difference from the baseline,
    verdict and warnings."""
    unit = _metric_unit(metric)
    headers = ["design", "mean", "95 % interval", "minus baseline (paired)", "95 % interval", "verdict", "warnings"]
    rows = []
    for index, result in enumerate(comparison.designs):
        sample = metric.samples[index]
        difference = metric.differences[index]
        mean = _with_unit(sample.mean, unit)
        if sample.missing and sample.mean is not None:
            mean += f" (n={sample.n})"
        if difference is None:
            cells = ["baseline", "", ""]
        else:
            d = difference.sample
            cells = ["identical" if difference.identical else _with_unit(d.mean, unit, signed=True, diff=True),
                     "" if difference.identical else _interval(d, unit, diff=True), difference.verdict]
            if difference.verdict in DIFFERENT and (metric.warned[0] or metric.warned[index]):
                cells[2] += ", but runs warned (!)"
        interval = _interval(sample, unit)
        if metric.family == "losses and drops" and sample.constant and sample.mean == 0:
            # no run had any: not an interval of zero width, the zero-event bound over runs
            interval = f"none in {sample.n} runs: some in up to {100 * zero_upper(sample.n):.0f} % of runs"
        rows.append([result.design.name, mean, interval, *cells, _warned_text(metric.warned[index], result.runs)])
    right = [False, True, False, True, False, False, False]
    if not any(r[-1] for r in rows):
        headers, rows, right = headers[:-1], [r[:-1] for r in rows], right[:-1]
    return headers, rows, right


def _design_lines(comparison: Comparison) -> list[str]:
    lines = []
    rows = []
    for index, result in enumerate(comparison.designs):
        design = result.design
        rows.append([design.name + (" (baseline)" if index == 0 else ""), design.describe(), design.digest])
    lines += _table(["design", "scenario", "digest"], rows, [False, False, False])
    for result in comparison.designs:
        if result.failed:
            lines.append(f"  {result.design.name}: {result.failed} of {result.runs} runs failed (left out; their replications are "
                         f"not paired): {one_line(result.errors[0])}")
        if result.warnings:
            lines.append(f"  {result.design.name}: runs warned: " +
                         ", ".join(f"{code} in {runs}/{result.runs} runs" for code, runs in result.warnings.items()) +
                         " (zsim run prints each warning)")
    return lines


def _selection_lines(comparison: Comparison) -> list[str]:
    selection = comparison.selection
    if selection.named:
        return []
    if not selection.differ:
        return [f"Every metric is identical in every replication of every design ({selection.identical} metrics): the designs "
                "behave the same."]
    shown = len(comparison.metrics)
    if selection.detectable:
        text = (f"Shown: {shown} of the {selection.detectable} metrics that differ beyond noise and by at least the practical "
                "effect, ranked by effect size (the relative change of the mean; one metric of each entity and kind first). "
                f"{len(selection.noise)} more differ only within noise or negligibly, {selection.identical} are identical in every "
                "replication.")
    else:
        text = (f"No metric differs beyond noise by at least the practical effect. Shown: {shown} of the {selection.differ} that "
                f"differ within noise or negligibly, ranked by the relative change of the mean; {selection.identical} are identical "
                "in every replication.")
    lines = [text]
    if selection.more:
        lines.append(f"{len(selection.more)} more differ{' beyond noise' if selection.detectable else ''}: "
                     + ", ".join(selection.more[:8]) + (", ..." if len(selection.more) > 8 else ""))
    if selection.more or selection.noise:
        lines.append("Name metrics with --metric NAME (globs work: --metric 'socket.slow.*').")
    return lines


NOTE = ("Intervals are Student-t 95 %, each on its own. Differences are paired: replication r of every design ran with the "
        "same seed. better/worse (higher/lower for a metric that prefers neither): the difference is beyond noise, with "
        "the false discovery rate kept at {fdr} over the {tests} tested (Benjamini-Hochberg over every design "
        "against the baseline in every metric considered, shown or not), and the mean changed by at least the practical "
        "effect, {effect} of the larger mean (--min-effect); 'negligible': beyond noise but smaller; 'no detectable "
        "difference': within noise. best: the design with the best mean (among those whose runs did not warn), every other "
        "design tested against it with simultaneous 95 % intervals (Bonferroni); 'as good' designs are within noise or the "
        "practical effect of it. Fractions are in %, their differences in percentage points (pp). ! : runs of this design "
        "warned about what the metric measures (an overloaded consumer, a latency or loss that never settled, a rate not "
        "achieved): the number depends on how long the run is, it is not an answer.")
#: the note's first sentences when scipy is missing: no false-discovery control
NOTE_UNCONTROLLED = ("without scipy (pip install 'zsim[stats]') the verdicts are per comparison (95 % each), not "
                     "controlled for the {tests} tested")


def _tests(count: int) -> str:
    return f"{count:,} difference" if count == 1 else f"{count:,} differences"


def _note(comparison: Comparison) -> str:
    decided = comparison.control
    text = NOTE.format(fdr="5 %" if decided.fdr is None else f"{100 * decided.fdr:g} %", tests=_tests(decided.tests),
                       effect=f"{100 * decided.min_effect:g} %")
    if decided.fdr is None:
        text += " Note: " + NOTE_UNCONTROLLED.format(tests=_tests(decided.tests)) + "."
    return text


def best_line(metric: MetricResult, comparison: Comparison) -> str | None:
    """``best: NAME (lowest mean); as good: ...; worse: ...`` for a metric with a best design."""
    best = metric.best
    if best is None:
        return None
    unit = _metric_unit(metric)
    names = [r.design.name for r in comparison.designs]
    if not best.worse:
        return (f"best: none stands out: every design is within noise or the practical effect of the "
                f"{'lowest' if metric.prefers == 'lower' else 'highest'} mean ({names[best.design]}; simultaneous 95 % over "
                f"{best.comparisons} comparisons)")
    text = f"best: {names[best.design]} ({'lowest' if metric.prefers == 'lower' else 'highest'} mean"
    text += ", but its runs warned (!): no design is free of the warning)" if best.warned else ")"
    if best.ties:
        text += "; as good: " + ", ".join(names[i] for i in best.ties)
    if best.worse:
        text += "; worse: " + ", ".join(f"{names[i]} ({_with_unit(d, unit, signed=True, diff=True)})" for i, d in best.worse)
    return text + f" (simultaneous 95 % over {best.comparisons} comparisons)"


def _identical_text(metric: MetricResult) -> str:
    """What an identical metric says: its value, and for a loss or drop that no run of any
    design had, how little that shows: the chance that one run of a design has any is
    still up to the exact zero-event bound over its runs (Clopper-Pearson; runs, not
    copies, are the independent trials: a stall loses copies in bursts)."""
    value = next(s.mean for s in metric.samples if s.mean is not None)
    text = f"identical in every run of every design: {_with_unit(value, _metric_unit(metric))}"
    if metric.family == "losses and drops" and value == 0:
        runs = min(s.n for s in metric.samples)
        text += (f"; none in {runs} runs of each design does not rule it out: at 95 %, a run of a design has some with "
                 f"probability up to {100 * zero_upper(runs):.0f} % (no event in {runs} runs, Clopper-Pearson; more "
                 "replications tighten it)")
    return text


def _title(metric: MetricResult) -> str:
    return metric.name if metric.label == metric.name else f"{metric.name} - {metric.label}"


def format_text(comparison: Comparison) -> str:
    """The table ``zsim compare`` prints."""
    lines = [f"zsim compare: {len(comparison.designs)} designs x {comparison.replications} replications, paired (replication r "
             f"runs with the same seed in every design; root seed {comparison.seed})"]
    lines += [f"note: {note}" for note in comparison.notes]
    lines.append("")
    lines += _design_lines(comparison)
    for metric in comparison.metrics:
        lines.append("")
        if metric.identical:
            lines.append(f"{_title(metric)}: {_identical_text(metric)}")
            continue
        lines.append(f"{_title(metric)}; {_prefers_text(metric)}")
        if metric.same_as:
            lines.append("  (the same numbers: " + ", ".join(metric.same_as) + ")")
        headers, rows, right = metric_rows(metric, comparison)
        lines += ["  " + line for line in _table(headers, rows, right)]
        best = best_line(metric, comparison)
        if best:
            lines.append("  " + best)
    lines.append("")
    for paragraph in [*_selection_lines(comparison), _note(comparison)]:
        lines += textwrap.wrap(paragraph, 120, break_on_hyphens=False, break_long_words=False)
    return "\n".join(lines)


def _json_number(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _sample_json(sample: Sample) -> dict[str, Any]:
    return {"n": sample.n, "missing": sample.missing, "mean": _json_number(sample.mean), "sd": _json_number(sample.sd),
            "ci_low": _json_number(sample.low), "ci_high": _json_number(sample.high), "constant": sample.constant}


def to_json(comparison: Comparison) -> dict[str, Any]:
    """The comparison as one JSON-able dict (``zsim compare --json``), numbers in SI units
    (seconds, fractions, messages per second)."""
    baseline = comparison.designs[0].design.name
    designs = []
    for index, result in enumerate(comparison.designs):
        design = result.design
        designs.append({"name": design.name, "baseline": index == 0, "source": design.source, "overrides": dict(design.overrides),
                        "coords": dict(design.coords), "scenario_digest": design.digest, "runs": result.runs,
                        "failed": result.failed, "errors": result.errors, "warnings": result.warnings,
                        "socket_warnings": result.socket_flags})
    metrics = []
    for metric in comparison.metrics:
        entries = []
        for index, result in enumerate(comparison.designs):
            entry = {"design": result.design.name, **_sample_json(metric.samples[index]),
                     "values": [_json_number(v) for v in metric.values[index]], "warned": metric.warned[index]}
            difference = metric.differences[index]
            if difference is not None:
                entry["difference"] = {"baseline": baseline, **_sample_json(difference.sample), "identical": difference.identical,
                                       "verdict": difference.verdict, "p": _json_number(difference.p),
                                       "q": _json_number(difference.q), "relative_change": _json_number(difference.relative)}
            entries.append(entry)
        best = metric.best
        metrics.append({"name": metric.name, "label": metric.label, "prefers": metric.prefers, "family": metric.family,
                        "identical": metric.identical, "same_numbers": metric.same_as, "designs": entries,
                        "best": None if best is None else {
                            "design": comparison.designs[best.design].design.name, "warned": best.warned,
                            "as_good": [comparison.designs[i].design.name for i in best.ties],
                            "worse": [{"design": comparison.designs[i].design.name, "difference": _json_number(d)}
                                      for i, d in best.worse],
                            "method": f"paired Student-t, simultaneous 95 % over {best.comparisons} comparisons (Bonferroni)"}})
    selection = comparison.selection
    return {
        "format": 1,
        "zsim_version": __version__,
        "seed": comparison.seed,
        "replications": comparison.replications,
        "paired": True,
        "seeds": comparison.seeds,
        "baseline": baseline,
        "designs": designs,
        "metrics": metrics,
        "selection": {"named": selection.named, "differ": selection.differ, "detectable": selection.detectable,
                      "identical": selection.identical, "not_shown": selection.more, "within_noise": selection.noise},
        "notes": comparison.notes,
        "verdicts": {"tests": comparison.control.tests, "false_discovery_rate": comparison.control.fdr,
                     "min_effect": comparison.control.min_effect,
                     "method": "Benjamini-Hochberg over every design against the baseline in every metric considered"
                     if comparison.control.fdr is not None else "per comparison, 95 % (scipy missing)"},
    }


def _slug(text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", text.replace("->", "_to_")).strip("-.")
    return slug[:120] or "metric"


def figure(metric: MetricResult, comparison: Comparison, path: Path) -> Path:
    """One metric side by side: per design its replications as points (a thin grey line
    joins the runs of one replication, which share a seed), its mean and 95 % interval; the
    verdicts against the baseline under the title."""
    from .. import plotting
    from ..plotting import _pyplot, colour_for

    plt = _pyplot()
    unit = _metric_unit(metric)
    names = [r.design.name for r in comparison.designs]
    k = len(names)
    fig, ax = plt.subplots(figsize=(max(5.0, 2.3 * k + 1.2), 4.8))
    scaled = [[v * unit.scale if _finite(v) else math.nan for v in values] for values in metric.values]
    for rep in range(comparison.replications):
        ys = [scaled[i][rep] for i in range(k)]
        ax.plot(range(k), ys, color="0.75", linewidth=0.7, zorder=1)
    for i in range(k):
        colour = colour_for(i, k)
        ys = [y for y in scaled[i] if math.isfinite(y)]
        ax.scatter([i] * len(ys), ys, s=14, color=colour, alpha=0.55, zorder=2, linewidths=0)
        sample = metric.samples[i]
        if sample.mean is None:
            continue
        mean = sample.mean * unit.scale
        if sample.low is not None and sample.high is not None and not sample.constant:
            ax.errorbar([i + 0.18], [mean], yerr=[[mean - sample.low * unit.scale], [sample.high * unit.scale - mean]], fmt="D",
                        color=colour, markersize=6, capsize=5, linewidth=1.6, zorder=3)
        else:
            ax.plot([i + 0.18], [mean], "D", color=colour, markersize=6, zorder=3)
    labels = []
    for i, name in enumerate(names):
        label = _wrap(name + (" (baseline)" if i == 0 else ""), 24)
        if metric.warned[i]:
            label += "\n" + _wrap(_warned_text(metric.warned[i], comparison.designs[i].runs), 28)
        labels.append(label)
    ax.set_xticks(range(k), labels, fontsize=8)
    for i, tick in enumerate(ax.get_xticklabels()):
        if metric.warned[i]:
            tick.set_color("crimson")
    ax.set_xlim(-0.5, k - 0.5)
    ax.set_ylabel(f"{metric.label} ({unit.unit})" if unit.unit else metric.label)
    ax.grid(True, axis="y", alpha=0.3)
    verdicts = []
    for i in range(1, k):
        difference = metric.differences[i]
        if difference is None:
            continue
        d = difference.sample
        text = "identical" if difference.identical else (f"{_with_unit(d.mean, unit, signed=True, diff=True)} "
                                                          f"[{_interval(d, unit, diff=True)}]: {difference.verdict}")
        if difference.verdict in DIFFERENT and (metric.warned[0] or metric.warned[i]):
            text += ", but runs warned (!): not an answer"
        verdicts.append(f"{names[i]} minus {names[0]}: {text}")
    title = f"{_title(metric).replace(' - ', chr(10), 1)}; {_prefers_text(metric)}"
    ax.set_title(title, fontsize=10)
    note = ("points: one run each (grey lines join runs with the same seed); diamond and bars: mean and 95 % interval\n"
            + "\n".join(verdicts[:6]))
    fig.text(0.01, 0.005, note, fontsize=7, color="0.3", ha="left", va="bottom")
    plotting.plain_text(fig).tight_layout(rect=(0, 0.04 + 0.03 * min(len(verdicts), 6), 1, 1))
    return plotting.save(fig, path)


def _wrap(text: str, width: int) -> str:
    """Break a long name for a tick label after ``.``, ``=``, ``,`` or a space."""
    lines = [""]
    for token in re.split(r"(?<=[.=, ])", text):
        if lines[-1] and len(lines[-1]) + len(token) > width:
            lines.append("")
        lines[-1] += token
    return "\n".join(line.strip() for line in lines)


def _markdown(comparison: Comparison, figures: Mapping[str, str]) -> str:
    """summary.md: every name (designs, files, metrics) and error is escaped text
    (``zsim.textsafe``): a ``|`` cannot break a table, HTML is not passed on raw."""
    def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
        return md_table(headers, rows)

    lines = ["# zsim compare", "",
             f"{len(comparison.designs)} designs x {comparison.replications} replications, paired: replication r runs with the same "
             f"seed in every design (root seed {comparison.seed}; zsim {__version__}).", ""]
    rows = []
    for index, result in enumerate(comparison.designs):
        design = result.design
        what = design.describe()
        warned = ", ".join(f"{code} in {runs}/{result.runs} runs" for code, runs in result.warnings.items())
        failed = f"{result.failed} of {result.runs} failed: {result.errors[0]}" if result.failed else ""
        rows.append([Code(design.name + (" (baseline)" if index == 0 else "")), what, Code(design.digest), warned, failed])
    lines += table(["design", "scenario", "digest", "runs warned", "failed runs"], rows)
    for metric in comparison.metrics:
        lines += ["", f"## {md_code(metric.name)}", ""]
        if metric.identical:
            lines.append(f"{md(metric.label)}: {md(_identical_text(metric))}.")
        else:
            lines.append(f"{md(metric.label)}; {md(_prefers_text(metric))}.")
            if metric.same_as:
                lines.append(f"The same numbers: {', '.join(md_code(n) for n in metric.same_as)}.")
            lines.append("")
            headers, body, _ = metric_rows(metric, comparison)
            lines += table(headers, body)
            best = best_line(metric, comparison)
            if best:
                lines += ["", md(best[0].upper() + best[1:]) + "."]
        if metric.name in figures:
            lines += ["", f"![{md(metric.name)}]({md_url(figures[metric.name])})"]
    lines.append("")
    lines += [md(line) for line in _selection_lines(comparison)]
    lines += ["", md(_note(comparison)), ""]
    return "\n".join(lines)


def write_report(comparison: Comparison, out: str | Path) -> list[Path]:
    """``summary.md``, ``compare.json`` and one PNG per metric into folder ``out``."""
    directory = files.prepare_output_dir(out, "the report folder (--report)")
    written = []
    figures: dict[str, str] = {}
    used: set[str] = set()
    for metric in comparison.metrics:
        name = _slug(metric.name)
        while name in used:
            name += "_"
        used.add(name)
        try:
            written.append(figure(metric, comparison, directory / f"{name}.png"))
        except OSError as exc:
            raise EnvironmentFault(str(directory / f"{name}.png"), f"cannot be written: {exc.strerror or exc}") from None
        except RuntimeError as exc:  # no matplotlib
            raise ZsimError(str(exc)) from None
        figures[metric.name] = f"{name}.png"
    written.append(files.atomic_write(directory / "compare.json", json.dumps(to_json(comparison), indent=2) + "\n"))
    written.append(files.atomic_write(directory / "summary.md", _markdown(comparison, figures)))
    return written
