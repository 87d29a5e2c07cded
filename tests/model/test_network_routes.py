"""Routes through switches (issue 42, item 2): two hosts in a rack behind a switch whose
uplink both of their connections cross. A switch's port is a drop-tail queue like any link
direction's, but not the sending host's own: no TCP small queues apply there, and a packet it
drops is lost to TCP (found by what was sent after it, then sent again), never refused whole.
A round trip is the sum of the route's propagations both ways."""

from __future__ import annotations

from typing import Any

import pytest

import zsim
from zsim.results import flat_metrics

MSS = 1448
FRAME = MSS + 52 + 14


def rack(uplink_bps: float = 10e6, uplink_queue: int = 64000, latency: float = 0.0, count: int = 2000,
         senders: tuple[str, ...] = ("a", "b")) -> dict[str, Any]:
    return {
        "scenario": {"name": "rack", "until_s": 10.0},
        "host": [{"name": "a"}, {"name": "b"}, {"name": "server"}],
        "switch": [{"name": "tor"}],
        "link": [{"name": "a-tor", "hosts": ["a", "tor"], "bandwidth_bps": 1e9, "latency_s": latency},
                 {"name": "b-tor", "hosts": ["b", "tor"], "bandwidth_bps": 1e9, "latency_s": latency},
                 {"name": "uplink", "hosts": ["tor", "server"], "bandwidth_bps": uplink_bps, "queue_bytes": uplink_queue,
                  "latency_s": 2 * latency}],
        "process": [{"name": f"p{h}", "host": h} for h in senders] + [{"name": "ps", "host": "server"}],
        "socket": [{"name": f"push{h}", "type": "PUSH", "process": f"p{h}", "connect": ["tcp://server:6000"]} for h in senders]
                  + [{"name": "pull", "type": "PULL", "process": "ps", "bind": ["tcp://*:6000"]}],
        "send": [{"socket": f"push{h}", "count": count, "interval_s": 0, "size_bytes": 1024, "start_s": 0.5} for h in senders],
        "recv": [{"socket": "pull"}],
    }


def run(scenario: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    result = zsim.run(scenario, 1, profile="ideal")
    return result.summary, flat_metrics(result.summary, result)


def test_two_hosts_share_their_rack_uplink_and_its_queue():
    summary, row = run(rack())
    uplink = summary["network"]["uplink"]["tor->server"]
    assert row["socket.pull.delivered"] == 4000  # every message, despite the drops
    # the uplink, not the hosts' gigabit links, sets the pace: busy whenever it had traffic, both
    # connections cross it, and together they get its rate less the headers
    assert uplink["active_utilisation"] > 0.97
    assert set(uplink["connections"]) == {"pusha->pull", "pushb->pull"}
    rates = [uplink["connections"][name]["throughput_bps"] for name in ("pusha->pull", "pushb->pull")]
    assert sum(rates) == pytest.approx(10e6 * MSS / FRAME, rel=0.05)
    assert summary["network"]["a-tor"]["a->tor"]["utilisation"] < 0.02  # a gigabit host link idles
    # what each host's writer offered, on its own link and, together, on the uplink
    offered = [summary["network"][f"{h}-tor"][f"{h}->tor"]["offered_bytes"] for h in "ab"]
    assert uplink["offered_bytes"] == sum(offered) > 0


def test_a_switch_port_drops_are_losses_sent_again_never_refused_whole():
    summary, _ = run(rack(uplink_queue=32000))
    uplink = summary["network"]["uplink"]["tor->server"]
    assert uplink["queue_drops"] > 0 and uplink["local_drops"] == 0
    # the senders' own interfaces refused nothing (a gigabit each) and sent the lost segments again
    resent = sum(summary["network"][f"{h}-tor"][f"{h}->tor"]["retransmits"] for h in "ab")
    assert all(summary["network"][f"{h}-tor"][f"{h}->tor"]["queue_drops"] == 0 for h in "ab")
    assert resent >= uplink["queue_drops"]
    # the port's queue is bounded by its own size, not by the senders' TCP small queues
    assert 0.8 * 32000 < uplink["max_queue_bytes"] <= 32000


def test_a_round_trip_crosses_every_link_of_the_route_both_ways():
    # 5 ms on each host link and 10 ms on the uplink: 15 ms one way, 30 ms a round trip; one
    # light sender (10 messages at once: at most their 8 ms of serialization at 10 Mbit/s add to it)
    summary, row = run(rack(latency=0.005, count=10, senders=("a",)))
    tcp = summary["network"]["uplink"]["tor->server"]["connections"]["pusha->pull"]
    assert 0.030 <= tcp["rtt_s"] < 0.030 + 10 * FRAME * 8 / 10e6
    # connected after three round trips (TCP, then ZMTP's greeting and READY): the first message
    # cannot arrive before 0.09 s plus one way
    assert row["socket.pull.first_recv_s"] >= 0.5 + 0.015


def test_one_link_between_two_hosts_is_a_route_of_one_link():
    # without [[switch]]es nothing changes (tests/fingerprints.json pins every [[link]] scenario);
    # with one, a pair joined directly takes its direct link
    raw = rack(senders=("a",))
    raw["link"].append({"name": "direct", "hosts": ["a", "server"], "bandwidth_bps": 20e6})
    summary, _ = run(raw)
    assert summary["network"]["direct"]["a->server"]["bytes"] > 2000 * 1024
    assert summary["network"]["uplink"]["tor->server"]["bytes"] == 0
