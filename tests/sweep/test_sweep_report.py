"""zsim.sweep.report: confidence intervals, threshold answers, figures, Markdown."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from test_sweep_support import sweep_dict

from zsim.sweep import report, run_sweep


def test_t_quantiles():
    assert report.t975(1) == pytest.approx(12.706, abs=1e-3)
    assert report.t975(19) == pytest.approx(2.093, abs=1e-3)
    assert report.t975(200) == pytest.approx(1.972, abs=1e-3)
    assert math.isnan(report.t975(0))


def test_t_quantiles_without_scipy(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_scipy(name, *args, **kwargs):
        if name.startswith("scipy"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_scipy)
    assert report.t975(4) == pytest.approx(2.776, abs=1e-3)
    assert report.t975(60) == pytest.approx(2.000, abs=2e-3)


def test_aggregate_mean_and_interval():
    frame = pd.DataFrame({
        "k": ["a"] * 5 + ["b"] * 2 + ["c"],
        "ok": [True] * 5 + [True, False] + [True],
        "m": [1.0, 2.0, 3.0, 4.0, 5.0, 7.0, np.nan, 1.0],
    })
    table = report.aggregate(frame, ["k"], ["m"]).set_index("k")
    assert table.loc["a", "runs"] == 5 and table.loc["b", "failed"] == 1
    assert table.loc["a", "m_mean"] == 3.0
    half = 2.776445 * np.std([1, 2, 3, 4, 5], ddof=1) / math.sqrt(5)
    assert table.loc["a", "m_ci"] == pytest.approx(half, rel=1e-4)
    assert table.loc["a", "m_lo"] == pytest.approx(3.0 - half, rel=1e-4)
    assert table.loc["b", "m_mean"] == 7.0 and math.isnan(table.loc["b", "m_ci"])  # one ok run: no interval


REPORTED = {
    "metrics": ["drop_fraction", "latency_p50_s", "latency_p99_s", "max_pipe_depth", "delivered_rate_per_s"],
    "threshold": [{"metric": "drop_fraction", "below": 0.001, "minimise": "sndhwm", "by": ["size_bytes"]}],
    "figure": [
        {"kind": "line", "x": "sndhwm", "y": "drop_fraction", "series": "size_bytes", "file": "drops.png"},
        {"kind": "line", "x": "sndhwm", "y": ["latency_p50_s", "latency_p99_s"], "where": {"size_bytes": 100}, "file": "latency.png"},
        {"kind": "heatmap", "x": "sndhwm", "y": "size_bytes", "metric": "drop_fraction", "file": "heat.png"},
        {"kind": "threshold", "x": "size_bytes", "file": "threshold.png"},
    ],
}


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    raw = sweep_dict(replications=4)
    raw["report"] = REPORTED
    run_sweep(raw, out, engine="serial", stream=None)
    return out


def test_report_writes_tables_figures_and_markdown(results_dir, tmp_path):
    written = report.make_report(results_dir, tmp_path)
    names = {p.name for p in written}
    assert {"points.csv", "thresholds.csv", "summary.md", "drops.png", "latency.png", "heat.png", "threshold.png"} <= names
    for path in written:
        assert path.stat().st_size > 0
        if path.suffix == ".png":
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    points = pd.read_csv(tmp_path / "small" / "points.csv")
    assert len(points) == 6 and (points["runs"] == 4).all()
    assert {"drop_fraction_mean", "drop_fraction_ci", "latency_p99_s_hi", "max_pipe_depth_mean"} <= set(points.columns)
    summary = (tmp_path / "small" / "summary.md").read_text()
    assert "## Smallest socket.publisher.options.sndhwm keeping drop fraction (pooled) below 0.1 %" in summary
    assert "![drops](drops.png)" in summary
    assert summary.count("\n| ") >= 6 + 2


def test_default_report_location_and_default_figures(results_dir):
    raw_dir = results_dir / "sweep=small"
    written = report.make_report(raw_dir)
    assert all(str(p).startswith(str(results_dir / "report" / "small")) for p in written)


def test_default_figures_without_report_config(tmp_path):
    run_sweep(sweep_dict(replications=2), tmp_path, engine="serial", stream=None)
    written = report.make_report(tmp_path)
    pngs = [p.name for p in written if p.suffix == ".png"]
    assert any(name.startswith("pooled-drop-fraction-vs-") for name in pngs)
    assert any(name.startswith("heatmap-pooled-drop-fraction") for name in pngs)


def test_thresholds_take_the_smallest_value_from_which_on_the_target_holds(results_dir):
    results = report.SweepResults(results_dir / "sweep=small")
    hwm, size = "socket.publisher.options.sndhwm", "send.publisher.size_bytes"
    rows = []
    # size 100: drops 0.1, 0.0005 (but noisy), 0.0; size 65536: never below target
    for noise in [-1, 1, -1, 1]:
        rows += [
            {hwm: 2, size: 100, "ok": True, "drop_fraction": 0.1},
            {hwm: 20, size: 100, "ok": True, "drop_fraction": 0.0005 + noise * 0.0006},
            {hwm: 200, size: 100, "ok": True, "drop_fraction": 0.0},
            {hwm: 2, size: 65536, "ok": True, "drop_fraction": 0.3},
            {hwm: 20, size: 65536, "ok": True, "drop_fraction": 0.0},  # below, but a larger HWM is not
            {hwm: 200, size: 65536, "ok": True, "drop_fraction": 0.01},
        ]
    results.frame = pd.DataFrame(rows)
    spec = {"metric": "drop_fraction", "below": 0.001, "minimise": "sndhwm", "by": ["size_bytes"]}
    table = report.thresholds(results, spec).set_index(size)
    assert table.loc[100, "smallest_by_mean"] == 20
    assert table.loc[100, "smallest_by_upper_ci"] == 200  # the interval at 20 reaches above 0.001
    assert table.loc[65536, "smallest_by_mean"] is None or pd.isna(table.loc[65536, "smallest_by_mean"])
    assert table.loc[65536, "largest_tried"] == 200


def test_report_of_a_missing_directory_is_a_clear_error(tmp_path):
    from zsim.errors import ZsimError

    with pytest.raises(ZsimError, match="no such results directory"):
        report.make_report(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ZsimError, match="no sweep results here"):
        report.make_report(tmp_path / "empty")
