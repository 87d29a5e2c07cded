"""Real network links for real-socket tests: two Linux network namespaces joined by a veth
pair, each direction shaped by its own token bucket (``tc qdisc ... tbf``).

This is what the validation of hosts and links runs real pyzmq over (docs/validation.md,
"Links"). What this kernel can and cannot emulate decides the shape:

- A veth pair with a qdisc on each end is a full-duplex link with one queue per direction,
  as ``[[link]]`` describes one: each end's tbf shapes the direction it sends, with that
  direction's own rate and buffer (a link's ``reverse`` gives the way back its own).
- ``tbf`` drops a packet larger than its bucket, so the link's MTU is set on both ends
  first and the bucket holds at least two full frames.
- There is no ``netem`` here (no added delay, jitter or loss): a link's propagation delay
  cannot be emulated, only its rate and its queue. The effect of latency is checked
  against TCP's own arithmetic instead (window / RTT, bandwidth-delay product).

Everything is created by ``link()`` and removed when it exits, whatever happens: deleting a
namespace deletes the veth end inside it and its qdisc (the veth pair is made inside a
namespace, so nothing ever sits in the machine's own). A namespace is recorded before
``ip netns add`` runs, so the clean-up removes it whenever the add is interrupted; SIGINT,
SIGTERM and SIGHUP stop the building only between commands and never the removal
(``validation.interrupts``). Names carry this process's pid and its start time
(``zsimnet<pid>s<start>x<n>...``), so two runs at once do not meet, and a later process that
reuses a dead run's pid makes other names; ``leftovers()`` finds the namespaces of runs that
died without cleaning up (``kill -9``) by that pair. Every ``ip``/``tc`` command has
``COMMAND_TIMEOUT_S``: one that hangs is an ``EnvironmentFault`` naming it. Traffic stays
inside the namespaces: the pairs' addresses come from 10.254.0.0/16 and nothing routes them
anywhere else. ``deployment()`` builds several hosts, and switches as namespaces that forward
between their links (a router: each link its own /30, host routes along the route zsim
chose).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zsim.errors import EnvironmentFault

from . import interrupts

#: every namespace this module makes starts so (then ``run_tag()``: the pid and the process's
#: start time, then a counter)
PREFIX = "zsimnet"
_COUNTER = itertools.count(1)
#: ``<PREFIX><pid>[s<start>]x...``: the owner of a namespace (an older zsim wrote no start)
_NAME = re.compile(rf"{PREFIX}(\d+)(?:s(\d+))?x")
#: where ``ip netns add`` keeps a namespace's name (iproute2's NETNS_RUN_DIR): the file is a
#: bind mount of the namespace, so its times are the namespace's, set when it was made
NETNS_RUN_DIR = Path("/run/netns")
#: how long one ``ip``/``tc`` command may take (each takes milliseconds)
COMMAND_TIMEOUT_S = 30.0
#: Ethernet's framing beyond the IP packet that a veth's qdisc sees (the 14-byte header;
#: no preamble, FCS or inter-frame gap on a veth): tbf counts this per packet.
ETHERNET_HEADER_BYTES = 14
#: the congestion control every connection over a made link uses (per route: ``congctl``)
CONGESTION_CONTROL = "cubic"


class LinkUnavailable(RuntimeError):
    """This machine cannot make the link (not root, no ``ip``/``tc``, no tbf): one line why."""


@dataclass(frozen=True)
class LinkSpec:
    """One full-duplex link: ``rate_bps`` bits per second (what tbf counts: IP packets plus
    the Ethernet header) and ``queue_bytes`` of bottleneck buffer (tbf's ``limit``) from
    its first end to its second, and the other way too unless ``reverse_rate_bps`` or
    ``reverse_queue_bytes`` give the way back its own; ``mtu_bytes`` on both ends."""

    rate_bps: float
    queue_bytes: int = 256 * 1024
    mtu_bytes: int = 1500
    reverse_rate_bps: float | None = None
    reverse_queue_bytes: int | None = None

    @property
    def burst_bytes(self) -> int:
        """tbf's bucket: two full frames, or a millisecond at the rate if that is more (a
        bucket smaller than one frame drops every full-size packet)."""
        frame = self.mtu_bytes + ETHERNET_HEADER_BYTES
        return max(2 * frame, int(self.rate_bps / 8 / 1000))

    @property
    def backward(self) -> LinkSpec:
        """The way back (second end to first) as a link of its own rate and queue."""
        return LinkSpec(rate_bps=self.rate_bps if self.reverse_rate_bps is None else self.reverse_rate_bps,
                        queue_bytes=self.queue_bytes if self.reverse_queue_bytes is None else self.reverse_queue_bytes,
                        mtu_bytes=self.mtu_bytes)


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


def _run(argv: Sequence[str], check: bool = True, interruptible: bool = True) -> subprocess.CompletedProcess[str]:
    """Run one ``ip``/``tc`` command. A stopping signal noted before it raises here, not
    during it (``interrupts.check``), unless the command is part of a clean-up
    (``interruptible=False``: a signal noted after the run's last safe point would stop the
    removal at its first command); the command runs in a session of its own, so the
    terminal's Ctrl-C does not kill it half done. One that does not finish in
    ``COMMAND_TIMEOUT_S`` is stopped and raised as an ``EnvironmentFault`` naming it."""
    if interruptible:
        interrupts.check()
    command = " ".join(argv)
    try:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
    except OSError as exc:
        raise LinkUnavailable(f"{command}: {exc.strerror or exc}") from None
    try:
        stdout, stderr = proc.communicate(timeout=COMMAND_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=5)
        raise EnvironmentFault(command, f"did not finish in {COMMAND_TIMEOUT_S:g} s (stopped; is the kernel or iproute2 stuck?)") from None
    except BaseException:
        # an interruption the shield did not hold (no shield: a caller's own Ctrl-C): the
        # command ends before the clean-up starts, so what it made exists for it to remove
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=COMMAND_TIMEOUT_S)
        _kill_group(proc)
        proc.wait()
        raise
    if check and proc.returncode != 0:
        message = (stderr or stdout).strip().splitlines()
        raise LinkUnavailable(f"{command}: {message[-1] if message else f'exit {proc.returncode}'}")
    return subprocess.CompletedProcess(list(argv), proc.returncode, stdout, stderr)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL a command and whatever it started (its own session: ``_run``), so that no
    grandchild keeps its output pipes open. Not once it was reaped: its pid may be another's."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


def process_start(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks after boot (``/proc/<pid>/stat`` field
    22, proc(5)); None when no such process runs (gone, or a zombie that will do nothing
    more). With the pid it names one process for good: a pid is reused, the pair is not."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: fields 3.. follow the last ")"
    fields = text[text.rfind(")") + 2:].split()
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def run_tag(pid: int | None = None) -> str:
    """``<pid>s<start>``: what names this process's namespaces and temporary folders."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}s{process_start(pid)}"


def owner_alive(pid: int, start: int | None, made_at: float | None = None) -> bool:
    """Is the run that made something named with ``pid`` (and ``start``, when the name has
    it) still running? A name with a start time: the process with that pid must have that
    start time. An older zsim's name without one: the process with that pid must have
    started before the thing was made (``made_at``, seconds since the epoch; unknown: alive)."""
    running = process_start(pid)
    if running is None:
        return False
    if start is not None:
        return running == start
    if made_at is None:
        return True
    ticks = os.sysconf("SC_CLK_TCK")
    # the process's start on the wall clock: now less how long ago it started (CLOCK_BOOTTIME
    # counts from boot, as the start does); a second of margin for the clocks' steps
    started_at = time.time() - (time.clock_gettime(time.CLOCK_BOOTTIME) - running / ticks)
    return made_at >= started_at - 1.0


def leftovers() -> list[str]:
    """Namespaces of this module whose run is gone (killed before its clean-up, ``kill -9``),
    also when another process has its pid now (``owner_alive``)."""
    listed = _run(["ip", "netns", "list"], check=False).stdout.split()
    found = []
    for name in listed:
        owner = _NAME.match(name)
        if owner is None:
            continue
        made_at = None
        if owner.group(2) is None:
            with contextlib.suppress(OSError):
                made_at = (NETNS_RUN_DIR / name).stat().st_mtime
        if not owner_alive(int(owner.group(1)), int(owner.group(2)) if owner.group(2) else None, made_at):
            found.append(name)
    return found


def remove(names: Sequence[str]) -> None:
    """Delete these namespaces (and with them their veth ends and qdiscs); missing ones are
    fine. Every one is tried; a command that hung is raised after the others were."""
    hung: EnvironmentFault | None = None
    for name in names:
        try:
            # never interrupted: the signal that stops the run is raised when the removal ends
            _run(["ip", "netns", "del", name], check=False, interruptible=False)
        except EnvironmentFault as exc:
            hung = hung or exc
    if hung is not None:
        raise hung


def _prepare() -> int:
    """Check the machine can make links, clear leftovers, and return this run's number."""
    reason = available()
    if reason is not None:
        raise LinkUnavailable(reason)
    remove(leftovers())
    return next(_COUNTER)


def _addresses(number: int) -> tuple[str, str]:
    """The two ends' addresses of link ``number``: its own /30 of 10.254.0.0/16."""
    subnet = 4 * (number % 16000)
    return f"10.254.{subnet // 256}.{subnet % 256 + 1}", f"10.254.{subnet // 256}.{subnet % 256 + 2}"


def _subnet(address: str) -> str:
    """The /30 an end's address is in (``10.254.0.5`` -> ``10.254.0.4/30``)."""
    *head, last = address.split(".")
    return ".".join([*head, str(int(last) & ~3)]) + "/30"


def _add_namespace(name: str, made: list[str]) -> None:
    # recorded first: whatever stops the add (a timeout, a signal), the clean-up removes it
    made.append(name)
    _run(["ip", "netns", "add", name])
    _run(["ip", "-n", name, "link", "set", "lo", "up"])


def _join(ends: Sequence[tuple[str, str, str]], spec: LinkSpec) -> None:
    """A veth pair between two namespaces: ``ends`` is (namespace, device, address) for each
    side; each end gets the MTU, its /30 address and its own tbf (the direction it sends)."""
    (a, dev_a, _), (b, dev_b, _) = ends
    # the pair is created inside a, its peer moved to b: nothing ever sits in the root namespace
    _run(["ip", "-n", a, "link", "add", dev_a, "type", "veth", "peer", "name", dev_b, "netns", b])
    # a's egress shapes a -> b with the spec's rate and queue, b's egress the way back with its own
    for (name, device, address), way in zip(ends, (spec, spec.backward), strict=True):
        _run(["ip", "-n", name, "link", "set", device, "mtu", str(spec.mtu_bytes)])
        _run(["ip", "-n", name, "addr", "add", f"{address}/30", "dev", device])
        _run(["ip", "-n", name, "link", "set", device, "up"])
        _run(["ip", "-n", name, "link", "set", device, "txqueuelen", "1000"])
        # CUBIC, Linux's default and what zsim's model of a link follows, whatever this
        # kernel's default (bbr on the project's machine; a namespace may not pick an
        # algorithm outside tcp_allowed_congestion_control, a route may)
        _run(["ip", "-n", name, "route", "replace", _subnet(address), "dev", device, "congctl", CONGESTION_CONTROL])
        _run(["ip", "netns", "exec", name, "tc", "qdisc", "add", "dev", device, "root", "tbf",
              "rate", f"{int(way.rate_bps)}bit", "burst", str(way.burst_bytes), "limit", str(way.queue_bytes)])


@contextmanager
def link(spec: LinkSpec) -> Iterator[Link]:
    """Two namespaces joined by a shaped veth pair, removed on exit whatever happens.

    Raises ``LinkUnavailable`` (one line) when the machine cannot make it.
    """
    made: list[str] = []
    try:
        # signals stop the building between commands and never the removal; the body is the
        # caller's, interrupted as the caller's code always is
        with interrupts.shielded():
            number = _prepare()
            a, b = f"{PREFIX}{run_tag()}x{number}a", f"{PREFIX}{run_tag()}x{number}b"
            a_address, b_address = _addresses(number)
            for name in (a, b):
                _add_namespace(name, made)
            _join(((a, "za", a_address), (b, "zb", b_address)), spec)
        yield Link(a, b, a_address, b_address, spec)
    finally:
        with interrupts.shielded():
            remove(made)


@dataclass(frozen=True)
class Deployment:
    """Hosts made by ``deployment()``: a namespace per host and per switch, and per link each
    end's address and device (a host reaches a linked host at the peer's address on their
    link, and itself at 127.0.0.1)."""

    namespaces: Mapping[str, str]
    #: (host, peer) -> host's address on the link to peer
    addresses: Mapping[tuple[str, str], str]
    #: (host, peer) -> host's device on the link to peer (its qdisc shapes host -> peer)
    devices: Mapping[tuple[str, str], str]
    #: the nodes that forward (``cut`` discards at them)
    switches: frozenset[str] = frozenset()

    def address(self, host: str, seen_from: str) -> str:
        """Where a process on ``seen_from`` reaches ``host``."""
        return "127.0.0.1" if host == seen_from else self.addresses[(host, seen_from)]

    def argv(self, host: str, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside ``host``'s namespace."""
        return ["ip", "netns", "exec", self.namespaces[host], *argv]

    def cut(self, a: str, b: str, restore: bool = False) -> None:
        """Take the link between nodes ``a`` and ``b`` down both ways (``restore``: bring it
        back), silently, as a cable cut behind a switch is: at each end that is a switch, what
        arrives over the link is discarded (``ip rule add iif <device> blackhole``), and what
        it would send over it to a host, by a blackhole route to the host's address on the
        link. No ICMP answers; the hosts' interfaces, carrier, routes and neighbour entries
        stay as they were, so TCP sees pure loss and backs off (link-emulation notes: setting
        a veth down instead loses the neighbour entry and paces recovery by ARP). One end at
        least must be a switch (``zsim.validate`` refuses a cut between two hosts)."""
        verb = "del" if restore else "add"
        for near, far in ((a, b), (b, a)):
            if near not in self.switches:
                continue
            namespace = self.namespaces[near]
            _run(["ip", "-n", namespace, "rule", verb, "iif", self.devices[(near, far)], "blackhole"])
            if far not in self.switches:
                _run(["ip", "-n", namespace, "route", verb, "blackhole", f"{self.addresses[(far, near)]}/32"])

    def qdisc_stats(self, host: str, peer: str) -> dict[str, int]:
        """What ``host``'s end of its link to ``peer`` sent and dropped (``tc -s qdisc``):
        ``bytes`` (as tbf counts them: IP packets plus the Ethernet header), ``packets``,
        ``drops`` (tbf's queue overflowing)."""
        text = _run(["ip", "netns", "exec", self.namespaces[host], "tc", "-s", "qdisc", "show", "dev",
                     self.devices[(host, peer)]]).stdout
        return parse_qdisc_stats(text)


def parse_qdisc_stats(text: str) -> dict[str, int]:
    """``Sent 1234 bytes 56 pkt (dropped 7, overlimits ...`` -> bytes, packets, drops (the
    first qdisc listed: the root)."""
    found = re.search(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+)", text)
    if found is None:
        raise LinkUnavailable(f"tc -s qdisc: no statistics in {text.strip()[:80]!r}")
    return {"bytes": int(found.group(1)), "packets": int(found.group(2)), "drops": int(found.group(3))}


@contextmanager
def deployment(hosts: Sequence[str], links: Sequence[tuple[str, str, LinkSpec]], switches: Sequence[str] = (),
               routes: Mapping[tuple[str, str], Sequence[str]] | None = None) -> Iterator[Deployment]:
    """A namespace per host and per switch, and a shaped veth pair per link (``(node, node,
    spec)``: each end's tbf shapes the direction it sends, so a switch's end is its port's
    queue), removed on exit whatever happens.

    A switch is a namespace that forwards (``net.ipv4.ip_forward``): a router between its
    links' /30 subnets. ``routes`` gives, for a pair of hosts that no link joins directly,
    the nodes a packet crosses from the first to the second (both included; ``zsim.spec.route``
    chooses them); every node on the way but the last gets a host route (/32) to the second
    host's address on the route's last link, through the next node, with CUBIC as every
    link's own subnet has. The second host is reached at that address (``Deployment.address``).
    Hosts forward nothing: a pair with no link and no route cannot reach each other.

    Raises ``LinkUnavailable`` (one line) when the machine cannot make them.
    """
    addresses: dict[tuple[str, str], str] = {}
    devices: dict[tuple[str, str], str] = {}
    made: list[str] = []
    try:
        # signals stop the building between commands and never the removal (``link()``)
        with interrupts.shielded():
            number = _prepare()
            tag = run_tag()
            namespaces = {host: f"{PREFIX}{tag}x{number}h{index}" for index, host in enumerate(hosts)}
            namespaces.update({switch: f"{PREFIX}{tag}x{number}s{index}" for index, switch in enumerate(switches)})
            for name in namespaces.values():
                _add_namespace(name, made)
            for switch in switches:
                # through /proc (sysctl(8) is procps', not always installed); the namespace's own
                _run(["ip", "netns", "exec", namespaces[switch], "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"])
            for index, (a, b, spec) in enumerate(links):
                a_address, b_address = _addresses(next(_COUNTER))
                # device names stay under IFNAMSIZ (15 characters) for any number of links; they
                # live inside this run's namespaces, so no other run's can collide with them
                ends = ((a, f"zl{index}a", a_address), (b, f"zl{index}b", b_address))
                for (host, device, address), (peer, _, _) in zip(ends, reversed(ends), strict=True):
                    addresses[(host, peer)] = address
                    devices[(host, peer)] = device
                _join(tuple((namespaces[host], device, address) for host, device, address in ends), spec)
            # each route both ways: the way back is the same nodes reversed (``zsim.spec.route``
            # refuses a pair joined by two routes of the same length, so it is the route back)
            ways = {key: tuple(nodes) for (first, last), nodes in (routes or {}).items()
                    for key, nodes in (((first, last), nodes), ((last, first), tuple(reversed(nodes))))}
            for (first, last), nodes in ways.items():
                if len(nodes) < 3:
                    continue  # joined by a link of their own: its subnet's route
                # the last host as the route reaches it: its address on the route's last link
                target = addresses[(last, nodes[-2])]
                # every hop but the last (that one reaches the target on its link's own subnet)
                for node, after in itertools.pairwise(nodes[:-1]):
                    _run(["ip", "-n", namespaces[node], "route", "replace", f"{target}/32", "via", addresses[(after, node)],
                          "dev", devices[(node, after)], "congctl", CONGESTION_CONTROL])
                addresses[(last, first)] = target
        yield Deployment(namespaces, addresses, devices, frozenset(switches))
    finally:
        with interrupts.shielded():
            remove(made)


def tcp_goodput_bps(spec: LinkSpec, payload_per_packet: int | None = None) -> float:
    """TCP payload bits per second a saturated direction of ``spec`` carries: the rate times
    the share of each full frame that is payload (MSS = MTU - 40 bytes of IPv4 and TCP
    headers - 12 bytes of TCP timestamps, Linux's default; plus the Ethernet header that
    tbf counts)."""
    mss = payload_per_packet if payload_per_packet is not None else spec.mtu_bytes - 52
    frame = mss + 52 + ETHERNET_HEADER_BYTES
    return spec.rate_bps * mss / frame
