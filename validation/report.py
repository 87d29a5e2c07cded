"""Markdown reports of validations, with matplotlib figures.

``write_report(results, out_dir)`` writes ``out_dir/report.md`` (an overview table of every
scenario and metric, then a section per scenario), ``out_dir/results.json`` and, per
scenario, ``<scenario>-metrics.png`` (the simulated and real replication values of each
metric side by side, with their means), ``<scenario>-latency.png`` (the per-message latency
distributions, simulated and real) and ``<scenario>-depth.png`` (queue depth over time of
the busiest pipes, from the first simulated run).

matplotlib is imported here only (``Agg`` backend); nothing else in zsim needs it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from zsim.files import shown_path
from zsim.plotting import plain_text
from zsim.results import json_default

from .compare import (
    ACHIEVED_RATE_SHARE,
    SCHEDULE_MARGIN,
    SPEED_MARGIN,
    ScenarioValidation,
    _fmt_ci,
    _num,
    _rate,
    describe_load,
    group_not_compared,
)

__all__ = ["write_report", "agreement_table", "overview_rows"]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "scenario"


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# --------------------------------------------------------------------------------------
# Figures


def plot_metrics(result: ScenarioValidation, path: Path) -> Path | None:
    metrics = [m for m in result.metrics if any(v is not None for v in m.sim + m.real)]
    if not metrics:
        return None
    plt = _plt()
    cols = min(4, len(metrics))
    rows = math.ceil(len(metrics) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False)
    for ax in axes.flat[len(metrics):]:
        ax.axis("off")
    for ax, metric in zip(axes.flat, metrics, strict=False):  # more axes than metrics
        for x, (label, values, color) in enumerate((("sim", metric.sim, "tab:blue"), ("real", metric.real, "tab:orange"))):
            data = [v for v in values if v is not None]
            if not data:
                continue
            jitter = np.linspace(-0.12, 0.12, len(data)) if len(data) > 1 else [0.0]
            ax.scatter([x + j for j in jitter], data, color=color, s=18, alpha=0.8, zorder=3)
            mean, low, high = metric.stats(label)
            if mean is not None and low is not None and high is not None:
                ax.errorbar([x], [mean], yerr=[[mean - low], [high - mean]], fmt="_", color="black", capsize=6, zorder=4)
        ax.set_xticks([0, 1])
        ax.set_xticklabels(["sim", "real"])
        ax.set_xlim(-0.6, 1.6)
        colour = {"agrees": "green", "differs": "red"}.get(metric.verdict, "grey")
        ax.set_title(_wrap(metric.metric, 34), fontsize=8)
        ax.text(0.98, 0.02, metric.verdict, transform=ax.transAxes, ha="right", va="bottom", fontsize=8, color=colour)
        ax.tick_params(labelsize=7)
    fig.suptitle(f"{result.scenario}: replication values (dots), mean and 95% CI (bars)", fontsize=9)
    plain_text(fig).tight_layout()  # names from the scenario as plain text, not mathtext
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _subsample(values: np.ndarray, limit: int = 100_000) -> np.ndarray:
    if len(values) <= limit:
        return values
    return np.random.default_rng(0).choice(values, limit, replace=False)


def plot_latency(result: ScenarioValidation, path: Path) -> Path | None:
    sim = result.sim_samples.get("latency")
    real = result.real_samples.get("latency")
    if not sim or not real:
        return None
    sim_all = _subsample(np.concatenate(sim))
    real_all = _subsample(np.concatenate(real))
    if not len(sim_all) or not len(real_all):
        return None
    plt = _plt()
    fig, (ax_hist, ax_cdf) = plt.subplots(1, 2, figsize=(9, 3.2))
    low = max(min(sim_all.min(), real_all.min()), 1e-7)
    high = max(sim_all.max(), real_all.max(), low * 10)
    bins = np.logspace(math.log10(low), math.log10(high), 50)
    ax_hist.hist(sim_all, bins=bins, alpha=0.55, label=f"sim (n={len(sim_all)})", color="tab:blue", density=True)
    ax_hist.hist(real_all, bins=bins, alpha=0.55, label=f"real (n={len(real_all)})", color="tab:orange", density=True)
    ax_hist.set_xscale("log")
    ax_hist.set_xlabel("latency (s)")
    ax_hist.legend(fontsize=7)
    for data, label, color in ((sim_all, "sim", "tab:blue"), (real_all, "real", "tab:orange")):
        ordered = np.sort(data)
        ax_cdf.step(ordered, np.arange(1, len(ordered) + 1) / len(ordered), where="post", label=label, color=color)
    ax_cdf.set_xscale("log")
    ax_cdf.set_xlabel("latency (s)")
    ax_cdf.set_ylabel("fraction of deliveries")
    ax_cdf.legend(fontsize=7)
    fig.suptitle(f"{result.scenario}: per-message latency, all replications pooled", fontsize=9)
    plain_text(fig).tight_layout()  # names from the scenario as plain text, not mathtext
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_depth(result: ScenarioValidation, path: Path, top: int = 6) -> Path | None:
    traces = {name: trace for name, trace in result.depth.items() if len(trace) and trace[:, 1].max() > 0}
    if not traces:
        return None
    chosen = sorted(traces, key=lambda name: -traces[name][:, 1].max())[:top]
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 3.4))
    for name in chosen:
        trace = _thin(traces[name])
        ax.step(trace[:, 0], trace[:, 1], where="post", label=name, linewidth=1)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("messages in pipe")
    ax.legend(fontsize=7, loc="upper right")
    ax.set_title(f"{result.scenario}: pipe depth over time (simulation, seed {result.seeds[0]})", fontsize=9)
    plain_text(fig).tight_layout()  # names from the scenario as plain text, not mathtext
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _thin(trace: np.ndarray, points: int = 4000) -> np.ndarray:
    """At most about ``points`` steps: per time bucket keep the first and the largest
    value, so peaks survive."""
    if len(trace) <= points:
        return trace
    buckets = np.linspace(trace[0, 0], trace[-1, 0], points // 2 + 1)
    index = np.clip(np.searchsorted(buckets, trace[:, 0], side="right") - 1, 0, len(buckets) - 1)
    keep = np.zeros(len(trace), dtype=bool)
    _, first = np.unique(index, return_index=True)
    keep[first] = True
    order = np.lexsort((-trace[:, 1], index))
    _, top = np.unique(index[order], return_index=True)
    keep[order[top]] = True
    keep[-1] = True
    return trace[keep]


def _wrap(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    parts = text.split(".")
    lines, line = [], ""
    for part in parts:
        piece = part if not line else "." + part
        if len(line) + len(piece) > width and line:
            lines.append(line)
            line = part
        else:
            line += piece
    lines.append(line)
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# Markdown


def overview_rows(results: Sequence[ScenarioValidation]) -> list[dict[str, Any]]:
    rows = []
    for result in results:
        for metric in result.metrics:
            rows.append({
                "scenario": result.scenario,
                "metric": metric.metric,
                "sim": _fmt_ci(metric.stats("sim")),
                "real": _fmt_ci(metric.stats("real")),
                "tolerance": metric.tolerance.describe(),
                "verdict": metric.verdict,
                "note": (metric.note or {}).get("reason", "") if metric.verdict == "differs" else "",
                "detail": metric.detail,
                "machine_bound": result.machine_bound,
                "machine_reason": _bound_short(result) if result.machine_bound else "",
            })
        for entry in result.question_not_compared:  # what the question depends on and was not compared
            rows.append({
                "scenario": result.scenario, "metric": entry.metric, "sim": "-", "real": "-", "tolerance": "-",
                "verdict": "not compared", "note": entry.reason, "detail": entry.reason,
                "machine_bound": result.machine_bound,
                "machine_reason": _bound_short(result) if result.machine_bound else "",
            })
    return rows


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def agreement_table(results: Sequence[ScenarioValidation], notes: bool = True) -> str:
    """The Markdown agreement table (scenario, metric, sim, real, verdict)."""
    lines = ["| scenario | metric | sim mean [95% CI] | real mean [95% CI] | tolerance | verdict |",
             "|---|---|---|---|---|---|"]
    for row in overview_rows(results):
        verdict = row["verdict"]
        if row.get("machine_bound") and verdict in ("agrees", "differs"):
            verdict = f"{verdict} (machine-bound run: {row.get('machine_reason') or 'the real side missed its schedule'})"
        elif verdict == "differs":
            verdict = "**differs**" + (" (known, see notes)" if row["note"] else " (unexplained)")
        elif verdict == "not compared":
            verdict = f"**not compared**, the question depends on it: {_md_escape(row['note'])}"
        lines.append(f"| {row['scenario']} | `{row['metric']}` | {row['sim']} | {row['real']} | {row['tolerance']} | {verdict} |")
    return "\n".join(lines)


def scenario_table(results: Sequence[ScenarioValidation]) -> str:
    """One row per scenario: how many metrics agree and which differ (known or not)."""
    lines = ["| scenario | replications | metrics agreeing | verdict | differing metrics |", "|---|---|---|---|---|"]
    for result in results:
        checked = [m for m in result.metrics if m.verdict in ("agrees", "differs")]
        agreeing = sum(1 for m in checked if m.verdict == "agrees")
        differing = [f"`{m.metric}`" + ("" if m.note else " **(unexplained)**") for m in checked if m.verdict == "differs"]
        verdict = result.verdict
        if verdict == "machine-bound":
            verdict = f"machine-bound ({_bound_short(result)})"
        elif verdict == "differs":
            verdict = "differs (known)" if not result.unexplained else "**differs (unexplained)**"
        elif verdict == "incomplete":
            verdict = f"**incomplete** ({len(result.question_not_compared)} the question depends on not compared)"
        lines.append(f"| {result.scenario} | {result.replications} | {agreeing} of {len(checked)} | {verdict} | {', '.join(differing)} |")
    return "\n".join(lines)


def replace_between_markers(path: Path, name: str, text: str) -> bool:
    """Replace what sits between ``<!-- name:begin -->`` and ``<!-- name:end -->`` in a file."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    try:
        content = path.read_text()
    except OSError:
        return False
    start, stop = content.find(begin), content.find(end)
    if start < 0 or stop < start:
        return False
    path.write_text(content[: start + len(begin)] + "\n" + text.rstrip("\n") + "\n" + content[stop:])
    return True


def _scenario_section(result: ScenarioValidation, out: Path) -> list[str]:
    slug = _slug(result.scenario)
    lines = [f"## {result.scenario}", ""]
    if result.description:
        lines += [result.description.strip(), ""]
    lines.append(f"Source: `{shown_path(result.source)}`. {result.replications} replications per side (seeds {result.seeds[0]} to "
                 f"{result.seeds[-1]}); simulation {result.wall_sim_s:.1f} s, real runs {result.wall_real_s:.1f} s. "
                 f"**Verdict: {_md_escape(result.verdict_text if result.verdict != 'machine-bound' else result.verdict)}.**")
    if result.machine_bound:
        what = "The real side missed its own schedule" if result.schedule.get("missed") else "This machine ran slower than its profile"
        lines += ["", f"**{what}:** {_md_escape(result.verdict_reason)}. "
                      f"(The metrics alone: {result.metrics_verdict}.)"]
    lines += ["", _machine_line(result)]
    lines.append("")
    lines.append("| metric | sim mean [95% CI] | real mean [95% CI] | sim values | real values | tolerance | verdict |")
    lines.append("|---|---|---|---|---|---|---|")
    for metric in result.metrics:
        lines.append(
            f"| `{metric.metric}` | {_fmt_ci(metric.stats('sim'))} | {_fmt_ci(metric.stats('real'))} | "
            f"{_values(metric.sim)} | {_values(metric.real)} | {metric.tolerance.describe()} | "
            f"{metric.verdict}{(' (' + _md_escape(metric.detail) + ')') if metric.detail and metric.verdict != 'agrees' else ''} |")
    lines.append("")
    lines += _not_compared_lines(result)
    senders = _sender_lines(result)
    if senders:
        lines += senders + [""]
    for metric in result.metrics:
        if metric.verdict == "differs":
            if metric.note:
                lines.append(f"- **`{metric.metric}` differs.** Why: {metric.note['reason']}")
                if metric.note.get("model_lacks"):
                    lines.append(f"  What the model lacks: {metric.note['model_lacks']}")
            else:
                lines.append(f"- **`{metric.metric}` differs, unexplained.** {metric.detail}")
        elif metric.note and metric.verdict == "agrees":
            lines.append(f"- `{metric.metric}` agrees in this run; the scenario notes a difference seen in other runs "
                         f"(or before a model fix): {metric.note['reason']}")
        elif metric.note:
            lines.append(f"- `{metric.metric}` is {metric.verdict}. {metric.note['reason']}")
    indices = _index_lines(result)
    if indices:
        lines += ["", "Message indices that arrived (real runs):", ""] + indices
    for error in result.real_errors + result.sim_errors:
        first = error.strip().splitlines()[0] if error.strip() else error
        lines.append(f"- run problem: {_md_escape(first)}")
    lines.append("")
    for name, plotter in (("metrics", plot_metrics), ("latency", plot_latency), ("depth", plot_depth)):
        try:
            written = plotter(result, out / f"{slug}-{name}.png")
        except Exception as exc:  # noqa: BLE001 - a figure never stops the report
            lines.append(f"(figure {name} failed: {exc})")
            continue
        if written is not None:
            lines.append(f"![{result.scenario} {name}]({written.name})")
            lines.append("")
    return lines


def _not_compared_lines(result: ScenarioValidation) -> list[str]:
    """Every metric zsim reports for the design that was not compared, by reason; first, in
    bold, what the question depends on (it keeps the verdict from "agrees")."""
    if not result.not_compared:
        return []
    lines = [f"Not compared ({len(result.not_compared)} metric names; `results.json` lists each with its reason):", ""]
    for question in (True, False):
        group = [entry for entry in result.not_compared if entry.question is question]
        for reason, names in group_not_compared(group):
            listed = ", ".join(f"`{name}`" for name in names)
            if question:
                lines.append(f"- **the question depends on it: {_md_escape(reason)}**: {listed}")
            else:
                lines.append(f"- {_md_escape(reason)}: {listed}")
    return lines + [""]


def _sender_lines(result: ScenarioValidation) -> list[str]:
    """Requested against achieved rate per sender (mean and range over the replications),
    and a bold line per side that achieved less than 95 % of the requested rate."""
    rates = result.sender_rates
    if not rates:
        return []
    lines = [f"Offered load per sender: the requested rate (max: back to back) and the rate achieved, mean over the "
             f"replications (min–max); below {ACHIEVED_RATE_SHARE * 100:g} % the downstream metrics compare a different "
             "offered load than the scenario asks.", "",
             "| sender | asked /s | real achieved /s | sim achieved /s | offered load |", "|---|---|---|---|---|"]
    for r in rates:
        asked = "max" if r.requested is None else _rate(r.requested)
        flag = r.flag()
        lines.append(f"| `{r.name}` | {asked} | {r.cell('real')} | {r.cell('sim')} | "
                     f"{'**' + flag + '**' if 'below' in flag else flag} |")
    warnings = [text for r in rates for text in r.warnings()]
    if warnings:
        lines.append("")
        lines.extend(f"- **{_md_escape(text)}**" for text in warnings)
    return lines


def _bound_short(result: ScenarioValidation) -> str:
    """Why a scenario is machine-bound, in a table cell."""
    if result.schedule.get("missed"):
        return f"real side at {result.schedule['worst_rate_fraction'] * 100:.0f} % of the requested rate"
    return (f"machine {result.speed['machine_factor']:.1f}x slower than its profile, real {result.speed['sender']} "
            f"{result.speed['sender_slowdown']:.1f}x slower than simulated")


def _machine_line(result: ScenarioValidation) -> str:
    """Load before and after, and how close the real workloads kept to their schedules."""
    text = describe_load(result.machine_before, result.machine_after).capitalize() + "."
    worst = result.schedule.get("worst")
    if worst is not None:
        text += (f" Slowest paced real sender: `{worst['sender']}` (seed {worst['seed']}) at "
                 f"{result.schedule['worst_rate_fraction'] * 100:.0f} % of its requested rate, "
                 f"{worst['behind_s'] * 1000:.1f} ms behind its schedule at its last send "
                 f"(margin {result.schedule['margin'] * 100:g} %).")
    return text


def _values(values: Sequence[float | None]) -> str:
    shown = [_num(v) if v is not None else "–" for v in values]
    if len(shown) > 6:
        shown = shown[:6] + ["…"]
    return ", ".join(shown)


def _index_lines(result: ScenarioValidation) -> list[str]:
    lines = []
    for run_index, summary in enumerate(result.real_summaries):
        indices = summary.get("real", {}).get("indices", {})
        for sock, origins in indices.items():
            for origin, runs in origins.items():
                if len(runs) > 8:
                    text = ", ".join(_run_text(r) for r in runs[:8]) + f", … ({len(runs)} runs)"
                else:
                    text = ", ".join(_run_text(r) for r in runs)
                lines.append(f"- seed {result.seeds[run_index] if run_index < len(result.seeds) else '?'}: `{sock}` got from "
                             f"`{origin}`: {text}")
    return lines if len(lines) <= 40 else lines[:40] + ["- …"]


def _run_text(run: Sequence[int]) -> str:
    return str(run[0]) if run[0] == run[1] else f"{run[0]}..{run[1]}"


def write_report(results: Sequence[ScenarioValidation], out_dir: str | Path, title: str = "zsim validation",
                 preamble: str = "") -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"# {title}", ""]
    if preamble:
        lines += [preamble.strip(), ""]
    total = len(results)
    agree = sum(1 for r in results if r.verdict == "agrees")
    explained = sum(1 for r in results if r.verdict == "differs" and not r.unexplained)
    bound = sum(1 for r in results if r.verdict == "machine-bound")
    incomplete = sum(1 for r in results if r.verdict == "incomplete")
    lines.append(f"{total} scenario(s): {agree} agree on every metric their question depends on, {explained} differ only "
                 f"where the scenario explains why, {incomplete} incomplete (what was compared agrees, but not everything "
                 f"the question depends on was compared), {total - agree - explained - bound - incomplete} differ without an "
                 "explanation or failed"
                 + (f", {bound} machine-bound (the real side missed its schedule by more than "
                    f"{SCHEDULE_MARGIN * 100:g} %, or its back-to-back senders ran at the speed of a machine more than "
                    f"{1 + SPEED_MARGIN:g}x slower than its profile that day: those numbers measure the machine)" if bound else "") + ".")
    lines.append("")
    lines.append(agreement_table(results))
    lines.append("")
    for result in results:
        lines += _scenario_section(result, out)
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n")
    (out / "results.json").write_text(json.dumps([r.to_json() for r in results], indent=1, default=json_default))
    return path
