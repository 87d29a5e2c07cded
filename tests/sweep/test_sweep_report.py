"""zsim.sweep.report: confidence intervals, threshold answers, figures, Markdown."""

from __future__ import annotations

import math  # noqa: F401

import numpy as np
import pandas as pd
import pytest
from test_sweep_support import sweep_dict

from zsim.sweep import report, run_sweep


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
    for row in rows:
        row["copies"] = 10_000  # each run offered 10,000 copies: zeros get the rule of three's bound
    results.frame = pd.DataFrame(rows)
    spec = {"metric": "drop_fraction", "below": 0.001, "minimise": "sndhwm", "by": ["size_bytes"]}
    table = report.thresholds(results, spec).set_index(size)
    assert table.loc[100, "smallest_by_mean"] == 20
    assert table.loc[100, "smallest_by_upper_ci"] == 200  # the interval at 20 reaches above 0.001
    assert table.loc[65536, "smallest_by_mean"] is None or pd.isna(table.loc[65536, "smallest_by_mean"])
    assert table.loc[65536, "largest_tried"] == 200
    # HWM 200 lost nothing in 4 runs of 10,000 copies: not 0 +- 0 but 1 - 0.05^(1/40,000)
    assert table.loc[100, "metric_upper_ci_there"] == pytest.approx(7.489e-5, rel=1e-3)
    answer = table.loc[100, "answer"]
    assert "no run lost any at 200 (40,000 copies in 4 runs): the bound there, 0.00749 %, is the rule of three over copies" in answer
    # over runs, the independent unit: 0 in 4 leaves up to 1 - 0.05^(1/4) = 53 % of runs with some
    assert ("and over runs, which are independent, none in 4 says only that a run loses some in up to 53 % of runs (95 %; 59 "
            "runs would bound that at 5 %)") in answer
    assert answer.endswith("it is the largest value tried: the smallest that keeps drop fraction (pooled) below 0.1 % with 95 % "
                           "confidence lies between 20 and 200 (refine there)")
    # the page: the refine column is text, '-' where no value answers (it was read as an axis and printed 'nan')
    text = report._summary_markdown(results, pd.DataFrame(), [], [(spec, report.thresholds(results, spec))], [], results_dir)
    rows = {line.split(" | ")[0]: line.split(" | ") for line in text.splitlines() if line.startswith(("| 100 B |", "| 64 KB |"))}
    assert rows["| 100 B"][1] == "between 20 and 200" and rows["| 64 KB"][1] == "-"
    assert table.loc[100, "refine"] == "between 20 and 200"


def test_fractions_stay_in_zero_to_one_and_zeros_without_copies_give_no_bound(results_dir):
    # issue 30: "3.027 % +- 3.7 %" went below zero; "0.000 % +- 0 %" was called the bound
    results = report.SweepResults(results_dir / "sweep=small")
    hwm, size = "socket.publisher.options.sndhwm", "send.publisher.size_bytes"
    rows = [{hwm: h, size: 100, "ok": True, "drop_fraction": f} for f in (0.0, 0.09, 0.0, 0.0) for h in (200,)]
    rows += [{hwm: 1600, size: 100, "ok": True, "drop_fraction": 0.0} for _ in range(4)]
    results.frame = pd.DataFrame(rows)
    table = report.aggregate(results.frame, [hwm], ["drop_fraction"]).set_index(hwm)
    assert table.loc[200, "drop_fraction_lo"] == 0.0 and table.loc[200, "drop_fraction_hi"] <= 1.0
    assert table.loc[200, "drop_fraction_mean"] - table.loc[200, "drop_fraction_ci"] < 0  # the t interval alone would go below
    assert bool(table.loc[1600, "drop_fraction_zeros"]) and pd.isna(table.loc[1600, "drop_fraction_hi"])
    spec = {"metric": "drop_fraction", "below": 0.001, "minimise": "sndhwm", "by": ["size_bytes"]}
    row = report.thresholds(results, spec).set_index(size).loc[100]
    assert row["smallest_by_mean"] == 1600 and pd.isna(row["smallest_by_upper_ci"])
    assert "no run lost any at 1600 (4 runs): zeros from runs give no bound without the copies they offered" in row["answer"]


def test_report_of_a_missing_directory_is_a_clear_error(tmp_path):
    from zsim.errors import ZsimError

    with pytest.raises(ZsimError, match="no such results directory"):
        report.make_report(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ZsimError, match="no sweep results here"):
        report.make_report(tmp_path / "empty")


# -- a threshold over three axes (issue 41, finding 3) ------------------------------------


@pytest.fixture(scope="module")
def three_axes_dir(tmp_path_factory):
    """sndhwm x size x rate: a threshold on sndhwm answers per (size, rate)."""
    out = tmp_path_factory.mktemp("three")
    raw = sweep_dict(replications=2)
    raw["axes"]["send.publisher.rate_per_s"] = [1000, 2000]
    raw["report"] = {"threshold": [{"metric": "drop_fraction", "below": 0.001, "minimise": "sndhwm"}]}
    run_sweep(raw, out, engine="serial", stream=None)
    return out


def _drawn_figures(monkeypatch):
    """The panels of every line figure drawn (zsim.plotting.line_figure), by file name."""
    from zsim import plotting

    drawn = {}
    real = plotting.line_figure

    def record(panels, path, **kwargs):
        drawn[path.name] = list(panels)
        return real(panels, path, **kwargs)

    monkeypatch.setattr(plotting, "line_figure", record)
    return drawn


def test_a_threshold_over_three_axes_gets_its_report_and_figure(three_axes_dir, tmp_path, monkeypatch):
    # it was: KeyError: 'socket.publisher.options.sndhwm' in threshold_figure, no summary.md
    drawn = _drawn_figures(monkeypatch)
    errors: list = []
    written = report.make_report(three_axes_dir, tmp_path, errors=errors)
    assert errors == []
    assert tmp_path / "small" / "summary.md" in written
    [figure] = [name for name in drawn if name.startswith("threshold-")]
    # the answer against size, one curve per rate: never a line joining answers of two rates
    for panel in drawn[figure]:
        labels = [line.label for line in panel.lines]
        assert labels == ["1,000/s", "1,000/s (mean)", "2,000/s", "2,000/s (mean)"]
        for line in panel.lines:
            assert len(line.x) == len(set(line.x)) == 2


def test_an_axis_a_threshold_figure_does_not_place_gets_a_panel_per_value(three_axes_dir, tmp_path, monkeypatch):
    drawn = _drawn_figures(monkeypatch)
    config = {"threshold": [{"metric": "drop_fraction", "below": 0.001, "minimise": "sndhwm"}],
              "figure": [{"kind": "threshold", "x": "size_bytes", "file": "t.png"}]}
    results = report.SweepResults(three_axes_dir / "sweep=small")
    results.report_config = config
    table = report.thresholds(results, config["threshold"][0])
    report.threshold_figure(results, config["figure"][0], config["threshold"][0], table, tmp_path)
    panels = drawn["t.png"]
    assert [panel.title for panel in panels] == ["send.publisher.rate_per_s = 1,000/s", "send.publisher.rate_per_s = 2,000/s"]
    for panel in panels:
        assert [line.label for line in panel.lines] == ["95 % upper bound", "mean"]
        assert all(len(line.x) == len(set(line.x)) == 2 for line in panel.lines)  # one answer per size in each panel


def test_a_threshold_figure_on_the_minimised_axis_is_one_line_before_anything_is_written(three_axes_dir, tmp_path):
    from zsim.errors import ScenarioError

    results = report.SweepResults(three_axes_dir / "sweep=small")
    results.report_config = {"threshold": [{"metric": "drop_fraction", "below": 0.001, "minimise": "sndhwm"}],
                             "figure": [{"kind": "threshold", "x": "size_bytes", "series": "sndhwm"}]}
    with pytest.raises(ScenarioError, match=r"^report.figure\[0\].series: 'socket.publisher.options.sndhwm' is the axis the "
                                            r"threshold minimises, the figure's y; name another axis$"):
        report.check_config(results)


def test_a_report_that_stops_says_which_files_it_wrote(three_axes_dir, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("a figure that cannot be drawn")

    monkeypatch.setattr(report, "threshold_figure", broken)
    errors: list = []
    written = report.make_report(three_axes_dir, tmp_path, errors=errors)
    [(directory, error)] = errors
    out = tmp_path / "small"
    assert str(error) == (f"report failed (RuntimeError: a figure that cannot be drawn); it wrote points.csv, thresholds.csv, "
                          f"{written[2].name} into {out} before it stopped; summary.md was not written")
    assert [path.name for path in written][:2] == ["points.csv", "thresholds.csv"] and all(path.exists() for path in written)
    assert not (out / "summary.md").exists()


def test_each_threshold_answer_is_written_as_the_scenario_file_of_its_point(results_dir, tmp_path):
    # issue 41, item 4: a sweep report names the scenario file that reproduces its chosen design, and writes it
    import tomllib

    from zsim import spec

    written = report.make_report(results_dir, tmp_path)
    out = tmp_path / "small"
    table = pd.read_csv(out / "thresholds.csv")
    assert list(table["scenario_file"]) == ["threshold-1-1.toml", "threshold-1-2.toml"]
    assert {out / "threshold-1-1.toml", out / "threshold-1-2.toml"} <= set(written)
    frame = report.SweepResults(results_dir / "sweep=small").frame
    hwm, size = "socket.publisher.options.sndhwm", "send.publisher.size_bytes"
    for _, row in table.iterrows():
        text = (out / row["scenario_file"]).read_text()
        assert text.startswith("# The answer of zsim report, sweep small: the smallest socket.publisher.options.sndhwm keeping "
                               "drop fraction (pooled) below 0.1 % at send.publisher.size_bytes = ")
        scenario = spec.from_dict(tomllib.loads(text))
        # the file is the point the answer names: its runs' scenario digest, its HWM and the linked RCVHWM
        there = frame[(frame[hwm] == row["smallest_by_upper_ci"]) & (frame[size] == row[size])]
        assert set(there["scenario_digest"]) == {scenario.digest}
        assert scenario.socket("publisher").options.sndhwm == scenario.socket("subscriber").options.rcvhwm == row["smallest_by_upper_ci"]
    assert "`threshold-1-1.toml`" in (out / "summary.md").read_text()
