"""An autotuned send buffer over a link is charged the profile's truesize per segment
(``[tcp] sndbuf_per_segment_bytes``, issue 42 finding 3), and ``zsim calibrate`` measures it
on the running kernel.

Linux's ``tcp_sndbuf_expand`` sets the buffer to 2 x max(10, cwnd in segments) x ``per_mss``;
the model does the same with the sending host's profile value, which a profile written before
it was measured does not have (4,352 then, the value zsim used before).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

import zsim
import zsim.profile
from zsim.errors import ScenarioError
from zsim.model.transport.network import INITIAL_WINDOW_SEGMENTS, IP_TCP_HEADER_BYTES, TCP_WMEM_MAX

MSS = 1500 - IP_TCP_HEADER_BYTES  # 1448


def profile_file(folder: Path, name: str, per_segment: int | None) -> str:
    """A profile with no time costs, and ``[tcp] sndbuf_per_segment_bytes`` when given."""
    text = f'[profile]\nformat = 1\nname = "{name}"\n'
    if per_segment is not None:
        text += f"\n[tcp]\nsndbuf_per_segment_bytes = {per_segment}\n"
    path = folder / f"{name}.toml"
    path.write_text(text)
    return str(path)


def push_pull(count: int, latency_s: float = 0.005, profile_a: str | None = None, profile_b: str | None = None,
              profile: str | None = None) -> dict[str, Any]:
    """PUSH on host a -> PULL on host b over a 1 Gbit/s link (b -> a carries ACKs and the
    ZMTP handshake only); a host may have a profile of its own."""
    host_a: dict[str, Any] = {"name": "a"} if profile_a is None else {"name": "a", "profile": profile_a}
    host_b: dict[str, Any] = {"name": "b"} if profile_b is None else {"name": "b", "profile": profile_b}
    scenario = {
        "scenario": {"name": "sndbuf-per-segment", **({"profile": profile} if profile else {})},
        "host": [host_a, host_b],
        "link": [{"hosts": ["a", "b"], "bandwidth_bps": 1e9, "latency_s": latency_s}],
        "process": [{"name": "src", "host": "a"}, {"name": "dst", "host": "b"}],
        "socket": [
            {"name": "push", "type": "PUSH", "process": "src", "connect": ["tcp://b:5555"], "options": {"sndhwm": 0}},
            {"name": "pull", "type": "PULL", "process": "dst", "bind": ["tcp://*:5555"]},
        ],
        "send": [{"socket": "push", "count": count, "interval_s": 0, "size_bytes": 1024}],
        "recv": [{"socket": "pull"}],
    }
    return zsim.run(scenario, 0).summary["network"]["a-b"]


def expected_sndbuf(max_cwnd_bytes: int, per_segment: int) -> int:
    """``tcp_sndbuf_expand`` at the largest window the flow reached (the buffer never shrinks)."""
    return min(TCP_WMEM_MAX, 2 * max(INITIAL_WINDOW_SEGMENTS, max_cwnd_bytes // MSS) * per_segment)


@pytest.mark.parametrize("per_segment", [2304, 8448])
def test_an_autotuned_send_buffer_is_twice_the_window_times_the_profiles_charge(tmp_path, per_segment):
    path = profile_file(tmp_path, "measured", per_segment)
    # a few messages: the window stays at its initial 10 segments
    small = push_pull(3, profile=path)["a->b"]["connections"]["push->pull"]
    assert small["max_cwnd_bytes"] == INITIAL_WINDOW_SEGMENTS * MSS
    assert small["max_sndbuf_bytes"] == 2 * INITIAL_WINDOW_SEGMENTS * per_segment
    # 20,000 x 1 KB: slow start grows the window well past 10 segments
    grown = push_pull(20000, profile=path)["a->b"]["connections"]["push->pull"]
    assert grown["max_cwnd_bytes"] > 4 * INITIAL_WINDOW_SEGMENTS * MSS
    assert grown["max_sndbuf_bytes"] == expected_sndbuf(grown["max_cwnd_bytes"], per_segment)


def test_a_profile_without_the_value_keeps_the_charge_zsim_used_before(tmp_path):
    path = profile_file(tmp_path, "older", None)
    assert zsim.profile.load(path).transport("tcp").sndbuf_per_segment_bytes == 4352
    flow = push_pull(3, profile=path)["a->b"]["connections"]["push->pull"]
    assert flow["max_sndbuf_bytes"] == 2 * INITIAL_WINDOW_SEGMENTS * 4352


def test_each_sender_is_charged_by_its_own_hosts_profile(tmp_path):
    a, b = profile_file(tmp_path, "host-a", 2304), profile_file(tmp_path, "host-b", 16640)
    network = push_pull(3, profile_a=a, profile_b=b)
    assert network["a->b"]["connections"]["push->pull"]["max_sndbuf_bytes"] == 20 * 2304
    assert network["b->a"]["connections"]["pull->push"]["max_sndbuf_bytes"] == 20 * 16640


def is_kernel_charge(value: int) -> bool:
    """A power of two of at least 2,048 (a 1,460-byte segment with MAX_TCP_HEADER and
    skb_shared_info) plus a cache-aligned ``sk_buff`` of 128 to 512 bytes."""
    head = 2 ** (value.bit_length() - 1)
    return head >= 2048 and 128 <= value - head <= 512 and (value - head) % 64 == 0


def test_the_shipped_profile_records_a_kernels_charge():
    assert is_kernel_charge(zsim.profile.load("default").transport("tcp").sndbuf_per_segment_bytes)
    assert is_kernel_charge(4352) and not is_kernel_charge(4096) and not is_kernel_charge(46080 // 30)


@pytest.mark.parametrize(("table", "value", "reason"), [
    ("tcp", "1000", "must be >= 2048"),
    ("tcp", "100000", "must be at most 65,536"),
    ("tcp", '"2304"', "must be an integer, got a string"),
    ("tcp", "2304.5", "must be an integer"),
    ("ipc", "2304", "is tcp's: only [tcp] has it"),
])
def test_a_profile_with_a_charge_that_cannot_be_a_kernels_is_refused(table, value, reason):
    raw: dict[str, Any] = {"profile": {"format": 1}, table: {}}
    raw[table]["sndbuf_per_segment_bytes"] = tomllib.loads(f"v = {value}")["v"]
    with pytest.raises(ScenarioError) as caught:
        zsim.profile.from_dict(raw)
    assert caught.value.path == f"{table}.sndbuf_per_segment_bytes"
    assert reason in caught.value.reason


def test_calibrate_measures_the_kernels_charge_from_so_sndbuf_after_connect():
    from validation.calibrate.sndbuf import measure_sndbuf_per_segment, tcp_wmem_default

    measured = measure_sndbuf_per_segment()
    per_segment = measured["sndbuf_per_segment_bytes"]
    # what Linux set is 2 x the window's segments x per_mss, above tcp_wmem's default, for
    # 1,448-byte segments (the 1,460 clamp less the timestamps)
    assert measured["so_sndbuf"] == 2 * measured["segments"] * per_segment > tcp_wmem_default()
    assert measured["segments"] >= INITIAL_WINDOW_SEGMENTS and measured["mss"] == MSS
    # roundup_pow_of_two(1,460 + MAX_TCP_HEADER + shared info) + SKB_DATA_ALIGN(sizeof(sk_buff))
    assert is_kernel_charge(per_segment)
