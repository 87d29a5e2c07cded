"""Topology templates (issue 11, item 2): ``count`` on a [[process]] or [[socket]], ``copies``
on a [[send]] or [[recv]], ``{i}`` placeholders; the count as a sweep axis; member aggregates.

Expansion is exact (names, endpoints, options, ``forward_to`` per member, in member
order), every mistake is one line naming the field, a templated pipeline is the very
same scenario as the hand-written one (same blocks, digest and ledger), and the
aggregates over members are exact on a deterministic scenario.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest

import zsim
from zsim import spec, templates
from zsim.errors import ScenarioError
from zsim.results import flat_metrics
from zsim.sweep import plan as plan_module
from zsim.sweep import worker

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = ROOT / "experiments" / "task_pipeline" / "pipeline.toml"

#: A ventilator, a worker template (process + two sockets + a forwarding [[recv]]) and a
#: counted socket of its own with a [[send]] on each member.
FARM = {
    "scenario": {"name": "farm", "profile": "ideal", "until_s": 1.0},
    "process": [{"name": "head"}, {"name": "worker{i}", "count": 3}],
    "socket": [
        {"name": "vent", "type": "PUSH", "process": "head",
         "connect": ["tcp://127.0.0.1:5600", "tcp://127.0.0.1:5601", "tcp://127.0.0.1:5602"]},
        {"name": "w{i}_in", "type": "PULL", "process": "worker", "bind": "tcp://127.0.0.1:{5600+i}",
         "options": {"rcvhwm": 10, "routing_id": "in-{i+1}"}},
        {"name": "w{i}_out", "type": "PUSH", "process": "worker{i}", "connect": ["tcp://127.0.0.1:5558"]},
        {"name": "sink", "type": "PULL", "process": "head", "bind": "tcp://127.0.0.1:5558"},
        {"name": "tick{i}", "type": "PUB", "process": "head", "count": 2, "bind": "inproc://tick{2*i+1}"},
    ],
    "send": [{"socket": "vent", "count": 6}, {"socket": "tick", "count": 4, "topic": "t{i}"}],
    "recv": [{"socket": "sink"}, {"socket": "w_in", "forward_to": "w_out", "service_s": 0.001}],
}


def load(raw):
    return spec.from_dict(copy.deepcopy(raw))


def error_of(raw) -> str:
    with pytest.raises(ScenarioError) as info:
        spec.from_dict(raw)
    message = str(info.value)
    assert "\n" not in message
    return message


def mutated(mutate, base=FARM):
    raw = copy.deepcopy(base)
    mutate(raw)
    return raw


# --------------------------------------------------------------------------------------
# Expansion


def test_a_counted_process_makes_its_sockets_and_workloads_member_by_member():
    scenario = load(FARM)
    assert [p.name for p in scenario.processes] == ["head", "worker0", "worker1", "worker2"]
    assert [s.name for s in scenario.sockets] == [
        "vent", "w0_in", "w0_out", "w1_in", "w1_out", "w2_in", "w2_out", "sink", "tick0", "tick1"]
    by_name = {s.name: s for s in scenario.sockets}
    for i in range(3):
        inbound, outbound = by_name[f"w{i}_in"], by_name[f"w{i}_out"]
        assert inbound.process == outbound.process == f"worker{i}"
        assert [e.text for e in inbound.bind] == [f"tcp://127.0.0.1:{5600 + i}"]
        assert inbound.options.rcvhwm == 10 and inbound.options.routing_id == f"in-{i + 1}"
        assert [e.text for e in outbound.connect] == ["tcp://127.0.0.1:5558"]
    assert [e.text for e in by_name["tick0"].bind] == ["inproc://tick1"]
    assert [e.text for e in by_name["tick1"].bind] == ["inproc://tick3"]
    assert [(r.name, r.socket, r.forward_to) for r in scenario.recvs] == [
        ("recv.sink", "sink", None), ("recv.w0_in", "w0_in", "w0_out"), ("recv.w1_in", "w1_in", "w1_out"),
        ("recv.w2_in", "w2_in", "w2_out")]
    assert [(s.name, s.socket, s.topics) for s in scenario.sends] == [
        ("send.vent", "vent", ()), ("send.tick0", "tick0", ("t0",)), ("send.tick1", "tick1", ("t1",))]


def test_templates_record_their_members_and_the_block_that_counts_them():
    found = {(t.kind, t.name): t for t in load(FARM).templates}
    assert set(found) == {("process", "worker"), ("socket", "w_in"), ("socket", "w_out"), ("socket", "tick"),
                          ("recv", "recv.w_in"), ("send", "send.tick")}
    w_in = found["socket", "w_in"]
    assert (w_in.pattern, w_in.count, w_in.root, w_in.members) == ("w{i}_in", 3, "process[worker]", ("w0_in", "w1_in", "w2_in"))
    tick = found["send", "send.tick"]
    assert (tick.count, tick.root, tick.members) == (2, "socket[tick]", ("send.tick0", "send.tick1"))


def test_copies_make_several_workloads_on_one_socket():
    raw = mutated(lambda r: r["send"].append({"name": "burst{i}", "socket": "vent", "count": 2, "copies": 3, "start_s": 0.5}))
    sends = [s for s in load(raw).sends if s.name.startswith("burst")]
    assert [(s.name, s.socket, s.count, s.start_s) for s in sends] == [("burst0", "vent", 2, 0.5), ("burst1", "vent", 2, 0.5),
                                                                        ("burst2", "vent", 2, 0.5)]


def test_placeholders_are_linear_forms_of_i_and_braces_can_be_literal():
    text = templates.parse_text("a{i}b{i+1}c{5600+i}d{2*i-1}e{{x}}", "f")
    assert text.render(0) == "a0b1c5600d-1e{x}" and text.render(7) == "a7b8c5607d13e{x}"
    assert text.stripped() == "abcde{x}"
    assert templates.template_name("w{i+1}_in") == "w_in" and templates.template_name("plain") is None
    # outside a template, {i} is a mistake; an escaped {{i}} or another {word} is text
    assert templates.uses_index("port {5600+i}") and not templates.uses_index("{{i}}")
    assert not templates.uses_index('{"json": 1}') and not templates.uses_index("{j}")


def test_count_zero_makes_no_members_and_their_workloads_vanish_with_them():
    raw = mutated(lambda r: r["process"][1].update(count=0))
    raw["socket"][0]["connect"] = []  # the members' binds are gone too
    raw["socket"][0]["bind"] = "tcp://127.0.0.1:5557"
    scenario = load(raw)
    assert [s.name for s in scenario.sockets] == ["vent", "sink", "tick0", "tick1"]
    assert [r.name for r in scenario.recvs] == ["recv.sink"]
    assert {t.name: t.members for t in scenario.templates if t.kind == "socket"}["w_in"] == ()


def test_a_scenario_without_templates_is_left_as_it_is():
    raw = zsim.spec.files.load_toml(ROOT / "examples" / "push_pull_tcp.toml", "scenario file")
    assert templates.expand_templates(raw, lambda name: True).raw is raw
    assert load(raw).templates == ()


# --------------------------------------------------------------------------------------
# Errors: one line naming the field


@pytest.mark.parametrize("mutate, message", [
    (lambda r: r["process"][1].update(count=2.5),
     "process[worker].count: must be an integer >= 0 (the number of members), got 2.5"),
    (lambda r: r["process"][1].update(count=-1),
     "process[worker].count: must be an integer >= 0 (the number of members), got -1"),
    (lambda r: r["process"][1].update(count="3"),
     "process[worker].count: must be an integer >= 0 (the number of members), got '3'"),
    (lambda r: r["process"][1].update(count=10**9),
     "process[worker].count: must be at most 100,000 members, got 1,000,000,000"),
    (lambda r: r["socket"][4].update(count=True),
     "socket[tick].count: must be an integer >= 0 (the number of members), got True"),
    (lambda r: r["socket"][1].update(count=2),
     "socket[w_in].count: the socket belongs to process[worker] (process = 'worker'), a counted process that makes one per "
     "member: their number is the count of process[worker]; remove this count"),
    (lambda r: r["socket"][1].update(bind="tcp://127.0.0.1:{5600+j}"),
     "socket[w_in].bind: in 'tcp://127.0.0.1:{5600+j}': placeholder {5600+j} is not a sum of i, integers and integer*i "
     "({i}, {i+1}, {5600+i}, {2*i+1})"),
    (lambda r: r["socket"][1]["options"].update(routing_id="in-{j}"),
     "socket[w_in].options.routing_id: in 'in-{j}': unknown placeholder {j}; the member index is i ({i}, {i+1}, {5600+i}, {2*i+1})"),
    (lambda r: r["socket"][2].update(connect=["tcp://127.0.0.1:5558}"]),
     "socket[w_out].connect[0]: 'tcp://127.0.0.1:5558}' has a single '}'; a placeholder is {...} ({i}, {i+1}, {5600+i}, "
     "{2*i+1}), a literal brace is written twice (}})"),
    (lambda r: r["socket"][0].update(bind="tcp://127.0.0.1:{5557+i}"),
     "socket[vent].bind: 'tcp://127.0.0.1:{5557+i}' uses the member index {i} but the block is not a template: give it a "
     "count (a [[process]] or [[socket]]; copies on a [[send]] or [[recv]]), or put it in a counted process (process = "
     "\"<template name>\") or on a templated socket"),
    (lambda r: r["socket"][1].update(name="w_in"),
     "socket[w_in].name: 'w_in' would name every member the same (it is made once per member of process[worker]); put the "
     "member index in it, e.g. 'w_in{i}'"),
    (lambda r: r["process"][1].update(name="{i}"),
     "process[{i}].name: without its placeholders '{i}' must still be a name (letters, digits, '_', '-', '.'): it names the "
     "template in sweep paths and metrics, got ''"),
    (lambda r: r["socket"][0].update(name="w2_in"),
     "socket[w_in].name: member i = 2 of 'w{i}_in' is named 'w2_in', the name of another [[socket]]"),
    (lambda r: r["socket"][2].update(name="w{i}_in"),
     "socket[w{i}_in].name: the template name 'w_in' ('w{i}_in' without its placeholders) is also the template name of "
     "'w{i}_in'; sweep paths and metrics could not tell them apart"),
    (lambda r: r["socket"][0].update(name="tick"),
     "socket[tick].name: 'tick' is also the name of the template socket[tick] = 'tick{i}'; sweep paths and metrics could not "
     "tell them apart"),
    (lambda r: r["socket"][1].update(process="worker{i+1}"),
     "socket[w{i}_in].process: 'worker{i+1}' names the process template process[worker] = 'worker{i}' but gives other "
     "members ('worker1' for i = 0, not 'worker0'); write 'worker' or 'worker{i}'"),
    (lambda r: r["recv"][1].update(copies=2),
     "recv[w_in].copies: the recv is on the socket template socket[w_in] and is made once per member with it: remove copies"),
    (lambda r: r["recv"][0].update(forward_to="w_out"),
     "recv[sink].forward_to: socket 'w_out' is the template socket[w_out], made by process[worker]; a stage forwards to a "
     "socket of its own member: name one socket"),
    (lambda r: r.update(proxy=[{"frontend": "tick", "backend": "vent"}]),
     "proxy[0].frontend: socket 'tick' is the template socket[tick]; a proxy is not expanded with templates: name one member"),
    (lambda r: r["send"].append({"socket": "vent", "count": 1, "copies": 2}),
     "send[vent].name: the 2 copies on socket 'vent' need names of their own, e.g. name = \"<name>{i}\""),
    (lambda r: r["recv"].append({"name": "extra", "socket": "w3_in"}),
     "recv[extra].socket: unknown socket 'w3_in' (socket[w_in] = 'w{i}_in', made by process[worker] with count = 3, has no "
     "member 'w3_in')"),
    (lambda r: r["socket"][1].update(bind="tcp://127.0.0.1:5600"),  # every member binds one port
     "socket[w1_in].bind[0]: tcp://127.0.0.1:5600 is already bound by socket 'w0_in' (EADDRINUSE) (w1_in is member i = 1 of "
     "socket[w_in] = 'w{i}_in', made by process[worker] with count = 3)"),
])
def test_template_mistakes_are_one_line_naming_the_field(mutate, message):
    assert error_of(mutated(mutate)) == message


def test_a_reference_to_a_member_of_an_empty_template_says_it_has_none():
    raw = mutated(lambda r: r["socket"][4].update(count=0))
    raw["send"].append({"name": "late", "socket": "tick0", "count": 1})
    assert error_of(raw) == ("send[late].socket: unknown socket 'tick0' (socket[tick] = 'tick{i}' has no members: socket[tick] has "
                             "count = 0)")


def test_the_cli_prints_a_template_error_as_one_line_with_status_2(tmp_path, capsys):
    from zsim import cli

    path = tmp_path / "pipeline.toml"
    path.write_text(PIPELINE.read_text().replace("count = 8", "count = 2.5"))
    assert cli.main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "zsim: process[worker].count: must be an integer >= 0 (the number of members), got 2.5"


# --------------------------------------------------------------------------------------
# The templated pipeline is the hand-written one


def hand_written_pipeline(workers: int) -> dict:
    """experiments/task_pipeline/pipeline.toml as it was written before templates: every
    worker eight lines of its own (generated with a loop, as it was)."""
    raw = zsim.spec.files.load_toml(PIPELINE, "scenario file")
    hand = {"scenario": raw["scenario"], "machine": raw["machine"], "process": [{"name": "ventilator"}], "socket": raw["socket"][:2],
            "send": raw["send"], "recv": raw["recv"][:1]}
    service = {"dist": "uniform", "low_s": 0.001, "high_s": 0.010}
    for n in range(1, workers + 1):
        hand["process"].append({"name": f"worker{n}"})
        hand["socket"].append({"name": f"w{n}_in", "type": "PULL", "process": f"worker{n}", "connect": "tcp://127.0.0.1:5557",
                               "open_at_s": 0.05})
        hand["socket"].append({"name": f"w{n}_out", "type": "PUSH", "process": f"worker{n}", "connect": "tcp://127.0.0.1:5558",
                               "open_at_s": 0.05})
        hand["recv"].append({"socket": f"w{n}_in", "forward_to": f"w{n}_out", "reply_size_bytes": 8, "service_s": dict(service)})
    return hand


def test_the_templated_pipeline_is_the_hand_written_scenario_block_for_block():
    templated, hand = zsim.load(PIPELINE), spec.from_dict(hand_written_pipeline(8))
    assert templated.raw == hand.raw and templated.digest == hand.digest
    assert templated.sockets == hand.sockets and templated.recvs == hand.recvs and templated.processes == hand.processes


def test_the_templated_pipeline_gives_exactly_the_hand_written_ledger():
    templated, hand = zsim.run(PIPELINE, 1), zsim.run(hand_written_pipeline(8), 1)
    assert set(templated.messages) == set(hand.messages)
    for column, values in templated.messages.items():
        assert np.array_equal(values, hand.messages[column]), column
    assert templated.summary["sockets"] == hand.summary["sockets"]


def test_the_expanded_digest_does_not_depend_on_how_the_worker_is_written():
    raw = zsim.spec.files.load_toml(PIPELINE, "scenario file")
    other = copy.deepcopy(raw)
    other["socket"][2]["process"] = "worker{i+1}"  # the pattern instead of the template name
    other["recv"][1].update(socket="w{i+1}_in", forward_to="w{i+1}_out")
    assert spec.from_dict(other).digest == spec.from_dict(raw).digest == spec.from_dict(raw).digest


def test_four_workers_by_count_finish_as_four_workers_by_the_old_never_open_trick():
    raw = zsim.spec.files.load_toml(PIPELINE, "scenario file")
    four = spec.with_overrides(raw, {"process.worker.count": 4})
    trick = hand_written_pipeline(8)
    for sock in trick["socket"][2 + 8:]:  # w5_in .. w8_out open after the 8 s horizon
        sock["open_at_s"] = 100.0
    by_count, by_trick = zsim.run(four, 2), zsim.run(trick, 2)
    rows = flat_metrics(by_count.summary, by_count), flat_metrics(by_trick.summary, by_trick)
    for key in ("socket.sink.delivered", "socket.sink.last_recv_s", "socket.w1_in.last_recv_s", "socket.w4_in.delivered"):
        assert rows[0][key] == rows[1][key], key
    assert rows[0]["socket.w_in.members"] == 4 and rows[0]["socket.w_in.sum_delivered"] == 2000


# --------------------------------------------------------------------------------------
# Member aggregates


AGGREGATE = {
    "scenario": {"name": "aggregates", "profile": "ideal"},
    "socket": [
        {"name": "vent", "type": "PUSH", "bind": "inproc://tasks"},
        {"name": "w{i}", "type": "PULL", "count": 5, "connect": "inproc://tasks"},
        {"name": "pub{i}", "type": "PUB", "count": 2, "bind": "inproc://pub{i}"},
    ],
    "send": [{"socket": "vent", "count": 3, "interval_s": 0.01}, {"socket": "pub", "count": 5, "interval_s": 0.01}],
    "recv": [{"socket": "w", "service_s": 0.002}],
}


def test_member_aggregates_are_exact_on_a_deterministic_scenario():
    scenario = zsim.load(AGGREGATE)
    result = zsim.run(scenario, 1)
    row = flat_metrics(result.summary, result, scenario)
    # PUSH deals 3 tasks round-robin to 5 workers at 0, 10 and 20 ms: w0, w1, w2 get one
    # each; w3 and w4 get none (no copies meant for them: their counts are 0, exactly)
    assert [row[f"socket.w{i}.delivered"] for i in range(3)] == [1, 1, 1]
    assert "socket.w3.delivered" not in row and "socket.w4.delivered" not in row
    assert row["socket.w.members"] == 5
    assert [row[f"socket.w.{stat}_delivered"] for stat in ("sum", "min", "mean", "max")] == [3.0, 0.0, 0.6, 1.0]
    assert [row[f"socket.w.{stat}_received"] for stat in ("sum", "min", "mean", "max")] == [3.0, 0.0, 0.6, 1.0]
    # times: over the members that got something (w3, w4 have no value, not a 0)
    assert row["socket.w.min_first_recv_s"] == 0.0 and row["socket.w.max_last_recv_s"] == 0.02
    assert row["socket.w.mean_last_recv_s"] == pytest.approx(0.01, abs=1e-15)
    assert row["socket.w.max_latency_max_s"] == 0.0
    # senders of the counted PUB: 5 each
    assert row["sender.send.pub.members"] == 2
    assert [row[f"sender.send.pub.{stat}_sent"] for stat in ("sum", "min", "mean", "max")] == [10.0, 5.0, 5.0, 5.0]
    assert row["sender.send.pub.max_finished_at_s"] == 0.05
    assert result.summary["templates"]["socket"]["w"] == {"pattern": "w{i}", "count": 5, "root": "socket[w]",
                                                          "members": ["w0", "w1", "w2", "w3", "w4"]}


def test_run_flat_gives_the_aggregates_without_the_scenario():
    result = zsim.run(AGGREGATE, 1)
    row = result.flat()
    assert row["socket.w.sum_delivered"] == 3.0 and row["socket.pub.members"] == 2


def test_a_template_with_no_members_has_a_member_count_and_no_aggregates():
    raw = copy.deepcopy(AGGREGATE)
    raw["socket"][2]["count"] = 0
    raw["send"] = raw["send"][:1]
    row = zsim.run(raw, 1).flat()
    assert row["socket.pub.members"] == 0
    assert not [key for key in row if key.startswith("socket.pub.") and key != "socket.pub.members"]


def test_scenarios_without_templates_have_no_aggregates_and_no_templates_in_the_summary():
    result = zsim.run(ROOT / "examples" / "push_pull_tcp.toml", 1)
    assert "templates" not in result.summary
    assert not [key for key in result.flat() if key.endswith(".members")]


# --------------------------------------------------------------------------------------
# The count as a sweep axis


def pipeline_sweep(axes, report=None) -> dict:
    raw = {"sweep": {"name": "workers", "replications": 2, "seed": 3}, "axes": axes,
           "base": zsim.spec.files.load_toml(PIPELINE, "scenario file")}
    if report is not None:
        raw["report"] = report
    return raw


def test_the_count_is_one_sweep_axis_and_every_point_has_that_many_workers():
    plan = plan_module.expand(plan_module.from_dict(pipeline_sweep({"process.worker.count": [2, 4, 8]})))
    assert [p.values for p in plan.points] == [{"process.worker.count": n} for n in (2, 4, 8)]
    for point, n in zip(plan.points, (2, 4, 8), strict=True):
        scenario = plan.scenario(point.id)
        assert [p.name for p in scenario.processes] == ["ventilator"] + [f"worker{k}" for k in range(1, n + 1)]
        assert len(scenario.sockets) == 2 + 2 * n and len(scenario.recvs) == 1 + n


def test_a_template_path_sets_every_member():
    exponential = {"dist": "exponential", "mean_s": 0.0055}
    plan = plan_module.expand(plan_module.from_dict(pipeline_sweep({"recv.w_in.service_s": [exponential]})))
    scenario = plan.scenario(plan.points[0].id)
    assert [r.service.kind for r in scenario.recvs] == ["constant"] + ["exponential"] * 8


@pytest.mark.parametrize("axes, message", [
    ({"process.worker.count": [4, 2.5]},
     "axes.process.worker.count = 2.5: process[worker].count: must be an integer >= 0 (the number of members), got 2.5"),
    ({"process.worker.count": [-1, 4]},
     "axes.process.worker.count = -1: process[worker].count: must be an integer >= 0 (the number of members), got -1"),
    ({"socket.w_in.count": [4]},
     "axes.socket.w_in.count = 4: socket[w_in].count: the socket belongs to process[worker] (process = 'worker'), a counted "
     "process that makes one per member: their number is the count of process[worker]; remove this count"),
    ({"socket.w5_in.open_at_s": [0.05]},
     "axes.socket.w5_in.open_at_s: no [[socket]] entry named 'w5_in'; 'w5_in' is a member of the template 'w{i+1}_in', made "
     "when the scenario is parsed: set the template, socket.w_in.open_at_s"),
    ({"recv.w1_in.service_s": [0.001]},
     "axes.recv.w1_in.service_s: no [[recv]] entry named 'w1_in'; 'w1_in' is a member of the template 'w{i+1}_in', made "
     "when the scenario is parsed: set the template, recv.w_in.service_s"),
])
def test_a_bad_count_axis_is_one_line_naming_the_axis_before_anything_runs(axes, message):
    with pytest.raises(ScenarioError) as info:
        plan_module.expand(plan_module.from_dict(pipeline_sweep(axes)))
    assert str(info.value) == message


def test_report_settings_may_name_member_aggregates_and_members_of_any_count():
    report = {"metrics": ["socket.w_in.max_delivered", "socket.w12_in.delivered", "sender.vent.sent", "spread"],
              "derived": {"spread": "socket.w_in.max_last_recv_s - socket.w_in.min_last_recv_s"}}
    plan_module.from_dict(pipeline_sweep({"process.worker.count": [4, 16]}, report))
    report["metrics"] = ["socket.w_in.max_delivred"]
    with pytest.raises(ScenarioError) as info:
        plan_module.from_dict(pipeline_sweep({"process.worker.count": [4, 16]}, report))
    assert str(info.value).startswith("report.metrics[0]: unknown metric 'socket.w_in.max_delivred' (did you mean "
                                      "'socket.w_in.max_delivered'?)")


def test_sweep_rows_carry_the_member_aggregates():
    plan = plan_module.expand(plan_module.from_dict(pipeline_sweep({"process.worker.count": [4, 8]})))
    payload = plan.worker_payload()
    rows = {p.values["process.worker.count"]: worker.run_task(payload, p.id, 0, 11) for p in plan.points}
    for count, row in rows.items():
        assert row["ok"] and row["socket.w_in.members"] == count
        assert row["socket.w_in.sum_delivered"] == 2000.0
        assert row["socket.w_in.min_delivered"] == row["socket.w_in.max_delivered"] == 2000 / count
        last = [row[f"socket.w{n}_in.last_recv_s"] for n in range(1, count + 1)]
        assert row["socket.w_in.max_last_recv_s"] == max(last) and row["socket.w_in.min_last_recv_s"] == min(last)
        assert math.isclose(row["socket.w_in.mean_last_recv_s"], math.fsum(last) / count, rel_tol=0, abs_tol=0)
    assert "socket.w5_in.delivered" not in rows[4] and rows[8]["socket.w5_in.delivered"] == 250


def test_a_router_send_to_a_socket_template_goes_to_every_member_in_order():
    # to = ["w"] named the template and routed to nobody: every request unroutable
    raw = {
        "scenario": {"name": "rw", "profile": "ideal"},
        "process": [{"name": "front"}, {"name": "worker{i+1}", "count": 3}],
        "socket": [{"name": "router", "type": "ROUTER", "process": "front", "bind": ["tcp://127.0.0.1:5700"]},
                   {"name": "w{i+1}", "type": "DEALER", "process": "worker", "connect": ["tcp://127.0.0.1:5700"]}],
        "send": [{"socket": "router", "to": ["w"], "count": 30, "interval_s": 0.001, "start_s": 0.1}],
        "recv": [{"socket": "w{i+1}", "service_s": 0.0}],
    }
    scenario = spec.from_dict(raw)
    assert list(scenario.sends[0].to) == ["w1", "w2", "w3"]
    summary = zsim.run(raw, 0).summary
    assert [summary["sockets"][f"w{n}"]["received"] for n in (1, 2, 3)] == [10, 10, 10]
    assert summary["sockets"]["router"]["send_unroutable"] == 0
    # members with their own routing ids are addressed by them; a name that is a socket stays one
    raw["socket"][1]["options"] = {"routing_id": "id{i}"}
    assert list(spec.from_dict(raw).sends[0].to) == ["id0", "id1", "id2"]
    raw["send"][0]["to"] = ["w1", "w"]
    raw["socket"][1].pop("options")
    assert list(spec.from_dict(raw).sends[0].to) == ["w1", "w1", "w2", "w3"]
