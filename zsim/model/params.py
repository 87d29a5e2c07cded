"""Timing and buffer parameters the model needs, already resolved from a profile.

``build`` turns a calibration profile (``zsim.profile``) into these plain objects; the
model never reads files. Distributions are ``zsim.distributions.Distribution`` values that
each connection samples with its own random stream.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..distributions import Distribution

#: kernel_capacity(wire_bytes_of_message, sndbuf, rcvbuf, sender sndhwm) -> bytes in flight
CapacityFn = Callable[[int, int, int, int], int]


#: ``tcp_sndbuf_expand``'s charge per segment of the window (``per_mss``) assumed when a
#: profile does not record it (profiles written before 2026-12-07): a power-of-two buffer of
#: 4,096 bytes for the MSS, ``MAX_TCP_HEADER`` and ``skb_shared_info``, plus a 256-byte
#: ``sk_buff``, as on distributions' kernels. A profile's ``[tcp] sndbuf_per_segment_bytes``
#: (measured by ``zsim calibrate``) replaces it
UNMEASURED_SNDBUF_PER_SEGMENT_BYTES = 4096 + 256


def _zero() -> Distribution:
    return Distribution.constant(0.0)


def _unbounded(_wire: int, _sndbuf: int, _rcvbuf: int, _sndhwm: int) -> int:
    return 1 << 40


@dataclass
class TransportParams:
    """One transport (tcp or ipc; inproc uses only the API costs)."""

    handshake: Distribution = field(default_factory=_zero)  # connect() -> both engines ready
    hop_latency: Distribution = field(default_factory=_zero)  # engine write -> peer engine POLLIN
    engine_s_per_msg: float = 0.0
    engine_s_per_byte: float = 0.0
    io_wakeup: Distribution = field(default_factory=_zero)  # I/O thread reaction to a command
    kernel_capacity: CapacityFn = _unbounded
    hup_loses_kernel_data: bool = False  # ipc: EPOLLHUP on a stopped engine loses the kernel's tail (libzmq #4660; docs/model.md)
    pollout_free_fraction: float = 1.0 / 3.0  # free space needed before POLLOUT (tcp 1/3, unix 3/4)
    write_overhead_bytes: int = 0  # kernel bookkeeping charged per write()
    write_charge: Callable[[int], int] | None = None  # truesize of one skb of n bytes (unix sockets)
    wake_cost: Callable[[float], float] | None = None  # send-call cost of waking the reader, by its idle time
    #: tcp over a link: the bytes ``tcp_sndbuf_expand`` charges the sending host's autotuned
    #: send buffer per segment of the window (``zsim.model.transport.network``)
    sndbuf_per_segment_bytes: int = UNMEASURED_SNDBUF_PER_SEGMENT_BYTES

    def max_skb_bytes(self, capacity: int) -> int:
        """unix_stream_sendmsg: one skb carries at most sk_sndbuf / 2 - 64 bytes."""
        return max(1, capacity // 2 - 64)


@dataclass(frozen=True)
class LinkWayParams:
    """One direction of a link: bits per second on the wire, one-way propagation, the
    sending host's buffer in front of it and each packet's loss probability."""

    bandwidth_bps: float
    latency_s: float = 0.0
    queue_bytes: int = 1000 * (1500 + 14)
    loss: float = 0.0


@dataclass(frozen=True)
class LinkParams:
    """One ``[[link]]`` between two hosts (``zsim.spec.LinkSpec``, resolved): bits per
    second on the wire, one-way propagation, the bottleneck's buffer and each packet's loss
    probability of ``hosts[0] -> hosts[1]`` and, unless ``reverse`` gives its own, of the
    way back; the MTU, both ways (``zsim.model.transport.network``)."""

    name: str
    hosts: tuple[str, str]
    bandwidth_bps: float
    latency_s: float = 0.0
    mtu_bytes: int = 1500
    queue_bytes: int = 1000 * (1500 + 14)
    loss: float = 0.0
    reverse: LinkWayParams | None = None  # hosts[1] -> hosts[0]; None: the same as forward

    def way(self, backward: bool) -> LinkWayParams:
        """``hosts[0] -> hosts[1]``, or the way back when ``backward``."""
        if backward and self.reverse is not None:
            return self.reverse
        return LinkWayParams(self.bandwidth_bps, self.latency_s, self.queue_bytes, self.loss)


@dataclass
class SchedulerParams:
    """The machine's cores and the scheduler's costs (``zsim.model.cpu``).

    ``cores = 0``: no machine, every thread has a core of its own. The defaults are Linux's
    usual orders of magnitude, not measurements; a profile's ``[scheduler]`` gives
    measured ones (``validation.calibrate.measure_scheduler``).
    """

    cores: int = 0
    context_switch_s: float = 5e-6  # one switch between two runnable threads on a core
    wakeup_s: float = 50e-6  # a woken thread waiting for a busy core to be preempted
    timeslice_s: float = 1.5e-3  # how long a thread runs before the next takes its core (EEVDF base slice, 2 cores)
    io_wake_s: float = 0.0  # CPU an idle I/O thread spends to wake for an event (poller, syscalls, mailbox)


@dataclass
class ModelParams:
    send_call_s: float = 0.0
    send_drop_call_s: float | None = None  # a send that queued nothing (PUB dropping)
    recv_call_s: float = 0.0
    command_throttle_s: float = 0.0
    app_wake: Distribution | None = None  # a blocked application thread waking on a command
    #: how late the machine wakes a program's wait: a sleep (``time.sleep``, by the
    #: sleep's length: ((wait_s, lateness), ...)), and a precise wait that sleeps, then
    #: spins its end (a workload's ``wait_spin_s`` > 0)
    sleep_late: tuple[tuple[float, Distribution], ...] = ()
    timer_jitter: Distribution | None = None

    def wait_lateness(self, wait_spin_s: float, typical_wait_s: float) -> Distribution | None:
        """How late a program's waits end: its precise wait's lateness if it spins the end
        of its waits, else the machine's sleep lateness measured for the sleep length
        nearest (in ratio) to the workload's typical wait."""
        if wait_spin_s > 0:
            return self.timer_jitter
        if not self.sleep_late:
            return None
        if typical_wait_s <= 0:
            return self.sleep_late[0][1]
        import math

        return min(self.sleep_late, key=lambda row: abs(math.log(row[0] / typical_wait_s)))[1]
    transports: dict[str, TransportParams] = field(default_factory=dict)
    profile_name: str = "ideal"
    scheduler: SchedulerParams = field(default_factory=SchedulerParams)

    def transport(self, name: str) -> TransportParams:
        params = self.transports.get(name)
        if params is None:
            params = TransportParams(hup_loses_kernel_data=(name == "ipc"), pollout_free_fraction=0.75 if name == "ipc" else 1.0 / 3.0)
            self.transports[name] = params
        return params


def params_of(process: Any, fallback: ModelParams) -> ModelParams:
    """The costs of the machine ``process`` runs on (its [[host]]'s profile: ``Process.params``,
    set by ``zsim.build``), or ``fallback`` (the run's) for an owner without a process or one
    built without hosts (a test's stub)."""
    return getattr(process, "params", None) or fallback


def unix_skb_truesize(nbytes: int) -> int:
    """Kernel memory one unix-stream skb of ``nbytes`` is charged (Linux, x86-64).

    Measured on the calibration machine with non-blocking writes into a unix socket pair
    until EAGAIN (the sender may have ``wmem_default`` = 212,992 bytes outstanding): small
    skbs are one kmalloc'd head, rounded up to a power of two together with
    ``skb_shared_info`` (320 B), plus ``sk_buff`` (256 B): 766 bytes for a 12-byte write,
    2,290 for 1,002. Larger ones carry their data in page fragments and cost about
    768 bytes over their size (4,841 for 4,000; 8,875 for 8,192; 16,384 for 16,000).
    This is why a unix socket holds few small writes: Linux's ``unix_stream_sendmsg`` charges
    each skb's truesize, not its payload, against the sender's ``sk_sndbuf`` (docs/model.md,
    on the kernel capacity).
    """
    if nbytes + 320 <= 4096:
        size = 512
        while size < nbytes + 320:
            size <<= 1
        return size + 256
    return nbytes + 768


def wake_cost_fn(idle_s: tuple[float, ...], cost_s: tuple[float, ...]) -> Callable[[float], float]:
    """Cost of a send that wakes a thread idle for ``idle`` seconds (measured table).

    Log-linear between the measured points, constant above the last; below the first it
    falls linearly to nothing (a thread that just went idle has not gone to sleep yet).
    """
    import math

    points = sorted(zip(idle_s, cost_s, strict=True))
    first_idle, first_cost = points[0]
    last_idle, last_cost = points[-1]
    logs = [(math.log(i), c) for i, c in points]

    def cost(idle: float) -> float:
        if idle >= last_idle:
            return last_cost
        if idle <= first_idle:
            return first_cost * (idle / first_idle) if idle > 0 else 0.0
        x = math.log(idle)
        for (x0, c0), (x1, c1) in zip(logs, logs[1:], strict=False):
            if x <= x1:
                return c0 + (c1 - c0) * (x - x0) / (x1 - x0)
        return last_cost  # pragma: no cover

    return cost
