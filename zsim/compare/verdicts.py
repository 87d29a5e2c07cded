"""The verdicts of ``zsim compare``: per metric, every design's sample, its paired
difference from the baseline and what that difference says; which metrics are shown.

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

Precision. ``--precision METRIC=HALF_WIDTH`` adds replications until the intervals the
verdicts rest on are that narrow (``Precision``): it sits here, with the intervals it
measures, and reaches the runs only through the function ``compare`` hands it.

The quantiles and tests themselves (Student's t, the t test, Benjamini-Hochberg) are
``zsim.stats``'s.
"""

from __future__ import annotations

import dataclasses
import difflib
import fnmatch
import math
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, TypeGuard

from .. import metrics
from ..errors import ScenarioError
from ..metrics import preference
from ..stats import fdr_adjust, mean_half_width, t_quantile, t_test_p
from ..sweep.precision import Target, grow
from ..textsafe import terminal
from .designs import DesignSet, assignment
from .runs import DesignResult, as_number

#: Metrics shown without ``--metric`` (the rest are counted in one line).
DEFAULT_MAX_METRICS = 12
#: The false discovery rate the verdicts keep over every difference a comparison tests.
FDR = 0.05
#: The smallest relative change of a mean that counts as a difference unless
#: ``--min-effect`` says otherwise: 5 % of the larger mean (a reply pipe's mean depth of
#: 0.00450 against 0.00466 messages is detectable with common random numbers, and no answer).
DEFAULT_MIN_EFFECT = 0.05

#: Run warnings that question a metric's number (``zsim.checks``); others (a socket that
#: starts after the horizon, a subscription matching nothing) are listed per design only.
QUESTIONING = ("overloaded", "backlog_at_end", "latency_not_settled", "loss_not_settled", "rate_not_achieved")
#: Row columns that are not metrics.
NOT_METRICS = {"point", "replication", "seed", "ok", "error", "scenario_digest", "zsim_version", "zsim_code"}
#: Metrics never chosen by default (they can still be named): a run's cost and its horizon,
#: and whether it drew random values (``seed_independent``: a property of the model, not a quality).
NOT_DEFAULT = {"wall_s", "sim_time_s", "seed_independent", "random_streams_drawn"}
#: Verdicts that say the designs differ.
DIFFERENT = ("better", "worse", "higher", "lower")

_GLOB = re.compile(r"[*?\[]")


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


def is_finite(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def describe(values: Sequence[float | None]) -> Sample:
    """Mean, standard deviation and Student-t 95 % interval of the finite ``values``."""
    finite = [float(v) for v in values if is_finite(v)]
    n = len(finite)
    if n == 0:
        return Sample(0, len(values), None, None, None, None, False)
    try:
        mean = statistics.fmean(finite)
    except OverflowError:  # values near 1e308 (a derived metric's): their sum is no float, each n-th of it is
        mean = math.fsum(v / n for v in finite)
    constant = min(finite) == max(finite)
    if constant:
        mean = finite[0]
    if n < 2:
        return Sample(n, len(values) - n, mean, None, None, None, constant)
    try:
        sd = 0.0 if constant else statistics.stdev(finite)
    except OverflowError:  # a spread beyond the largest float: no interval to speak of
        sd = math.inf
    half = mean_half_width(n, sd)
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
    diffs: list[float | None] = [float(o) - float(b) if is_finite(b) and is_finite(o) else None
                                 for b, o in zip(baseline, other, strict=True)]
    sample = describe(diffs)
    if not any(is_finite(v) for v in (*baseline, *other)):
        return Difference(sample, False, "no values")
    presence_same = all(is_finite(b) == is_finite(o) for b, o in zip(baseline, other, strict=True))
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
        d = describe([float(o) - float(b) if is_finite(b) and is_finite(o) else None
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
        return tuple(tuple(v if is_finite(v) else None for v in values) for values in self.values)

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


def add_derived(rows: list[list[dict[str, Any]]], derived: Mapping[str, str]) -> None:
    """``[report.derived]`` of a sweep file: one more number per run, from that run's row
    alone (``zsim.metrics.derive``)."""
    metrics.add_derived((row for design_rows in rows for row in design_rows), derived)


def _metric_warnings(metric: str, result: DesignResult) -> dict[str, int]:
    """The questioning warnings of a design's runs that concern ``metric`` (warning -> runs)."""
    parsed = metrics.parse(metric)
    if parsed is not None and parsed.kind == "socket" and parsed.entity is not None:
        return {f"{flag} ({parsed.entity})": runs for flag, runs in result.socket_flags.get(parsed.entity, {}).items()}
    if parsed is not None and parsed.kind == "sender":
        runs = result.warnings.get("rate_not_achieved", 0)
        return {"rate_not_achieved": runs} if runs else {}
    if metric.startswith("warning") or metric in NOT_DEFAULT:
        return {}
    return {code: runs for code, runs in result.warnings.items() if code in QUESTIONING}


def metric_names(rows: Sequence[Sequence[Mapping[str, Any]]]) -> list[str]:
    names: dict[str, None] = {}
    for design_rows in rows:
        for row in design_rows:
            if row.get("ok"):
                for key, value in row.items():
                    if key not in NOT_METRICS and as_number(value) is not None:
                        names[key] = None
    return sorted(names)


def closest_name(name: str, known: Sequence[str]) -> str:
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
                raise ScenarioError(f"--metric {name}", f"matches no metric; {closest_name(name.replace('*', ''), known)}")
            out.update(dict.fromkeys(matches))
        else:
            raise ScenarioError(f"--metric {name}", f"unknown metric; {closest_name(name, known)}")
    return list(out)


#: the sections of metric names ``known_metrics`` lists in full before any run
_LISTED_SECTIONS = ("socket", "sender", "warning", "machine")


def check_metric_names(wanted: Sequence[str], designs: DesignSet) -> None:
    """Before any run: every ``--metric`` must be a metric some design's runs can have
    (``zsim.metrics.known_metrics``) or a derived one; pipe and link names, made by the
    model, and globs over them are checked after the runs."""
    sets = [metrics.known_metrics(d.raw) for d in designs.designs]
    listed = sorted({name for known in sets if known is not None for name in known} | set(designs.derived))
    for name in wanted:
        section = name.split(".", 1)[0]
        # a dotted name in no section of a run's names (``...``, ``sokcet.sub.sent``) is no
        # metric of any run: refused before the runs
        if "." in name and section not in metrics.PREFIXES and name not in designs.derived and not _GLOB.search(name):
            raise ScenarioError(f"--metric {name}", f"unknown metric (no metric's name starts with {section + '.'!r}); "
                                                    f"{closest_name(name, listed)}")
        if "." in name and section not in _LISTED_SECTIONS or any(known is None for known in sets):
            continue  # made by the model (pipe., link., machine., thread., ...): checked against the runs' rows
        if _GLOB.search(name):
            if not any(fnmatch.fnmatchcase(k, name) for k in listed):
                raise ScenarioError(f"--metric {name}", f"matches no metric; {closest_name(name.replace('*', ''), listed)}")
        elif name not in designs.derived and not any(known is not None and name in known for known in sets):
            raise ScenarioError(f"--metric {name}", f"unknown metric; {closest_name(name, listed)}")


def metric_result(name: str, rows: Sequence[Sequence[Mapping[str, Any]]], results: Sequence[DesignResult],
                  prefer: Mapping[str, str | None] | None = None) -> MetricResult:
    """One metric compared: every design's sample, every design's paired difference from the
    first, verdicts and the warnings that concern it."""
    prefers, family = preference(name, prefer)
    label = metrics.label(name)
    values = [[as_number(row.get(name)) if row.get("ok") else None for row in design_rows] for design_rows in rows]
    samples = [describe(v) for v in values]
    if metrics.kind(name) == "fraction":  # a share lies in [0, 1]: so does its interval (differences may be negative)
        samples = [s if s.low is None or s.high is None else dataclasses.replace(s, low=max(0.0, s.low), high=min(1.0, s.high))
                   for s in samples]
    differences: list[Difference | None] = [None] + [paired(values[0], v, prefers) for v in values[1:]]
    finite = [v for design_values in values for v in design_values if is_finite(v)]
    presence = {tuple(is_finite(v) for v in design_values) for design_values in values}
    identical = bool(finite) and min(finite) == max(finite) and len(presence) == 1
    warned = [_metric_warnings(name, result) for result in results]
    return MetricResult(name, label, prefers, family, values, samples, differences, warned, identical)


def select_metrics(all_results: list[MetricResult], wanted: Sequence[str], max_metrics: int,
            candidates: Sequence[str] = ()) -> tuple[list[MetricResult], Selection]:
    by_name = {m.name: m for m in all_results}
    if wanted:
        return [by_name[name] for name in wanted], Selection(named=True)
    pool = [by_name[c] for c in candidates if c in by_name] if candidates else [
        m for m in all_results if not not_default(m.name) and m.name not in metrics.POOLED_ALIASES]
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


def check_derived_reads(rows: Sequence[Sequence[Mapping[str, Any]]], derived: Mapping[str, str], flags: Sequence[str]) -> None:
    """After the runs: a derived metric that reads a name no run has (a pipe or link name the
    model did not make) would have no value anywhere: one line naming it (``--derive NAME``
    for ``flags``' names, else ``report.derived.NAME``) and the close matches, not a
    metric that silently never shows."""
    from .. import expressions

    columns = {key for design_rows in rows for row in design_rows if row.get("ok") for key in row}
    known = metric_names(rows)
    for name, text in derived.items():
        for used in expressions.names(text):
            if used not in derived and used not in columns:
                where = f"--derive {name}" if name in flags else f"report.derived.{name}"
                raise ScenarioError(where, f"reads {used!r}, which no run has; {closest_name(used, known)}")


def with_derived(design_set: DesignSet, derive: Sequence[str]) -> DesignSet:
    """``--derive NAME=EXPR`` added to the designs' derived metrics, checked as a sweep
    file's ``[report.derived]`` (names, expressions, no cycle) before any run."""
    derived = dict(design_set.derived)
    for text in derive:
        name, expression = assignment(text, "--derive", "NAME=EXPR, e.g. loss=socket.sub.dropped/socket.sub.copies")
        if name in derived:
            raise ScenarioError(f"--derive {name}", "is defined twice")
        derived[name] = expression
    try:
        reads = metrics.check_derived(derived, None)
    except ScenarioError as exc:
        raise ScenarioError(exc.path.replace("report.derived.", "--derive "), exc.reason) from None
    extended = dataclasses.replace(design_set, derived=derived)
    for name, used in reads.items():
        try:
            check_metric_names(used, extended)
        except ScenarioError as exc:
            raise ScenarioError(f"--derive {name}", f"reads {exc.path.removeprefix('--metric ')}: {exc.reason}") from None
    return extended


def not_default(name: str) -> bool:
    """A run's cost, its horizon, and MSER-5's warm-up end (a diagnostic of the steady-state
    figures): never chosen by default (they can be named)."""
    return name in NOT_DEFAULT or name.endswith(".warmup_end_s")


def _group(metric: MetricResult) -> tuple[str, str]:
    """(entity, family): ``socket.fast#`` and ``latency`` for ``socket.fast1.latency_p99_s``
    (entities that differ only by a number, like seven fast subscribers, are one group)."""
    if metric.name.startswith(metrics.ENTITY_PREFIXES):
        entity = re.sub(r"\d+", "#", metric.name.rsplit(".", 1)[0])
    else:
        entity = "pooled" if metric.name in metrics.POOLED or metric.name in metrics.POOLED_ALIASES.values() else metric.name
    return entity, metric.family


def _spread(ranked: list[MetricResult]) -> list[MetricResult]:
    """The ranking with variety: among the detectable differences (then among the others),
    the first metric of each (entity, family) first, in ranked order, those of sockets,
    senders, pooled and derived metrics before the internals (pipes, links, network links); then the rest.
    So the top of the list shows losses, latency, depth and throughput of each kind of
    entity rather than six latency percentiles of one socket or the depth of eight pipes."""
    out: list[MetricResult] = []
    for detectable in (True, False):
        tier = [m for m in ranked if m.detectable == detectable]
        tier.sort(key=lambda m: m.name.startswith(metrics.INTERNAL_PREFIXES))  # stable: ranked order within each
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
    return (0 if name.startswith(metrics.ENTITY_PREFIXES) else 2) + (1 if "steady_" in name else 0)


@dataclass(frozen=True)
class Precision(Target):
    """``--precision METRIC=HALF_WIDTH`` (``zsim.sweep.precision.Target``): replications are
    added until the 95 % interval of METRIC is at most +- HALF_WIDTH for every design's mean
    and for every paired difference from the baseline (what the verdicts rest on).
    HALF_WIDTH is in the metric's unit (SI: seconds, a fraction 0..1), or relative with
    ``%`` (``5%``: 5 % of the larger mean)."""

    def widest(self, rows: Sequence[Sequence[Mapping[str, Any]]]) -> tuple[float, float, int]:
        """The widest half-width now (means and paired differences), the target it is held
        to, and the values it rests on (the fewest over the designs)."""
        values = [[as_number(row.get(self.metric)) if row.get("ok") else None for row in design_rows] for design_rows in rows]
        samples = [describe(v) for v in values] + [paired(values[0], v, None).sample for v in values[1:]]
        widths = [math.inf if s.half_width is None else s.half_width for s in samples]
        target = self.goal([s.mean for s in samples[:len(values)] if s.mean is not None])
        return max(widths), target, min(s.n for s in samples[:len(values)])


def to_precision(design_set: DesignSet, rows: list[list[dict[str, Any]]], targets: Sequence[Precision], max_runs: int | None,
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
            wanted = max(wanted, grow(n, width, goal))
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
        add_derived(more, design_set.derived)
        for design_rows, extra in zip(rows, more, strict=True):
            design_rows.extend(extra)
        n = wanted
    return dataclasses.replace(design_set, replications=n, notes=tuple(notes))
