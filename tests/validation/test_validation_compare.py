"""The comparison side of ``zsim validate``: tolerances, the [validation] table, metric paths,
derived expressions, statistics, and the catalogue's scenario files. No real sockets here."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from validation.compare import (
    SCHEDULE_MARGIN,
    SPEED_MARGIN,
    Tolerance,
    check_metric_path,
    evaluate,
    interval,
    judge,
    ks_distance,
    metric_value,
    parse_tolerance,
    parse_validation,
    schedule_check,
    sender_rates,
    speed_check,
)
from zsim import spec
from zsim.errors import ScenarioError

CATALOGUE = sorted((Path(__file__).resolve().parents[2] / "validation" / "scenarios").glob("*.toml"))


def _scenario(validation: dict | None = None) -> spec.Scenario:
    raw = {
        "socket": [
            {"name": "pub", "type": "PUB", "bind": "inproc://x"},
            {"name": "sub", "type": "SUB", "connect": "inproc://x", "options": {"subscribe": [""]}},
        ],
        "send": [{"socket": "pub", "count": 10}],
        "recv": [{"socket": "sub"}],
    }
    if validation is not None:
        raw["validation"] = validation
    return spec.from_dict(raw)


# -- tolerances ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,kind",
    [("exact", "exact"), ({"rel": 0.1}, "relative"), ({"abs": 2}, "relative"), ({"rel": 0.1, "abs": 2}, "relative"),
     ({"range": 0}, "range"), ({"mode": 0}, "mode"), ({"proportion": 0.34}, "proportion"), ({"ks": 0.2}, "ks"),
     ({"tolerance": "exact"}, "exact")],
)
def test_parse_tolerance_kinds(raw, kind):
    assert parse_tolerance(raw, "m").kind == kind


@pytest.mark.parametrize("raw", ["approx", {"rel": -1}, {"bogus": 1}, {}, 3])
def test_parse_tolerance_rejects_nonsense(raw):
    with pytest.raises(ScenarioError):
        parse_tolerance(raw, "validation.metrics.x")


def test_judge_exact_needs_every_value_equal():
    tol = Tolerance("exact")
    assert judge(tol, [12, 12], [12, 12])[0] == "agrees"
    assert judge(tol, [12, 12], [12, 11])[0] == "differs"
    assert judge(tol, [12], [])[0] == "n/a"


def test_judge_relative_uses_the_larger_of_rel_and_abs():
    tol = Tolerance("relative", rel=0.1, abs=2)
    assert judge(tol, [100], [109])[0] == "agrees"
    assert judge(tol, [100], [112])[0] == "differs"
    assert judge(tol, [1], [3])[0] == "agrees"  # abs 2 wins for small numbers
    assert judge(tol, [1], [3.5])[0] == "differs"


def test_judge_range_and_proportion():
    assert judge(Tolerance("range"), [7, 8, 10], [8, 10])[0] == "agrees"
    assert judge(Tolerance("range"), [7, 7], [8])[0] == "differs"
    assert judge(Tolerance("range", abs=1), [7, 7], [8])[0] == "agrees"
    assert judge(Tolerance("proportion", value=0.34), [1, 1, 0], [1, 0, 0])[0] == "agrees"
    assert judge(Tolerance("proportion", value=0.34), [1, 1, 1], [0, 0, 0])[0] == "differs"


def test_judge_mode_compares_the_most_common_values():
    # a race: the real side's busy machine moves some runs to other outcomes
    assert judge(Tolerance("mode"), [8, 8, 10, 10, 8, 8, 8, 8], [10, 7, 8, 8, 7, 9, 8, 8]) == \
        ("agrees", "sim 8 in 6 of 8, real 8 in 4 of 8")
    assert judge(Tolerance("mode"), [7, 7, 8, 7], [8, 8, 7, 10])[0] == "differs"
    assert judge(Tolerance("mode", value=1), [7, 7, 8, 7], [8, 8, 7, 10])[0] == "agrees"
    assert judge(Tolerance("mode"), [8, 10], [10, 9])[0] == "agrees"  # tied: any shared most common value
    assert Tolerance("mode").describe() == "same mode"
    assert Tolerance("mode", value=1).describe() == "same mode ±1"


def test_judge_ks_on_samples():
    rng = np.random.default_rng(1)
    a = rng.exponential(1.0, 5000)
    b = rng.exponential(1.0, 5000)
    c = rng.exponential(2.0, 5000)
    assert judge(Tolerance("ks", value=0.05), [], [], a, b)[0] == "agrees"
    assert judge(Tolerance("ks", value=0.05), [], [], a, c)[0] == "differs"
    assert judge(Tolerance("ks", value=0.05), [], [], a, None)[0] == "n/a"


def test_ks_distance_extremes():
    assert ks_distance(np.array([1.0, 2.0]), np.array([1.0, 2.0])) == 0.0
    assert ks_distance(np.array([1.0, 2.0]), np.array([3.0, 4.0])) == 1.0


def test_interval_student_t():
    mean, low, high = interval([10.0, 12.0])
    assert mean == 11.0
    assert low < 11.0 < high
    assert math.isclose(high - mean, 12.706 * math.sqrt(2.0) / math.sqrt(2), rel_tol=1e-3)
    assert interval([5.0]) == (5.0, 5.0, 5.0)
    assert interval([]) == (None, None, None)


# -- metric paths and expressions ------------------------------------------------------------


def test_metric_value_matches_names_with_dots_longest_first():
    summary = {"senders": {"send.pub": {"sent": 3}, "send": {"pub": {"sent": 99}}}, "processes": {"p": {"term_blocked": True}}}
    assert metric_value(summary, "senders.send.pub.sent") == 3.0
    assert metric_value(summary, "processes.p.term_blocked") == 1.0
    assert metric_value(summary, "senders.nobody.sent") is None
    assert metric_value({"a": {"b": None}}, "a.b") is None


def test_evaluate_derived_expressions():
    values = {"sockets.a.received": 30.0, "sockets.b.received": 10.0, "senders.send.a.finished_at_s": 1.5}
    lookup = values.get
    assert evaluate("sockets.a.received - sockets.b.received", lookup) == 20.0
    assert evaluate("max(sockets.a.received, sockets.b.received) / 40", lookup) == 0.75
    assert evaluate("senders.send.a.finished_at_s - 0.5", lookup) == 1.0
    assert evaluate("sockets.a.received / 0", lookup) is None
    assert evaluate("sockets.missing.received + 1", lookup) is None
    with pytest.raises(ValueError):
        evaluate("__import__('os')", lookup)


# -- the [validation] table --------------------------------------------------------------------


def test_parse_validation_defaults_are_observable_metrics():
    vspec = parse_validation(_scenario())
    assert vspec.defaulted
    assert "senders.send.pub.sent" in vspec.metrics
    assert "sockets.sub.received" in vspec.metrics
    assert vspec.replications == 3


def test_parse_validation_reads_every_field():
    vspec = parse_validation(_scenario({
        "replications": 4, "timeout_s": 9, "fast": True, "claims": ["x"],
        "derived": {"lost": "sockets.pub.sent - sockets.sub.received"},
        "metrics": {"lost": {"abs": 1}, "latency": {"ks": 0.2}},
        "known": {"lost": {"reason": "r", "model_lacks": "m"}},
    }))
    assert vspec.replications == 4 and vspec.timeout_s == 9.0 and vspec.fast and vspec.claims == ("x",)
    assert vspec.metrics["lost"].kind == "relative"
    assert vspec.metrics["latency"].kind == "ks"
    assert vspec.known["lost"]["model_lacks"] == "m"


@pytest.mark.parametrize(
    "validation,path",
    [
        ({"replicatons": 3}, "validation.replicatons"),
        ({"replications": 0}, "validation.replications"),
        ({"metrics": {"sockets.sub.received": "roughly"}}, "validation.metrics.sockets.sub.received"),
        ({"metrics": {"sockets.sub.received": {"ks": 0.1}}}, "validation.metrics.sockets.sub.received"),
        ({"derived": {"x": "import os"}}, "validation.derived.x"),
        ({"known": {"x": {"model_lacks": "no reason"}}}, "validation.known.x"),
    ],
)
def test_parse_validation_errors_name_the_field(validation, path):
    with pytest.raises(ScenarioError) as info:
        parse_validation(_scenario(validation))
    assert info.value.path == path


# -- metric paths are checked when the file is loaded ---------------------------------------------


@pytest.mark.parametrize(
    "validation,path,words",
    [
        # a typo in a socket name: the third metric, with the closest real path
        ({"metrics": {"sockets.pub.sent": "exact", "sockets.sub.received": "exact", "sockets.sbu.received": "exact"}},
         "validation.metrics[2]", ["unknown metric 'sockets.sbu.received'", "sockets.sub.received"]),
        ({"metrics": {"sockets.sub.recieved": "exact"}}, "validation.metrics[0]", ["'sockets.sub.received'"]),
        ({"metrics": {"senders.send.pub.snet": "exact"}}, "validation.metrics[0]", ["senders.send.pub.sent"]),
        ({"metrics": {"socket.sub.received": "exact"}}, "validation.metrics[0]", ["unknown metric 'socket.sub.received'"]),
        ({"metrics": {"latency.sbu": {"ks": 0.2}}}, "validation.metrics[0]", ["no socket 'sbu'", "latency.sub"]),
        ({"metrics": {"rtt.send.pub": {"ks": 0.2}, "rtt.nobody": {"ks": 0.2}}}, "validation.metrics[1]", ["no sender 'nobody'"]),
        ({"metrics": {"latency": {"rel": 0.1}}}, "validation.metrics[0]", ["per-message sample metric", "ks"]),
        ({"metrics": {"lost": {"abs": 1}}, "derived": {"lost": "sockets.pub.sent - sockets.sbu.received"}},
         "validation.derived.lost", ["unknown metric 'sockets.sbu.received'"]),
        ({"metrics": {"sockets.sub.received": "exact"}, "known": {"sockets.sbu.received": {"reason": "r"}}},
         "validation.known.sockets.sbu.received", ["does not list"]),
    ],
)
def test_metric_path_typos_are_errors_at_load(validation, path, words):
    with pytest.raises(ScenarioError) as info:
        parse_validation(_scenario(validation))
    assert info.value.path == path
    assert "\n" not in str(info.value)
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize("path", [
    "sockets.sub.received", "sockets.pub.send_again", "sockets.sub.first_recv_s", "sockets.sub.last_index",
    "sockets.sub.latency_s.p95", "senders.send.pub.finished_at_s", "sockets.pub.rtt_s.p50", "sockets.sub.e2e_s.pub.p95",
    "receivers.recv.sub.received", "processes.main.term_blocked", "ledger.delivered", "ledger.dropped_by_rule.hwm",
    "latency_s.p50", "sim_time_s",
])
def test_every_summary_path_is_a_valid_metric(path):
    scenario = _scenario()
    assert check_metric_path(path, scenario, {}) is None
    # and the simulator's own summary has it (or the extras the comparison adds)
    if not path.startswith(("sockets.sub.first", "sockets.sub.last", "ledger.dropped_by_rule", "sockets.pub.rtt",
                            "sockets.sub.e2e")):
        from zsim.runner import run

        summary = run(scenario, 0).summary
        assert metric_value(summary, path) is not None or path.endswith("finished_at_s"), path


# -- did the real side keep its schedule? ------------------------------------------------------------


def _real(seed: int, **senders: float | None) -> dict:
    return {"seed": seed, "real": {"schedule": {
        name: (None if fraction is None else {"rate_fraction": fraction, "behind_s": 0.01, "pauses_s": 1.0, "zmq_s": 0.1})
        for name, fraction in senders.items()}}}


def test_schedule_kept_within_the_margin_is_not_machine_bound():
    check = schedule_check([_real(0, a=0.97), _real(1, a=1.0 - SCHEDULE_MARGIN + 0.001)], [0, 1])
    assert not check["missed"] and check["message"] == ""
    assert check["worst_rate_fraction"] == pytest.approx(1.0 - SCHEDULE_MARGIN + 0.001)


def test_schedule_missed_says_what_the_numbers_measure():
    check = schedule_check([_real(0, a=0.95, b=0.99), _real(1, a=0.24, b=None)], [0, 1])
    assert check["missed"]
    assert check["worst"] == {"sender": "a", "seed": 1, "behind_s": 0.01}
    assert "the real side sent 24 % of the requested rate" in check["message"]
    assert "these numbers measure this machine" in check["message"]


def test_back_to_back_senders_request_no_rate_and_are_not_judged():
    check = schedule_check([{"seed": 0, "real": {"schedule": {"blast": {"rate_fraction": None, "behind_s": 0.2}}}}], [0])
    assert check["worst_rate_fraction"] is None and not check["missed"]


# -- machine speed: a back-to-back sender's rate against the machine's speed that day ----------------


def _rates(real: float, sim: float, asked: float | None = None):
    return sender_rates([_summary(blast=(asked, sim))], [_summary(blast=(asked, real))])


class _Probe:
    def __init__(self, value: float) -> None:
        self.value, self.calls = value, 0

    def __call__(self) -> float:
        self.calls += 1
        return self.value


def test_a_slow_machine_explains_a_slow_back_to_back_sender():
    probe = _Probe(0.78e-6)
    check = speed_check(_rates(real=220_000, sim=570_000), 0.28e-6, probe)
    assert probe.calls == 1 and check["slow"]
    assert check["machine_factor"] == pytest.approx(0.78 / 0.28)
    assert check["sender_slowdown"] == pytest.approx(570 / 220)
    assert "this machine ran 2.8x slower than its profile today" in check["message"]
    assert "measure this machine's speed" in check["message"]


def test_a_sender_slower_than_the_machine_explains_stays_a_model_difference():
    # the machine is 1.5x slower, the sender 4x: not the machine's doing
    check = speed_check(_rates(real=100_000, sim=400_000), 0.28e-6, _Probe(0.42e-6))
    assert not check["slow"] and check["message"] == ""
    assert check["machine_factor"] == pytest.approx(1.5)


def test_a_machine_at_its_profiles_speed_is_not_blamed():
    check = speed_check(_rates(real=220_000, sim=570_000), 0.28e-6, _Probe(0.30e-6))
    assert not check["slow"]


def test_the_runs_own_probes_are_used_before_a_probe_after_them():
    from validation.compare import in_run_probes

    probe = _Probe(0.30e-6)  # after the runs the machine looked normal again
    runs = [{"real": {"speed_probe_drop_s": {"publisher": 0.80e-6}}}, {"real": {"speed_probe_drop_s": {"publisher": 0.76e-6}}},
            {"real": {}}]
    assert in_run_probes(runs) == [0.80e-6, 0.76e-6]
    check = speed_check(_rates(real=220_000, sim=570_000), 0.28e-6, probe, in_run=in_run_probes(runs))
    assert probe.calls == 0 and check["slow"]
    assert check["probe_drop_s"] == pytest.approx(0.78e-6) and check["probe"].startswith("in the real runs")


def test_speed_is_probed_only_when_a_back_to_back_sender_is_slow():
    probe = _Probe(1e-6)
    # within the margin
    assert not speed_check(_rates(real=500_000, sim=570_000 * (1 + SPEED_MARGIN) / 1.4), 0.28e-6, probe)["slow"]
    # paced senders are the schedule check's business
    assert not speed_check(_rates(real=100, sim=1000, asked=1000.0), 0.28e-6, probe)["slow"]
    # a profile without the measurement cannot be compared
    assert not speed_check(_rates(real=100_000, sim=570_000), None, probe)["slow"]
    assert probe.calls == 0


def test_speed_bound_scenario_verdict_and_reason():
    from validation.compare import MetricResult

    result = _validation([_summary(blast=(None, 570_000.0))], [_summary(blast=(None, 220_000.0))])
    result.speed = speed_check(result.sender_rates, 0.28e-6, _Probe(0.78e-6))
    differs = MetricResult("blast_ms", parse_tolerance({"rel": 0.25}, "t"), [34.5], [90.8], "differs", "", None)
    result.metrics = [differs]
    assert result.verdict == "machine-bound" and result.unexplained == []
    assert result.verdict_reason.startswith("this machine ran 2.8x slower")
    # metrics that agree on a slow machine still agree: the speed did not matter to them
    result.metrics = [MetricResult("blast_ms", parse_tolerance({"rel": 0.25}, "t"), [34.5], [35.0], "agrees", "", None)]
    assert result.verdict == "agrees" and not result.machine_bound


# -- the catalogue ---------------------------------------------------------------------------------


def test_catalogue_is_not_empty():
    assert len(CATALOGUE) >= 20


@pytest.mark.parametrize("path", CATALOGUE, ids=lambda p: p.stem)
def test_catalogue_scenarios_load_and_name_observable_metrics(path):
    scenario = spec.load(path)
    vspec = parse_validation(scenario)
    assert not vspec.defaulted, "catalogue scenarios choose their metrics"
    assert scenario.description.strip(), "every catalogue scenario says what it checks and where the claim comes from"
    top_level = {"sockets", "senders", "receivers", "proxies", "processes", "ledger", "latency_s"}
    if scenario.links:  # the real side reads each link direction's qdisc (harness.link_counters)
        top_level.add("network")
    for name in vspec.metrics:
        head = name.split(".")[0]
        assert head in top_level or name in vspec.derived or head in ("latency", "rtt"), name
        assert not name.startswith(("pipes", "ledger.dropped", "ledger.queued")), f"{name} is not observable on real sockets"
    for name in vspec.known:
        assert name in vspec.metrics, f"known difference for a metric that is not compared: {name}"


def test_catalogue_names_are_unique():
    names = [spec.load(p).name for p in CATALOGUE]
    assert len(names) == len(set(names))


# -- offered load: each sender's requested rate against what it achieved ----------------------------


def _summary(**senders: tuple[float | None, float | None]) -> dict:
    """A summary with ``senders[name]`` = (requested, achieved) rates, 1,000 messages each."""
    return {"senders": {name: {"socket": "pub", "attempts": 1000, "sent": 1000, "again": 0, "unroutable": 0,
                               "requested_rate_per_s": asked, "achieved_rate_per_s": got}
                        for name, (asked, got) in senders.items()}}


def _validation(sim: list[dict], real: list[dict]):
    from validation.compare import ScenarioValidation, ValidationSpec

    n = max(len(sim), len(real))
    return ScenarioValidation(scenario="rates", source="rates.toml", description="", replications=n, seeds=list(range(n)),
                              metrics=[], sim_summaries=sim, real_summaries=real, real_errors=[], sim_errors=[],
                              wall_sim_s=0.1, wall_real_s=1.0, spec=ValidationSpec())


def test_sender_section_shows_requested_and_achieved_rates_of_both_sides(tmp_path):
    import json

    from validation.compare import format_table
    from validation.report import write_report

    result = _validation(sim=[_summary(**{"send.pub": (10_000, 9_990)}), _summary(**{"send.pub": (10_000, 10_000)})],
                         real=[_summary(**{"send.pub": (10_000, 6_100)}), _summary(**{"send.pub": (10_000, 6_160)})])
    text = format_table(result)
    row = next(line for line in text.splitlines() if line.startswith("send.pub"))
    assert "10,000" in row
    assert "6,130 (6,100–6,160)" in row  # real: mean over replications (range)
    assert "9,995 (9,990–10,000)" in row  # simulated
    assert row.rstrip().endswith("real below 95 %")
    assert ("real send[pub] achieved 6,100/s of 10,000/s asked (61 %; slowest of 2 runs, mean 6,130/s): "
            "downstream metrics compare different offered loads") in text
    assert "sim send[pub]" not in text

    entry = json.loads(json.dumps(result.to_json()))["senders"]["send.pub"]
    assert entry["requested_rate_per_s"] == 10_000 and not entry["back_to_back"]
    assert entry["real"]["achieved_rate_per_s"] == [6_100, 6_160]
    assert entry["real"]["mean"] == pytest.approx(6_130) and entry["real"]["min"] == 6_100 and entry["real"]["max"] == 6_160
    assert entry["real"]["lowest_share"] == pytest.approx(0.61) and entry["real"]["below"]
    assert entry["sim"]["mean"] == pytest.approx(9_995) and not entry["sim"]["below"]
    assert entry["below"] and len(entry["warnings"]) == 1

    report = write_report([result], tmp_path).read_text()
    assert "| `send.pub` | 10,000 | 6,130 (6,100–6,160) | 9,995 (9,990–10,000) | **real below 95 %** |" in report
    assert "- **real send[pub] achieved 6,100/s of 10,000/s asked (61 %" in report
    assert json.loads((tmp_path / "results.json").read_text())[0]["senders"]["send.pub"]["real"]["below"]


@pytest.mark.parametrize("side", ["real", "sim"])
@pytest.mark.parametrize("achieved,flagged", [(9_490, True), (9_499.9, True), (9_500, False), (10_000, False), (10_400, False)])
def test_sender_flag_fires_below_95_percent_on_either_side(side, achieved, flagged):
    from validation.compare import format_table

    slow = [_summary(**{"send.pub": (10_000, achieved)})]
    kept = [_summary(**{"send.pub": (10_000, 10_000)})]
    result = _validation(sim=slow if side == "sim" else kept, real=slow if side == "real" else kept)
    (rates,) = result.sender_rates
    assert rates.below(side) is flagged
    other = "sim" if side == "real" else "real"
    assert not rates.below(other)
    text = format_table(result)
    assert (f"{side} send[pub] achieved" in text) is flagged
    assert f"{other} send[pub] achieved" not in text
    assert ("downstream metrics compare different offered loads" in text) is flagged
    assert result.to_json()["senders"]["send.pub"]["below"] is flagged
    if achieved == 9_499.9:  # just below: the percentage is not rounded up onto the threshold
        assert "(94.9 %)" in text


def test_sender_flag_names_both_sides_and_refused_attempts():
    from validation.compare import format_table

    real = _summary(**{"send.pub": (1_000, 30)})
    real["senders"]["send.pub"].update(attempts=20_000, sent=30, again=19_970)
    result = _validation(sim=[_summary(**{"send.pub": (1_000, 500)})], real=[real])
    text = format_table(result)
    assert "real and sim below 95 %" in text
    assert "real send[pub] achieved 30/s of 1,000/s asked (3 %; 19,970 of 20,000 attempts refused (again/unroutable))" in text
    assert "sim send[pub] achieved 500/s of 1,000/s asked (50 %)" in text


def test_back_to_back_senders_show_max_and_are_never_flagged(tmp_path):
    from validation.compare import format_table
    from validation.report import write_report

    result = _validation(sim=[_summary(**{"blast": (None, 80_000.0)})], real=[_summary(**{"blast": (None, 12_000.0)})])
    text = format_table(result)
    row = next(line for line in text.splitlines() if line.startswith("blast"))
    assert row.split()[1] == "max"
    assert "12,000" in row and "80,000" in row
    assert "below" not in row and "offered loads" not in text
    entry = result.to_json()["senders"]["blast"]
    assert entry["requested_rate_per_s"] is None and entry["back_to_back"] and not entry["below"]
    assert "| `blast` | max | 12,000 | 80,000 | - |" in write_report([result], tmp_path).read_text()


def test_sender_section_with_a_side_that_did_not_run():
    from validation.compare import format_table

    result = _validation(sim=[_summary(**{"send.pub": (100, 100)})], real=[])
    row = next(line for line in format_table(result).splitlines() if line.startswith("send.pub"))
    assert row.split()[1:4] == ["100", "-", "100"]
    assert row.rstrip().endswith("as asked")


def test_sender_rates_of_a_simulated_run_are_read_from_its_summary():
    from validation.compare import sender_rates
    from zsim.runner import run

    raw = {"socket": [{"name": "push", "type": "PUSH", "bind": "inproc://r"}, {"name": "pull", "type": "PULL", "connect": "inproc://r"}],
           "send": [{"socket": "push", "count": 50, "rate_per_s": 1000}, {"name": "blast", "socket": "push", "count": 5}],
           "recv": [{"socket": "pull"}]}
    summary = run(spec.from_dict(raw), 0).summary
    paced, blast = sender_rates([summary], [])
    assert paced.name == "send.push" and paced.requested == pytest.approx(1000)
    assert paced.sim == [summary["senders"]["send.push"]["achieved_rate_per_s"]]
    assert blast.requested is None and blast.flag() == "-"
    # the rates are metric paths a [validation] table may compare
    assert check_metric_path("senders.send.push.achieved_rate_per_s", spec.from_dict(raw), {}) is None
