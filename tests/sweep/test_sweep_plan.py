"""zsim.sweep.plan: parsing, expansion, validation, seeds and batching (pure; no runs)."""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
from test_sweep_support import BASE, sweep_dict, write_sweep_files

from zsim.errors import ScenarioError
from zsim.sweep import plan as plan_module
from zsim.sweep.plan import batches, expand, from_dict, load, seed_for


def make(raw):
    return expand(from_dict(raw))


def test_grid_expands_every_combination_in_order_with_links():
    plan = make(sweep_dict())
    assert len(plan.points) == 6 and plan.total_runs == 18
    coords = [p.values for p in plan.points]
    assert coords == [
        {"socket.publisher.options.sndhwm": h, "send.publisher.size_bytes": s} for h, s in itertools.product([2, 20, 200], [100, 65536])
    ]
    point = plan.points[3]
    raw = plan.scenario_raw(point.id)
    assert raw["socket"][1]["options"]["rcvhwm"] == 20  # linked to sndhwm
    assert raw["send"][0]["size_bytes"] == 65536
    assert plan.scenario(point.id).socket("publisher").options.sndhwm == 20


def test_toml_dotted_keys_and_quoted_paths_are_the_same_axes(tmp_path):
    sweep = load(write_sweep_files(tmp_path))
    assert [a.path for a in sweep.axes] == ["socket.publisher.options.sndhwm", "send.publisher.size_bytes"]
    assert sweep.links == {"socket.subscriber.options.rcvhwm": "socket.publisher.options.sndhwm"}
    assert [p.id for p in expand(sweep).points] == [p.id for p in make(sweep_dict()).points]


def test_point_ids_do_not_depend_on_axis_order_or_extension():
    plan = make(sweep_dict())
    reordered = sweep_dict()
    reordered["axes"] = {"send.publisher.size_bytes": [65536, 100], "socket.publisher.options.sndhwm": [200, 2, 20]}
    assert {p.id for p in make(reordered).points} == {p.id for p in plan.points}
    extended = sweep_dict()
    extended["axes"]["send.publisher.size_bytes"] = [100, 65536, 4096]
    assert {p.id for p in plan.points} < {p.id for p in make(extended).points}


def test_point_ids_change_with_what_decides_the_rows():
    ids = {p.id for p in make(sweep_dict()).points}
    other_seed = sweep_dict()
    other_seed["sweep"]["seed"] = 6
    assert not ids & {p.id for p in make(other_seed).points}
    other_base = sweep_dict()
    other_base["base"]["scenario"]["until_s"] = 0.5
    assert not ids & {p.id for p in make(other_base).points}


def test_common_random_numbers_share_seeds_across_points():
    plan = make(sweep_dict())
    tasks = plan.tasks()
    by_rep = {}
    for task in tasks:
        by_rep.setdefault(task.replication, set()).add(task.seed)
    assert all(len(seeds) == 1 for seeds in by_rep.values())
    assert len({next(iter(s)) for s in by_rep.values()}) == 3


def test_independent_seeds_without_common_random_numbers():
    plan = make(sweep_dict(common_random_numbers=False))
    seeds = [t.seed for t in plan.tasks()]
    assert len(set(seeds)) == len(seeds)


def test_seed_is_a_pure_function_of_root_point_and_replication():
    assert seed_for(5, "p0123456789ab", 3) == seed_for(5, "pffffffffffff", 3)
    assert seed_for(5, "p0123456789ab", 3, False) != seed_for(5, "pffffffffffff", 3, False)
    assert seed_for(5, "p0123456789ab", 3) != seed_for(6, "p0123456789ab", 3)
    # Pinned: a change here silently changes every published sweep result.
    expected = np.random.SeedSequence(5, spawn_key=(3,)).generate_state(2, np.uint32)
    assert seed_for(5, "p0", 3) == ((int(expected[0]) << 32) | int(expected[1])) >> 1
    assert 0 <= seed_for(2**40, "p0", 10**6) < 2**63


def test_set_overrides_apply_to_every_point():
    raw = sweep_dict()
    raw["set"] = {"scenario": {"until_s": 0.25}, "recv.subscriber.pause_s": 0.01}
    plan = make(raw)
    derived = plan.scenario_raw(plan.points[0].id)
    assert derived["scenario"]["until_s"] == 0.25
    assert derived["recv"][0]["pause_s"] == 0.01


def test_a_distribution_table_is_a_value_not_a_path():
    raw = sweep_dict()
    raw["set"] = {"recv.subscriber.service_s": {"dist": "constant", "value_s": 0.0001}}
    raw["axes"]["recv.subscriber.pause_s"] = [{"dist": "uniform", "low_s": 0.01, "high_s": 0.02}, 0.03]
    plan = make(raw)
    assert len(plan.points) == 12
    assert plan.scenario_raw(plan.points[0].id)["recv"][0]["service_s"] == {"dist": "constant", "value_s": 0.0001}
    assert plan_module.column_kind(plan.sweep.axes[2]) == "json"


@pytest.mark.parametrize(
    ("axes", "message"),
    [
        ({"socket.nosuch.options.sndhwm": [1]}, "axes.socket.nosuch.options.sndhwm: no [[socket]] entry named 'nosuch'"),
        ({"sockets.publisher.options.sndhwm": [1]}, "axes.sockets.publisher.options.sndhwm: unknown section 'sockets'"),
        ({"socket.publisher.options.sndhwm": [10, -5]}, "axes.socket.publisher.options.sndhwm = -5: "),
        ({"socket.publisher.options.sndhwmm": [10]}, "did you mean 'sndhwm'"),
        ({"recv.subscriber.pause_s.mean_s": [0.1]}, "axes.recv.subscriber.pause_s.mean_s"),
        ({"send.publisher.size_bytes": [100, 100]}, "axes.send.publisher.size_bytes[1]: duplicate value 100"),
        ({"send.publisher.size_bytes": []}, "axes.send.publisher.size_bytes: needs a non-empty list"),
    ],
)
def test_bad_axes_are_errors_naming_the_axis(axes, message):
    raw = sweep_dict()
    raw["axes"] = axes
    raw.pop("link")
    with pytest.raises(ScenarioError) as info:
        make(raw)
    assert message in str(info.value)


def test_bad_value_error_names_axis_value_and_field():
    raw = sweep_dict()
    raw["axes"]["send.publisher.size_bytes"] = [100, "big"]
    with pytest.raises(ScenarioError) as info:
        make(raw)
    text = str(info.value)
    assert text.startswith('axes.send.publisher.size_bytes = "big": ')
    assert "size_bytes" in text.split(": ", 1)[1]


def test_a_combination_that_fails_names_the_point():
    raw = sweep_dict()
    raw.pop("link")
    # Each value alone is fine; only the combination crash <= restart is invalid.
    raw["base"]["process"] = [{"name": "main", "crash_at_s": 0.1, "restart_at_s": 0.5}]
    raw["axes"] = {"process.main.crash_at_s": [0.1, 0.3], "process.main.restart_at_s": [0.2, 0.4]}
    with pytest.raises(ScenarioError) as info:
        make(raw)
    assert str(info.value).startswith("point (process.main.crash_at_s = 0.3, process.main.restart_at_s = 0.2): ")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r["sweep"].update(design="sobol"), "sweep.design: must be one of grid, random, lhs"),
        (lambda r: r["sweep"].update(points=10), "sweep.points: only for random and lhs"),
        (lambda r: r["sweep"].update(replications=0), "sweep.replications: must be >= 1"),
        (lambda r: r["sweep"].update(name="a/b"), "sweep.name: must be letters"),
        (lambda r: r["sweep"].update(replication=3), "sweep.replication: unknown field (did you mean 'replications'?)"),
        (lambda r: r.pop("base"), "sweep.base: missing"),
        (lambda r: r.pop("axes"), "axes: missing"),
        (lambda r: r.update(link={"socket.subscriber.options.rcvhwm": "nope"}),
         "link.socket.subscriber.options.rcvhwm: 'nope' is not an axis"),
        (lambda r: r.update(set={"send.publisher.size_bytes": 5}), "set.send.publisher.size_bytes: is also an axis"),
        (lambda r: r.update(set={"socket.ghost.options.sndhwm": 5}), "set.socket.ghost.options.sndhwm: no [[socket]] entry named 'ghost'"),
        (lambda r: r.update(report={"figure": [{"kind": "pie"}]}), "report.figure[0].kind: must be one of"),
        (lambda r: r.update(report={"figure": [{"x": "nope"}]}), "report.figure[0].x: 'nope' is not an axis"),
        (lambda r: r.update(report={"threshold": [{"metric": "drop_fraction", "below": 0.001}]}), "report.threshold[0].minimise: missing"),
    ],
)
def test_bad_sweep_fields(change, message):
    raw = sweep_dict()
    change(raw)
    with pytest.raises(ScenarioError) as info:
        make(raw)
    assert message in str(info.value)


def test_base_file_errors_name_the_file(tmp_path):
    path = write_sweep_files(tmp_path)
    (tmp_path / "base.toml").unlink()
    with pytest.raises(ScenarioError, match="sweep.base: no such scenario file"):
        load(path)
    with pytest.raises(ScenarioError, match="no such file"):
        load(tmp_path / "missing.toml")


def test_grid_ranges_with_num():
    raw = sweep_dict()
    raw["axes"] = {"socket.publisher.options.sndhwm": {"low": 1, "high": 1000, "num": 4, "scale": "log"},
                   "recv.subscriber.service_s.mean_s": {"low": 0.0001, "high": 0.0003, "num": 3, "label": "service"}}
    plan = make(raw)
    hwms = sorted({p.values["socket.publisher.options.sndhwm"] for p in plan.points})
    assert hwms == [1, 10, 100, 1000]
    assert plan.sweep.axis("service").path == "recv.subscriber.service_s.mean_s"
    assert plan.sweep.axis("sndhwm").label == "socket.publisher.options.sndhwm"
    with pytest.raises(ScenarioError, match="a grid axis needs"):
        raw["axes"]["socket.publisher.options.sndhwm"] = {"low": 1, "high": 10}
        make(raw)


@pytest.mark.parametrize("design", ["random", "lhs"])
def test_sampled_designs_are_deterministic_and_in_range(design):
    raw = sweep_dict(design=design, points=40)
    raw["axes"] = {
        "socket.publisher.options.sndhwm": {"low": 1, "high": 5000, "scale": "log"},
        "recv.subscriber.service_s.mean_s": {"low": 0.0001, "high": 0.0004},
        "send.publisher.size_bytes": [100, 1000, 10000, 65536],
    }
    plan = make(raw)
    assert len(plan.points) + plan.merged == 40
    again = make(copy.deepcopy(raw))
    assert [p.id for p in plan.points] == [p.id for p in again.points]
    for point in plan.points:
        values = point.values
        assert isinstance(values["socket.publisher.options.sndhwm"], int) and 1 <= values["socket.publisher.options.sndhwm"] <= 5000
        assert 0.0001 <= values["recv.subscriber.service_s.mean_s"] <= 0.0004
        assert values["send.publisher.size_bytes"] in (100, 1000, 10000, 65536)
    if design == "lhs":
        service = sorted(p.values["recv.subscriber.service_s.mean_s"] for p in plan.points)
        strata = [int((v - 0.0001) / 0.0003 * 40) for v in service]
        assert strata == list(range(40))  # one point per stratum
        sizes = [p.values["send.publisher.size_bytes"] for p in plan.points]
        assert all(sizes.count(s) == 10 for s in (100, 1000, 10000, 65536))


def test_batches_keep_order_cover_everything_and_shrink():
    plan = make(sweep_dict(replications=100))
    tasks = plan.tasks()
    work = batches(tasks, slots=2)
    assert [t for b in work for t in b] == tasks
    sizes = [len(b) for b in work]
    assert max(sizes) <= 50 and sizes[-1] == 1
    assert sizes == sorted(sizes, reverse=True)
    assert [len(b) for b in batches(tasks[:10], slots=2, batch_size=4)] == [4, 4, 2]


def test_manifest_and_payload_are_json_and_complete():
    import json

    plan = make(sweep_dict())
    manifest = json.loads(json.dumps(plan.manifest()))
    assert [p["id"] for p in manifest["points"]] == [p.id for p in plan.points]
    assert manifest["axes"][0]["kind"] == "int"
    payload = json.loads(json.dumps(plan.worker_payload()))
    assert set(payload["points"]) == {p.id for p in plan.points}
    assert payload["base"]["scenario"]["name"] == BASE["scenario"]["name"]
