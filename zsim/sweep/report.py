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
from ..files import shown_path
from ..metrics import add_aliases, add_derived_frame, display_unit, field_label, human_value, parse, share
from ..metrics import kind as metric_kind
from ..metrics import label as metric_label
from ..stats import mean_half_width, runs_to_bound, zero_upper
from ..textsafe import Code, md, md_code, md_table, md_url
from ..units import human_bytes, human_time
from . import store
from .plan import Axis, resolve_axis

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

DEFAULT_METRICS = (
    "pooled_drop_fraction",
    "pooled_loss_fraction",
    "pooled_delivered_rate_per_s",
    "pooled_latency_mean_s",
    "pooled_latency_p50_s",
    "pooled_latency_p95_s",
    "pooled_latency_p99_s",
    "pooled_max_pipe_depth",
)
#: t(0.975, df) for df = 1..30 (beyond: a Cornish-Fisher expansion; scipy if installed).
MAX_TABLE_ROWS = 300


def _pandas() -> Any:
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ZsimError("reports need pandas and pyarrow: pip install 'zsim[results]'") from exc
    return pd


#: Axis path -> {value: (position, name)} for axes with ``names`` (set by ``SweepResults``).
VALUE_NAMES: dict[str, dict[Any, tuple[int, str]]] = {}


def _name_key(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value if isinstance(value, (str, bool)) else json.dumps(value, sort_keys=True, separators=(",", ":"))


def _named(path: str | None, value: Any) -> tuple[int, str] | None:
    names = VALUE_NAMES.get(path or "")
    if not names:
        return None
    try:
        found = names.get(_name_key(value))
        if found is None and isinstance(value, str):  # an axis of mixed values is stored as JSON text ("0.001")
            found = names.get(_name_key(json.loads(value)))
        return found
    except (TypeError, ValueError):
        return None


def is_hwm_axis(path: str) -> bool:
    """An HWM option (``sndhwm``, ``rcvhwm``, ``hwm``): 0 means unlimited, the largest."""
    return path.rsplit(".", 1)[-1].lower() in ("sndhwm", "rcvhwm", "hwm")


def axis_sort_key(path: str, value: Any) -> Any:
    """Order of an axis's values: an axis with ``names`` in the order they were given;
    numbers ascending, an HWM's 0 (unlimited) last; other values (a distribution's table,
    text) after the numbers, by their text, so that an axis mixing both still sorts. The
    second item is ``inf`` only for the detached "unlimited"."""
    named = _named(path, value)
    if named is not None:
        return (0, float(named[0]), "")
    if is_hwm_axis(path) and isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return (2, math.inf, "")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, float(value), "")
    if isinstance(value, str):  # a mixed axis stores every value as JSON text: "10" after "2"
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if math.isfinite(number):
            return (0, number, "")
    return (1, 0.0, str(value))


def pd_numeric(column: pd.Series) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in column.tolist())


def sort_by_axis(frame: pd.DataFrame, path: str) -> pd.DataFrame:
    """Rows in the order of ``path``'s values (``axis_sort_key``: an HWM's 0 last)."""
    keys = [axis_sort_key(path, value) for value in frame[path].tolist()]
    return frame.iloc[sorted(range(len(keys)), key=keys.__getitem__)]


def sorted_axis_values(path: str, values: Iterable[Any]) -> list[Any]:
    return sorted(set(values), key=lambda v: axis_sort_key(path, v))


def axis_value_label(path: str, value: Any) -> str:
    """An axis value for people: its name (an axis with ``names``), ``unlimited`` for an
    HWM of 0, ``150 us``, ``64 KB``."""
    named = _named(path, value)
    if named is not None:
        return named[1]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _fmt_value(value)
    if is_hwm_axis(path) and value == 0:
        return "unlimited"
    last = path.rsplit(".", 1)[-1]
    if path.endswith("_bytes"):
        return human_bytes(value)
    if last.endswith("_s") and not last.endswith("_per_s"):
        return human_time(value)
    if last.endswith("_per_s"):
        return f"{float(value):,.0f}/s"
    return _fmt_value(value)


# --------------------------------------------------------------------------------------
# Loading


class SweepResults:
    """One sweep's rows (a DataFrame) and its manifest (axes, points, report settings)."""

    def __init__(self, directory: Path, warn: store.Warn | None = None, config: str | Path | None = None) -> None:
        self.directory = directory
        manifest = store.read_manifest(directory)
        if manifest is None:
            raise ZsimError(f"{directory}: no {store.MANIFEST} (not written by zsim sweep?)")
        self.manifest = manifest
        self.name: str = manifest["name"]
        self.axes = [Axis(path=a["path"], label=a.get("label") or a["path"],
                          values=tuple(a["values"]) if a.get("values") is not None else None,
                          low=a.get("low"), high=a.get("high"), scale=a.get("scale", "linear"),
                          names=tuple(a["names"]) if a.get("names") else None) for a in manifest["axes"]]
        for axis in self.axes:
            if axis.names is not None and axis.values is not None:
                VALUE_NAMES[axis.path] = {_name_key(v): (i, n) for i, (v, n) in enumerate(zip(axis.values, axis.names, strict=True))}
            else:
                VALUE_NAMES.pop(axis.path, None)
        self.kinds = {a["path"]: a.get("kind", "float") for a in manifest["axes"]}
        self.report_config, self.config_source = report_settings(manifest, self.axes, config)
        self.frame = store.read_frame(directory, warn=warn)
        order = {p["id"]: p.get("index", i) for i, p in enumerate(manifest["points"])}
        if len(self.frame):
            self.frame["point_index"] = self.frame["point"].map(order)
            self.frame = self.frame.sort_values(["point_index", "replication"], kind="stable").reset_index(drop=True)
        add_aliases(self.frame)
        self.derived = dict(self.report_config.get("derived") or {})
        add_derived_frame(self.frame, self.derived)

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
        """The metrics of points.csv and summary.md: ``[report] metrics`` (default: the pooled
        headline figures), then every threshold's metric and every derived metric."""
        names = list(wanted) if wanted else list(self.report_config.get("metrics") or DEFAULT_METRICS)
        if not wanted:
            extra = [spec["metric"] for spec in self.report_config.get("threshold") or []] + list(self.derived)
            names += [m for m in dict.fromkeys(extra) if m not in names]
        missing = [m for m in names if m not in self.frame.columns]
        if missing and len(self.ok()):
            raise ZsimError(f"{self.directory}: no metric {missing[0]!r} in the results; metrics: "
                            f"{', '.join(c for c in self.frame.columns if c not in self.axis_columns)}")
        return [m for m in names if m in self.frame.columns]


def report_settings(manifest: Mapping[str, Any], axes: Sequence[Axis], config: str | Path | None = None
                    ) -> tuple[Mapping[str, Any], str]:
    """The ``[report]`` table to use, and where it came from.

    ``config`` (``zsim report --config FILE``): that file's ``[report]``. Otherwise the
    sweep file named in the manifest, read again (so editing ``[report]`` needs no re-run),
    when it still exists and still names this sweep; otherwise the ``[report]`` saved in the
    manifest when the sweep ran. A table read from a file is checked as ``zsim sweep``
    checks it (axes of this sweep, metrics its rows can have): one ``ScenarioError`` line."""
    from .plan import _check_report

    saved: Mapping[str, Any] = manifest.get("report") or {}
    candidates: list[Path] = []
    if config is not None:
        candidates.append(Path(config))
    else:
        for key in ("source_path", "source"):
            value = manifest.get(key)
            if isinstance(value, str) and value and value != "<dict>":
                candidates.append(Path(value))
    for path in candidates:
        if config is None and not path.is_file():
            continue
        raw = files.load_toml(path, "sweep file (report settings)")
        head = raw.get("sweep")
        name = head.get("name", path.stem) if isinstance(head, Mapping) else path.stem
        if config is None and name != manifest.get("name"):
            continue  # the file now describes another sweep: keep the saved settings
        table = raw.get("report", {})
        try:
            _check_report(table, axes, manifest.get("base_scenario") or None)
        except ScenarioError as exc:
            raise ScenarioError(f"{path}: {exc.path}", exc.reason) from None
        return table, str(path)
    return saved, "the sweep's manifest (settings when it ran)"


# --------------------------------------------------------------------------------------
# Aggregation


def aggregate(frame: pd.DataFrame, keys: Sequence[str], metrics: Sequence[str], derived: Mapping[str, str] | None = None) -> pd.DataFrame:
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
        groups = [ok[k] for k in keys]
        stats = values.groupby(groups, sort=True, dropna=False).agg(["mean", "std", "count", "max"])
        stats.index.names = keys
        half = stats.apply(lambda r: mean_half_width(int(r["count"]), r["std"]) if r["count"] > 1 else np.nan, axis=1)
        result[f"{metric}_mean"] = stats["mean"]
        result[f"{metric}_sd"] = stats["std"]
        result[f"{metric}_ci"] = half
        result[f"{metric}_lo"] = stats["mean"] - half
        result[f"{metric}_hi"] = stats["mean"] + half
        if metric_kind(metric) == "fraction":
            # a fraction stays in [0, 1]; where no run saw any (every value 0) the t interval
            # is 0 +- 0, so the bound is the rule of three over the trials the runs offered
            # (copies, send attempts: zsim.metrics.share; zsim.stats: it assumes they are lost
            # or refused independently, and reports say so)
            result[f"{metric}_lo"] = result[f"{metric}_lo"].clip(lower=0.0)
            result[f"{metric}_hi"] = result[f"{metric}_hi"].clip(upper=1.0)
            zeros = (stats["max"] == 0) & (stats["count"] > 0)
            result[f"{metric}_zeros"] = zeros
            column, _ = share(metric, ok.columns, derived)
            if column is not None and zeros.any():
                offered = pd.to_numeric(ok[column], errors="coerce").astype(float).groupby(groups, sort=True, dropna=False).sum()
                offered.index.names = keys
                bound = offered.map(zero_upper)
                result[f"{metric}_offered"] = offered
                result[f"{metric}_hi"] = result[f"{metric}_hi"].where(~zeros, bound)
            elif zeros.any():
                result[f"{metric}_hi"] = result[f"{metric}_hi"].where(~zeros, np.nan)  # no bound without the trials
    return result.reset_index()


def points_table(results: SweepResults, metrics: Sequence[str]) -> pd.DataFrame:
    """One row per point: its index, id, axis values, runs, and each metric's mean and CI."""
    frame = results.frame
    if not len(frame):
        pd = _pandas()
        return pd.DataFrame(columns=["point_index", "point"] + results.axis_columns + ["runs", "failed"])
    table = aggregate(frame, ["point_index", "point"] + results.axis_columns, metrics, results.derived)
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


#: A point is refused as a threshold answer when at least this share of its runs ended
#: with the entity overloaded, with a backlog still queued or with the metric not settled
#: (``zsim.checks`` warnings).
UNSTEADY_SHARE = 0.5


def metric_sockets(results: SweepResults, metric: str, _seen: frozenset[str] = frozenset()) -> set[str] | None:
    """The receiving sockets a metric is about (``socket.<name>.*``, a pipe's destination, the
    sockets a derived metric reads), or None for a figure of the whole run (pooled)."""
    if metric in results.derived and metric not in _seen:
        from .. import expressions

        found: set[str] = set()
        for name in expressions.names(results.derived[metric]):
            sockets = metric_sockets(results, name, _seen | {metric})
            if sockets is None:
                return None
            found |= sockets
        return found or None
    parsed = parse(metric)
    if parsed is None or parsed.entity is None:
        return None
    if parsed.kind == "socket":
        return {parsed.entity}
    if parsed.kind == "pipe":
        return {parsed.entity.split("->", 1)[1].split(" (", 1)[0]}
    return None


def unsteady(results: SweepResults, frame: pd.DataFrame, metric: str) -> tuple[Any, Any]:
    """Per row: 1.0 when the run ended with the metric's sockets (or, for a pooled metric,
    any socket) overloaded, with a backlog queued or with the metric's series (latency, or
    loss for any other metric) not settled, else 0.0; and the largest offered
    utilisation of those sockets (NaN if unknown)."""
    import numpy as np

    def column(name: str) -> Any:
        return frame[name].astype(float).fillna(0.0).to_numpy() if name in frame.columns else np.zeros(len(frame))

    sockets = metric_sockets(results, metric)
    flags = np.zeros(len(frame))
    utilisation = np.full(len(frame), np.nan)
    # the horizon check that fits the metric: a latency needs the latency settled, the
    # rest (loss, drops, counts) the loss (zsim.steady)
    settled = "latency_not_settled" if "latency" in metric else "loss_not_settled"
    if sockets is None:
        for code in ("overloaded", "backlog_at_end", settled):
            flags = np.maximum(flags, column(f"warning.{code}"))
        names = [c for c in frame.columns if c.startswith("socket.") and _entity_field(c, "offered_utilisation") is not None]
    else:
        # a template's metric (socket.w.max_loss_fraction) is about every member: its flags
        # are the members' worst (socket.w.max_overloaded, zsim.metrics.flat_metrics)
        def field(name: str, key: str) -> str:
            return f"socket.{name}.max_{key}" if f"socket.{name}.members" in frame.columns else f"socket.{name}.{key}"

        for name in sockets:
            for code in ("overloaded", "backlog_at_end", settled):
                flags = np.maximum(flags, column(field(name, code)))
        names = [field(name, "offered_utilisation") for name in sockets if field(name, "offered_utilisation") in frame.columns]
    if names:
        utilisation = frame[names].astype(float).max(axis=1, skipna=True).to_numpy()
    return (flags > 0).astype(float), utilisation


def _same_value(a: Any, b: Any) -> bool:
    """An axis value of the rows (a number, or JSON text for a table) against the
    manifest's (the value itself)."""
    def plain(value: Any) -> Any:
        if isinstance(value, str):
            try:
                parsed = json.loads(value)
            except ValueError:
                return value
            return value if isinstance(parsed, str) else parsed
        return value

    a, b = plain(a), plain(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and not isinstance(b, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=0.0)
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def answer_scenarios(results: SweepResults, spec: Mapping[str, Any], table: pd.DataFrame, k: int) -> list[tuple[str, str]]:
    """(file name, TOML) of each answer of threshold ``k`` (1-based): the point at the
    smallest value by the 95 % upper bound and its row's values of the other axes, as a
    scenario file (``zsim.design_file``), ``threshold-<k>-<row>.toml`` for its row of
    thresholds.csv; its name goes into the table's ``scenario_file``. A row without that
    answer, a threshold that pools axes (``by`` leaves one out: no single point), or a
    manifest without the points' changes (written before 2026-11-26) gets none."""
    from ..design_file import design_toml

    manifest = results.manifest
    minimise = results.axis(spec["minimise"]).path
    by = threshold_by(results, spec)
    table["scenario_file"] = None
    pooled = [a.path for a in results.axes if a.path != minimise and a.path not in by and results.frame[a.path].nunique() > 1]
    base = manifest.get("base_scenario")
    points = manifest.get("points") or []
    if pooled or not isinstance(base, Mapping) or not all(isinstance(p, Mapping) and "overrides" in p for p in points):
        return []
    out = []
    for row_index, (_, row) in enumerate(table.iterrows()):
        answer = row["smallest_by_upper_ci"]
        if answer is None or answer != answer:
            continue
        wanted = {**{path: row[path] for path in by}, minimise: answer}
        found = [p for p in points if all(_same_value((p.get("coords") or {}).get(path), value) for path, value in wanted.items())]
        if len(found) != 1:
            continue
        point = found[0]
        changes = [*(manifest.get("set") or {}).items(), *point["overrides"].items()]
        where = ", ".join(f"{results.label(path)} = {axis_value_label(path, row[path])}" for path in by)
        title = (f"The answer of zsim report, sweep {results.name}: the smallest {results.label(minimise)} keeping "
                 f"{metric_label(spec['metric'])} below {_target_text(spec['metric'], float(spec['below']))}"
                 f"{' at ' + where if where else ''}: {axis_value_label(minimise, answer)} (by the 95 % upper bound)")
        try:
            text = design_toml(base, changes, title=title, made_by=f"zsim report {shown_path(results.directory.parent)}",
                               base_source=manifest.get("base_source"), base_dir=manifest.get("base_dir"),
                               notes=[f"Point {point.get('id')} of the sweep; its answer in words: {row['answer']}"])
        except ScenarioError:  # a manifest whose base no longer takes its own changes: no file, the table says none
            continue
        name = f"threshold-{k}-{row_index + 1}.toml"
        table.at[table.index[row_index], "scenario_file"] = name
        out.append((name, text))
    return out


def _target_text(metric: str, target: float) -> str:
    return f"{100 * target:.3g} %" if metric_kind(metric) == "fraction" else human_value(metric, target)


def threshold_by(results: SweepResults, spec: Mapping[str, Any]) -> list[str]:
    """The axes a threshold's answers vary over: its ``by``, default every axis but the one
    it minimises."""
    minimised = results.axis(spec["minimise"]).path
    return [results.axis(k).path for k in spec.get("by", [a.path for a in results.axes if a.path != minimised])]


def thresholds(results: SweepResults, spec: Mapping[str, Any]) -> pd.DataFrame:
    """The smallest value of ``spec.minimise`` that keeps ``spec.metric`` below ``spec.below``,
    per combination of ``spec.by`` (default: every other axis).

    Values are ordered as numbers, an HWM of 0 (unlimited) last. A value answers when the
    metric is below the target there and at every larger value tried (by the mean, and by
    the upper end of its 95 % interval), and when the point is in steady state: a point
    where at least ``UNSTEADY_SHARE`` of the runs ended with the metric's socket overloaded
    or with a backlog still queued (its loss and latency still grow with the horizon) is
    no answer, whatever its numbers. ``answer`` says it in words."""
    pd = _pandas()
    metric = spec["metric"]
    target = float(spec["below"])
    x = results.axis(spec["minimise"]).path
    by = threshold_by(results, spec)
    columns = by + ["smallest_by_mean", "smallest_by_upper_ci", "metric_mean_there", "metric_upper_ci_there", "largest_tried",
                    "not_steady_at", "utilisation", "refine", "answer"]
    if not len(results.frame) or not len(results.ok()):
        return pd.DataFrame(columns=columns)
    frame = results.ok().copy()
    frame["_unsteady"], frame["_utilisation"] = unsteady(results, frame, metric)
    table = aggregate(frame, by + [x], [metric, "_unsteady", "_utilisation"], results.derived)
    what = metric_label(metric)
    sockets = metric_sockets(results, metric)
    rows = []
    groups = table.groupby(by, sort=True) if by else [((), table)]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        group = sort_by_axis(group, x)
        xs = group[x].tolist()
        means = group[f"{metric}_mean"].tolist()
        zeros = group[f"{metric}_zeros"] if f"{metric}_zeros" in group.columns else group[f"{metric}_mean"] != group[f"{metric}_mean"]
        # one run has no interval: its value stands for it; a point where no run saw any has
        # the rule of three's bound, or none (NaN: never an answer by the bound)
        highs = group[f"{metric}_hi"].where(group[f"{metric}_hi"].notna() | zeros.astype(bool),
                                            group[f"{metric}_mean"]).tolist()
        refused = [share == share and share >= UNSTEADY_SHARE for share in group["_unsteady_mean"].tolist()]
        row: dict[str, Any] = dict(zip(by, key, strict=True))

        def smallest(values: list[float], xs: list[Any] = xs, refused: list[bool] = refused) -> Any:
            answer = None
            for value, level, bad in zip(reversed(xs), reversed(values), reversed(refused), strict=True):
                if level is not None and level == level and level < target and not bad:
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
        bad_values = [value for value, bad in zip(xs, refused, strict=True) if bad]
        row["not_steady_at"] = ", ".join(axis_value_label(x, v) for v in bad_values) or None
        utilisations = [u for u, bad in zip(group["_utilisation_mean"].tolist(), refused, strict=True) if bad and u == u]
        if not utilisations:
            utilisations = [u for u in group["_utilisation_mean"].tolist()[-1:] if u == u]
        row["utilisation"] = max(utilisations) if utilisations else None
        goal = f"keeps {what} below {_target_text(metric, target)}"
        if best_hi is not None:
            text = f"{results.label(x)} {axis_value_label(x, best_hi)} (95 % upper bound)"
            if best_mean is not None and best_mean != best_hi:
                text += f"; {axis_value_label(x, best_mean)} by the mean"
        elif best_mean is not None:
            text = (f"{results.label(x)} {axis_value_label(x, best_mean)} by the mean; no value tried {goal} with 95 % confidence")
        elif bad_values and bad_values[-1] == xs[-1]:
            load = row["utilisation"]
            reason = (f"its offered utilisation is {load:.2g}" if load is not None and load >= 1
                      else "its backlog still grows, or its figures have not settled, at the horizon")
            subject = ", ".join(sorted(sockets)) if sockets else "the run"
            text = (f"no {results.label(x)} tried {goal}: {subject} is not in steady state at "
                    f"{row['not_steady_at']} ({reason}; loss and latency grow with the run's length)")
        else:
            text = (f"no {results.label(x)} tried {goal}: at the largest, {axis_value_label(x, xs[-1])}, it is "
                    f"{human_value(metric, means[-1])}")
        found = best_hi if best_hi is not None else best_mean
        if found is not None:
            at = group[group[x] == found].iloc[0]
            if bool(at.get(f"{metric}_zeros", False)):
                runs = int(at.get(f"{metric}_count", 0) or at.get("runs", 0) or 0) or None
                offered = at.get(f"{metric}_offered")
                _, of = share(metric, results.frame.columns, results.derived)
                if offered is not None and offered == offered:
                    text += (f"; no run {of.none} at {axis_value_label(x, found)} ({offered:,.0f} {of.noun}"
                             f"{f' in {runs} runs' if runs else ''}): the bound there, {100 * float(at[f'{metric}_hi']):.3g} %, is "
                             f"the rule of three over {of.noun}, which assumes they are {of.one_by_one} one by one; {of.bursts} come "
                             "in bursts")
                    if runs:
                        text += (f", and over runs, which are independent, none in {runs} says only that a run {of.some} in up "
                                 f"to {100 * zero_upper(runs):.0f} % of runs (95 %; {runs_to_bound(0.05)} runs would bound "
                                 "that at 5 %)")
                    else:
                        text += ", so confirm with longer or more runs"
                else:
                    text += (f"; no run {of.none} at {axis_value_label(x, found)}{f' ({runs} runs)' if runs else ''}: zeros from "
                             f"runs give no bound without the {of.noun} they offered")
            index = xs.index(found)
            if len(xs) > 1 and index == len(xs) - 1:
                row["refine"] = f"between {axis_value_label(x, xs[-2])} and {axis_value_label(x, xs[-1])}"
                how = "with 95 % confidence" if found == best_hi else "by the mean"
                text += f"; it is the largest value tried: the smallest that {goal} {how} lies {row['refine']} (refine there)"
            elif index == 0 and len(xs) > 1:
                row["refine"] = f"below {axis_value_label(x, xs[0])}"
                text += "; it is the smallest value tried: smaller values may do too (refine below)"
            else:
                row["refine"] = f"between {axis_value_label(x, xs[index - 1])} and {axis_value_label(x, found)}"
        else:
            row["refine"] = None
        row["answer"] = text
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


# --------------------------------------------------------------------------------------
# Figures


def _figure_file(spec: Mapping[str, Any]) -> str | None:
    """A figure's ``file``, which a saved manifest or a sweep file from elsewhere gives: a
    plain file name inside the report folder (``check_config`` refuses others first)."""
    name = spec.get("file")
    return None if name is None else files.plain_name(name, "report.figure.file")


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


def x_positions(path: str, values: Sequence[Any], log: bool) -> tuple[dict[Any, float], list[tuple[float, str]], float | None]:
    """Where each axis value sits on a figure's x axis, its tick labels, and where the
    detached part starts: an HWM of 0 (unlimited) is drawn to the right of the largest
    value, labelled ``unlimited`` and not joined to the curve (nothing happens at x = 0)."""
    ordered = sorted_axis_values(path, values)
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in ordered)
    if VALUE_NAMES.get(path) or not numeric:  # named or non-numeric values: categories, evenly spaced, in order
        spots = {v: float(i) for i, v in enumerate(ordered)}
        return spots, [(spots[v], axis_value_label(path, v)) for v in ordered], None
    finite = [float(v) for v in ordered if axis_sort_key(path, v)[1] != math.inf]
    positions: dict[Any, float] = {v: float(v) for v in ordered if axis_sort_key(path, v)[1] != math.inf}
    detached = None
    if len(finite) < len(ordered):
        top = max(finite) if finite else 1.0
        low = min(finite) if finite else 0.0
        spot = top * 4 if log and top > 0 else top + max((top - low) * 0.2, 1.0)
        detached = (top + spot) / 2 if not log else math.sqrt(top * spot)
        for v in ordered:
            if v not in positions:
                positions[v] = spot
    ticks = [(positions[v], axis_value_label(path, v)) for v in ordered] if len(ordered) <= 12 else []
    return positions, ticks, detached


def line_figure(results: SweepResults, spec: Mapping[str, Any], out_dir: Path, hlines: Mapping[str, float]) -> Path:
    from .. import plotting

    x = results.axis(spec["x"]).path
    metrics = spec.get("y", spec.get("metric", "pooled_drop_fraction"))
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    series = results.axis(spec["series"]).path if spec.get("series") else None
    facet = results.axis(spec["facet"]).path if spec.get("facet") else None
    where = spec.get("where", {})
    frame = _filter(results, results.frame, where)
    keys = [k for k in (facet, series, x) if k]
    table = aggregate(frame, keys, metrics, results.derived)
    scale, unit = display_unit(metrics[0], [v for m in metrics for v in table[f"{m}_mean"].tolist()])
    logx = spec.get("logx", _is_log_axis([v for v in table[x].tolist() if axis_sort_key(x, v)[1] != math.inf]))
    logx = logx and not VALUE_NAMES.get(x) and pd_numeric(table[x])
    positions, ticks, detached = x_positions(x, table[x].tolist(), bool(logx))
    panels = []
    facet_values = sorted_axis_values(facet, table[facet].tolist()) if facet else [None]
    series_values = sorted_axis_values(series, table[series].tolist()) if series else [None]
    styles = ["-", "--", ":", "-."]
    short = _short_labels(metrics)
    for facet_value in facet_values:
        sub = table[table[facet] == facet_value] if facet else table
        panel = plotting.Panel(title=f"{results.label(facet)} = {axis_value_label(facet, facet_value)}" if facet else "")
        for s_index, series_value in enumerate(series_values):
            line_rows = sub[sub[series] == series_value] if series else sub
            line_rows = sort_by_axis(line_rows, x)
            for m_index, metric in enumerate(metrics):
                label_parts = []
                if series:
                    label_parts.append(axis_value_label(series, series_value))
                if len(metrics) > 1:
                    label_parts.append(short[metric])
                band = spec.get("band", True)
                panel.lines.append(
                    plotting.Line(
                        label=", ".join(label_parts) or metric_label(metric),
                        x=[positions[v] for v in line_rows[x].tolist()],
                        y=(line_rows[f"{metric}_mean"] * scale).tolist(),
                        # Every metric here is >= 0; a band below zero is the t interval's symmetry, not data.
                        low=(line_rows[f"{metric}_lo"].clip(lower=0) * scale).tolist() if band else None,
                        high=(line_rows[f"{metric}_hi"] * scale).tolist() if band else None,
                        style=styles[m_index % len(styles)] if series else "-",
                        color_index=s_index if series else m_index,
                    )
                )
        panels.append(panel)
    fraction = metric_kind(metrics[0]) == "fraction"
    logy = spec.get("logy", fraction)
    if logy is True and fraction:
        logy = "symlog"
    ylabel = (metric_label(metrics[0], unit) if len(metrics) == 1
              else _common_label(metrics) + (f" ({unit})" if unit else ""))
    title = spec.get("title") or f"{ylabel} against {results.label(x)}" + (f", by {results.label(series)}" if series else "")
    notes = ["shaded: 95 % confidence interval of the mean"] if spec.get("band", True) else []
    if detached is not None:
        notes.append("HWM 0 = unlimited, drawn apart")
    pooled = _pooled_note(results, frame, keys + list(results.axis(k).path for k in where))
    if pooled:
        notes.append(pooled)
    if where:
        notes.append("where " + ", ".join(f"{results.label(k)} = "
                                          + " or ".join(axis_value_label(results.axis(k).path, item)
                                                        for item in (v if isinstance(v, list) else [v]))
                                          for k, v in where.items()))
    name = _figure_file(spec) or _slug(f"{'-'.join(metrics)}-vs-{results.label(x)}"
                                     + (f"-by-{results.label(series)}" if series else "")) + ".png"
    hline = hlines.get(metrics[0]) if len(metrics) == 1 else None
    return plotting.line_figure(
        panels, out_dir / name, title=title, xlabel=results.label(x), ylabel=ylabel,
        logx=logx, logy=logy,
        hline=hline * scale if hline is not None else None,
        hline_label=f"target {_target_text(metrics[0], hline)}" if hline is not None else None,
        note="; ".join(notes), legend_title=results.label(series) if series else None,
        xticks=ticks or None, detached_from=detached,
    )


def _entity_field(metric: str, field: str | None = None) -> tuple[str, str] | None:
    """(entity, last name part) of a socket's, sender's or pipe's metric (``zsim.metrics.parse``;
    with ``field``, only a plain metric of that field); None for another."""
    parsed = parse(metric)
    if parsed is None or parsed.entity is None or parsed.kind not in ("socket", "sender", "pipe"):
        return None
    if field is not None and (parsed.stat is not None or parsed.field != field):
        return None
    return parsed.entity, parsed.key


def _short_labels(metrics: Sequence[str]) -> dict[str, str]:
    """Legend entries for several metrics in one figure: what differs between them."""
    labels = {m: metric_label(m) for m in metrics}
    entities = {m: found[0] for m in metrics if (found := _entity_field(m)) is not None}
    fields = {m.rsplit(".", 1)[-1] for m in metrics}
    if len(entities) == len(metrics) and len(fields) == 1:
        return entities  # the same field of several entities: name the entities
    if len(entities) == len(metrics) and len(set(entities.values())) == 1:
        return {m: field_label(m.rsplit(".", 1)[-1]) for m in metrics}  # several fields of one entity
    return {m: label.split(" (")[0] if label.endswith(")") and "(pooled)" not in label else label for m, label in labels.items()}


def _common_label(metrics: Sequence[str]) -> str:
    """The y label of several metrics: their common field, or what they measure."""
    fields = {m.rsplit(".", 1)[-1] for m in metrics}
    if len(fields) == 1 and all(_entity_field(m) is not None for m in metrics):
        return field_label(next(iter(fields)))
    text = ", ".join(metric_label(m).split(" (")[0] for m in metrics)
    if len(text) <= 45:
        return text
    kinds = {metric_kind(m) for m in metrics}
    return {"rate": "rate", "time": "time", "fraction": "fraction"}.get(kinds.pop(), "value") if len(kinds) == 1 else "value"


def heatmap_figure(results: SweepResults, spec: Mapping[str, Any], out_dir: Path) -> Path:
    from .. import plotting

    x = results.axis(spec["x"]).path
    y = results.axis(spec["y"]).path
    metric = spec.get("metric", "pooled_drop_fraction")
    facet = results.axis(spec["facet"]).path if spec.get("facet") else None
    where = spec.get("where", {})
    frame = _filter(results, results.frame, where)
    keys = [k for k in (facet, y, x) if k]
    table = aggregate(frame, keys, [metric], results.derived)
    scale, unit = display_unit(metric, table[f"{metric}_mean"].tolist())
    xs = sorted_axis_values(x, table[x].tolist())
    ys = sorted_axis_values(y, table[y].tolist())
    grids = []
    for facet_value in (sorted_axis_values(facet, table[facet].tolist()) if facet else [None]):
        sub = table[table[facet] == facet_value] if facet else table
        pivot = sub.pivot_table(index=y, columns=x, values=f"{metric}_mean", aggfunc="mean").reindex(index=ys, columns=xs)
        grids.append(plotting.Grid(title=f"{results.label(facet)} = {axis_value_label(facet, facet_value)}" if facet else "",
                                   x=[axis_value_label(x, v) for v in xs], y=[axis_value_label(y, v) for v in ys],
                                   values=pivot.to_numpy() * scale))
    pooled = _pooled_note(results, frame, keys + [results.axis(k).path for k in where])
    title = spec.get("title") or f"{metric_label(metric)} (mean) over {results.label(x)} and {results.label(y)}"
    name = _figure_file(spec) or _slug(f"heatmap-{metric}-{results.label(x)}-{results.label(y)}") + ".png"
    return plotting.heatmap_figure(grids, out_dir / name, title=title, xlabel=results.label(x), ylabel=results.label(y),
                                   colorbar_label=metric_label(metric, unit), symlog=metric_kind(metric) == "fraction", note=pooled)


def scatter_figure(results: SweepResults, spec: Mapping[str, Any], out_dir: Path) -> Path:
    from .. import plotting

    x = results.axis(spec["x"]).path
    metric = spec.get("metric", spec.get("y", "pooled_drop_fraction"))
    colour = results.axis(spec["series"]).path if spec.get("series") else None
    frame = _filter(results, results.frame, spec.get("where", {}))
    table = aggregate(frame, ["point"] + [a.path for a in results.axes], [metric], results.derived)
    scale, unit = display_unit(metric, table[f"{metric}_mean"].tolist())
    name = _figure_file(spec) or _slug(f"scatter-{metric}-vs-{results.label(x)}") + ".png"
    return plotting.scatter_figure(
        table[x].astype(float).tolist(), (table[f"{metric}_mean"] * scale).tolist(), out_dir / name,
        title=spec.get("title") or f"{metric_label(metric)} against {results.label(x)} (one dot per point)",
        xlabel=results.label(x), ylabel=metric_label(metric, unit),
        colour=table[colour].astype(float).tolist() if colour else None, colour_label=results.label(colour) if colour else None,
        yerr=(table[f"{metric}_ci"].fillna(0) * scale).tolist(), logx=spec.get("logx", _is_log_axis(table[x].tolist())),
        logy="symlog" if metric_kind(metric) == "fraction" else spec.get("logy", False),
        note="bars: 95 % confidence interval of the mean",
    )


def placed_threshold_axes(results: SweepResults, spec: Mapping[str, Any], threshold: Mapping[str, Any], where: str
                          ) -> dict[str, str]:
    """The axes a threshold figure's spec places (``x``, ``series``, ``facet``: those it
    names), by path. Each must be one the threshold's answers vary over (``by``), and none
    the axis it minimises (the figure's y): else ``ScenarioError`` at ``where.<key>``. The
    one check of the figure's config and of the figure it draws."""
    minimised = results.axis(threshold["minimise"]).path
    by = threshold_by(results, threshold)
    placed = {}
    for key in ("x", "series", "facet"):
        if not spec.get(key):
            continue
        path = results.axis(spec[key]).path
        if path == minimised:
            raise ScenarioError(f"{where}.{key}", f"{path!r} is the axis the threshold minimises, the figure's y; name "
                                                  "another axis")
        if path not in by:
            raise ScenarioError(f"{where}.{key}", f"{path!r} is not an axis the threshold's answers vary over "
                                                  f"(its by: {', '.join(by) or 'none'})")
        placed[key] = path
    return placed


def threshold_axes(results: SweepResults, spec: Mapping[str, Any], threshold: Mapping[str, Any], table: pd.DataFrame
                   ) -> tuple[str, str | None, list[str]]:
    """The axes of a threshold figure: ``x``, the ``series`` (one curve per value) and the
    panel axes (one panel per combination of their values). The minimised axis is the
    figure's y: it cannot be x, a series or a panel. Every other axis the answers vary over
    (``by``) that the spec does not place gets panels of its own, so a curve never mixes
    answers for different values of an axis it does not show (a sweep of three or more
    axes: one panel per value of the third)."""
    placed_at = placed_threshold_axes(results, spec, threshold, "report.figure")
    x, series, facet = placed_at["x"], placed_at.get("series"), placed_at.get("facet")
    by = threshold_by(results, threshold)
    placed = {x, series, facet}
    panels = ([facet] if facet else []) + [c for c in by if c not in placed and table[c].nunique(dropna=False) > 1]
    return x, series, panels


def threshold_figure(results: SweepResults, spec: Mapping[str, Any], threshold: Mapping[str, Any], table: pd.DataFrame,
                     out_dir: Path) -> Path:
    from .. import plotting

    x, series, panel_axes = threshold_axes(results, spec, threshold, table)
    minimise = results.axis(threshold["minimise"]).path
    logx = spec.get("logx", _is_log_axis(table[x].tolist())) and not VALUE_NAMES.get(x) and pd_numeric(table[x])
    positions, ticks, detached = x_positions(x, table[x].tolist(), bool(logx))
    answers = [v for column in ("smallest_by_upper_ci", "smallest_by_mean") for v in table[column].tolist()
               if v is not None and v == v]
    logy = spec.get("logy", True) and not VALUE_NAMES.get(minimise)
    y_positions, y_ticks, _ = x_positions(minimise, answers, bool(logy)) if answers else ({}, [], None)

    def y_of(value: Any) -> float:
        return float(y_positions.get(value, float("nan"))) if value is not None and value == value else float("nan")

    combinations: list[tuple[Any, ...]] = [()]
    for path in panel_axes:
        combinations = [combo + (value,) for combo in combinations for value in sorted_axis_values(path, table[path].tolist())]
    panels = []
    for combo in combinations:
        sub = table
        for path, value in zip(panel_axes, combo, strict=True):
            sub = sub[_matches(sub[path], value)]
        if not len(sub):
            continue
        # one line per axis: two long axis paths on one line run into the next panel's title
        title = "\n".join(f"{results.label(path)} = {axis_value_label(path, value)}" for path, value in zip(panel_axes, combo,
                                                                                                                strict=True))
        panel = plotting.Panel(title=title)
        for index, series_value in enumerate(sorted_axis_values(series, table[series].tolist()) if series else [None]):
            rows = sub[_matches(sub[series], series_value)] if series else sub
            if not len(rows):
                continue
            rows = sort_by_axis(rows, x)
            name = axis_value_label(series, series_value) if series else None
            xs = [positions[v] for v in rows[x].tolist()]
            panel.lines.append(plotting.Line(label=name or "95 % upper bound", x=xs,
                                             y=[y_of(v) for v in rows["smallest_by_upper_ci"]], color_index=index))
            panel.lines.append(plotting.Line(label=f"{name} (mean)" if name else "mean", x=xs,
                                             y=[y_of(v) for v in rows["smallest_by_mean"]], style=":", color_index=index))
        panels.append(panel)
    metric = threshold["metric"]
    title = spec.get("title") or threshold.get("title") or (
        f"smallest {results.label(minimise)} keeping {metric_label(metric)} < {_target_text(metric, float(threshold['below']))}")
    name = _figure_file(spec) or _slug(f"threshold-{metric}-{results.label(minimise)}-vs-{results.label(x)}") + ".png"
    return plotting.line_figure(
        panels, out_dir / name, title=title, xlabel=results.label(x), ylabel=f"smallest {results.label(minimise)}",
        logx=logx, logy=logy, xticks=ticks or None, detached_from=detached, yticks=y_ticks or None,
        note="solid: the 95 % upper bound is below the target (conservative); dotted: the mean is; gaps: no value tried is "
             "enough (or not in steady state)",
        legend_title=results.label(series) if series else None,
    )


#: Default figures drawn at most (the rest of the metrics are in summary.md and points.csv).
MAX_DEFAULT_FIGURES = 8


def default_figures(results: SweepResults) -> list[dict[str, Any]]:
    """Figures that fit the study: each threshold's metric against the axis it minimises
    (with its target), then the ``[report] metrics`` (the same field of several sockets in
    one figure), on the threshold's axis or an HWM axis or the axis with most values; the
    other axes as series (the one with fewest values, up to 8) and panels. Without
    thresholds or metrics: the pooled drop fraction, p99 latency and delivered rate, and a
    heatmap over two axes. Random and Latin-hypercube designs get scatter plots."""
    axes = results.axes
    frame = results.frame
    if not len(frame) or not axes:
        return []
    counts = {a.path: frame[a.path].nunique() for a in axes}
    config = results.report_config
    thresholds_cfg = list(config.get("threshold") or [])
    chosen = list(config.get("metrics") or [])
    design = results.manifest.get("design", "grid")
    if design != "grid":
        metric = thresholds_cfg[0]["metric"] if thresholds_cfg else (chosen[0] if chosen else "pooled_drop_fraction")
        figures: list[dict[str, Any]] = []
        for index, axis in enumerate(axes[:4]):
            other = axes[(index + 1) % len(axes)] if len(axes) > 1 else None
            figures.append({"kind": "scatter", "x": axis.path, "metric": metric, **({"series": other.path} if other else {})})
        return figures

    def layout(x_path: str, among: Sequence[str] | None = None) -> dict[str, Any]:
        others = sorted((a for a in axes if a.path != x_path and counts[a.path] > 1 and (among is None or a.path in among)),
                        key=lambda a: counts[a.path])
        series = others[0].path if others and counts[others[0].path] <= 8 else None
        facet = others[1].path if len(others) > 1 and counts[others[1].path] <= 9 else None
        return {"x": x_path, **({"series": series} if series else {}), **({"facet": facet} if facet else {})}

    hwm = [a for a in axes if is_hwm_axis(a.path)]
    main = (results.axis(thresholds_cfg[0]["minimise"]) if thresholds_cfg
            else hwm[0] if hwm else max(axes, key=lambda a: counts[a.path]))
    figures = []
    drawn: set[str] = set()
    for spec in thresholds_cfg:
        x_path = results.axis(spec["minimise"]).path
        figures.append({"kind": "line", "y": spec["metric"], **layout(x_path)})
        drawn.add(spec["metric"])
    groups: dict[str, list[str]] = {}
    for metric in chosen:
        if metric in drawn:
            continue
        found = _entity_field(metric)
        field = found[1] if found is not None else metric
        groups.setdefault(field, []).append(metric)
    for members in groups.values():
        base = layout(main.path)
        if len(members) > 1:
            base.pop("facet", None)  # several metrics in one figure: one panel per series value instead
            if "series" in base:
                base["facet"] = base.pop("series")
        figures.append({"kind": "line", "y": members if len(members) > 1 else members[0], **base})
    if not thresholds_cfg and not chosen:
        for metric in ("pooled_drop_fraction", "pooled_latency_p99_s", "pooled_delivered_rate_per_s", "pooled_max_pipe_depth"):
            figures.append({"kind": "line", "y": metric, **layout(main.path)})
        others = [a for a in axes if a is not main and counts[a.path] > 1]
        if others:
            second = max(others, key=lambda a: counts[a.path])
            heat: dict[str, Any] = {"kind": "heatmap", "x": main.path, "y": second.path, "metric": "pooled_drop_fraction"}
            rest = [a for a in others if a is not second and counts[a.path] <= 9]
            if rest:
                heat["facet"] = rest[0].path
            figures.append(heat)
    for spec in thresholds_cfg:
        # the answer against the axis it varies over with the most values; the others it
        # varies over are series and panels (threshold_axes), never the minimised axis
        minimised = results.axis(spec["minimise"]).path
        by = threshold_by(results, spec)
        others = [a for a in axes if a.path != minimised and a.path in by and counts[a.path] > 1]
        if others:
            x_axis = max(others, key=lambda a: counts[a.path])
            figures.append({"kind": "threshold", "metric": spec["metric"], **layout(x_axis.path, [a.path for a in others])})
    return figures[:MAX_DEFAULT_FIGURES]


# --------------------------------------------------------------------------------------
# Markdown


def _cell(mean: Any, ci: Any, metric: str) -> str:
    """``1.23 ms ± 0.04 ms``, ``0.120 % ± 0.030 %``, ``9,876/s ± 12/s``; ``-`` without a value."""
    if mean is None or mean != mean:
        return "-"
    text = human_value(metric, mean)
    if ci is not None and ci == ci:
        half = float(ci)
        if metric_kind(metric) == "fraction":
            text += f" ± {100 * half:.2g} %"
        else:
            text += f" ± {human_value(metric, half)}"
    return text


def _markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table; every header and cell is text from the results (axis labels and
    value names from the sweep file) and escaped as such (``zsim.textsafe.md_table``)."""
    return "\n".join(md_table(headers, rows))


def _summary_markdown(results: SweepResults, points: pd.DataFrame, metrics: Sequence[str],
                      threshold_tables: list[tuple[Mapping[str, Any], pd.DataFrame]],
                      figures: Sequence[Path], out_dir: Path) -> str:
    manifest = results.manifest
    frame = results.frame
    n_ok = int(frame["ok"].astype(bool).sum()) if len(frame) else 0
    n_failed = len(frame) - n_ok
    counts = store.point_replications(manifest)
    expected = sum(counts.values())
    more = {point: n for point, n in counts.items() if n > manifest["replications"]}
    precision = (f" ({len(more)} point{'s' if len(more) != 1 else ''} with more for `--precision`: up to {max(more.values())})"
                 if more else "")
    cpu = float(frame["wall_s"].sum()) if len(frame) and "wall_s" in frame else 0.0
    lines = [f"# Sweep {md_code(results.name)}", ""]
    if manifest.get("description"):
        lines += [md(manifest["description"], line_start=True), ""]
    lines += [
        f"- design: {md(manifest.get('design', 'grid'))}, {len(manifest['points'])} points x {md(manifest['replications'])} "
        "replications"
        f"{precision} = {expected} runs",
        f"- results: {len(frame)} runs present ({n_ok} ok, {n_failed} failed)"
        + ("" if len(frame) >= expected else f", {expected - len(frame)} missing (re-run the sweep to finish)"),
        f"- root seed {md(manifest.get('seed', '?'))}, common random numbers: "
        f"{'yes' if manifest.get('common_random_numbers', True) else 'no'}; "
        f"total run time {cpu:.1f} s (sum over runs)",
        "- intervals: 95 % Student-t confidence intervals of the per-point mean over replications",
    ]
    if len(frame) and "zsim_code" in frame:
        codes = frame["zsim_code"].fillna("?").value_counts()
        if len(codes) > 1:
            lines.append("- **warning: rows from different zsim code** (" + ", ".join(f"{md(c)}: {n} rows" for c, n in codes.items())
                         + "); re-run into a fresh directory for results of one model version")
        elif codes.index[0] != "?":
            lines.append(f"- zsim code fingerprint {md(codes.index[0])}, version {md(frame['zsim_version'].iloc[0])}")
    lines += [
        "",
        "## Axes",
        "",
        _markdown_table(["axis", "label", "values"], [
            (Code(a.path), a.label,
             ", ".join(axis_value_label(a.path, v) for v in sorted_axis_values(a.path, frame[a.path].tolist()))[:200] if len(frame) else "")
            for a in results.axes
        ]),
        "",
    ]
    if manifest.get("links"):
        lines += ["Linked fields (take the value of an axis): " + ", ".join(f"{md_code(k)} = {md_code(v)}"
                                                                          for k, v in manifest["links"].items()), ""]
    for spec, table in threshold_tables:
        minimise = results.axis(spec["minimise"]).path
        metric = spec["metric"]
        lines += [f"## Smallest {md(results.label(minimise))} keeping {md(metric_label(metric))} below "
                  f"{md(_target_text(metric, float(spec['below'])))}", ""]
        answer_columns = ("smallest_by_mean", "smallest_by_upper_ci", "metric_mean_there", "metric_upper_ci_there", "largest_tried",
                          "not_steady_at", "utilisation", "refine", "answer", "scenario_file")
        by = [c for c in table.columns if c not in answer_columns]
        rows = []
        for _, row in table.iterrows():
            def show(value: Any, largest: Any = row["largest_tried"], minimise: str = minimise) -> str:
                if value is None or value != value:
                    return "none tried" if largest is None else f"none up to {axis_value_label(minimise, largest)}"
                return axis_value_label(minimise, value)

            refine = row.get("refine")
            rows.append([axis_value_label(c, row[c]) for c in by] + [refine if isinstance(refine, str) else "-",
                                                                     show(row["smallest_by_upper_ci"]), show(row["smallest_by_mean"]),
                        _cell(row["metric_mean_there"], None, metric) if row["metric_mean_there"] is not None else "-",
                        str(row["answer"]), Code(row["scenario_file"]) if isinstance(row.get("scenario_file"), str) else "-"])
        headers = [results.label(c) for c in by] + ["refine", "smallest (95 % upper bound)", "smallest (mean)",
                                                    f"{metric_label(metric)} there",
                                                    "answer", "scenario file"]
        lines += [_markdown_table(headers, rows), ""]
        order = ("in the order the axis names them" if VALUE_NAMES.get(minimise)
                 else f"ordered as numbers{', HWM 0 (unlimited) last' if is_hwm_axis(minimise) else ''}")
        lines += [f"Values are {order}; a value answers "
                  "when the target holds there and at every larger value tried, and the point is in steady state: a point "
                  f"where at least {UNSTEADY_SHARE:.0%} of the runs ended with the metric's socket overloaded, with a backlog "
                  "still queued or with the metric not settled (zsim's `overloaded` / `backlog_at_end` / `latency_not_settled` / "
                  "`loss_not_settled` warnings) is no answer, whatever its numbers, because they still change with the run's "
                  "length. Copies queued at the end count as lost.", ""]
    if figures:
        lines += ["## Figures", ""]
        for path in figures:
            lines += [f"![{md(path.stem)}]({md_url(path.relative_to(out_dir).as_posix())})", ""]
    lines += ["## Per point (mean ± 95 % CI half-width)", ""]
    per_table = 5
    for start in range(0, max(len(metrics), 1), per_table):
        shown = list(metrics[start:start + per_table])
        rows = []
        for _, row in points.head(MAX_TABLE_ROWS).iterrows():
            runs = f"{int(row['runs'])}" + (f" ({int(row['failed'])} failed)" if row["failed"] else "")
            rows.append([axis_value_label(a.path, row[a.path]) for a in results.axes] + [runs]
                        + [_cell(row.get(f"{m}_mean"), row.get(f"{m}_ci"), m) for m in shown])
        lines += [_markdown_table([a.label for a in results.axes] + ["runs"] + [metric_label(m) for m in shown], rows), ""]
    if len(points) > MAX_TABLE_ROWS:
        lines += [f"(first {MAX_TABLE_ROWS} of {len(points)} points; all of them in points.csv)"]
    if results.derived:
        lines += ["", "Derived metrics ([report.derived], computed on every run, then averaged): "
                  + "; ".join(f"{md_code(name)} = {md_code(expr)}" for name, expr in results.derived.items())]
    lines += ["", f"Report settings from {md(shown_path(results.config_source))}. Pooled metrics count every copy of the run together "
              "(all receivers); per-socket metrics (`socket.<name>.*`) count the copies meant for that socket."]
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
        if "file" in spec:  # a saved manifest is someone else's file: its names stay inside --out
            files.plain_name(spec["file"], f"{where}.file")
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
        thresholds_cfg = [t for t in config.get("threshold") or [] if isinstance(t, Mapping)]
        if kind == "threshold" and thresholds_cfg:
            chosen = next((t for t in thresholds_cfg if spec.get("metric") in (None, t.get("metric"))), thresholds_cfg[0])
            placed_threshold_axes(results, spec, chosen, where)


def report_sweep(directory: Path, out_dir: Path, *, figures: bool = True, warn: store.Warn | None = None,
                 config: str | Path | None = None, written: list[Path] | None = None) -> list[Path]:
    """Write one sweep's report into ``out_dir``; return the files written. With
    ``written`` given, each file is appended there as soon as it is written, so a caller
    whose report stops half-way knows what is on disk (``make_report`` says it)."""
    results = SweepResults(directory, warn, config)
    check_config(results)
    files.prepare_output_dir(out_dir, "the report folder")
    files.cleanup_leftovers(out_dir, ("points.csv", "thresholds.csv", "summary.md"))
    metrics = results.metrics()
    if written is None:
        written = []
    start = len(written)
    points = points_table(results, metrics)
    path = out_dir / "points.csv"
    files.atomic_write(path, points.to_csv(index=False))
    written.append(path)

    threshold_tables = []
    for spec in results.report_config.get("threshold", []):
        if len(results.frame):
            threshold_tables.append((spec, thresholds(results, spec)))
    # each answer's design as a scenario file of its own, named in thresholds.csv
    scenario_files = [item for k, (spec, table) in enumerate(threshold_tables, 1) for item in answer_scenarios(results, spec, table, k)]
    hlines = {spec["metric"]: float(spec["below"]) for spec, _ in threshold_tables}
    if threshold_tables:
        path = out_dir / "thresholds.csv"
        pd = _pandas()
        files.atomic_write(path, pd.concat([t.assign(metric=s["metric"], below=s["below"], minimise=results.axis(s["minimise"]).path)
                                            for s, t in threshold_tables]).to_csv(index=False))
        written.append(path)
    for name, text in scenario_files:
        path = out_dir / name
        files.atomic_write(path, text)
        written.append(path)

    figure_paths = _FigureList(written)
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
    path = out_dir / "summary.md"
    files.atomic_write(path, _summary_markdown(results, points, metrics, threshold_tables, figure_paths, out_dir))
    written.append(path)
    return written[start:]


class _FigureList(list[Path]):
    """The figures of one report, each also added to the report's ``written`` list the
    moment it is on disk."""

    def __init__(self, written: list[Path]) -> None:
        super().__init__()
        self.written = written

    def append(self, path: Path) -> None:
        super().append(path)
        self.written.append(path)


def _stopped(error: ZsimError, written: Sequence[Path], out_dir: Path) -> ZsimError:
    """``error`` of a report that stopped after writing ``written``, with those named: the
    user learns which files are on disk (points.csv, thresholds.csv, figures) and that
    summary.md is not. The same kind of error (its exit status), the same field."""
    import copy

    note = (f"; it wrote {', '.join(path.name for path in written)} into {shown_path(out_dir)} before it stopped; "
            "summary.md was not written")
    if isinstance(error, (ScenarioError, EnvironmentFault)):
        changed = copy.copy(error)
        changed.reason = error.reason + note
        changed.args = (f"{error.path}: {changed.reason}" if error.path else changed.reason,)
        return changed
    return ZsimError(f"{error}{note}")


def make_report(results: str | Path, out: str | Path | None = None, *, figures: bool = True, warn: store.Warn | None = None,
                errors: list[tuple[Path, ZsimError]] | None = None, config: str | Path | None = None) -> list[Path]:
    """Report every sweep under ``results`` into ``out/<sweep name>/`` (default
    ``results/report``): points.csv, thresholds.csv, figures (PNG), summary.md.

    ``out`` is checked (created, written to) before any work. One sweep whose report fails
    (a damaged manifest, a bad ``[report]``, anything else) does not stop the others: with
    ``errors`` given, each failure is appended there as ``(sweep folder, error)``; without,
    the first failure is raised after the other sweeps' reports are written. A report that
    stops half-way says in its error which of its files it wrote before it stopped (and
    that summary.md is not among them); those files are in the list returned. Damaged part
    files are named through ``warn`` (default: stderr) and left out.

    ``[report]`` settings: by default each sweep's sweep file is read again (so a changed
    ``[report]`` needs no re-run), else the settings saved when it ran; ``config`` (a sweep
    file) gives them instead, for the sweep it names (or the only sweep under ``results``).
    """
    from .plan import NAME_PATTERN

    root = Path(results)
    directories = store.sweep_dirs(root)
    holder = root.parent if root.name.startswith("sweep=") else root
    base = Path(out) if out is not None else holder / "report"
    if out is None:  # the default lies in the results folder, someone else's: no link followed
        files.check_not_link(base, holder, "the results folder")
    files.prepare_output_dir(base, "the report folder (--out)")
    written: list[Path] = []
    failures: list[tuple[Path, ZsimError]] = []
    config_name = None
    if config is not None:
        raw = files.load_toml(Path(config), "sweep file (--config)")
        head = raw.get("sweep")
        config_name = head.get("name", Path(config).stem) if isinstance(head, Mapping) else Path(config).stem
        if len(directories) > 1 and not any(d.name.split("=", 1)[1] == config_name for d in directories):
            raise ScenarioError(str(config), f"names the sweep {config_name!r}, which has no results under {root}")
    for directory in directories:
        name = directory.name.split("=", 1)[1]
        use = config if config is not None and (len(directories) == 1 or name == config_name) else None
        this: list[Path] = []  # filled as files are written: on a failure, what is on disk
        failure: ZsimError | None = None
        try:
            if not NAME_PATTERN.match(name):  # it names the report's folder: a plain name, as zsim sweep writes it
                raise ScenarioError(str(directory), f"{name!r} is not a sweep name zsim writes (letters, digits, '_', '.', '-'); "
                                                    "its report would not be a plain folder inside --out")
            files.check_not_link(base / name, base, "the report folder")
            report_sweep(directory, base / name, figures=figures, warn=warn, config=use, written=this)
        except ZsimError as exc:
            failure = exc
        except OSError as exc:
            failure = EnvironmentFault(str(exc.filename or directory), exc.strerror or str(exc))
        except Exception as exc:  # noqa: BLE001 - one sweep's report must not take the others down
            text = f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:300]
            failure = ZsimError(f"report failed ({text})")
        written += this
        if failure is not None:
            failures.append((directory, _stopped(failure, this, base / name) if this else failure))
    if errors is not None:
        errors.extend(failures)
    elif failures:
        raise failures[0][1]
    return written
