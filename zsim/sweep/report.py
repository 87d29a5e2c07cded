"""``zsim report``: per-point means and 95 % confidence intervals, answers to threshold
questions, figures and a Markdown summary, from a sweep's Parquet rows.

Statistics. Replications of a point are independent runs (seeds from ``plan.seed_for``),
so a metric's per-point mean gets a Student-t interval: mean +- t(0.975, n-1) * sd / sqrt(n)
over the runs that finished (failed runs are counted, not averaged). With common random
numbers, differences *between* points are estimated more precisely than these per-point
intervals suggest (the same replication sees the same arrivals at every point).

A threshold question ("the smallest HWM that keeps drops under 0.1 %") is answered per
combination of the other axes as the smallest value of the minimised axis from which on
the metric stays below the target at every larger value, judged twice: by the mean, and
by the upper end of the 95 % interval (the conservative answer).

pandas is imported lazily; figures go through ``zsim.plotting`` (matplotlib).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import files
from ..errors import EnvironmentFault, ScenarioError, ZsimError
from . import store
from .plan import Axis, resolve_axis

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

DEFAULT_METRICS = (
    "drop_fraction",
    "loss_fraction",
    "delivered_rate_per_s",
    "latency_mean_s",
    "latency_p50_s",
    "latency_p95_s",
    "latency_p99_s",
    "max_pipe_depth",
)
LABELS = {
    "drop_fraction": "drop fraction",
    "loss_fraction": "loss fraction",
    "delivered_rate_per_s": "delivered rate (msg/s)",
    "latency_mean_s": "mean latency (ms)",
    "latency_p50_s": "latency p50 (ms)",
    "latency_p95_s": "latency p95 (ms)",
    "latency_p99_s": "latency p99 (ms)",
    "latency_max_s": "max latency (ms)",
    "max_pipe_depth": "max queue depth (messages)",
}
#: t(0.975, df) for df = 1..30 (beyond: a Cornish-Fisher expansion; scipy if installed).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
MAX_TABLE_ROWS = 300


def _pandas() -> Any:
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ZsimError("reports need pandas and pyarrow: pip install 'zsim[results]'") from exc
    return pd


def t975(df: int) -> float:
    """The 97.5 % quantile of Student's t with ``df`` degrees of freedom."""
    if df < 1:
        return math.nan
    try:
        from scipy import stats

        return float(stats.t.ppf(0.975, df))
    except ImportError:
        pass
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959963984540054
    return (z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3))


def metric_label(metric: str) -> str:
    return LABELS.get(metric, metric)


def display_scale(metric: str) -> float:
    """Latencies are stored in seconds and shown in milliseconds."""
    return 1000.0 if metric.startswith("latency_") and metric.endswith("_s") else 1.0


# --------------------------------------------------------------------------------------
# Loading


class SweepResults:
    """One sweep's rows (a DataFrame) and its manifest (axes, points, report settings)."""

    def __init__(self, directory: Path, warn: store.Warn | None = None) -> None:
        self.directory = directory
        manifest = store.read_manifest(directory)
        if manifest is None:
            raise ZsimError(f"{directory}: no {store.MANIFEST} (not written by zsim sweep?)")
        self.manifest = manifest
        self.name: str = manifest["name"]
        self.axes = [Axis(path=a["path"], label=a.get("label") or a["path"],
                          values=tuple(a["values"]) if a.get("values") is not None else None,
                          low=a.get("low"), high=a.get("high"), scale=a.get("scale", "linear")) for a in manifest["axes"]]
        self.kinds = {a["path"]: a.get("kind", "float") for a in manifest["axes"]}
        self.report_config: Mapping[str, Any] = manifest.get("report") or {}
        self.frame = store.read_frame(directory, warn=warn)
        order = {p["id"]: p["index"] for p in manifest["points"]}
        if len(self.frame):
            self.frame["point_index"] = self.frame["point"].map(order)
            self.frame = self.frame.sort_values(["point_index", "replication"], kind="stable").reset_index(drop=True)

    @property
    def axis_columns(self) -> list[str]:
        return [a.path for a in self.axes]

    def axis(self, key: str) -> Axis:
        return resolve_axis(self.axes, key)

    def label(self, key: str) -> str:
        try:
            return self.axis(key).label
        except KeyError:
            return metric_label(key)

    def ok(self) -> pd.DataFrame:
        frame = self.frame
        return frame[frame["ok"].astype(bool)] if len(frame) else frame

    def metrics(self, wanted: Iterable[str] | None = None) -> list[str]:
        names = list(wanted) if wanted else list(self.report_config.get("metrics") or DEFAULT_METRICS)
        missing = [m for m in names if m not in self.frame.columns]
        if missing and len(self.ok()):
            raise ZsimError(f"{self.directory}: no metric {missing[0]!r} in the results; metrics: "
                            f"{', '.join(c for c in self.frame.columns if c not in self.axis_columns)}")
        return [m for m in names if m in self.frame.columns]


# --------------------------------------------------------------------------------------
# Aggregation


def aggregate(frame: pd.DataFrame, keys: Sequence[str], metrics: Sequence[str]) -> pd.DataFrame:
    """Per group of ``keys``: runs, failed runs, and for each metric its mean, standard
    deviation, 95 % interval half-width (``_ci``) and bounds (``_lo``, ``_hi``)."""
    pd = _pandas()
    import numpy as np

    keys = list(keys)
    if not len(frame):
        return pd.DataFrame(columns=keys + ["runs", "failed"])
    grouped_all = frame.groupby(keys, sort=True, dropna=False)
    result = grouped_all.size().rename("runs").to_frame()
    result["failed"] = grouped_all["ok"].apply(lambda s: int((~s.astype(bool)).sum()))
    ok = frame[frame["ok"].astype(bool)]
    for metric in metrics:
        values = pd.to_numeric(ok[metric], errors="coerce").astype(float)
        stats = values.groupby([ok[k] for k in keys], sort=True, dropna=False).agg(["mean", "std", "count"])
        stats.index.names = keys
        half = stats.apply(lambda r: t975(int(r["count"]) - 1) * r["std"] / math.sqrt(r["count"]) if r["count"] > 1 else np.nan, axis=1)
        result[f"{metric}_mean"] = stats["mean"]
        result[f"{metric}_sd"] = stats["std"]
        result[f"{metric}_ci"] = half
        result[f"{metric}_lo"] = stats["mean"] - half
        result[f"{metric}_hi"] = stats["mean"] + half
    return result.reset_index()


def points_table(results: SweepResults, metrics: Sequence[str]) -> pd.DataFrame:
    """One row per point: its index, id, axis values, runs, and each metric's mean and CI."""
    frame = results.frame
    if not len(frame):
        pd = _pandas()
        return pd.DataFrame(columns=["point_index", "point"] + results.axis_columns + ["runs", "failed"])
    table = aggregate(frame, ["point_index", "point"] + results.axis_columns, metrics)
    return table.sort_values("point_index").reset_index(drop=True)


def _matches(series: pd.Series, value: Any) -> pd.Series:
    import numpy as np

    if isinstance(value, list):  # any of these values
        mask = np.zeros(len(series), dtype=bool)
        for item in value:
            mask |= np.asarray(_matches(series, item), dtype=bool)
        return mask
    if isinstance(value, float) or (isinstance(value, int) and series.dtype.kind == "f"):
        return np.isclose(series.astype(float), float(value), rtol=1e-9, atol=0)
    if not isinstance(value, (str, int, float, bool)):
        value = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return series == value


def _filter(results: SweepResults, frame: pd.DataFrame, where: Mapping[str, Any]) -> pd.DataFrame:
    for key, value in where.items():
        column = results.axis(key).path
        frame = frame[_matches(frame[column], value)]
        if not len(frame):
            raise ZsimError(f"report: no rows with {column} = {value!r}")
    return frame


def _pooled_note(results: SweepResults, frame: pd.DataFrame, used: Iterable[str]) -> str | None:
    used = set(used)
    pooled = [results.label(a.path) for a in results.axes if a.path not in used and frame[a.path].nunique() > 1]
    return f"pooled over {', '.join(pooled)} (every run of those points counts)" if pooled else None


# --------------------------------------------------------------------------------------
# Thresholds


def thresholds(results: SweepResults, spec: Mapping[str, Any]) -> pd.DataFrame:
    """The smallest value of ``spec.minimise`` that keeps ``spec.metric`` below ``spec.below``,
    per combination of ``spec.by`` (default: every other axis)."""
    pd = _pandas()
    metric = spec["metric"]
    target = float(spec["below"])
    x = results.axis(spec["minimise"]).path
    by = [results.axis(k).path for k in spec.get("by", [a.path for a in results.axes if a.path != x])]
    table = aggregate(results.ok() if len(results.frame) else results.frame, by + [x], [metric]) if len(results.frame) else None
    rows = []
    if table is None or not len(table):
        return pd.DataFrame(columns=by + ["smallest_by_mean", "smallest_by_upper_ci"])
    groups = table.groupby(by, sort=True) if by else [((), table)]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        group = group.sort_values(x)
        xs = group[x].tolist()
        means = group[f"{metric}_mean"].tolist()
        highs = group[f"{metric}_hi"].fillna(group[f"{metric}_mean"]).tolist()
        row = dict(zip(by, key, strict=True))

        def smallest(values: list[float], xs: list[Any] = xs) -> Any:
            answer = None
            for value, level in zip(reversed(xs), reversed(values), strict=True):
                if level is not None and level == level and level < target:
                    answer = value
                else:
                    break
            return answer

        best_mean, best_hi = smallest(means), smallest(highs)
        row["smallest_by_mean"] = best_mean
        row["smallest_by_upper_ci"] = best_hi
        if best_hi is not None:
            at = group[group[x] == best_hi].iloc[0]
            row["metric_mean_there"] = at[f"{metric}_mean"]
            row["metric_upper_ci_there"] = at[f"{metric}_hi"]
        else:
            row["metric_mean_there"] = None
            row["metric_upper_ci_there"] = None
        row["largest_tried"] = xs[-1]
        rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------
# Figures


def _slug(text: str) -> str:
    keep = "".join(ch if ch.isalnum() else "-" for ch in text.lower())
    while "--" in keep:
        keep = keep.replace("--", "-")
    return keep.strip("-")[:80]


def _is_log_axis(values: Sequence[Any]) -> bool:
    numbers = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return len(numbers) >= 3 and min(numbers) > 0 and max(numbers) / min(numbers) >= 20


def _fmt_value(value: Any) -> str:
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))  # a size or count read back as float: 65536, not 6.554e+04
        return f"{value:.4g}"
    return str(value)


def line_figure(results: SweepResults, spec: Mapping[str, Any], out_dir: Path, hlines: Mapping[str, float]) -> Path:
    from .. import plotting

    x = results.axis(spec["x"]).path
    metrics = spec.get("y", spec.get("metric", "drop_fraction"))
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    series = results.axis(spec["series"]).path if spec.get("series") else None
    facet = results.axis(spec["facet"]).path if spec.get("facet") else None
    where = spec.get("where", {})
    frame = _filter(results, results.frame, where)
    keys = [k for k in (facet, series, x) if k]
    table = aggregate(frame, keys, metrics)
    scale = display_scale(metrics[0])
    panels = []
    facet_values = sorted(table[facet].unique()) if facet else [None]
    series_values = sorted(table[series].unique()) if series else [None]
    styles = ["-", "--", ":", "-."]
    for facet_value in facet_values:
        sub = table[table[facet] == facet_value] if facet else table
        panel = plotting.Panel(title=f"{results.label(facet)} = {_fmt_value(facet_value)}" if facet else "")
        for s_index, series_value in enumerate(series_values):
            line_rows = (sub[sub[series] == series_value] if series else sub).sort_values(x)
            for m_index, metric in enumerate(metrics):
                label_parts = []
                if series:
                    label_parts.append(_fmt_value(series_value))
                if len(metrics) > 1:
                    label_parts.append(metric_label(metric).split(" (")[0])
                band = spec.get("band", True)
                panel.lines.append(
                    plotting.Line(
                        label=", ".join(label_parts) or metric_label(metric),
                        x=line_rows[x].astype(float).tolist(),
                        y=(line_rows[f"{metric}_mean"] * scale).tolist(),
                        # Every metric here is >= 0; a band below zero is the t interval's symmetry, not data.
                        low=(line_rows[f"{metric}_lo"].clip(lower=0) * scale).tolist() if band else None,
                        high=(line_rows[f"{metric}_hi"] * scale).tolist() if band else None,
                        style=styles[m_index % len(styles)],
                        color_index=s_index,
                    )
                )
        panels.append(panel)
    logy = spec.get("logy", metrics[0].endswith("_fraction"))
    if logy is True and metrics[0].endswith("_fraction"):
        logy = "symlog"
    ylabel = (metric_label(metrics[0]) if len(metrics) == 1
              else ", ".join(metric_label(m).split(" (")[0] for m in metrics) + (" (ms)" if scale == 1000 else ""))
    title = spec.get("title") or f"{ylabel} against {results.label(x)}" + (f", by {results.label(series)}" if series else "")
    notes = ["shaded: 95 % confidence interval of the mean"]
    pooled = _pooled_note(results, frame, keys + list(results.axis(k).path for k in where))
    if pooled:
        notes.append(pooled)
    if where:
        notes.append("where " + ", ".join(f"{results.label(k)} = "
                                          f"{_fmt_value(v) if not isinstance(v, list) else ' or '.join(map(_fmt_value, v))}"
                                          for k, v in where.items()))
    name = spec.get("file") or _slug(f"{'-'.join(metrics)}-vs-{results.label(x)}"
                                     + (f"-by-{results.label(series)}" if series else "")) + ".png"
    hline = hlines.get(metrics[0]) if len(metrics) == 1 else None
    return plotting.line_figure(
        panels, out_dir / name, title=title, xlabel=results.label(x), ylabel=ylabel,
        logx=spec.get("logx", _is_log_axis(table[x].tolist())), logy=logy,
        hline=hline * scale if hline is not None else None, hline_label=f"target {hline:g}" if hline is not None else None,
        note="; ".join(notes), legend_title=results.label(series) if series else None,
    )


def heatmap_figure(results: SweepResults, spec: Mapping[str, Any], out_dir: Path) -> Path:
    from .. import plotting

    x = results.axis(spec["x"]).path
    y = results.axis(spec["y"]).path
    metric = spec.get("metric", "drop_fraction")
    facet = results.axis(spec["facet"]).path if spec.get("facet") else None
    where = spec.get("where", {})
    frame = _filter(results, results.frame, where)
    keys = [k for k in (facet, y, x) if k]
    table = aggregate(frame, keys, [metric])
    scale = display_scale(metric)
    xs = sorted(table[x].unique())
    ys = sorted(table[y].unique())
    grids = []
    for facet_value in (sorted(table[facet].unique()) if facet else [None]):
        sub = table[table[facet] == facet_value] if facet else table
        pivot = sub.pivot_table(index=y, columns=x, values=f"{metric}_mean", aggfunc="mean").reindex(index=ys, columns=xs)
        grids.append(plotting.Grid(title=f"{results.label(facet)} = {_fmt_value(facet_value)}" if facet else "", x=xs, y=ys,
                                   values=pivot.to_numpy() * scale))
    pooled = _pooled_note(results, frame, keys + [results.axis(k).path for k in where])
    title = spec.get("title") or f"{metric_label(metric)} (mean) over {results.label(x)} and {results.label(y)}"
    name = spec.get("file") or _slug(f"heatmap-{metric}-{results.label(x)}-{results.label(y)}") + ".png"
    return plotting.heatmap_figure(grids, out_dir / name, title=title, xlabel=results.label(x), ylabel=results.label(y),
                                   colorbar_label=metric_label(metric), symlog=metric.endswith("_fraction"), note=pooled)


def scatter_figure(results: SweepResults, spec: Mapping[str, Any], out_dir: Path) -> Path:
    from .. import plotting

    x = results.axis(spec["x"]).path
    metric = spec.get("metric", spec.get("y", "drop_fraction"))
    colour = results.axis(spec["series"]).path if spec.get("series") else None
    frame = _filter(results, results.frame, spec.get("where", {}))
    table = aggregate(frame, ["point"] + [a.path for a in results.axes], [metric])
    scale = display_scale(metric)
    name = spec.get("file") or _slug(f"scatter-{metric}-vs-{results.label(x)}") + ".png"
    return plotting.scatter_figure(
        table[x].astype(float).tolist(), (table[f"{metric}_mean"] * scale).tolist(), out_dir / name,
        title=spec.get("title") or f"{metric_label(metric)} against {results.label(x)} (one dot per point)",
        xlabel=results.label(x), ylabel=metric_label(metric),
        colour=table[colour].astype(float).tolist() if colour else None, colour_label=results.label(colour) if colour else None,
        yerr=(table[f"{metric}_ci"].fillna(0) * scale).tolist(), logx=spec.get("logx", _is_log_axis(table[x].tolist())),
        logy="symlog" if metric.endswith("_fraction") else spec.get("logy", False),
        note="bars: 95 % confidence interval of the mean",
    )


def threshold_figure(results: SweepResults, spec: Mapping[str, Any], threshold: Mapping[str, Any], table: pd.DataFrame,
                     out_dir: Path) -> Path:
    from .. import plotting

    x = results.axis(spec["x"]).path
    series = results.axis(spec["series"]).path if spec.get("series") else None
    facet = results.axis(spec["facet"]).path if spec.get("facet") else None
    minimise = results.axis(threshold["minimise"]).path
    panels = []
    for facet_value in (sorted(table[facet].unique()) if facet else [None]):
        sub = table[table[facet] == facet_value] if facet else table
        panel = plotting.Panel(title=f"{results.label(facet)} = {_fmt_value(facet_value)}" if facet else "")
        for index, series_value in enumerate(sorted(sub[series].unique()) if series else [None]):
            rows = (sub[sub[series] == series_value] if series else sub).sort_values(x)
            panel.lines.append(plotting.Line(
                label=_fmt_value(series_value) if series else "95 % upper bound", x=rows[x].astype(float).tolist(),
                y=[float(v) if v is not None and v == v else float("nan") for v in rows["smallest_by_upper_ci"]], color_index=index))
            panel.lines.append(plotting.Line(
                label=(_fmt_value(series_value) + " (mean)") if series else "mean", x=rows[x].astype(float).tolist(),
                y=[float(v) if v is not None and v == v else float("nan") for v in rows["smallest_by_mean"]], style=":", color_index=index))
        panels.append(panel)
    metric = threshold["metric"]
    title = spec.get("title") or threshold.get("title") or (
        f"smallest {results.label(minimise)} keeping {metric_label(metric)} < {float(threshold['below']):g}")
    name = spec.get("file") or _slug(f"threshold-{metric}-{results.label(minimise)}-vs-{results.label(x)}") + ".png"
    return plotting.line_figure(
        panels, out_dir / name, title=title, xlabel=results.label(x), ylabel=f"smallest {results.label(minimise)}",
        logx=spec.get("logx", _is_log_axis(table[x].tolist())), logy=spec.get("logy", True),
        note="solid: the 95 % upper bound is below the target (conservative); dotted: the mean is; gaps: no value tried is enough",
        legend_title=results.label(series) if series else None,
    )


def default_figures(results: SweepResults) -> list[dict[str, Any]]:
    """Figures worth drawing for any sweep, chosen from its axes."""
    axes = results.axes
    frame = results.frame
    if not len(frame) or not axes:
        return []
    counts = {a.path: frame[a.path].nunique() for a in axes}
    design = results.manifest.get("design", "grid")
    figures: list[dict[str, Any]] = []
    if design != "grid":
        for index, axis in enumerate(axes[:4]):
            other = axes[(index + 1) % len(axes)] if len(axes) > 1 else None
            figures.append({"kind": "scatter", "x": axis.path, "metric": "drop_fraction", **({"series": other.path} if other else {})})
        return figures
    hwm = [a for a in axes if "hwm" in a.path.lower()]
    x_axis = hwm[0] if hwm else max(axes, key=lambda a: counts[a.path])
    others = sorted((a for a in axes if a is not x_axis), key=lambda a: counts[a.path])
    series = others[0].path if others and counts[others[0].path] <= 8 else None
    facet = others[1].path if len(others) > 1 and counts[others[1].path] <= 9 else None
    base = {"x": x_axis.path, **({"series": series} if series else {}), **({"facet": facet} if facet else {})}
    for metric in ("drop_fraction", "latency_p99_s", "delivered_rate_per_s", "max_pipe_depth"):
        figures.append({"kind": "line", "y": metric, **base})
    if others:
        second = max(others, key=lambda a: counts[a.path])
        heat = {"kind": "heatmap", "x": x_axis.path, "y": second.path, "metric": "drop_fraction"}
        rest = [a for a in others if a is not second and counts[a.path] <= 9]
        if rest:
            heat["facet"] = rest[0].path
        figures.append(heat)
    rate = [a for a in axes if a.path.endswith(("rate_per_s", "interval_s"))]
    if rate:
        r = rate[0]
        not_rate = [a for a in axes if a is not r]
        spec: dict[str, Any] = {"kind": "line", "x": r.path, "y": ["latency_p50_s", "latency_p99_s"], "band": True,
                                "title": f"latency against offered load ({r.label})"}
        if not_rate:
            spec["series"] = min(not_rate, key=lambda a: counts[a.path]).path
        figures.append(spec)
    return figures


# --------------------------------------------------------------------------------------
# Markdown


def _cell(mean: Any, ci: Any, metric: str) -> str:
    if mean is None or mean != mean:
        return "-"
    scale = display_scale(metric)
    value = float(mean) * scale
    text = f"{value:.4g}" if not metric.endswith("_fraction") else f"{value:.3%}"
    if ci is not None and ci == ci:
        half = float(ci) * scale
        text += f" ± {half:.2g}" if not metric.endswith("_fraction") else f" ± {half:.2%}"
    return text


def _markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)


def _summary_markdown(results: SweepResults, points: pd.DataFrame, metrics: Sequence[str],
                      threshold_tables: list[tuple[Mapping[str, Any], pd.DataFrame]],
                      figures: Sequence[Path], out_dir: Path) -> str:
    manifest = results.manifest
    frame = results.frame
    n_ok = int(frame["ok"].astype(bool).sum()) if len(frame) else 0
    n_failed = len(frame) - n_ok
    expected = len(manifest["points"]) * manifest["replications"]
    cpu = float(frame["wall_s"].sum()) if len(frame) and "wall_s" in frame else 0.0
    lines = [f"# Sweep `{results.name}`", ""]
    if manifest.get("description"):
        lines += [manifest["description"], ""]
    lines += [
        f"- design: {manifest['design']}, {len(manifest['points'])} points x {manifest['replications']} replications = {expected} runs",
        f"- results: {len(frame)} runs present ({n_ok} ok, {n_failed} failed)"
        + ("" if len(frame) >= expected else f", {expected - len(frame)} missing (re-run the sweep to finish)"),
        f"- root seed {manifest['seed']}, common random numbers: {'yes' if manifest['common_random_numbers'] else 'no'}; "
        f"total run time {cpu:.1f} s (sum over runs)",
        "- intervals: 95 % Student-t confidence intervals of the per-point mean over replications",
    ]
    if len(frame) and "zsim_code" in frame:
        codes = frame["zsim_code"].fillna("?").value_counts()
        if len(codes) > 1:
            lines.append("- **warning: rows from different zsim code** (" + ", ".join(f"{c}: {n} rows" for c, n in codes.items())
                         + "); re-run into a fresh directory for results of one model version")
        elif codes.index[0] != "?":
            lines.append(f"- zsim code fingerprint {codes.index[0]}, version {frame['zsim_version'].iloc[0]}")
    lines += [
        "",
        "## Axes",
        "",
        _markdown_table(["axis", "label", "values"], [
            (f"`{a.path}`", a.label, ", ".join(_fmt_value(v) for v in sorted(frame[a.path].unique()))[:200] if len(frame) else "")
            for a in results.axes
        ]),
        "",
    ]
    if manifest.get("links"):
        lines += ["Linked fields (take the value of an axis): " + ", ".join(f"`{k}` = `{v}`" for k, v in manifest["links"].items()), ""]
    for spec, table in threshold_tables:
        minimise = results.axis(spec["minimise"]).path
        lines += [f"## Smallest {results.label(minimise)} keeping {metric_label(spec['metric'])} below {float(spec['below']):g}", ""]
        answer_columns = ("smallest_by_mean", "smallest_by_upper_ci", "metric_mean_there", "metric_upper_ci_there", "largest_tried")
        by = [c for c in table.columns if c not in answer_columns]
        rows = []
        for _, row in table.iterrows():
            def show(value: Any, largest: Any = row["largest_tried"]) -> str:
                return f"> {_fmt_value(largest)}" if value is None or value != value else _fmt_value(value)

            rows.append([_fmt_value(row[c]) for c in by] + [show(row["smallest_by_upper_ci"]), show(row["smallest_by_mean"]),
                        _cell(row["metric_mean_there"], None, spec["metric"]) if row["metric_mean_there"] is not None else "-"])
        headers = [results.label(c) for c in by] + ["smallest (95 % upper bound)", "smallest (mean)",
                                                    f"{metric_label(spec['metric'])} there"]
        lines += [_markdown_table(headers, rows), ""]
    if figures:
        lines += ["## Figures", ""]
        for path in figures:
            lines += [f"![{path.stem}]({path.relative_to(out_dir).as_posix()})", ""]
    shown = [m for m in ("drop_fraction", "delivered_rate_per_s", "latency_p50_s", "latency_p99_s", "max_pipe_depth") if m in metrics]
    lines += ["## Per point (mean ± 95 % CI half-width)", ""]
    rows = []
    for _, row in points.head(MAX_TABLE_ROWS).iterrows():
        runs = f"{int(row['runs'])}" + (f" ({int(row['failed'])} failed)" if row["failed"] else "")
        rows.append([_fmt_value(row[a.path]) for a in results.axes] + [runs]
                    + [_cell(row.get(f"{m}_mean"), row.get(f"{m}_ci"), m) for m in shown])
    lines.append(_markdown_table([a.label for a in results.axes] + ["runs"] + [metric_label(m) for m in shown], rows))
    if len(points) > MAX_TABLE_ROWS:
        lines += ["", f"(first {MAX_TABLE_ROWS} of {len(points)} points; all of them in points.csv)"]
    lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# Entry point


def check_config(results: SweepResults) -> None:
    """Every metric and axis the manifest's ``[report]`` names must be in the results: a
    sweep written before zsim checked its ``[report]`` could name one that is not. One
    ``ScenarioError`` naming the field, instead of a pandas traceback half-way."""
    config = results.report_config
    if not isinstance(config, Mapping):
        raise ScenarioError("report", "must be a table")
    columns = set(results.frame.columns) if len(results.ok()) else None

    def metric(value: Any, where: str) -> None:
        if not isinstance(value, str):
            raise ScenarioError(where, f"must be a metric name, got {value!r}")
        if columns is not None and value not in columns:
            import difflib

            names = sorted(c for c in columns if c not in results.axis_columns)
            close = difflib.get_close_matches(value, names, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ScenarioError(where, f"unknown metric {value!r}{hint}: no such column in the results")

    def axis(value: Any, where: str) -> None:
        try:
            results.axis(value)
        except (KeyError, TypeError) as exc:
            raise ScenarioError(where, str(exc.args[0]) if exc.args else "not an axis") from None

    for i, name in enumerate(config.get("metrics") or []):
        metric(name, f"report.metrics[{i}]")
    for i, spec in enumerate(config.get("threshold") or []):
        where = f"report.threshold[{i}]"
        if not isinstance(spec, Mapping):
            raise ScenarioError(where, "must be a table")
        for key in ("metric", "below", "minimise"):
            if key not in spec:
                raise ScenarioError(f"{where}.{key}", "missing")
        metric(spec["metric"], f"{where}.metric")
        axis(spec["minimise"], f"{where}.minimise")
        for j, key in enumerate(spec.get("by") or []):
            axis(key, f"{where}.by[{j}]")
        try:
            float(spec["below"])
        except (TypeError, ValueError):
            raise ScenarioError(f"{where}.below", f"must be a number, got {spec['below']!r}") from None
    for i, spec in enumerate(config.get("figure") or []):
        where = f"report.figure[{i}]"
        if not isinstance(spec, Mapping):
            raise ScenarioError(where, "must be a table")
        kind = spec.get("kind", "line")
        if "metric" in spec and kind != "threshold":
            metric(spec["metric"], f"{where}.metric")
        if kind in ("line", "scatter") and "y" in spec:
            ys = spec["y"] if isinstance(spec["y"], list) else [spec["y"]]
            for j, name in enumerate(ys):
                metric(name, f"{where}.y" + (f"[{j}]" if isinstance(spec["y"], list) else ""))
        for key in ("x", "series", "facet") + (("y",) if kind == "heatmap" else ()):
            if key in spec:
                axis(spec[key], f"{where}.{key}")


def report_sweep(directory: Path, out_dir: Path, *, figures: bool = True, warn: store.Warn | None = None) -> list[Path]:
    results = SweepResults(directory, warn)
    check_config(results)
    files.prepare_output_dir(out_dir, "the report folder")
    metrics = results.metrics()
    written: list[Path] = []
    points = points_table(results, metrics)
    path = out_dir / "points.csv"
    points.to_csv(path, index=False)
    written.append(path)

    threshold_tables = []
    for spec in results.report_config.get("threshold", []):
        if len(results.frame):
            threshold_tables.append((spec, thresholds(results, spec)))
    hlines = {spec["metric"]: float(spec["below"]) for spec, _ in threshold_tables}
    if threshold_tables:
        path = out_dir / "thresholds.csv"
        pd = _pandas()
        pd.concat([t.assign(metric=s["metric"], below=s["below"], minimise=results.axis(s["minimise"]).path)
                   for s, t in threshold_tables]).to_csv(path, index=False)
        written.append(path)

    figure_paths: list[Path] = []
    if figures and len(results.ok()):
        specs = list(results.report_config.get("figure", []))
        if not specs or results.report_config.get("default_figures", False):
            specs += default_figures(results)
        for spec in specs:
            kind = spec.get("kind", "line")
            if kind == "line":
                figure_paths.append(line_figure(results, spec, out_dir, hlines))
            elif kind == "heatmap":
                figure_paths.append(heatmap_figure(results, spec, out_dir))
            elif kind == "scatter":
                figure_paths.append(scatter_figure(results, spec, out_dir))
            elif kind == "threshold":
                if not threshold_tables:
                    raise ZsimError("report: a threshold figure needs a [[report.threshold]]")
                metric = spec.get("metric")
                chosen = next(((s, t) for s, t in threshold_tables if metric in (None, s["metric"])), threshold_tables[0])
                figure_paths.append(threshold_figure(results, spec, chosen[0], chosen[1], out_dir))
    written += figure_paths
    path = out_dir / "summary.md"
    path.write_text(_summary_markdown(results, points, metrics, threshold_tables, figure_paths, out_dir))
    written.append(path)
    return written


def make_report(results: str | Path, out: str | Path | None = None, *, figures: bool = True, warn: store.Warn | None = None,
                errors: list[tuple[Path, ZsimError]] | None = None) -> list[Path]:
    """Report every sweep under ``results`` into ``out/<sweep name>/`` (default
    ``results/report``): points.csv, thresholds.csv, figures (PNG), summary.md.

    ``out`` is checked (created, written to) before any work. One sweep whose report fails
    (a damaged manifest, a bad ``[report]``, anything else) does not stop the others: with
    ``errors`` given, each failure is appended there as ``(sweep folder, error)``; without,
    the first failure is raised after the other sweeps' reports are written. Damaged part
    files are named through ``warn`` (default: stderr) and left out.
    """
    root = Path(results)
    directories = store.sweep_dirs(root)
    base = Path(out) if out is not None else (root.parent if root.name.startswith("sweep=") else root) / "report"
    files.prepare_output_dir(base, "the report folder (--out)")
    written: list[Path] = []
    failures: list[tuple[Path, ZsimError]] = []
    for directory in directories:
        name = directory.name.split("=", 1)[1]
        try:
            written += report_sweep(directory, base / name, figures=figures, warn=warn)
        except ZsimError as exc:
            failures.append((directory, exc))
        except OSError as exc:
            failures.append((directory, EnvironmentFault(str(exc.filename or directory), exc.strerror or str(exc))))
        except Exception as exc:  # noqa: BLE001 - one sweep's report must not take the others down
            text = f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:300]
            failures.append((directory, ZsimError(f"report failed ({text})")))
    if errors is not None:
        errors.extend(failures)
    elif failures:
        raise failures[0][1]
    return written
