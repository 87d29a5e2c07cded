"""Calibration profiles: the machine-dependent numbers the model needs.

A profile is TOML written by ``zsim calibrate`` (code in ``validation/calibrate/``, which
measures real pyzmq on loopback). zsim ships ``profiles/default.toml``, measured on a
Linux machine and recorded with its kernel, CPU, libzmq and pyzmq versions. Two names are
built in:

* ``default``: the shipped measurement.
* ``ideal``: the same buffers, but every time cost zero (no call costs, no latency, no
  command throttling). Queueing-theory checks use it: with it a PUB->SUB inproc pipe is
  exactly an M/M/1/K queue.

``[scenario] profile = "file.toml"`` selects a file (relative to the scenario file).

A file is a profile only if it says so: it has a ``[profile]`` table (``format = 1``, the
format this zsim reads, and where it was measured; ``zsim calibrate`` writes both), and
every table and key in it is one zsim reads (``TABLES``, ``*_KEYS``). So a typo such as
``profile = "pyproject.toml"`` is one line, not a machine whose every cost is zero, and a
misspelt key is refused with the key it most likely meant. A profile written by ``zsim
calibrate`` before ``format`` existed has no ``format``: it is read when it passes the same
checks, as every profile zsim calibrate wrote does (but for ``send_loop_s``, refused with its
reason since 2026-11-26). A profile file may be someone else's, or
any TOML file on the machine: its errors name the field and what it must be, never the
value read (``echo=False`` in ``zsim.distributions``, ``zsim.fields.kind_of``).

``[scheduler]`` records the machine's core count (``cores``, the default of a scenario's
``[machine] cores``; absent: 0, a core per thread) and the scheduler's costs
(``context_switch_s``, ``wakeup_s``, ``timeslice_s``, ``io_wake_s``; absent: the
defaults of ``zsim.model.params.SchedulerParams``). The shipped profile
records the measured costs and its machine's 2 cores (docs/model.md, "Cores").

``[api]`` holds the machine's costs only: the calls, and how late the machine wakes a
program's waits (``sleep_late_s`` for one that sleeps, ``timer_jitter_s`` for one that
spins their end). What a program does around its calls is the scenario's (a workload's
``loop_cpu_s`` and ``wait_spin_s``); a profile with ``send_loop_s``/``recv_loop_s`` is
refused.

``[tcp] sndbuf_per_segment_bytes`` is what the sending kernel charges an autotuned send
buffer per segment of the window over a link (``tcp_sndbuf_expand``: ``per_mss``, at a
1,500-byte MTU), measured by ``zsim calibrate``; a profile without it (written before
2026-12-07) keeps the value zsim used before it was measured, 4,352 bytes (a distribution
kernel's; ``zsim.model.params.UNMEASURED_SNDBUF_PER_SEGMENT_BYTES``), so its results do not
change silently.

Kernel buffering is stored per transport as a table of *effective in-flight kernel bytes*
by message size (``[tcp.kernel] payload_bytes``/``capacity_bytes``), because Linux counts
skb overhead (ipc) and autotunes buffers with traffic (tcp): the capacity seen by small and
large messages differs by an order of magnitude (docs/model.md, "Kernel capacity is a fitted table").
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import fields, files, limits
from .constants import IN_BATCH_SIZE, OUT_BATCH_SIZE, frame_wire_bytes
from .distributions import Distribution, parse_distribution
from .errors import ScenarioError
from .model.params import UNMEASURED_SNDBUF_PER_SEGMENT_BYTES

PROFILE_DIR = Path(__file__).parent / "profiles"
#: Floor for an interpolated kernel capacity (a fitted value below it is measurement noise).
MIN_KERNEL_BYTES = 1024
BUILTIN = ("default", "ideal")
#: ``[profile] format``: the profile format this zsim reads (``zsim calibrate`` writes it).
FORMAT = 1

#: The tables of a profile, and the keys each may hold (what ``from_dict`` reads, and what
#: ``zsim calibrate`` writes beside it: the raw counts the kernel tables were fitted to).
TABLES = ("profile", "api", "scheduler", "inproc", "ipc", "tcp")
#: ``[profile]``: the format, and where the profile was measured (``validation.calibrate``)
PROFILE_KEYS = frozenset({"format", "name", "measured_on", "kernel", "machine", "libzmq", "pyzmq", "python", "quick"})
#: ``[api]``; ``sleep_overshoot_s`` (a plain 1 ms sleep's lateness, written by ``zsim
#: calibrate`` before 2026-11-26, never used by the model, replaced by ``sleep_late_s``) is
#: read and ignored; ``send_loop_s``/``recv_loop_s`` are refused with their reason
API_KEYS = frozenset({"send_call_s", "send_drop_call_s", "recv_call_s", "command_throttle_s", "wake_s", "sleep_late_s",
                      "timer_jitter_s", "sleep_overshoot_s", "send_loop_s", "recv_loop_s"})
SCHEDULER_KEYS = frozenset({"cores", "context_switch_s", "wakeup_s", "timeslice_s", "io_wake_s"})
TRANSPORT_KEYS = frozenset({"handshake_s", "connect_s", "subscribe_s", "hop_latency_s", "engine_s_per_msg", "engine_s_per_byte",
                            "io_wakeup_s", "send_wake_cost", "write_overhead_bytes", "kernel", "sndbuf_per_segment_bytes"})
#: ``[tcp] sndbuf_per_segment_bytes``'s bounds: a segment of 1,460 bytes is charged at least
#: the next power of two, 2,048, and a kernel charging over 64 KB per segment is not one
SNDBUF_PER_SEGMENT_BOUNDS = (2048, 65536)
#: a kernel table's lists (``accepted_runs``: every run's count, ``fitted_accepted``: what
#: the fitted capacities give in the model), and ``sndhwm`` on ``[<transport>.kernel]``
KERNEL_KEYS = frozenset({"payload_bytes", "capacity_bytes", "accepted", "accepted_runs", "fitted_accepted"})
#: the sub-tables of ``[<transport>.kernel]``: measured at other HWMs, or with SO_SNDBUF/SO_RCVBUF set
_HWM_TABLE = re.compile(r"hwm_([0-9]{1,9})_([0-9]{1,9})")
_BUFFERS_TABLE = re.compile(r"sndbuf_rcvbuf_([0-9]{1,12})")


@dataclass(frozen=True)
class KernelTable:
    """Effective kernel bytes in flight on one connection direction, by payload size."""

    payload_bytes: tuple[int, ...] = ()
    capacity_bytes: tuple[int, ...] = ()

    def capacity(self, wire: int) -> int:
        return max(MIN_KERNEL_BYTES, self._interpolate(wire))

    def _interpolate(self, wire: int) -> int:
        """Log-log interpolation in the message's size on the wire (exact at table points)."""
        sizes, caps = self.payload_bytes, self.capacity_bytes
        if not sizes:
            return 1 << 40
        wires = [frame_wire_bytes(size) for size in sizes]
        if wire <= wires[0]:
            return caps[0]
        if wire >= wires[-1]:
            return caps[-1]
        for i in range(1, len(wires)):
            if wire <= wires[i]:
                x0, x1 = math.log(wires[i - 1]), math.log(wires[i])
                y0, y1 = math.log(max(caps[i - 1], 1)), math.log(max(caps[i], 1))
                t = (math.log(wire) - x0) / (x1 - x0)
                return int(round(math.exp(y0 + t * (y1 - y0))))
        return caps[-1]  # pragma: no cover


@dataclass(frozen=True)
class KernelModel:
    """Kernel tables measured at several sender HWMs (the batching, and so the skb
    overhead and TCP autotuning, depend on how many messages the engine finds queued)."""

    by_hwm: tuple[tuple[int, KernelTable], ...] = ()

    def capacity(self, wire: int, sndhwm: int) -> int:
        rows = self.by_hwm
        if not rows:
            return 1 << 40
        if len(rows) == 1 or sndhwm <= 0:
            return rows[-1][1].capacity(wire) if sndhwm <= 0 else rows[0][1].capacity(wire)
        h = max(1, sndhwm)
        if h <= rows[0][0]:
            return rows[0][1].capacity(wire)
        if h >= rows[-1][0]:
            return rows[-1][1].capacity(wire)
        for i in range(1, len(rows)):
            if h <= rows[i][0]:
                (h0, t0), (h1, t1) = rows[i - 1], rows[i]
                c0, c1 = t0.capacity(wire), t1.capacity(wire)
                t = (math.log(h) - math.log(h0)) / (math.log(h1) - math.log(h0))
                return int(round(math.exp(math.log(c0) + t * (math.log(c1) - math.log(c0)))))
        return rows[-1][1].capacity(wire)  # pragma: no cover


@dataclass(frozen=True)
class TransportProfile:
    handshake: Distribution = field(default_factory=lambda: Distribution.constant(0.0))
    subscribe: Distribution | None = None
    hop_latency: Distribution = field(default_factory=lambda: Distribution.constant(0.0))
    engine_s_per_msg: float = 0.0
    engine_s_per_byte: float = 0.0
    io_wakeup: Distribution | None = None
    write_overhead_bytes: int = 0
    send_wake_cost: tuple[tuple[float, ...], tuple[float, ...]] | None = None  # (idle_s, cost_s)
    kernel: KernelModel = field(default_factory=KernelModel)
    kernel_explicit: KernelTable | None = None  # measured with sndbuf = rcvbuf = explicit_bytes
    explicit_bytes: int = 65536
    #: tcp: ``tcp_sndbuf_expand``'s charge per segment (``[tcp] sndbuf_per_segment_bytes``)
    sndbuf_per_segment_bytes: int = UNMEASURED_SNDBUF_PER_SEGMENT_BYTES


@dataclass(frozen=True)
class Profile:
    name: str
    meta: Mapping[str, Any]
    send_call_s: float = 0.0
    send_drop_call_s: float | None = None
    recv_call_s: float = 0.0
    command_throttle_s: float = 0.0
    wake: Distribution | None = None  # a blocked application thread waking on a command
    #: how late ``time.sleep`` returns on this machine, by the length of the sleep
    #: ((wait_s, lateness), ... shortest first): a program's waits that only sleep
    sleep_late: tuple[tuple[float, Distribution], ...] = ()
    #: how late a precise wait returns (sleep until 0.5 ms before, then spin): a program's
    #: waits with ``wait_spin_s`` > 0
    timer_jitter: Distribution | None = None
    transports: Mapping[str, TransportProfile] = field(default_factory=dict)
    source: str = "<builtin>"
    #: ``[scheduler]``: the machine's cores (0: none recorded) and the scheduler's costs
    #: (None: the model's defaults)
    cores: int = 0
    context_switch_s: float | None = None
    wakeup_s: float | None = None
    timeslice_s: float | None = None
    io_wake_s: float | None = None

    def transport(self, name: str) -> TransportProfile:
        return self.transports.get(name, TransportProfile())

    def idealised(self) -> Profile:
        """Same buffers, no time costs at all."""
        transports = {
            name: replace(tp, handshake=Distribution.constant(0.0), subscribe=None, hop_latency=Distribution.constant(0.0),
                          engine_s_per_msg=0.0, engine_s_per_byte=0.0, io_wakeup=None, send_wake_cost=None)
            for name, tp in self.transports.items()
        }
        # no core count (a core per thread), and a scheduler that costs nothing if a
        # scenario asks for cores anyway
        return Profile(name="ideal", meta={"derived_from": self.name}, transports=transports, source=self.source,
                       context_switch_s=0.0, wakeup_s=0.0, io_wake_s=0.0)


def _float(table: Mapping[str, Any], key: str, path: str, default: float | None = None) -> float:
    if key not in table:
        if default is None:
            raise ScenarioError(f"{path}.{key}", "missing")
        return default
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise ScenarioError(f"{path}.{key}", f"must be a finite number >= 0{_found(value)}")
    return float(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _found(value: Any, numeric: bool = True) -> str:
    """``, got a string``: what was found, never the value (``fields.kind_of``); nothing for
    a finite number where a number is wanted (the requirement said its fault)."""
    if numeric and _is_number(value) and math.isfinite(value):
        return ""
    return f", got {fields.kind_of(value)}"


def _table(raw: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    """``raw[key]``, which must be a table if present (absent: an empty one)."""
    value = raw.get(key, {})
    if not isinstance(value, Mapping):
        raise ScenarioError(path, f"must be a table, got {fields.kind_of(value)}")
    return value


def _counts(raw: Mapping[str, Any], key: str, path: str, minimum: int) -> list[int]:
    """A kernel table's list of whole numbers >= ``minimum`` (sizes, counts, bytes)."""
    values = raw.get(key)
    where = f"{path}.{key}"
    if not isinstance(values, list) or not values:
        raise ScenarioError(where, "must be a non-empty list of whole numbers")
    for index, value in enumerate(values):
        if not _is_number(value) or not math.isfinite(value) or value != int(value) or value < minimum:
            raise ScenarioError(f"{where}[{index}]", f"must be a whole number >= {minimum}{_found(value)}")
    return [int(value) for value in values]


def check_is_profile(raw: Mapping[str, Any]) -> None:
    """A profile file says it is one: a ``[profile]`` table (whose ``format``, checked by
    ``from_dict``, is ``FORMAT``; files written by ``zsim calibrate`` before it existed have
    none). ``ScenarioError`` without a path otherwise: the caller names the field that
    chose the file."""
    if not isinstance(raw.get("profile"), Mapping):
        raise ScenarioError("", f"not a zsim profile: it has no [profile] table (zsim calibrate writes one, with format = {FORMAT} "
                                "and where it was measured; docs/scenario-format.md, Profiles)")


def derive_capacity_bytes(accepted: int, sndhwm: int, rcvhwm: int, payload: int) -> int:
    """Kernel bytes implied by a stalled PUSH->PULL measurement.

    accepted = SNDHWM + RCVHWM + messages in the two engines + kernel bytes / wire size;
    the sending engine holds one batch (>= 8 KB or one message) pulled from its pipe, the
    receiving engine one read buffer (8 KB, held message included).
    """
    wire = frame_wire_bytes(payload)
    engine_msgs = math.ceil(OUT_BATCH_SIZE / wire) + max(1, IN_BATCH_SIZE // wire)
    rest = accepted - sndhwm - rcvhwm - engine_msgs
    return max(0, rest) * wire


def _kernel_table(raw: Any, path: str, sndhwm: int = 10, rcvhwm: int = 10) -> KernelTable:
    if not isinstance(raw, Mapping):
        raise ScenarioError(path, f"must be a table with payload_bytes and capacity_bytes (or accepted){_found(raw)}")
    sizes = _counts(raw, "payload_bytes", path, 0)
    for key in ("accepted_runs",):  # every run's counts, kept for the record: not read
        if key in raw and not isinstance(raw[key], list):
            raise ScenarioError(f"{path}.{key}", f"must be a list (of each size's counts){_found(raw[key])}")
    if "fitted_accepted" in raw:
        _counts(raw, "fitted_accepted", path, 0)
    if "capacity_bytes" in raw:
        caps_int = _counts(raw, "capacity_bytes", path, 0)
        if len(caps_int) != len(sizes):
            raise ScenarioError(f"{path}.capacity_bytes", "must list one capacity per payload size")
    elif "accepted" in raw:
        accepted = _counts(raw, "accepted", path, 0)
        if len(accepted) != len(sizes):
            raise ScenarioError(f"{path}.accepted", "must list one count per payload size")
        caps_int = [derive_capacity_bytes(a, sndhwm, rcvhwm, size) for a, size in zip(accepted, sizes, strict=True)]
    else:
        raise ScenarioError(path, "needs capacity_bytes or accepted")
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    return KernelTable(tuple(sizes[i] for i in order), tuple(caps_int[i] for i in order))


def _wake_table(raw: Any, path: str) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or not isinstance(raw.get("idle_s"), list) or not isinstance(raw.get("cost_s"), list):
        raise ScenarioError(path, "must be { idle_s = [...], cost_s = [...] }")
    fields.check_keys(raw, {"idle_s", "cost_s"}, path)
    idle, cost = raw["idle_s"], raw["cost_s"]
    if len(idle) != len(cost) or not idle or any(not _is_number(v) or not 0 <= v < math.inf for v in idle + cost):
        raise ScenarioError(path, "idle_s and cost_s must be equally long lists of finite numbers >= 0")
    return tuple(float(v) for v in idle), tuple(float(v) for v in cost)


def _dist(table: Mapping[str, Any], key: str, path: str) -> Distribution | None:
    if key not in table:
        return None
    return parse_distribution(table[key], f"{path}.{key}", "s", echo=False)


def _sleep_late(api: Mapping[str, Any]) -> tuple[tuple[float, Distribution], ...]:
    """``[api] sleep_late_s``: a list of lateness distributions, each for sleeps of about
    ``wait_s`` (a sleep of 100 ms wakes later than one of 1 ms: timer slack, idle states)."""
    raw = api.get("sleep_late_s")
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw:
        raise ScenarioError("api.sleep_late_s", "must be a list of {wait_s = ..., dist = ...} tables")
    rows = []
    for index, entry in enumerate(raw):
        path = f"api.sleep_late_s[{index}]"
        if not isinstance(entry, Mapping):
            raise ScenarioError(path, f"must be a table {{wait_s = ..., dist = ...}}{_found(entry)}")
        wait = _float(entry, "wait_s", path)
        if wait <= 0:
            raise ScenarioError(f"{path}.wait_s", "must be > 0")
        rows.append((wait, parse_distribution({k: v for k, v in entry.items() if k != "wait_s"}, path, "s", echo=False)))
    rows.sort(key=lambda row: row[0])
    return tuple(rows)


def _kernel(raw: Any, path: str) -> tuple[KernelModel, KernelTable | None, int]:
    """``[<transport>.kernel]`` and its sub-tables: (the model by HWM, the table measured with
    SO_SNDBUF/SO_RCVBUF set, those buffers' bytes)."""
    if not isinstance(raw, Mapping):
        raise ScenarioError(path, f"must be a table{_found(raw)}")
    sndhwm = fields.integer(raw.get("sndhwm", 10), f"{path}.sndhwm", 1, echo=False)
    # [tcp.kernel] itself was measured with SNDHWM = RCVHWM = 10
    rows: list[tuple[int, KernelTable]] = [(sndhwm, _kernel_table(raw, path))]
    explicit, explicit_bytes = None, 65536
    for key, value in raw.items():
        if key in KERNEL_KEYS or key == "sndhwm":
            continue
        where = f"{path}.{key}"
        hwm, buffers = _HWM_TABLE.fullmatch(key), _BUFFERS_TABLE.fullmatch(key)
        if hwm and int(hwm.group(1)) >= 1 and int(hwm.group(2)) >= 1:
            snd, rcv = int(hwm.group(1)), int(hwm.group(2))
            rows.append((snd, _kernel_table(value, where, snd, rcv)))
        elif buffers and int(buffers.group(1)) >= 1:
            explicit_bytes = int(buffers.group(1))
            explicit = _kernel_table(value, where)
        else:
            fields.check_keys({key: value}, set(KERNEL_KEYS) | {"sndhwm", "hwm_<sndhwm>_<rcvhwm>", "sndbuf_rcvbuf_<bytes>"}, path)
    rows.sort(key=lambda row: row[0])
    return KernelModel(tuple(rows)), explicit, explicit_bytes


def _transport(raw: Any, path: str) -> TransportProfile:
    if not isinstance(raw, Mapping):
        raise ScenarioError(path, f"must be a table{_found(raw)}")
    fields.check_keys(raw, set(TRANSPORT_KEYS), path)
    handshake = _dist(raw, "handshake_s", path) or _dist(raw, "connect_s", path) or Distribution.constant(0.0)
    kernel, explicit, explicit_bytes = KernelModel(), None, 65536
    if "kernel" in raw:
        kernel, explicit, explicit_bytes = _kernel(raw["kernel"], f"{path}.kernel")
    per_segment = UNMEASURED_SNDBUF_PER_SEGMENT_BYTES
    if "sndbuf_per_segment_bytes" in raw:
        if path != "tcp":  # a unix socket's buffer is charged per skb (unix_skb_truesize), not per segment
            raise ScenarioError(f"{path}.sndbuf_per_segment_bytes", "is tcp's: only [tcp] has it")
        low, high = SNDBUF_PER_SEGMENT_BOUNDS
        per_segment = fields.integer(raw["sndbuf_per_segment_bytes"], f"{path}.sndbuf_per_segment_bytes", low, high, echo=False)
    return TransportProfile(
        handshake=handshake,
        subscribe=_dist(raw, "subscribe_s", path),
        hop_latency=_dist(raw, "hop_latency_s", path) or Distribution.constant(0.0),
        engine_s_per_msg=_float(raw, "engine_s_per_msg", path, 0.0),
        engine_s_per_byte=_float(raw, "engine_s_per_byte", path, 0.0),
        io_wakeup=_dist(raw, "io_wakeup_s", path),
        send_wake_cost=_wake_table(raw.get("send_wake_cost"), f"{path}.send_wake_cost"),
        write_overhead_bytes=int(_float(raw, "write_overhead_bytes", path, 0.0)),
        kernel=kernel,
        kernel_explicit=explicit,
        explicit_bytes=explicit_bytes,
        sndbuf_per_segment_bytes=per_segment,
    )


def _head(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """``[profile]``: its ``format`` (a newer one is refused: its fields may mean other
    things) and the strings that say where the profile was measured."""
    head = _table(raw, "profile", "profile")
    fields.check_keys(head, set(PROFILE_KEYS), "profile")
    if "format" in head:
        version = fields.integer(head["format"], "profile.format", 1, echo=False)
        if version != FORMAT:
            raise ScenarioError("profile.format", f"this zsim reads profile format {FORMAT}; this file is written in a newer "
                                                  "one (a newer zsim wrote it)")
    for key, value in head.items():
        if key == "quick" and not isinstance(value, bool):
            raise ScenarioError("profile.quick", f"must be true or false{_found(value, numeric=False)}")
        if key not in ("format", "quick") and not isinstance(value, str):
            raise ScenarioError(f"profile.{key}", f"must be a string{_found(value, numeric=False)}")
        if isinstance(value, str):
            limits.check_text(value, f"profile.{key}")
    return head


def from_dict(raw: Mapping[str, Any], source: str = "<dict>") -> Profile:
    """A profile from its tables (a file's, or a dict's); every table and key must be one
    this module reads, and every value of the type it needs (``ScenarioError`` naming the
    field and what it must be, never the value)."""
    if not isinstance(raw, Mapping):
        raise ScenarioError("profile", f"must be a table of tables{_found(raw)}")
    for key in raw:
        if key not in TABLES:
            close = next(iter(difflib.get_close_matches(key, TABLES, n=1, cutoff=0.6)), None)  # short names: [apy] is [api]
            hint = f" (did you mean [{close}]?)" if close else ""
            shown = key if len(key) <= 80 else key[:76] + " ..."
            raise ScenarioError(shown, f"not a table of a profile{hint}; a profile has {', '.join(f'[{t}]' for t in TABLES)}")
    head = _head(raw)
    api = _table(raw, "api", "api")
    fields.check_keys(api, set(API_KEYS), "api")
    for key in ("send_loop_s", "recv_loop_s"):
        if key in api:
            # written by zsim calibrate before 0.2: the validation harness's own loop, which
            # is a program's habit, not the machine's
            raise ScenarioError(f"api.{key}", "not a machine figure: what a program's loop costs beyond the ZeroMQ call is "
                                              "the program's (loop_cpu_s on its [[send]]/[[recv]]); delete this line")
    if "sleep_overshoot_s" in api:  # written before 2026-11-26, never used: read as a number, then ignored
        _float(api, "sleep_overshoot_s", "api")
    transports = {}
    for name in ("inproc", "ipc", "tcp"):
        if name in raw:
            transports[name] = _transport(raw[name], name)
    scheduler = _table(raw, "scheduler", "scheduler")
    fields.check_keys(scheduler, set(SCHEDULER_KEYS), "scheduler")
    cores = fields.integer(scheduler.get("cores", 0), "scheduler.cores", 0, echo=False)  # 0: no core count recorded
    return Profile(
        name=str(head.get("name", Path(source).stem)),
        meta=dict(head),
        send_call_s=_float(api, "send_call_s", "api", 0.0),
        send_drop_call_s=_float(api, "send_drop_call_s", "api") if "send_drop_call_s" in api else None,
        recv_call_s=_float(api, "recv_call_s", "api", 0.0),
        command_throttle_s=_float(api, "command_throttle_s", "api", 0.0),
        wake=_dist(api, "wake_s", "api"),
        sleep_late=_sleep_late(api),
        timer_jitter=_dist(api, "timer_jitter_s", "api"),
        transports=transports,
        source=source,
        cores=cores,
        context_switch_s=_float(scheduler, "context_switch_s", "scheduler") if "context_switch_s" in scheduler else None,
        wakeup_s=_float(scheduler, "wakeup_s", "scheduler") if "wakeup_s" in scheduler else None,
        timeslice_s=_float(scheduler, "timeslice_s", "scheduler") if "timeslice_s" in scheduler else None,
        io_wake_s=_float(scheduler, "io_wake_s", "scheduler") if "io_wake_s" in scheduler else None,
    )


_CACHE: dict[str, Profile] = {}


def load(name_or_path: str | None, base_dir: str = ".", field: str = "scenario.profile") -> Profile:
    """A built-in profile by name, or a TOML file (relative paths from ``base_dir``); an error
    names ``field``, where the name was given."""
    key = name_or_path or "default"
    if key in ("default", "ideal"):
        cache_key = "builtin:default"
        if cache_key not in _CACHE:
            path = PROFILE_DIR / "default.toml"
            if path.exists():
                raw = files.load_toml(path, "profile file")
                check_is_profile(raw)
                _CACHE[cache_key] = from_dict(raw, str(path))
            else:
                _CACHE[cache_key] = Profile(name="empty", meta={})
        base = _CACHE[cache_key]
        return base.idealised() if key == "ideal" else base
    path = Path(key)
    if not path.is_absolute():
        path = Path(base_dir) / path
    cache_key = str(path.resolve())
    if cache_key in _CACHE:
        return _CACHE[cache_key]
    if not path.exists():
        raise ScenarioError(field, f"no such profile file {str(path)!r} (built in: {', '.join(BUILTIN)})")
    try:
        raw = files.load_toml(path, "profile file")
    except ScenarioError as exc:
        raise ScenarioError(field, str(exc)) from None
    try:
        check_is_profile(raw)
    except ScenarioError as exc:
        raise ScenarioError(field, f"{path}: {exc.reason}") from None
    try:
        profile = from_dict(raw, str(path))
    except ScenarioError as exc:
        raise ScenarioError(f"profile {path}: {exc.path}", exc.reason) from None
    _CACHE[cache_key] = profile
    return profile
