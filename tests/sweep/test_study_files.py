"""The studies in experiments/ (issue 9): their sweep files plan and check as written, and
the task-pipeline study's worker count (a template's count, issue 11) makes that many workers."""

from __future__ import annotations

from pathlib import Path

import pytest

import zsim
from zsim.results import flat_metrics
from zsim.sweep import make_plan

ROOT = Path(__file__).resolve().parents[2] / "experiments"


@pytest.mark.parametrize("study, points, runs", [("market_data", 15, 45), ("task_pipeline", 4, 40), ("wan_sndhwm", 36, 216)])
def test_study_sweeps_plan_with_their_report_settings(study, points, runs):
    plan = make_plan(ROOT / study / "study.toml")
    assert len(plan.points) == points and plan.total_runs == runs
    report = plan.sweep.report
    assert report["threshold"] and report["derived"]


def test_task_pipeline_workers_axis_gives_four_or_eight_workers():
    plan = make_plan(ROOT / "task_pipeline" / "study.toml")
    by_workers = {}
    for point in plan.points:
        service = point.values["recv.w_in.service_s"]
        if service["dist"] == "uniform":
            by_workers[point.values["process.worker.count"]] = point
    delivered = {}
    for workers, point in by_workers.items():
        scenario = plan.scenario(point.id)
        result = zsim.run(scenario, 1)
        row = flat_metrics(result.summary, result, scenario)
        delivered[workers] = [row.get(f"socket.w{i}_in.delivered", 0) for i in range(1, 9)]
        assert row["socket.sink.delivered"] == 2000  # the whole batch arrives either way
    # four workers (no w5_in .. w8_in at all) take 500 each, eight 250 each
    assert delivered[4] == [500] * 4 + [0] * 4
    assert delivered[8] == [250] * 8


def test_control_behind_bulk_answers_as_its_readme_says():
    # experiments/control_behind_bulk (issue 42): across town the control p99 grows with the
    # uplink's queue until TCP small queues, not the queue, bound the feed's backlog; across
    # the country it does not grow; a paced feed leaves no queue to wait in
    plan = make_plan(ROOT / "control_behind_bulk" / "study.toml")
    assert len(plan.points) == 28 and plan.total_runs == 56

    def p99(queue: int, latency: float, interval: float) -> float:
        (point,) = [p for p in plan.points if p.values["link.uplink.queue_bytes"] == queue
                    and p.values["link.uplink.latency_s"] == latency and p.values["send.bulk.interval_s"] == interval]
        scenario = plan.scenario(point.id)
        row = flat_metrics(zsim.run(scenario, 1).summary, None, scenario)
        return float(row["rtt.req.p99_s"])

    short = [p99(queue, 0.0001, 0.0) for queue in (16000, 64000, 256000, 1000000)]
    assert short[0] < 0.012 < short[1] < short[2] and short[2] == pytest.approx(short[3], rel=0.05)
    long = [p99(queue, 0.010, 0.0) for queue in (64000, 1000000)]
    assert long[0] == pytest.approx(long[1], rel=0.05) and 0.020 < long[0] < 0.035
    assert p99(1000000, 0.0001, 0.000526) < 0.005


def test_outages_answer_as_their_readme_says():
    # experiments/outages (issue 43, item 5): points of both study files, as run.sh runs them
    def row(study: str, **values: float) -> dict:
        plan = make_plan(ROOT / "outages" / study)
        (point,) = [p for p in plan.points if all(p.values[key] == value for key, value in values.items())]
        scenario = plan.scenario(point.id)
        result = zsim.run(scenario, 1)
        return flat_metrics(result.summary, result, scenario)

    hb = "socket.quotes.options.heartbeat_ivl"  # 0: off; 1000 (ms): on, with its 3 s timeout
    # a 5 s cut: without heartbeats the PUB drops at SNDHWM and everything else arrives 6.5 s
    # late; with them the connections break after 3 s, what they held is lost, nothing is late
    imm = "socket.rpc.options.immediate"
    silent = row("study.toml", **{"fault.cut.duration_s": 5.0, hb: 0, imm: False})
    watched = row("study.toml", **{"fault.cut.duration_s": 5.0, hb: 1000, imm: False})
    assert 50 < silent["socket.quotes.dropped"] < 200 and silent["lost_on_close"] + silent["discarded"] == 0
    assert 6.0 < silent["socket.quotes_in.latency_max_s"] < 7.0 and silent["fault.cut.detect_s"] != silent["fault.cut.detect_s"]
    assert watched["socket.quotes.dropped"] == 0 and 600 < watched["lost_on_close"] + watched["discarded"] < 900
    assert watched["socket.quotes_in.latency_max_s"] < 0.1 and watched["fault.cut.detect_s"] == pytest.approx(3.0, abs=0.1)
    assert 100 < silent["socket.tasks_in.received"] - watched["socket.tasks_in.received"] < 200
    # a 60 s cut: TCP recovers 47 s after the repair, heartbeats' reconnect SYNs 10 s after it
    assert 45 < row("study.toml", **{"fault.cut.duration_s": 60.0, hb: 0, imm: False})["fault.cut.recovery_s"] < 50
    queued = row("study.toml", **{"fault.cut.duration_s": 60.0, hb: 1000, imm: False})
    assert 9 < queued["fault.cut.recovery_s"] < 11
    # IMMEDIATE on the DEALER: its requests wait in its send call, not in a pipe
    blocked = row("study.toml", **{"fault.cut.duration_s": 60.0, hb: 1000, imm: True})
    assert queued["sender.send.rpc.blocked_s"] == 0 and 65 < queued["rtt.rpc.p99_s"] < 68
    assert 65 < blocked["sender.send.rpc.blocked_s"] < 69 and blocked["rtt.rpc.p99_s"] < 2
    # the data centre's host dies for 30 s: without heartbeats the SUB waits for ever (nothing
    # after 5 s) and only the DEALER's retransmission meets a reset (at 58.6 s); with them
    # everything reconnects as the host comes back
    dead = row("crash.toml", **{hb: 0})
    assert dead["socket.quotes_in.last_recv_s"] < 5.1 and 53 < dead["fault.dead.detect_s"] < 55
    alive = row("crash.toml", **{hb: 1000})
    assert alive["fault.dead.detect_s"] == pytest.approx(3.0, abs=0.1) and alive["fault.dead.recovery_s"] < 0.2
    assert alive["socket.quotes_in.received"] > 0.95 * alive["socket.quotes.sent"]
