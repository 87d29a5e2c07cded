"""The sender's TCP over a link as Linux 6.x runs it (issue 42): CUBIC's window, HyStart,
skbs autosized with the path's smallest round trip, TCP small queues, TSO deferral, and the
difference between a skb its own qdisc refuses (local congestion) and a segment lost on the
way. The real-kernel cases are tests/validation/test_links_queues.py; these check the
arithmetic each rule follows, in zsim/model/transport/network.py."""

from __future__ import annotations

import math

import pytest

import zsim
from support import pub_to_subs_over_link
from zsim.model.transport.network import CUBIC_C, LOSS_BETA, MAX_TRAIN_BYTES, Flow

MSS = 1448


def bare_flow(cwnd_segments: float, min_rtt: float = 0.0001) -> Flow:
    """A Flow with only what its window arithmetic reads."""
    flow = object.__new__(Flow)
    flow.mss = MSS
    flow.cwnd = cwnd_segments * MSS
    flow.ssthresh = math.inf
    flow.size_goal = MAX_TRAIN_BYTES // MSS * MSS
    flow._set_min_rtt(min_rtt)
    flow.srtt = min_rtt
    flow.snd_nxt = flow.snd_una = 0
    flow.epoch_start = -1.0
    flow.last_max_cwnd = 0.0
    flow.origin = flow.cubic_k = flow.ack_cnt = flow.reno_cwnd = 0.0
    return flow


def grow_for(flow: Flow, seconds: float, rtt: float, start: float = 0.0) -> float:
    """ACK a window every ``rtt`` (in pieces of two segments) for ``seconds``; returns the time reached."""
    now = start
    while now < start + seconds - 1e-9:
        now += rtt
        for _ in range(int(flow.cwnd / MSS) // 2):
            flow._cubic_grow(2.0, now)
    return now


def test_a_loss_takes_the_window_to_0_7_and_cubic_brings_it_back_at_k():
    # 1,000 segments, 100 ms round trips: K = cbrt(W_max (1 - beta) / C) = 9.1 s, and the
    # Reno-friendly estimate (0.53 segments a round trip) stays below the cubic all the way
    flow = bare_flow(1000, min_rtt=0.1)
    flow._reduce()
    assert flow.ssthresh == pytest.approx(1000 * LOSS_BETA * MSS)
    assert flow.last_max_cwnd == 1000
    flow.cwnd = flow.ssthresh
    k = ((1000 - 1000 * LOSS_BETA) / CUBIC_C) ** (1 / 3)
    rtt = 0.1
    grow_for(flow, k / 2, rtt)
    # concave: most of the way back in the first half (W(K/2) = W_max - C (K/2)^3 = 962.5)
    assert flow.cwnd / MSS == pytest.approx(1000 - CUBIC_C * (k / 2) ** 3, rel=0.01)
    grow_for(flow, k / 2, rtt, start=k / 2)
    assert flow.cwnd / MSS == pytest.approx(1000, rel=0.01)
    # then convex: past W_max, faster and faster
    grow_for(flow, 3.0, rtt, start=k)
    assert flow.cwnd / MSS == pytest.approx(1000 + CUBIC_C * 3.0 ** 3, rel=0.01)


def test_on_a_short_round_trip_the_reno_friendly_estimate_leads():
    # 100 segments, 50 ms: K = 4.2 s, but 84 round trips at 0.53 segments each are 45 segments,
    # so the window passes W_max before K (tcp_friendliness; Linux's CUBIC in its Reno region)
    flow = bare_flow(100, min_rtt=0.05)
    flow._reduce()
    flow.cwnd = flow.ssthresh
    k = ((100 - 100 * LOSS_BETA) / CUBIC_C) ** (1 / 3)
    grow_for(flow, k, 0.05)
    assert flow.cwnd / MSS > 100 + 5


def test_fast_convergence_remembers_less_when_a_loss_comes_before_the_last_maximum():
    flow = bare_flow(100)
    flow._reduce()
    flow.cwnd = 90 * MSS  # lost again before getting back to 100: another flow took a share
    flow._reduce()
    assert flow.last_max_cwnd == pytest.approx(90 * (1 + LOSS_BETA) / 2)  # 76.5 segments
    assert flow.ssthresh == pytest.approx(90 * LOSS_BETA * MSS)


def test_on_a_long_round_trip_cubic_grows_at_least_as_fast_as_reno():
    # 200 ms round trips, 10 s after a loss at 40 segments: the cubic itself is slow at first,
    # the Reno-friendly estimate (tcp_friendliness) grows about 0.53 segments a round trip
    flow = bare_flow(40, min_rtt=0.2)
    flow._reduce()
    flow.cwnd = flow.ssthresh
    start = flow.cwnd / MSS
    grow_for(flow, 2.0, 0.2)
    reno = 3 * (1 - LOSS_BETA) / (1 + LOSS_BETA) * 10  # 0.53 a round trip, 10 round trips
    assert flow.cwnd / MSS - start >= reno - 1.0


@pytest.mark.parametrize(("min_rtt_us", "expected"), [(8, MAX_TRAIN_BYTES // MSS * MSS), (600, (32768 + 1200) // MSS * MSS),
                                                      (2000, (8192 + 1200) // MSS * MSS), (20000, 2 * MSS)])
def test_a_skb_is_autosized_by_the_pacing_rate_and_the_smallest_round_trip(min_rtt_us, expected):
    # tcp_tso_autosize: pacing rate >> 10 (here 1.2 MB/s: 1,200 B), plus 64 KB >> (min_rtt_us >> 9),
    # at most 64 KB, at least two segments, in whole segments
    flow = bare_flow(10, min_rtt=min_rtt_us * 1e-6)
    assert flow.skb_bytes(1.2e6 * 1024 / 1000) == expected


def _pub_small_queue(subs: int, queue_bytes: int) -> dict:
    scenario = pub_to_subs_over_link(subs, queue_bytes, {"count": 5000, "interval_s": 1 / 4000, "size_bytes": 1024, "start_s": 0.2},
                                     "a PUB behind a small queue")
    return zsim.run(scenario, 1, profile="ideal").summary["network"]["a-b"]["a->b"]


def test_a_skb_its_own_qdisc_refuses_is_kept_not_lost():
    # four flows into six frames of queue: many skbs (within tbf's bucket: two frames) are
    # refused whole; TCP keeps them unsent and slows (tcp_enter_cwr), so fewer segments are
    # sent again than the queue dropped, and the link still runs at its rate
    link = _pub_small_queue(4, 10_000)
    assert link["local_drops"] > 0 and link["queue_drops"] > link["local_drops"]
    assert link["retransmits"] < link["queue_drops"]
    assert link["active_utilisation"] > 0.95
    # a queue of 1,000 frames never drops: the flows' skbs (two each) and windows fit
    deep = _pub_small_queue(4, 1_514_000)
    assert deep["queue_drops"] == deep["local_drops"] == deep["retransmits"] == 0


def test_a_lost_segment_is_found_by_what_was_sent_after_it():
    # RACK: the arrival of a segment sent after a lost one shows the loss (one reduction,
    # a retransmission, no timeout); with nothing sent after it, the tail loss probe does
    flow = bare_flow(10)
    flow.unfound = [(0, MSS, 1.0)]
    found = []
    flow.lose = lambda lo, hi, at, dupacks: found.append((lo, hi, at, dupacks))  # type: ignore[method-assign]
    flow.clock = type("Clock", (), {"now": 1.01})()
    flow.ack_latency = 0.005  # the way back's propagation
    flow.direction = type("D", (), {})()
    flow.probe_loss_timer = type("T", (), {"cancel": lambda self: None})()
    flow.rcv_nxt = flow.read = flow.advertised = 0
    flow.rcv_window = 65536
    flow.out_of_order, flow.ooo_bytes = [], 0
    flow.wire = type("W", (), {"reader": None})()
    sent = []
    flow.direction.send_ack = lambda *args: sent.append(args)  # type: ignore[attr-defined]
    flow.arrived(MSS, 2 * MSS, 1.0005)  # sent after the lost one: found when its ACK is back
    assert found == [(0, MSS, pytest.approx(1.015), True)] and not flow.unfound


def test_a_flow_with_a_deep_queue_keeps_it_no_fuller_than_two_of_its_skbs():
    # 1,000 frames of queue, one bulk flow on a path of microseconds: TCP small queues, not the
    # queue's size, bound what it keeps there (two 64 KB skbs and their truesize)
    link = _pub_small_queue(1, 1_514_000)
    assert 64 * 1024 < link["max_queue_bytes"] < 3 * 64 * 1024
    assert link["queue_drops"] == 0


def test_the_warning_says_which_drops_were_refused_by_the_senders_own_queue():
    from zsim.checks import link_warnings

    link = _pub_small_queue(4, 10_000)
    (saturated,) = [w for w in link_warnings({"a-b": {"a->b": link}}) if w["code"] == "link_saturated"]
    assert (f"dropped {link['queue_drops']:,} packets ({link['local_drops']:,} of them in skbs the sending host's own queue "
            "refused whole, which TCP keeps and sends later, slowing down without a loss (local congestion); "
            f"{link['retransmits']:,} segments sent again)") in saturated["message"]
    # a queue that refused nothing keeps the short wording
    quiet = dict(link, local_drops=0)
    (plain,) = [w for w in link_warnings({"a-b": {"a->b": quiet}}) if w["code"] == "link_saturated"]
    assert f"dropped {link['queue_drops']:,} packets ({link['retransmits']:,} segments sent again)" in plain["message"]
