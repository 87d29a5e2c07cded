"""Scenario files: load, validate and freeze.

A scenario is TOML (or the same structure as a Python dict). It is parsed once, at the
edge, into frozen dataclasses; every error names the offending field path and the reason
(``socket[publisher].options.sndhwm: must be >= 0, got -5``). The model never sees a raw
dict. The format is documented in ``docs/scenario-format.md``.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import json
import math
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import fields, files
from .constants import DRAFT_OPTIONS, DRAFT_OPTIONS_TAKEN, KNOWN_UNMODELLED_OPTIONS, OPTION_DEFAULTS, TRANSPORTS
from .distributions import Distribution, parse_distribution
from .errors import ScenarioError, UnsupportedOption
from .socket_types import DIST, ROUTE, SOCKET_TYPES, TYPES, names_by_send
from .socket_types import names as type_names
from .templates import Template, expand_templates, member_pattern, template_name

DEFAULT_PROCESS = "main"

#: Socket types a [[send]] may drive / that receive; conflating types: all read off the one
#: table, ``zsim.socket_types.TYPES``.
CAN_SEND = frozenset(type_names("scheduled_send"))
CAN_RECEIVE = frozenset(type_names("app_recv"))
CONFLATE_TYPES = frozenset(type_names("conflate"))

_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
#: How a ``[[send]]`` spaces its attempts (see ``SendSpec.pacing``).
PACINGS = ("schedule", "after_send")
#: ``INT_MAX``: the largest value of a libzmq socket option.
C_INT_MAX = 2**31 - 1
#: Longest ipc path: ``sizeof(sockaddr_un.sun_path) - 1`` on Linux (libzmq's
#: ``ipc_address_t::resolve`` fails with ENAMETOOLONG beyond it).
IPC_PATH_MAX = 107


# --------------------------------------------------------------------------------------
# Frozen scenario objects


@dataclass(frozen=True)
class Endpoint:
    """A parsed endpoint. ``key`` identifies what a connect must match to reach a bind."""

    text: str
    transport: str
    address: str  # tcp: port as text; ipc: path; inproc: name
    host: str = ""  # tcp: the host part as written (``*``, ``127.0.0.1``, a [[host]] name)
    #: the [[host]] the endpoint lives on ("" for the default host): a loopback address or
    #: ``*`` means the process's own host, a [[host]] name that host (``resolve_endpoint``)
    node: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.transport, self.node, self.address)


@dataclass(frozen=True)
class SocketOptions:
    sndhwm: int = 1000
    rcvhwm: int = 1000
    linger: int = -1
    sndtimeo: int = -1
    rcvtimeo: int = -1
    subscribe: tuple[str, ...] = ()
    immediate: bool = False
    conflate: bool = False
    router_mandatory: bool = False
    xpub_nodrop: bool = False
    sndbuf: int = -1
    rcvbuf: int = -1
    reconnect_ivl: int = 100
    reconnect_ivl_max: int = 0
    routing_id: str | None = None
    xpub_verbose: bool = False
    xpub_verboser: bool = False
    xpub_manual: bool = False
    invert_matching: bool = False
    router_handover: bool = False
    probe_router: bool = False
    #: the routing id a ROUTER gives the peer of its first connect (ZMQ_CONNECT_ROUTING_ID)
    connect_routing_id: str | None = None
    req_relaxed: bool = False
    req_correlate: bool = False
    #: ZMTP heartbeats (ms; timeout -1: the interval) and TCP keepalive (-1: the OS's;
    #: idle and intvl in seconds), zsim.model.transport.liveness
    heartbeat_ivl: int = 0
    heartbeat_timeout: int = -1
    heartbeat_ttl: int = 0
    tcp_keepalive: int = -1
    tcp_keepalive_idle: int = -1
    tcp_keepalive_intvl: int = -1
    tcp_keepalive_cnt: int = -1


#: boolean options, each with the predicate of ``zsim.socket_types.SocketType`` that says
#: which types take it: the types whose ``xsetsockopt`` (or, for ``invert_matching``,
#: whose send or receive) reads it in libzmq 4.3.5
_TYPE_OPTIONS = {
    "xpub_verbose": "app_sees_subscriptions",  # xpub_t::xsetsockopt; no effect on a PUB (pub_t passes nothing up)
    "xpub_verboser": "app_sees_subscriptions",
    "xpub_manual": "app_sees_subscriptions",
    "invert_matching": "inverts_matching",  # xpub_t::xsend, xsub_t::match (a filtering SUB)
    "router_handover": "addresses_peers",  # router_t::xsetsockopt
    "probe_router": "probes",  # router_t and dealer_t::xsetsockopt (REQ is a dealer_t)
    "req_relaxed": "request",  # req_t::xsetsockopt
    "req_correlate": "request",
}


@dataclass(frozen=True)
class SocketSpec:
    name: str
    type: str
    process: str
    bind: tuple[Endpoint, ...]
    connect: tuple[Endpoint, ...]
    open_at_s: float
    close_at_s: float | None
    options: SocketOptions

    @property
    def routing_id(self) -> str:
        """The identity a ROUTER peer knows this socket by (its name unless set)."""
        return self.options.routing_id if self.options.routing_id is not None else self.name


@dataclass(frozen=True)
class SendSpec:
    name: str
    socket: str
    count: int | None
    duration_s: float | None
    interval: Distribution  # time between the end of one send call and the next attempt
    size: Distribution
    start_s: float
    topics: tuple[str, ...]
    parts: int
    dontwait: bool
    on_again: str  # "skip" | "stop"
    to: tuple[str, ...]  # ROUTER destinations, cycled
    #: "schedule": attempts at start + drawn intervals, independent of how long each send
    #: takes (an arrival process; default with rate_per_s); "after_send": the interval is
    #: the wait after each send call returns (send(); sleep(interval); default with interval_s)
    pacing: str = "after_send"
    #: the program's own CPU work per send attempt beyond the ZeroMQ call (building the
    #: message, bookkeeping); 0: a bare loop, ``sock.send(msg)`` and nothing else
    loop_cpu_s: float = 0.0
    #: how the program waits (an interval, a scheduled due time): 0, it sleeps
    #: (``time.sleep``) and wakes as late as the machine's sleeps do; > 0, it sleeps until
    #: this long before the deadline, then spins on the clock (CPU work, on time)
    wait_spin_s: float = 0.0
    #: a REQ's wait for each reply, when RCVTIMEO expires (``zmq.Again``): "retry" calls
    #: recv again, "stop" ends the loop (a REQ cannot send before that reply came)
    on_timeout: str = "retry"

    @property
    def streams(self) -> dict[str, str]:
        """The random stream each drawn field uses (``zsim.build.stream_factory`` names):
        one naming for the simulator and the real harness, so a seed gives both the same
        intervals and sizes."""
        return {"interval": f"send.{self.name}", "size": f"send.{self.name}.size"}


@dataclass(frozen=True)
class RecvSpec:
    name: str
    socket: str
    service: Distribution
    start_s: float
    count: int | None
    duration_s: float | None
    reply: bool
    reply_size: Distribution | None  # None: same size as the request
    pause_every: Distribution | None
    pause: Distribution | None
    on_timeout: str  # "retry" | "stop"
    forward_to: str | None = None  # a pipeline stage: send a result on this socket
    #: the service time is CPU work (a busy loop) rather than waiting (sleep, I/O); it
    #: only matters with [machine] cores, where CPU work needs a core
    busy: bool = False
    #: the program's own CPU work per message received beyond the recv call (see SendSpec)
    loop_cpu_s: float = 0.0
    #: how a waiting service time and a pause are waited (see SendSpec)
    wait_spin_s: float = 0.0

    @property
    def streams(self) -> dict[str, str]:
        """The random stream each drawn field uses (see ``SendSpec.streams``)."""
        return {"service": f"recv.{self.name}", "reply_size": f"recv.{self.name}.reply_size",
                "pause_every": f"recv.{self.name}.pause_every", "pause": f"recv.{self.name}.pause"}


#: What a ``[[call]]`` does: the ZeroMQ call the program makes on a socket at a time.
CALL_ACTIONS = ("bind", "unbind", "connect", "disconnect", "set", "subscribe", "unsubscribe")


@dataclass(frozen=True)
class CallSpec:
    """A ``[[call]]``: at ``at_s`` the socket's thread calls ``zmq_bind``, ``zmq_unbind``,
    ``zmq_connect``, ``zmq_disconnect`` (each endpoint in turn), ``zmq_setsockopt``
    (``options``, in the table's order) or subscribes / unsubscribes (``prefixes``)."""

    socket: str
    at_s: float
    action: str  # one of CALL_ACTIONS
    endpoints: tuple[Endpoint, ...] = ()
    #: "set": (option, value) in order, each checked as in [[socket]] options
    options: tuple[tuple[str, Any], ...] = ()
    prefixes: tuple[str, ...] = ()
    #: where it was written, for messages (``call[3]``)
    label: str = ""


@dataclass(frozen=True)
class ProxySpec:
    name: str
    frontend: str
    backend: str


@dataclass(frozen=True)
class AppSpec:
    """``[[app]]``: SimPy code run beside the model on the scenario's sockets (``zsim.app``)."""

    name: str
    function: str  # "module:function" or "file.py:function" (relative to the scenario)


@dataclass(frozen=True)
class ProcessSpec:
    name: str
    exit_at_s: float | None = None
    exit_after_sends: bool = False
    crash_at_s: float | None = None
    restart_at_s: float | None = None
    #: the cores its threads may use (``os.sched_setaffinity``); None: every core
    affinity: tuple[int, ...] | None = None
    #: its context's I/O threads (``zmq.Context(io_threads=n)``, libzmq's default 1)
    io_threads: int = 1
    #: the [[host]] it runs on ("" for the default host every process without one shares)
    host: str = ""


@dataclass(frozen=True)
class HostSpec:
    """``[[host]]``: a machine of the deployment with its own cores (``zsim.model.cpu``) and,
    optionally, a profile of its own (another kind of machine: its processes' call costs,
    wake-ups and sleep lateness, its engines' costs and its scheduler; a connection's
    handshake, hop latency and loopback kernel buffers are the connecting side's host's).

    ``cores = None``: the ``[machine]`` table's cores, else the host's profile's.
    ``profile = None``: the scenario's profile."""

    name: str
    cores: int | None = None
    profile: str | None = None


@dataclass(frozen=True)
class SwitchSpec:
    """``[[switch]]``: a switch or router between links (docs/model.md, "Links"). It runs no
    process; it forwards what reaches it on one link onto the next link of the route, through
    that link's queue on its side (a port: drop-tail, and a drop there is a loss to TCP)."""

    name: str


@dataclass(frozen=True)
class LinkWay:
    """One direction of a ``[[link]]``: ``bandwidth_bps`` bits per second on the wire,
    ``latency_s`` one-way propagation, ``queue_bytes`` the sending host's buffer in front
    of it, ``loss`` each packet's probability of being lost on the way."""

    bandwidth_bps: float
    latency_s: float = 0.0
    queue_bytes: int = 0
    loss: float = 0.0


@dataclass(frozen=True)
class LinkSpec:
    """``[[link]]``: a full-duplex network link between two hosts (docs/model.md, "Links").

    ``bandwidth_bps`` bits per second on the wire; ``latency_s`` one-way propagation;
    ``queue_bytes`` the bottleneck's buffer; ``loss`` each packet's probability of being
    lost on the way: all four of ``hosts[0] -> hosts[1]``, and of the way back too unless
    ``reverse`` (the link's ``reverse`` table, resolved: every field it does not give is
    the forward one) differs. ``mtu_bytes`` is the link's, both ways."""

    name: str
    hosts: tuple[str, str]
    bandwidth_bps: float
    latency_s: float = 0.0
    mtu_bytes: int = 1500
    queue_bytes: int = 0  # 0 = the default (``DEFAULT_LINK_QUEUE_PACKETS`` full frames)
    loss: float = 0.0
    reverse: LinkWay | None = None  # hosts[1] -> hosts[0]; None: the same as forward

    @property
    def forward(self) -> LinkWay:
        """``hosts[0] -> hosts[1]``."""
        return LinkWay(self.bandwidth_bps, self.latency_s, self.queue_bytes, self.loss)

    @property
    def backward(self) -> LinkWay:
        """``hosts[1] -> hosts[0]``."""
        return self.reverse if self.reverse is not None else self.forward

    @property
    def symmetric(self) -> bool:
        """Both directions alike."""
        return self.backward == self.forward

    def ways(self) -> tuple[tuple[str, str, LinkWay], tuple[str, str, LinkWay]]:
        """``(sender, receiver, its direction)`` for both directions, forward first."""
        a, b = self.hosts
        return (a, b, self.forward), (b, a, self.backward)


#: ``[[fault]]`` kinds: a link down both ways, a set of hosts (and switches) cut off from
#: the rest (every link with one end in the set down), each packet on a link lost with a
#: probability for a while, a host that dies with its kernel (its processes crash, it answers
#: nothing) and starts again (docs/scenario-format.md, "Faults")
FAULT_KINDS = ("link_down", "partition", "loss", "host_crash")


@dataclass(frozen=True)
class FaultSpec:
    """``[[fault]]``: something that breaks in the network for a while (docs/model.md,
    "Outages"). ``kind`` is one of ``FAULT_KINDS``; ``link`` names the link of a
    ``link_down`` or ``loss`` fault, ``hosts`` the nodes a ``partition`` cuts off. It
    happens once, from ``at_s`` for ``duration_s``, or again and again: up for an
    exponential time of mean ``mtbf_s``, then down for one of mean ``mttr_s`` (drawn
    from the run's seed), until the run ends. ``loss``: each packet's probability of
    being lost while a ``loss`` fault lasts."""

    name: str
    kind: str
    link: str | None = None
    hosts: tuple[str, ...] = ()  # a partition's nodes, or a host_crash's one host
    at_s: float | None = None
    duration_s: float | None = None
    mtbf_s: float | None = None
    mttr_s: float | None = None
    loss: float = 0.0

    @property
    def random(self) -> bool:
        """Failures and repairs drawn at random (``mtbf_s``, ``mttr_s``), not one interval."""
        return self.mtbf_s is not None

    def intervals(self, stream: Callable[[str], Any], until: float | None) -> list[tuple[float, float]]:
        """When it happens: ``[(at_s, at_s + duration_s)]``, or failures and repairs drawn from
        its own random stream (``stream("fault.<name>")``: up for an exponential time of mean
        ``mtbf_s``, then down for one of mean ``mttr_s``) up to ``until``. The model and
        ``zsim validate`` draw them alike from the run's seed (``zsim.build.Streams``)."""
        if not self.random:
            assert self.at_s is not None and self.duration_s is not None
            return [(self.at_s, self.at_s + self.duration_s)]
        rng = stream(f"fault.{self.name}")
        found: list[tuple[float, float]] = []
        t = float(rng.exponential(self.mtbf_s))
        while until is not None and t < until:
            repaired = t + float(rng.exponential(self.mttr_s))
            found.append((t, repaired))
            t = repaired + float(rng.exponential(self.mtbf_s))
        return found

    def links_cut(self, links: Sequence[LinkSpec]) -> tuple[LinkSpec, ...]:
        """The links it takes down (or makes lossy): its own, or a partition's crossing links."""
        if self.link is not None:
            return tuple(link for link in links if link.name == self.link)
        inside = set(self.hosts)  # a host that crashed: nothing crosses any of its links
        return tuple(link for link in links if (link.hosts[0] in inside) != (link.hosts[1] in inside))


@dataclass(frozen=True)
class MachineSpec:
    """``[machine]``: the cores every thread of the scenario shares (``zsim.model.cpu``).

    ``cores = None`` (no ``[machine]`` table, or no ``cores`` in it): the active profile's
    core count, and 0 (a core per thread) when the profile records none."""

    cores: int | None = None


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    until_s: float | None
    profile: str | None
    seed: int | None
    processes: tuple[ProcessSpec, ...]
    sockets: tuple[SocketSpec, ...]
    sends: tuple[SendSpec, ...]
    recvs: tuple[RecvSpec, ...]
    proxies: tuple[ProxySpec, ...]
    raw: Mapping[str, Any] = field(compare=False, repr=False)
    base_dir: str = field(default=".", compare=False, repr=False)
    source: str = field(default="<dict>", compare=False, repr=False)
    apps: tuple[AppSpec, ...] = ()
    #: the templates the scenario was written with and their members (``zsim.templates``)
    templates: tuple[Template, ...] = ()
    machine: MachineSpec = MachineSpec()
    #: the deployment's hosts and the links between them (empty: one machine, loopback),
    #: and the switches some links join (``route``)
    hosts: tuple[HostSpec, ...] = ()
    links: tuple[LinkSpec, ...] = ()
    switches: tuple[SwitchSpec, ...] = ()
    #: what breaks in the network while it runs (``[[fault]]``)
    faults: tuple[FaultSpec, ...] = ()
    #: calls the program makes on its sockets while it runs, in time order (stable)
    calls: tuple[CallSpec, ...] = ()

    def socket(self, name: str) -> SocketSpec:
        return self._sockets_by_name[name]

    def starts_at(self, workload: SendSpec | RecvSpec) -> float:
        """When a [[send]] or [[recv]] really starts: its ``start_s``, or later if its socket
        opens later (``open_at_s``). One rule for the simulator (``zsim.build``), the real
        harness, the warnings and ``zsim export``."""
        return max(workload.start_s, self.socket(workload.socket).open_at_s)

    def never_waits(self, send: SendSpec) -> bool:
        """Whether a [[send]]'s calls return at once instead of blocking: ``dontwait``, or
        its socket's ``sndtimeo = 0`` (libzmq's ``socket_base_t::send`` returns EAGAIN
        without waiting either way). One rule for the simulator and the real harness."""
        return send.dontwait or self.socket(send.socket).options.sndtimeo == 0

    def ends_at(self, workload: SendSpec | RecvSpec) -> float | None:
        """``starts_at`` + ``duration_s``; None for a workload bounded otherwise (or not at all)."""
        return self.starts_at(workload) + workload.duration_s if workload.duration_s is not None else None

    @functools.cached_property
    def _sockets_by_name(self) -> dict[str, SocketSpec]:
        # a dict, built once: a scan per lookup made building a 1,000-socket model quadratic
        return {sock.name: sock for sock in self.sockets}

    def process(self, name: str) -> ProcessSpec:
        for proc in self.processes:
            if proc.name == name:
                return proc
        raise KeyError(name)

    @property
    def digest(self) -> str:
        """A stable hash of the scenario's content (not of its file name or location)."""
        return scenario_digest(self.raw)

    @property
    def validation(self) -> Mapping[str, Any]:
        """The ``[validation]`` table (tolerances for ``zsim validate``), untouched."""
        return self.raw.get("validation", {})


def scenario_digest(raw: Mapping[str, Any]) -> str:
    text = json.dumps(raw, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------------------
# Field helpers


_check_keys = fields.check_keys
_closest = fields.closest


def _table(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ScenarioError(path, f"must be a table, got {type(value).__name__}")
    return value


def _tables(value: Any, path: str) -> list[Mapping[str, Any]]:
    if isinstance(value, dict):
        raise ScenarioError(path, f"must be an array of tables ([[{path}]]), got a single table ([{path}])")
    if not isinstance(value, list):
        raise ScenarioError(path, f"must be an array of tables ([[{path}]]), got {type(value).__name__}")
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise ScenarioError(f"{path}[{index}]", f"must be a table, got {type(item).__name__}")
    return value


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise ScenarioError(path, f"must be a string, got {value!r}")
    return value


def _name(value: Any, path: str) -> str:
    from .limits import check_text

    text = check_text(_str(value, path), path)
    if not _NAME_RE.match(text):
        raise ScenarioError(path, f"must be a name of letters, digits, '_', '-' or '.', got {text!r}")
    return text


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        if value in (0, 1) and isinstance(value, int):
            return bool(value)
        raise ScenarioError(path, f"must be true or false, got {value!r}")
    return value


_int = fields.integer


def _option_int(value: Any, path: str, minimum: int) -> int:
    """A socket option: libzmq takes a C ``int`` (``zmq_setsockopt``), pyzmq refuses more."""
    number = _int(value, path, minimum)
    if number > C_INT_MAX:
        raise ScenarioError(path, f"must be <= {C_INT_MAX:,} (libzmq socket options are C ints; pyzmq refuses larger), got {number:,}")
    return number


def _time(value: Any, path: str, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError(path, f"must be a number of seconds, got {fields.short(value)}")
    from .limits import MAX_SECONDS

    number = float(value) if isinstance(value, float) or abs(value) <= MAX_SECONDS else math.inf  # 10**400: no float
    if not math.isfinite(number):
        raise ScenarioError(path, f"must be finite, got {fields.short(value)}")
    if number < 0 or (positive and number == 0):
        raise ScenarioError(path, f"must be {'> 0' if positive else '>= 0'}, got {value!r}")
    if number > MAX_SECONDS:
        raise ScenarioError(path, f"must be at most {MAX_SECONDS:g} s (about 32 years; zsim.limits.MAX_SECONDS), got {value!r}")
    return number


def _opt_time(table: Mapping[str, Any], key: str, path: str, positive: bool = False) -> float | None:
    if key not in table:
        return None
    return _time(table[key], f"{path}.{key}", positive)


def _str_list(value: Any, path: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list):
        raise ScenarioError(path, f"must be a string or a list of strings, got {value!r}")
    return tuple(_str(item, f"{path}[{index}]") for index, item in enumerate(value))


def parse_endpoint(text: str, path: str) -> Endpoint:
    """Parse ``tcp://host:port``, ``ipc://path`` or ``inproc://name`` (as pyzmq accepts them)."""
    if any(ord(char) < 32 or ord(char) == 127 for char in text):
        raise ScenarioError(path, f"endpoint {text!r} contains a control character (NUL, newline...): libzmq endpoints are C strings")
    if "://" not in text:
        raise ScenarioError(path, f"endpoint {text!r} must look like tcp://127.0.0.1:5555, ipc://name or inproc://name")
    transport, address = text.split("://", 1)
    if transport not in TRANSPORTS:
        raise ScenarioError(path, f"transport {transport!r} is not modelled; one of {', '.join(TRANSPORTS)}")
    if not address:
        raise ScenarioError(path, f"endpoint {text!r} has an empty address")
    if transport == "tcp":
        host, sep, port = address.rpartition(":")
        if not sep or not host:
            raise ScenarioError(path, f"tcp endpoint {text!r} needs host:port")
        if port == "*" or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
            raise ScenarioError(path, f"tcp endpoint {text!r} needs a fixed port number 1-65535 (on one machine the validation harness "
                                      "maps it to a free port)")
        host = host.strip("[]")
        if host not in LOCAL_HOSTS and not _NAME_RE.match(host):
            raise ScenarioError(path, f"tcp host {host!r}: name a [[host]] of the scenario, or use 127.0.0.1, localhost or * for "
                                      "the process's own host")
        return Endpoint(text, "tcp", str(int(port)), host)
    if transport == "ipc" and address != "*" and len(address.encode()) > IPC_PATH_MAX:
        raise ScenarioError(path, f"ipc path is {len(address.encode())} bytes; Linux allows at most {IPC_PATH_MAX} (ENAMETOOLONG)")
    return Endpoint(text, transport, address)


# --------------------------------------------------------------------------------------
# Sections


_SCENARIO_KEYS = {"name", "description", "until_s", "profile", "seed"}
_CALL_KEYS = {"socket", "at_s", *CALL_ACTIONS}
_TOP_KEYS = {"scenario", "machine", "host", "switch", "link", "fault", "process", "socket", "send", "recv", "proxy", "app", "call",
             "validation", "sweep", "limits"}
_SWITCH_KEYS = {"name"}
_FAULT_KEYS = {"name", "kind", "link", "hosts", "host", "at_s", "duration_s", "mtbf_s", "mttr_s", "loss"}
_HOST_KEYS = {"name", "cores", "profile"}
_LINK_KEYS = {"name", "hosts", "bandwidth_bps", "latency_s", "mtu_bytes", "queue_bytes", "loss", "reverse"}
#: What a link's ``reverse`` table may set for ``hosts[1] -> hosts[0]`` (one MTU per link:
#: both ends of a wire must agree on it, ``mtu_bytes`` is not a direction's)
_LINK_WAY_KEYS = {"bandwidth_bps", "latency_s", "queue_bytes", "loss"}
#: The addresses a tcp endpoint may use for its own host (libzmq's wildcard and loopback).
LOCAL_HOSTS = ("*", "0.0.0.0", "127.0.0.1", "localhost", "::1", "::")
#: A link's default bottleneck buffer per direction, in full frames: Linux's default
#: ``txqueuelen`` of an Ethernet device (1000 packets, ``ether_setup`` in
#: net/ethernet/eth.c), the queue a sending host's interface holds.
DEFAULT_LINK_QUEUE_PACKETS = 1000
#: Bytes of framing a link counts per packet beyond the IP packet: the Ethernet header
#: (what a qdisc on a Linux interface counts; no preamble, FCS or inter-frame gap).
ETHERNET_HEADER_BYTES = 14
#: ZMQ_HEARTBEAT_TTL's largest value: ZMTP's PING carries it in deciseconds in 16 bits
#: (``options_t::setsockopt`` refuses more with EINVAL)
HEARTBEAT_TTL_MAX_MS = 6553599
#: The smallest MTU a link may have: IPv4's minimum datagram every host must accept
#: (RFC 791), which leaves a TCP segment room for data after 52 bytes of headers.
MIN_MTU_BYTES = 576
MAX_MTU_BYTES = 65_535
_MACHINE_KEYS = {"cores"}
#: The most cores or I/O threads a scenario may ask for (a sanity bound, not libzmq's).
MAX_CORES = 4096
_APP_KEYS = {"name", "function"}
_PROCESS_KEYS = {"name", "exit_at_s", "exit_after_sends", "crash_at_s", "restart_at_s", "affinity", "io_threads", "host"}
_SOCKET_KEYS = {"name", "type", "process", "bind", "connect", "open_at_s", "close_at_s", "options"}
_SEND_KEYS = {
    "name", "socket", "count", "duration_s", "interval_s", "rate_per_s", "size_bytes", "start_s",
    "topic", "parts", "dontwait", "on_again", "to", "pacing", "loop_cpu_s", "wait_spin_s", "on_timeout",
}
_RECV_KEYS = {
    "name", "socket", "service_s", "busy", "start_s", "count", "duration_s", "reply", "reply_size_bytes",
    "pause_every_s", "pause_s", "on_timeout", "forward_to", "loop_cpu_s", "wait_spin_s",
}
_PROXY_KEYS = {"name", "frontend", "backend"}


def parse_options(raw: Any, path: str, sock_type: str) -> SocketOptions:
    table = _table(raw, path)
    values: dict[str, Any] = {}
    hwm_both: int | None = None
    for key, value in table.items():
        opt_path = f"{path}.{key}"
        if key != key.lower():
            raise ScenarioError(opt_path, f"option names are pyzmq's lowercase names (did you mean {key.lower()!r}?)")
        if key == "hwm":
            hwm_both = _option_int(value, opt_path, 0)
            continue
        if key in KNOWN_UNMODELLED_OPTIONS:
            raise UnsupportedOption(opt_path, "is a ZeroMQ option that zsim does not model")
        if key in DRAFT_OPTIONS:
            release = ("a release build takes it anyway" if key in DRAFT_OPTIONS_TAKEN
                       else "a release build, as in pyzmq's wheels, refuses it with EINVAL")
            raise UnsupportedOption(opt_path, f"is in libzmq 4.3.5's draft API ({release}); zsim does not model it")
        if key not in OPTION_DEFAULTS:
            close = _closest(key, set(OPTION_DEFAULTS) | {"hwm"})
            hint = f" (did you mean {close!r}?)" if close else ""
            raise ScenarioError(opt_path, f"unknown socket option{hint}")
        if key in ("sndhwm", "rcvhwm"):
            values[key] = _option_int(value, opt_path, 0)
        elif key in ("linger", "sndtimeo", "rcvtimeo", "reconnect_ivl", "sndbuf", "rcvbuf"):
            values[key] = _option_int(value, opt_path, -1)
        elif key == "reconnect_ivl_max":
            values[key] = _option_int(value, opt_path, 0)
        elif key in ("heartbeat_ivl", "heartbeat_ttl"):
            values[key] = _option_int(value, opt_path, 0)
            if key == "heartbeat_ttl" and values[key] > HEARTBEAT_TTL_MAX_MS:
                # zmtp sends it in deciseconds in 16 bits (options_t::setsockopt: EINVAL beyond)
                raise ScenarioError(opt_path, f"must be <= {HEARTBEAT_TTL_MAX_MS:,} ms (ZMTP sends it in 16 bits of deciseconds), "
                                              f"got {values[key]:,}")
        elif key == "tcp_keepalive":
            values[key] = _option_int(value, opt_path, -1)
            if values[key] > 1:
                raise ScenarioError(opt_path, f"must be -1 (the OS's default), 0 (off) or 1 (on), got {values[key]}")
        elif key in ("heartbeat_timeout", "tcp_keepalive_idle", "tcp_keepalive_intvl", "tcp_keepalive_cnt"):
            values[key] = _option_int(value, opt_path, -1)
            if values[key] == 0 and key != "heartbeat_timeout":
                raise ScenarioError(opt_path, "must be -1 (the OS's default) or at least 1")
        elif key in ("immediate", "conflate", "router_mandatory", "xpub_nodrop") or key in _TYPE_OPTIONS:
            values[key] = _bool(value, opt_path)
        elif key == "subscribe":
            values[key] = _str_list(value, opt_path)
        elif key in ("routing_id", "connect_routing_id"):
            rid = _str(value, opt_path)
            if not rid or len(rid.encode()) > 255:
                raise ScenarioError(opt_path, "must be 1 to 255 bytes")
            values[key] = rid
    if hwm_both is not None:
        # pyzmq's ``sock.hwm = n`` property (Socket.set_hwm) sets both directions;
        # explicit sndhwm/rcvhwm in the same table win.
        values.setdefault("sndhwm", hwm_both)
        values.setdefault("rcvhwm", hwm_both)
    traits = TYPES[sock_type]
    if "subscribe" in values and not traits.sends_subscriptions:
        subscribers = " and ".join(type_names("sends_subscriptions"))
        raise ScenarioError(f"{path}.subscribe", f"only {subscribers} sockets subscribe, this is a {sock_type}")
    if values.get("conflate") and sock_type not in CONFLATE_TYPES:
        raise ScenarioError(f"{path}.conflate", f"has no effect on {sock_type} in libzmq 4.3.5 (only {', '.join(sorted(CONFLATE_TYPES))})")
    # a type's own option on another type is EINVAL in libzmq whatever its value
    # (socket_base_t::setsockopt falls through to the type's xsetsockopt, which refuses it)
    if "router_mandatory" in values and traits.send != ROUTE:
        raise ScenarioError(f"{path}.router_mandatory", f"applies to ROUTER sockets only, this is a {sock_type}")
    if "xpub_nodrop" in values and traits.send != DIST:
        raise ScenarioError(f"{path}.xpub_nodrop", f"applies to {' and '.join(names_by_send(DIST))} sockets only, this is a {sock_type}")
    for key, predicate in _TYPE_OPTIONS.items():
        if values.get(key) and not getattr(traits, predicate):
            raise ScenarioError(f"{path}.{key}", f"applies to {' and '.join(type_names(predicate))} sockets only, this is a {sock_type}")
    if "connect_routing_id" in values and not traits.addresses_peers:
        raise ScenarioError(f"{path}.connect_routing_id", f"applies to ROUTER sockets only, this is a {sock_type}")
    return SocketOptions(**values)


def _check_connect_routing_id(options: SocketOptions, connects: tuple[Endpoint, ...], path: str) -> None:
    """ZMQ_CONNECT_ROUTING_ID names the peer of the next ``zmq_connect``: here the socket's
    first. ``router_t::identify_peer`` reads it only for a pipe the connect itself attaches
    (``locally_initiated``): with ``immediate`` a tcp or ipc connect's pipe comes after the
    handshake (``session_base_t::engine_ready``) and the option would stay unused."""
    if not connects:
        raise ScenarioError(path, "names the peer of the socket's first connect, and this socket connects nothing")
    if options.immediate and connects[0].transport != "inproc":
        raise ScenarioError(path, f"has no effect with immediate = true on {connects[0].transport}: the pipe is attached after "
                                  "the handshake, not by the connect (router_t::identify_peer)")


def _label(kind: str, index: int, table: Mapping[str, Any], key: str = "name") -> str:
    name = table.get(key)
    if isinstance(name, str) and name:
        return f"{kind}[{name}]"
    return f"{kind}[{index}]"


def _expand_to(raw: dict[str, Any], origin: Sequence[tuple[str, int] | None]) -> None:
    """A ROUTER ``[[send]]``'s ``to = ["w"]`` naming a socket template (and no socket or
    routing id of its own) means every member, in order: their routing ids (names, unless
    the members set ``routing_id``). Written as the template's name it would otherwise
    route to nobody and every message would be dropped as unroutable."""
    sockets = [entry if isinstance(entry, dict) else {} for entry in raw.get("socket") or []]

    def routing_id(entry: dict[str, Any]) -> Any:
        options = entry.get("options")
        return options.get("routing_id", entry.get("name")) if isinstance(options, dict) else entry.get("name")

    own = {entry.get("name") for entry in sockets} | {routing_id(entry) for entry in sockets}
    members: dict[str, list[Any]] = {}
    for entry, found in zip(sockets, origin, strict=False):
        if found is not None:
            members.setdefault(found[0], []).append(routing_id(entry))
    for send in raw.get("send") or []:
        to = send.get("to") if isinstance(send, dict) else None
        if isinstance(to, list) and any(isinstance(t, str) and t in members and t not in own for t in to):
            send["to"] = [m for t in to for m in (members[t] if isinstance(t, str) and t in members and t not in own else [t])]


def from_dict(raw: Mapping[str, Any], *, base_dir: str = ".", source: str = "<dict>") -> Scenario:
    """Validate a scenario given as a dict (the TOML structure) and freeze it.

    Templates (``count`` on a ``[[process]]`` or ``[[socket]]``, ``copies`` on a
    ``[[send]]`` or ``[[recv]]``) are expanded first (``zsim.templates``): the scenario's
    blocks, ``raw`` and digest are those of the expanded scenario, ``templates`` says which
    blocks are members of which template. An error in a member names its template.
    """
    data: dict[str, Any] = copy.deepcopy(dict(_table(raw, "")))
    _check_keys(data, _TOP_KEYS, "")
    expansion = expand_templates(data, lambda name: bool(_NAME_RE.match(name)))
    if not any(expansion.templates.values()):
        return _from_expanded(data, base_dir, source)
    _expand_to(expansion.raw, expansion.origin.get("socket", []))
    try:
        scenario = _from_expanded(expansion.raw, base_dir, source)
    except ScenarioError as exc:
        raise expansion.explain(exc) from None
    names = {"host": [h.name for h in scenario.hosts], "switch": [sw.name for sw in scenario.switches],
             "link": [link.name for link in scenario.links],
             "process": [p.name for p in scenario.processes], "socket": [s.name for s in scenario.sockets],
             "send": [s.name for s in scenario.sends], "recv": [r.name for r in scenario.recvs],
             # a [[call]] has no name: its label (``call[3]``), in the file's order as finish wants
             "call": [f"call[{index}]" for index in range(len(expansion.raw.get("call") or []))]}
    return dataclasses.replace(scenario, templates=expansion.finish(names))


def _from_expanded(raw: dict[str, Any], base_dir: str, source: str) -> Scenario:
    """``from_dict`` of a scenario without templates."""
    head = _table(raw.get("scenario", {}), "scenario")
    _check_keys(head, _SCENARIO_KEYS, "scenario")
    from .limits import check_text

    name = check_text(_str(head.get("name", Path(source).stem if source != "<dict>" else "scenario"), "scenario.name"), "scenario.name")
    description = check_text(_str(head.get("description", ""), "scenario.description"), "scenario.description",
                             "MAX_DESCRIPTION_CHARS")
    until_s = _opt_time(head, "until_s", "scenario", positive=True)
    profile = _str(head["profile"], "scenario.profile") if "profile" in head else None
    seed = _int(head["seed"], "scenario.seed", 0) if "seed" in head else None

    machine = _parse_machine(raw.get("machine"))
    hosts = _parse_hosts(raw.get("host", []))
    switches = _parse_switches(raw.get("switch", []), {host.name for host in hosts})
    links = _parse_links(raw.get("link", []), {host.name for host in hosts}, {switch.name for switch in switches})
    faults = _parse_faults(raw.get("fault", []), hosts, switches, links, until_s)

    # processes
    processes: list[ProcessSpec] = []
    seen_process: set[str] = set()
    for index, table in enumerate(_tables(raw.get("process", []), "process")):
        path = _label("process", index, table)
        _check_keys(table, _PROCESS_KEYS, path)
        if "name" not in table:
            raise ScenarioError(f"{path}.name", "missing")
        pname = _name(table["name"], f"{path}.name")
        if pname in seen_process:
            raise ScenarioError(f"{path}.name", f"duplicate process name {pname!r}")
        seen_process.add(pname)
        crash = _opt_time(table, "crash_at_s", path)
        restart = _opt_time(table, "restart_at_s", path)
        if restart is not None and crash is None:
            raise ScenarioError(f"{path}.restart_at_s", "needs crash_at_s (a process restarts after it crashed)")
        if restart is not None and crash is not None and restart <= crash:
            raise ScenarioError(f"{path}.restart_at_s", f"must be after crash_at_s ({crash}), got {restart}")
        host = _host_of(table, path, hosts)
        host_cores = next((h.cores for h in hosts if h.name == host and h.cores is not None), machine.cores)
        processes.append(
            ProcessSpec(
                name=pname,
                exit_at_s=_opt_time(table, "exit_at_s", path),
                exit_after_sends=_bool(table.get("exit_after_sends", False), f"{path}.exit_after_sends"),
                crash_at_s=crash,
                restart_at_s=restart,
                affinity=_parse_affinity(table["affinity"], f"{path}.affinity", host_cores) if "affinity" in table else None,
                io_threads=_int(table.get("io_threads", 1), f"{path}.io_threads", 1, MAX_CORES),
                host=host,
            )
        )
    host_of = {proc.name: proc.host for proc in processes}

    # sockets
    sockets: list[SocketSpec] = []
    socket_names: set[str] = set()
    uses_default_process = False
    for index, table in enumerate(_tables(raw.get("socket", []), "socket")):
        path = _label("socket", index, table)
        _check_keys(table, _SOCKET_KEYS, path)
        if "name" not in table:
            raise ScenarioError(f"{path}.name", "missing")
        sname = _name(table["name"], f"{path}.name")
        if sname in socket_names:
            raise ScenarioError(f"{path}.name", f"duplicate socket name {sname!r}")
        socket_names.add(sname)
        if "type" not in table:
            raise ScenarioError(f"{path}.type", f"missing; one of {', '.join(SOCKET_TYPES)}")
        stype = _str(table["type"], f"{path}.type").upper()
        if stype not in SOCKET_TYPES:
            raise ScenarioError(f"{path}.type", f"unknown socket type {table['type']!r}; one of {', '.join(SOCKET_TYPES)}")
        if "process" in table:
            pname = _name(table["process"], f"{path}.process")
            if pname not in seen_process:
                known = ", ".join(sorted(seen_process)) or "none declared"
                raise ScenarioError(f"{path}.process", f"unknown process {pname!r} (declared: {known})")
        else:
            pname = DEFAULT_PROCESS
            uses_default_process = True
        own = host_of.get(pname, "")
        binds = tuple(resolve_endpoint(parse_endpoint(text, f"{path}.bind[{i}]"), own, hosts, f"{path}.bind[{i}]", bind=True)
                      for i, text in enumerate(_str_list(table.get("bind", []), f"{path}.bind")))
        connects = tuple(resolve_endpoint(parse_endpoint(text, f"{path}.connect[{i}]"), own, hosts, f"{path}.connect[{i}]")
                         for i, text in enumerate(_str_list(table.get("connect", []), f"{path}.connect")))
        open_at = _time(table.get("open_at_s", 0.0), f"{path}.open_at_s")
        close_at = _opt_time(table, "close_at_s", path)
        if close_at is not None and close_at < open_at:
            raise ScenarioError(f"{path}.close_at_s", f"must be >= open_at_s ({open_at}), got {close_at}")
        options = parse_options(table.get("options", {}), f"{path}.options", stype)
        if options.connect_routing_id is not None:
            _check_connect_routing_id(options, connects, f"{path}.options.connect_routing_id")
        sockets.append(SocketSpec(sname, stype, pname, binds, connects, open_at, close_at, options))
    if not sockets:
        raise ScenarioError("socket", "a scenario needs at least one [[socket]]")
    if uses_default_process and DEFAULT_PROCESS not in seen_process:
        processes.append(ProcessSpec(name=DEFAULT_PROCESS))
        seen_process.add(DEFAULT_PROCESS)
    by_name = {sock.name: sock for sock in sockets}
    calls = _parse_calls(raw.get("call", []), by_name, host_of, hosts)
    # a socket may get its endpoints from [[call]]s alone (zmq_socket, later zmq_bind)
    called = {call.socket for call in calls if call.action in ("bind", "connect")}
    for sock in sockets:
        if not sock.bind and not sock.connect and sock.name not in called:
            raise ScenarioError(f"socket[{sock.name}]",
                                "binds and connects nothing: give bind = [...] or connect = [...] (or a [[call]] that does)")

    _check_topology(sockets, calls)
    _check_links(sockets, host_of, links, calls, {switch.name for switch in switches})

    # proxies
    proxies: list[ProxySpec] = []
    proxied: dict[str, str] = {}
    for index, table in enumerate(_tables(raw.get("proxy", []), "proxy")):
        path = _label("proxy", index, table)
        _check_keys(table, _PROXY_KEYS, path)
        ends = []
        for key in ("frontend", "backend"):
            if key not in table:
                raise ScenarioError(f"{path}.{key}", "missing (a socket name)")
            sname = _str(table[key], f"{path}.{key}")
            if sname not in by_name:
                raise ScenarioError(f"{path}.{key}", f"unknown socket {sname!r}")
            if sname in proxied:
                raise ScenarioError(f"{path}.{key}", f"socket {sname!r} is already used by {proxied[sname]}")
            ends.append(sname)
        if ends[0] == ends[1]:
            raise ScenarioError(f"{path}.backend", "must differ from frontend")
        if by_name[ends[0]].process != by_name[ends[1]].process:
            raise ScenarioError(path, "frontend and backend must live in the same process (zmq.proxy runs in one thread)")
        pname = _name(table.get("name", f"proxy{index}"), f"{path}.name")
        for sname in ends:
            proxied[sname] = f"proxy[{pname}]"
        proxies.append(ProxySpec(pname, ends[0], ends[1]))

    # workloads
    sends: list[SendSpec] = []
    workload_names: set[str] = set()
    send_tables = _tables(raw.get("send", []), "send")
    send_unnamed = _unnamed_by_socket(send_tables)
    for index, table in enumerate(send_tables):
        sends.append(_parse_send(table, index, send_unnamed, by_name, proxied, until_s, workload_names))
    recvs: list[RecvSpec] = []
    recv_tables = _tables(raw.get("recv", []), "recv")
    recv_unnamed = _unnamed_by_socket(recv_tables)
    for index, table in enumerate(recv_tables):
        recvs.append(_parse_recv(table, index, recv_unnamed, by_name, proxied, workload_names))

    apps: list[AppSpec] = []
    for index, table in enumerate(_tables(raw.get("app", []), "app")):
        path = _label("app", index, table)
        _check_keys(table, _APP_KEYS, path)
        if "function" not in table:
            raise ScenarioError(f"{path}.function", "missing ('module:function' or 'file.py:function')")
        function = _str(table["function"], f"{path}.function")
        if function.count(":") != 1 or not all(function.split(":")):
            raise ScenarioError(f"{path}.function", f"must be 'module:function' or 'file.py:function', got {function!r}")
        aname = _name(table.get("name", function.split(":")[1]), f"{path}.name")
        if any(app.name == aname for app in apps):
            raise ScenarioError(f"{path}.name", f"another [[app]] is named {aname!r}")
        apps.append(AppSpec(aname, function))

    if "validation" in raw:
        _table(raw["validation"], "validation")
    if "limits" in raw:
        from .limits import DEFAULT as default_limits

        default_limits.merged(_table(raw["limits"], "limits"), "limits")  # checked here, applied by the runner

    _check_one_send_per_req(sends, by_name)
    _check_one_wait_per_thread(sends, recvs)
    if until_s is None:
        _check_no_forwarding_cycle(sockets, recvs, proxies)

    for proc in processes:
        if proc.exit_after_sends and not any(by_name[s.socket].process == proc.name for s in sends):
            raise ScenarioError(f"process[{proc.name}].exit_after_sends", "this process has no [[send]] workload")

    return Scenario(
        name=name,
        description=description,
        until_s=until_s,
        profile=profile,
        seed=seed,
        processes=tuple(processes),
        sockets=tuple(sockets),
        sends=tuple(sends),
        recvs=tuple(recvs),
        proxies=tuple(proxies),
        raw=raw,
        base_dir=base_dir,
        source=source,
        apps=tuple(apps),
        machine=machine,
        hosts=hosts,
        links=links,
        switches=switches,
        faults=faults,
        calls=calls,
    )


def _parse_calls(raw: Any, by_name: Mapping[str, SocketSpec], host_of: Mapping[str, str],
                 hosts: tuple[HostSpec, ...]) -> tuple[CallSpec, ...]:
    """The ``[[call]]`` entries, checked against the sockets: each makes one kind of call
    at a time when its socket is open; a disconnect/unbind names an endpoint the socket
    connects/binds at that time (libzmq: ENOENT otherwise)."""
    calls: list[CallSpec] = []
    for index, table in enumerate(_tables(raw, "call")):
        path = f"call[{index}]"
        _check_keys(table, _CALL_KEYS, path)
        if "socket" not in table:
            raise ScenarioError(f"{path}.socket", "missing (the socket the call is made on)")
        sname = _str(table["socket"], f"{path}.socket")
        if sname not in by_name:
            close = _closest(sname, set(by_name))
            raise ScenarioError(f"{path}.socket", f"unknown socket {sname!r}" + (f" (did you mean {close!r}?)" if close else ""))
        sock = by_name[sname]
        path = f"call[{index}] (socket {sname})"
        if "at_s" not in table:
            raise ScenarioError(f"{path}.at_s", "missing (when the program makes the call, seconds from t = 0)")
        at = _time(table["at_s"], f"{path}.at_s")
        if at < sock.open_at_s:
            raise ScenarioError(f"{path}.at_s", f"is {at:g} s, before the socket opens (open_at_s = {sock.open_at_s:g} s)")
        if sock.close_at_s is not None and at >= sock.close_at_s:
            raise ScenarioError(f"{path}.at_s", f"is {at:g} s, when the socket is already closed (close_at_s = {sock.close_at_s:g} s)")
        actions = [key for key in CALL_ACTIONS if key in table]
        if len(actions) != 1:
            raise ScenarioError(path, f"makes one call: give exactly one of {', '.join(CALL_ACTIONS)}"
                                      + (f" (it gives {', '.join(actions)}; write one [[call]] each)" if actions else ""))
        action = actions[0]
        apath = f"{path}.{action}"
        own = host_of.get(sock.process, "")
        endpoints: tuple[Endpoint, ...] = ()
        options: tuple[tuple[str, Any], ...] = ()
        prefixes: tuple[str, ...] = ()
        if action in ("bind", "unbind", "connect", "disconnect"):
            texts = _str_list(table[action], apath)
            if not texts:
                raise ScenarioError(apath, "names no endpoint")
            endpoints = tuple(resolve_endpoint(parse_endpoint(text, f"{apath}[{i}]"), own, hosts, f"{apath}[{i}]",
                                               bind=action in ("bind", "unbind")) for i, text in enumerate(texts))
        elif action == "set":
            given = _table(table["set"], apath)
            if not given:
                raise ScenarioError(apath, "sets no option")
            for key in ("subscribe", "unsubscribe"):
                if key in given:
                    raise ScenarioError(f"{apath}.{key}", f"is its own call: write {key} = [...] in a [[call]] of its own")
            parsed = parse_options(given, apath, sock.type)
            values = []
            for key in given:
                if key == "hwm":  # pyzmq's sock.hwm = n: both directions
                    values += [("sndhwm", parsed.sndhwm), ("rcvhwm", parsed.rcvhwm)]
                else:
                    values.append((key, getattr(parsed, key)))
            options = tuple(values)
        else:
            # as the type subscribes: sub_t's setsockopt(ZMQ_SUBSCRIBE/UNSUBSCRIBE), xpub_t's
            # with XPUB_MANUAL, an XSUB's application sending the (un)subscription message
            if sock.type not in ("SUB", "XSUB") and not (sock.type == "XPUB" and sock.options.xpub_manual):
                raise ScenarioError(apath, f"a {sock.type} socket has no subscriptions to change"
                                           + (" without xpub_manual" if sock.type == "XPUB" else "")
                                           + " (setsockopt(ZMQ_SUBSCRIBE): EINVAL): a SUB subscribes by the option, an XSUB by "
                                           "sending the subscription message")
            prefixes = _str_list(table[action], apath)
            if not prefixes:
                raise ScenarioError(apath, "names no prefix (\"\" is every message)")
        calls.append(CallSpec(sname, at, action, endpoints, options, prefixes, f"call[{index}]"))
    calls.sort(key=lambda call: call.at_s)  # stable: calls at one time in file order
    _check_call_endpoints(calls, by_name)
    return tuple(calls)


def _closed_by(sock: SocketSpec, at_s: float) -> bool:
    close_at = sock.close_at_s
    return close_at is not None and close_at <= at_s


def _check_call_endpoints(calls: Sequence[CallSpec], by_name: Mapping[str, SocketSpec]) -> None:
    """Replay each socket's endpoints over time: a disconnect must name one it connects
    then, an unbind one it binds then (libzmq: ENOENT); a connect or bind of one it already
    has is refused as libzmq would (a second bind: EADDRINUSE; a second connect of the same
    endpoint makes a second connection in libzmq, which zsim does not model)."""
    bound = {name: {e.key for e in sock.bind} for name, sock in by_name.items()}
    connected = {name: {e.key for e in sock.connect} for name, sock in by_name.items()}
    for call in calls:
        where = f"{call.label} (socket {call.socket}).{call.action}"
        for index, endpoint in enumerate(call.endpoints):
            at = f"{where}[{index}]"
            if call.action == "disconnect":
                if endpoint.key not in connected[call.socket]:
                    raise ScenarioError(at, f"{endpoint.text} is not connected by this socket at {call.at_s:g} s (zmq_disconnect: ENOENT)")
                connected[call.socket].discard(endpoint.key)
            elif call.action == "unbind":
                if endpoint.key not in bound[call.socket]:
                    raise ScenarioError(at, f"{endpoint.text} is not bound by this socket at {call.at_s:g} s (zmq_unbind: ENOENT)")
                bound[call.socket].discard(endpoint.key)
            elif call.action == "connect":
                if endpoint.key in connected[call.socket]:
                    raise ScenarioError(at, f"{endpoint.text} is already connected by this socket: a second connect to one endpoint is "
                                            "not modelled")
                connected[call.socket].add(endpoint.key)
            elif call.action == "bind":
                # a socket closed by then has let its endpoints go (zmq_close unbinds)
                others = [name for name, keys in bound.items() if endpoint.key in keys and not _closed_by(by_name[name], call.at_s)]
                if others:
                    raise ScenarioError(at, f"{endpoint.text} is bound by socket {others[0]!r} at {call.at_s:g} s (EADDRINUSE)")
                bound[call.socket].add(endpoint.key)


def _parse_machine(raw: Any) -> MachineSpec:
    if raw is None:
        return MachineSpec()
    table = _table(raw, "machine")
    if "wait_spin_s" in table:
        raise ScenarioError("machine.wait_spin_s", "how a program waits is the program's, not the machine's: set wait_spin_s on "
                                                   "its [[send]]/[[recv]] workloads (default 0: the program sleeps)")
    _check_keys(table, _MACHINE_KEYS, "machine")
    cores = _int(table["cores"], "machine.cores", 0, MAX_CORES) if "cores" in table else None
    return MachineSpec(cores=cores)


def _named_tables(raw: Any, kind: str, keys: set[str]) -> Iterator[tuple[str, Mapping[str, Any], str]]:
    """Each ``[[kind]]`` table with its error path and its ``name``: known keys only, a name
    given, valid and not given twice (one loop for [[host]] and [[switch]])."""
    seen: set[str] = set()
    for index, table in enumerate(_tables(raw, kind)):
        path = _label(kind, index, table)
        _check_keys(table, keys, path)
        if "name" not in table:
            raise ScenarioError(f"{path}.name", "missing")
        name = _name(table["name"], f"{path}.name")
        if name in seen:
            raise ScenarioError(f"{path}.name", f"duplicate {kind} name {name!r}")
        seen.add(name)
        yield path, table, name


def _parse_hosts(raw: Any) -> tuple[HostSpec, ...]:
    hosts: list[HostSpec] = []
    for path, table, name in _named_tables(raw, "host", _HOST_KEYS):
        if name == "default":
            raise ScenarioError(f"{path}.name", "'default' names the host of the processes that name none; choose another name")
        if name in LOCAL_HOSTS or _IPV4_RE.match(name):
            raise ScenarioError(f"{path}.name", f"{name!r} is an address, not a host name: tcp endpoints use it for the process's own "
                                                "host")
        cores = _int(table["cores"], f"{path}.cores", 0, MAX_CORES) if "cores" in table else None
        # a built-in profile's name or a profile file (relative to the scenario's folder),
        # read when the run is built (zsim.build.host_params), as scenario.profile is
        profile = _str(table["profile"], f"{path}.profile") if "profile" in table else None
        hosts.append(HostSpec(name, cores, profile))
    return tuple(hosts)


_IPV4_RE = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")


def _number(value: Any, path: str, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise ScenarioError(path, f"must be a finite number of {what}, got {value!r}")
    return float(value)


def _parse_switches(raw: Any, hosts: set[str]) -> tuple[SwitchSpec, ...]:
    switches: list[SwitchSpec] = []
    for path, _table, name in _named_tables(raw, "switch", _SWITCH_KEYS):
        if name == "default" or name in LOCAL_HOSTS or _IPV4_RE.match(name):
            raise ScenarioError(f"{path}.name", f"{name!r} names a host or an address; choose another name")
        if name in hosts:
            raise ScenarioError(f"{path}.name", f"{name!r} is already a [[host]]: a switch runs no process, so it needs a name of its own")
        switches.append(SwitchSpec(name))
    return tuple(switches)


def _parse_links(raw: Any, hosts: set[str], switches: Collection[str] = ()) -> tuple[LinkSpec, ...]:
    links: list[LinkSpec] = []
    names: set[str] = set()
    pairs: dict[frozenset[str], str] = {}
    for index, table in enumerate(_tables(raw, "link")):
        path = _label("link", index, table)
        _check_keys(table, _LINK_KEYS, path)
        ends = table.get("hosts")
        if not isinstance(ends, list) or len(ends) != 2:
            raise ScenarioError(f"{path}.hosts", f"must name the two hosts (or switches) it joins, e.g. hosts = [\"a\", \"b\"], "
                                                 f"got {ends!r}")
        a, b = (_name(end, f"{path}.hosts[{i}]") for i, end in enumerate(ends))
        for i, end in enumerate((a, b)):
            if end not in hosts and end not in switches:
                known = ", ".join(sorted(hosts)) or "none declared"
                also = f"; [[switch]]es: {', '.join(sorted(switches))}" if switches else ""
                raise ScenarioError(f"{path}.hosts[{i}]", f"unknown host {end!r} (declared [[host]]s: {known}{also})")
        if a == b:
            raise ScenarioError(f"{path}.hosts", f"joins {a!r} to itself: processes on one host talk over its loopback")
        name = _name(table.get("name", f"{a}-{b}"), f"{path}.name")
        if name in names:
            raise ScenarioError(f"{path}.name", f"duplicate link name {name!r}")
        names.add(name)
        pair = frozenset((a, b))
        if pair in pairs:
            raise ScenarioError(f"{path}.hosts", f"{a!r} and {b!r} are already joined by link {pairs[pair]!r} (one link per pair: "
                                                 "parallel links, bonding and equal-cost multipath are not modelled)")
        pairs[pair] = name
        if "bandwidth_bps" not in table:
            raise ScenarioError(f"{path}.bandwidth_bps", "missing (bits per second on the wire, e.g. 100e6 for 100 Mbit/s)")
        mtu = _int(table.get("mtu_bytes", 1500), f"{path}.mtu_bytes", MIN_MTU_BYTES, MAX_MTU_BYTES)
        forward = _link_way(table, path, mtu, None)
        reverse = forward
        if "reverse" in table:
            reverse_path = f"{path}.reverse"
            overrides = _table(table["reverse"], reverse_path)
            if "mtu_bytes" in overrides:
                raise ScenarioError(f"{reverse_path}.mtu_bytes", "a link has one MTU, both ways (both ends of a wire must agree on "
                                                                 "it): set mtu_bytes on the link")
            _check_keys(overrides, _LINK_WAY_KEYS, reverse_path)
            reverse = _link_way(overrides, reverse_path, mtu, forward)
        links.append(LinkSpec(name, (a, b), forward.bandwidth_bps, forward.latency_s, mtu, forward.queue_bytes, forward.loss,
                              reverse))
    return tuple(links)


def _parse_faults(raw: Any, hosts: tuple[HostSpec, ...], switches: tuple[SwitchSpec, ...], links: tuple[LinkSpec, ...],
                  until_s: float | None) -> tuple[FaultSpec, ...]:
    """The ``[[fault]]`` entries: a kind, what it breaks (a link, or the nodes a partition cuts
    off), and when (``at_s`` and ``duration_s``, or ``mtbf_s`` and ``mttr_s``)."""
    faults: list[FaultSpec] = []
    names: set[str] = set()
    nodes = [host.name for host in hosts] + [switch.name for switch in switches]
    by_name = {link.name: link for link in links}
    for index, table in enumerate(_tables(raw, "fault")):
        path = _label("fault", index, table)
        _check_keys(table, _FAULT_KEYS, path)
        kind = table.get("kind")
        if kind not in FAULT_KINDS:
            raise ScenarioError(f"{path}.kind", f"must be one of {', '.join(repr(k) for k in FAULT_KINDS)}, got {fields.short(kind)}"
                                if "kind" in table else f"missing (one of {', '.join(repr(k) for k in FAULT_KINDS)})")
        name = _name(table.get("name", f"fault{index}"), f"{path}.name")
        if name in names:
            raise ScenarioError(f"{path}.name", f"duplicate fault name {name!r}")
        names.add(name)
        link: str | None = None
        cut: tuple[str, ...] = ()
        if "host" in table and kind != "host_crash":
            raise ScenarioError(f"{path}.host", f"only a host_crash fault names a host (a {kind} fault: "
                                                f"{'hosts = [...]' if kind == 'partition' else 'link = ...'})")
        if kind == "host_crash":
            for key in ("link", "hosts"):
                if key in table:
                    raise ScenarioError(f"{path}.{key}", "a host_crash names its host (host = \"...\"), whose links all go silent")
            declared = ", ".join(h.name for h in hosts) or "none"
            if "host" not in table:
                raise ScenarioError(f"{path}.host", f"missing: the [[host]] that crashes (declared: {declared})")
            crashed = _name(table["host"], f"{path}.host")
            if crashed not in {host.name for host in hosts}:
                raise ScenarioError(f"{path}.host", f"unknown host {crashed!r} (declared [[host]]s: {declared}; a switch that fails "
                                                    "is a partition of its links)")
            cut = (crashed,)
        elif kind == "partition":
            if "link" in table:
                raise ScenarioError(f"{path}.link", "a partition names the hosts it cuts off (hosts = [...]), not a link")
            if "hosts" not in table:
                raise ScenarioError(f"{path}.hosts", "missing: the hosts (and switches) the partition cuts off from the rest")
            cut = _str_list(table["hosts"], f"{path}.hosts")
            for i, node in enumerate(cut):
                if node not in nodes:
                    raise ScenarioError(f"{path}.hosts[{i}]", f"unknown host {node!r} (declared [[host]]s and [[switch]]es: "
                                                              f"{', '.join(nodes) or 'none'})")
            if len(set(cut)) != len(cut):
                raise ScenarioError(f"{path}.hosts", "names a host twice")
        else:
            if "hosts" in table:
                raise ScenarioError(f"{path}.hosts", f"a {kind} fault names its link (link = \"...\"); hosts are a partition's")
            if "link" not in table:
                raise ScenarioError(f"{path}.link", f"missing: the [[link]] that {'goes down' if kind == 'link_down' else 'loses packets'}"
                                                    f" (declared: {', '.join(by_name) or 'none'})")
            link = _name(table["link"], f"{path}.link")
            if link not in by_name:
                raise ScenarioError(f"{path}.link", f"unknown link {link!r} (declared [[link]]s: {', '.join(by_name) or 'none'})")
        loss = 0.0
        if kind == "loss":
            if "loss" not in table:
                raise ScenarioError(f"{path}.loss", "missing: each packet's probability of being lost while the fault lasts, in (0, 1]")
            loss = _number(table["loss"], f"{path}.loss", "a probability")
            if not 0.0 < loss <= 1.0:
                raise ScenarioError(f"{path}.loss", f"must be a probability in (0, 1], got {table['loss']!r}")
        elif "loss" in table:
            raise ScenarioError(f"{path}.loss", f"only a kind = \"loss\" fault has a loss probability (a {kind} loses everything)")
        at_s, duration_s = _opt_time(table, "at_s", path), _opt_time(table, "duration_s", path, positive=True)
        mtbf_s, mttr_s = _opt_time(table, "mtbf_s", path, positive=True), _opt_time(table, "mttr_s", path, positive=True)
        once, repeated = at_s is not None or duration_s is not None, mtbf_s is not None or mttr_s is not None
        if once and repeated:
            raise ScenarioError(path, "gives both a time (at_s, duration_s) and a random process (mtbf_s, mttr_s): choose one")
        if repeated:
            for key, value in (("mtbf_s", mtbf_s), ("mttr_s", mttr_s)):
                if value is None:
                    raise ScenarioError(f"{path}.{key}", "missing: a random fault needs both mtbf_s (mean time up) and mttr_s "
                                                         "(mean time down)")
            if until_s is None:
                raise ScenarioError(f"{path}.mtbf_s", "a fault that repeats at random needs scenario.until_s (the horizon its "
                                                      "failures are drawn up to)")
        else:
            for key, value in (("at_s", at_s), ("duration_s", duration_s)):
                if value is None:
                    raise ScenarioError(f"{path}.{key}", "missing: when the fault starts (at_s) and how long it lasts (duration_s), "
                                                         "or mtbf_s and mttr_s for one that repeats at random")
        fault = FaultSpec(name, kind, link, cut, at_s, duration_s, mtbf_s, mttr_s, loss)
        if not fault.links_cut(links):
            raise ScenarioError(f"{path}.{'host' if kind == 'host_crash' else 'hosts'}",
                                "cuts no link: no [[link]] joins these hosts to the rest")
        faults.append(fault)
    return tuple(faults)


def _link_way(table: Mapping[str, Any], path: str, mtu: int, default: LinkWay | None) -> LinkWay:
    """One direction of a link from ``table`` (the link's own fields, or its ``reverse``
    table): each field absent from it is ``default``'s (the forward direction's), else the
    link's default; the bounds are the same both ways."""
    frame = mtu + ETHERNET_HEADER_BYTES
    if default is None:
        default = LinkWay(0.0, 0.0, DEFAULT_LINK_QUEUE_PACKETS * frame, 0.0)
    bandwidth = default.bandwidth_bps
    if "bandwidth_bps" in table:
        bandwidth = _number(table["bandwidth_bps"], f"{path}.bandwidth_bps", "bits per second")
        if bandwidth < 1000:
            raise ScenarioError(f"{path}.bandwidth_bps", f"must be >= 1000 bits per second, got {table['bandwidth_bps']!r}")
        if bandwidth > 1e13:
            raise ScenarioError(f"{path}.bandwidth_bps", f"must be <= 1e13 (10 Tbit/s), got {table['bandwidth_bps']!r}")
    latency = default.latency_s
    if "latency_s" in table:
        latency = _time(table["latency_s"], f"{path}.latency_s")
        if latency > 10.0:
            raise ScenarioError(f"{path}.latency_s", f"must be <= 10 s one way (a geostationary hop is 0.25 s), got {latency!r}")
    queue = default.queue_bytes
    if "queue_bytes" in table:
        queue = _int(table["queue_bytes"], f"{path}.queue_bytes", frame, 1 << 40)
    loss = default.loss
    if "loss" in table:
        loss = _number(table["loss"], f"{path}.loss", "a probability")
        if not 0.0 <= loss < 1.0:
            raise ScenarioError(f"{path}.loss", f"must be a probability in [0, 1), got {table['loss']!r}")
    return LinkWay(bandwidth, latency, queue, loss)


def _host_of(table: Mapping[str, Any], path: str, hosts: tuple[HostSpec, ...]) -> str:
    """A ``[[process]]``'s host: "" (the default host) unless it names a [[host]]."""
    if "host" not in table:
        return ""
    name = _name(table["host"], f"{path}.host")
    if not any(host.name == name for host in hosts):
        known = ", ".join(host.name for host in hosts) or "none declared"
        raise ScenarioError(f"{path}.host", f"unknown host {name!r} (declared [[host]]s: {known})")
    return name


def resolve_endpoint(endpoint: Endpoint, own: str, hosts: tuple[HostSpec, ...], path: str, bind: bool = False) -> Endpoint:
    """The endpoint with the host it lives on (``node``): a loopback address, ``*``, ipc and
    inproc are the process's own host ``own``; a tcp host part naming a [[host]] is that host
    (a bind may name only its own)."""
    if endpoint.transport != "tcp" or endpoint.host in LOCAL_HOSTS:
        return dataclasses.replace(endpoint, node=own) if own else endpoint
    name = endpoint.host
    if not any(host.name == name for host in hosts):
        known = ", ".join(host.name for host in hosts)
        raise ScenarioError(path, f"tcp host {name!r} names no [[host]]" + (f" (declared: {known})" if known else
                                  "; zsim models the machine's loopback unless the scenario declares [[host]]s and [[link]]s "
                                  "(use 127.0.0.1, localhost or *)"))
    if bind and name != own:
        raise ScenarioError(path, f"binds on host {name!r} but its process runs on {own or 'the default host'!r}: a socket binds "
                                  "only its own host's addresses (EADDRNOTAVAIL)")
    return dataclasses.replace(endpoint, node=name)


def _connects(sockets: list[SocketSpec], calls: Sequence[CallSpec]) -> list[tuple[SocketSpec, str, Endpoint]]:
    """Every connect a scenario makes: (socket, path, endpoint), its [[socket]]'s then its [[call]]s'."""
    by_name = {sock.name: sock for sock in sockets}
    found = [(sock, f"socket[{sock.name}].connect[{index}]", endpoint) for sock in sockets for index, endpoint in enumerate(sock.connect)]
    found += [(by_name[call.socket], f"{call.label} (socket {call.socket}).connect[{index}]", endpoint)
              for call in calls if call.action == "connect" for index, endpoint in enumerate(call.endpoints)]
    return found


class RouteError(ValueError):
    """Two hosts are joined by no route, or by more than one shortest one: one line why."""


def route(links: Sequence[LinkSpec], switches: Collection[str], a: str, b: str) -> tuple[tuple[LinkSpec, bool], ...]:
    """The links a packet from host ``a`` to host ``b`` crosses, in order, each with whether
    it crosses it ``hosts[0] -> hosts[1]``: the route with the fewest links, passing only
    through switches (a host forwards nothing). ``RouteError`` when there is none, or when
    two routes are equally short (equal-cost multipath is not modelled)."""
    adjacent: dict[str, list[tuple[str, LinkSpec, bool]]] = {}
    for link in links:
        x, y = link.hosts
        adjacent.setdefault(x, []).append((y, link, True))
        adjacent.setdefault(y, []).append((x, link, False))
    # breadth first, counting the shortest routes to each node
    best: dict[str, int] = {a: 0}
    ways: dict[str, int] = {a: 1}
    came: dict[str, tuple[str, LinkSpec, bool]] = {}
    frontier = [a]
    while frontier and b not in best:
        after: list[str] = []
        for node in frontier:
            if node != a and node not in switches:
                continue  # a host is an end, never a hop
            for other, link, forward in adjacent.get(node, ()):
                if other not in best:
                    best[other] = best[node] + 1
                    ways[other] = ways[node]
                    came[other] = (node, link, forward)
                    after.append(other)
                elif best[other] == best[node] + 1:
                    ways[other] += ways[node]
        frontier = after
    if b not in best:
        raise RouteError("no [[link]] joins them, directly or through [[switch]]es")
    if ways[b] > 1:
        raise RouteError(f"{ways[b]} routes of {best[b]} links each join them: zsim routes over one (equal-cost multipath "
                         "is not modelled); remove a link")
    hops: list[tuple[LinkSpec, bool]] = []
    node = b
    while node != a:
        node, link, forward = came[node]
        hops.append((link, forward))
    return tuple(reversed(hops))


def _check_links(sockets: list[SocketSpec], host_of: Mapping[str, str], links: tuple[LinkSpec, ...],
                 calls: Sequence[CallSpec] = (), switches: Collection[str] = ()) -> None:
    """Every connect between two hosts has one route to travel (``_check_topology`` matched it)."""
    for sock, path, endpoint in _connects(sockets, calls):
        own = host_of.get(sock.process, "")
        if endpoint.node != own:
            try:
                route(links, switches, own, endpoint.node)
            except RouteError as exc:
                raise ScenarioError(path, f"{endpoint.text} is on host {endpoint.node!r} and {sock.name!r} on "
                                          f"{own or 'the default host'!r}: {exc}") from None


def _parse_affinity(raw: Any, path: str, cores: int | None) -> tuple[int, ...]:
    """A process's cores: a non-empty list of distinct core numbers below ``cores``
    (checked against the profile's core count at build time when [machine] gives none)."""
    if not isinstance(raw, list) or not raw:
        raise ScenarioError(path, f"must be a non-empty list of core numbers (0 is the first core), got {raw!r}")
    found: list[int] = []
    for index, value in enumerate(raw):
        core = _int(value, f"{path}[{index}]", 0, MAX_CORES - 1)
        if core in found:
            raise ScenarioError(f"{path}[{index}]", f"core {core} is listed twice")
        found.append(core)
    if cores == 0:
        raise ScenarioError(path, "needs [machine] cores >= 1 (cores = 0 gives every thread a core of its own, so there is "
                                  "nothing to pin to)")
    if cores is not None:
        check_affinity(tuple(found), path, cores)
    return tuple(sorted(found))


def check_affinity(affinity: tuple[int, ...], path: str, cores: int) -> None:
    """Every core named must exist on a machine of ``cores`` cores."""
    for index, core in enumerate(affinity):
        if core >= cores:
            raise ScenarioError(f"{path}[{index}]", f"core {core} does not exist: the machine has {cores} "
                                                    f"core{'s' if cores != 1 else ''} (0 to {cores - 1})")


def workload_label(kind: str, name: str) -> str:
    """How errors and warnings name a workload: ``send.pub`` -> ``send[pub]``, ``ticks`` ->
    ``send[ticks]`` (the default name is ``<kind>.<socket>``, see ``_workload_name``)."""
    prefix = kind + "."
    return f"{kind}[{name[len(prefix):] if name.startswith(prefix) else name}]"


def _unnamed_by_socket(tables: list[Mapping[str, Any]]) -> dict[str, list[int]]:
    """Per socket: the positions of the workload tables on it that have no ``name``
    (one pass, so loading stays linear in the number of workloads)."""
    found: dict[str, list[int]] = {}
    for index, table in enumerate(tables):
        if "name" not in table:
            found.setdefault(repr(table.get("socket")), []).append(index)
    return found


def _workload_name(kind: str, table: Mapping[str, Any], index: int, unnamed: Mapping[str, list[int]], path: str,
                   names: set[str]) -> str:
    if "name" in table:
        wname = _name(table["name"], f"{path}.name")
    else:
        sname = table.get("socket")
        same = unnamed[repr(sname)]
        wname = f"{kind}.{sname}" if len(same) == 1 else f"{kind}.{sname}.{same.index(index)}"
    if wname in names:
        raise ScenarioError(f"{path}.name", f"duplicate workload name {wname!r}")
    names.add(wname)
    return wname


def _workload_socket(table: Mapping[str, Any], path: str, by_name: Mapping[str, SocketSpec], proxied: Mapping[str, str]) -> SocketSpec:
    if "socket" not in table:
        raise ScenarioError(f"{path}.socket", "missing (the name of a [[socket]])")
    sname = _str(table["socket"], f"{path}.socket")
    if sname not in by_name:
        raise ScenarioError(f"{path}.socket", f"unknown socket {sname!r}")
    if sname in proxied:
        raise ScenarioError(f"{path}.socket", f"socket {sname!r} belongs to {proxied[sname]}; the application cannot use it too")
    return by_name[sname]


def _parse_send(
    table: Mapping[str, Any],
    index: int,
    unnamed: Mapping[str, list[int]],
    by_name: Mapping[str, SocketSpec],
    proxied: Mapping[str, str],
    until_s: float | None,
    names: set[str],
) -> SendSpec:
    path = _label("send", index, table, "name") if "name" in table else _label("send", index, table, "socket")
    _check_keys(table, _SEND_KEYS, path)
    sock = _workload_socket(table, path, by_name, proxied)
    wname = _workload_name("send", table, index, unnamed, path, names)
    if sock.type not in CAN_SEND:
        hint = " (a REP replies from its [[recv]] with reply = true)" if TYPES[sock.type].reply else ""
        raise ScenarioError(f"{path}.socket", f"a {sock.type} socket cannot send application messages{hint}")
    count = _int(table["count"], f"{path}.count", 0) if "count" in table else None
    duration = _opt_time(table, "duration_s", path)
    if count is None and duration is None and until_s is None:
        raise ScenarioError(path, "needs count or duration_s (or a scenario.until_s horizon)")
    if "interval_s" in table and "rate_per_s" in table:
        raise ScenarioError(f"{path}.rate_per_s", "give either interval_s or rate_per_s, not both")
    if "rate_per_s" in table:
        rate = table["rate_per_s"]
        from .limits import MAX_SECONDS

        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0 or not math.isfinite(rate):
            raise ScenarioError(f"{path}.rate_per_s", f"must be a number > 0, got {fields.short(rate)}")
        if 1.0 / rate > MAX_SECONDS:
            raise ScenarioError(f"{path}.rate_per_s", f"must be at least {1 / MAX_SECONDS:g} (a send every {MAX_SECONDS:g} s at "
                                                      f"most: zsim.limits.MAX_SECONDS), got {rate!r}")
        interval = Distribution("exponential", "s", mean=1.0 / float(rate))
    else:
        interval = parse_distribution(table.get("interval_s", 0.0), f"{path}.interval_s", "s")
    size = parse_distribution(table.get("size_bytes", 100), f"{path}.size_bytes", "bytes")
    topics = _str_list(table.get("topic", []), f"{path}.topic")
    parts = _int(table.get("parts", 1), f"{path}.parts", 1)
    dontwait = _bool(table.get("dontwait", False), f"{path}.dontwait")
    on_again = _str(table.get("on_again", "skip"), f"{path}.on_again")
    if on_again not in ("skip", "stop"):
        raise ScenarioError(f"{path}.on_again", f"must be 'skip' or 'stop', got {on_again!r}")
    on_timeout = _str(table.get("on_timeout", "retry"), f"{path}.on_timeout")
    if on_timeout not in ("retry", "stop"):
        raise ScenarioError(f"{path}.on_timeout", f"must be 'retry' or 'stop', got {on_timeout!r}")
    if "on_timeout" in table and not TYPES[sock.type].request:
        raise ScenarioError(f"{path}.on_timeout", f"says what a REQ does when its wait for a reply times out (options.rcvtimeo); "
                                                  f"a {sock.type} [[send]] waits for no reply")
    pacing = _str(table.get("pacing", "schedule" if "rate_per_s" in table else "after_send"), f"{path}.pacing")
    if pacing not in PACINGS:
        raise ScenarioError(f"{path}.pacing", f"must be one of {', '.join(repr(p) for p in PACINGS)}, got {pacing!r}")
    to = _str_list(table.get("to", []), f"{path}.to")
    if TYPES[sock.type].addresses_peers and not to:
        raise ScenarioError(f"{path}.to", "a ROUTER send needs to = [peer routing ids] (the peer socket names unless they set routing_id)")
    if to and not TYPES[sock.type].addresses_peers:
        raise ScenarioError(f"{path}.to", f"only a ROUTER addresses peers by routing id, this is a {sock.type}")
    if sock.options.conflate and parts > 1:
        raise ScenarioError(f"{path}.parts", "a conflating socket does not support multipart messages")
    return SendSpec(
        name=wname,
        socket=sock.name,
        count=count,
        duration_s=duration,
        interval=interval,
        size=size,
        start_s=_time(table.get("start_s", 0.0), f"{path}.start_s"),
        topics=topics,
        parts=parts,
        dontwait=dontwait,
        on_again=on_again,
        to=to,
        pacing=pacing,
        loop_cpu_s=_time(table.get("loop_cpu_s", 0.0), f"{path}.loop_cpu_s"),
        wait_spin_s=_time(table.get("wait_spin_s", 0.0), f"{path}.wait_spin_s"),
        on_timeout=on_timeout,
    )


def _parse_recv(
    table: Mapping[str, Any],
    index: int,
    unnamed: Mapping[str, list[int]],
    by_name: Mapping[str, SocketSpec],
    proxied: Mapping[str, str],
    names: set[str],
) -> RecvSpec:
    path = _label("recv", index, table, "name") if "name" in table else _label("recv", index, table, "socket")
    _check_keys(table, _RECV_KEYS, path)
    sock = _workload_socket(table, path, by_name, proxied)
    wname = _workload_name("recv", table, index, unnamed, path, names)
    if sock.type not in CAN_RECEIVE:
        raise ScenarioError(f"{path}.socket", f"a {sock.type} socket cannot receive")
    if TYPES[sock.type].request:
        raise ScenarioError(f"{path}.socket", "a REQ receives its replies inside its [[send]] workload (send, then recv); give no [[recv]]")
    reply_default = TYPES[sock.type].reply
    reply = _bool(table.get("reply", reply_default), f"{path}.reply")
    if reply_default and not reply:
        raise ScenarioError(f"{path}.reply", "a REP must reply to every request (REQ/REP lockstep)")
    if reply and not TYPES[sock.type].replies_to_sender:
        repliers = ", ".join(type_names("replies_to_sender"))
        raise ScenarioError(f"{path}.reply", f"only {repliers} reply to the sender of a request, this is a {sock.type}")
    reply_size = (
        parse_distribution(table["reply_size_bytes"], f"{path}.reply_size_bytes", "bytes") if "reply_size_bytes" in table else None
    )
    if reply_size is not None and not reply and "forward_to" not in table:
        raise ScenarioError(f"{path}.reply_size_bytes", "needs reply = true or forward_to")
    pause_every = parse_distribution(table["pause_every_s"], f"{path}.pause_every_s") if "pause_every_s" in table else None
    pause = parse_distribution(table["pause_s"], f"{path}.pause_s") if "pause_s" in table else None
    if (pause_every is None) != (pause is None):
        raise ScenarioError(f"{path}.pause_s" if pause is None else f"{path}.pause_every_s", "pause_every_s and pause_s go together")
    if pause_every is not None and pause_every.expected() <= 0:
        raise ScenarioError(f"{path}.pause_every_s", "must have a mean > 0")
    forward_to = None
    if "forward_to" in table:
        forward_to = _str(table["forward_to"], f"{path}.forward_to")
        if forward_to not in by_name:
            raise ScenarioError(f"{path}.forward_to", f"unknown socket {forward_to!r}")
        target = by_name[forward_to]
        if target.name == sock.name:
            raise ScenarioError(f"{path}.forward_to", "forwards to the socket it reads; use reply = true to answer the sender")
        if target.process != sock.process:
            raise ScenarioError(f"{path}.forward_to", f"socket {forward_to!r} is in process {target.process!r}, not {sock.process!r}: a "
                                                      "stage forwards inside its own process")
        if not TYPES[target.type].forward_target:
            raise ScenarioError(f"{path}.forward_to", f"a stage forwards with {', '.join(type_names('forward_target'))}, not {target.type}")
        if forward_to in proxied:
            raise ScenarioError(f"{path}.forward_to", f"socket {forward_to!r} belongs to {proxied[forward_to]}")
        if reply:
            raise ScenarioError(f"{path}.forward_to", "a stage either replies or forwards, not both")
    on_timeout = _str(table.get("on_timeout", "retry"), f"{path}.on_timeout")
    if on_timeout not in ("retry", "stop"):
        raise ScenarioError(f"{path}.on_timeout", f"must be 'retry' or 'stop', got {on_timeout!r}")
    return RecvSpec(
        name=wname,
        socket=sock.name,
        service=parse_distribution(table.get("service_s", 0.0), f"{path}.service_s"),
        start_s=_time(table.get("start_s", 0.0), f"{path}.start_s"),
        count=_int(table["count"], f"{path}.count", 0) if "count" in table else None,
        duration_s=_opt_time(table, "duration_s", path),
        reply=reply,
        reply_size=reply_size,
        pause_every=pause_every,
        pause=pause,
        on_timeout=on_timeout,
        forward_to=forward_to,
        busy=_bool(table.get("busy", False), f"{path}.busy"),
        loop_cpu_s=_time(table.get("loop_cpu_s", 0.0), f"{path}.loop_cpu_s"),
        wait_spin_s=_time(table.get("wait_spin_s", 0.0), f"{path}.wait_spin_s"),
    )


def _check_one_wait_per_thread(sends: list[SendSpec], recvs: list[RecvSpec]) -> None:
    """The workloads of one socket run in one thread of the program (the real harness and
    ``zsim export`` do so, and the model gives them one ``zsim.model.cpu.Thread``): they
    wait one way."""
    first: dict[str, SendSpec | RecvSpec] = {}
    workloads: list[tuple[str, SendSpec | RecvSpec]] = [*(("send", s) for s in sends), *(("recv", r) for r in recvs)]
    for kind, workload in workloads:
        other = first.setdefault(workload.socket, workload)
        if other.wait_spin_s != workload.wait_spin_s:
            other_kind = "send" if isinstance(other, SendSpec) else "recv"
            raise ScenarioError(f"{workload_label(kind, workload.name)}.wait_spin_s",
                                f"{workload.wait_spin_s:g} differs from {workload_label(other_kind, other.name)}'s "
                                f"{other.wait_spin_s:g}: the workloads of socket {workload.socket!r} run in one thread, "
                                "which waits one way")


def _check_one_send_per_req(sends: list[SendSpec], by_name: Mapping[str, SocketSpec]) -> None:
    """A REQ alternates send and recv: two workloads on one REQ would break the lockstep."""
    seen: dict[str, str] = {}
    for send in sends:
        if not TYPES[by_name[send.socket].type].request:
            continue
        if send.socket in seen:
            raise ScenarioError(
                f"{workload_label('send', send.name)}.socket",
                f"REQ socket {send.socket!r} already has a [[send]] ({seen[send.socket]!r}); a REQ sends one request and waits "
                "for its reply, so it takes one [[send]] workload (give that one the combined count, or use a DEALER)",
            )
        seen[send.socket] = send.name


def _check_no_forwarding_cycle(sockets: list[SocketSpec], recvs: list[RecvSpec], proxies: list[ProxySpec]) -> None:
    """Without a horizon, messages that stages, replies or proxies pass round a loop never stop."""
    bound = {ep.key: sock.name for sock in sockets for ep in sock.bind}
    peers: dict[str, set[str]] = {sock.name: set() for sock in sockets}
    for sock in sockets:
        for ep in sock.connect:
            other = bound[ep.key]
            peers[sock.name].add(other)
            peers[other].add(sock.name)
    # What a socket receives is passed on: by a [[recv]] forward_to or reply, or by a proxy.
    passes: dict[str, list[tuple[str, str]]] = {sock.name: [] for sock in sockets}
    for recv in recvs:
        label = workload_label("recv", recv.name)
        if recv.forward_to is not None:
            passes[recv.socket].append((recv.forward_to, f"{label}.forward_to"))
        if recv.reply:
            passes[recv.socket].append((recv.socket, f"{label}.reply"))
    for proxy in proxies:
        passes[proxy.frontend].append((proxy.backend, f"proxy[{proxy.name}]"))
        passes[proxy.backend].append((proxy.frontend, f"proxy[{proxy.name}]"))
    # Socket A feeds socket B when A passes to S and B is a peer of S. Depth-first search
    # for a cycle, iterative (a generated topology may be deep).
    edges = {name: [(peer, label) for target, label in out for peer in sorted(peers[target])] for name, out in passes.items()}
    colour: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(edges):
        if start in colour:
            continue
        path = [start]
        colour[start] = 1
        todo = [iter(edges[start])]
        while todo:
            step = next(todo[-1], None)
            if step is None:
                todo.pop()
                colour[path.pop()] = 2
                continue
            peer, label = step
            if colour.get(peer) == 1:
                loop = path[path.index(peer):] + [peer]
                raise ScenarioError(
                    label,
                    f"passes messages round a loop ({' -> '.join(loop)}) and the scenario has no until_s, so the run "
                    "would never end; set scenario.until_s",
                )
            if peer not in colour:
                colour[peer] = 1
                path.append(peer)
                todo.append(iter(edges[peer]))


def _check_topology(sockets: list[SocketSpec], calls: Sequence[CallSpec] = ()) -> None:
    """Binds are unique, every connect reaches a bind (a [[call]]'s too: its endpoint must
    be bound by some socket at some time). Socket types are not checked here: libzmq 4.3.5
    connects any two types over inproc, and over tcp and ipc the handshake refuses a pair
    that may not talk (the model does both; ``zsim.checks`` warns)."""
    bound: dict[tuple[str, str, str], tuple[SocketSpec, int]] = {}
    for sock in sockets:
        for index, endpoint in enumerate(sock.bind):
            path = f"socket[{sock.name}].bind[{index}]"
            if endpoint.key in bound:
                other = bound[endpoint.key][0]
                raise ScenarioError(path, f"{endpoint.text} is already bound by socket {other.name!r} (EADDRINUSE)")
            bound[endpoint.key] = (sock, index)
    by_name = {sock.name: sock for sock in sockets}
    for call in calls:
        if call.action == "bind":
            for index, endpoint in enumerate(call.endpoints):
                # _check_call_endpoints checked two binds of one endpoint at once
                bound.setdefault(endpoint.key, (by_name[call.socket], index))
    for sock, path, endpoint in _connects(sockets, calls):
        if endpoint.key not in bound:
            elsewhere = [key[1] for key in bound if key[0] == endpoint.transport and key[2] == endpoint.address]
            if elsewhere and endpoint.transport != "tcp":
                raise ScenarioError(path, f"{endpoint.text} is bound on host {elsewhere[0] or 'default'!r}, not on this socket's "
                                          f"host {endpoint.node or 'default'!r}: {endpoint.transport} does not cross hosts (use tcp "
                                          "over a [[link]])")
            raise ScenarioError(path, f"nobody binds {endpoint.text}" + (f" on host {endpoint.node!r}" if endpoint.node else ""))
        peer = bound[endpoint.key][0]
        if peer is sock:
            raise ScenarioError(path, f"socket {sock.name!r} connects to its own bind {endpoint.text}")
        if endpoint.transport == "inproc" and peer.process != sock.process:
            raise ScenarioError(path, f"inproc works only inside one process: {sock.name!r} is in {sock.process!r}, {peer.name!r} in "
                                      f"{peer.process!r}")
    for sock in sockets:
        if TYPES[sock.type].single_peer and len(sock.bind) + len(sock.connect) > 1:
            raise ScenarioError(f"socket[{sock.name}]", "a PAIR socket has exactly one peer: one bind or one connect")
    pair_connects: dict[tuple[str, str, str], str] = {}
    for sock in sockets:
        for index, endpoint in enumerate(sock.connect):
            peer = bound[endpoint.key][0]
            if TYPES[peer.type].single_peer:
                if endpoint.key in pair_connects:
                    raise ScenarioError(
                        f"socket[{sock.name}].connect[{index}]",
                        f"the PAIR socket {peer.name!r} already has a peer ({pair_connects[endpoint.key]!r}); a PAIR accepts one "
                        "connection",
                    )
                pair_connects[endpoint.key] = sock.name


# --------------------------------------------------------------------------------------
# Loading


def load(source: str | Path | Mapping[str, Any]) -> Scenario:
    """Load a scenario from a TOML file path or a dict. Raises ``ScenarioError``.

    A path must name a regular UTF-8 file of sane size (``zsim.files``): a folder, a FIFO,
    a device or a binary file is refused with one line before anything is read.
    """
    if isinstance(source, Mapping):
        return from_dict(source)
    path = Path(source)
    raw = files.load_toml(path, "scenario file")
    return from_dict(raw, base_dir=str(path.resolve().parent), source=str(path))


def parse_toml(text: str, where: str) -> dict[str, Any]:
    """TOML text to a dict; syntax errors and excessive nesting are one ``ScenarioError``."""
    return files.parse_toml(text, where)


# --------------------------------------------------------------------------------------
# Overrides by dotted path (used by sweeps)

_ARRAY_SECTIONS = {"host": "name", "switch": "name", "link": "name", "fault": "name", "process": "name", "socket": "name", "send": "socket",
                   "recv": "socket", "proxy": "name"}


def check_path(path: str, where: str) -> None:
    """A dotted path within the bounds of ``zsim.limits`` (``MAX_PATH_CHARS``,
    ``MAX_PATH_PARTS``: no field lies deeper than a scenario file may nest), else a
    ``ScenarioError`` naming ``where`` (the flag or field that gave it)."""
    from . import limits

    if len(path) > limits.MAX_PATH_CHARS:
        raise ScenarioError(where, f"a path of {len(path):,} characters; at most {limits.MAX_PATH_CHARS:,} are accepted "
                                   "(zsim.limits.MAX_PATH_CHARS)")
    parts = path.count(".") + 1
    if parts > limits.MAX_PATH_PARTS:
        raise ScenarioError(where, f"a path of {parts:,} parts; at most {limits.MAX_PATH_PARTS} are accepted "
                                   "(zsim.limits.MAX_PATH_PARTS): no scenario field lies deeper")


def shown_path(path: str, limit: int = 80) -> str:
    """A path as an error line shows it: cut to ``limit`` characters."""
    return path if len(path) <= limit else path[: limit - 4] + " ..."


def set_path(raw: dict[str, Any], path: str, value: Any) -> None:
    """Set a field of a raw scenario dict by a dotted path, in place.

    Paths start with a section: ``scenario.until_s``, ``socket.<name>.options.sndhwm``,
    ``send.<name or socket>.rate_per_s``, ``recv.<name or socket>.service_s.mean_s``,
    ``process.<name>.exit_at_s``. An array entry is chosen by its ``name``, or, for
    ``send``/``recv`` entries without a name, by the socket it uses when only one does.
    A template is chosen by its template name (``process.worker.count`` for ``name =
    "worker{i+1}"``, ``recv.w_in.service_s`` for a ``[[recv]]`` on ``w{i+1}_in``): the
    value applies to every member. A path that selects nothing raises ``ScenarioError``
    naming the path (and, for a member such as ``w3_in``, the template's path); so does one
    over the bounds of ``check_path``.
    """
    check_path(path, shown_path(path))
    parts = path.split(".")
    if len(parts) < 2:
        raise ScenarioError(path, "a path needs a section and a field, e.g. socket.pub.options.sndhwm")
    section = parts[0]
    if section in ("scenario", "machine"):
        target: Any = raw.setdefault(section, {})
        rest = parts[1:]
    elif section in _ARRAY_SECTIONS:
        if len(parts) < 3:
            raise ScenarioError(path, f"a {section} path needs an entry and a field, e.g. {section}.<name>.<field>")
        entries = raw.get(section)
        if not isinstance(entries, list):
            raise ScenarioError(path, f"the scenario has no [[{section}]] entries")
        key = parts[1]
        matches = [e for e in entries if isinstance(e, dict) and e.get("name") == key]
        if not matches and section in ("send", "recv"):
            matches = [e for e in entries if isinstance(e, dict) and e.get("socket") == key and "name" not in e]
        if not matches and section == "link":  # a link without a name goes by its hosts ("a-b")
            matches = [e for e in entries if isinstance(e, dict) and "name" not in e and isinstance(e.get("hosts"), list)
                       and "-".join(map(str, e["hosts"])) == key]
        if not matches:  # a template, by its name without placeholders (zsim.templates)
            matches = [e for e in entries if isinstance(e, dict) and template_name(e.get("name")) == key]
            if not matches and section in ("send", "recv"):
                matches = [e for e in entries if isinstance(e, dict) and "name" not in e and template_name(e.get("socket")) == key]
        if not matches and key.isdigit() and int(key) < len(entries):
            matches = [entries[int(key)]]
        if not matches:
            raise ScenarioError(path, f"no [[{section}]] entry named {key!r}{_member_hint(raw, section, key, parts)}")
        if len(matches) > 1:
            raise ScenarioError(path, f"{len(matches)} [[{section}]] entries match {key!r}; give them names")
        target = matches[0]
        rest = parts[2:]
    else:
        raise ScenarioError(path, f"unknown section {section!r}; one of scenario, machine, {', '.join(_ARRAY_SECTIONS)}")
    for depth, key in enumerate(rest[:-1]):
        child = target.get(key)
        if child is None:
            child = {}
            target[key] = child
        elif not isinstance(child, dict):
            # A constant replaced by a distribution parameter: ``service_s.mean_s`` on a
            # number makes no sense, say so.
            shown = ".".join(parts[: depth + 2 + (section not in ("scenario", "machine"))])
            raise ScenarioError(path, f"{shown} is {child!r}, not a table")
        target = child
    target[rest[-1]] = value


def _member_hint(raw: Mapping[str, Any], section: str, key: str, parts: list[str]) -> str:
    """When ``key`` is a member of a template (``w3_in`` of ``w{i+1}_in``): which one, and
    the path that sets the template (its members are made when the scenario is parsed)."""
    sockets = {template_name(e.get("name")): e.get("name") for e in raw.get("socket", []) if isinstance(e, dict)}
    for entry in raw.get(section, []):
        if not isinstance(entry, dict):
            continue
        pattern, template = entry.get("name"), template_name(entry.get("name"))
        if section in ("send", "recv") and "name" not in entry:
            # a workload without a name goes by its socket, written as a pattern or a template name
            socket = entry.get("socket")
            pattern = socket if template_name(socket) is not None else sockets.get(socket) if isinstance(socket, str) else None
            template = template_name(pattern)
        regex = member_pattern(pattern) if isinstance(pattern, str) else None
        if regex is not None and regex.fullmatch(key):
            return (f"; {key!r} is a member of the template {pattern!r}, made when the scenario is parsed: set the template, "
                    f"{section}.{template}.{'.'.join(parts[2:])}")
    return ""


def with_overrides(raw: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of ``raw`` with every ``path: value`` of ``overrides`` applied."""
    result = copy.deepcopy(dict(raw))
    for path, value in overrides.items():
        set_path(result, path, value)
    return result
