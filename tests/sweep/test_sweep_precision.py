"""``zsim sweep --precision METRIC=HALF_WIDTH`` (issue 30: "optional precision-driven
replications (stop at a target half-width, JMT's rule) for sweeps and compare"): each
point gets replications until its interval is that narrow, a quiet point keeps its plan,
the seeds are those a larger plan gives, a re-run resumes, and a budget stops it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from zsim.errors import ScenarioError
from zsim.metrics import add_derived_frame
from zsim.stats import mean_half_width
from zsim.sweep import run_sweep, store
from zsim.sweep.plan import seed_for
from zsim.sweep.precision import Target, grow, next_round
from zsim.sweep.report import make_report

METRIC = "socket.sub.latency_mean_s"


def sweep(replications: int = 3) -> dict[str, Any]:
    """Two points: a reader whose service is constant (every run alike: met at once) and one
    whose service is exponential (its mean latency varies from run to run)."""
    return {
        "sweep": {"name": "prec", "replications": replications, "seed": 5},
        "base": {
            "scenario": {"name": "p", "until_s": 0.3, "profile": "ideal"},
            "socket": [{"name": "pub", "type": "PUSH", "bind": ["inproc://a"]},
                       {"name": "sub", "type": "PULL", "connect": ["inproc://a"]}],
            "send": [{"socket": "pub", "interval_s": 0.002, "count": 100, "start_s": 0.01}],
            "recv": [{"socket": "sub", "service_s": 0.001}],
        },
        "axes": {"recv.sub.service_s": {"values": [0.001, {"dist": "exponential", "mean_s": 0.0015}],
                                        "names": ["constant", "exponential"]}},
    }


def _by_point(out: Path) -> dict[str, Any]:
    """The rows of the constant reader's point and of the exponential one's."""
    frame = store.read_frame(store.sweep_dir(out, "prec"))
    groups = [group for _, group in frame.groupby("point")]
    return {"constant" if group[METRIC].nunique() == 1 else "exponential": group for group in groups}


def test_each_point_stops_at_its_own_precision_with_the_seeds_of_a_larger_plan(tmp_path: Path) -> None:
    outcome = run_sweep(sweep(), tmp_path, engine="serial", stream=None, precision=[f"{METRIC}=0.0004"])
    assert outcome.complete and outcome.failed == 0
    points = _by_point(tmp_path)
    quiet, noisy = points["constant"], points["exponential"]
    assert len(quiet) == 3  # every run alike: the planned three meet any width
    assert len(noisy) > 3
    values = noisy[METRIC].to_numpy()
    assert mean_half_width(len(values), values.std(ddof=1)) <= 0.0004  # met where it stopped
    assert 3 < len(values) < 150
    assert list(noisy["seed"]) == [seed_for(5, "", r, True) for r in range(len(noisy))]  # common random numbers
    assert outcome.precision[0].startswith(f"--precision: met at every point ({METRIC} +- 0.0004: widest +- ")
    # zsim report reads points of different run counts (and an axis mixing a number and a
    # distribution's table, which failed with TypeError '<' between float and str before)
    errors: list[Any] = []
    make_report(tmp_path, None, errors=errors)
    assert errors == []
    table = pd.read_csv(tmp_path / "report" / "prec" / "points.csv")
    assert sorted(table["runs"]) == [3, len(noisy)]
    summary = (tmp_path / "report" / "prec" / "summary.md").read_text()
    assert "| constant | 3 |" in summary and f"| exponential | {len(noisy)} |" in summary  # the axis's names, both
    assert f"= {3 + len(noisy)} runs" in summary and "missing" not in summary  # each point's own count
    # a later run without --precision keeps them: nothing runs, nothing is left out
    later = run_sweep(sweep(), tmp_path, engine="serial", stream=None)
    assert later.ran == 0 and later.complete
    assert len(_by_point(tmp_path)["exponential"]) == len(noisy)
    # a plain sweep planned with that many replications gives the same rows
    plain = run_sweep(sweep(len(noisy)), tmp_path / "plain", engine="serial", stream=None)
    assert plain.complete
    again = _by_point(tmp_path / "plain")["exponential"]
    assert list(again[METRIC]) == list(noisy[METRIC])


def test_the_same_command_resumes_without_running_again(tmp_path: Path) -> None:
    first = run_sweep(sweep(), tmp_path, engine="serial", stream=None, precision=[f"{METRIC}=0.0004"])
    second = run_sweep(sweep(), tmp_path, engine="serial", stream=None, precision=[f"{METRIC}=0.0004"])
    assert first.ran > 6 and second.ran == 0 and second.precision == first.precision
    assert second.already_done == first.ran == second.total_runs  # the replayed rounds' rows count as done


def test_precision_waits_for_the_planned_runs(tmp_path: Path) -> None:
    outcome = run_sweep(sweep(), tmp_path, engine="serial", stream=None, precision=[f"{METRIC}=0.0004"], limit=2)
    assert outcome.ran == 2 and outcome.precision == [
        "--precision: not started, 4 planned runs are not done; the same command does them, then the rounds"]


def test_a_budget_stops_it_and_says_so(tmp_path: Path) -> None:
    outcome = run_sweep(sweep(), tmp_path, engine="serial", stream=None, precision=[f"{METRIC}=0.000001"], max_runs=12)
    assert outcome.ran <= 12
    assert outcome.precision[0].startswith("--precision: NOT met at 1 of 2 points")
    assert "beyond --max-runs 12" in outcome.precision[0]


def test_bad_targets_are_one_line_before_any_run(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"--precision: expected METRIC=HALF_WIDTH"):
        run_sweep(sweep(), tmp_path, engine="serial", stream=None, precision=["socket.sub.latency_mean_s"])
    with pytest.raises(ScenarioError, match=r"--precision socket.sub.latency_mean_s: the half-width must be a number > 0"):
        run_sweep(sweep(), tmp_path, engine="serial", stream=None, precision=[f"{METRIC}=-1"])
    with pytest.raises(ScenarioError, match=r"latency_mean: unknown metric .*did you mean 'socket.sub.latency_mean_s'"):
        run_sweep(sweep(), tmp_path, engine="serial", stream=None, precision=["socket.sub.latency_mean=0.1"])
    assert not (tmp_path / "sweep=prec").exists()


def test_a_round_asks_for_the_width_it_lacks_within_its_growth_bounds() -> None:
    assert grow(10, 0.5, 1.0) == 10  # met
    assert grow(10, 2.0, 1.0) == 40  # (2 / 1)^2 x 10
    assert grow(10, 1.05, 1.0) == 12  # at least 1.2 n
    assert grow(10, 100.0, 1.0) == 40  # at most 4 n
    assert grow(10, math.inf, 1.0) == 40  # one value: no width yet
    relative = Target.parse("m=10%")
    rows = {"a": [{"replication": r, "ok": True, "m": v} for r, v in enumerate([9.0, 11.0, 10.0])],
            "b": [{"replication": 0, "ok": True, "m": 1.0}, {"replication": 1, "ok": False, "m": 2.0}]}
    decided = next_round(rows, {"a": 3, "b": 2}, [relative])
    width = mean_half_width(3, 1.0)  # 2.484: beyond 10 % of the mean 10
    assert decided.wanted == {"a": min(12, math.ceil(3 * (width / 1.0) ** 2))}
    assert decided.unmeasurable == {"m": ("b",)}  # one value (the failed run carries none)
    frame = pd.DataFrame([{**row, "point": point} for point, point_rows in rows.items() for row in point_rows])
    add_derived_frame(frame, {"twice": "2 * m"})  # what a round does to a derived target's rows
    doubled = {str(point): group.to_dict("records") for point, group in frame.groupby("point")}
    derived = next_round(doubled, {"a": 3, "b": 2}, [Target.parse("twice=1")])
    assert derived.widest["twice"] == pytest.approx(2 * width)
    # a share of a mean of 0 is no width to reach: named, not grown for ever
    zero = {"z": [{"replication": r, "ok": True, "m": v} for r, v in enumerate([-1.0, 1.0, 0.0])]}
    assert next_round(zero, {"z": 3}, [relative]).unmeasurable == {"m": ("z",)}
    assert Target.parse("m=0.5%").text() == "m +- 0.5 % of its mean"


def test_a_mixed_axis_stored_as_text_sorts_its_numbers_as_numbers() -> None:
    from zsim.sweep.report import sorted_axis_values

    assert sorted_axis_values("recv.sub.service_s", ["10", '{"dist":"exponential"}', "2"]) == ["2", "10", '{"dist":"exponential"}']
