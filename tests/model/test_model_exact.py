"""Exact behaviours of libzmq 4.3.5 that the model must reproduce to the message.

Every number asserted here follows from the libzmq source (cited per test) and, where the
reference marks it [measured], from real pyzmq runs; ``tests/validation/test_exact_vs_real.py`` runs the
same situations on real sockets.
"""

from __future__ import annotations

import pytest

from support import pipe, run, scenario


def push_pull(sndhwm: int, rcvhwm: int, *, transport: str = "inproc", count: int = 5000, **extra) -> dict:
    endpoint = {"inproc": "inproc://x", "tcp": "tcp://127.0.0.1:5555", "ipc": "ipc://x"}[transport]
    return scenario(
        {"name": "push", "type": "PUSH", "connect": [endpoint], "open_at_s": 0.001, "options": {"sndhwm": sndhwm, "sndtimeo": 0}},
        {"name": "pull", "type": "PULL", "bind": [endpoint], "options": {"rcvhwm": rcvhwm}},
        sends=[{"socket": "push", "count": count, "on_again": "stop", **extra}],
    )


@pytest.mark.parametrize("sndhwm,rcvhwm,accepted", [(10, 10, 20), (5, 7, 12), (1, 1, 2), (1000, 1000, 2000), (3, 2, 5)])
def test_inproc_push_to_stalled_pull_accepts_the_sum_of_hwms(sndhwm, rcvhwm, accepted):
    # socket_base_t::connect_internal (inproc): one pipe, HWM = SNDHWM + RCVHWM.
    summary = run(push_pull(sndhwm, rcvhwm))
    assert summary["sockets"]["push"]["sent"] == accepted
    assert summary["sockets"]["push"]["send_again"] == 1
    assert pipe(summary, "push->pull")["hwm"] == accepted
    assert pipe(summary, "push->pull")["max_depth"] == accepted
    assert summary["ledger"]["queued_at_end"] == accepted


@pytest.mark.parametrize("sndhwm,rcvhwm", [(10, 0), (0, 10), (0, 0)])
def test_inproc_hwm_zero_on_either_side_is_unlimited(sndhwm, rcvhwm):
    summary = run(push_pull(sndhwm, rcvhwm, count=3000))
    assert summary["sockets"]["push"]["sent"] == 3000
    assert summary["sockets"]["push"]["send_again"] == 0
    assert pipe(summary, "push->pull")["hwm"] == 0


def test_inproc_connect_before_bind_uses_connector_hwm_until_bind():
    # ctx_t::pend_connection: before the bind only the connector's SNDHWM counts.
    raw = scenario(
        {"name": "push", "type": "PUSH", "connect": ["inproc://x"], "options": {"sndhwm": 5, "sndtimeo": 0}},
        {"name": "pull", "type": "PULL", "bind": ["inproc://x"], "open_at_s": 1.0, "options": {"rcvhwm": 7}},
        sends=[
            {"name": "before", "socket": "push", "count": 5, "start_s": 0.1},
            {"name": "after", "socket": "push", "count": 100, "start_s": 2.0, "on_again": "stop"},
        ],
    )
    summary = run(raw)
    # 5 before the bind (exactly SNDHWM), then the pipe is raised to 5 + 7 = 12: 7 more.
    assert summary["senders"]["before"]["sent"] == 5
    assert summary["senders"]["after"]["sent"] == 7
    assert pipe(summary, "push->pull")["hwm"] == 12


def test_inproc_connect_before_bind_after_eagain_stays_blocked():
    # If the connector hit EAGAIN before the bind, pipe_t::_out_active is false and
    # set_hwms does not reactivate it: nothing more is accepted until the binder has
    # read LWM = (12 + 1) // 2 = 6 messages. [measured with pyzmq 27.3.0, see
    # tests/validation/test_exact_vs_real.py::test_inproc_connect_first]
    raw = scenario(
        {"name": "push", "type": "PUSH", "connect": ["inproc://x"], "options": {"sndhwm": 5, "sndtimeo": 0}},
        {"name": "pull", "type": "PULL", "bind": ["inproc://x"], "open_at_s": 1.0, "options": {"rcvhwm": 7}},
        sends=[
            {"name": "before", "socket": "push", "count": 6, "start_s": 0.1},
            {"name": "after", "socket": "push", "count": 100, "start_s": 2.0, "on_again": "stop"},
        ],
    )
    summary = run(raw)
    assert summary["senders"]["before"]["sent"] == 5
    assert summary["senders"]["before"]["again"] == 1
    assert summary["senders"]["after"]["sent"] == 0


@pytest.mark.parametrize("hwm_each,lwm", [(5, 5), (50, 50)])
def test_blocked_writer_sees_room_only_after_lwm_reads(hwm_each, lwm):
    # pipe_t::read reports progress every LWM = (HWM + 1) // 2 reads; HWM = 2 * hwm_each.
    total = 2 * hwm_each
    assert (total + 1) // 2 == lwm
    reads_per_s = 1.0
    raw = scenario(
        {"name": "push", "type": "PUSH", "connect": ["inproc://x"], "open_at_s": 0.001, "options": {"sndhwm": hwm_each}},
        {"name": "pull", "type": "PULL", "bind": ["inproc://x"], "options": {"rcvhwm": hwm_each}},
        sends=[{"socket": "push", "count": 10 * total}],
        recvs=[{"socket": "pull", "start_s": 1.0, "service_s": 1.0 / reads_per_s}],
        until_s=lwm + 0.5,  # reads happen at t = 1, 2, ..., lwm
    )
    summary = run(raw)
    # After lwm reads the writer learns of them all at once: total + lwm accepted.
    assert summary["sockets"]["pull"]["received"] == lwm
    assert summary["sockets"]["push"]["sent"] == total + lwm
    raw["scenario"]["until_s"] = lwm - 0.5  # one read short: not one extra message
    summary = run(raw)
    assert summary["sockets"]["pull"]["received"] == lwm - 1
    assert summary["sockets"]["push"]["sent"] == total


def test_pub_never_raises_again_and_drops_per_pipe():
    # xpub_t::xsend in lossy mode always returns 0 (reference 10a, [measured] 200,000 sends).
    raw = scenario(
        {"name": "pub", "type": "PUB", "bind": ["inproc://x"], "options": {"sndhwm": 1}},
        {"name": "sub", "type": "SUB", "connect": ["inproc://x"], "options": {"rcvhwm": 1, "subscribe": [""]}},
        sends=[{"socket": "pub", "count": 200_000, "dontwait": True, "start_s": 0.01}],
    )
    summary = run(raw)
    pub = summary["sockets"]["pub"]
    assert pub["send_again"] == 0
    assert pub["sent"] == 200_000
    assert summary["ledger"]["queued_at_end"] == 2  # 1 + 1 summed inproc HWM
    assert pub["dropped"] == 200_000 - 2
    assert summary["ledger"]["dropped_by_rule"] == {"hwm": 200_000 - 2}
    assert summary["sockets"]["sub"]["dropped"] == 0  # the SUB never drops


def test_pub_drop_is_per_subscriber():
    raw = scenario(
        {"name": "pub", "type": "PUB", "bind": ["inproc://x"], "options": {"sndhwm": 2}},
        {"name": "slow", "type": "SUB", "connect": ["inproc://x"], "options": {"rcvhwm": 2, "subscribe": [""]}},
        {"name": "fast", "type": "SUB", "connect": ["inproc://x"], "options": {"rcvhwm": 2, "subscribe": [""]}},
        sends=[{"socket": "pub", "count": 100, "interval_s": 0.01, "start_s": 0.01}],
        recvs=[{"socket": "fast"}],
    )
    summary = run(raw)
    assert summary["sockets"]["fast"]["received"] == 100
    assert pipe(summary, "pub->slow")["dropped"] == 96
    assert pipe(summary, "pub->fast")["dropped"] == 0
    assert summary["ledger"]["copies"] == 200


def test_xpub_nodrop_returns_again_at_hwm():
    # xpub_t::xsend with XPUB_NODROP: dist_t::check_hwm fails -> EAGAIN ([measured] 5+5: 10).
    raw = scenario(
        {"name": "xpub", "type": "XPUB", "bind": ["inproc://x"], "options": {"sndhwm": 5, "xpub_nodrop": True}},
        {"name": "sub", "type": "SUB", "connect": ["inproc://x"], "options": {"rcvhwm": 5, "subscribe": [""]}},
        sends=[{"socket": "xpub", "count": 100, "dontwait": True, "on_again": "stop", "start_s": 0.01}],
    )
    summary = run(raw)
    assert summary["sockets"]["xpub"]["sent"] == 10
    assert summary["sockets"]["xpub"]["send_again"] == 1
    assert summary["ledger"]["dropped"] == 0


def test_push_skips_full_peers_and_never_drops():
    # lb_t::sendpipe: a full pipe is deactivated and the next one tried.
    raw = scenario(
        {"name": "push", "type": "PUSH", "bind": ["inproc://x"], "options": {"sndhwm": 2}},
        {"name": "stuck", "type": "PULL", "connect": ["inproc://x"], "options": {"rcvhwm": 2}},
        {"name": "busy", "type": "PULL", "connect": ["inproc://x"], "options": {"rcvhwm": 2}},
        sends=[{"socket": "push", "count": 100, "start_s": 0.01, "interval_s": 0.001}],
        recvs=[{"socket": "busy"}],
    )
    summary = run(raw)
    assert summary["ledger"]["dropped"] == 0
    assert pipe(summary, "push->stuck")["max_depth"] == 4
    assert summary["ledger"]["queued_at_end"] == 4
    assert summary["sockets"]["busy"]["received"] == 96
    assert summary["sockets"]["push"]["send_again"] == 0


def test_push_blocks_when_every_peer_is_full():
    raw = scenario(
        {"name": "push", "type": "PUSH", "bind": ["inproc://x"], "options": {"sndhwm": 2, "sndtimeo": 100}},
        {"name": "a", "type": "PULL", "connect": ["inproc://x"], "options": {"rcvhwm": 1}},
        {"name": "b", "type": "PULL", "connect": ["inproc://x"], "options": {"rcvhwm": 1}},
        sends=[{"socket": "push", "count": 100, "start_s": 0.01, "on_again": "stop"}],
    )
    summary = run(raw)
    push = summary["sockets"]["push"]
    assert push["sent"] == 6
    assert push["send_again"] == 1
    assert push["blocked_s"] == pytest.approx(0.1)
    assert summary["sim_time_s"] == pytest.approx(0.11)


def router_scenario(mandatory: bool, to: str = "peer") -> dict:
    return scenario(
        {"name": "router", "type": "ROUTER", "bind": ["inproc://x"], "options": {"sndhwm": 3, "router_mandatory": mandatory}},
        {"name": "peer", "type": "DEALER", "connect": ["inproc://x"], "options": {"rcvhwm": 3}},
        sends=[{"socket": "router", "count": 100, "to": [to], "dontwait": True, "on_again": "stop", "start_s": 0.01}],
    )


def test_router_drops_silently_without_mandatory():
    # router_t::xsend: check_write false -> the whole message is dropped ([measured]: 0-5 arrive).
    summary = run(router_scenario(False))
    assert summary["sockets"]["router"]["sent"] == 100
    assert summary["sockets"]["router"]["send_again"] == 0
    assert summary["ledger"]["queued_at_end"] == 6
    assert summary["ledger"]["dropped_by_rule"] == {"hwm": 94}


def test_router_mandatory_returns_again_at_hwm():
    summary = run(router_scenario(True))
    assert summary["sockets"]["router"]["sent"] == 6
    assert summary["sockets"]["router"]["send_again"] == 1
    assert summary["ledger"]["dropped"] == 0


def test_router_unknown_peer_dropped_or_unreachable():
    summary = run(router_scenario(False, to="nobody"))
    assert summary["ledger"]["dropped_by_rule"] == {"unroutable": 100}
    summary = run(router_scenario(True, to="nobody"))
    assert summary["sockets"]["router"]["send_unroutable"] == 1  # EHOSTUNREACH, then stop
    assert summary["sockets"]["router"]["sent"] == 0


def test_subscriptions_filter_at_the_publisher():
    raw = scenario(
        {"name": "pub", "type": "PUB", "bind": ["inproc://x"]},
        {"name": "only_a", "type": "SUB", "connect": ["inproc://x"], "options": {"subscribe": ["A"]}},
        {"name": "all", "type": "SUB", "connect": ["inproc://x"], "options": {"subscribe": [""]}},
        {"name": "ab", "type": "SUB", "connect": ["inproc://x"], "options": {"subscribe": ["A", "BB"]}},
        sends=[{"socket": "pub", "count": 300, "topic": ["A", "B", "BBx"], "interval_s": 0.001, "start_s": 0.01}],
        recvs=[{"socket": "only_a"}, {"socket": "all"}, {"socket": "ab"}],
    )
    summary = run(raw)
    assert summary["sockets"]["only_a"]["received"] == 100
    assert summary["sockets"]["all"]["received"] == 300
    assert summary["sockets"]["ab"]["received"] == 200
    # Filtered messages are never copies: nothing is dropped or discarded.
    assert summary["ledger"]["copies"] == 600
    assert summary["ledger"]["dropped"] == 0
    assert summary["ledger"]["discarded"] == 0
    assert pipe(summary, "pub->only_a")["written"] == 100


def test_xsub_subscribe_option_is_sent_upstream_like_a_sub():
    """XSUB has no ZMQ_SUBSCRIBE: the harness (and a pyzmq program) sends ``\\x01prefix``
    after connecting, which xsub_t caches and replays into every pipe it attaches. The
    model once ignored ``subscribe`` on an XSUB and delivered nothing where real pyzmq
    delivered every message."""
    raw = scenario(
        {"name": "pub", "type": "PUB", "bind": ["inproc://x"]},
        {"name": "xs", "type": "XSUB", "connect": ["inproc://x"], "options": {"subscribe": ["A"]}},
        sends=[{"socket": "pub", "count": 300, "topic": ["A", "B", "AB"], "interval_s": 0.001, "start_s": 0.01}],
        recvs=[{"socket": "xs"}],
    )
    summary = run(raw)
    assert summary["sockets"]["xs"]["received"] == 200
    assert pipe(summary, "pub->xs")["written"] == 200
    assert summary["ledger"]["dropped"] == 0


def test_multipart_counts_once_against_hwm():
    # pipe_t::write counts a message on its last frame only.
    for parts in (1, 5):
        raw = scenario(
            {"name": "pub", "type": "PUB", "bind": ["inproc://x"], "options": {"sndhwm": 2}},
            {"name": "sub", "type": "SUB", "connect": ["inproc://x"], "options": {"rcvhwm": 2, "subscribe": [""]}},
            sends=[{"socket": "pub", "count": 50, "parts": parts, "topic": "t", "start_s": 0.01}],
        )
        summary = run(raw)
        assert summary["ledger"]["queued_at_end"] == 4, parts
        assert summary["ledger"]["dropped"] == 46, parts


def test_pair_blocks_at_hwm():
    raw = scenario(
        {"name": "a", "type": "PAIR", "bind": ["inproc://p"], "options": {"sndhwm": 4, "sndtimeo": 0}},
        {"name": "b", "type": "PAIR", "connect": ["inproc://p"], "options": {"rcvhwm": 4}},
        sends=[{"socket": "a", "count": 100, "on_again": "stop", "start_s": 0.01}],
    )
    summary = run(raw)
    assert summary["sockets"]["a"]["sent"] == 8
    assert summary["sockets"]["a"]["send_again"] == 1


def test_req_rep_lockstep_round_trips():
    raw = scenario(
        {"name": "req", "type": "REQ", "connect": ["inproc://rr"]},
        {"name": "rep", "type": "REP", "bind": ["inproc://rr"]},
        sends=[{"socket": "req", "count": 20, "interval_s": 0.01, "start_s": 0.01}],
        recvs=[{"socket": "rep", "service_s": 0.005}],
    )
    summary = run(raw)
    assert summary["sockets"]["rep"]["received"] == 20
    assert summary["sockets"]["rep"]["sent"] == 20
    assert summary["sockets"]["req"]["received"] == 20
    rtt = summary["senders"]["send.req"]["rtt_s"]
    assert rtt["p50"] == pytest.approx(0.005)
    # each cycle: request, 5 ms service, reply, then 10 ms before the next request
    assert summary["sim_time_s"] == pytest.approx(0.01 + 20 * 0.015 - 0.01 + 0.01, abs=1e-9)


def test_router_dealer_broker_delivers_every_reply():
    raw = scenario(
        {"name": "frontend", "type": "ROUTER", "bind": ["inproc://front"], "process": "broker"},
        {"name": "backend", "type": "DEALER", "bind": ["inproc://back"], "process": "broker"},
        {"name": "client1", "type": "REQ", "connect": ["inproc://front"], "process": "broker"},
        {"name": "client2", "type": "REQ", "connect": ["inproc://front"], "process": "broker"},
        {"name": "worker1", "type": "REP", "connect": ["inproc://back"], "process": "broker"},
        {"name": "worker2", "type": "REP", "connect": ["inproc://back"], "process": "broker"},
        processes=[{"name": "broker"}],
        proxies=[{"frontend": "frontend", "backend": "backend"}],
        sends=[{"socket": "client1", "count": 10, "start_s": 0.01}, {"socket": "client2", "count": 10, "start_s": 0.01}],
        recvs=[{"socket": "worker1", "service_s": 0.01}, {"socket": "worker2", "service_s": 0.01}],
    )
    summary = run(raw)
    assert summary["sockets"]["client1"]["received"] == 10
    assert summary["sockets"]["client2"]["received"] == 10
    assert summary["sockets"]["worker1"]["received"] + summary["sockets"]["worker2"]["received"] == 20
    assert summary["sockets"]["worker1"]["received"] == 10  # the DEALER load-balances
    assert summary["ledger"]["dropped"] == 0


def test_a_dealer_request_without_the_delimiter_never_reaches_the_rep_behind_a_broker():
    # A DEALER client sends [body]; the ROUTER frontend pushes its routing id, the proxy
    # and the DEALER backend pass [id, body] on, and rep_t::xrecv finds no empty frame
    # before the last one: rolled back and skipped (rule no_delimiter). The REQ client's
    # [b"", body] next to it is answered. Real libzmq 4.3.5: tests/results/test_export.py runs the
    # same design on pyzmq.
    raw = scenario(
        {"name": "frontend", "type": "ROUTER", "bind": ["inproc://front"], "process": "broker"},
        {"name": "backend", "type": "DEALER", "bind": ["inproc://back"], "process": "broker"},
        {"name": "asker", "type": "REQ", "connect": ["inproc://front"], "process": "broker"},
        {"name": "dealer", "type": "DEALER", "connect": ["inproc://front"], "process": "broker"},
        {"name": "worker", "type": "REP", "connect": ["inproc://back"], "process": "broker"},
        processes=[{"name": "broker"}],
        proxies=[{"frontend": "frontend", "backend": "backend"}],
        sends=[{"socket": "asker", "count": 20, "start_s": 0.01}, {"socket": "dealer", "count": 57, "start_s": 0.01}],
        recvs=[{"socket": "worker", "service_s": 0.001}],
    )
    summary = run(raw)
    counts = {name: (s["sent"], s["received"], s["discarded"]) for name, s in summary["sockets"].items()}
    assert counts == {"frontend": (20, 77, 0), "backend": (77, 20, 0), "asker": (20, 20, 0), "dealer": (57, 0, 0),
                      "worker": (20, 20, 57)}
    assert summary["ledger"]["discarded_by_rule"] == {"no_delimiter": 57}
    assert summary["ledger"]["dropped"] == summary["ledger"]["queued_at_end"] == 0
