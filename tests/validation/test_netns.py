"""validation/netns.py: real links between network namespaces, shaped by tbf.

What is asserted is what the link decides, not how fast this machine is: a link of a few
tens of Mbit/s is far slower than the sockets on either side even on a loaded 2-core
machine, so the transfer times are the link's (TCP's own arithmetic: the rate times the
payload share of each frame). The namespaces are gone afterwards, also when the body
fails. Skipped with one line where namespaces cannot be made (not root, no iproute2).
"""

from __future__ import annotations

import subprocess

import link_programs as programs
import pytest

from validation import netns

pytestmark = pytest.mark.real

_REASON = netns.available()
needs_links = pytest.mark.skipif(_REASON is not None, reason=f"no network namespaces here: {_REASON}")

_SINK = r"""
import socket, sys, time, json
host, port, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
server = socket.socket(); server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind((host, port)); server.listen(1); print("ready", flush=True)
conn, _ = server.accept(); got = 0; first = None
while got < total:
    chunk = conn.recv(1 << 16)
    if not chunk: break
    if first is None: first = time.perf_counter(); got_first = len(chunk)
    got += len(chunk)
print(json.dumps({"bytes": got, "after_first": got - got_first, "seconds": time.perf_counter() - first}), flush=True)
"""

_SOURCE = r"""
import socket, sys
host, port, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
conn = socket.create_connection((host, port)); block = b"x" * 65536; sent = 0
while sent < total:
    sent += conn.send(block[: min(len(block), total - sent)])
conn.shutdown(socket.SHUT_WR); conn.recv(1)
"""

@needs_links
def test_a_shaped_link_carries_tcp_at_its_rate():
    spec = netns.LinkSpec(rate_bps=40e6)
    total = 10_000_000
    with netns.link(spec) as ln:
        sink = programs.started(ln.python(ln.b, _SINK, ln.b_address, "5201", str(total), 
                                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        source = ln.python(ln.a, _SOURCE, ln.b_address, "5201", str(total), stderr=subprocess.PIPE, text=True)
        got = programs.result(sink)
        source.wait(timeout=30)
    assert got["bytes"] == total
    goodput = got["after_first"] * 8 / got["seconds"]
    expected = netns.tcp_goodput_bps(spec)  # 40 Mbit/s x 1448 / 1514 = 38.3 Mbit/s
    assert goodput == pytest.approx(expected, rel=0.08), f"{goodput / 1e6:.1f} Mbit/s against {expected / 1e6:.1f}"


@needs_links
def test_push_pull_over_a_link_takes_the_links_time():
    # 5,000 x 1 KB over 20 Mbit/s: ZMTP adds 9 bytes a message (a long frame's flags and
    # 8-byte size), TCP/IP 52 and Ethernet 14 bytes a 1448-byte segment
    spec = netns.LinkSpec(rate_bps=20e6)
    count, size = 5000, 1024
    with netns.link(spec) as ln:
        endpoint = f"tcp://{ln.b_address}:5555"
        pull = programs.started(ln.python(ln.b, programs.PULL, endpoint, str(count), 
                                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        push = ln.python(ln.a, programs.PUSH, endpoint, str(count), str(size), stderr=subprocess.PIPE, text=True)
        got = programs.result(pull)
        push.wait(timeout=30)
    expected = (count - 1) * (size + 9) * 8 / netns.tcp_goodput_bps(spec)  # 2.16 s
    assert got["seconds"] == pytest.approx(expected, rel=0.10)


@needs_links
def test_namespaces_are_removed_even_when_the_body_fails():
    with pytest.raises(RuntimeError, match="inside"):
        with netns.link(netns.LinkSpec(rate_bps=10e6)) as ln:
            names = (ln.a, ln.b)
            listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
            assert all(name in listed for name in names)
            raise RuntimeError("inside")
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(name in listed for name in names)


def test_unavailable_says_why_in_one_line(monkeypatch):
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    reason = netns.available()
    assert reason == "network namespaces need root"
    with pytest.raises(netns.LinkUnavailable, match="need root"):
        with netns.link(netns.LinkSpec(rate_bps=1e6)):
            pass


def test_the_bucket_holds_two_full_frames():
    assert netns.LinkSpec(rate_bps=1e6).burst_bytes == 2 * 1514
    assert netns.LinkSpec(rate_bps=1e9).burst_bytes == 125_000  # a millisecond at 1 Gbit/s
    assert netns.tcp_goodput_bps(netns.LinkSpec(rate_bps=40e6)) == pytest.approx(40e6 * 1448 / 1514)
