"""A comparison's result and its forms: the table ``zsim compare`` prints, ``--json``, a
pandas frame, and ``--report``'s Markdown page, JSON and one figure per metric.

Each metric is shown in the unit that suits it (``zsim.units`` for times, a difference in
its own unit; % and percentage points for fractions); a number whose runs warned is marked
``!``. Every name in the Markdown page is escaped text (``zsim.textsafe``). ``Comparison``
lives here rather than with the verdicts it holds: everything it does beyond holding them
is a rendering (``text``, ``to_json``, ``to_frame``).
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__, files
from ..errors import EnvironmentFault, ZsimError
from ..metrics import EVENT_FAMILIES
from ..metrics import kind as metric_kind
from ..stats import zero_upper
from ..textsafe import Code, md, md_code, md_table, md_url, one_line
from ..units import time_unit
from .runs import DesignResult
from .verdicts import DIFFERENT, Control, MetricResult, Sample, Selection, is_finite


@dataclass
class Comparison:
    """What ``compare`` returns: every design's runs, the metrics shown with their samples,
    paired differences and verdicts, how they were chosen (``selection``) and decided
    (``control``)."""

    designs: list[DesignResult]
    replications: int
    seed: int
    seeds: list[int]
    metrics: list[MetricResult]
    selection: Selection
    notes: list[str] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    control: Control = field(default_factory=Control)
    #: design name -> its scenario file, written by ``--report`` (``write_report``)
    scenario_files: dict[str, Path] = field(default_factory=dict)

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
        columns = ("metric", "design", "baseline", "runs", "mean", "ci_low", "ci_high", "diff_mean", "diff_ci_low",
                   "diff_ci_high", "verdict", "prefers", "warned")
        records = []
        for metric in self.metrics:
            for index, result in enumerate(self.designs):
                sample = metric.samples[index]
                difference = metric.differences[index]
                diff = difference.sample if difference is not None else None
                records.append(dict(zip(columns, (
                    metric.name, result.design.name, index == 0, sample.n,
                    _json_number(sample.mean), _json_number(sample.low), _json_number(sample.high),
                    _json_number(diff.mean) if diff is not None else None,
                    _json_number(diff.low) if diff is not None else None,
                    _json_number(diff.high) if diff is not None else None,
                    difference.verdict if difference is not None else "", metric.prefers or "",
                    dict(metric.warned[index])), strict=True)))
        frame = pd.DataFrame.from_records(records, columns=list(columns))  # no metric shown: the same columns, no rows
        for column in ("mean", "ci_low", "ci_high", "diff_mean", "diff_ci_low", "diff_ci_high"):
            frame[column] = frame[column].astype(float)
        return frame.set_index(["metric", "design"])


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
        largest = max((abs(v) for v in values if is_finite(v)), default=0.0)
        for unit, factor in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
            if largest >= factor:
                return Unit(1.0 / factor, unit, unit)
        return Unit(1.0, "B", "B")
    return Unit(1.0, "", "")


def _num(value: float, signed: bool = False) -> str:
    if value == 0:
        return "0"
    size = abs(value)
    if size >= 1e15:  # written out, 1e308 is a line of 400 digits and commas
        text = f"{value:.4g}"
    elif size >= 1000:
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
        if metric.family in EVENT_FAMILIES and sample.constant and sample.mean == 0:
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
    if metric.family in EVENT_FAMILIES and value == 0:
        runs = min(s.n for s in metric.samples)
        text += (f"; none in {runs} runs of each design does not rule it out: at 95 %, a run of a design has some with "
                 f"probability up to {100 * zero_upper(runs):.0f} % (no event in {runs} runs, Clopper-Pearson; more "
                 "replications tighten it)")
    return text


def _title(metric: MetricResult) -> str:
    return metric.name if metric.label == metric.name else f"{metric.name} - {metric.label}"


def overall_best(comparison: Comparison) -> tuple[list[int], int]:
    """The designs best or as good on every metric shown that tells the designs apart (its
    best stands out: some design is worse), and how many metrics do. One design: the
    comparison's answer; several: they tie everywhere; none: no design wins every metric."""
    winners: list[set[int]] = []
    for metric in comparison.metrics:
        best = metric.best
        if best is not None and best.worse:
            winners.append({best.design, *best.ties})
        elif best is None and len(comparison.designs) == 2 and metric.differences[1] is not None:
            verdict = metric.differences[1].verdict  # two designs: the paired verdict against the baseline says it
            if verdict in ("better", "worse"):
                winners.append({1} if verdict == "better" else {0})
    if not winners:
        return [], 0
    candidates = set(range(len(comparison.designs)))
    for found in winners:
        candidates &= found
    return sorted(candidates), len(winners)


def best_overall_line(comparison: Comparison) -> str:
    """``best (or as good) on all 3 metrics shown that tell the designs apart: b; its
    scenario file: ...``, or why no design is."""
    names = [result.design.name for result in comparison.designs]
    chosen, telling = overall_best(comparison)
    every = (f"; every design's scenario file is in {files.shown_path(next(iter(comparison.scenario_files.values())).parent)}"
             if comparison.scenario_files else "; --report DIR writes every design's scenario file")
    if not telling:
        return f"no metric shown tells the designs apart (each metric's best is within noise of the others){every}"
    metrics = "the one metric shown that tells the designs apart" if telling == 1 else \
        f"all {telling} metrics shown that tell the designs apart"
    if len(chosen) != 1:
        if chosen:
            return f"as good as each other on {metrics}: {', '.join(names[i] for i in chosen)}; none stands out{every}"
        return f"no design is best (or as good) on {metrics}: a trade-off, each metric's best or verdict says which way{every}"
    name = names[chosen[0]]
    where = comparison.scenario_files.get(name)
    carried = (f"; its scenario file: {files.shown_path(where)}" if where is not None
               else "; --report DIR writes its scenario file (and every design's)")
    return f"best (or as good) on {metrics}: {name}{carried}"


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
    lines += ["", one_line(best_overall_line(comparison))]
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
        where = comparison.scenario_files.get(design.name)
        designs.append({"name": design.name, "baseline": index == 0, "source": design.source, "overrides": dict(design.overrides),
                        "coords": dict(design.coords), "scenario_digest": design.digest, "runs": result.runs,
                        "failed": result.failed, "errors": result.errors, "warnings": result.warnings,
                        "socket_warnings": result.socket_flags,
                        # beside compare.json (--report): the design as a scenario file of its own
                        "scenario_file": None if where is None else f"designs/{where.name}"})
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
    chosen, telling = overall_best(comparison)
    return {
        "best_overall": {"designs": [comparison.designs[i].design.name for i in chosen], "metrics": telling,
                         "text": best_overall_line(comparison)},
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
    scaled = [[v * unit.scale if is_finite(v) else math.nan for v in values] for values in metric.values]
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
        where = comparison.scenario_files.get(design.name)
        rows.append([Code(design.name + (" (baseline)" if index == 0 else "")), what, Code(design.digest), warned, failed,
                     Code(f"designs/{where.name}") if where is not None else "-"])
    lines += table(["design", "scenario", "digest", "runs warned", "failed runs", "scenario file"], rows)
    overall = best_overall_line(comparison)
    lines += ["", md(overall[0].upper() + overall[1:]) + "."]
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


def design_files(comparison: Comparison, command: str | None = None) -> list[tuple[str, str]]:
    """(file name, TOML) of every design's scenario (``designs/<NN>-<name>.toml``): its
    source with its changes applied (``zsim.design_file``), so any design, and the best
    one, is carried on as a file."""
    from ..design_file import design_toml

    out = []
    chosen, _ = overall_best(comparison)
    for index, result in enumerate(comparison.designs):
        design = result.design
        what = "the best (or as good) on every metric shown that tells the designs apart" if chosen == [index] else (
            "the baseline" if index == 0 else f"design {index + 1} of {len(comparison.designs)}")
        text = design_toml(design.raw, list(design.overrides.items()),
                           title=f"Design {design.name!r} of a zsim compare of {len(comparison.designs)} designs: {what}",
                           made_by=command, base_source=design.source, base_dir=design.base_dir,
                           notes=[f"Compared over {comparison.replications} replications, root seed {comparison.seed} "
                                  "(compare.json, summary.md)."])
        out.append((f"{index + 1:02d}-{_slug(design.name)}.toml", text))
    return out


def write_report(comparison: Comparison, out: str | Path, command: str | None = None) -> list[Path]:
    """``summary.md``, ``compare.json``, one PNG per metric and every design's scenario file
    (``designs/``) into folder ``out``."""
    directory = files.prepare_output_dir(out, "the report folder (--report)")
    written = []
    folder = files.ResultsFolder(directory, "the report folder (--report)")  # designs/: no link followed
    for (name, text), result in zip(design_files(comparison, command), comparison.designs, strict=True):
        path = folder.write("designs", name, content=text.encode())
        comparison.scenario_files[result.design.name] = path
        written.append(path)
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
