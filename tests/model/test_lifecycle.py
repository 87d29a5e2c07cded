"""Connection lifecycle: handshakes, IMMEDIATE, LINGER and context termination,
disconnects, crashes and reconnects, CONFLATE. Simulator mechanics, exact where libzmq is."""

from __future__ import annotations

import numpy as np
import pytest

import zsim


def two_process(push_opts=None, pull_opts=None, transport="tcp", **extra) -> dict:
    endpoint = "tcp://127.0.0.1:5700" if transport == "tcp" else "ipc://life"
    raw = {
        "scenario": {"name": "life", **extra.pop("scenario", {})},
        "process": extra.pop("process", [{"name": "a"}, {"name": "b"}]),
        "socket": [
            {"name": "push", "type": "PUSH", "process": "a", "connect": [endpoint], "options": push_opts or {}},
            {"name": "pull", "type": "PULL", "process": "b", "bind": [endpoint], "options": pull_opts or {}},
        ],
    }
    raw.update(extra)
    return raw


def test_linger_minus_one_waits_for_the_engine_not_the_reader():
    # 50 messages of 100 kB to a PULL that reads one per 10 ms; the sender exits at once.
    raw = two_process(
        {"sndhwm": 1000}, {"rcvhwm": 1000}, transport="ipc",
        process=[{"name": "a", "exit_after_sends": True}, {"name": "b"}],
        send=[{"socket": "push", "count": 50, "size_bytes": 100_000, "start_s": 0.01}],
        recv=[{"socket": "pull", "service_s": 0.01}],
    )
    s = zsim.run(raw, 1).summary
    assert s["ledger"]["delivered"] == 50  # LINGER -1: nothing lost
    proc = s["processes"]["a"]
    # zmq_ctx_term returned once the engine had written the last message into the kernel,
    # long before the reader had read them all (~0.5 s)
    assert proc["exit_completed_s"] < 0.3
    assert not proc["term_blocked"]


def test_linger_zero_discards_what_is_queued():
    raw = two_process(
        {"sndhwm": 1000, "linger": 0}, {"rcvhwm": 5},
        process=[{"name": "a", "exit_at_s": 0.5}, {"name": "b"}],
        send=[{"socket": "push", "count": 2000, "size_bytes": 100_000, "start_s": 0.01, "dontwait": True}],
    )
    s = zsim.run(raw, 1).summary
    lost = s["ledger"]["lost_by_rule"]
    assert lost.get("close_linger", 0) > 0
    assert s["processes"]["a"]["exit_completed_s"] == pytest.approx(0.5)
    assert s["ledger"]["delivered"] == 0


def test_linger_positive_gives_up_after_the_linger_time():
    raw = two_process(
        {"sndhwm": 1000, "linger": 200}, {"rcvhwm": 5},
        process=[{"name": "a", "exit_at_s": 0.5}, {"name": "b"}],
        send=[{"socket": "push", "count": 2000, "size_bytes": 100_000, "start_s": 0.01, "dontwait": True}],
    )
    s = zsim.run(raw, 1).summary
    assert s["processes"]["a"]["exit_completed_s"] == pytest.approx(0.7)
    assert s["ledger"]["lost_by_rule"].get("close_linger", 0) > 0


def test_linger_minus_one_with_a_stalled_peer_blocks_term_forever():
    raw = two_process(
        {"sndhwm": 1000}, {"rcvhwm": 5},
        process=[{"name": "a", "exit_at_s": 0.5}, {"name": "b"}],
        send=[{"socket": "push", "count": 2000, "size_bytes": 100_000, "start_s": 0.01, "dontwait": True}],
        scenario={"until_s": 5.0},
    )
    s = zsim.run(raw, 1).summary
    assert s["processes"]["a"]["term_blocked"]
    assert s["ledger"]["queued_at_end"] > 0
    assert s["ledger"]["lost_on_close"] == 0


def test_push_parks_messages_on_a_peer_that_is_not_there_unless_immediate():
    def scenario(immediate: bool) -> dict:
        return {
            "scenario": {"name": "park", "until_s": 1.0},
            "process": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
            "socket": [
                {"name": "push", "type": "PUSH", "process": "a", "connect": ["tcp://127.0.0.1:5801", "tcp://127.0.0.1:5802"],
                 "options": {"sndhwm": 10, "immediate": immediate}},
                {"name": "up", "type": "PULL", "process": "b", "bind": ["tcp://*:5801"]},
                {"name": "down", "type": "PULL", "process": "c", "bind": ["tcp://*:5802"], "open_at_s": 10.0},
            ],
            "send": [{"socket": "push", "count": 100, "interval_s": 0.001, "start_s": 0.05}],
            "recv": [{"socket": "up"}],
        }

    parked = zsim.run(scenario(False), 1).summary
    # round-robin hands every other message to the absent peer until its pipe holds SNDHWM
    assert parked["sockets"]["up"]["received"] == 90
    assert parked["ledger"]["queued_at_end"] == 10
    immediate = zsim.run(scenario(True), 1).summary
    assert immediate["sockets"]["up"]["received"] == 100
    assert immediate["ledger"]["queued_at_end"] == 0


def test_crash_and_restart_reconnects_after_reconnect_ivl():
    raw = two_process(
        {"sndhwm": 50}, {"rcvhwm": 50},
        process=[{"name": "a"}, {"name": "b", "crash_at_s": 1.0, "restart_at_s": 2.0}],
        send=[{"socket": "push", "count": 3000, "interval_s": 0.001, "start_s": 0.01}],
        recv=[{"socket": "pull", "service_s": 0.0005}],
        scenario={"until_s": 4.0},
    )
    result = zsim.run(raw, 3)
    s = result.summary
    # delivered before the crash, nothing between crash and reconnect, then again
    table = result.messages
    delivered_times = sorted(t for t, state in zip(table["time"], table["state"], strict=True) if state == 0)
    gap = [t for t in delivered_times if 1.0 < t < 2.0]
    assert gap == []
    after = [t for t in delivered_times if t >= 2.0]
    # the connect side retries every 100-199 ms: the first retry after the restart
    assert after and 2.0 < after[0] < 2.2
    # the PUSH (connect side, IMMEDIATE=0) kept its pipe: queued messages flow after
    assert s["ledger"]["delivered"] > 2000
    lost = s["ledger"]["lost_by_rule"]
    assert set(lost) <= {"crash", "kernel_lost", "disconnect"}


def test_bind_side_drops_queued_outbound_on_disconnect():
    # A bound PUSH to a connecting PULL that crashes: the bind side's pipe for that peer
    # is destroyed with what it held (reference 5.4).
    raw = {
        "scenario": {"name": "bindside", "until_s": 3.0},
        "process": [{"name": "a"}, {"name": "b", "crash_at_s": 1.0}],
        "socket": [
            {"name": "push", "type": "PUSH", "process": "a", "bind": ["tcp://*:5803"], "options": {"sndhwm": 20, "sndtimeo": 0}},
            {"name": "pull", "type": "PULL", "process": "b", "connect": ["tcp://127.0.0.1:5803"], "options": {"rcvhwm": 20}},
        ],
        "send": [{"socket": "push", "count": 50, "size_bytes": 200_000, "start_s": 0.05, "interval_s": 0.01}],
    }
    s = zsim.run(raw, 1).summary
    assert s["ledger"]["discarded_by_rule"].get("disconnect", 0) > 0
    assert s["ledger"]["queued_at_end"] == 0


def test_conflate_keeps_only_the_newest():
    raw = {
        "scenario": {"name": "conflate", "profile": "ideal"},
        "socket": [
            {"name": "pub", "type": "PUB", "bind": ["inproc://c"]},
            {"name": "sub", "type": "SUB", "connect": ["inproc://c"], "options": {"conflate": True, "subscribe": [""]}},
        ],
        "send": [{"socket": "pub", "count": 100, "interval_s": 0.001, "start_s": 0.01}],
        "recv": [{"socket": "sub", "service_s": 0.0095}],
    }
    s = zsim.run(raw, 1).summary
    # inproc: the connector's CONFLATE makes both directions single-slot pipes
    assert s["ledger"]["dropped_by_rule"] == {"conflated": s["ledger"]["dropped"]}
    assert 10 <= s["ledger"]["delivered"] <= 12
    assert s["ledger"]["delivered"] + s["ledger"]["dropped"] == 100
    assert max(p["max_depth"] for p in s["pipes"]) == 1


def test_reconnect_ivl_and_late_binder():
    # The connect side tries at once, then every reconnect_ivl + U(0, ivl) ms until the
    # binder appears; the first message arrives within one interval of the bind.
    raw = {
        "scenario": {"name": "late", "profile": "ideal"},
        "process": [{"name": "a"}, {"name": "b"}],
        "socket": [
            {"name": "push", "type": "PUSH", "process": "a", "connect": ["tcp://127.0.0.1:5804"], "options": {"reconnect_ivl": 500}},
            {"name": "pull", "type": "PULL", "process": "b", "bind": ["tcp://*:5804"], "open_at_s": 1.0},
        ],
        "send": [{"socket": "push", "count": 1, "start_s": 0.0}],
        "recv": [{"socket": "pull"}],
    }
    firsts = []
    for seed in range(20):
        table = zsim.run(raw, seed).messages
        firsts.append(float(table["time"][0]))
    assert all(1.0 <= t < 2.0 for t in firsts)
    assert len(set(round(t, 6) for t in firsts)) > 5  # jittered


def test_retrying_longer_leaves_the_hop_latencies_alone():
    # A tcp connection draws its reconnect jitter, its handshake and its hop latencies from
    # three streams of its own: a binder that appears later (more reconnect attempts, more
    # jitter drawn) changes nothing once the connection carries messages. When the three
    # shared one stream, every latency here differed.
    def latencies(bind_at: float, seed: int) -> np.ndarray:
        raw = {
            "scenario": {"name": "retry", "until_s": 5.0},
            "process": [{"name": "a"}, {"name": "b"}],
            "socket": [
                {"name": "push", "type": "PUSH", "process": "a", "connect": ["tcp://127.0.0.1:5805"], "options": {"reconnect_ivl": 100}},
                {"name": "pull", "type": "PULL", "process": "b", "bind": ["tcp://*:5805"], "open_at_s": bind_at},
            ],
            "send": [{"socket": "push", "count": 200, "interval_s": 0.005, "start_s": 3.5}],
            "recv": [{"socket": "pull"}],
        }
        table = zsim.run(raw, seed).messages
        return np.asarray(table["time"]) - np.asarray(table["t0"])

    for seed in (0, 1):
        early, late = latencies(0.5, seed), latencies(2.5, seed)
        assert len(early) == 200 and len(np.unique(early)) > 100  # random, not a constant
        assert np.array_equal(early, late)


def test_rcvtimeo_retry_loop_ends_when_nothing_can_move():
    raw = {
        "socket": [
            {"name": "push", "type": "PUSH", "bind": ["inproc://a"]},
            {"name": "pull", "type": "PULL", "connect": ["inproc://a"], "options": {"rcvtimeo": 100}},
        ],
        "send": [{"socket": "push", "count": 5, "interval_s": 0.01}],
        "recv": [{"socket": "pull"}],
    }
    s = zsim.run(raw, 1).summary
    assert s["ledger"]["delivered"] == 5
    assert s["sockets"]["pull"]["recv_again"] >= 1
    assert s["sim_time_s"] < 1.0
    # with a horizon the receiver keeps polling until it
    raw["scenario"] = {"until_s": 2.0}
    s = zsim.run(raw, 1).summary
    assert s["sockets"]["pull"]["recv_again"] >= 15


def test_a_finished_sender_does_not_unblock_a_receiver_on_the_same_socket():
    # A DEALER that sends 10 requests, then keeps receiving the replies: the sender's
    # end must not cancel the receiver's blocked recv (one waiter per blocked call).
    raw = {
        "scenario": {"name": "dealer-both", "profile": "ideal"},
        "socket": [
            {"name": "client", "type": "DEALER", "connect": ["inproc://d"]},
            {"name": "server", "type": "ROUTER", "bind": ["inproc://d"]},
        ],
        "send": [{"socket": "client", "count": 10, "start_s": 0.01}],
        "recv": [{"socket": "server", "reply": True, "service_s": 0.1}, {"socket": "client"}],
    }
    s = zsim.run(raw, 1).summary
    assert s["sockets"]["client"]["received"] == 10
    assert s["ledger"]["queued_at_end"] == 0


def test_pipeline_stage_forwards_to_another_socket():
    """zguide divide and conquer: ventilator PUSH -> worker PULL | work | PUSH -> sink PULL."""
    raw = {
        "scenario": {"name": "stage", "profile": "ideal"},
        "process": [{"name": "v"}, {"name": "w"}],
        "socket": [
            {"name": "vent", "type": "PUSH", "process": "v", "bind": ["tcp://*:5900"]},
            {"name": "sink", "type": "PULL", "process": "v", "bind": ["tcp://*:5901"]},
            {"name": "w_in", "type": "PULL", "process": "w", "connect": ["tcp://127.0.0.1:5900"]},
            {"name": "w_out", "type": "PUSH", "process": "w", "connect": ["tcp://127.0.0.1:5901"], "options": {"sndhwm": 2}},
        ],
        "send": [{"socket": "vent", "count": 20, "start_s": 0.1}],
        "recv": [{"socket": "w_in", "service_s": 0.01, "forward_to": "w_out", "reply_size_bytes": 3}, {"socket": "sink", "start_s": 1.0}],
    }
    s = zsim.run(raw, 1).summary
    assert s["sockets"]["sink"]["received"] == 20
    assert s["sockets"]["w_out"]["sent"] == 20
    # the sink starts reading at 1.0 s, after the stage's 20 x 10 ms of work: every result
    # waited in the w_out -> sink path (HWMs and kernel), none was dropped
    assert s["ledger"]["dropped"] == 0 and s["ledger"]["delivered"] == 40
    from zsim import spec
    from zsim.errors import ScenarioError

    bad = dict(raw, recv=[{"socket": "w_in", "forward_to": "sink"}])
    with pytest.raises(ScenarioError, match="forwards inside its own process"):
        spec.from_dict(bad)


# ----------------------------------------------------------------------------------------
# the cost of waking a sleeping reader thread


def _fanout(subscribers: int, transport: str = "tcp") -> dict:
    endpoint = "tcp://127.0.0.1:5950" if transport == "tcp" else "inproc://fan"
    same = transport == "inproc"
    return {
        "scenario": {"name": f"fanout-{subscribers}"},
        "process": [{"name": "p"}] + ([] if same else [{"name": f"s{i}"} for i in range(subscribers)]),
        "socket": [{"name": "pub", "type": "PUB", "process": "p", "bind": [endpoint]}]
        + [{"name": f"sub{i}", "type": "SUB", "process": "p" if same else f"s{i}", "connect": [endpoint],
            "options": {"subscribe": [""]}} for i in range(subscribers)],
        "send": [{"socket": "pub", "count": 200, "interval_s": 0.001, "start_s": 0.1}],
        "recv": [{"socket": f"sub{i}"} for i in range(subscribers)],
    }


def test_one_wake_per_io_thread_not_per_pipe():
    """A PUB's ten tcp pipes are read by one I/O thread (one mailbox): each paced send wakes
    it once, so ten subscribers cost the sender what one costs (libzmq mailbox_t::send)."""
    from zsim.profile import load

    wake = load("default").transport("tcp").send_wake_cost
    assert wake is not None
    one = zsim.run(_fanout(1), seed=3).summary["senders"]["send.pub"]["finished_at_s"]
    ten = zsim.run(_fanout(10), seed=3).summary["senders"]["send.pub"]["finished_at_s"]
    per_send_wake = max(wake[1])  # the cost after ~1 ms of sleep
    # every send paid about one wake-up (200 sends, 1 ms apart)
    assert one > 0.1 + 199 * 0.001 + 100 * per_send_wake
    # ten pipes, one thread: not ten wake-ups per send
    assert abs(ten - one) < 20 * per_send_wake, (one, ten, per_send_wake)


def test_inproc_wakes_each_reading_thread():
    """Over inproc each SUB's own application thread reads its pipe: ten of them are ten
    wake-ups per paced send, so the sender is slower than with one."""
    from zsim.profile import load

    wake = load("default").transport("inproc").send_wake_cost
    one = zsim.run(_fanout(1, "inproc"), seed=3).summary["senders"]["send.pub"]["finished_at_s"]
    ten = zsim.run(_fanout(10, "inproc"), seed=3).summary["senders"]["send.pub"]["finished_at_s"]
    assert ten - one > 200 * 5 * min(wake[1]), (one, ten)


def test_an_engine_stuck_on_a_full_kernel_does_not_keep_its_io_thread_awake():
    """A PUB with one stalled and one live tcp subscriber: once the stalled link's kernel
    is full, that engine waits for POLLOUT and the shared I/O thread sleeps between sends,
    so every paced send pays a wake-up as with the live subscriber alone."""

    def scenario(stalled: bool) -> dict:
        sc = _fanout(2 if stalled else 1)
        for send in sc["send"]:
            send["size_bytes"] = 65536
            send["count"] = 300
        if stalled:
            sc["recv"] = [{"socket": "sub0"}]  # sub1 never reads: with RCVHWM 1 its
            sc["socket"][2]["options"]["rcvhwm"] = 1  # kernel fills after ~50 messages
        return sc

    alone = zsim.run(scenario(False), seed=3).summary
    with_stalled = zsim.run(scenario(True), seed=3).summary
    assert with_stalled["ledger"]["dropped"] == 0 and with_stalled["sockets"]["sub0"]["received"] == 300
    kernel = next(link for link in with_stalled["links"] if "sub1" in link["name"])["max_kernel_bytes"]
    assert max(kernel.values()) > 2_000_000  # the stalled link's kernel did fill
    finished_alone = alone["senders"]["send.pub"]["finished_at_s"]
    finished = with_stalled["senders"]["send.pub"]["finished_at_s"]
    # the sender is not faster for having a stuck subscriber (it was, by ~30 us a send,
    # when the stuck pipe counted as keeping the I/O thread awake)
    assert finished >= finished_alone - 0.002, (finished_alone, finished)
