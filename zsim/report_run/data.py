"""The numbers behind a run report's figures, computed from the run and nothing else.

Each function reads a ``RunResult`` (its summary and its per-copy ledger table), the
scenario, and for depth the levels recorded over time (``zsim.report_run.series``), and
returns plain arrays with the names of the entities they describe; ``zsim.plotting`` only
draws them. Long runs are summarised per time bin (drops counted, latency's lowest,
median and highest per bin), never point by point, so a figure's size does not grow with
the run.

The topology (``topology``) is laid out in columns by data-flow order: the processes that
send (a ``[[send]]``, else the ones that only connect) in the first column, then each
process one column right of the nearest process it exchanges messages with. Arrows follow
the data: a connection whose sockets both send and receive (REQ/REP, DEALER/ROUTER,
PAIR) has a head at both ends.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ledger import DELIVERED, DISCARDED, DROPPED, FORWARDED, QUEUED, RULES
from ..model.occupancy import FIELDS as OCCUPANCY_FIELDS
from ..socket_types import TYPES
from ..spec import Scenario
from ..units import human_time
from .series import Levels, RunSeries

# -- drops over time ------------------------------------------------------------------------


@dataclass
class DropLine:
    label: str  # "<pipe>: <rule>" or "<socket> (no pipe): <rule>"
    pipe: str | None
    rule: str
    counts: np.ndarray  # copies dropped in each bin
    total: int
    first_s: float
    last_s: float


@dataclass
class Drops:
    edges: np.ndarray  # bin edges, seconds (len(bins) + 1)
    lines: list[DropLine]

    @property
    def bin_s(self) -> float:
        return float(self.edges[1] - self.edges[0]) if len(self.edges) > 1 else 0.0


def _bins(end_s: float, bins: int) -> np.ndarray:
    end = end_s if end_s > 0 else 1.0
    return np.linspace(0.0, end, bins + 1)


def drops_over_time(result: Any, end_s: float, bins: int = 200) -> Drops:
    """Copies dropped per time bin (when the rule refused them), one line per pipe and
    rule, largest first; a drop with no pipe (no peer, not connected) is named by the
    socket that dropped it."""
    table = result.messages
    edges = _bins(end_s, bins)
    state = table["state"]
    dropped = state == DROPPED
    if not dropped.any():
        return Drops(edges, [])
    pipe = table["pipe"][dropped].astype(np.int64)
    sock = table["socket"][dropped].astype(np.int64)
    rule = table["rule"][dropped].astype(np.int64)
    when = table["time"][dropped]
    # one key per (pipe, rule), or (socket, rule) when there is no pipe
    where = np.where(pipe >= 0, pipe, -2 - sock)
    keys = np.stack([where, rule], axis=1)
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    index = np.clip(np.searchsorted(edges, when, side="right") - 1, 0, bins - 1)
    lines = []
    for k, (w, r) in enumerate(unique.tolist()):
        mine = inverse == k
        counts = np.bincount(index[mine], minlength=bins)
        rule_name = RULES.get(int(r), str(r)) or "dropped"
        if w >= 0:
            pipe_name: str | None = result.pipe_names[w]
            label = f"{pipe_name}: {rule_name}"
        else:
            pipe_name = None
            socket_index = -2 - w
            owner = result.socket_names[socket_index] if 0 <= socket_index < len(result.socket_names) else "?"
            label = f"{owner} (no pipe): {rule_name}"
        times = when[mine]
        lines.append(DropLine(label, pipe_name, rule_name, counts, int(mine.sum()), float(times.min()), float(times.max())))
    lines.sort(key=lambda line: (-line.total, line.label))
    return Drops(edges, lines)


# -- latency against send time ----------------------------------------------------------------


@dataclass
class LatencyPanel:
    receiver: str
    centres: np.ndarray  # bin centres (send time, seconds), every bin
    low: np.ndarray  # per bin: NaN where no copy sent then was delivered (the line breaks there)
    median: np.ndarray
    high: np.ndarray
    delivered: int
    taken: int  # delivered + forwarded (a stage that forwards also takes its copies)
    p50: float | None
    p99: float | None
    max: float | None
    #: per send-time bin with copies meant for the receiver: the share it lost (dropped,
    #: discarded, lost on close) and the share still queued when the run ended (in flight
    #: or backlog: not a loss the design made, the horizon cut them)
    loss_centres: np.ndarray = field(default_factory=lambda: np.zeros(0))
    loss_share: np.ndarray = field(default_factory=lambda: np.zeros(0))
    queued_share: np.ndarray = field(default_factory=lambda: np.zeros(0))
    meant: int = 0  # copies meant for it
    lost: int = 0  # of which dropped, discarded or lost on close
    queued: int = 0  # of which still queued at the end
    flags: list[str] = field(default_factory=list)  # warning codes about this receiver


#: ``zsim.model.routing.RULE_FILTERED``: a SUB's own filter threw the copy away (never wanted)
_RULE_FILTERED = 6


def meant_for(result: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per ledger record: the socket index the copy was meant for and whether it counts for
    it, as the summary's receivers table counts (``zsim.results._destinations``): the
    socket that read or discarded it, else the socket at the end of its pipe; copies a
    SUB's own filter discarded were never wanted."""
    table = result.messages
    state, rule = table["state"], table["rule"]
    socket, pipe = table["socket"].astype(np.int64), table["pipe"].astype(np.int64)
    index = {name: i for i, name in enumerate(result.socket_names)}
    destination = np.asarray([index.get(p.get("destination") or "", -1) for p in result.summary["pipes"]] + [-1], dtype=np.int64)
    by_pipe = destination[np.where((pipe >= 0) & (pipe < len(destination) - 1), pipe, len(destination) - 1)]
    at_reader = (state == DELIVERED) | (state == FORWARDED) | (state == DISCARDED)
    dest = np.where(at_reader, socket, by_pipe)
    wanted = (dest >= 0) & ~((state == DISCARDED) & (rule == _RULE_FILTERED))
    return dest, wanted


def latency_by_receiver(result: Any, end_s: float, bins: int = 200, loss_bins: int = 50,
                        members: dict[str, str] | None = None) -> list[LatencyPanel]:
    """Per receiving socket: latency (delivery - send time) of its deliveries against their
    send time, as the lowest, median and highest per send-time bin (``bins`` over the
    run), and the share of the copies sent in each of ``loss_bins`` wider bins that it lost
    or still held at the end (a share of a few copies jumps between 0 and 100 %). Sockets
    that only forward (a proxy's frontend) and lost nothing have no panel.

    ``members`` (socket -> template name): the members of a template share one panel, their
    copies pooled, so the band runs from the fastest member's to the slowest's. Panels come
    worst first: the largest share lost, then the highest p99."""
    table = result.messages
    state = table["state"]
    edges = _bins(end_s, bins)
    delivered = state == DELIVERED
    # sockets -> panels: a template's members share their template's
    names: list[str] = []
    group_of: dict[str, int] = {}
    size: dict[int, int] = {}
    for name in result.socket_names:
        key = (members or {}).get(name, name)
        if key not in group_of:
            group_of[key] = len(names)
            names.append(key)
        size[group_of[key]] = size.get(group_of[key], 0) + 1
    gid = np.asarray([group_of[(members or {}).get(name, name)] for name in result.socket_names] + [-1], dtype=np.int64)
    sock = gid[table["socket"][delivered].astype(np.int64)]
    t0 = table["t0"][delivered]
    latency = table["time"][delivered] - t0
    index = np.clip(np.searchsorted(edges, t0, side="right") - 1, 0, bins - 1)
    order = np.lexsort((latency, index, sock))
    sock, index, latency = sock[order], index[order], latency[order]
    dest, wanted = meant_for(result)
    dest = gid[dest]  # -1 stays -1 (the last entry)
    n = len(names)
    taken = (state == DELIVERED) | (state == FORWARDED)
    loss_edges = _bins(end_s, loss_bins)
    sent_bin = np.clip(np.searchsorted(loss_edges, table["t0"], side="right") - 1, 0, loss_bins - 1)

    def per_bin(mask: np.ndarray) -> np.ndarray:
        return np.bincount(dest[mask] * loss_bins + sent_bin[mask], minlength=n * loss_bins).reshape(n, loss_bins)

    queued = wanted & (state == QUEUED)
    missed = wanted & ~taken & ~queued
    meant_counts, missed_counts, queued_counts = per_bin(wanted), per_bin(missed), per_bin(queued)
    centres_all = (edges[:-1] + edges[1:]) / 2
    loss_centres = (loss_edges[:-1] + loss_edges[1:]) / 2
    flags = warning_flags(result.summary)
    group_flags: list[set[str]] = [set() for _ in range(n)]
    for i, sock_name in enumerate(result.socket_names):
        group_flags[gid[i]].update(flags.get(sock_name, []))
    panels = []
    for s in range(n):
        lo, hi = np.searchsorted(sock, [s, s + 1])
        meant, lost, left = int(meant_counts[s].sum()), int(missed_counts[s].sum()), int(queued_counts[s].sum())
        if hi == lo and lost == 0:  # only forwarded (a proxy's frontend), or only in flight at the end
            continue
        mine_index, mine_latency = index[lo:hi], latency[lo:hi]
        starts = np.concatenate(([0], np.flatnonzero(mine_index[1:] != mine_index[:-1]) + 1)) if hi > lo else np.zeros(0, np.int64)
        ends = np.concatenate((starts[1:], [len(mine_index)])).astype(np.int64) if hi > lo else np.zeros(0, np.int64)
        some = meant_counts[s] > 0
        name = names[s] if size[s] == 1 else f"{names[s]} ({size[s]} members)"
        low, median, high = (np.full(bins, np.nan) for _ in range(3))
        where = mine_index[starts]
        low[where] = mine_latency[starts]
        median[where] = mine_latency[(starts + ends - 1) // 2]
        high[where] = mine_latency[ends - 1]
        panels.append(LatencyPanel(
            receiver=name,
            centres=centres_all,
            low=low,
            median=median,
            high=high,
            delivered=int(hi - lo),
            taken=int(meant - lost - left),
            p50=float(np.percentile(mine_latency, 50)) if hi > lo else None,
            p99=float(np.percentile(mine_latency, 99)) if hi > lo else None,
            max=float(mine_latency.max()) if hi > lo else None,
            loss_centres=loss_centres[some],
            loss_share=missed_counts[s][some] / meant_counts[s][some],
            queued_share=queued_counts[s][some] / meant_counts[s][some],
            meant=meant,
            lost=lost,
            queued=left,
            flags=sorted(group_flags[s]) if size[s] > 1 else flags.get(names[s], []),
        ))
    panels.sort(key=lambda p: (-(p.lost / p.meant if p.meant else 0.0), -(p.p99 if p.p99 is not None else -1.0)))
    return panels


# -- warnings by entity ----------------------------------------------------------------------


def warning_flags(summary: dict[str, Any]) -> dict[str, list[str]]:
    """Warning codes per socket or sender they are about (``socket[x]``, ``recv[x]`` ->
    its socket, ``send[x]`` -> the sender's socket)."""
    recv_socket: dict[str, str] = {}
    flags: dict[str, list[str]] = {}
    senders = summary.get("senders") or {}
    for warning in summary.get("warnings") or ():
        path = str(warning.get("path", ""))
        head = path.split(".", 1)[0]
        name = None
        if head.startswith("socket[") and head.endswith("]"):
            name = head[len("socket["):-1]
        elif head.startswith("recv[") and head.endswith("]"):
            name = recv_socket.get(head, _recv_socket(summary, head[len("recv["):-1]))
        elif head.startswith("send[") and head.endswith("]"):
            sender = senders.get(head[len("send["):-1]) or senders.get("send." + head[len("send["):-1])
            name = sender["socket"] if sender else None
        if name is not None:
            codes = flags.setdefault(name, [])
            if warning["code"] not in codes:
                codes.append(str(warning["code"]))
    return flags


def _recv_socket(summary: dict[str, Any], short: str) -> str:
    receivers = summary.get("receivers") or {}
    entry = receivers.get(short) or receivers.get("recv." + short)
    return str(entry["socket"]) if entry else short


# -- depth over time per link direction ---------------------------------------------------------


@dataclass
class DepthLine:
    label: str
    place: str  # "pipe", "send pipe", "recv pipe", "out batch", "kernel", "in engine"
    levels: Levels
    channel: int
    hwm: int | None = None  # a pipe's HWM (0: none)

    @property
    def peak(self) -> int:
        return int(self.levels.hi[:, self.channel].max()) if len(self.levels.hi) else 0


@dataclass
class DepthPanel:
    direction: str  # "writer->reader"
    transport: str
    lines: list[DepthLine]
    peak_total: int  # the sum of the places' peaks (an upper bound of the backlog at once)
    kernel_peak_bytes: int
    dropped: int
    copies: int = 0  # message copies whose fate the ledger recorded on its pipes
    flags: list[str] = field(default_factory=list)
    #: when the reader paused ([start, end] of its receivers' recorded pauses), drawn shaded
    pauses: list[tuple[float, float]] = field(default_factory=list)
    #: how many pauses its receivers took in all (more than ``pauses`` when the record ended)
    pause_count: int = 0


def reader_pauses(summary: Mapping[str, Any], socket: str) -> tuple[list[tuple[float, float]], int]:
    """The recorded pauses of the receivers reading socket ``socket``, in time order (each
    receiver records its first ``zsim.model.workload.MAX_PAUSE_RECORDS``), and how many
    pauses they took in all."""
    readers = [receiver for receiver in (summary.get("receivers") or {}).values() if receiver.get("socket") == socket]
    found = sorted((float(a), float(b)) for receiver in readers for a, b in receiver.get("pauses", ()))
    return found, sum(int(receiver.get("pause_count", 0)) for receiver in readers)


def depth_panels(result: Any, series: RunSeries) -> list[DepthPanel]:
    """One panel per direction of data (writer -> reader) that held any message copy: its
    pipes' depths and, over tcp/ipc, the sending engine's batch, the kernel and the
    receiving engine, in messages; the ones with the largest backlog first. A direction
    that carried only subscriptions (no copy of a message went its way) has no panel."""
    summary = result.summary
    pipes = summary["pipes"]
    pipe_column = result.messages["pipe"].astype(np.int64)
    copies = np.bincount(pipe_column[pipe_column >= 0], minlength=len(pipes))
    flags = warning_flags(summary)
    by_direction: dict[str, DepthPanel] = {}
    order: list[str] = []

    def panel(direction: str, transport: str) -> DepthPanel:
        if direction not in by_direction:
            by_direction[direction] = DepthPanel(direction, transport, [], 0, 0, 0)
            order.append(direction)
        return by_direction[direction]

    seen: dict[str, int] = {}
    for index, entry in enumerate(pipes):
        levels = series.pipes.get(index)
        if levels is None:
            continue
        direction = f"{entry['from']}->{entry['to']}"
        kind = entry["kind"]
        place = {"inproc": "pipe", "send": "send pipe", "recv": "recv pipe"}.get(kind, kind)
        transport = "inproc" if kind == "inproc" else _transport_of(entry["name"])
        count = seen[entry["name"]] = seen.get(entry["name"], 0) + 1
        owner = entry["from"] if kind == "send" else entry["to"]
        label = {"pipe": f"pipe (HWM {_hwm(entry['hwm'])})",
                 "send pipe": f"{owner}'s send pipe (SNDHWM {_hwm(entry['hwm'])})",
                 "recv pipe": f"{owner}'s recv pipe (RCVHWM {_hwm(entry['hwm'])})"}.get(place, place)
        if count > 1:
            label += f" #{count}"  # the same pipe again after a reconnect
        target = panel(direction, transport)
        target.lines.append(DepthLine(label, place, levels, 0, entry["hwm"]))
        target.dropped += int(entry.get("dropped", 0))
        target.copies += int(copies[index]) if index < len(copies) else 0
    links = summary.get("links") or []
    for link_index, name, levels in series.directions:
        link = links[link_index] if link_index < len(links) else {}
        transport = str(link.get("transport", "tcp"))
        number = int(link.get("number", 1))
        suffix = f" #{number}" if number > 1 else ""
        writer, _, reader = name.partition("->")
        target = panel(name, transport)
        target.lines.append(DepthLine(f"{writer}'s engine out batch{suffix}", "out batch", levels,
                                      OCCUPANCY_FIELDS.index("sender_engine_messages")))
        target.lines.append(DepthLine(f"kernel buffers{suffix}", "kernel", levels, OCCUPANCY_FIELDS.index("kernel_messages")))
        target.lines.append(DepthLine(f"{reader}'s engine, refused by its pipe{suffix}", "in engine", levels,
                                      OCCUPANCY_FIELDS.index("receiver_engine_messages")))
        target.kernel_peak_bytes = max(target.kernel_peak_bytes,
                                       int(levels.hi[:, OCCUPANCY_FIELDS.index("kernel_bytes")].max()) if len(levels.hi) else 0)
    place_order = {"pipe": 0, "send pipe": 0, "out batch": 1, "kernel": 2, "in engine": 3, "recv pipe": 4}
    panels = []
    for direction in order:
        target = by_direction[direction]
        target.lines.sort(key=lambda line: place_order.get(line.place, 9))
        target.peak_total = sum(line.peak for line in target.lines)
        writer, _, reader = direction.partition("->")
        target.flags = sorted(set(flags.get(reader, [])))
        target.pauses, target.pause_count = reader_pauses(summary, reader)
        if target.peak_total > 0 and target.copies > 0:
            panels.append(target)
    panels.sort(key=lambda p: (-p.peak_total, p.direction))
    return panels


@dataclass
class NetworkMap:
    """The deployment as a graph, for a drawing with its links' load: ``nodes`` are
    ``(name, kind)`` with kind ``"host"`` or ``"switch"``, ``edges`` ``(a, b, label, busy)``,
    ``busy`` the larger of the link's two directions' busy shares of the run (``utilisation``:
    a direction that carried one subscription is not 'busy while active')."""

    nodes: list[tuple[str, str]]
    edges: list[tuple[str, str, str, float]]


def network_map(scenario: Scenario, summary: Mapping[str, Any]) -> NetworkMap | None:
    """The hosts, switches and links of a deployment with switches (None without: the
    topology's host boxes and connection labels already show a deployment of direct links)."""
    if not scenario.switches:
        return None
    network = summary.get("network") or {}
    nodes = [(host.name, "host") for host in scenario.hosts] + [(switch.name, "switch") for switch in scenario.switches]
    edges = []
    for link in scenario.links:
        ways = network.get(link.name) or {}
        busy = max((float(way.get("utilisation", 0.0)) for way in ways.values()), default=0.0)
        drops = sum(int(way.get("queue_drops", 0)) + int(way.get("loss_drops", 0)) for way in ways.values())
        label = f"{link.name}\n{_bandwidth(link.bandwidth_bps)}, busy {100 * busy:.0f} % of the run"
        if drops:
            label += f", {drops:,} dropped"
        edges.append((link.hosts[0], link.hosts[1], label, busy))
    return NetworkMap(nodes, edges)


@dataclass
class NetworkPanel:
    """One direction of a [[link]] over time: per bucket starting at ``times[k]``, the share
    of it the link spent serializing frames, the most bytes its queue held, and the packets
    dropped at its queue or lost on the way."""

    link: str
    direction: str  # "a->b"
    bandwidth_bps: float
    latency_s: float
    times: np.ndarray
    busy: np.ndarray  # 0..1
    queue_bytes: np.ndarray
    drops: np.ndarray
    queue_limit: int
    peak_busy: float = 0.0

    @property
    def dropped(self) -> int:
        return int(self.drops.sum())


def network_panels(result: Any, series: RunSeries) -> list[NetworkPanel]:
    """One panel per direction of a [[link]] that carried anything, busiest first: its busy
    share per bucket (the serialization done in the bucket over its length), its largest
    queue and its drops."""
    network = result.summary.get("network") or {}
    end_s = float(result.summary["sim_time_s"])
    panels = []
    for link, direction, levels in series.network:
        carried = (network.get(link) or {}).get(direction)
        times = levels.times
        if not len(times) or carried is None:
            continue
        # the serialization done by each bucket's end, exactly: the state after the last train
        # before it (its accepted serialization, and when its queue runs empty) says how much is done
        ends = np.append(times[1:], max(end_s, float(times[-1])))
        accepted = levels.last[:, 1].astype(np.float64) / 1e9
        until = levels.last[:, 2].astype(np.float64) / 1e9
        done = accepted - np.maximum(0.0, until - ends)
        busy_s = np.diff(np.concatenate(([0.0], done)))
        if busy_s.sum() <= 0:
            continue
        width = np.diff(np.concatenate((times, ends[-1:])))
        width[width <= 0] = series.width_s
        busy = np.clip(busy_s / width, 0.0, 1.0)  # exact: the clip only guards against rounding
        dropped = np.diff(np.concatenate(([0], levels.last[:, 3])))
        # the queue drains between trains; a bucket's highest level carries the last train's
        # level in from before it (the series holds levels, not slopes): what was still queued at
        # the bucket's start is (the last frame's departure - the start) x the rate, and a bucket
        # whose highest level is that carried value held no more than that and its own last train
        before_until = np.concatenate(([0.0], until[:-1]))
        at_start = np.maximum(0.0, before_until - times) * carried["bandwidth_bps"] / 8.0
        carried_in = np.concatenate(([0], levels.last[:-1, 0]))
        stale = levels.hi[:, 0] == carried_in
        queue = np.where(stale, np.maximum(at_start, levels.last[:, 0]), levels.hi[:, 0]).astype(np.int64)
        panels.append(NetworkPanel(link, direction, carried["bandwidth_bps"], carried["latency_s"], times, busy,
                                   queue, dropped, int(carried["queue_limit_bytes"]), float(busy.max())))
    panels.sort(key=lambda panel: (-panel.peak_busy, -panel.dropped))
    # a direction that only carried the other way's ACK-less trickle (subscriptions, replies of a few
    # bytes) says nothing: keep those busy at least 1 % of some bucket, or that dropped
    shown = [panel for panel in panels if panel.peak_busy >= 0.01 or panel.dropped]
    return shown or panels


def _transport_of(pipe_name: str) -> str:
    for transport in ("tcp", "ipc"):
        if f"({transport} " in pipe_name:
            return transport
    return "inproc"


def _hwm(value: int) -> str:
    return "none" if value <= 0 else f"{value:,}"


# -- topology -----------------------------------------------------------------------------------


@dataclass
class TopoSocket:
    name: str
    type: str
    process: str
    endpoints: list[str]  # "bind tcp :6001", "connect tcp :6001"
    dropped_no_pipe: int = 0  # copies it dropped with no pipe to drop on (no peer yet)
    flags: list[str] = field(default_factory=list)
    # layout (figure units, filled by ``topology``)
    x: float = 0.0
    y: float = 0.0


@dataclass
class TopoEdge:
    a: str  # the connecting socket
    b: str  # the binding socket
    transport: str
    address: str
    a_to_b: bool  # data flows a -> b
    b_to_a: bool
    label: str  # transport and HWMs
    dropped: int  # copies dropped on this connection's pipes (both directions)
    drop_note: str  # "21,754 dropped at xpub->slow (tcp send): hwm"
    drop_rules: str = ""  # "hwm", "hwm, not_subscribed_yet"
    hidden: int = 1  # how many connections this edge stands for (folded rows)


@dataclass
class TopoProcess:
    name: str
    sockets: list[TopoSocket]
    column: int = 0
    x: float = 0.0
    y: float = 0.0  # top
    height: float = 0.0
    folded: int = 0  # a stand-in for this many processes not drawn
    host: str = ""  # the [[host]] it runs on ("" the default host)


@dataclass
class HostBox:
    """A [[host]] drawn around its processes in one column (a host whose processes sit in
    several columns is one box per column, each with its name)."""

    name: str
    label: str  # "host feed: 4 cores"
    x: float
    y: float
    width: float
    height: float


@dataclass
class Topology:
    processes: list[TopoProcess]
    edges: list[TopoEdge]
    columns: int
    width: float
    height: float
    hosts: list[HostBox] = field(default_factory=list)


#: layout units: one socket row, a process box's header, the gap between boxes
ROW, HEADER, GAP, COLUMN = 1.0, 0.8, 0.6, 10.0
#: a host box's name row above its processes, and the gap between two hosts' boxes
HOST_HEADER, HOST_GAP = 0.9, 0.5
#: processes drawn per column; the rest of a column is one box saying how many
MAX_PER_COLUMN = 24
#: sockets drawn per process box; the rest are one row saying how many
MAX_PER_BOX = 24


def topology(scenario: Scenario, result: Any) -> Topology:
    """Processes, sockets and connections of ``scenario``, with the run's drops, laid out in
    columns by data-flow order."""
    summary = result.summary
    flags = warning_flags(summary)
    sockets = {s.name: s for s in scenario.sockets}
    binders: dict[tuple[str, str, str], str] = {}
    for s in scenario.sockets:
        for endpoint in s.bind:
            binders.setdefault(endpoint.key, s.name)
    # connections (connector, binder, endpoint)
    connections: list[tuple[str, str, Any]] = []
    for s in scenario.sockets:
        for endpoint in s.connect:
            binder = binders.get(endpoint.key)
            if binder is not None:
                connections.append((s.name, binder, endpoint))
    # drops per direction (from, to) and per socket without a pipe
    drops_by_pair: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for pipe in summary["pipes"]:
        for rule, count in (pipe.get("dropped_by_rule") or {}).items():
            if count:
                drops_by_pair.setdefault((pipe["from"], pipe["to"]), []).append((f"{pipe['name']}: {rule}", count))
    hwm_by_pair: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for pipe in summary["pipes"]:
        entries = hwm_by_pair.setdefault((pipe["from"], pipe["to"]), [])
        if (pipe["kind"], pipe["hwm"]) not in entries:
            entries.append((pipe["kind"], pipe["hwm"]))
    no_pipe = _no_pipe_drops(result)

    topo_sockets = {}
    for s in scenario.sockets:
        endpoints = [f"bind {_endpoint_text(e)}" for e in s.bind] + [f"connect {_endpoint_text(e)}" for e in s.connect]
        topo_sockets[s.name] = TopoSocket(s.name, s.type, s.process, endpoints, no_pipe.get(s.name, 0), flags.get(s.name, []))
    host_of_process = {p.name: p.host for p in scenario.processes}
    link_between = {frozenset(link.hosts): link for link in scenario.links}
    edges = []
    for a, b, endpoint in connections:
        a_to_b = TYPES[sockets[a].type].send is not None and TYPES[sockets[b].type].receives
        b_to_a = TYPES[sockets[b].type].send is not None and TYPES[sockets[a].type].receives
        notes = drops_by_pair.get((a, b), []) + drops_by_pair.get((b, a), [])
        dropped = sum(count for _, count in notes)
        drop_note = "; ".join(f"{count:,} dropped at {where}" for where, count in sorted(notes, key=lambda item: -item[1]))
        rules = ", ".join(dict.fromkeys(where.rsplit(": ", 1)[-1] for where, _ in sorted(notes, key=lambda item: -item[1])))
        label = _edge_label(endpoint.transport, a, b, a_to_b, b_to_a, hwm_by_pair, sockets)
        ends = (host_of_process[sockets[a].process], host_of_process[sockets[b].process])
        link = link_between.get(frozenset(ends))
        if link is None and scenario.switches and ends[0] != ends[1]:
            # a route through switches: each link it crosses, in order, with the slowest named
            route = _route_text(scenario, ends[0], ends[1])
            if route:
                label += f"\nover {route}"
        if link is not None:
            if link.symmetric:
                label += f"\nover {link.name}: {_bandwidth(link.bandwidth_bps)}, {human_time(link.latency_s)} one way"
            else:  # each direction its own rate and delay (the link's reverse)
                label += f"\nover {link.name}: " + "; ".join(f"{src}->{dst} {_bandwidth(way.bandwidth_bps)}, {human_time(way.latency_s)}"
                                                          for src, dst, way in link.ways())
        edges.append(TopoEdge(a, b, endpoint.transport, _endpoint_text(endpoint), a_to_b, b_to_a, label, dropped, drop_note, rules))

    processes = []
    for p in scenario.processes:
        members = [topo_sockets[s.name] for s in scenario.sockets if s.process == p.name]
        if members:
            processes.append(TopoProcess(p.name, members, host=p.host))
    _columns(scenario, processes, edges)
    if scenario.hosts:  # a host's processes together in each column, in the order of [[host]]
        order = {"": -1} | {host.name: i for i, host in enumerate(scenario.hosts)}
        processes.sort(key=lambda p: (p.column, order[p.host]))
    edges = _fold_sockets(processes, edges)
    processes, edges = _fold_columns(processes, edges)
    width, height = _place(processes, bool(scenario.hosts))
    columns = max((p.column for p in processes), default=0) + 1
    topo = Topology(processes, edges, columns, width, height)
    if scenario.hosts:
        topo.hosts = _host_boxes(processes, scenario)
    return topo


def _bandwidth(bps: float) -> str:
    for unit, factor in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= factor:
            return f"{bps / factor:.3g} {unit}"
    return f"{bps:.3g} bit/s"


def _route_text(scenario: Scenario, a: str, b: str) -> str:
    """``a-tor -> uplink -> ...: 10 Mbit/s at the slowest, 0.3 ms one way``: the links a
    connection from host ``a`` to host ``b`` crosses through switches (``zsim.spec.route``)."""
    from ..spec import RouteError, route

    try:
        hops = route(scenario.links, {switch.name for switch in scenario.switches}, a, b)
    except RouteError:
        return ""
    ways = [link.forward if forward else link.backward for link, forward in hops]
    slowest = min(way.bandwidth_bps for way in ways)
    return (" -> ".join(link.name for link, _ in hops) + f": {_bandwidth(slowest)} at the slowest, "
            f"{human_time(sum(way.latency_s for way in ways))} one way")


def _host_boxes(processes: list[TopoProcess], scenario: Scenario) -> list[HostBox]:
    """One box per run of a host's processes in a column (``_place`` left room for its name)."""
    declared = {host.name: host.cores for host in scenario.hosts}
    boxes: list[HostBox] = []
    run: list[TopoProcess] = []

    def close() -> None:
        if run:
            first, last = run[0], run[-1]
            name = first.host or "default"
            cores = declared.get(first.host)
            label = f"host {name}" + (f": {cores} core{'s' if cores != 1 else ''}" if cores else "")
            top = first.y - HOST_HEADER
            boxes.append(HostBox(name, label, first.x - 0.25, top, BOX_WIDTH + 0.5, last.y + last.height - top + 0.25))
            run.clear()

    for p in processes:
        if run and (p.column != run[-1].column or p.host != run[-1].host):
            close()
        run.append(p)
    close()
    return boxes


def _endpoint_text(endpoint: Any) -> str:
    if endpoint.transport == "tcp":
        return f"tcp :{endpoint.address}"
    return f"{endpoint.transport}://{endpoint.address}"


def _edge_label(transport: str, a: str, b: str, a_to_b: bool, b_to_a: bool, hwms: dict[tuple[str, str], list[tuple[str, int]]],
                sockets: dict[str, Any]) -> str:
    parts = []
    for frm, to, flows in ((a, b, a_to_b), (b, a, b_to_a)):
        if not flows:
            continue
        known = hwms.get((frm, to))
        if transport == "inproc":
            if known:
                hwm = known[0][1]
            else:
                snd, rcv = sockets[frm].options.sndhwm, sockets[to].options.rcvhwm
                hwm = 0 if snd == 0 or rcv == 0 else snd + rcv
            text = f"HWM {_hwm(hwm)}"
        else:
            by_kind = dict(known or [])
            snd = by_kind.get("send", sockets[frm].options.sndhwm)
            rcv = by_kind.get("recv", sockets[to].options.rcvhwm)
            text = f"HWM {_hwm(snd)}+{_hwm(rcv)}"
        parts.append((f"{frm}->{to}", text))
    if len(parts) == 2 and parts[0][1] == parts[1][1]:
        return f"{transport} {parts[0][1]} each way"
    if len(parts) == 2:
        return f"{transport} " + ", ".join(f"{way} {text}" for way, text in parts)
    return f"{transport} {parts[0][1]}" if parts else transport


def _no_pipe_drops(result: Any) -> dict[str, int]:
    table = result.messages
    mask = (table["state"] == DROPPED) & (table["pipe"] < 0) & (table["socket"] >= 0)
    if not mask.any():
        return {}
    counts = np.bincount(table["socket"][mask].astype(np.int64), minlength=len(result.socket_names))
    return {result.socket_names[i]: int(n) for i, n in enumerate(counts.tolist()) if n}


def _columns(scenario: Scenario, processes: list[TopoProcess], edges: list[TopoEdge]) -> None:
    """Column = distance (in connections) from the nearest sending process."""
    names = [p.name for p in processes]
    of_socket = {s.name: p.name for p in processes for s in p.sockets}
    neighbours: dict[str, set[str]] = {name: set() for name in names}
    for edge in edges:
        pa, pb = of_socket[edge.a], of_socket[edge.b]
        if pa != pb:
            neighbours[pa].add(pb)
            neighbours[pb].add(pa)
    senders = {of_socket[send.socket] for send in scenario.sends if send.socket in of_socket}
    if not senders:  # scripted or request-reply only: the processes that only connect
        binds = {p.name for p in processes if any(e.startswith("bind ") for s in p.sockets for e in s.endpoints)}
        senders = {name for name in names if name not in binds} or set(names[:1])
    column: dict[str, int] = {}
    queue: deque[str] = deque()
    for name in names:
        if name in senders:
            column[name] = 0
            queue.append(name)
    while queue:
        name = queue.popleft()
        for other in sorted(neighbours[name], key=names.index):
            if other not in column:
                column[other] = column[name] + 1
                queue.append(other)
    for p in processes:
        p.column = column.get(p.name, 0)
    # within a column: by the mean row of the neighbours in earlier columns (fewer crossings)
    rank = {name: i for i, name in enumerate(names)}
    for _ in range(2):
        for c in range(1, max(column.values(), default=0) + 1):
            members = [p for p in processes if p.column == c]
            for p in members:
                earlier = [rank[n] for n in neighbours[p.name] if column.get(n, 0) < c]
                p.y = sum(earlier) / len(earlier) if earlier else float(rank[p.name])
            members.sort(key=lambda p: (p.y, names.index(p.name)))
            base = min(rank[p.name] for p in members) if members else 0
            for i, p in enumerate(members):
                rank[p.name] = base + i
    processes.sort(key=lambda p: (p.column, rank[p.name]))


def _fold_columns(processes: list[TopoProcess], edges: list[TopoEdge]) -> tuple[list[TopoProcess], list[TopoEdge]]:
    """More than ``MAX_PER_COLUMN`` processes in a column: the ones with drops or warnings
    and the first ones stay, the rest become one box; their edges become one edge each way."""
    kept: list[TopoProcess] = []
    stand_in: dict[str, str] = {}  # socket -> the stand-in socket it is drawn as
    for c in sorted({p.column for p in processes}):
        members = [p for p in processes if p.column == c]
        if len(members) <= MAX_PER_COLUMN:
            kept.extend(members)
            continue
        dropped_on = {e.a for e in edges if e.dropped} | {e.b for e in edges if e.dropped}
        notable = [p for p in members if any(s.flags or s.dropped_no_pipe or s.name in dropped_on for s in p.sockets)]
        rest = [p for p in members if p not in notable]
        room = max(0, MAX_PER_COLUMN - 1 - len(notable))
        shown = notable[: MAX_PER_COLUMN - 1] + rest[:room]
        hidden = [p for p in members if p not in shown]
        kept.extend(shown)
        if hidden:
            stub_socket = TopoSocket(f"{len(hidden):,} more processes", "", "", [f"{hidden[0].name} ... {hidden[-1].name}"])
            stub = TopoProcess(f"{len(hidden):,} more like {hidden[0].name}", [stub_socket], column=c, folded=len(hidden))
            kept.append(stub)
            for p in hidden:
                for s in p.sockets:
                    stand_in[s.name] = stub_socket.name
    return kept, _merge_edges(edges, stand_in)


def _fold_sockets(processes: list[TopoProcess], edges: list[TopoEdge]) -> list[TopoEdge]:
    """More than ``MAX_PER_BOX`` sockets in a process (a template of a thousand subscribers
    in one process): the ones with drops or warnings and the first ones stay, the rest
    become one row; their connections become one edge each way ("977 x tcp ...")."""
    stand_in: dict[str, str] = {}
    dropped_on = {e.a for e in edges if e.dropped} | {e.b for e in edges if e.dropped}
    for process in processes:
        if len(process.sockets) <= MAX_PER_BOX:
            continue
        notable = [s for s in process.sockets if s.flags or s.dropped_no_pipe or s.name in dropped_on]
        rest = [s for s in process.sockets if s not in notable]
        shown = notable[: MAX_PER_BOX - 1] + rest[: max(0, MAX_PER_BOX - 1 - len(notable))]
        hidden = [s for s in process.sockets if s not in shown]
        stub = TopoSocket(f"{len(hidden):,} more sockets of {process.name}", "", process.name,
                          [f"{hidden[0].name} ... {hidden[-1].name}"])
        process.sockets = [s for s in process.sockets if s in shown] + [stub]
        for sock in hidden:
            stand_in[sock.name] = stub.name
    return _merge_edges(edges, stand_in)


def _merge_edges(edges: list[TopoEdge], stand_in: dict[str, str]) -> list[TopoEdge]:
    """Edges of sockets drawn as a stand-in: one edge per (stand-in pair, direction) saying
    how many it stands for."""
    if not stand_in:
        return edges
    merged: dict[tuple[str, str, bool, bool], TopoEdge] = {}
    result_edges = []
    for edge in edges:
        a, b = stand_in.get(edge.a, edge.a), stand_in.get(edge.b, edge.b)
        if a == edge.a and b == edge.b:
            result_edges.append(edge)
            continue
        key = (a, b, edge.a_to_b, edge.b_to_a)
        if key in merged:
            merged[key].hidden += edge.hidden
            merged[key].dropped += edge.dropped
        else:
            label = edge.label.split(" x ", 1)[1] if edge.hidden > 1 else edge.label  # folded twice: one count
            merged[key] = TopoEdge(a, b, edge.transport, edge.address, edge.a_to_b, edge.b_to_a, label, edge.dropped,
                                   edge.drop_note, edge.drop_rules, hidden=edge.hidden)
    for edge in merged.values():
        edge.label = f"{edge.hidden:,} x {edge.label}" if edge.hidden > 1 else edge.label
        result_edges.append(edge)
    return result_edges


def _place(processes: list[TopoProcess], hosts: bool = False) -> tuple[float, float]:
    """Boxes stacked per column, columns centred vertically; returns the drawing's size.
    With ``hosts``, each run of one host's processes in a column gets room above it for
    the host's box and name (``_host_boxes``)."""
    heights: dict[int, float] = {}
    starts: set[int] = set()  # processes that begin a host's run in their column
    previous: TopoProcess | None = None
    for p in processes:
        p.height = HEADER + ROW * len(p.sockets)
        begins = hosts and (previous is None or previous.column != p.column or previous.host != p.host)
        if begins:
            starts.add(id(p))
        heights[p.column] = heights.get(p.column, 0.0) + p.height + GAP + (HOST_HEADER + HOST_GAP if begins else 0.0)
        previous = p
    tallest = max(heights.values(), default=1.0)
    tops = {c: (tallest - h) / 2 for c, h in heights.items()}
    for p in processes:
        p.x = p.column * COLUMN
        if id(p) in starts:
            tops[p.column] += HOST_GAP + HOST_HEADER
        p.y = tops[p.column]
        tops[p.column] += p.height + GAP
        for row, s in enumerate(p.sockets):
            s.x = p.x
            s.y = p.y + HEADER + ROW * (row + 0.5)
    columns = max((p.column for p in processes), default=0) + 1
    return columns * COLUMN - (COLUMN - BOX_WIDTH), tallest


#: a process box's width in layout units (the rest of a column is room for arrows)
BOX_WIDTH = 4.2
