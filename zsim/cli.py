"""Command line: ``zsim run | explain | export | sweep | compare | report``, and the commands of
installed packages (``validate`` and ``calibrate``: ``validation.cli.register``).

Thin by design: every command parses its arguments and calls one library function. Bad
input (a scenario error, a missing file) prints one line naming the field and the reason
and exits with status 2, never a traceback. A fault inside zsim (the ledger does not
balance) exits with status 1 and says it is a bug.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from .errors import ConservationError, EnvironmentFault, Interrupted, ScenarioError, ZsimError
from .fields import short
from .textsafe import one_line, terminal
from .units import human_bits, human_bytes

if TYPE_CHECKING:  # pragma: no cover
    from .spec import Scenario

EXIT_OK = 0
EXIT_FAULT = 1
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse prints usage first)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _fmt(value: Any, width: int = 10) -> str:
    if value is None:
        text = "-"
    elif isinstance(value, float):
        if value == 0:
            text = "0"
        elif abs(value) >= 100:
            text = f"{value:.1f}"
        elif abs(value) >= 0.01:
            text = f"{value:.4f}"
        else:
            text = f"{value:.3g}"
    else:
        text = str(value)
    return text.rjust(width)


def _ms(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value * 1000:.3f} ms"


def _rate(value: float | None) -> str:
    if value is None:
        return "max"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


#: a table row: its cells, or a line of its own (a note between rows) taken as it is
_Row = Sequence[str] | str


def _columns(columns: Sequence[tuple[str, int]], rows: Sequence[_Row]) -> list[str]:
    """Rows of cells in columns of fixed widths (``("<", 20)``: left-aligned in 20, ``(">", 10)``:
    right-aligned in 10), the first row the header, followed by a rule as long as it. A
    right-aligned column widens until its longest cell leaves a space before it (unless the
    column before is left-aligned and every cell there leaves one after it), so two columns
    never run together whatever a value is (a latency of 10^9 ms, a 13-digit rate); with
    ordinary values the widths are the fixed ones and every line is as it always was."""
    cells = [row for row in rows if not isinstance(row, str)]
    widths: list[int] = []
    for i, (align, width) in enumerate(columns):
        longest = max(len(row[i]) for row in cells)
        if align == "<":
            widths.append(width)
            continue
        before = columns[i - 1] if i else None
        spaced = before is None or (before[0] == "<" and all(len(row[i - 1]) < widths[i - 1] for row in cells))
        widths.append(max(width, longest + (0 if spaced else 1)))

    def line(row: Sequence[str]) -> str:
        return "".join(cell.ljust(width) if align == "<" else cell.rjust(width)
                       for cell, (align, _), width in zip(row, columns, widths, strict=True))

    head = line(rows[0]) if not isinstance(rows[0], str) else rows[0]
    return [head, "-" * len(head), *(row if isinstance(row, str) else line(row) for row in rows[1:])]


#: a socket template with more members than this is folded in ``zsim run``'s tables: its
#: members' sum in the socket table, its worst ``SHOWN_MEMBERS`` in the receiver table
FOLD_MEMBERS = 8
SHOWN_MEMBERS = 3


def _big_templates(summary: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """Member socket -> (template name, pattern), for the socket templates folded in the tables."""
    found: dict[str, tuple[str, str]] = {}
    for name, info in ((summary.get("templates") or {}).get("socket") or {}).items():
        if len(info.get("members") or ()) > FOLD_MEMBERS:
            for member in info["members"]:
                found[member] = (name, info["pattern"])
    return found


_TOKEN = re.compile(r"[A-Za-z0-9_]+")


def _namer(summary: Mapping[str, Any]) -> Callable[[str], str]:
    """A pipe's, link's or thread's name with every member of a big template (processes,
    sockets, workloads of more than ``FOLD_MEMBERS``) written as its pattern:
    ``pub->sub7 (tcp send)`` -> ``pub->sub{i} (tcp send)``, ``io.reader3`` -> ``io.reader{i}``."""
    pattern_of: dict[str, str] = {}
    for kind, templates in (summary.get("templates") or {}).items():
        for info in templates.values():
            if len(info.get("members") or ()) > FOLD_MEMBERS:
                prefix = f"{kind}." if kind in ("send", "recv") else ""
                for member in info["members"]:
                    pattern_of[member.removeprefix(prefix)] = info["pattern"].removeprefix(prefix)
    if not pattern_of:
        return lambda name: name
    return lambda name: _TOKEN.sub(lambda found: pattern_of.get(found.group(0), found.group(0)), name)


def _folded(rows: Sequence[tuple[str, Any]], namer: Callable[[str], str]) -> list[tuple[str, list[Any]]]:
    """``rows`` (name, item) grouped by their folded name, in order of first appearance;
    a group of several is named ``folded xN``."""
    groups: dict[str, list[Any]] = {}
    for name, item in rows:
        groups.setdefault(namer(name), []).append(item)
    return [(name if len(items) == 1 else f"{name} x{len(items)}", items) for name, items in groups.items()]


def _worst_first(item: tuple[str, Mapping[str, Any]]) -> tuple[float, float]:
    inbound = item[1]["inbound"]
    p99 = (item[1].get("latency_s") or {}).get("p99")
    return (-inbound["loss_fraction"], -(p99 if p99 is not None else -1.0))


def _receiver_table(summary: Mapping[str, Any]) -> list[str]:
    """Per receiving socket: the fate of the copies meant for it and its own latency. The
    members of a big template (more than ``FOLD_MEMBERS``) show only their worst few,
    by loss and then p99, and one line for the rest."""
    big = _big_templates(summary)
    rows = [(name, sock) for name, sock in summary["sockets"].items() if "inbound" in sock]
    if not rows:
        return []
    folded: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for name, sock in rows:
        if name in big:
            folded.setdefault(big[name][0], []).append((name, sock))
    # a big template's rows where its first member stood: its worst members, then one line
    order: list[tuple[str, Mapping[str, Any]] | str] = []
    for name, sock in rows:
        if name not in big:
            order.append((name, sock))
        elif name == folded[big[name][0]][0][0]:
            ordered = sorted(folded[big[name][0]], key=_worst_first)
            order += ordered[:SHOWN_MEMBERS]
            order.append(_hidden_line(big[name][1], ordered[SHOWN_MEMBERS:]))
    columns = [("<", 20), (">", 10), (">", 10), (">", 9), (">", 7), (">", 8), (">", 8), (">", 10), (">", 10), (">", 10), (">", 10)]
    table: list[_Row] = [("receiver", "copies in", "delivered", "dropped", "lost", "at end", "loss %", "p50 ms", "p99 ms",
                          "p99.9 ms", "max ms")]
    for entry in order:
        if isinstance(entry, str):
            table.append(entry)
            continue
        name, sock = entry
        inbound = sock["inbound"]
        lat = sock.get("latency_s", {})

        def ms(key: str, lat: dict[str, Any] = lat) -> str:
            value = lat.get(key)
            return "-" if value is None else f"{value * 1000:.3f}"

        taken = inbound["delivered"] + inbound["forwarded"]
        lost = inbound["lost_on_close"] + inbound["discarded"]
        table.append((name, str(inbound["copies"]), str(taken), str(inbound["dropped"]), str(lost), str(inbound["queued_at_end"]),
                      f"{inbound['loss_fraction'] * 100:.2f}", ms("p50"), ms("p99"), ms("p99_9"), ms("max")))
        for where, count in inbound["dropped_by"].items():
            table.append(f"    dropped {count} at {where}")
    lines = ["", *_columns(columns, table)]
    lines.append("(loss % counts every copy meant for the receiver that it did not get: dropped, lost, discarded, and still queued "
                 "at the end)")
    return lines


def _hidden_line(pattern: str, hidden: list[tuple[str, Mapping[str, Any]]]) -> str:
    """The members of a big template the receiver table does not show, in one line."""
    losses = [sock["inbound"]["loss_fraction"] for _, sock in hidden]
    p99s = [p99 for _, sock in hidden if (p99 := (sock.get("latency_s") or {}).get("p99")) is not None]
    loss = _span(100 * min(losses), 100 * max(losses), lambda v: f"{v:.2f} %")
    p99 = _span(min(p99s), max(p99s), lambda v: f"{1e3 * v:.3f}") + " ms" if p99s else "-"
    return (f"  ... {len(hidden)} more of {pattern}, none worse: loss {loss}, p99 {p99} (each in zsim run --json; the "
            "template table below sums them all)")


#: the socket table's columns (``_socket_rows``)
_SOCKET_COLUMNS = [("<", 20), (">", 7), (">", 10), (">", 9), (">", 10), (">", 9), (">", 9), (">", 7), (">", 11)]


def _socket_rows(summary: Mapping[str, Any]) -> list[_Row]:
    """The socket table's rows: one per socket, and one per big template (its members
    summed, ``name{i} xN``) where its first member stood."""
    big = _big_templates(summary)
    sums: dict[str, dict[str, Any]] = {}
    for name, sock in summary["sockets"].items():
        if name in big:
            total = sums.setdefault(big[name][0], {"name": f"{big[name][1]} x", "n": 0, "type": sock["type"], "sent": 0,
                                                   "again": 0, "received": 0, "dropped": 0, "discarded": 0, "lost": 0,
                                                   "blocked_s": 0.0})
            total["n"] += 1
            for key, value in (("sent", sock["sent"]), ("again", sock["send_again"] + sock["send_unroutable"]),
                               ("received", sock["received"]), ("dropped", sock["dropped"]), ("discarded", sock["discarded"]),
                               ("lost", sock["lost_on_close"]), ("blocked_s", sock["blocked_s"])):
                total[key] += value
    rows: list[_Row] = [("socket", "type", "sent", "again", "received", "dropped", "discard", "lost", "blocked s")]
    for name, sock in summary["sockets"].items():
        if name in big:
            if big[name][0] not in sums:
                continue  # its template's row is already out
            total = sums.pop(big[name][0])
            sock = {"type": total["type"], "sent": total["sent"], "send_again": total["again"], "send_unroutable": 0,
                    "received": total["received"], "dropped": total["dropped"], "discarded": total["discarded"],
                    "lost_on_close": total["lost"], "blocked_s": total["blocked_s"]}
            name = f"{total['name']}{total['n']}"
        rows.append((name, sock["type"], str(sock["sent"]), str(sock["send_again"] + sock["send_unroutable"]),
                     str(sock["received"]), str(sock["dropped"]), str(sock["discarded"]), str(sock["lost_on_close"]),
                     _fmt(sock["blocked_s"], 0)))
    if big:
        rows.append(f"(a template of more than {FOLD_MEMBERS} members is one row, name{{i}} xN: its members' counts summed)")
    return rows


def _sender_table(summary: Mapping[str, Any]) -> list[str]:
    rows = list(summary.get("senders", {}).items())
    if not rows:
        return []
    table: list[_Row] = [("sender", "socket", "sent", "again", "asked /s", "achieved /s", "blocked s")]
    for name, sender in rows:
        achieved = _rate(sender.get("achieved_rate_per_s")) if sender.get("active_s") else "-"
        table.append((name, sender["socket"], str(sender["sent"]), str(sender["again"] + sender["unroutable"]),
                      _rate(sender.get("requested_rate_per_s")), achieved, _fmt(sender.get("blocked_s", 0.0), 0)))
    return ["", *_columns([("<", 20), (">", 10), (">", 10), (">", 9), (">", 12), (">", 13), (">", 11)], table)]


def _span(low: Any, high: Any, fmt: Callable[[float], str]) -> str:
    if low is None or high is None or low != low or high != high:  # NaN: no member has a value
        return "-"
    return fmt(low) if low == high else f"{fmt(low)} .. {fmt(high)}"


def _template_table(summary: Mapping[str, Any]) -> list[str]:
    """Per receiving socket template (``count = N``): the receiver table's counts summed
    over its members, and the spread of their loss and p99 latency, so 'is any of the 8
    workers worse?' is one line."""
    from .metrics import flat_metrics

    templates = (summary.get("templates") or {}).get("socket") or {}
    if not templates:
        return []  # the common case: no flat row to build
    row = flat_metrics(summary)
    rows: list[_Row] = [("receiver template", "members", "copies in", "delivered", "dropped", "lost", "at end", "loss % max",
                         "p99 ms min .. max")]
    for name, info in templates.items():
        def get(key: str, name: str = name) -> Any:
            value = row.get(f"socket.{name}.{key}")
            return None if value is None or value != value else value

        if get("sum_copies") is None:
            continue  # nothing was meant for its members: the socket table has their counts
        counts = [str(int(get(key))) for key in ("sum_copies", "sum_delivered", "sum_dropped", "sum_lost_on_close",
                                                  "sum_queued_at_end")]
        loss = get("max_loss_fraction")
        p99 = _span(get("min_latency_p99_s"), get("max_latency_p99_s"), lambda v: f"{1e3 * v:.3f}")
        rows.append((info["pattern"][:21], str(info["count"]), *counts, "-" if loss is None else f"{100 * loss:.2f}", p99))
    if len(rows) == 1:
        return []
    columns = [("<", 22), (">", 8), (">", 11), (">", 10), (">", 9), (">", 7), (">", 8), (">", 12), (">", 24)]
    return ["", *_columns(columns, rows), "(over the members of each template: copies summed, the worst member's loss %, "
                                          "the spread of their p99)"]


def _level(level: dict[str, Any], messages: str, size: str, key: str) -> str:
    count = level[messages][key]
    text = f"{count:.1f}" if isinstance(count, float) else str(count)
    return f"{text} / {human_bytes(level[size][key])}"


def _link_table(summary: Mapping[str, Any]) -> list[str]:
    """Per direction of each tcp/ipc link: messages / bytes in the kernel (max, time
    average) and the most held by the sending engine's batch and the receiving engine."""
    links = summary.get("links") or []
    if not links:
        return []
    table: list[_Row] = [("link direction", "transport", "kernel max", "kernel mean", "out batch max", "in engine max"),
                         "(messages / bytes; out batch: written by the sending engine, not yet in the kernel; "
                         "in engine: decoded, refused by a full pipe)"]
    rows = []
    for link in links:
        transport = link["transport"] + (f" #{link['number']}" if link["number"] > 1 else "") + (" broken" if link["broken"] else "")
        for name, level in (link.get("directions") or {}).items():
            rows.append((f"{name}\0{transport}", level))
    folded = _folded(rows, _namer(summary))
    for key, levels in folded:
        name, transport = key.split("\0", 1)
        if transport.endswith(f" x{len(levels)}") and len(levels) > 1:  # the count lands after the transport
            transport, name = transport[: -len(f" x{len(levels)}")], f"{name} x{len(levels)}"
        level = levels[0] if len(levels) == 1 else _worst_level(levels)
        table.append((name[:31], transport, _level(level, "kernel_messages", "kernel_bytes", "max"),
                      _level(level, "kernel_messages", "kernel_bytes", "mean"),
                      _level(level, "sender_engine_messages", "sender_engine_bytes", "max"),
                      _level(level, "receiver_engine_messages", "receiver_engine_bytes", "max")))
    lines = ["", *_columns([("<", 32), (">", 10), (">", 20), (">", 20), (">", 18), (">", 18)], table)]
    if len(folded) < len(rows):
        lines.append("(name xN: the directions of N members of a template: the largest of their maxima and of their means)")
    return lines


def _worst_level(levels: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The largest max and the largest mean of each level over several link directions."""
    return {key: {stat: max(level[key][stat] for level in levels) for stat in ("max", "mean")}
            for key in ("kernel_messages", "kernel_bytes", "sender_engine_messages", "sender_engine_bytes",
                        "receiver_engine_messages", "receiver_engine_bytes")}


def _thread_table(summary: Mapping[str, Any]) -> list[str]:
    """With [machine] cores: each thread's CPU work and its wait for a core."""
    machine = summary.get("machine")
    if not machine:
        return []
    lines = ["", f"machine: {machine['cores']} core{'s' if machine['cores'] != 1 else ''}, up to {machine['max_runnable']} threads "
                 f"runnable at once, {machine['cpu_s'] * 1e3:.3f} ms of CPU work in all"]
    table: list[_Row] = [("thread", "kind", "process", "cores", "cpu ms", "waited ms", "bursts")]
    namer = _namer(summary)
    rows = list(machine["threads"].items())
    folded = _folded(rows, namer)
    for name, threads in folded:
        thread = threads[0]
        cores = ",".join(str(core) for core in thread["cores"]) if thread["cores"] else "all"
        if len(threads) > 1 and any(t["cores"] != thread["cores"] for t in threads):
            cores = "mixed"
        process = namer(thread["process"])
        table.append((name[:27], thread["kind"], process[:13], cores[:7], f"{max(t['cpu_s'] for t in threads) * 1e3:.3f}",
                      f"{max(t['waited_s'] for t in threads) * 1e3:.3f}", str(sum(t["bursts"] for t in threads))))
    lines += _columns([("<", 28), (">", 5), (">", 14), (">", 8), (">", 12), (">", 12), (">", 10)], table)
    if len(folded) < len(rows):
        lines.append("(name xN: N threads of a template's members: the most CPU and wait of any one, bursts summed)")
    return lines


def format_summary(summary: Mapping[str, Any], scenario: Scenario | None = None) -> str:
    """The readable table ``zsim run`` prints."""
    lines = []
    ledger = summary["ledger"]
    lines.append(f"scenario {one_line(summary['scenario'])}  seed {summary['seed']}  profile {one_line(summary['profile'])}  "
                 f"simulated {summary['sim_time_s']:.6g} s in {summary['wall_s']:.3f} s wall")
    lines.append("")
    lines += _columns(_SOCKET_COLUMNS, _socket_rows(summary))
    lines += _receiver_table(summary) + _template_table(summary) + _sender_table(summary)
    lines.append("")
    pipe_rows: list[_Row] = [("pipe", "hwm", "max depth", "mean depth", "p99 depth", "max bytes", "dropped", "at end")]
    namer = _namer(summary)
    shown_pipes = [(pipe["name"], pipe) for pipe in summary["pipes"]
                   if not (pipe["written"] == 0 and pipe["dropped"] == 0 and pipe["kind"] != "inproc" and pipe["max_depth"] == 0)]
    folded_pipes = _folded(shown_pipes, namer)
    for name, pipes in folded_pipes:
        hwms = sorted({"inf" if pipe["hwm"] <= 0 else str(pipe["hwm"]) for pipe in pipes})
        hwm = hwms[0] if len(hwms) == 1 else "mixed"
        mean_depth = sum(pipe["mean_depth"] for pipe in pipes) / len(pipes)
        p99 = max(pipe.get("p99_depth", 0) for pipe in pipes)
        max_bytes = human_bytes(max(pipe.get("max_bytes", 0) for pipe in pipes))
        pipe_rows.append((name[:43], hwm, str(max(pipe["max_depth"] for pipe in pipes)), _fmt(mean_depth, 0), str(p99), max_bytes,
                          str(sum(pipe["dropped"] for pipe in pipes)), str(sum(pipe["depth_at_end"] for pipe in pipes))))
    lines += _columns([("<", 44), (">", 7), (">", 11), (">", 12), (">", 11), (">", 11), (">", 9), (">", 8)], pipe_rows)
    lines.append("(depths in messages; p99 depth: the level it held at most for 99 % of the run's time; max bytes: the most "
                 "payload it held at once)")
    if len(shown_pipes) > len(folded_pipes):
        lines.append("(name xN: the pipes of N members of a template: the deepest max and p99, the mean of their means, drops "
                     "and at end summed)")
    lines += _link_table(summary)
    lines += _thread_table(summary)
    lines.append("")
    lines.append(
        f"all copies pooled: sent {ledger['sent']}, copies {ledger['copies']}, delivered {ledger['delivered']}, "
        f"forwarded {ledger['forwarded']}, "
        f"dropped {ledger['dropped']}, discarded {ledger['discarded']}, lost on close {ledger['lost_on_close']}, queued at end "
        f"{ledger['queued_at_end']}"
    )
    by_kind = (("dropped_by_rule", "dropped"), ("discarded_by_rule", "discarded"), ("lost_by_rule", "lost"),
               ("queued_by_place", "queued in"))
    for key, label in by_kind:
        if ledger[key]:
            lines.append(f"  {label}: " + ", ".join(f"{k} {v}" for k, v in ledger[key].items()))
    lat = summary["latency_s"]
    lines.append(f"latency pooled over all receivers: p50 {_ms(lat['p50'])}, p95 {_ms(lat['p95'])}, p99 {_ms(lat['p99'])}, "
                 f"max {_ms(lat['max'])} over {lat['count']} deliveries")
    # request -> reply and source -> sink, from the ledger's causal links (zsim.results.causal_times):
    # over the requests answered and the chains that ended; those still on their way apart
    def pending(source: str, requests: bool) -> str:
        count = int((summary["sockets"].get(source, {}).get("chains_at_end") or {}).get("in_flight", 0))
        if not count:
            return ""
        return (f"; {count:,} more still in flight at the end" if requests
                else f"; {count:,} sent at {source} still on the way at the end")

    for name, sock in summary["sockets"].items():
        rtt = sock.get("rtt_s")
        if rtt:
            lines.append(one_line(f"request -> reply at {name} (its requests answered): p50 {_ms(rtt['p50'])}, p99 {_ms(rtt['p99'])}, "
                                  f"max {_ms(rtt['max'])} over {rtt['count']:,} answered{pending(name, True)}"))
        for source, times in (sock.get("e2e_s") or {}).items():
            lines.append(one_line(f"end to end {source} -> {name} (sent at {source}, what it caused arriving at {name}): "
                                  f"p50 {_ms(times['p50'])}, p99 {_ms(times['p99'])}, max {_ms(times['max'])} over "
                                  f"{times['count']:,} that arrived"
                                  # a requester's chains in flight are said on its request -> reply line
                                  f"{'' if summary['sockets'].get(source, {}).get('rtt_s') else pending(source, False)}"))
    network = summary.get("network") or {}
    if network:
        lines.append("")
        lines.append(f"{'network link direction':<28} {'rate':>10} {'offered':>12} {'one way':>9} {'utilisation':>12} {'goodput':>12}"
                     f" {'max queue':>11} {'queue drops':>12} {'refused':>8} {'lost':>6} {'resent':>7}")
        lines.append("-" * 137)
        for link, directions in network.items():
            for direction, carried in directions.items():
                offered = carried.get("offered_bps")
                # what the writers wanted to send that way, beside what the link carries (a
                # PUB that drops at its SNDHWM before the link leaves the link's own columns
                # looking healthy); "-": a summary from before it was counted, or no rate
                offered_text = f"{offered / 1e6:>7.4g} Mb/s" if offered is not None and offered == offered else "-"
                lines.append(f"{one_line(link + ' ' + direction):<28} {carried['bandwidth_bps'] / 1e6:>5.4g} Mb/s "
                             f"{offered_text:>12} "
                             f"{carried['latency_s'] * 1000:>6.3g} ms {100 * carried['utilisation']:>10.1f} % "
                             f"{carried['goodput_bps'] / 1e6:>7.2f} Mb/s {human_bytes(carried['max_queue_bytes']):>11} "
                             f"{carried['queue_drops']:>12,} {carried.get('local_drops', 0):>8,} {carried['loss_drops']:>6,} "
                             f"{carried['retransmits']:>7,}")
        lines.append("(offered: bits a second of ZMTP frames the writers of the connections crossing it handed their sockets "
                     "for it, those dropped before the link included; above the rate: oversubscribed; packets: queue drops "
                     "at the link's full queue, of which refused: in skbs the sending host's own queue refused whole, which "
                     "TCP keeps and sends later, slowing down but counting no loss; lost on the way; sent again; goodput: "
                     "payload bytes carried, first sends only)")
        lines += _connection_table(summary)
    lines += _fault_table(summary)
    for name, proc in summary.get("processes", {}).items():
        if proc["term_blocked"]:
            lines.append(f"process {name}: zmq_ctx_term still blocked at the end (LINGER -1 with messages the peer never took)")
        elif proc["exit_completed_s"] is not None and proc["exit_started_s"] is not None:
            lines.append(f"process {name}: exit at {proc['exit_started_s']:.6g} s, context terminated at {proc['exit_completed_s']:.6g} s")
        if proc["crashed_s"] is not None:
            lines.append(f"process {name}: crashed at {proc['crashed_s']:.6g} s")
    warnings = summary.get("warnings", [])
    if warnings:
        lines.append("")
        from .checks import fold_warnings

        for warning in fold_warnings(warnings, scenario) if scenario is not None else warnings:
            lines.append(one_line(f"warning [{warning['code']}] {warning['path']}: {warning['message']}"))
    return "\n".join(lines)


def _fault_table(summary: Mapping[str, Any]) -> list[str]:
    """Per [[fault]] (``summary["faults"]``): its kind and links, how many times it happened and
    for how long in all, the first and last of its intervals, and how long after each ended
    the first frame crossed one of its links again; then, per link direction that lost
    anything to a fault or whose connections timed out, those counts."""
    faults = summary.get("faults") or {}
    if not faults:
        return []
    lines = ["", f"{'fault':<20} {'kind':<10} {'links':<24} {'times':>6} {'down s':>9} {'first':>17} {'recovery s':>11} {'longest':>9}"
                 f" {'detect s':>9} {'broke':>6}", "-" * 130]
    for name, fault in faults.items():
        intervals = fault["intervals"]
        first = f"{intervals[0][0]:.4g}-{intervals[0][1]:.4g} s" if intervals else "-"
        # NaN: nothing crossed its links after it ended, nothing noticed it
        recovery, longest, detect = (f"{fault[key]:.4g}" if fault[key] == fault[key] else "-"
                                     for key in ("recovery_s", "longest_recovery_s", "detect_s"))
        lines.append(f"{one_line(name):<20} {fault['kind']:<10} {one_line(', '.join(fault['links'])):<24} {fault['count']:>6,} "
                     f"{fault['down_s']:>9.4g} {first:>17} {recovery:>11} {longest:>9} {detect:>9} {fault['disconnects']:>6,}")
        if fault["disconnected_by"]:
            lines.append(one_line(f"  {name}: connections broken by " + ", ".join(f"{reason} ({count:,})" for reason, count
                                                                              in fault["disconnected_by"].items())))
    hit = [(f"{link} {direction}", way) for link, directions in (summary.get("network") or {}).items()
           for direction, way in directions.items()
           if way.get("outage_drops") or way.get("fault_loss_drops") or way.get("acks_lost") or way.get("timeouts")]
    for label, way in hit:
        lines.append(one_line(f"  {label}: {way['outage_drops']:,} frames lost on the wire while down, {way['fault_loss_drops']:,} to "
                              f"loss faults, {way['acks_lost']:,} ACKs lost on the way back, {way['timeouts']:,} retransmission "
                              "timeouts of its connections"))
    lines.append("(times: intervals it was down or lossy; recovery: from an interval's end to the first frame across its links "
                 "again, the mean and the longest; TCP tries again on its backed-off timeout, so recovery lags the repair; detect: "
                 "from an interval's start to the first connection over its links broken by ZMTP heartbeats, TCP keepalive or "
                 "tcp_retries2, '-' if nothing noticed it; broke: how many)")
    return lines


def _connection_table(summary: Mapping[str, Any]) -> list[str]:
    """Per direction of each tcp connection that crosses a link (``zsim.metrics.CONNECTION_FIELDS``):
    its rate while it had data to send, round trips, largest congestion window and how long
    its receiver's window or its own send buffer held it back. The members of a big template
    fold into one line (the slowest rate, the worst round trips, the largest window and
    limited shares)."""
    from .checks import RATE_MIN_BYTES, carries_a_rate, limited_shares

    rows = [(f"{name} ({link} {direction})", tcp) for link, directions in (summary.get("network") or {}).items()
            for direction, carried in directions.items() for name, tcp in carried["connections"].items() if tcp["bytes"]]
    if not rows:
        return []
    head = (f"{'tcp connection over a link':<40} {'throughput':>12} {'rtt mean':>10} {'rtt max':>10} {'largest cwnd':>13}"
            f" {'rwnd-limited':>13} {'sndbuf-limited':>15}")
    lines = ["", head, "-" * len(head)]
    folded = _folded(rows, _namer(summary))

    for name, tcps in folded:
        rated = [tcp for tcp in tcps if carries_a_rate(tcp)]
        rtts = f"{_ms(max(tcp['rtt_s'] for tcp in tcps)):>10} {_ms(max(tcp['max_rtt_s'] for tcp in tcps)):>10} "
        cwnd = f"{human_bytes(max(tcp['max_cwnd_bytes'] for tcp in tcps)):>13} "
        if not rated:  # a few bytes (subscriptions): no rate to show, nor a share of its time
            carried = f"{human_bytes(max(tcp['bytes'] for tcp in tcps))} only"
            lines.append(f"{one_line(name)[:39]:<40} {carried:>12} {rtts}{cwnd}{'-':>13} {'-':>15}")
            continue
        shares = [limited_shares(tcp) for tcp in rated]
        lines.append(f"{one_line(name)[:39]:<40} {human_bits(min(tcp['throughput_bps'] for tcp in rated)):>12} {rtts}{cwnd}"
                     f"{100 * max(w for w, _ in shares):>11.1f} % {100 * max(b for _, b in shares):>13.1f} %")
    note = ("(throughput: payload acknowledged per second while the connection had data to send, for one that carried "
            f"at least an initial window, {RATE_MIN_BYTES:,} bytes; less is shown as the bytes it carried; rtt: a segment's "
            "send to its ACK, the link's queue included; rwnd- and sndbuf-limited: share of that time the receiver's "
            "window, or its own send buffer full of bytes in flight, held it back")
    lines.append(note + ("; name xN: N members of a template, the slowest and the worst of them)" if len(folded) < len(rows) else ")"))
    return lines


def _run_command(args: argparse.Namespace, seed: int) -> str:
    """The command line that gives this report again (paths as the user gave them)."""
    import shlex

    from .files import shown_path

    words = ["zsim", "run", shown_path(args.scenario), "--seed", str(seed)]
    for change in args.set or ():
        words += ["--set", change]
    words += ["--report", shown_path(args.report)]
    if getattr(args, "allow_apps", False):
        words.append("--allow-apps")
    for folder in getattr(args, "allow_apps_from", None) or ():
        words += ["--allow-apps-from", shown_path(folder)]
    return " ".join(shlex.quote(word) for word in words)


def app_permission(args: argparse.Namespace) -> Any:
    """The ``zsim.trust.AppPermission`` of ``--allow-apps``, ``--allow-apps-from`` and ``ZSIM_ALLOW_APPS``."""
    from .trust import from_command_line

    return from_command_line(bool(getattr(args, "allow_apps", False)), getattr(args, "allow_apps_from", None))


#: How to allow the app code of a run rebuilt from a results folder (``explain --sweep``).
REPLAY_HOW = ("--allow-apps and the sweep file the results came from named on the command line (zsim explain SWEEP.toml "
              "--sweep DIR --worst METRIC --allow-apps; a results folder does not decide where code comes from), or "
              "--allow-apps-from DIR")


def checked_apps(scenario: Any, args: argparse.Namespace, replay: bool = False) -> Any:
    """Check the code ``scenario`` names against the flags (one line, exit 2, if not
    allowed) and say on stderr which files will run; the permission for ``run``.
    ``replay``: the scenario was rebuilt from a results folder with no file named, so its
    folder is someone else's word: ``--allow-apps`` allows nothing, only the folders of
    ``--allow-apps-from`` hold code that may run."""
    import dataclasses

    from .trust import AppPermission, announcements, check

    allow = app_permission(args)
    if replay:
        allow = dataclasses.replace(allow, allowed=False, how=REPLAY_HOW)
    codes = check(scenario, allow)
    for line in announcements(codes):
        print(line, file=sys.stderr)
    # the run loads exactly the code checked here: the same paths, the same bytes
    return AppPermission(granted=tuple((code.key, code.sha256 or "") for code in codes), how=allow.how)


def add_app_args(parser: argparse.ArgumentParser) -> None:
    """``--allow-apps`` and ``--allow-apps-from DIR``: the opt-in for code a scenario names."""
    parser.add_argument("--allow-apps", action="store_true",
                        help="run the Python code the scenario's [[app]] tables name (files in the scenario's folder, installed "
                             "modules); without it such a scenario is refused. ZSIM_ALLOW_APPS=1 does the same (docs/safety.md)")
    parser.add_argument("--allow-apps-from", action="append", metavar="DIR",
                        help="also run app files from DIR (repeatable)")


def _refuse_overwriting_the_scenario(args: argparse.Namespace) -> None:
    """``--out`` and ``--report`` write fixed names into their folders: none may be the scenario."""
    from .files import refuse_overwriting_inputs

    if args.out:
        names: tuple[str, ...] = ("messages.parquet", "depth.parquet", "summary.json")
        refuse_overwriting_inputs([os.path.join(args.out, name) for name in names], [args.scenario], "--out")
    if args.report:
        from .report_run import FIGURES

        names = (*FIGURES, "report.html")
        refuse_overwriting_inputs([os.path.join(args.report, name) for name in names], [args.scenario], "--report")


def load_scenario(args: argparse.Namespace) -> Scenario:
    """The scenario file with the changes of ``--set PATH=VALUE`` (the paths of sweeps and
    ``compare --vary``: ``zsim.spec.set_path``), validated; a bad path or value is one
    ``ScenarioError`` naming the ``--set`` path."""
    from . import files, spec
    from .compare.designs import assignment, toml_value

    sets = [assignment(text, "--set", "PATH=VALUE (e.g. socket.pub.options.sndhwm=5000)") for text in args.set or ()]
    for path, _ in sets:
        spec.check_path(path, "--set")  # before the path names the flag in an error line
    if not sets:
        return spec.load(args.scenario)
    raw = files.load_toml(args.scenario, "scenario file")
    spec.from_dict(raw, base_dir=str(os.path.dirname(os.path.abspath(args.scenario))), source=args.scenario)  # the file's own errors
    for path, value in sets:
        try:
            spec.set_path(raw, path, toml_value(value))
        except ScenarioError as exc:
            raise ScenarioError(f"--set {path}", exc.reason) from None
    try:
        return spec.from_dict(raw, base_dir=str(os.path.dirname(os.path.abspath(args.scenario))), source=args.scenario)
    except ScenarioError as exc:
        flag = f"--set {sets[0][0]}" if len(sets) == 1 else "--set"
        raise ScenarioError(flag, f"{exc.path}: {exc.reason}" if exc.path else exc.reason) from None


def add_set_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--set", action="append", metavar="PATH=VALUE",
                        help="change a field of the scenario by its path, as in a sweep axis or compare --vary "
                             "(socket.pub.options.sndhwm=5000, scenario.until_s=2; repeatable)")


def cmd_run(args: argparse.Namespace) -> int:
    from .files import prepare_output_dir
    from .runner import run

    scenario = load_scenario(args)
    allow = checked_apps(scenario, args)  # before anything is written or runs
    _refuse_overwriting_the_scenario(args)
    if args.out:
        prepare_output_dir(args.out, "--out")  # before the work, not after
    if args.report:
        prepare_output_dir(args.report, "--report")
    limits = _limit_overrides(args)
    progress = sys.stderr if sys.stderr.isatty() else None
    recorder = None
    if args.report:
        from .report_run import SeriesRecorder

        recorder = SeriesRecorder(keep_traces=bool(args.out))
    result = run(scenario, args.seed, trace=bool(args.out), limits=limits, progress=progress, recorder=recorder, allow_apps=allow)
    if args.out:
        result.write_parquet(args.out)
    written = []
    if args.report and recorder is not None:
        from .report_run import write_report

        written = write_report(result, recorder.result, scenario, args.report, command=_run_command(args, result.summary["seed"]))
    if args.json:
        print(result.to_json())
    else:
        print(terminal(format_summary(result.summary, scenario)))  # names from the file cannot act on the terminal
        if args.out:
            print(f"\nwrote {args.out}/messages.parquet, depth.parquet, summary.json")
        if written:
            print(f"\nwrote {os.path.join(args.report, 'report.html')} (self-contained) and "
                  f"{', '.join(path.name for path in written if path.suffix == '.png')}")
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    """``zsim explain FILE``: the run's loss episodes and stalls, one paragraph each."""
    import json

    from .explain import explain
    from .report_run import SeriesRecorder
    from .runner import run

    limits = _limit_overrides(args)
    chosen = None
    if args.sweep is not None:
        chosen, named = _worst_of_sweep(args)
        scenario, seed = chosen.scenario, chosen.seed
        allow = checked_apps(scenario, args, replay=not named)
    else:
        if args.scenario is None:
            raise ScenarioError("explain", "name a scenario file, or a sweep's results with --sweep DIR --worst METRIC")
        scenario, seed = load_scenario(args), args.seed
        allow = checked_apps(scenario, args)
    recorder = SeriesRecorder()
    progress = sys.stderr if sys.stderr.isatty() else None
    result = run(scenario, seed, limits=limits, progress=progress, recorder=recorder, allow_apps=allow)
    found = explain(result, recorder.result, scenario)
    again = None
    if chosen is not None:
        value = result.flat().get(chosen.metric)
        if not (isinstance(value, float | int) and math.isclose(float(value), chosen.value, rel_tol=1e-9, abs_tol=1e-12)):
            again = (f"note: run again, {chosen.metric} = {value} where the sweep's row has {chosen.value:.6g}: the sweep ran "
                     "other model code" + (f" ({chosen.code})" if chosen.code else "") + "; this paragraph explains the re-run")
    if args.json:
        data = found.to_dict()
        if chosen is not None:
            data["chosen"] = {"sweep": chosen.sweep, "point": chosen.point, "replication": chosen.replication, "seed": chosen.seed,
                              "metric": chosen.metric, "value": chosen.value, "direction": chosen.direction, "runs": chosen.runs,
                              "coords": chosen.coords, "reproduced": again is None}
        print(json.dumps(data, indent=2, default=str))
    else:
        if chosen is not None:
            print(terminal(one_line("zsim explain: " + chosen.describe())))
            if again:
                print(terminal(one_line(again)))
            print()
        print(terminal(found.text()), end="")
    return EXIT_OK


def _worst_of_sweep(args: argparse.Namespace) -> tuple[Any, bool]:
    """``--sweep DIR --worst METRIC [FILE]``: the run to explain (``zsim.sweep.replay``), and
    whether the user named the sweep (or scenario) file it came from. That file's folder is
    the scenario's folder, for its app files too; without one, the run's app code is allowed
    only from folders named with --allow-apps-from (``checked_apps(replay=True)``): the
    results folder's manifest does not decide where code comes from."""
    from .metrics import preference
    from .sweep.replay import worst_run

    if args.worst is None:
        raise ScenarioError("--sweep", "needs --worst METRIC: which run of the sweep to explain")
    if args.set or args.seed is not None:
        raise ScenarioError("--sweep", "explains a run of the sweep as it ran: no --set or --seed with it")
    prefers, _ = preference(args.worst)
    base_dir, sweep_name = _scenario_folder(args.scenario) if args.scenario is not None else (None, None)
    chosen = worst_run(args.sweep, args.worst, prefers, args.sweep_name, base_dir=base_dir)
    if sweep_name is not None and sweep_name != chosen.sweep:
        raise ScenarioError(args.scenario, f"is the sweep {sweep_name!r}; the results are of the sweep {chosen.sweep!r} (name its "
                                           "file, or the scenario file it ran)")
    return chosen, base_dir is not None


def _scenario_folder(path: str) -> tuple[str, str | None]:
    """Where the relative paths of the scenario of a sweep file start (the folder of its base
    scenario file, or its own for an inline ``[base]``) and the sweep's name; for a scenario
    file, its own folder and None."""
    from . import files
    from .sweep.plan import load

    raw = files.load_toml(path, "sweep or scenario file")
    if isinstance(raw.get("sweep"), dict):
        sweep = load(path)
        return sweep.base_dir, sweep.name
    return str(os.path.dirname(os.path.abspath(path))), None


def seed_arg(text: str) -> int:
    """``--seed``: an integer >= 0 (numpy's SeedSequence refuses negative seeds)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {short(text)}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def count_arg(minimum: int, maximum: int | None = None, bound: str = "") -> Callable[[str], int]:
    """An integer >= ``minimum`` (and <= ``maximum``, the constant named ``bound``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {short(text)}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}{f' ({bound})' if bound else ''}, got {short(text)}")
        return value

    return parse


def fraction_arg(text: str) -> float:
    """A fraction from 0 to below 1 (``--min-effect 0.05``: 5 %)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a fraction such as 0.05 (5 %), got {short(text)}") from None
    if not (0 <= value < 1):
        raise argparse.ArgumentTypeError(f"must be from 0 to below 1 (0.05: 5 %), got {short(text)}")
    return value


def seconds_arg(allow_zero: bool = False) -> Callable[[str], float]:
    """A finite number of seconds > 0 (or >= 0), at most ``zsim.limits.MAX_SECONDS``: ``nan``,
    ``inf``, negatives and 1e308 (a timer the OS cannot set) are refused."""
    from .limits import MAX_SECONDS

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number of seconds, got {short(text)}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number of seconds, got {short(text)}")
        if value > MAX_SECONDS:
            raise argparse.ArgumentTypeError(f"must be at most {MAX_SECONDS:g} s (about 32 years; zsim.limits.MAX_SECONDS)"
                                             f"{'; 0 for no limit' if allow_zero else ''}, got {short(text)}")
        if value < 0 or (value == 0 and not allow_zero):
            raise argparse.ArgumentTypeError(f"must be {'>= 0' if allow_zero else '> 0'}, got {short(text)}")
        return value

    return parse


def _limit_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The limits ``add_limit_args`` flags set on the command line (the rest: the scenario's)."""
    return {key: getattr(args, key) for key in ("max_events", "max_messages", "max_wall_s") if getattr(args, key) is not None}


def add_limit_args(parser: argparse.ArgumentParser) -> None:
    """``--max-events``, ``--max-messages``, ``--max-wall-s``: a run's work limits (0: none)."""
    from . import limits

    parser.add_argument("--max-events", type=count_arg(0), default=None, metavar="N",
                        help=f"stop the run after N events (default {limits.DEFAULT_MAX_EVENTS:,}; 0: no limit)")
    parser.add_argument("--max-messages", type=count_arg(0), default=None, metavar="N",
                        help=f"stop the run after N message copies (default {limits.DEFAULT_MAX_MESSAGES:,}; 0: no limit)")
    parser.add_argument("--max-wall-s", type=seconds_arg(allow_zero=True), default=None, metavar="S",
                        help=f"stop the run after S wall-clock seconds (default {limits.DEFAULT_MAX_WALL_S:g}; 0: no limit)")


def add_jobs_arg(parser: argparse.ArgumentParser) -> None:
    """``--jobs N``, the parallelism of ``sweep`` and ``compare`` (``--workers``, its old name
    in ``sweep``, still works, unlisted)."""
    from .limits import MAX_JOBS

    jobs = count_arg(1, MAX_JOBS, "zsim.limits.MAX_JOBS")  # each a process: --jobs 100000 is no typo to obey
    parser.add_argument("--jobs", type=jobs, default=None, metavar="N",
                        help="worker processes (--engine local) or Spark cores (local[N], without --master)")
    parser.add_argument("--workers", type=jobs, dest="jobs", help=argparse.SUPPRESS)


def cmd_compare(args: argparse.Namespace) -> int:
    import json

    from .compare import compare, format_text
    from .compare import to_json as comparison_json
    from .sweep.cli import _conf

    comparison = compare(
        args.designs, vary=args.vary or (), link=args.link or (), set_=args.set or (), names=args.name or (),
        replications=args.replications, seed=args.seed, metrics=args.metric or (), prefer=args.prefer or (),
        max_metrics=args.max_metrics, engine=args.engine, jobs=args.jobs, master=args.master, conf=_conf(args.conf),
        run_timeout_s=args.run_timeout, max_runs=args.max_runs, report=args.report, allow_apps=app_permission(args),
        stream=sys.stderr, min_effect=args.min_effect, derive=args.derive or (), precision=args.precision or (),
        command=command_line(args),
    )
    if args.json:
        print(json.dumps(comparison_json(comparison), indent=2))
    else:
        print(terminal(format_text(comparison)))
        for path in comparison.written:
            print(f"wrote {one_line(path)}")
    return EXIT_OK


def command_line(args: argparse.Namespace) -> str | None:
    """``zsim compare a.toml b.toml --report r``: the command as it was given (``main``
    keeps its words), for the header of a file it writes; None when unknown."""
    import shlex

    words = getattr(args, "command_line", None)
    return None if words is None else " ".join(shlex.quote(word) for word in ["zsim", *words])


def scenario_words(args: argparse.Namespace) -> str:
    """``base.toml --set a=1 --set b=2``: the scenario a command ran, as its command line
    names it (headers and report titles say which design it was)."""
    import shlex

    from .files import shown_path

    words = [shown_path(args.scenario)]
    for change in args.set or ():
        words += ["--set", change]
    return " ".join(shlex.quote(word) for word in words)


def cmd_export(args: argparse.Namespace) -> int:
    """``zsim export FILE --pyzmq OUT.py [--set PATH=VALUE ...]``: a standalone pyzmq program of the scenario."""
    from .export import write_pyzmq

    path = write_pyzmq(args.scenario, args.pyzmq, load=lambda: load_scenario(args), source=scenario_words(args))
    print(one_line(f"wrote {path} (run it: python {path})"))
    return EXIT_OK


def _lazy(module: str, function: str) -> Callable[[argparse.Namespace], int]:
    def call(args: argparse.Namespace) -> int:
        import importlib

        return int(getattr(importlib.import_module(module), function)(args))

    return call


#: the entry-point group through which an installed package adds subcommands: each entry
#: point is a function that adds its parsers to zsim's (``validation.cli.register`` adds
#: ``validate`` and ``calibrate``, declared in pyproject.toml), so zsim imports none of them
COMMANDS_GROUP = "zsim.commands"


def add_installed_commands(sub: argparse._SubParsersAction[Any]) -> None:
    """The subcommands of the ``zsim.commands`` entry points, by entry-point name."""
    from importlib.metadata import entry_points

    seen = set()
    for point in sorted(entry_points(group=COMMANDS_GROUP), key=lambda point: point.name):
        if point.name not in seen:  # one package found twice on the path (an editable install and a checkout)
            seen.add(point.name)
            point.load()(sub)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="zsim", description="Discrete-event simulation of ZeroMQ (libzmq 4.3.5) queuing.")
    from . import __version__, native

    parser.add_argument("--version", action="version", version=f"zsim {__version__}, {native.describe()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("run", help="simulate one scenario and print its summary")
    p.add_argument("scenario", help="scenario TOML file")
    p.add_argument("--seed", type=seed_arg, default=None, help="random seed (default: scenario.seed or 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--out", metavar="DIR", help="write per-message records and depth time series as Parquet")
    p.add_argument("--report", metavar="DIR", help="write DIR/report.html (self-contained: tables and figures inline) and the "
                   "figures as PNGs: topology, depth over time, latency against send time, drops over time")
    add_set_arg(p)
    add_limit_args(p)
    add_app_args(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("explain", help="simulate one scenario and explain each loss episode and stall in a paragraph")
    p.add_argument("scenario", nargs="?", default=None,
                   help="scenario TOML file (or --sweep DIR --worst METRIC; with --sweep, the sweep file the results came "
                        "from: its folder is where --allow-apps lets the run's app files come from)")
    p.add_argument("--sweep", metavar="DIR", default=None,
                   help="a sweep's results folder: explain one of its runs again (with --worst)")
    p.add_argument("--worst", metavar="METRIC", default=None,
                   help="with --sweep: the run whose METRIC is worst (highest, or lowest for a metric that prefers higher)")
    p.add_argument("--sweep-name", metavar="NAME", default=None, help="with --sweep: which sweep, when DIR holds several")
    p.add_argument("--seed", type=seed_arg, default=None, help="random seed (default: scenario.seed or 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object (episodes with their paragraphs, stalls)")
    add_set_arg(p)
    add_limit_args(p)
    add_app_args(p)
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("export", help="write the scenario as a standalone pyzmq program (one function per process, a thread per "
                       "socket, the counts as JSON at the end)")
    p.add_argument("scenario", help="scenario TOML file")
    p.add_argument("--pyzmq", metavar="OUT.py", required=True, help="the program to write")
    add_set_arg(p)
    p.set_defaults(func=cmd_export)

    add_installed_commands(sub)

    p = sub.add_parser("sweep", help="run a parameter sweep (Spark by default) into Parquet")
    p.add_argument("sweep", help="sweep TOML file")
    p.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    p.add_argument("--engine", choices=("spark", "local", "serial"), default="spark")
    p.add_argument("--out", metavar="DIR", default=None)
    add_jobs_arg(p)
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", help="a Spark setting, e.g. spark.executor.memory=2g (repeatable)")
    p.add_argument("--retry-failed", action="store_true", help="run failed runs again (they are kept, with their error, otherwise)")
    p.add_argument("--max-runs", type=count_arg(0), default=None, metavar="N",
                   help="refuse a plan of more runs (default 100,000; 0: no limit)")
    p.add_argument("--run-timeout", type=seconds_arg(allow_zero=True), default=None, metavar="S",
                   help="wall-clock seconds per run (default: the sweep's run_timeout_s, 600; 0: no limit)")
    p.add_argument("--precision", action="append", metavar="METRIC=HALF_WIDTH",
                   help="after the planned replications, add more at each point until its 95 %% interval of METRIC's mean "
                        "is at most +- HALF_WIDTH, e.g. 'socket.sub.loss_fraction=0.001' (SI units) or "
                        "'socket.sub.latency_p99_s=5%%' (of the mean); repeatable; --max-runs bounds the runs in all")
    p.add_argument("--report", action="store_true", help="write the report (zsim report OUT) when the sweep is done")
    add_app_args(p)
    p.set_defaults(func=_lazy("zsim.sweep.cli", "cmd_sweep"))

    p = sub.add_parser("compare", help="run designs over the same seeded replications and compare them metric by metric",
                       description="Designs: two or more scenario files; one scenario file with --vary PATH=V1,V2 (its variants); "
                                   "or a sweep file (its points). Replication r of every design runs with the same seed; each "
                                   "metric gets every design's mean with its 95 % interval, the paired difference from the first "
                                   "design (the baseline) with its interval, and a verdict.")
    p.add_argument("designs", nargs="+", metavar="DESIGN", help="scenario files, or one scenario file with --vary, or one sweep file")
    p.add_argument("--vary", action="append", metavar="PATH=V1,V2", help="designs are these values of a scenario field, by its "
                   "path as in a sweep axis (repeatable: every combination)")
    p.add_argument("--link", action="append", metavar="PATH=VARIED", help="PATH takes the value of the --vary path VARIED (repeatable)")
    p.add_argument("--set", action="append", metavar="PATH=VALUE", help="set a field in every design (repeatable)")
    p.add_argument("--name", action="append", metavar="NAME", help="the designs' names, one --name per design, in order")
    p.add_argument("--replications", "-n", type=count_arg(1), default=None, metavar="N",
                   help="replications per design (default 10, or the sweep file's)")
    p.add_argument("--seed", type=seed_arg, default=None, metavar="S", help="root seed (default 0, or the sweep file's)")
    p.add_argument("--metric", action="append", metavar="NAME",
                   help="a metric to show, or a glob ('socket.slow.*'); repeatable (default: the metrics that differ beyond noise)")
    p.add_argument("--max-metrics", type=count_arg(1), default=12, metavar="N", help="metrics shown by default (default 12)")
    p.add_argument("--prefer", action="append", metavar="METRIC=lower|higher|none",
                   help="the direction a metric prefers, for its verdict (default: from its name)")
    p.add_argument("--min-effect", type=fraction_arg, default=0.05, metavar="F",
                   help="the smallest relative change of a mean that counts as better or worse (default 0.05: 5 %% of the larger "
                        "mean; 0: any change beyond noise)")
    p.add_argument("--derive", action="append", metavar="NAME=EXPR",
                   help="a metric computed from each run's metrics, e.g. 'loss=socket.sub.dropped / socket.sub.copies' "
                        "(repeatable; as a sweep file's [report.derived])")
    p.add_argument("--precision", action="append", metavar="METRIC=HALF_WIDTH",
                   help="add replications (from --replications) until METRIC's 95 %% interval is at most +- HALF_WIDTH for every "
                        "design's mean and paired difference, e.g. 'socket.sub.loss_fraction=0.001' (SI units) or "
                        "'socket.sub.latency_p99_s=5%%' (of the mean); repeatable; --max-runs bounds it")
    p.add_argument("--engine", choices=("spark", "local", "serial"), default="spark")
    add_jobs_arg(p)
    p.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", help="a Spark setting (repeatable)")
    p.add_argument("--run-timeout", type=seconds_arg(allow_zero=True), default=None, metavar="S",
                   help="wall-clock seconds per run (default 600; 0: no limit)")
    p.add_argument("--max-runs", type=count_arg(0), default=10_000, metavar="N", help="refuse more runs (default 10,000; 0: no limit)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    p.add_argument("--report", metavar="DIR", help="write summary.md, compare.json and one figure per metric into DIR")
    add_app_args(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("report", help="aggregate a sweep's Parquet results into tables and figures")
    p.add_argument("results", help="sweep output directory")
    p.add_argument("--out", metavar="DIR", default=None)
    p.add_argument("--config", metavar="FILE", help="take [report] from this sweep file instead of the one the sweep was run from")
    p.set_defaults(func=_lazy("zsim.sweep.cli", "cmd_report"))

    from .search.cli import add_parser as add_search_parser  # zsim search: its flags live with it

    add_search_parser(sub, count_arg, seconds_arg, add_app_args)
    return parser


def _last_resort(line: str) -> None:
    """The watchdog's last resort (``zsim.limits.LAST_RESORT``): app code that caught every
    interruption still holds the run's thread; say so in one line and end the process."""
    try:
        sys.stderr.write(f"zsim: {one_line(line)}\n")
        sys.stderr.flush()
    finally:
        os._exit(EXIT_USAGE)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.command_line = list(sys.argv[1:] if argv is None else argv)  # what made the files it writes (their headers)
    from . import limits

    previous, limits.LAST_RESORT = limits.LAST_RESORT, _last_resort
    try:
        return _main(args)
    finally:
        limits.LAST_RESORT = previous


#: Characters of an error line: a line that repeats an input of 100,000 characters (a path,
#: a name) keeps its start (the field) and its end (the reason) and says how much it left out
MAX_ERROR_CHARS = 1000


def _line(text: Any) -> str:
    """``text`` as one line (control characters escaped) of at most ``MAX_ERROR_CHARS``."""
    line = one_line(text)
    if len(line) <= MAX_ERROR_CHARS:
        return line
    cut = len(line) - MAX_ERROR_CHARS + 40
    return f"{line[:600]} [... {cut:,} characters ...] {line[600 + cut:]}"


def _main(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args))
    except ConservationError as exc:
        print(f"zsim: internal error (a bug in zsim, please report it): {_line(exc)}", file=sys.stderr)
        return EXIT_FAULT
    except ScenarioError as exc:  # the one line, whatever a name in it holds (control characters escaped)
        print(f"zsim: {_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except EnvironmentFault as exc:
        print(f"zsim: {_line(exc)}", file=sys.stderr)
        return EXIT_FAULT
    except ZsimError as exc:
        print(f"zsim: {_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # the reader went away (``zsim run ... | head``): stop quietly, like cat
        # point stdout at /dev/null so the interpreter's final flush does not fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):  # a stdout without a file descriptor (an embedding, a test)
            pass
        finally:
            os.close(devnull)
        return EXIT_OK
    except FileNotFoundError as exc:
        print(_line(f"zsim: {exc.filename or exc}: no such file"), file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:  # a failing OS call the code did not expect: one line, exit 1 (BrokenPipeError: above)
        where = f"{exc.filename}: " if exc.filename else ""
        print(_line(f"zsim: {where}{exc.strerror or exc}"), file=sys.stderr)
        return EXIT_FAULT
    except Interrupted as exc:  # SIGINT, SIGTERM or SIGHUP where the command cleaned up first (zsim validate)
        print("zsim: interrupted" + (f" ({exc.signal_name})" if exc.signum != signal.SIGINT else ""), file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        print("zsim: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("zsim: out of memory (lower the scenario's size or the run's limits: --max-messages)", file=sys.stderr)
        return EXIT_FAULT
    except Exception as exc:  # a bug in zsim: one line, the traceback on request
        if os.environ.get("ZSIM_TRACEBACK"):
            raise
        print(one_line(f"zsim: internal error (a bug in zsim, please report it with the input): {type(exc).__name__}: {exc}"
                       .splitlines()[0][:500]) + " (ZSIM_TRACEBACK=1 shows where)", file=sys.stderr)
        return EXIT_FAULT


def entry() -> None:  # console_scripts entry point
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
