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
