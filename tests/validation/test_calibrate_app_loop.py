"""``measure_app_loop``: what it runs on the harness and how it turns the runs into
``send_loop_s`` and ``recv_loop_s``, with the timings stubbed (the timings themselves are
the machine's; the arithmetic and the choice of runs are the code's)."""

from __future__ import annotations

import statistics

import pytest

import validation.calibrate.app_loop as cal
import validation.harness as harness
import zsim
from zsim.errors import EnvironmentFault


def _stub(monkeypatch, summaries: list[dict], bare_send: float, bare_recv: float) -> list[dict]:
    """Stub the bare loops and the harness; return the scenarios the harness was given."""
    given: list[dict] = []
    replies = iter(summaries)

    def fake_run_real(raw, seed, timeout_s):
        given.append(raw)
        return next(replies)

    monkeypatch.setattr(harness, "run_real", fake_run_real)
    monkeypatch.setattr(cal, "_time_send_loop", lambda sock, count, payload: bare_send)
    monkeypatch.setattr(cal, "_time_recv_loop", lambda sock, count: bare_recv)
    return given


def _summary(send_start: float | None, per_send: float, recv_first: float, per_recv: float, count: int,
             received: int | None = None) -> dict:
    return {
        "senders": {"drops": {"finished_at_s": None if send_start is None else send_start + count * per_send}},
        "sockets": {"pull": {"received": count if received is None else received, "first_recv_s": recv_first,
                             "last_recv_s": recv_first + (count - 1) * per_recv}},
    }


def test_the_loop_cost_is_the_harness_attempt_less_the_bare_call_and_overlapping_runs_are_left_out(monkeypatch):
    count = 20_000  # quick
    recv_start = 0.2 + count * 10e-6 + 0.3
    send_start = recv_start + count * 10e-6 + 0.3
    summaries = [
        _summary(send_start, 3.0e-6, recv_start, 2.0e-6, count),
        # the PULL was still draining when the PUB started: the send timing is left out,
        # the drain (complete) is kept
        _summary(send_start, 9.0e-6, send_start - count * 1e-6, 2.4e-6, count),
    ]
    given = _stub(monkeypatch, summaries, bare_send=0.5e-6, bare_recv=0.25e-6)
    out = cal.measure_app_loop(quick=True)
    assert len(given) == 2
    assert out["send_loop_s"] == pytest.approx(3.0e-6 - 0.5e-6, rel=1e-9)
    assert out["recv_loop_s"] == pytest.approx(statistics.median([2.0e-6, 2.4e-6]) - 0.25e-6, rel=1e-9)
    assert out["send_attempt_s"]["n"] == 1 and out["recv_message_s"]["n"] == 2
    assert (out["bare_send_s"], out["bare_recv_s"], out["count_per_run"], out["size_bytes"]) == (0.5e-6, 0.25e-6, count, 64)


def test_a_drain_that_missed_messages_or_a_pub_that_never_finished_is_one_line_not_a_figure(monkeypatch):
    count = 20_000
    recv_start = 0.2 + count * 10e-6 + 0.3
    summaries = [_summary(None, 0.0, recv_start, 2.0e-6, count, received=count - 1)] * 2
    _stub(monkeypatch, summaries, bare_send=0.5e-6, bare_recv=0.25e-6)
    # never 0.0 from max(0.0, nan): a loop cost that looks measured
    with pytest.raises(EnvironmentFault, match=r"^calibrate: harness loop.send_cpu_s: no harness run measured it .*quieter machine$"):
        cal.measure_app_loop(quick=True)


def test_a_loop_cheaper_than_the_bare_call_is_zero_not_negative(monkeypatch):
    count = 20_000
    recv_start = 0.2 + count * 10e-6 + 0.3
    send_start = recv_start + count * 10e-6 + 0.3
    summaries = [_summary(send_start, 0.4e-6, recv_start, 0.2e-6, count)] * 2
    _stub(monkeypatch, summaries, bare_send=0.5e-6, bare_recv=0.25e-6)
    out = cal.measure_app_loop(quick=True)
    assert (out["send_loop_s"], out["recv_loop_s"]) == (0.0, 0.0)


def test_the_harness_scenario_fills_then_drains_then_drops_one_after_the_other(monkeypatch):
    """The scenario it hands the harness, run in the simulator: the PULL takes every queued
    message, the PUB (no subscriber) never blocks, and the three phases do not overlap,
    so no two of the process's threads compete for the GIL while one is timed."""
    count = 20_000
    recv_start = 0.2 + count * 10e-6 + 0.3
    send_start = recv_start + count * 10e-6 + 0.3
    given = _stub(monkeypatch, [_summary(send_start, 2e-6, recv_start, 2e-6, count)] * 2, 0.0, 0.0)
    cal.measure_app_loop(quick=True)
    raw = given[0]
    result = zsim.run(raw, seed=0)
    summary = result.summary
    assert raw["send"][0]["count"] == count
    drops, fill = summary["senders"]["drops"], summary["senders"]["fill"]
    assert drops["sent"] == count and drops["finished_at_s"] is not None  # no subscriber: nothing to block on
    assert summary["sockets"]["pull"]["received"] == count
    assert fill["finished_at_s"] < raw["recv"][0]["start_s"]
    copies = result.messages_frame()
    drained = copies[copies.socket == "pull"]
    assert len(drained) == count and drained.end_s.max() < raw["send"][0]["start_s"]
