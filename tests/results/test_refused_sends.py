"""Refused sends (zmq.Again under DONTWAIT or SNDTIMEO) as a first-class outcome (issue 41,
finding 4): a DONTWAIT sender whose sends a pausing reader's full pipe refuses has its
refused fraction as a built-in metric with the zero-event bound a loss fraction gets,
``zsim explain`` tells the refusals instead of "No copy was dropped", ``rate_not_achieved``
names them rather than the pacing, and ``zsim compare`` weighs them like losses."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest

from zsim import compare as cmp
from zsim import spec
from zsim.explain import explain
from zsim.report_run import SeriesRecorder, headline
from zsim.runner import run
from zsim.stats import runs_to_bound, zero_upper
from zsim.sweep import report, run_sweep

#: A PUSH sending 1,000 messages/s on a fixed schedule with DONTWAIT to a PULL that keeps up
#: on average (0.5 ms a message) but pauses 60 ms every 250 ms: at SNDHWM = RCVHWM = 10 the
#: inproc pipe (20) fills in each pause and the sends then are refused with zmq.Again.
FEED: dict[str, Any] = {
    "scenario": {"name": "dontwait-feed", "until_s": 1.2},
    "socket": [
        {"name": "pull", "type": "PULL", "bind": "inproc://feed", "options": {"rcvhwm": 10}},
        {"name": "push", "type": "PUSH", "connect": "inproc://feed", "options": {"sndhwm": 10}},
    ],
    "send": [{"socket": "push", "duration_s": 1.0, "rate_per_s": 1000, "dontwait": True, "size_bytes": 64, "start_s": 0.1}],
    "recv": [{"socket": "pull", "service_s": 0.0005, "pause_every_s": 0.25, "pause_s": 0.06}],
}


def feed_run(raw: dict[str, Any] = FEED) -> tuple[Any, Any, Any]:
    scenario = spec.from_dict(copy.deepcopy(raw))
    recorder = SeriesRecorder()
    result = run(scenario, 0, recorder=recorder)
    return scenario, result, recorder.result


def test_a_refused_fraction_at_zero_gets_the_bound_over_attempts_and_the_runs_note(tmp_path: Path) -> None:
    sweep = {
        "sweep": {"name": "dontwait", "replications": 6, "seed": 3},
        "base": copy.deepcopy(FEED),
        "axes": {"socket": {"push": {"options": {"sndhwm": [10, 5000]}}}},
        "link": {"socket.pull.options.rcvhwm": "socket.push.options.sndhwm"},
        "report": {"threshold": [{"metric": "sender.send.push.refused_fraction", "below": 0.01,
                                  "minimise": "socket.push.options.sndhwm"}]},
    }
    run_sweep(sweep, tmp_path, engine="serial", stream=None)
    results = report.SweepResults(tmp_path / "sweep=dontwait")
    frame = results.ok()
    metric = "sender.send.push.refused_fraction"
    # the built-in metric is again / attempts, row by row
    assert (frame[metric] == frame["sender.send.push.again"] / frame["sender.send.push.attempts"]).all()
    at_10 = frame[frame["socket.push.options.sndhwm"] == 10]
    at_5000 = frame[frame["socket.push.options.sndhwm"] == 5000]
    assert (at_10["sender.send.push.again"] > 50).all() and (at_5000["sender.send.push.again"] == 0).all()
    (answer,) = report.thresholds(results, sweep["report"]["threshold"][0]).to_dict("records")
    attempts = int(at_5000["sender.send.push.attempts"].sum())
    bound = zero_upper(attempts)
    # not "none up to 5000": 5000 answers by the 95 % bound, the rule of three over the
    # attempts the six runs made, with what six runs without a refusal say on their own
    assert answer["smallest_by_upper_ci"] == 5000 and answer["smallest_by_mean"] == 5000
    assert answer["metric_upper_ci_there"] == pytest.approx(bound)
    assert (f"no run refused any send at 5000 ({attempts:,} attempts in 6 runs): the bound there, {100 * bound:.3g} %, is the "
            "rule of three over attempts, which assumes they are refused one by one; refusals come in bursts, and over runs, "
            f"which are independent, none in 6 says only that a run refuses some in up to {100 * zero_upper(6):.0f} % of runs "
            f"(95 %; {runs_to_bound(0.05)} runs would bound that at 5 %)") in answer["answer"]


def test_explain_tells_the_refused_sends_instead_of_no_copy_was_dropped() -> None:
    scenario, result, series = feed_run()
    again = result.summary["senders"]["send.push"]["again"]
    assert again > 50 and result.summary["ledger"]["dropped"] == 0
    story = explain(result, series, scenario)
    text = story.text()
    assert "No copy was dropped, lost or discarded during the run." not in text
    assert (f"{again:,} sends were refused (zmq.Again): all by send[push]; a refused send never enters a pipe, and no copy that "
            "was sent was dropped, lost or discarded.") in text
    # one episode per pause of the reader (at 250, 560 and 870 ms), every refused send in one of them
    assert len(story.refusals) == 3 and sum(r.sends for r in story.refusals) == again
    first = story.refusal_paragraphs()[0]
    assert first.startswith(f"Refused sends 1: from {story.refusals[0].start_s * 1e3:.3g} ms to ")
    assert "sends of send[push] on PUSH push were refused (zmq.Again). A PUSH refuses a send (EAGAIN) when no pipe it may send " \
           "on has room, with DONTWAIT (dontwait = true)" in first
    # the writer counts what the paused reader took only every LWM (10) reads: its view of the
    # pipe (HWM 10 + 10 over inproc) was full while the pipe held 15
    assert ("Its pipe push->pull held up to 15 messages during the episode, below its HWM of 20: push refused on its own stale "
            "view of it. The pipe's reader, pull, reports what it took only every LWM = 10 reads") in first
    assert "recv[pull] pauses for 60 ms about every 250 ms: it was paused from" in first
    # when and how many, as the run recorded them
    assert story.to_dict()["refused"] == {"send[push]": again}
    # the run page's answer says it first, not "every copy reached"
    assert headline(result.summary, scenario)[0].startswith(f"send.push had {again:,} of its ")


def test_rate_not_achieved_names_the_refused_sends_not_the_pacing() -> None:
    _, result, _ = feed_run()
    (warning,) = [w for w in result.summary["warnings"] if w["code"] == "rate_not_achieved"]
    sender = result.summary["senders"]["send.push"]
    attempted = sender["attempts"] / sender["active_s"]
    assert attempted >= 950  # the schedule kept pace (Poisson, 1,000/s asked): the refusals are the whole shortfall
    assert (f"it attempted {attempted:,.0f} sends/s, but {sender['again']:,} of its {sender['attempts']:,} sends were refused "
            "(zmq.Again: no pipe had room, under DONTWAIT or SNDTIMEO)") in warning["message"]
    assert "the refused sends, not its pacing, are the shortfall" in warning["message"]
    assert "pacing = \"schedule\" keeps a fixed schedule" not in warning["message"]


def test_compare_weighs_refused_sends_like_losses() -> None:
    small = copy.deepcopy(FEED)
    large = copy.deepcopy(FEED)
    for raw, hwm in ((small, 10), (large, 5000)):
        for sock in raw["socket"]:
            sock["options"] = {"sndhwm": hwm} if sock["name"] == "push" else {"rcvhwm": hwm}
    comparison = cmp.compare([small, large], replications=3, engine="serial", stream=None,
                             metrics=["sender.send.push.refused_fraction", "socket.push.send_refused_fraction"])
    for metric in comparison.metrics:
        assert (metric.prefers, metric.family) == ("lower", "refused sends")
        assert metric.differences[1] is not None and metric.differences[1].verdict == "better"
    text = cmp.format_text(comparison)
    assert "sender.send.push.refused_fraction - refused send fraction (zmq.Again) of send.push; lower is better (refused sends)" in text
    # no run of the larger HWM refused any: its interval is the zero-event bound over runs
    assert f"none in 3 runs: some in up to {100 * zero_upper(3):.0f} % of runs" in text
    assert math.isclose(comparison.metrics[0].samples[1].mean or 0.0, 0.0)
