"""Per-entity sweep rows, derived metrics, steady-state threshold answers, HWM 0 as
unlimited, and ``zsim report`` re-reading ``[report]`` (issue 9).

Scenarios use the ``ideal`` profile (no time costs) and deterministic intervals, so the
numbers are decided by the model's rules, not by the machine.
"""

from __future__ import annotations

import argparse
import math

import pandas as pd
import pytest

import zsim
from support import scenario
from zsim import expressions
from zsim.errors import ScenarioError
from zsim.results import flat_metrics
from zsim.sweep import report, run_sweep
from zsim.sweep.plan import from_dict

PUB = {"name": "pub", "type": "PUB", "bind": "inproc://feed", "options": {"sndhwm": 5}}


def _sub(name, rcvhwm=5, topics=("",)):
    return {"name": name, "type": "SUB", "connect": "inproc://feed", "options": {"rcvhwm": rcvhwm, "subscribe": list(topics)}}


def test_flat_rows_name_every_receiver_pipe_and_sender():
    # 100 messages at 1 ms from t = 0.5 s; "fast" reads at once, "stalled" never: its
    # inproc pipe holds sndhwm + rcvhwm = 10, the other 90 are dropped at the PUB.
    raw = scenario(PUB, _sub("fast"), _sub("stalled"),
                   sends=[{"socket": "pub", "count": 100, "start_s": 0.5, "interval_s": 0.001}],
                   recvs=[{"socket": "fast"}])
    result = zsim.run(raw, 1)
    row = flat_metrics(result.summary, result, zsim.spec.from_dict(raw))
    assert row["socket.fast.delivered"] == 100 and row["socket.fast.loss_fraction"] == 0.0
    assert row["socket.stalled.delivered"] == 0 and row["socket.stalled.dropped"] == 90
    assert row["socket.stalled.queued_at_end"] == 10
    assert row["socket.stalled.loss_fraction"] == 1.0  # queued at the end is not delivered
    assert math.isnan(row["socket.stalled.latency_p99_s"]) and math.isnan(row["socket.stalled.latency_max_s"])
    assert row["socket.fast.latency_p99_9_s"] == pytest.approx(0.0, abs=1e-12)
    assert row["socket.fast.last_recv_s"] == pytest.approx(0.599) and row["socket.fast.first_recv_s"] == pytest.approx(0.5)
    assert row["pipe.pub->stalled.dropped"] == 90 and row["pipe.pub->stalled.max_depth"] == 10
    assert row["pipe.pub->fast.dropped"] == 0
    assert row["sender.send.pub.sent"] == 100 and row["sender.send.pub.requested_rate_per_s"] == pytest.approx(1000.0)
    assert row["socket.pub.dropped"] == 90  # a socket nothing was meant for: the copies it dropped sending
    # pooled: 90 dropped and 10 queued of 200 copies; the old names are the same numbers
    assert row["pooled_drop_fraction"] == row["drop_fraction"] == pytest.approx(0.45)
    assert row["pooled_loss_fraction"] == row["loss_fraction"] == pytest.approx(0.5)
    assert row["warning.backlog_at_end"] == 1 and row["warnings"] >= 1 and row["warning.overloaded"] == 0
    assert row["socket.stalled.backlog_at_end"] == 1.0
    assert row["socket.fast.offered_utilisation"] == 0.0 and row["socket.fast.overloaded"] == 0.0


def test_expressions_take_backquoted_names_and_skip_nan_in_max():
    values = {"pipe.a->b (tcp send).dropped": 6.0, "sent": 3.0, "x": math.nan, "y": 2.0}
    assert expressions.evaluate("`pipe.a->b (tcp send).dropped` / sent - 1e-3", values.get) == pytest.approx(1.999)
    assert expressions.evaluate("max(x, y) + min(y, x)", values.get) == 4.0
    # NaN and a missing name are the same: no value (zsim.expressions' one rule); sum() skips it
    assert expressions.evaluate("x + y", values.get) is None
    assert expressions.evaluate("missing + 1", values.get) is None
    assert expressions.evaluate("sum(x, y, missing)", values.get) == 2.0
    with pytest.raises(ValueError, match="not allowed"):
        expressions.parse("sent ** 2")


# -- a small overloaded / steady sweep --------------------------------------------------------

def _overload_sweep(service_s: list[float], report_table: dict) -> dict:
    """PUB -> SUB inproc, 1,000 msg/s for 1 s (ideal profile); SUB service time an axis;
    SNDHWM an axis including 0 (unlimited)."""
    base = scenario(
        {"name": "pub", "type": "PUB", "bind": "inproc://feed", "options": {"sndhwm": 10}},
        {"name": "sub", "type": "SUB", "connect": "inproc://feed", "options": {"rcvhwm": 1, "subscribe": [""]}},
        sends=[{"socket": "pub", "count": 1000, "start_s": 0.1, "interval_s": 0.001}],
        recvs=[{"socket": "sub", "service_s": 0.0005}], until_s=1.2)
    return {"sweep": {"name": "overload", "replications": 2, "seed": 1}, "base": base,
            "axes": {"socket.pub.options.sndhwm": [0, 1, 50], "recv.sub.service_s": service_s}, "report": report_table}


THRESHOLDS = {
    "derived": {"drop_share": "socket.sub.dropped / socket.sub.copies"},
    "threshold": [{"metric": "drop_share", "below": 0.001, "minimise": "sndhwm"},
                  {"metric": "socket.sub.loss_fraction", "below": 0.001, "minimise": "sndhwm"}],
}


@pytest.fixture(scope="module")
def overload(tmp_path_factory):
    out = tmp_path_factory.mktemp("overload")
    run_sweep(_overload_sweep([0.0005, 0.002], THRESHOLDS), out, engine="serial", stream=None)
    return out


def test_hwm_zero_is_unlimited_last_and_never_the_smallest_answer(overload):
    results = report.SweepResults(overload / "sweep=overload")
    path = "socket.pub.options.sndhwm"
    assert report.sorted_axis_values(path, [0, 50, 1]) == [1, 50, 0]
    assert report.axis_value_label(path, 0) == "unlimited"
    positions, ticks, detached = report.x_positions(path, [0, 1, 50], log=False)
    assert positions[0] > detached > positions[50]  # drawn apart, to the right: never at x = 0
    assert ticks[-1] == (positions[0], "unlimited")
    table = report.thresholds(results, THRESHOLDS["threshold"][0]).set_index("recv.sub.service_s")
    # steady (0.5 ms service at 1 ms spacing): nothing is dropped at any HWM; the answer is
    # the smallest finite HWM, not 0
    assert table.loc[0.0005, "smallest_by_mean"] == 1 and table.loc[0.0005, "smallest_by_upper_ci"] == 1


def test_a_growing_backlog_is_no_answer_and_queued_copies_are_loss(overload):
    results = report.SweepResults(overload / "sweep=overload")
    frame = results.frame
    unlimited = frame[(frame["socket.pub.options.sndhwm"] == 0) & (frame["recv.sub.service_s"] == 0.002)]
    # overloaded (2 ms per message, one arrives every 1 ms): with no HWM nothing is dropped ...
    assert (unlimited["socket.sub.dropped"] == 0).all() and (unlimited["socket.sub.queued_at_end"] > 300).all()
    assert (unlimited["drop_share"] == 0).all()
    # ... but the queued copies are lost, and the run says it is overloaded
    assert (unlimited["socket.sub.loss_fraction"] > 0.3).all() and (unlimited["socket.sub.overloaded"] == 1).all()
    assert unlimited["socket.sub.offered_utilisation"].iloc[0] == pytest.approx(2.0, rel=0.02)
    table = report.thresholds(results, THRESHOLDS["threshold"][0]).set_index("recv.sub.service_s")
    # the derived drop share is 0 at HWM 0, yet no HWM answers: not in steady state
    assert pd.isna(table.loc[0.002, "smallest_by_mean"]) and pd.isna(table.loc[0.002, "smallest_by_upper_ci"])
    answer = table.loc[0.002, "answer"]
    assert answer.startswith("no socket.pub.options.sndhwm tried keeps drop_share below 0.001: sub is not in steady state at")
    assert "offered utilisation is 2" in answer and "unlimited" in table.loc[0.002, "not_steady_at"]
    loss = report.thresholds(results, THRESHOLDS["threshold"][1]).set_index("recv.sub.service_s")
    assert pd.isna(loss.loc[0.002, "smallest_by_mean"]) and loss.loc[0.0005, "smallest_by_mean"] == 1


def test_rows_of_points_with_different_entities_merge_with_nan(tmp_path):
    # point 1: "b" subscribes to everything; point 2: to a topic nobody sends, so no copy
    # is meant for it and its rows have no socket.b.loss_fraction column at all
    base = scenario(PUB, _sub("a", rcvhwm=100), _sub("b", rcvhwm=100),
                    sends=[{"socket": "pub", "count": 20, "start_s": 0.5, "interval_s": 0.001}],
                    recvs=[{"socket": "a"}, {"socket": "b"}], until_s=1.0)
    raw = {"sweep": {"name": "entities", "replications": 1, "seed": 1}, "base": base,
           "axes": {"socket.b.options.subscribe": [[""], ["zzz"]]},
           "report": {"metrics": ["socket.a.delivered", "socket.b.loss_fraction", "socket.b.delivered"]}}
    run_sweep(raw, tmp_path, engine="serial", stream=None)
    report.make_report(tmp_path, tmp_path / "r")
    points = pd.read_csv(tmp_path / "r" / "entities" / "points.csv").set_index("socket.b.options.subscribe")
    assert points.loc['[""]', "socket.b.delivered_mean"] == 20 and points.loc['["zzz"]', "socket.a.delivered_mean"] == 20
    assert math.isnan(points.loc['["zzz"]', "socket.b.loss_fraction_mean"])


def test_derived_and_entity_names_are_checked_when_the_sweep_is_loaded():
    raw = _overload_sweep([0.0005], {"derived": {"x": "socket.sbu.dropped + 1"}})
    with pytest.raises(ScenarioError, match=r"report.derived.x: reads unknown metric 'socket.sbu.dropped' \(did you mean"):
        from_dict(raw)
    raw = _overload_sweep([0.0005], {"derived": {"sent": "1"}})
    with pytest.raises(ScenarioError, match="report.derived.sent: is already a metric"):
        from_dict(raw)
    raw = _overload_sweep([0.0005], {"derived": {"a": "b + 1", "b": "a"}})
    with pytest.raises(ScenarioError, match="depends on itself"):
        from_dict(raw)
    ok = _overload_sweep([0.0005], {"derived": {"d": "`pipe.pub->sub.dropped` / sent"}, "metrics": ["d", "pipe.pub->sub.max_depth"]})
    from_dict(ok)
    bad = _overload_sweep([0.0005], {"metrics": ["pipe.pub->nobody.dropped"]})
    with pytest.raises(ScenarioError, match="unknown metric 'pipe.pub->nobody.dropped'"):
        from_dict(bad)


SWEEP = """\
[sweep]
name = "reread"
replications = 1
seed = 1

[axes]
"socket.pub.options.sndhwm" = [1, 50]

[base.scenario]
name = "reread"
profile = "ideal"
until_s = 0.5

[[base.socket]]
name = "pub"
type = "PUB"
bind = "inproc://feed"

[[base.socket]]
name = "sub"
type = "SUB"
connect = "inproc://feed"
options = {{ subscribe = [""] }}

[[base.send]]
socket = "pub"
count = 10
start_s = 0.1

[[base.recv]]
socket = "sub"

{report}
"""


def test_zsim_report_reads_report_again_from_the_sweep_file(tmp_path):
    from zsim.sweep.cli import cmd_report

    path = tmp_path / "reread.toml"
    path.write_text(SWEEP.format(report='[report]\nmetrics = ["socket.sub.delivered"]'))
    out = tmp_path / "out"
    run_sweep(path, out, engine="serial", stream=None)
    summary = out / "report" / "reread" / "summary.md"
    assert cmd_report(argparse.Namespace(results=str(out), out=None)) == 0
    assert "delivered (copies for sub)" in summary.read_text() and "twice" not in summary.read_text()
    # edit [report] (a derived metric and a threshold) and report again: no re-run needed
    path.write_text(SWEEP.format(report='[report]\nmetrics = ["twice"]\n[report.derived]\ntwice = "socket.sub.delivered * 2"\n'
                                        '[[report.threshold]]\nmetric = "twice"\nbelow = 100\nminimise = "sndhwm"\n'))
    assert cmd_report(argparse.Namespace(results=str(out), out=None)) == 0
    text = summary.read_text()
    assert "twice" in text and f"Report settings from {path}" in text
    points = pd.read_csv(out / "report" / "reread" / "points.csv")
    assert (points["twice_mean"] == 20).all()
    # --config FILE: another file's [report]
    other = tmp_path / "other.toml"
    other.write_text('[report]\nmetrics = ["socket.sub.queued_at_end"]\n')
    assert cmd_report(argparse.Namespace(results=str(out), out=str(tmp_path / "o2"), config=str(other))) == 0
    assert "queued at the end (copies for sub)" in (tmp_path / "o2" / "reread" / "summary.md").read_text()
    # a [report] that names what the rows lack is one line, exit 2
    other.write_text('[report]\nmetrics = ["socket.sbu.delivered"]\n')
    assert cmd_report(argparse.Namespace(results=str(out), out=str(tmp_path / "o3"), config=str(other))) == 2


def test_a_threshold_over_a_template_reads_its_members_steady_state(tmp_path):
    # issue 30: socket.sub.max_loss_fraction over a template of two SUBs was mapped to a
    # socket "sub" that does not exist, whose flags read as 0: the overloaded point looked
    # steady, and utilisation and not_steady_at stayed empty
    sweep = _overload_sweep([0.0005, 0.002], {"threshold": [{"metric": "socket.sub.max_loss_fraction", "below": 0.001,
                                                             "minimise": "sndhwm"}]})
    subs = sweep["base"]["socket"]
    subs[1] = {**subs[1], "name": "sub{i}", "count": 2}
    run_sweep(sweep, tmp_path, engine="serial", stream=None)
    results = report.SweepResults(tmp_path / "sweep=overload")
    assert (results.frame["socket.sub.members"] == 2).all()
    table = report.thresholds(results, sweep["report"]["threshold"][0]).set_index("recv.sub.service_s")
    assert table.loc[0.0005, "smallest_by_mean"] == 1  # steady: the smallest HWM answers
    assert pd.isna(table.loc[0.002, "smallest_by_mean"]) and pd.isna(table.loc[0.002, "smallest_by_upper_ci"])
    assert "unlimited" in table.loc[0.002, "not_steady_at"]
    assert table.loc[0.002, "utilisation"] == pytest.approx(2.0, rel=0.02)
    assert "sub is not in steady state" in table.loc[0.002, "answer"]
