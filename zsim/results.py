"""Results of one run: a summary dict (the ``--json`` output), flat metrics, and tables.

The summary carries its provenance (scenario name and digest, seed, profile, versions,
wall time) so a number can always be traced back to what produced it. Tables (one row per
message copy; depth over time per pipe) are written as Parquet by ``write_parquet``, which
imports pandas lazily: ``import zsim`` works without it.
"""

from __future__ import annotations

import json
import math
import platform
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import steady
from .constants import LONG_FRAME_HEADER, SHORT_FRAME_HEADER, SHORT_FRAME_MAX
from .files import prepare_output_dir, replace_set
from .ledger import DELIVERED, DISCARDED, DROPPED, FORWARDED, LOST, QUEUED, RULES, STATES, WHERE
from .metrics import MEMBER_STATS, PER_SOCKET, PIPE_FIELDS, SENDER_FIELDS, flat_metrics, template_members
from .model.fates import RULE_FILTERED  # a SUB's own filter threw the copy away (not wanted)
from .summary import (
    LedgerSummary,
    ProcessSummary,
    ProxySummary,
    ReceiverSummary,
    RunSummary,
    SenderSummary,
    SocketSummary,
    percentiles,
    percentiles_many,
    sender_rates,
)

if TYPE_CHECKING:  # pragma: no cover
    from .build import Model


def versions() -> dict[str, str]:
    import simpy

    from . import __version__, native

    return {
        "zsim": __version__,
        "zsim_mode": native.mode(),
        "python": platform.python_version(),
        "simpy": getattr(simpy, "__version__", "?"),
        "numpy": np.__version__,
        "models_libzmq": "4.3.5",
    }


def _destinations(world: Any, table: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per record: the socket the copy was meant for, and whether it counts for it.

    A copy is meant for the socket at the end of the pipe it was written to; copies that a
    socket read (delivered, forwarded) or threw away itself (discarded) count for that
    socket. Copies its own SUB filter discarded were never wanted and are left out."""
    state, rule = table["state"], table["rule"]
    # a copy with no pipe (-1) indexes the appended -1: no destination
    by_pipe = np.asarray(world.pipe_destinations() + [-1], dtype=np.intp)[table["pipe"]]
    at_reader = _AT_READER[state]
    dest = np.where(at_reader, table["socket"], by_pipe)
    wanted = (dest >= 0) & ~((state == DISCARDED) & (rule == RULE_FILTERED))
    return dest, wanted


#: per state code: does a copy in that state count for the socket that holds the record (it
#: read it, or threw it away itself)?
_AT_READER = np.isin(np.arange(len(STATES)), (DELIVERED, FORWARDED, DISCARDED))


def _stable_order(keys: np.ndarray, n_keys: int) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` for keys in ``[-1, n_keys)``: as 16-bit integers
    when they fit, which numpy sorts by radix in one pass instead of by merging."""
    if n_keys < 2**15:
        keys = keys.astype(np.int16)
    return np.argsort(keys, kind="stable")


def _settling(world: Any, table: dict[str, np.ndarray], meant_for: tuple[np.ndarray, np.ndarray], latency_order: np.ndarray,
              latency_bounds: np.ndarray, sorted_latency: np.ndarray) -> dict[int, dict[str, Any]]:
    """Per receiving socket: has its latency (per delivered copy, in delivery order) and its
    loss (0/1 per copy meant for it, in send order) settled? MSER-5 (``zsim.steady``).
    ``meant_for``: ``_destinations(world, table)``."""
    dest, wanted = meant_for
    idx = np.flatnonzero(wanted)
    # by socket, then send time (np.lexsort((t0, dest)), as two stable sorts)
    by_time = np.argsort(table["t0"][idx], kind="stable")
    idx = idx[by_time]
    n = len(world.sockets)
    idx = idx[_stable_order(dest[idx], n)]
    t0 = table["t0"][idx]
    lost = table["state"][idx] > FORWARDED  # neither delivered nor forwarded
    dest_in_order = dest[idx]
    bounds = np.searchsorted(dest_in_order, np.arange(n + 1))
    any_lost = np.bincount(dest_in_order[lost], minlength=n) > 0  # a series of zeros has no warm-up to find
    delivered_t0 = table["t0"][table["state"] == DELIVERED][latency_order]
    latency = steady.mser5_many([sorted_latency[latency_bounds[i]:latency_bounds[i + 1]] for i in range(n)])
    lost_0_1 = lost.astype(np.float64)
    loss = steady.mser5_many([lost_0_1[bounds[i]:bounds[i + 1]] if any_lost[i] else lost_0_1[:0] for i in range(n)])
    found: dict[int, dict[str, Any]] = {}
    for i in range(n):
        entry: dict[str, Any] = {}
        warm = latency[i]
        if warm is not None:
            at = latency_bounds[i] + warm.deleted
            entry["latency"] = {"method": "MSER-5", "observations": warm.observations, "warmup_copies": warm.deleted,
                                "warmup_end_s": float(delivered_t0[at]), "settled": warm.settled}
        warm = loss[i]
        if warm is not None:
            entry["loss"] = {"method": "MSER-5", "observations": warm.observations, "warmup_copies": warm.deleted,
                             "warmup_end_s": float(t0[bounds[i] + warm.deleted]), "settled": warm.settled}
        if entry:
            found[i] = entry
    return found


def _count_rows(*columns: np.ndarray) -> list[tuple[tuple[int, ...], int]]:
    """The distinct rows of equal-length integer columns and how often each occurs, in
    lexicographic order: ``np.unique(np.stack(columns, 1), axis=0, return_counts=True)``.

    Counted on one int64 key per row: ``np.unique`` with ``axis=0`` sorts a structured view
    whose every comparison allocates, which cost ~3,600 instructions per dropped copy on
    M/M/1/3 (more than the simulation of the copy).
    """
    lows = [int(column.min()) for column in columns]
    spans = [int(column.max()) - low + 1 for column, low in zip(columns, lows, strict=True)]
    if math.prod(spans) >= 2**62:  # pragma: no cover - far beyond any topology's indices
        unique, counts = np.unique(np.stack(columns, axis=1), axis=0, return_counts=True)
        return [(tuple(row), n) for row, n in zip(unique.tolist(), counts.tolist(), strict=True)]
    key = np.zeros(len(columns[0]), dtype=np.int64)
    for column, low, span in zip(columns, lows, spans, strict=True):
        key = key * span + (column.astype(np.int64) - low)
    values, counts = np.unique(key, return_counts=True)
    rows = []
    for value, n in zip(values.tolist(), counts.tolist(), strict=True):
        row = []
        for low, span in zip(reversed(lows), reversed(spans), strict=True):
            value, digit = divmod(value, span)
            row.append(digit + low)
        rows.append((tuple(reversed(row)), n))
    return rows


def _inbound(world: Any, table: dict[str, np.ndarray], pipe_names: list[str],
             meant_for: tuple[np.ndarray, np.ndarray]) -> dict[int, dict[str, Any]]:
    """Per receiving socket: the fate of every copy meant for it (``meant_for``:
    ``_destinations``). One pass over the records (bincount), whatever the number of sockets.
    """
    state, rule, pipe = table["state"], table["rule"], table["pipe"]
    dest, wanted = meant_for
    n_sockets, n_states = len(world.sockets), len(STATES)
    counts = np.bincount(dest[wanted] * n_states + state[wanted], minlength=n_sockets * n_states).reshape(n_sockets, n_states)
    # the window over which copies meant for each socket were sent (offered rate = copies / window)
    first = np.full(n_sockets, np.inf)
    last = np.full(n_sockets, -np.inf)
    np.minimum.at(first, dest[wanted], table["t0"][wanted])
    np.maximum.at(last, dest[wanted], table["t0"][wanted])
    dropped = wanted & (state == 2)
    drops: dict[int, dict[str, int]] = {}
    if dropped.any():
        for (d, p, r), n in _count_rows(dest[dropped], pipe[dropped], rule[dropped]):
            where = pipe_names[p] if p >= 0 else "no pipe"
            drops.setdefault(d, {})[f"{where}: {RULES.get(r, str(r))}"] = n
    inbound: dict[int, dict[str, Any]] = {}
    for index in range(n_sockets):
        row = counts[index]
        total = int(row.sum())
        if total == 0:
            continue
        taken = int(row[DELIVERED] + row[1])
        inbound[index] = {
            "copies": total,
            "delivered": int(row[DELIVERED]),
            "forwarded": int(row[1]),
            "dropped": int(row[2]),
            "discarded": int(row[3]),
            "lost_on_close": int(row[4]),
            "queued_at_end": int(row[5]),
            "loss_fraction": (total - taken) / total,
            "dropped_by": drops.get(index, {}),
            "offered_window_s": float(last[index] - first[index]),
        }
    return inbound


def offer_to_links(network: dict[str, dict[str, dict[str, Any]]], table: Mapping[str, np.ndarray],
                   pipes: list[Any]) -> None:
    """Add to each direction of ``summary["network"]`` what its writers offered it: every copy
    written to, or dropped at, a pipe of a tcp connection that crosses the direction (its
    ``connections``, by ``writer->reader``), whatever became of it, counted as the bytes the
    writer's engine would have put on the ZMTP stream.

    ``offered_copies``, ``offered_bytes``, ``offered_window_s`` (from the first copy's send
    time to the last's, as a receiver's ``offered_window_s``), ``offered_bps`` (8 x bytes /
    window; 0 when nothing was offered, NaN for copies sent at one instant) and ``offered_utilisation`` (``offered_bps`` over
    the link's ``bandwidth_bps``: above 1 the writers wanted more than it carries),
    ``offered_delivered`` (the copies delivered or forwarded at the end) and
    ``offered_noise`` (sqrt(sum of squared sizes) / sum of sizes: the relative standard
    error of the offered bytes had the copies come at random, Poisson; ``link_oversubscribed``'s
    margin, zsim.checks).

    A copy counts as one frame (its bytes plus its ZMTP header, ``frame_wire_bytes``: 2 bytes
    up to 255, else 9); a multipart message's other frame headers and a reply's routing-id
    frames (a few bytes each) are not in the ledger, so the offered bytes are a lower bound
    by those. TCP/IP and Ethernet headers (66 bytes a segment) are not counted: the load is
    the writers', the capacity the link's."""
    directions = [way for ways in network.values() for way in ways.values()]
    # pipe index -> its connection's name (None: not a tcp connection's; the appended None for "no pipe");
    # a connection routed through switches crosses several directions, each of which counts it
    names = [f"{p.frm}->{p.to}" if p.kind in ("send", "recv") else None for p in pipes] + [None]
    pipe_of = table["pipe"]
    for way in directions:
        connections = way["connections"]
        crossing = np.asarray([name in connections for name in names], dtype=bool)
        mask = crossing[pipe_of] if len(pipe_of) else np.zeros(0, bool)
        size, t0 = table["size"][mask].astype(np.float64), table["t0"][mask]
        wire = size + np.where(size <= SHORT_FRAME_MAX, SHORT_FRAME_HEADER, LONG_FRAME_HEADER)
        copies = int(mask.sum())
        total = float(wire.sum())
        window = float(t0.max() - t0.min()) if copies else 0.0
        # nothing offered is a rate of 0; one copy, or copies all sent at one instant, no rate
        rate = 8.0 * total / window if window > 0 else (0.0 if not copies else math.nan)
        way["offered_copies"] = copies
        way["offered_bytes"] = int(total)
        way["offered_window_s"] = window
        way["offered_bps"] = rate
        way["offered_utilisation"] = rate / way["bandwidth_bps"] if way["bandwidth_bps"] > 0 else math.nan
        way["offered_delivered"] = int(np.isin(table["state"][mask], (DELIVERED, FORWARDED)).sum())
        way["offered_noise"] = math.sqrt(float((wire * wire).sum())) / total if total > 0 else math.nan


def _pipe_drops(table: dict[str, np.ndarray]) -> dict[int, dict[str, int]]:
    """Per pipe index: copies dropped on it, by rule."""
    state, rule, pipe = table["state"], table["rule"], table["pipe"]
    dropped = (state == 2) & (pipe >= 0)
    result: dict[int, dict[str, int]] = {}
    if dropped.any():
        for (p, r), n in _count_rows(pipe[dropped], rule[dropped]):
            result.setdefault(p, {})[RULES.get(r, str(r))] = n
    return result


#: What ``RunResult.to_frame(kind)`` can tabulate: one row per entity of that kind.
FRAME_KINDS = ("socket", "pipe", "link", "sender", "template")


def _pandas() -> Any:
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError("DataFrames need pandas: pip install 'zsim[results]'") from exc
    return pd


@dataclass
class RunResult:
    """One run: ``summary`` (what ``zsim run --json`` prints), the per-copy records
    (``messages``, integer-coded; ``messages_frame()`` decodes them) and, with
    ``zsim.run(..., trace=True)``, every pipe's depth changes (``depth``, ``depth_frame()``)."""

    summary: RunSummary
    messages: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    depth: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    socket_names: list[str] = field(default_factory=list, repr=False)
    pipe_names: list[str] = field(default_factory=list, repr=False)
    #: the scenario that ran (its ``[[recv]]`` service times make ``offered_utilisation``)
    scenario: Any = field(default=None, repr=False)
    #: whether depth changes were recorded (``zsim.run(..., trace=True)``)
    traced: bool = field(default=False, repr=False)
    #: per ``[[send]]`` that had sends refused with zmq.Again (DONTWAIT, SNDTIMEO): when
    #: each refused call returned, in order (``zsim.explain``'s episodes of refused sends)
    refused: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.summary, indent=indent, sort_keys=False, default=json_default)

    def flat(self) -> dict[str, Any]:
        """The run's numbers as one flat dict: the metrics columns of a sweep's row
        (``zsim.metrics.flat_metrics``: pooled figures and ``socket.<name>.<field>``, ``pipe.<name>.<field>``, ...)."""
        return flat_metrics(self.summary, self, self.scenario)

    def to_frame(self, kind: str = "socket") -> Any:
        """Per-entity metrics as a pandas DataFrame, one row per entity of ``kind``, indexed
        by its name: ``"socket"`` (every socket: type, process, its own counters and, for a
        socket copies were meant for, what became of them and their latency), ``"pipe"``,
        ``"link"`` (per direction of a tcp/ipc link), ``"sender"`` or ``"template"`` (the
        members of each ``count = N`` socket or ``copies = N`` sender template summed and
        as min/mean/max). The numbers are those of ``flat()``; a field an entity has no
        value for is NaN."""
        if kind not in FRAME_KINDS:
            raise ValueError(f"kind must be one of {', '.join(FRAME_KINDS)}; got {kind!r}")
        pd = _pandas()
        row = self.flat()
        rows: dict[str, dict[str, Any]] = {}
        summary = self.summary
        if kind == "socket":
            for name, sock in summary["sockets"].items():
                entry: dict[str, Any] = {"type": sock["type"], "process": sock["process"]}
                entry.update({key: row.get(f"socket.{name}.{key}", math.nan) for key in (*PER_SOCKET, "dropped")})
                if "inbound" not in sock:
                    entry["dropped"] = math.nan  # nothing was meant for it: its drops as a sender are dropped_sending
                rows[name] = entry
        elif kind == "pipe":
            for pipe in summary["pipes"]:
                name = pipe["name"]
                if name not in rows:  # pipes of the same name (reconnects) are one row, as in flat()
                    rows[name] = {"from": pipe["from"], "to": pipe["to"], "transport": pipe["kind"], "hwm": pipe["hwm"],
                                  **{key: row[f"pipe.{name}.{key}"] for key in PIPE_FIELDS}, "depth_at_end": 0}
                rows[name]["depth_at_end"] += pipe["depth_at_end"]
                for rule, count in (pipe.get("dropped_by_rule") or {}).items():
                    rows[name][f"dropped_{rule}"] = rows[name].get(f"dropped_{rule}", 0) + count
        elif kind == "link":
            for link in summary.get("links") or ():
                for name, levels in (link.get("directions") or {}).items():
                    entry = rows.setdefault(name, {"transport": link["transport"]})
                    for quantity in levels:
                        for stat in ("max", "mean"):
                            entry[f"{stat}_{quantity}"] = row[f"link.{name}.{stat}_{quantity}"]
        elif kind == "sender":
            for name, sender in (summary.get("senders") or {}).items():
                rows[name] = {"socket": sender["socket"], **{key: row[f"sender.{name}.{key}"] for key in SENDER_FIELDS}}
        else:
            for template_kind, prefix in (("socket", "socket"), ("send", "sender")):
                for name in (summary.get("templates") or {}).get(template_kind) or {}:
                    start = f"{prefix}.{name}."
                    stats = {key[len(start):]: value for key, value in row.items()
                             if key.startswith(start) and key[len(start):].split("_", 1)[0] in (*MEMBER_STATS, "members")}
                    rows[name] = {"kind": prefix, **stats}
        frame = pd.DataFrame.from_dict(rows, orient="index")
        if kind == "pipe":  # a pipe that dropped nothing by a rule another pipe used: 0, not NaN
            for column in [c for c in frame.columns if c.startswith("dropped_")]:
                frame[column] = frame[column].fillna(0).astype(np.int64)
        frame.index.name = kind
        return frame

    def messages_frame(self) -> Any:
        """One row per message copy and its fate, names decoded (``zsim run --out``'s
        messages.parquet without the seed and scenario columns): ``msg_id``, ``origin``
        (the socket that sent it), ``state`` (delivered, forwarded, dropped, discarded,
        lost_on_close, queued_at_end), ``socket`` (where its fate was decided: the receiver
        for a delivery, the socket that dropped, discarded or still holds it), ``pipe_name``
        (empty where no pipe was involved), ``rule`` (why it was dropped, discarded or lost;
        where it was queued: pipe, engine, kernel; empty for a delivery), ``sent_s``,
        ``end_s`` (when its fate was decided), ``latency_s`` (deliveries only, else NaN),
        ``size_bytes``, ``cause_id`` (the message it answers or was made from: a reply's
        request, a stage's task; -1 for none). No column is named like a DataFrame method (``size``, ``pipe``)."""
        return messages_frame(self)

    def depth_frame(self) -> Any:
        """Every depth change of every pipe (``pipe_name``, ``time_s``, ``depth``), recorded
        only by ``zsim.run(..., trace=True)``; a run without it raises ``ValueError`` rather
        than give an empty table that reads as "nothing was queued"."""
        if not self.traced:
            raise ValueError("depth changes are recorded only by zsim.run(..., trace=True)")
        return depth_frame(self)

    def write_parquet(self, out_dir: str | Path) -> list[Path]:
        return write_parquet(self, out_dir)


def json_default(value: Any) -> Any:
    """``json.dumps(default=...)`` for numpy scalars and arrays."""
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def causal_times(table: Mapping[str, np.ndarray], n_sockets: int
                 ) -> tuple[dict[int, np.ndarray], dict[tuple[int, int], np.ndarray], dict[int, int]]:
    """Request -> reply and source -> sink times from the ledger's causal links, over the
    chains that finished, and per source how many chains were still on their way.

    Every message carries the id of the message it answers or was made from (``cause``:
    a reply's request, a pipeline stage's task; ``zsim.model.pipe``). Following the links
    back to the first message of the chain (its *root*, sent by an application's
    ``[[send]]``), a delivered copy whose chain started at the socket that receives it is a
    round trip (``rtt``: a REQ's, a DEALER's or a ROUTER's request answered, through any
    broker), and one whose chain started elsewhere and ends there (the message caused
    nothing further) is an end-to-end time (``e2e``: a ventilator's task -> the sink's
    result; not the task's arrival at a worker on the way), both ``delivery time - root's
    send time``.

    A socket where messages of a source's chains cause further messages (a worker, a
    broker, a REP) is a *hop* of that source's chains, never their end: a copy delivered
    there that caused nothing yet is a request or task still being worked on when the run
    ended, not an end-to-end time of one message. Such chains, and those with a copy still
    queued at the end, are *in flight*: counted per source (the socket that sent the root),
    unless a copy of the chain was dropped, discarded or lost (a loss, in the receivers'
    table) or the chain finished by another copy (a fan-out).

    Returns ({receiving socket: round-trip times}, {(root socket, receiving socket):
    end-to-end times}, each in delivery order, {root socket: chains in flight at the end}
    for the sources with any chain)."""
    cause = table.get("cause")
    if cause is None or not len(cause) or not (cause >= 0).any():
        return {}, {}, {}
    ids, first = np.unique(table["msg_id"], return_index=True)
    t0, origin = table["t0"][first], table["origin"][first]
    parent = np.searchsorted(ids, cause[first])
    parent = np.where((cause[first] >= 0) & (parent < len(ids)), parent, np.arange(len(ids)))
    parent = np.where(ids[np.minimum(parent, len(ids) - 1)] == cause[first], parent, np.arange(len(ids)))
    root = parent
    while True:  # pointer jumping: chains of any length in log(length) passes
        nxt = root[root]
        if np.array_equal(nxt, root):
            break
        root = nxt
    state, socket = table["state"], table["socket"]
    at_all = np.searchsorted(ids, table["msg_id"])  # every copy's message, as an index into ids
    source_all = origin[root[at_all]]  # the socket that sent the copy's chain's root
    causing = np.isin(ids, np.unique(cause[cause >= 0]))  # per message: it caused another
    delivered_all = state == DELIVERED
    # hops: (source, socket) where a delivered copy of the source's chains caused another
    hop_rows = delivered_all & causing[at_all]
    hop_keys = np.unique(source_all[hop_rows].astype(np.int64) * (n_sockets + 1) + socket[hop_rows])

    def at_hop(source: np.ndarray, sink: np.ndarray) -> np.ndarray:
        return np.isin(source.astype(np.int64) * (n_sockets + 1) + sink, hop_keys)

    delivered = delivered_all & (cause >= 0)
    rtt: dict[int, np.ndarray] = {}
    e2e: dict[tuple[int, int], np.ndarray] = {}
    if delivered.any():
        at = at_all[delivered]
        roots = root[at]
        caused = roots != at
        elapsed = (table["time"][delivered] - t0[roots])[caused]
        source, sink = origin[roots][caused], socket[delivered][caused]
        back = source == sink
        # a hop on the way (the message caused another: a task at its worker, a reply at a
        # broker) is no end, nor is a copy at a hop that caused nothing yet (still being
        # worked on when the run ended): e2e only where chains end
        ends = ~causing[at][caused] & ~at_hop(source, sink)
        for index in np.unique(sink[back]):
            rtt[int(index)] = elapsed[back & (sink == index)]
        onward = ~back & ends
        pairs = np.unique(np.stack([source[onward], sink[onward]]), axis=1) if onward.any() else np.zeros((2, 0), dtype=np.int64)
        for src, dst in pairs.T:
            if 0 <= src < n_sockets and 0 <= dst < n_sockets:
                e2e[(int(src), int(dst))] = elapsed[onward & (source == src) & (sink == dst)]
    # per chain (its root): finished (a delivered copy back at its source or at an end),
    # lost (a copy dropped, discarded or lost, none finished), or in flight (a copy queued
    # at the end, or delivered at a hop and caused nothing yet)
    chain = root[at_all]
    stopped = delivered_all & ~causing[at_all]
    finished = stopped & ((source_all == socket) | ~at_hop(source_all, socket))
    waiting = (stopped & ~finished) | (state == QUEUED)
    lossy = np.isin(state, (DROPPED, DISCARDED, LOST))
    done = np.zeros(len(ids), dtype=bool)
    done[chain[finished]] = True
    lost = np.zeros(len(ids), dtype=bool)
    lost[chain[lossy]] = True
    pending = np.zeros(len(ids), dtype=bool)
    pending[chain[waiting]] = True
    in_flight_roots = pending & ~done & ~lost
    sources = np.unique(source_all[hop_rows])
    counts = np.bincount(origin[in_flight_roots], minlength=n_sockets) if in_flight_roots.any() else np.zeros(n_sockets, np.int64)
    in_flight = {int(src): int(counts[src]) for src in sources if 0 <= src < n_sockets}
    return rtt, e2e, in_flight


def summarise(model: Model, wall_s: float) -> RunResult:
    world, ledger, scenario = model.world, model.ledger, model.scenario
    now = model.env.now
    copies = sum(sock.copies for sock in world.sockets)
    table = ledger.table()
    by_state = ledger.check_table(table, copies, world.next_message_id)
    state, rule = table["state"], table["rule"]
    delivered_mask = state == DELIVERED
    latency = table["time"][delivered_mask] - table["t0"][delivered_mask]

    def by_rule(code: int) -> dict[str, int]:
        mask = state == code
        if not mask.any():
            return {}
        values, counts = np.unique(rule[mask], return_counts=True)
        names = WHERE if code == 5 else RULES
        return {names.get(int(v), str(int(v))): int(c) for v, c in zip(values, counts, strict=True)}

    pipe_names = [info.name for info in world.pipe_info]
    meant_for = _destinations(world, table)  # one pass over the records, read by both below
    inbound = _inbound(world, table, pipe_names, meant_for)
    # latencies grouped by receiving socket in one sort, not one scan per socket (within
    # a socket in delivery order: the ledger records a delivery when it happens)
    delivered_at = table["socket"][delivered_mask]
    order = _stable_order(delivered_at, len(world.sockets))
    bounds = np.searchsorted(delivered_at[order], np.arange(len(world.sockets) + 1))
    sorted_latency = latency[order]
    settling = _settling(world, table, meant_for, order, bounds, sorted_latency)
    lost_at = np.bincount(table["socket"][(state == 4) & (table["socket"] >= 0)], minlength=len(world.sockets))
    # the percentiles of every socket's latency, and of its steady state after MSER-5's
    # warm-up, in two calls (``percentiles_many``: all samples of one size at once)
    per_socket = [sorted_latency[bounds[i]:bounds[i + 1]] for i in range(len(world.sockets))]
    latency_stats = percentiles_many(per_socket)
    steady_from = {i: found["latency"]["warmup_copies"] for i, found in settling.items() if "latency" in found}
    steady_stats = dict(zip(steady_from, percentiles_many([per_socket[i][start:] for i, start in steady_from.items()]),
                            strict=True))
    rtt, e2e, in_flight = causal_times(table, len(world.sockets))
    socket_name = [sock.name for sock in world.sockets]
    # a send still blocked when the run ends was blocked until now
    still_blocked: dict[int, float] = {}
    for thread in world.app_threads:
        waited = thread.blocked_send_s()
        if waited > 0 and thread.target is not None:
            still_blocked[thread.target.index] = still_blocked.get(thread.target.index, 0.0) + waited
    sockets: dict[str, SocketSummary] = {}
    for sock in world.sockets:
        sock_latency = per_socket[sock.index]
        entry: SocketSummary = {
            "type": sock.type,
            "process": sock.process.name,
            "sent": sock.sent,
            "send_again": sock.send_again,
            "send_unroutable": sock.send_unroutable,
            "received": sock.received,
            "recv_again": sock.recv_again,
            "dropped": sock.dropped,
            "discarded": sock.discarded,
            "lost_on_close": int(lost_at[sock.index]),
            "blocked_s": sock.blocked_s + still_blocked.get(sock.index, 0.0),
            "blocked_count": sock.blocked_count,
        }
        if len(sock_latency):
            entry["latency_s"] = latency_stats[sock.index]
        if sock.index in settling:
            entry["settling"] = settling[sock.index]
            if sock.index in steady_stats:
                # the steady-state estimate: the copies after MSER-5's warm-up
                entry["steady_latency_s"] = steady_stats[sock.index]
        if sock.index in inbound:
            entry["inbound"] = inbound[sock.index]
        if sock.index in rtt:
            entry["rtt_s"] = percentiles(rtt[sock.index])
        from_sources = {socket_name[src]: percentiles(times) for (src, dst), times in e2e.items() if dst == sock.index}
        if from_sources:
            entry["e2e_s"] = from_sources
        if sock.index in in_flight:
            # the chains it started (requests, tasks) still on their way when the run ended:
            # not in rtt_s or e2e_s, which count finished ones (a dict: no counter of the ledger)
            entry["chains_at_end"] = {"in_flight": in_flight[sock.index]}
        sockets[sock.name] = entry

    pipe_drops = _pipe_drops(table)
    destinations = world.pipe_destinations()
    pipes = []
    for info in world.pipe_info:
        pipe = info.pipe
        p50, p99 = pipe.level_percentiles(now, (0.5, 0.99))
        pipes.append(
            {
                "name": info.name,
                "from": info.frm,
                "to": info.to,
                "kind": info.kind,
                "hwm": pipe.hwm,
                "lwm": pipe.lwm,
                "written": pipe.written,
                "read": pipe.read_count,
                "max_depth": pipe.max_depth,
                "mean_depth": pipe.mean_depth(now),
                # the level it held for half and for 99 % of the time (time-weighted), and its
                # payload in bytes at most and on average: what sizing a buffer needs
                "p50_depth": p50,
                "p99_depth": p99,
                "max_bytes": pipe.max_bytes,
                "mean_bytes": pipe.mean_bytes(now),
                "depth_at_end": len(pipe.queue),
                "dropped": pipe.dropped,
                "dropped_by_rule": pipe_drops.get(pipe.index, {}),
                "destination": world.sockets[destinations[pipe.index]].name if destinations[pipe.index] >= 0 else None,
            }
        )

    links = []
    for link in world.links:
        links.append(
            {
                "name": link.name,
                "transport": link.conn.transport,
                "number": link.number,
                "max_kernel_bytes": {wire.name: wire.occupancy.max_kernel_bytes for wire in (link.c2b, link.b2c)},
                # per direction: kernel buffers and both engines' batches, in messages
                # and bytes (max, time average over the run, at the end)
                "directions": {wire.name: wire.occupancy.report(now) for wire in (link.c2b, link.b2c)},
                "broken": link.broken,
            }
        )

    senders: dict[str, SenderSummary] = {}
    send_specs = {send.name: send for send in scenario.sends}
    for sender in model.senders:
        spec = send_specs.get(sender.name)
        blocked = sender.thread  # a send still blocked at the end counts until now
        blocked_s = sender.blocked_s + (now - blocked.since if blocked.pending is not None else 0.0)
        sender_entry: SenderSummary = {
            "socket": sender.socket.name, "attempts": sender.attempts, "sent": sender.sent, "again": sender.again,
            "unroutable": sender.unroutable,
            **sender_rates(sender.sent, spec.interval.expected() if spec is not None else 0.0, sender.start_s,
                           sender.finished_at if sender.finished_at is not None else now),
            "blocked_s": blocked_s,
        }
        if sender.finished_at is not None:
            sender_entry["finished_at_s"] = sender.finished_at
        if len(sender.rtt):
            sender_entry["rtt_s"] = percentiles(np.frombuffer(sender.rtt, dtype=np.float64))
        if sender.is_request:
            sender_entry["reply_timeouts"] = sender.reply_timeouts
        senders[sender.name] = sender_entry
    receivers: dict[str, ReceiverSummary] = {}
    for r in model.receivers:
        reading: ReceiverSummary = {"socket": r.socket.name, "received": r.received, "paused_s": r.paused_s}
        if r.pause_every is not None:  # a receiver that pauses: when (the first MAX_PAUSE_RECORDS) and how often
            record = np.frombuffer(r.pauses, dtype=np.float64).reshape(-1, 2)
            reading["pause_count"] = r.pause_count
            reading["pauses"] = [[float(start), float(end)] for start, end in record]
        receivers[r.name] = reading
    proxies: dict[str, ProxySummary] = {}
    for p in model.proxies:
        proxies[p.name] = {"frontend": p.frontend.name, "backend": p.backend.name, "forwarded": p.forwarded}
        if p.failed is not None:  # zmq_proxy returned -1: a send in it failed
            proxies[p.name]["failed"] = p.failed
            proxies[p.name]["failed_at_s"] = p.failed_at
    # with a machine (``[machine] cores``), the CPU each process's threads used: the same
    # number the real harness reports (``time.process_time`` from t0), for comparison
    # (``io_cpu_s``: of which the context's I/O threads, as the harness reads libzmq's)
    process_cpu: dict[str, float] | None = None
    io_cpu: dict[str, float] = {}
    if model.machines:
        process_cpu = {}
        for thread in (thread for machine in model.machines.values() for thread in machine.threads):
            process_cpu[thread.process] = process_cpu.get(thread.process, 0.0) + thread.cpu_s
            if thread.kind == "io":
                io_cpu[thread.process] = io_cpu.get(thread.process, 0.0) + thread.cpu_s
    processes: dict[str, ProcessSummary] = {}
    for name, process in model.processes.items():
        processes[name] = {
            "exit_started_s": process.exit_started_at,
            "exit_completed_s": process.exit_completed_at,
            "term_blocked": process.term_blocked,
            "crashed_s": process.crashed_at,
            "cpu_s": None if process_cpu is None else process_cpu.get(name, 0.0),
            "io_cpu_s": None if process_cpu is None else io_cpu.get(name, 0.0),
        }

    sent_total = world.n_sent
    ledger_entry: LedgerSummary = {
        "sent": sent_total,
        "copies": copies,
        "delivered": by_state["delivered"],
        "forwarded": by_state["forwarded"],
        "dropped": by_state["dropped"],
        "discarded": by_state["discarded"],
        "lost_on_close": by_state["lost_on_close"],
        "queued_at_end": by_state["queued_at_end"],
        "dropped_by_rule": by_rule(2),
        "discarded_by_rule": by_rule(3),
        "lost_by_rule": by_rule(4),
        "queued_by_place": by_rule(5),
    }
    summary: RunSummary = {
        "ok": True,
        "scenario": scenario.name,
        "scenario_digest": scenario.digest,
        "source": scenario.source,
        "seed": model.seed,
        "profile": model.profile.name,
        "sim_time_s": now,
        "wall_s": wall_s,
        "ledger": ledger_entry,
        "latency_s": percentiles(latency),
        "sockets": sockets,
        "pipes": pipes,
        "links": links,
        "senders": senders,
        "receivers": receivers,
        "proxies": proxies,
        "processes": processes,
        "versions": versions(),
    }
    if getattr(scenario, "templates", None):
        summary["templates"] = template_members(scenario)
    if model.machine is not None:
        summary["machine"] = model.machine.report()
    if scenario.hosts:
        summary["hosts"] = host_reports(model)
    if world.network is not None:
        summary["network"] = world.network.report(now)
        offer_to_links(summary["network"], table, world.pipe_info)
        if scenario.faults:
            summary["faults"] = world.network.report_faults(now)
    streams: Any = world.stream
    if hasattr(streams, "drawn"):  # zsim.build.Streams (a test may give a bare function)
        count = streams.drawn()
        summary["randomness"] = {"streams": streams.made, "drawn": count,
                                 "seed_independent": count == 0 and not getattr(scenario, "apps", ())}
    from .checks import run_warnings, static_warnings

    summary["warnings"] = static_warnings(scenario) + run_warnings(scenario, summary)
    depth: dict[str, np.ndarray] = {}
    for info in world.pipe_info:
        trace = info.pipe.trace
        if trace:
            depth[info.name] = np.asarray(trace, dtype=np.float64).reshape(-1, 2)
    return RunResult(
        summary=summary,
        messages=table,
        depth=depth,
        socket_names=[s.name for s in world.sockets],
        pipe_names=[p.name for p in world.pipe_info],
        scenario=scenario,
        traced=bool(world.trace_depth),
        refused={sender.name: np.frombuffer(sender.refused_at, dtype=np.float64).copy() for sender in model.senders
                 if len(sender.refused_at)},
    )


def host_reports(model: Model) -> dict[str, dict[str, Any]]:
    """``summary["hosts"]``: per host ("default" for processes that name none), the
    processes it runs, its cores, its profile's name and, when it has cores, its machine's
    report."""
    from .build import host_cores

    by_host = model.world.host_params
    cores = host_cores(model.scenario, by_host)
    reports: dict[str, dict[str, Any]] = {}
    names = [host.name for host in model.scenario.hosts]
    if "" in cores:
        names.insert(0, "")
    for host in names:
        machine = model.machines.get(host)
        reports[host or "default"] = {
            "processes": [proc.name for proc in model.scenario.processes if proc.host == host],
            "cores": cores.get(host, 0),
            "profile": by_host[host].profile_name,  # the machine it is (its [[host]]'s profile)
            "machine": machine.report() if machine is not None else None,
        }
    return reports


def messages_frame(result: RunResult) -> Any:
    """``RunResult.messages_frame()``."""
    pd = _pandas()
    msgs = result.messages
    sockets = np.asarray(result.socket_names + [""], dtype=object)
    pipes = np.asarray(result.pipe_names + [""], dtype=object)
    state_names = np.asarray(STATES, dtype=object)
    if not msgs:
        msgs = {key: np.zeros(0, dtype=np.int64) for key in ("msg_id", "state", "socket", "pipe", "rule", "size", "origin", "cause")}
        msgs.update({"time": np.zeros(0), "t0": np.zeros(0)})
    return pd.DataFrame(
        {
            "msg_id": msgs["msg_id"],
            "origin": sockets[np.where(msgs["origin"] >= 0, msgs["origin"], len(sockets) - 1)],
            "state": pd.Categorical(state_names[msgs["state"].astype(int)], categories=list(STATES)),
            "socket": sockets[np.where(msgs["socket"] >= 0, msgs["socket"], len(sockets) - 1)],
            "pipe_name": pipes[np.where(msgs["pipe"] >= 0, msgs["pipe"], len(pipes) - 1)],
            "rule": [(WHERE if s == 5 else RULES).get(int(r), str(int(r))) for s, r in zip(msgs["state"], msgs["rule"], strict=True)],
            "sent_s": msgs["t0"],
            "end_s": msgs["time"],
            "latency_s": np.where(msgs["state"] == DELIVERED, msgs["time"] - msgs["t0"], np.nan),
            "size_bytes": msgs["size"],
            "cause_id": msgs["cause"] if "cause" in msgs else np.full(len(msgs["msg_id"]), -1, dtype=np.int64),
        }
    )


def depth_frame(result: RunResult) -> Any:
    """Every recorded depth change: ``pipe_name``, ``time_s``, ``depth``."""
    pd = _pandas()
    rows = []
    for name, trace in result.depth.items():
        if len(trace):
            rows.append(pd.DataFrame({"pipe_name": name, "time_s": trace[:, 0], "depth": trace[:, 1].astype(np.int64)}))
    empty = {"pipe_name": pd.Series([], dtype=object), "time_s": pd.Series([], dtype=float), "depth": pd.Series([], dtype=np.int64)}
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(empty)


def write_parquet(result: RunResult, out_dir: str | Path) -> list[Path]:
    """``messages.parquet`` (one row per message copy: ``messages_frame`` with the seed and
    the scenario's name), ``depth.parquet`` (depth changes: ``depth_frame``, with the seed;
    empty unless the run was traced), ``summary.json``. Needs pandas and pyarrow
    (``pip install zsim[results]``)."""
    _pandas()
    out = prepare_output_dir(out_dir, "--out")
    frame = messages_frame(result)
    frame["seed"] = result.summary["seed"]
    frame["scenario"] = result.summary["scenario"]
    depth_rows = depth_frame(result)
    depth_rows["seed"] = result.summary["seed"]
    # The three belong together: they are replaced as a set (``replace_set``: written into
    # a sibling folder that is swapped in), so a run that fails or is killed while writing
    # leaves the previous set of --out as it was, and the next run removes its leftovers.
    return replace_set(out, {
        "messages.parquet": lambda handle: frame.to_parquet(handle, index=False),
        "depth.parquet": lambda handle: depth_rows.to_parquet(handle, index=False),
        "summary.json": result.to_json(),
    }, "--out")
