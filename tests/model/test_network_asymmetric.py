"""A link whose two directions differ (``[[link]]``'s ``reverse``: issue 42, finding 5):
each direction serializes at its own rate, holds its own queue, loses its own packets and
delays by its own propagation, and a round trip is the two latencies added (the data one
way, its ACK the other). Checked against TCP's arithmetic where the model is exact; a
``reverse`` that repeats the forward values is the link without one, to the ledger."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fingerprint import fingerprint_of

import zsim
from zsim.model.transport.network import IP_TCP_HEADER_BYTES

MSS = 1500 - IP_TCP_HEADER_BYTES  # 1448
FRAME = MSS + IP_TCP_HEADER_BYTES + 14  # a full segment on the wire, Ethernet header included
ZMTP_LONG_FRAME = 9  # a message of more than 255 bytes: flags + 8-byte size


def bulk(sender: str, count: int = 2000, size: int = 1024, reverse: dict[str, Any] | None = None, latency_s: float = 0.0,
         loss: float = 0.0, pull_options: dict[str, Any] | None = None, bandwidth_bps: float = 20e6) -> dict[str, Any]:
    """A PUSH on host ``sender`` sending ``count`` x ``size`` bytes as fast as it can to a PULL on
    the other host, over a link of ``bandwidth_bps`` a -> b whose way back is ``reverse``."""
    receiver = "b" if sender == "a" else "a"
    link: dict[str, Any] = {"hosts": ["a", "b"], "bandwidth_bps": bandwidth_bps, "latency_s": latency_s, "loss": loss,
                            "queue_bytes": 262_144}
    if reverse is not None:
        link["reverse"] = reverse
    return {
        "scenario": {"name": "asymmetric-link", "description": "bulk over one direction of an asymmetric link"},
        "host": [{"name": "a"}, {"name": "b"}],
        "link": [link],
        "process": [{"name": "src", "host": sender}, {"name": "dst", "host": receiver}],
        "socket": [
            {"name": "push", "type": "PUSH", "process": "src", "connect": [f"tcp://{receiver}:5555"], "options": {"sndhwm": 0}},
            {"name": "pull", "type": "PULL", "process": "dst", "bind": ["tcp://*:5555"], "options": pull_options or {}},
        ],
        "send": [{"socket": "push", "count": count, "interval_s": 0, "size_bytes": size}],
        "recv": [{"socket": "pull"}],
    }


def run(raw: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    result = zsim.run(raw, 0, profile="ideal")
    return result, zsim.results.flat_metrics(result.summary, result)


def transfer_s(row: dict[str, Any]) -> float:
    return row["socket.pull.last_recv_s"] - row["socket.pull.first_recv_s"]


@pytest.mark.parametrize("sender, rate", [("a", 20e6), ("b", 2e6)])
def test_each_direction_carries_a_bulk_transfer_at_its_own_rate(sender, rate):
    # 2,000 x 1 KB: each 1,448-byte segment costs 1,514 bytes on the wire, at 20 Mbit/s a -> b
    # and 2 Mbit/s b -> a: the same transfer takes ten times as long the slow way
    result, row = run(bulk(sender, reverse={"bandwidth_bps": 2e6}))
    goodput = rate / 8 * MSS / FRAME
    assert transfer_s(row) == pytest.approx(1999 * (1024 + ZMTP_LONG_FRAME) / goodput, rel=0.01)
    way = f"{sender}->{'b' if sender == 'a' else 'a'}"
    carried = result.summary["network"]["a-b"][way]
    assert carried["bandwidth_bps"] == rate
    assert carried["active_utilisation"] > 0.99
    # never more payload than its own rate carries, headers counted
    assert carried["goodput_bps"] <= rate * MSS / FRAME * (1 + 1e-9)


def test_the_summary_reports_each_directions_own_parameters():
    result, _ = run(bulk("a", count=10, reverse={"bandwidth_bps": 2e6, "latency_s": 0.03, "queue_bytes": 30_280}, latency_s=0.01))
    network = result.summary["network"]["a-b"]
    assert {way: (d["bandwidth_bps"], d["latency_s"], d["queue_limit_bytes"]) for way, d in network.items()} == {
        "a->b": (20e6, 0.01, 262_144), "b->a": (2e6, 0.03, 30_280)}


def test_a_round_trip_is_the_forward_latency_plus_the_reverse():
    # 10 ms a -> b, 30 ms b -> a: the handshake's three round trips take 3 x 40 ms, and the
    # first message lands one forward way (10 ms) later (1 KB at 20 Mbit/s: 0.4 ms on the wire)
    _, row = run(bulk("a", count=1, latency_s=0.01, reverse={"latency_s": 0.03}))
    assert row["socket.pull.first_recv_s"] == pytest.approx(3 * 0.04 + 0.01, abs=1e-3)
    # the other way the same handshake, then one reverse way (30 ms)
    _, row = run(bulk("b", count=1, latency_s=0.01, reverse={"latency_s": 0.03}))
    assert row["socket.pull.first_recv_s"] == pytest.approx(3 * 0.04 + 0.03, abs=1e-3)


def test_a_window_limited_flow_moves_one_window_per_sum_of_both_latencies():
    # SO_RCVBUF = 64 KB fixes the window; 5 ms there and 15 ms back on a 1 Gbit/s link (a
    # window's serialization, 0.5 ms, is small against the round trip): one window per 20 ms,
    # 3.3 MB/s, as with 10 ms each way; with 15 ms both ways it would be one per 30 ms
    window, count = 65536, 4000

    def window_limited(forward_s: float, back_s: float) -> tuple[float, float]:
        result, row = run(bulk("a", count=count, latency_s=forward_s, reverse={"latency_s": back_s}, bandwidth_bps=1e9,
                               pull_options={"rcvbuf": window}))
        return transfer_s(row), result.summary["network"]["a-b"]["a->b"]["connections"]["push->pull"]["rtt_s"]

    seconds, rtt = window_limited(0.005, 0.015)
    assert seconds == pytest.approx(count * (1024 + ZMTP_LONG_FRAME) / (window / 0.02), rel=0.05)
    assert 0.02 < rtt < 0.02 + 0.001  # both propagations, plus a train's serialization
    # only the sum counts: the same round trips split the other way, or evenly
    for forward_s, back_s in ((0.015, 0.005), (0.01, 0.01)):
        assert window_limited(forward_s, back_s) == pytest.approx((seconds, rtt), abs=1e-9)


def test_each_direction_has_its_own_queue_and_loss():
    # the way back has a queue of 2 full frames and loses 2 % of its packets; a -> b neither
    reverse = {"queue_bytes": 2 * 1514, "loss": 0.02}
    result, _ = run(bulk("b", count=1000, reverse=reverse))
    back = result.summary["network"]["a-b"]["b->a"]
    assert back["queue_drops"] > 0 and back["loss_drops"] > 0
    assert result.summary["sockets"]["pull"]["received"] == 1000  # TCP delivers everything
    result, _ = run(bulk("a", count=1000, reverse=reverse))
    forward = result.summary["network"]["a-b"]["a->b"]
    assert forward["queue_drops"] == 0 and forward["loss_drops"] == 0


@pytest.mark.parametrize("sender", ["a", "b"])
def test_a_reverse_with_the_forward_values_is_the_link_without_one(sender):
    plain = bulk(sender, count=1500, latency_s=0.002, loss=0.005)
    same = bulk(sender, count=1500, latency_s=0.002, loss=0.005,
                reverse={"bandwidth_bps": 20e6, "latency_s": 0.002, "queue_bytes": 262_144, "loss": 0.005})
    faster = bulk(sender, count=1500, latency_s=0.002, loss=0.005, reverse={"bandwidth_bps": 40e6})
    (plain_result, _), (same_result, _), (faster_result, _) = run(plain), run(same), run(faster)
    assert fingerprint_of(same_result) == fingerprint_of(plain_result)
    # every field of both directions, NaNs (a direction without samples) included
    assert json.dumps(same_result.summary["network"], sort_keys=True) == json.dumps(plain_result.summary["network"], sort_keys=True)
    # and one that differs changes only what crosses the way back
    changed = fingerprint_of(faster_result) != fingerprint_of(plain_result)
    assert changed == (sender == "b")
