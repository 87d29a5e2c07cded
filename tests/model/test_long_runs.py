"""Runs of any length (issue 26): the shipped profile to 10^6 and 10^8 simulated seconds.

A double's step is 7.3e-12 s at 2^15 s (above the CPU model's rounding threshold: issue
26's zero-time loop) and 1.5e-8 s at 10^8 s (an engine's 0.5 us of work is 34 steps). Each
run below is short in events (a message every 1000 s, or a few seconds of traffic just
before the horizon), so every path of the model meets a large clock: inproc, tcp, ipc,
cores on (the profile's 2) and off, threads that contend for a core, pauses, both
pacings, receive timeouts, a pipe that fills and drains (throttled commands), a connect
that waits for its listener for 10^8 s. Where the numbers are not obvious, the same run
starting near t = 0 gives them: a model that does not depend on the clock's magnitude
gives the same counts, and the same CPU, when everything happens 10^8 s later.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zsim
from zsim.model.cpu import Machine
from zsim.model.kernel import Environment
from zsim.model.params import SchedulerParams

HORIZONS = (1e6, 1e8)
ENDPOINTS = {"inproc": "inproc://feed", "tcp": "tcp://127.0.0.1:5601", "ipc": "ipc://feed"}


def pipeline(transport: str, horizon: float, *, count: int, interval: float, start: float, cores: int | None = None,
             pacing: str = "after_send", recv: dict[str, Any] | None = None, options: dict[str, Any] | None = None,
             ) -> dict[str, Any]:
    """A PUSH sends ``count`` messages to a PULL (in another process unless inproc)."""
    endpoint = ENDPOINTS[transport]
    far = "main" if transport == "inproc" else "worker"
    raw: dict[str, Any] = {
        "scenario": {"name": "long", "profile": "default", "until_s": horizon},
        "process": [{"name": "main"}] + ([] if far == "main" else [{"name": far}]),
        "socket": [
            {"name": "push", "type": "PUSH", "process": "main", "bind": endpoint, "options": dict(options or {})},
            {"name": "pull", "type": "PULL", "process": far, "connect": endpoint, "options": dict(options or {})},
        ],
        "send": [{"socket": "push", "count": count, "interval_s": interval, "start_s": start, "pacing": pacing}],
        "recv": [{"socket": "pull", **(recv or {})}],
    }
    if cores is not None:
        raw["machine"] = {"cores": cores}
    return raw


def shifted(raw: dict[str, Any], offset: float) -> dict[str, Any]:
    """The same scenario with its workloads and horizon ``offset`` seconds later."""
    raw = copy.deepcopy(raw)
    raw["scenario"]["until_s"] += offset
    for table in raw.get("send", []) + raw.get("recv", []):
        table["start_s"] = table.get("start_s", 0.0) + offset
    return raw


def counts(summary: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Every integer counter of every socket, and each receiver's pauses."""
    found = {name: {k: v for k, v in sock.items() if isinstance(v, int)} for name, sock in summary["sockets"].items()}
    found["ledger"] = {k: v for k, v in summary["ledger"].items() if isinstance(v, int)}
    return found


def run(raw: dict[str, Any]) -> dict[str, Any]:
    summary = zsim.run(raw, 0).summary
    assert summary["sim_time_s"] == raw["scenario"]["until_s"]  # it reached its horizon
    return summary


# -- every path, 1,000 messages spread over the whole run ------------------------------------


@pytest.mark.parametrize("horizon", HORIZONS)
@pytest.mark.parametrize("pacing", ["after_send", "schedule"])
@pytest.mark.parametrize("cores", [None, 0], ids=["cores-2", "cores-0"])
@pytest.mark.parametrize("transport", ["inproc", "tcp", "ipc"])
def test_a_message_every_thousandth_of_the_run_reaches_the_horizon(transport, cores, pacing, horizon):
    every = horizon / 1000
    summary = run(pipeline(transport, horizon, count=1000, interval=every, start=every / 2, cores=cores, pacing=pacing))
    assert summary["sockets"]["push"]["sent"] == summary["sockets"]["pull"]["received"] == 1000
    assert summary["ledger"]["delivered"] == 1000 and summary["ledger"]["queued_at_end"] == 0
    assert ("machine" in summary) == (cores is None)


def test_the_issues_publisher_runs_past_2_15_seconds():
    """Issue 26's scenario: PUB -> SUB inproc, a message a second; it stopped at 32,768 s
    in a zero-time loop with the profile's cores, and ran to the end with cores = 0."""
    raw = {
        "scenario": {"name": "issue-26", "profile": "default", "until_s": 40_000},
        "socket": [{"name": "pub", "type": "PUB", "bind": "inproc://feed"},
                   {"name": "sub", "type": "SUB", "connect": "inproc://feed", "options": {"subscribe": [""]}}],
        # scheduled: due at 0.5, 1.5, ... whatever each send costs, so 40,000 of them
        "send": [{"socket": "pub", "interval_s": 1.0, "start_s": 0.5, "pacing": "schedule"}],
        "recv": [{"socket": "sub"}],
    }
    for cores in (None, 0):
        if cores is not None:
            raw["machine"] = {"cores": cores}
        summary = run(raw)
        assert summary["sockets"]["pub"]["sent"] == summary["sockets"]["sub"]["received"] == 40_000


# -- traffic just before the horizon: the same as near t = 0 ---------------------------------

#: each case runs from START to about START + 10 s, then again 10^8 s (or 10^6 s) later
START = 1.0
BASE_HORIZON = 20.0


def _same_run_later(raw: dict[str, Any], horizon: float) -> tuple[dict[str, Any], dict[str, Any]]:
    early = run(raw)
    late = run(shifted(raw, horizon - BASE_HORIZON))
    assert counts(late) == counts(early)
    return early, late


@pytest.mark.parametrize("horizon", HORIZONS)
@pytest.mark.parametrize("pacing", ["after_send", "schedule"])
@pytest.mark.parametrize("cores", [None, 0], ids=["cores-2", "cores-0"])
@pytest.mark.parametrize("transport", ["inproc", "tcp", "ipc"])
def test_a_burst_of_traffic_at_the_horizon_is_the_burst_at_the_start(transport, cores, pacing, horizon):
    raw = pipeline(transport, BASE_HORIZON, count=500, interval=0.01, start=START, cores=cores, pacing=pacing)
    early, late = _same_run_later(raw, horizon)
    assert late["sockets"]["pull"]["received"] == 500
    if cores is None:
        # the CPU each thread used (an engine's 0.5 us of work a message on the I/O threads)
        # does not depend on when it was used
        for name, thread in early["machine"]["threads"].items():
            assert late["machine"]["threads"][name]["cpu_s"] == pytest.approx(thread["cpu_s"], rel=1e-9)
            assert late["machine"]["threads"][name]["bursts"] == thread["bursts"]


@pytest.mark.parametrize("horizon", HORIZONS)
def test_two_busy_workers_share_one_core_at_the_horizon_as_at_the_start(horizon):
    """Contention: 200 tasks of 1 ms of CPU to two workers on one core take 0.4 s."""
    raw = pipeline("tcp", BASE_HORIZON, count=200, interval=0.0, start=START, cores=1, recv={"service_s": 0.001, "busy": True})
    raw["process"].append({"name": "worker2"})
    raw["socket"].append({"name": "pull2", "type": "PULL", "process": "worker2", "connect": ENDPOINTS["tcp"]})
    raw["recv"].append({"socket": "pull2", "service_s": 0.001, "busy": True})
    early, late = _same_run_later(raw, horizon)
    assert late["sockets"]["pull"]["received"] == late["sockets"]["pull2"]["received"] == 100
    assert late["machine"]["max_runnable"] >= 2
    for name in ("recv.pull", "recv.pull2"):
        worker = late["machine"]["threads"][name]
        assert worker["cpu_s"] == pytest.approx(early["machine"]["threads"][name]["cpu_s"], rel=1e-9)
        # it waited for the core about as long as it computed: at 10^8 s the clock's step
        # (15 ns, 1 % of a send call) batches the I/O threads' events a little differently
        assert worker["waited_s"] == pytest.approx(early["machine"]["threads"][name]["waited_s"], rel=1e-3)
        assert worker["waited_s"] == pytest.approx(worker["cpu_s"], rel=0.05)


@pytest.mark.parametrize("horizon", HORIZONS)
@pytest.mark.parametrize("cores", [None, 0], ids=["cores-2", "cores-0"])
def test_a_pausing_subscriber_drops_at_the_horizon_what_it_drops_at_the_start(cores, horizon):
    """PUB at 1,000 msg/s to a SUB with a 20-message HWM that stops reading for 50 ms every
    200 ms: it loses the same copies, and pauses as often, 10^8 s later."""
    raw = {
        "scenario": {"name": "pauses", "profile": "default", "until_s": BASE_HORIZON},
        "socket": [{"name": "pub", "type": "PUB", "bind": "inproc://feed", "options": {"sndhwm": 20}},
                   {"name": "sub", "type": "SUB", "connect": "inproc://feed", "options": {"subscribe": [""], "rcvhwm": 20}}],
        "send": [{"socket": "pub", "count": 2000, "interval_s": 0.001, "start_s": START, "pacing": "schedule"}],
        "recv": [{"socket": "sub", "start_s": START, "pause_every_s": 0.2, "pause_s": 0.05}],
    }
    if cores is not None:
        raw["machine"] = {"cores": cores}
    early, late = _same_run_later(raw, horizon)
    sub = late["sockets"]["sub"]
    assert sub["received"] + late["sockets"]["pub"]["dropped"] == 2000 and late["sockets"]["pub"]["dropped"] > 0
    paused = late["receivers"]["recv.sub"]["paused_s"]
    assert paused == pytest.approx(early["receivers"]["recv.sub"]["paused_s"], rel=1e-6)
    assert paused >= 0.05 * 7  # a pause every 0.25 s of the 2 s of traffic


@pytest.mark.parametrize("horizon", HORIZONS)
@pytest.mark.parametrize("cores", [None, 0], ids=["cores-2", "cores-0"])
def test_a_pipe_that_fills_and_drains_blocks_the_sender_as_often_at_the_horizon(cores, horizon):
    """A PUSH back to back into a 10-message pipe its reader drains at 50 us a message:
    the sender blocks, and its send calls look at commands (activate_write) at most once
    per command_throttle_s (1.3 ms); the same number of blocks 10^8 s later."""
    raw = pipeline("inproc", BASE_HORIZON, count=2000, interval=0.0, start=START, cores=cores,
                   recv={"service_s": 50e-6, "start_s": START}, options={"sndhwm": 10, "rcvhwm": 10})
    early, late = _same_run_later(raw, horizon)
    assert late["sockets"]["push"]["sent"] == late["sockets"]["pull"]["received"] == 2000
    assert late["sockets"]["push"]["blocked_count"] > 10
    assert late["sockets"]["push"]["blocked_s"] == pytest.approx(early["sockets"]["push"]["blocked_s"], rel=1e-4)


@pytest.mark.parametrize("horizon", HORIZONS)
@pytest.mark.parametrize("cores", [None, 0], ids=["cores-2", "cores-0"])
def test_receive_timeouts_fire_as_often_at_the_horizon(cores, horizon):
    """A PULL with rcvtimeo = 100 ms retrying while the PUSH sends every 0.5 s over tcp."""
    raw = pipeline("tcp", BASE_HORIZON, count=10, interval=0.5, start=START, cores=cores,
                   recv={"start_s": START, "on_timeout": "retry"})
    raw["socket"][1]["options"]["rcvtimeo"] = 100
    early, late = _same_run_later(raw, horizon)
    assert late["sockets"]["pull"]["received"] == 10
    assert late["sockets"]["pull"]["recv_again"] > 40  # 4 timeouts between messages, then until the end


# -- a connect that waits 10^8 s for its listener ---------------------------------------------


def _late_listener(options: dict[str, Any], bind_at: float) -> dict[str, Any]:
    raw = pipeline("tcp", bind_at + 10.0, count=3, interval=0.0, start=bind_at - 1.0, cores=0)
    raw["socket"][0]["open_at_s"] = bind_at  # the PUSH binds late: its peer keeps reconnecting
    raw["socket"][0]["bind"], raw["socket"][1]["connect"] = raw["socket"][1]["connect"], raw["socket"][0]["bind"]
    raw["send"][0]["start_s"] = bind_at
    raw["socket"][1]["options"].update(options)
    return raw


@pytest.mark.timeout(60)
def test_a_connect_retrying_for_10_8_seconds_attempts_within_an_interval_of_its_listener():
    """Default reconnect_ivl (100 ms, plus up to 100 ms of jitter): the connect's next
    attempt after the PUSH binds comes within 200 ms, and the messages follow. (Replaying
    every attempt of 10^8 s, one random draw each, took half an hour.)"""
    bind_at = 1e8 - 10.0
    result = zsim.run(_late_listener({}, bind_at), 0)
    times = result.messages["time"]
    assert len(times) == 3 and result.summary["sockets"]["pull"]["received"] == 3
    assert bind_at < times.min() < bind_at + 0.2 + 0.01  # an attempt, then the handshake and the hop


@pytest.mark.timeout(60)
def test_a_connect_with_backoff_attempts_on_its_period_after_10_8_seconds():
    """reconnect_ivl = reconnect_ivl_max = 100 ms: attempts every 0.1 s from t = 0, so the
    one after a bind at 10^8 - 0.05 s is at 10^8 s (not 0.1 s after the bind)."""
    result = zsim.run(_late_listener({"reconnect_ivl": 100, "reconnect_ivl_max": 100}, 1e8 - 0.05), 0)
    times = result.messages["time"]
    assert len(times) == 3
    assert 1e8 < times.min() < 1e8 + 0.01


# -- the arithmetic of a burst's end, at any time ---------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=st.floats(min_value=0.0, max_value=1e12),
    bursts=st.lists(st.tuples(st.floats(min_value=0.0, max_value=1e-4),  # when it starts, after ``start``
                              st.floats(min_value=1e-15, max_value=1e-3)),  # its CPU seconds
                    min_size=1, max_size=6),
    cores=st.integers(min_value=1, max_value=3),
    switch=st.sampled_from([0.0, 1.3e-6]),
)
def test_every_burst_ends_at_or_after_its_start_and_every_firing_ends_one(start, bursts, cores, switch):
    """Bursts of any length on a clock of any magnitude: each completes once, no earlier than
    its start and its CPU work allow, and the machine's timer fires at most once per burst
    (a firing that completed nothing was the zero-time loop of issue 26)."""
    env = Environment(initial_time=start)
    machine = Machine(env, SchedulerParams(cores=cores, context_switch_s=switch, wakeup_s=0.0, timeslice_s=0.0035))
    firings = 0
    timer, complete = machine.timer, machine._complete

    def counted(event: Any) -> None:
        nonlocal firings
        if machine.armed and event is timer._event:  # not withdrawn nor re-armed since (Machine._complete)
            firings += 1
            assert firings <= len(bursts), "a firing completed no burst"
        complete(event)

    timer.set_fn(counted)
    ended: dict[int, float] = {}
    began: dict[int, float] = {}
    for i, (after, cpu) in enumerate(bursts):
        thread = machine.thread(f"t{i}", "app", "p")

        def begin(i: int = i, thread: Any = thread, cpu: float = cpu) -> None:
            began[i] = env.now
            thread.run_then(cpu, lambda: ended.setdefault(i, env.now))

        env.call_later(after, begin)
    env.run()
    assert sorted(ended) == list(range(len(bursts)))
    for i, (_after, cpu) in enumerate(bursts):
        assert ended[i] >= began[i]
        # no faster than a core of its own, but for rounding: the clock's step at its end
        # and the work left below DONE_S that ends with another burst
        assert ended[i] - began[i] >= cpu - 2 * math.ulp(ended[i]) - 2e-12
    assert machine.running == [] and firings <= len(bursts)


@settings(max_examples=300, deadline=None)
@given(now=st.floats(min_value=0.0, max_value=1e15), when=st.floats(min_value=0.0, max_value=1e15))
def test_a_timer_armed_at_a_time_fires_at_that_very_time(now, when):
    """``arm_at(when)`` fires with ``clock.now == when`` (now if ``when`` is past): not at
    ``now + (when - now)``, which rounds to a neighbour of ``when`` when it is far ahead."""
    env = Environment(initial_time=now)
    fired: list[float] = []
    env.timer(lambda: fired.append(env.now)).arm_at(when)
    env.fast_timer(lambda _event: fired.append(env.now)).arm_at(when)
    env.run()
    assert fired == [max(now, when)] * 2
