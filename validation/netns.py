"""Real network links for real-socket tests: two Linux network namespaces joined by a veth
pair, each direction shaped by its own token bucket (``tc qdisc ... tbf``).

This is what the validation of hosts and links runs real pyzmq over (docs/validation.md,
"Links"). What this kernel can and cannot emulate decides the shape:

- A veth pair with a qdisc on each end is a full-duplex link with one queue per direction,
  as ``[[link]]`` describes one (bandwidth both ways, a bottleneck buffer per direction).
- ``tbf`` drops a packet larger than its bucket, so the link's MTU is set on both ends
  first and the bucket holds at least two full frames.
- There is no ``netem`` here (no added delay, jitter or loss): a link's propagation delay
  cannot be emulated, only its rate and its queue. The effect of latency is checked
  against TCP's own arithmetic instead (window / RTT, bandwidth-delay product).

Everything is created by ``link()`` and removed when it exits, whatever happens: deleting a
namespace deletes the veth end inside it and its qdisc. Names carry this process's pid, so
two runs at once do not meet, and ``leftovers()`` finds namespaces of processes that died
without cleaning up. Traffic stays inside the two namespaces: the pair's addresses come
from 10.254.0.0/16 and nothing routes them anywhere else.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

#: every namespace this module makes starts so (then the pid, then a counter)
PREFIX = "zsimnet"
_COUNTER = itertools.count(1)
#: Ethernet's framing beyond the IP packet that a veth's qdisc sees (the 14-byte header;
#: no preamble, FCS or inter-frame gap on a veth): tbf counts this per packet.
ETHERNET_HEADER_BYTES = 14


class LinkUnavailable(RuntimeError):
    """This machine cannot make the link (not root, no ``ip``/``tc``, no tbf): one line why."""


@dataclass(frozen=True)
class LinkSpec:
    """One full-duplex link: ``rate_bps`` bits per second each way (what tbf counts: IP
    packets plus the Ethernet header), ``queue_bytes`` of bottleneck buffer per direction
    (tbf's ``limit``), ``mtu_bytes`` on both ends."""

    rate_bps: float
    queue_bytes: int = 256 * 1024
    mtu_bytes: int = 1500

    @property
    def burst_bytes(self) -> int:
        """tbf's bucket: two full frames, or a millisecond at the rate if that is more (a
        bucket smaller than one frame drops every full-size packet)."""
        frame = self.mtu_bytes + ETHERNET_HEADER_BYTES
        return max(2 * frame, int(self.rate_bps / 8 / 1000))


@dataclass(frozen=True)
class Link:
    """A link made by ``link()``: host ``a`` and host ``b`` (namespace names) and the
    addresses of their ends."""

    a: str
    b: str
    a_address: str
    b_address: str
    spec: LinkSpec

    def popen(self, host: str, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Start ``argv`` inside namespace ``host`` (``self.a`` or ``self.b``)."""
        return subprocess.Popen(["ip", "netns", "exec", host, *argv], **kwargs)

    def python(self, host: str, code: str, *args: str, **kwargs: Any) -> subprocess.Popen[Any]:
        """Run ``python -c code args...`` inside ``host`` with this interpreter."""
        return self.popen(host, [sys.executable, "-c", code, *args], **kwargs)

    def qdisc_stats(self, host: str) -> str:
        """``tc -s qdisc`` of the host's end of the link (sent, dropped, overlimits)."""
        device = "za" if host == self.a else "zb"
        return _run(["ip", "netns", "exec", host, "tc", "-s", "qdisc", "show", "dev", device]).stdout


def available() -> str | None:
    """None when ``link()`` can work here, else one line saying why not."""
    if sys.platform != "linux":
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"the {tool!r} command is missing (Debian: apt-get install iproute2)"
    return None


def _run(argv: Sequence[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(list(argv), capture_output=True, text=True, timeout=30)
    if check and result.returncode != 0:
        message = (result.stderr or result.stdout).strip().splitlines()
        raise LinkUnavailable(f"{' '.join(argv)}: {message[-1] if message else f'exit {result.returncode}'}")
    return result


def leftovers() -> list[str]:
    """Namespaces of this module whose process is gone (a run killed before its cleanup)."""
    listed = _run(["ip", "netns", "list"], check=False).stdout.split()
    found = []
    for name in listed:
        if not name.startswith(PREFIX):
            continue
        pid = name[len(PREFIX):].split("x")[0]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            found.append(name)
    return found


def remove(names: Sequence[str]) -> None:
    """Delete these namespaces (and with them their veth ends and qdiscs); missing ones are fine."""
    for name in names:
        _run(["ip", "netns", "del", name], check=False)


@contextmanager
def link(spec: LinkSpec) -> Iterator[Link]:
    """Two namespaces joined by a shaped veth pair, removed on exit whatever happens.

    Raises ``LinkUnavailable`` (one line) when the machine cannot make it.
    """
    reason = available()
    if reason is not None:
        raise LinkUnavailable(reason)
    remove(leftovers())
    number = next(_COUNTER)
    a, b = f"{PREFIX}{os.getpid()}x{number}a", f"{PREFIX}{os.getpid()}x{number}b"
    subnet = 4 * (number % 16000)
    a_address = f"10.254.{subnet // 256}.{subnet % 256 + 1}"
    b_address = f"10.254.{subnet // 256}.{subnet % 256 + 2}"
    made: list[str] = []
    try:
        for name in (a, b):
            _run(["ip", "netns", "add", name])
            made.append(name)
            _run(["ip", "-n", name, "link", "set", "lo", "up"])
        # the pair is created inside a, its peer moved to b: nothing ever sits in the root namespace
        _run(["ip", "-n", a, "link", "add", "za", "type", "veth", "peer", "name", "zb", "netns", b])
        for name, device, address in ((a, "za", a_address), (b, "zb", b_address)):
            _run(["ip", "-n", name, "link", "set", device, "mtu", str(spec.mtu_bytes)])
            _run(["ip", "-n", name, "addr", "add", f"{address}/30", "dev", device])
            _run(["ip", "-n", name, "link", "set", device, "up"])
            _run(["ip", "-n", name, "link", "set", device, "txqueuelen", "1000"])
            _run(["ip", "netns", "exec", name, "tc", "qdisc", "add", "dev", device, "root", "tbf",
                  "rate", f"{int(spec.rate_bps)}bit", "burst", str(spec.burst_bytes), "limit", str(spec.queue_bytes)])
        yield Link(a, b, a_address, b_address, spec)
    finally:
        remove(made)


def tcp_goodput_bps(spec: LinkSpec, payload_per_packet: int | None = None) -> float:
    """TCP payload bits per second a saturated direction of ``spec`` carries: the rate times
    the share of each full frame that is payload (MSS = MTU - 40 bytes of IPv4 and TCP
    headers - 12 bytes of TCP timestamps, Linux's default; plus the Ethernet header that
    tbf counts)."""
    mss = payload_per_packet if payload_per_packet is not None else spec.mtu_bytes - 52
    frame = mss + 52 + ETHERNET_HEADER_BYTES
    return spec.rate_bps * mss / frame
