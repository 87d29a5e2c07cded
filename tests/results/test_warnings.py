"""Warnings for valid but suspicious models: each fires on its case, and not on healthy
designs (the examples whose point is not an overload or a stall)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import zsim
from support import run, scenario

ROOT = Path(__file__).resolve().parents[2]
PUB = {"name": "pub", "type": "PUB", "bind": "inproc://feed", "options": {"sndhwm": 100}}


def codes(summary):
    return [(w["code"], w["path"]) for w in summary["warnings"]]


def _sub(options):
    return {"name": "sub", "type": "SUB", "connect": "inproc://feed", "options": options}


def test_a_sub_without_subscription_is_named():
    summary = run(scenario(PUB, _sub({}), sends=[{"socket": "pub", "count": 10, "start_s": 0.1}], recvs=[{"socket": "sub"}]))
    assert summary["sockets"]["sub"]["received"] == 0
    assert ("no_subscription", "socket[sub].options.subscribe") in codes(summary)


def test_a_subscription_matching_no_topic_sent_is_named():
    summary = run(scenario(PUB, _sub({"subscribe": ["weather"]}),
                           sends=[{"socket": "pub", "count": 10, "start_s": 0.1, "topic": ["sports.", "news."]}],
                           recvs=[{"socket": "sub"}]))
    warning = next(w for w in summary["warnings"] if w["code"] == "subscription_matches_nothing")
    assert warning["path"] == "socket[sub].options.subscribe" and "'weather'" in warning["message"]


def test_a_matching_prefix_gives_no_subscription_warning():
    summary = run(scenario(PUB, _sub({"subscribe": ["sports"]}),
                           sends=[{"socket": "pub", "count": 10, "start_s": 0.1, "topic": ["sports.", "news."]}],
                           recvs=[{"socket": "sub"}]))
    assert not [w for w in summary["warnings"] if w["code"].startswith(("no_subscription", "subscription_"))]


def test_a_workload_starting_after_the_horizon_is_named():
    summary = run(scenario(PUB, _sub({"subscribe": [""]}), sends=[{"socket": "pub", "count": 10, "start_s": 5.0}],
                           recvs=[{"socket": "sub"}], until_s=2.0))
    assert ("starts_after_horizon", "send[pub].start_s") in codes(summary)


@pytest.mark.parametrize("service, fires", [(0.0001, False), (0.002, True), (100.0, True)])
def test_an_overloaded_receiver_is_named_with_its_utilisation(service, fires):
    # 1,000 msg/s offered; 100 us keeps up (0.1), 2 ms cannot (2.0), 100 s is a unit slip
    summary = run(scenario(PUB, _sub({"subscribe": [""], "rcvhwm": 100}),
                           sends=[{"socket": "pub", "count": 1000, "interval_s": 0.001, "start_s": 0.1}],
                           recvs=[{"socket": "sub", "service_s": service}], until_s=1.5))
    overloaded = [w for w in summary["warnings"] if w["code"] == "overloaded"]
    assert bool(overloaded) == fires
    if fires:
        assert overloaded[0]["path"] == "recv[sub].service_s"
        stated = float(re.search(r"offered utilisation ([0-9.]+)", overloaded[0]["message"].replace(",", "")).group(1))
        assert stated == pytest.approx(1000 * service, rel=0.01)  # 1,000 sends over 0.999 s
        assert ("in seconds" in overloaded[0]["message"]) == (service >= 1)


def test_a_saturated_load_balanced_worker_is_not_overloaded():
    push = {"name": "push", "type": "PUSH", "bind": "inproc://w", "options": {"sndhwm": 10}}
    pull = {"name": "pull", "type": "PULL", "connect": "inproc://w", "options": {"rcvhwm": 10}}
    summary = run(scenario(push, pull, sends=[{"socket": "push", "count": 200}], recvs=[{"socket": "pull", "service_s": 0.01}]))
    assert summary["sockets"]["pull"]["received"] == 200
    assert "overloaded" not in [code for code, _ in codes(summary)]


def test_a_backlog_left_at_the_end_is_named():
    summary = run(scenario(PUB, _sub({"subscribe": [""], "rcvhwm": 1000}),
                           sends=[{"socket": "pub", "count": 500, "interval_s": 0.001, "start_s": 0.1}],
                           recvs=[{"socket": "sub", "service_s": 0.004}], until_s=0.65))
    warning = next(w for w in summary["warnings"] if w["code"] == "backlog_at_end")
    assert warning["path"] == "socket[sub]" and "still queued" in warning["message"]


def test_a_rate_not_achieved_is_named_with_its_cause():
    push = {"name": "push", "type": "PUSH", "bind": "inproc://w", "options": {"sndhwm": 5}}
    pull = {"name": "pull", "type": "PULL", "connect": "inproc://w", "options": {"rcvhwm": 5}}
    summary = run(scenario(push, pull, sends=[{"socket": "push", "count": 1000, "interval_s": 0.001}],
                           recvs=[{"socket": "pull", "service_s": 0.01}], until_s=1.0))
    warning = next(w for w in summary["warnings"] if w["code"] == "rate_not_achieved")
    assert warning["path"] == "send[push]" and "blocked in send" in warning["message"]


@pytest.mark.parametrize("name", ["pair_inproc", "req_rep", "xpub_xsub_proxy", "broker"])
def test_healthy_examples_give_no_warning(name):
    assert zsim.run(ROOT / "examples" / f"{name}.toml", 0).summary["warnings"] == []


def test_the_overloaded_example_is_told_so():
    # examples/pub_sub_inproc.toml is a 500 msg/s consumer fed 1,000 msg/s on purpose
    summary = zsim.run(ROOT / "examples" / "pub_sub_inproc.toml", 0).summary
    assert codes(summary) == [("overloaded", "recv[sub].service_s")]


def test_warnings_are_printed_and_in_json(capsys):
    from zsim.cli import main

    assert main(["run", str(ROOT / "examples" / "pub_sub_inproc.toml")]) == 0
    assert "warning [overloaded] recv[sub].service_s: offered utilisation 2.00" in capsys.readouterr().out


def _late_reader(until_s):
    # 1,000 msg/s offered for the whole run; the reader starts at 1 s and then serves 2,000
    # msg/s: the backlog of the first second drains over the next, latency falling all the
    # way (ideal profile, constant times: decided by the model alone)
    return scenario(PUB, _sub({"subscribe": [""], "rcvhwm": 0}),
                    sends=[{"socket": "pub", "interval_s": 0.001, "start_s": 0.01, "duration_s": until_s}],
                    recvs=[{"socket": "sub", "service_s": 0.0005, "start_s": 1.0}], until_s=until_s)


def test_a_latency_still_falling_at_half_the_run_is_named():
    summary = run(_late_reader(2.2))
    settling = summary["sockets"]["sub"]["settling"]["latency"]
    assert settling["settled"] is False and settling["warmup_copies"] >= settling["observations"] // 2 - 5
    warning = next(w for w in summary["warnings"] if w["code"] == "latency_not_settled")
    assert warning["path"] == "socket[sub]" and "MSER-5" in warning["message"]
    # the drained backlog is not an overload: only the horizon is too short
    assert [c for c, _ in codes(summary)] == ["latency_not_settled"]


def test_a_long_enough_run_settles_and_deletes_its_warm_up():
    from zsim.results import flat_metrics

    summary = run(_late_reader(6.0))
    sub = summary["sockets"]["sub"]
    settling = sub["settling"]["latency"]
    assert settling["settled"] is True
    # the warm-up ends where the backlog has drained (t = 2 s: copies sent before about 1 s)
    assert 0.9 <= settling["warmup_end_s"] <= 2.1
    assert summary["warnings"] == []
    # after the warm-up no copy waits (latency ends when the reader takes it; the ideal
    # profile costs nothing); the whole run's p99 is the first second's backlog
    assert sub["steady_latency_s"]["max"] == 0.0
    assert sub["latency_s"]["p99"] > 0.5
    row = flat_metrics(summary)
    assert row["socket.sub.steady_latency_p99_s"] == sub["steady_latency_s"]["p99"]
    assert row["socket.sub.warmup_end_s"] == settling["warmup_end_s"]


def test_a_finite_job_is_not_asked_for_a_steady_state():
    # the same falling latency, but the sender stops after a count: a batch, not a service
    raw = _late_reader(2.2)
    raw["send"][0] = {"socket": "pub", "interval_s": 0.001, "start_s": 0.01, "count": 2000}
    summary = run(raw)
    assert summary["sockets"]["sub"]["settling"]["latency"]["settled"] is False
    assert "latency_not_settled" not in [c for c, _ in codes(summary)]


def test_warnings_about_members_of_a_template_fold_into_one_line(capsys):
    # issue 30: 8 overloaded workers of one template gave 16 near-identical warnings
    raw = {
        "scenario": {"name": "fan", "until_s": 1.0, "profile": "ideal"},
        "process": [{"name": "src"}, {"name": "w{i+1}", "count": 8}, {"name": "calm"}],
        "socket": [{"name": "pub", "type": "PUB", "process": "src", "bind": ["tcp://*:5556"]},
                   {"name": "in{i+1}", "type": "SUB", "process": "w", "connect": ["tcp://127.0.0.1:5556"],
                    "options": {"subscribe": [""], "rcvhwm": 5}},
                   {"name": "quiet", "type": "SUB", "process": "calm", "connect": ["tcp://127.0.0.1:5556"],
                    "options": {"subscribe": [""], "rcvhwm": 5}}],
        "send": [{"socket": "pub", "rate_per_s": 2000, "size_bytes": 10}],
        "recv": [{"socket": "in", "service_s": 0.001}, {"socket": "quiet", "service_s": 0.001}],
    }
    result = zsim.run(raw, 0)
    per_member = [w for w in result.summary["warnings"] if w["code"] == "overloaded"]
    assert len(per_member) == 9  # the summary keeps one per member (sweeps count them)
    folded = zsim.checks.fold_warnings(result.summary["warnings"], zsim.spec.from_dict(raw))
    overloaded = [w for w in folded if w["code"] == "overloaded"]
    assert [w["path"] for w in overloaded] == ["recv[in].service_s", "recv[quiet].service_s"]
    assert overloaded[0]["members"] == 8 and overloaded[0]["of"] == 8
    # the members' messages merged: their own names as the template's, their numbers as ranges
    assert overloaded[0]["message"] == (
        "all 8 members (in1, in2, in3, ... in8): offered utilisation 1.93: 1,935 copies/s arrive for socket 'in{i+1}', "
        "each takes 1,000 us; it cannot keep up in steady state, so its loss and latency grow with the horizon")
    from zsim.cli import format_summary

    text = format_summary(result.summary, zsim.spec.from_dict(raw))
    assert text.count("warning [overloaded]") == 2
    assert "warning [overloaded] recv[in].service_s: all 8 members" in text


def test_members_messages_merge_into_ranges_or_name_the_member_they_quote():
    merge = zsim.checks.merge_messages
    # numbers that differ become the members' range, compared in their units (513 us < 1.2 ms)
    assert merge(["waited 1.2 ms for a core, against 2.67 ms of its own CPU work: up to 9 threads",
                  "waited 513 us for a core, against 2.65 ms of its own CPU work: up to 9 threads"], ["w1", "w2"], "w{i+1}") == (
        "waited 513 us .. 1.2 ms for a core, against 2.65 ms .. 2.67 ms of its own CPU work: up to 9 threads")
    # a member's own name reads as the template's; a digit inside a name is not a number
    assert merge(["socket 'in1' lost 1,200 of in1_pipe's", "socket 'in10' lost 80 of in1_pipe's"], ["in1", "in10"], "in{i}") == (
        "socket 'in{i}' lost 80 .. 1,200 of in1_pipe's")
    # a sentence's comma is not part of a number; equal values written differently are one
    assert merge(["copy 4,000 of 5,000, sent at 1.0 s", "copy 4,500 of 5,000, sent at 1 s"], ["a1", "a2"], "a{i}") == (
        "copy 4,000 .. 4,500 of 5,000, sent at 1.0 s")
    # a quoted topic, a port or a hyphenated name is text: members that differ there do not merge
    assert merge(["no topic starts with '5'", "no topic starts with '15'"], ["s1", "s2"], "s{i}") is None
    assert merge(["connect tcp://127.0.0.1:5557", "connect tcp://127.0.0.1:5558"], ["a1", "a2"], "a{i}") is None
    assert merge(["worker-1 got 3", "worker-2 got 4"], ["a1", "a2"], "a{i}") is None
    # anything else that differs, or quantities of different kinds, cannot be merged
    assert merge(["lost at pub->in1", "lost at xpub->in2"], ["in1", "in2"], "in{i}") is None
    assert merge(["took 3 ms", "took 3 %"], ["a1", "a2"], "a{i}") is None


def test_a_fold_that_cannot_merge_names_the_member_it_quotes():
    raw = {
        "scenario": {"name": "fold", "until_s": 1.0, "profile": "ideal"},
        "socket": [{"name": "pub", "type": "PUB", "bind": ["inproc://a"]},
                   {"name": "in{i+1}", "type": "SUB", "count": 2, "connect": ["inproc://a"], "options": {"subscribe": [""]}}],
        "send": [{"socket": "pub", "rate_per_s": 100, "size_bytes": 10}],
        "recv": [{"socket": "in", "service_s": 0.001}],
    }
    warnings = [{"code": "overloaded", "path": "recv[in1].service_s", "message": "one thing"},
                {"code": "overloaded", "path": "recv[in2].service_s", "message": "another thing"}]
    [folded] = zsim.checks.fold_warnings(warnings, zsim.spec.from_dict(raw))
    assert folded["message"] == "all 2 members (in1, in2): in1: one thing"
