"""What ``zsim validate`` compares and what it says it did not (issue 41, finding 2), without
real sockets: the default tolerance of times, the request paths' metric names, the stamps
that carry a request's send time to its reply on the real side, every reported metric
compared or listed with its reason, and the verdict words and exit statuses."""

from __future__ import annotations

import json

import numpy as np
import pytest

import support
import zsim
from validation.compare import check_metric_path, default_metrics, judge, parse_validation
from validation.harness import merge_results
from zsim import spec
from zsim.errors import ScenarioError


def _router_design(metrics: dict | None = None) -> spec.Scenario:
    return spec.from_dict(support.router_to_dealer_workers(metrics=metrics))


# -- the default tolerance of a time is relative --------------------------------------------------


def test_the_default_latency_tolerance_does_not_pass_a_latency_four_times_the_real_one():
    """The old default, +-50 % or 0.5 ms absolute, passed 0.1 ms real against 0.4 ms
    simulated (finding 2 saw 3.3 to 4.7 times); the default is now relative."""
    tolerance = default_metrics(_router_design())["latency_s.p50"]
    assert judge(tolerance, [0.00040] * 3, [0.00010] * 3)[0] == "differs"
    assert judge(tolerance, [0.00033] * 3, [0.00010] * 3)[0] == "differs"
    # within a quarter of the real value, or 50 us (one thread wake-up on a loaded machine)
    assert judge(tolerance, [0.00124] * 3, [0.00100] * 3)[0] == "agrees"
    assert judge(tolerance, [0.00126] * 3, [0.00100] * 3)[0] == "differs"
    assert judge(tolerance, [0.000145] * 3, [0.000100] * 3)[0] == "agrees"
    assert judge(tolerance, [0.000155] * 3, [0.000100] * 3)[0] == "differs"


# -- the metric names of request paths --------------------------------------------------------------


def test_a_sockets_round_trips_and_end_to_end_times_are_metrics_both_sides_have():
    scenario = _router_design()
    assert check_metric_path("sockets.router.rtt_s.p50", scenario, {}) is None
    assert check_metric_path("sockets.router.e2e_s.w1.p95", scenario, {}) is None
    assert "no socket 'nobody'" in check_metric_path("sockets.router.e2e_s.nobody.p50", scenario, {})
    assert "statistics are" in check_metric_path("sockets.router.e2e_s.w1.p42", scenario, {})
    # the ROUTER's [[send]] waits for no reply: its round trips are its socket's, and the
    # line says where, before any run (it was "not observed on either side" after them)
    with pytest.raises(ScenarioError) as info:
        parse_validation(_router_design({"senders.send.router.rtt_s.p50": {"rel": 0.25}}))
    assert info.value.path == "validation.metrics[0]"
    assert "sockets.router.rtt_s.p50" in str(info.value) and "does not wait for replies" in str(info.value)


# -- the real side: a reply carries its request's stamp -------------------------------------------


def test_a_reply_carries_the_stamp_of_the_request_it_answers():
    from validation.child import CAUSED_SIZE, KIND_DATA, KIND_REPLY, build_frames, parse_header, root_of

    request = build_frames(64, "", 1, KIND_DATA, 3, 7, 10.5)
    assert root_of(request) == (3, 10.5)  # a [[send]]'s message is the root of its chain
    reply = build_frames(64, "", 1, KIND_REPLY, 1, 0, 10.7, root_of(request))
    assert sum(len(f) for f in reply) == 64  # the stamp lies inside the payload: sizes unchanged
    assert parse_header(reply[-1]) == (KIND_REPLY, 1, 0, 10.7)  # its own header, as before
    assert root_of(reply) == (3, 10.5)
    # a reply answered again, a result forwarded again: the root carries on
    again = build_frames(40, "", 1, KIND_REPLY, 2, 0, 10.9, root_of(reply))
    assert root_of(again) == (3, 10.5)
    # a frame too small for both stamps keeps its own header only
    small = build_frames(CAUSED_SIZE - 1, "", 1, KIND_REPLY, 1, 0, 10.7, (3, 10.5))
    assert parse_header(small[-1]) == (KIND_REPLY, 1, 0, 10.7) and root_of(small) is None


def test_the_harness_makes_round_trips_and_end_to_end_times_as_the_simulator_does(tmp_path):
    """Per receiving socket, a caused message whose root was sent there is a round trip,
    one from another socket that ended its chain there is an end-to-end time from that
    socket (zsim.results.causal_times); replies without the stamp are counted."""
    scenario = spec.from_dict(support.request_paths_design())
    index = {send.socket: i for i, send in enumerate(scenario.sends)}
    # router: 3 replies to its own requests; sink: 2 results of the ventilator's tasks, and
    # one still to be answered when the run ended (an end) and one answered (not an end)
    np.save(tmp_path / "causal-router.npy", np.array([[index["router"], 0.003, 1], [index["router"], 0.004, 1],
                                                     [index["router"], 0.005, 1]]))
    np.save(tmp_path / "causal-sink.npy", np.array([[index["vent"], 0.010, 1], [index["vent"], 0.012, 1],
                                                   [index["vent"], 0.030, 0]]))
    results = {"front": {"process": "front", "snapshot_s": 1.0, "errors": [], "senders": {}, "receivers": {}, "proxies": {},
                         "sockets": {"router": {"received": 3, "causal_unstamped": 2}, "sink": {"received": 3}}}}
    summary = merge_results(scenario, results, tmp_path, seed=0, wall_s=1.0, t0=0.0)
    router, sink = summary["sockets"]["router"], summary["sockets"]["sink"]
    assert router["rtt_s"]["count"] == 3 and router["rtt_s"]["p50"] == 0.004 and "e2e_s" not in router
    assert list(sink["e2e_s"]) == ["vent"] and sink["e2e_s"]["vent"]["count"] == 2 and sink["e2e_s"]["vent"]["max"] == 0.012
    assert "rtt_s" not in sink
    assert summary["real"]["causal_unstamped"] == {"router": 2}


# -- every reported metric is compared or listed, and the verdict -------------------------------------


def _as_real(summary: dict) -> dict:
    """A simulated summary with what the harness cannot observe as it gives it (None, or
    absent: validation.harness.merge_results)."""
    real = json.loads(json.dumps(summary))
    for entry in real["sockets"].values():
        entry.update(dropped=None, discarded=None, lost_on_close=None)
        for key in ("steady_latency_s", "settling", "inbound"):
            entry.pop(key, None)
    for entry in real["senders"].values():
        entry.pop("blocked_s", None)
    real["ledger"].update({key: None for key in ("copies", "dropped", "discarded", "lost_on_close", "queued_at_end",
                                                 "dropped_by_rule", "discarded_by_rule", "lost_by_rule", "queued_by_place")})
    real.update(pipes=[], links=[], real={})
    real.pop("machine", None)
    return real


def _validation(metrics_table: dict | None, real_rtt: bool = True):
    """A validation of the router design from simulated summaries, the "real" side being a
    second simulated seed (without its round trips when ``real_rtt`` is false): what
    ``validate`` decides from them, with no real run."""
    from validation.compare import (
        MetricResult,
        ScenarioValidation,
        _merged_lookup,
        account,
        request_paths,
        time_tolerance,
    )

    scenario = _router_design(metrics_table)
    vspec = parse_validation(scenario)
    sim = [zsim.run(scenario, seed).summary for seed in (0, 1)]
    real = [_as_real(zsim.run(scenario, seed).summary) for seed in (2, 3)]
    if not real_rtt:
        for summary in real:
            del summary["sockets"]["router"]["rtt_s"]
            summary["real"] = {"causal_unstamped": {"router": 60}}
    chosen = dict(vspec.metrics)
    if vspec.defaulted:
        chosen.update({f"{family}.p50": time_tolerance() for family in request_paths(sim)})
    sim_lookups = [_merged_lookup(s, {}, vspec.derived) for s in sim]
    real_lookups = [_merged_lookup(s, {}, vspec.derived) for s in real]
    metrics = []
    for name, tol in chosen.items():
        sim_values = [lookup(name) for lookup in sim_lookups]
        real_values = [lookup(name) for lookup in real_lookups]
        metrics.append(MetricResult(name, tol, sim_values, real_values, *judge(tol, sim_values, real_values)))
    result = ScenarioValidation(scenario=scenario.name, source="", description="", replications=2, seeds=[0, 1],
                                metrics=metrics, sim_summaries=sim, real_summaries=real, real_errors=[], sim_errors=[],
                                wall_sim_s=0.1, wall_real_s=1.0, spec=vspec)
    result.not_compared = account(vspec, scenario, metrics, sim, real, real_lookups)
    return result


def test_every_metric_the_simulation_reports_is_compared_or_listed_with_a_reason():
    from validation.compare import path_of, reported_metrics

    result = _validation(None)
    compared = {m.metric for m in result.metrics if m.verdict in ("agrees", "differs")}
    assert "sockets.router.rtt_s.p50" in compared  # the defaults take the request path's median
    listed = {entry.metric: entry.reason for entry in result.not_compared}
    reported = {path_of(parts) for summary in result.sim_summaries for parts in reported_metrics(summary)}
    assert reported - compared - set(listed) == set()  # no silent omission
    assert listed["sockets.router.dropped"].startswith("simulation-only")
    analysis = [path for path in listed if any(f".{key}" in path for key in ("steady_latency_s", "settling", "inbound"))]
    assert analysis and all(listed[path].startswith("simulation-only: the model's analysis") for path in analysis)
    assert listed["senders.send.router.blocked_s"].startswith("simulation-only")
    assert listed["sockets.router.rtt_s.p95"].startswith("not in the default set")
    assert all(reason for reason in listed.values())
    assert result.question_not_compared == [] and result.verdict == "agrees"


def test_round_trips_no_metric_compares_keep_the_verdict_from_agrees():
    from validation.cli import EXIT_DIFFERS, EXIT_INCOMPLETE, VERDICT_EXIT
    from validation.compare import format_table

    result = _validation({"senders.send.router.sent": "exact"})
    assert [m.verdict for m in result.metrics] == ["agrees"]
    assert [entry.metric for entry in result.question_not_compared] == ["sockets.router.rtt_s.*"]
    assert result.metrics_verdict == result.verdict == "incomplete"
    assert result.verdict_text.startswith("incomplete: agrees on the 1 metric compared; 1 metric the question depends on "
                                          "was not compared: sockets.router.rtt_s.* (request -> reply times of a request "
                                          "path, and [validation.metrics] names no metric of them")
    assert VERDICT_EXIT[result.verdict] == EXIT_INCOMPLETE != EXIT_DIFFERS
    text = format_table(result)
    assert text.splitlines()[-1] == f"verdict: {result.verdict_text}"
    assert "  ! request -> reply times of a request path" in text
    assert "     sockets.router.rtt_s.*" in text
    data = json.loads(json.dumps(result.to_json()))
    assert data["verdict"] == "incomplete" and data["question_not_compared"] == ["sockets.router.rtt_s.*"]
    assert {"metric": "sockets.router.sent", "reason": "no tolerance: [validation.metrics] does not name it",
            "question": False} in data["not_compared"]


def test_a_named_round_trip_not_observed_on_the_real_side_says_why():
    result = _validation({"sockets.router.rtt_s.p50": {"rel": 0.25}}, real_rtt=False)
    assert result.metrics[0].verdict == "n/a"
    (missing,) = result.question_not_compared
    assert missing.metric == "sockets.router.rtt_s.*"
    assert "not observed on the real side" in missing.reason
    assert "60 replies or results reached router in a run without the stamp" in missing.reason
    assert result.verdict == "incomplete"


def test_a_difference_stays_differs_and_names_what_was_not_compared():
    from validation.compare import MetricResult, Tolerance

    result = _validation({"senders.send.router.sent": "exact"})
    result.metrics.append(MetricResult("latency_s.p50", Tolerance("relative", rel=0.25), [0.0004], [0.0001], "differs", "", None))
    assert result.verdict == "differs"
    assert result.verdict_text.startswith("differs (1 unexplained difference(s)); the question also depends on 1 metric(s) "
                                          "not compared: sockets.router.rtt_s.*")


def test_the_scenario_may_say_why_its_question_does_not_depend_on_a_request_path():
    raw = support.router_to_dealer_workers(metrics={"senders.send.router.sent": "exact"})
    raw["validation"]["not_compared"] = {"sockets.router.rtt_s": "the question is how many requests go out"}
    scenario = spec.from_dict(raw)
    assert parse_validation(scenario).not_compared == {"sockets.router.rtt_s": "the question is how many requests go out"}
    from validation.compare import account

    result = _validation({"senders.send.router.sent": "exact"})
    result.spec = parse_validation(scenario)
    result.not_compared = account(result.spec, scenario, result.metrics, result.sim_summaries, result.real_summaries,
                                  [lambda path, s=s: _lookup(s, path) for s in result.real_summaries])
    assert result.question_not_compared == [] and result.verdict == "agrees"
    entry = next(e for e in result.not_compared if e.metric == "sockets.router.rtt_s.*")
    assert entry.reason == "the scenario's question does not depend on them: the question is how many requests go out"


def _lookup(summary, path):
    from validation.compare import metric_value

    return metric_value(summary, path)


@pytest.mark.parametrize("table,words", [
    ({"sockets.nobody.rtt_s": "x"}, "matches no metric"),
    ({"sockets.router.rtt_s": ""}, "needs the reason"),
    ({"senders.send.router.sent": "x"}, "is compared"),
])
def test_a_not_compared_entry_names_a_metric_and_a_reason(table, words):
    raw = support.router_to_dealer_workers(metrics={"senders.send.router.sent": "exact"})
    raw["validation"]["not_compared"] = table
    with pytest.raises(ScenarioError) as info:
        parse_validation(spec.from_dict(raw))
    assert info.value.path == f"validation.not_compared.{next(iter(table))}" and words in str(info.value)


def test_the_report_lists_what_was_not_compared(tmp_path):
    from validation.report import write_report

    result = _validation({"senders.send.router.sent": "exact"})
    report = write_report([result], tmp_path).read_text()
    assert "**Verdict: incomplete: agrees on the 1 metric compared" in report
    assert "- **the question depends on it: request -> reply times of a request path" in report
    assert "`sockets.router.rtt_s.*`" in report
    assert "| router-dealer-workers | `sockets.router.rtt_s.*` | - | - | - | **not compared**" in report
    assert "1 incomplete" in report
    saved = json.loads((tmp_path / "results.json").read_text())[0]
    assert saved["question_not_compared"] == ["sockets.router.rtt_s.*"]
