"""``zsim run FILE --report DIR``: one run as a page a designer can look at.

``DIR/report.html`` is self-contained (tables, and the figures inlined as ``data:`` URIs;
it opens offline) and the figures are also written as PNGs beside it:

* ``topology.png``: processes with their sockets, connections in the direction data
  flows with transport and HWMs, the connections that dropped copies in red;
* ``depth.png``: per direction of data, where its messages waited over time: the pipes
  and, over tcp/ipc, the sending engine's batch, the kernel buffers and the receiving
  engine (``zsim.model.occupancy``), recorded in bounded memory (``series``);
* ``latency.png``: per receiver, latency against send time;
* ``drops.png``: copies dropped over time by pipe and rule;

then the per-entity tables (receivers, senders, sockets, pipes, link directions, drops)
and, first of all, the run's warnings (``zsim.checks``) in a box that cannot be missed.

Use: ``recorder = SeriesRecorder()``, ``result = zsim.runner.run(..., recorder=recorder)``,
``write_report(result, recorder.result, scenario, DIR)``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import plotting
from ..checks import RATE_MIN_BYTES, carries_a_rate, connection_limit, limited_shares
from ..errors import EnvironmentFault
from ..files import atomic_write, cleanup_leftovers, prepare_output_dir, shown_path
from ..metrics import flat_metrics
from ..spec import Scenario
from ..units import human_bits, human_bytes
from . import data, page
from .page import Cell, count, esc, percent, rate, seconds
from .series import MAX_LEVEL_BYTES, RunSeries, SeriesRecorder

__all__ = ["FIGURES", "SeriesRecorder", "write_report"]

#: the figures a report writes, in the order the page shows them
FIGURES = ("topology.png", "depth.png", "latency.png", "drops.png", "network.png")
#: panels per figure (directions, receivers): the rest are in the tables
MAX_PANELS = 12



def _fewer_buckets(series: Any) -> str:
    """Said when the memory budget gave every series fewer buckets than asked."""
    if series is None or series.buckets >= series.buckets_asked:
        return ""
    return (f" ({series.buckets} buckets instead of {series.buckets_asked}: this run has so many pipes and link directions that "
            f"their levels over time were kept coarser to stay within {MAX_LEVEL_BYTES // 2**20} MB)")

def _render(folder: Path, name: str, draw: Callable[[Path], Path]) -> bytes:
    """Draw a figure in the scratch folder (beside the report's files) and read it back; an
    OS error names the figure's place in the report folder."""
    path = folder / name
    try:
        draw(path)
        return path.read_bytes()
    except EnvironmentFault as exc:
        raise EnvironmentFault(str(folder.parent / name), exc.reason) from None
    except OSError as exc:
        raise EnvironmentFault(str(folder.parent / name), f"cannot be written: {exc.strerror or exc}") from None


def _empty_figure(text: str) -> Callable[[Path], Path]:
    def draw(path: Path) -> Path:
        plt = plotting._pyplot()
        fig = plt.figure(figsize=(6.0, 1.0))
        fig.text(0.5, 0.5, text, ha="center", va="center", fontsize=10, wrap=True)
        plotting.plain_text(fig).savefig(path, dpi=110)
        plt.close(fig)
        return path

    return draw


def write_report(result: Any, series: RunSeries | None, scenario: Scenario, out_dir: str | Path, *,
                 command: str | None = None) -> list[Path]:
    """Write ``report.html`` and the figures into ``out_dir``; returns the paths written.

    Every file is written whole or not at all (``atomic_write``): a failure leaves the
    files already in ``out_dir`` as they were.
    """
    out = prepare_output_dir(out_dir, "--report")
    cleanup_leftovers(out, (*FIGURES, "report.html"))  # what a killed report left: its scratch folder, temporary files
    summary = result.summary
    who = f"{summary['scenario']}, seed {summary['seed']}"
    end_s = float(summary["sim_time_s"])
    pngs: dict[str, bytes] = {}
    shown: dict[str, str] = {}  # figure -> the caption's statement when there is nothing to draw
    with tempfile.TemporaryDirectory(prefix=f".zsim-figures-{os.getpid()}-", dir=out) as scratch:
        folder = Path(scratch)
        topo = data.topology(scenario, result)
        pngs["topology.png"] = _render(folder, "topology.png", lambda p: plotting.topology_figure(
            topo, p, title=f"Topology of {summary['scenario']} (seed {summary['seed']}, {seconds(end_s)} simulated)"))

        # every [[fault]]'s intervals (a link down, a loss burst), shaded on each time axis
        faults = [(name, start, end) for name, fault in (summary.get("faults") or {}).items() for start, end in fault["intervals"]]
        panels = data.depth_panels(result, series) if series is not None else []
        if panels:
            width = seconds(series.width_s) if series is not None else "-"
            chosen = panels[:MAX_PANELS]
            more = (f"; {len(panels) - len(chosen)} more directions held fewer messages (all pipes are in the tables)"
                    if len(panels) > len(chosen) else "")
            note = (f"Per direction of data (writer->reader), largest backlog first{more}. Each line: the most messages held in "
                    f"that place within each {width} bucket, shaded down to the fewest; the peaks are exact.")
            pngs["depth.png"] = _render(folder, "depth.png", lambda p: plotting.depth_figure(
                chosen, p, title=f"Where messages wait over time: {who}", note=note, faults=faults))
        else:
            shown["depth.png"] = "No pipe, engine or kernel buffer held a message during the run."

        members = {name: t.name for t in scenario.templates if t.kind == "socket" for name in t.members}
        latency = data.latency_by_receiver(result, end_s, members=members)
        if latency:
            chosen_latency = latency
            more = ""
            if len(latency) > MAX_PANELS:
                chosen_latency = sorted(latency, key=lambda p: (-(p.p99 or 0.0), -p.lost))[:MAX_PANELS]
                chosen_latency.sort(key=lambda p: result.socket_names.index(p.receiver))
                more = f" The {MAX_PANELS} receivers with the highest p99 of {len(latency)}; all are in the receivers table."
            bin_s = seconds(end_s / 200) if end_s > 0 else "-"
            note = (f"Median latency (delivery - send) of the copies sent in each {bin_s} bin, shaded from the fastest to the slowest."
                    " Delivered copies only: the lines on the right axis show the share of copies sent then that never arrived."
                    f"{more}")
            pngs["latency.png"] = _render(folder, "latency.png", lambda p: plotting.latency_figure(
                chosen_latency, p, title=f"Latency against send time, per receiver: {who}", note=note, end_s=end_s, faults=faults))
        else:
            shown["latency.png"] = "No copy was delivered to an application during the run."

        links = data.network_panels(result, series) if series is not None else []
        if links:
            chosen_links = links[:MAX_PANELS]
            more = (f"; {len(links) - len(chosen_links)} more directions were less busy (all are in the network table)"
                    if len(links) > len(chosen_links) else "")
            width = seconds(series.width_s) if series is not None else "-"
            note = (f"Per direction of each [[link]] that carried traffic, busiest first{more}: the share of each {width} bucket "
                    "it spent serializing frames, and the most bytes its queue held in the bucket.")
            network_map = data.network_map(scenario, summary)
            pngs["network.png"] = _render(folder, "network.png", lambda p: plotting.network_figure(
                chosen_links, p, title=f"Network links over time: {who}", note=note, network_map=network_map, faults=faults))
        elif summary.get("network"):
            shown["network.png"] = "No [[link]] carried a frame during the run."
        else:
            shown["network.png"] = "The scenario has no [[link]]: every connection stays on its own host."

        drops = data.drops_over_time(result, end_s, bins=100)
        if drops.lines:
            total = sum(line.total for line in drops.lines)
            note = (f"Copies dropped per {seconds(drops.bin_s)} of simulated time, at the time the rule refused them; "
                    "one line per pipe (or socket, when there was no pipe) and rule.")
            pngs["drops.png"] = _render(folder, "drops.png", lambda p: plotting.drops_figure(
                drops, p, title=f"Copies dropped over time: {who}, {total:,} in all", note=note, faults=faults))
        else:
            refused = sum(int(sender.get("again") or 0) for sender in (summary.get("senders") or {}).values())
            shown["drops.png"] = "No copy was dropped during the run." if not refused else (
                f"No copy was dropped during the run; {refused:,} send{' was' if refused == 1 else 's were'} refused (zmq.Again) "
                "before entering any pipe.")
        for name, text in shown.items():
            pngs[name] = _render(folder, name, _empty_figure(f"{who}: {text}"))
    written = [atomic_write(out / name, pngs[name]) for name in FIGURES]
    html_text = _html(result, scenario, topo, panels, latency, drops, pngs, shown, series, command, links)
    written.append(atomic_write(out / "report.html", html_text))
    return written


# -- the page --------------------------------------------------------------------------------


def _lost(inbound: Mapping[str, Any]) -> int:
    """The copies meant for a receiver that the design lost: dropped, discarded or lost on
    close. Copies still queued when the run ended are not among them: they were on their
    way (the horizon's), unless a backlog was growing (``backlog_at_end``)."""
    return int(inbound["dropped"] + inbound["discarded"] + inbound["lost_on_close"])


def _not_got(inbound: Mapping[str, Any]) -> int:
    """The copies meant for a receiver that it did not get: lost, and still queued at the
    end. The one loss of every page: the receivers table's loss % is this share of the
    copies (``loss_fraction``), and the answer and ``zsim explain`` say the same number,
    with the queued ones said apart."""
    return int(inbound["copies"] - inbound["delivered"] - inbound["forwarded"])


def headline(summary: Mapping[str, Any], scenario: Scenario) -> list[str]:
    """The answer first: per receiver that lost copies or held a growing backlog at the end
    (members of one template together), the share of the copies meant for it that it did
    not get (the receivers table's loss %), where and by which rule they were lost, how
    many were still queued at the end and whether they were on their way or in a growing
    backlog, and its p99; else that every copy arrived (or was on its way when the run
    ended), with the worst p99. Receivers that did not get most come first."""
    member_of = {name: t.name for t in scenario.templates if t.kind == "socket" for name in t.members}
    flags = data.warning_flags(dict(summary))
    groups: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for name, sock in summary["sockets"].items():
        inbound = sock.get("inbound")
        if inbound and inbound["copies"]:
            groups.setdefault(member_of.get(name, name), []).append((name, sock))
    lines: list[tuple[float, str]] = []
    worst_p99: tuple[float, str] | None = None
    in_flight = 0
    for group, members in groups.items():
        for name, sock in members:
            p99 = (sock.get("latency_s") or {}).get("p99")
            if p99 is not None and p99 == p99 and (worst_p99 is None or p99 > worst_p99[0]):
                worst_p99 = (p99, name)

        def who(subset: list[tuple[str, Mapping[str, Any]]], group: str = group, members: list[Any] = members) -> str:
            names = ", ".join(n for n, _ in subset[:3]) + (", ..." if len(subset) > 3 else "")
            return subset[0][0] if len(members) == 1 else f"{len(subset)} of {len(members)} members of {group} ({names})"

        them = "it" if len(members) == 1 else "them"

        def growing(name: str) -> bool:
            return "backlog_at_end" in flags.get(name, [])

        losing = [(name, sock) for name, sock in members
                  if _lost(sock["inbound"]) or (sock["inbound"]["queued_at_end"] and growing(name))]
        losing_names = {name for name, _ in losing}
        in_flight += sum(sock["inbound"]["queued_at_end"] for name, sock in members if name not in losing_names)
        if not losing:
            continue
        missed = sum(_not_got(sock["inbound"]) for _, sock in losing)
        copies = sum(sock["inbound"]["copies"] for _, sock in losing)
        where: dict[str, int] = {}
        for _, sock in losing:
            inbound = sock["inbound"]
            for place, n in inbound["dropped_by"].items():
                where[place] = where.get(place, 0) + n
            for key, label in (("lost_on_close", "lost on close"), ("discarded", "discarded")):
                if inbound[key]:
                    where[label] = where.get(label, 0) + inbound[key]
        parts = [f"{n:,} {p if p.endswith(('close', 'discarded')) else 'dropped at ' + p}"
                 for p, n in sorted(where.items(), key=lambda item: -item[1])[:3]]
        queued = sum(sock["inbound"]["queued_at_end"] for _, sock in losing)
        held = sum(sock["inbound"]["queued_at_end"] for name, sock in losing if growing(name))
        if held:
            parts.append(f"{queued:,} still queued when the run ended, in a backlog that was still growing (backlog_at_end): "
                         "how many it loses depends on how long the run goes")
        elif queued:
            parts.append(f"{queued:,} still queued when the run ended (on their way: the horizon's)")
        p99s = [float(v) for v in ((sock.get("latency_s") or {}).get("p99") for _, sock in losing) if v is not None and v == v]
        latency = f"; p99 latency {seconds(max(p99s))}" if p99s else "; nothing delivered"
        lines.append((missed / copies, f"{who(losing)} did not get {percent(missed / copies)} of the copies meant for "
                                       f"{them} ({missed:,} of {copies:,}): {'; '.join(parts)}{latency}."))
    refused = refusal_lines(summary)
    if not lines:
        copies = sum(sock["inbound"]["copies"] for members in groups.values() for _, sock in members)
        worst = f"; the worst p99 latency is {seconds(worst_p99[0])}, at {worst_p99[1]}" if worst_p99 else ""
        receivers = sum(map(len, groups.values()))
        way = (f", or was on its way when the run ended ({in_flight:,} still queued: the horizon's, not losses; the receivers "
               "table's loss % counts them)" if in_flight else "")
        return [*refused, f"Every copy meant for a receiver reached it{way} ({copies:,} copies to {receivers:,} "
                          f"receiver{'s' if receivers != 1 else ''}){worst}.", *link_lines(summary),
                *causal_lines(summary, member_of)]
    return (refused + [text for _, text in sorted(lines, key=lambda item: -item[0])] + link_lines(summary)
            + causal_lines(summary, member_of))


def link_lines(summary: Mapping[str, Any]) -> list[str]:
    """Per [[link]] direction offered more than it carries (``zsim.checks.oversubscribed``),
    the most offered first: what its writers offered against its capacity, and who set the
    pace. The receivers' lines say what they did not get; this says why."""
    from ..checks import link_pace, offered_against_capacity, oversubscribed

    found = []
    for link, directions in (summary.get("network") or {}).items():
        for direction, carried in directions.items():
            if oversubscribed(carried):
                offered = offered_against_capacity(link, direction, carried)
                found.append((carried["offered_utilisation"], f"{offered[0].upper()}{offered[1:]} by the writers of the "
                                                              f"connections crossing it: {link_pace(carried)} (link_oversubscribed)."))
    return [text for _, text in sorted(found, key=lambda item: -item[0])]


def refusal_lines(summary: Mapping[str, Any]) -> list[str]:
    """Per ``[[send]]`` whose sends were refused with zmq.Again (DONTWAIT, SNDTIMEO), the
    most refused first: how many of its attempts, and that those messages were never sent
    (no copy's fate, so the receivers' losses do not count them)."""
    found = []
    for name, sender in (summary.get("senders") or {}).items():
        again, attempts = int(sender.get("again") or 0), int(sender.get("attempts") or 0)
        if again and attempts:
            found.append((again / attempts, f"{name} had {again:,} of its {attempts:,} sends refused ({100 * again / attempts:.3g} %, "
                                            f"zmq.Again): {sender['socket']} had no pipe with room, so those messages were "
                                            "never sent."))
    return [text for _, text in sorted(found, key=lambda item: -item[0])]


def causal_lines(summary: Mapping[str, Any], member_of: Mapping[str, str]) -> list[str]:
    """Request -> reply and source -> sink times (``zsim.results.causal_times``), the
    slowest p99 first: one line per requester or source -> sink, members of one template
    together (their worst p99 named). Over the requests answered and the chains that ended
    only; how many were still on their way when the run ended is said after them."""
    found: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    sources: dict[str, set[str]] = {}
    for name, sock in summary["sockets"].items():
        if sock.get("rtt_s"):
            key = f"request -> reply at {member_of.get(name, name)}"
            found.setdefault(key, []).append((name, sock["rtt_s"]))
            sources.setdefault(key, set()).add(name)
        for source, times in (sock.get("e2e_s") or {}).items():
            key = f"end to end {member_of.get(source, source)} -> {member_of.get(name, name)}"
            found.setdefault(key, []).append((f"{source} -> {name}", times))
            if not summary["sockets"].get(source, {}).get("rtt_s"):  # a requester's: said on its request -> reply line
                sources.setdefault(key, set()).add(source)
    lines: list[tuple[float, str]] = []
    for what, entries in found.items():
        count = sum(int(times["count"]) for _, times in entries)
        worst_name, worst = max(entries, key=lambda entry: entry[1]["p99"])
        detail = f" (the worst, {worst_name})" if len(entries) > 1 else ""
        pending = in_flight(summary, sources.get(what, ()), requests=what.startswith("request"))
        lines.append((worst["p99"], f"{what[0].upper()}{what[1:]}: p50 {seconds(worst['p50'])}, p99 {seconds(worst['p99'])}"
                                    f"{detail} over {count:,} {'answered' if what.startswith('request') else 'that arrived'}"
                                    f"{pending}."))
    return [text for _, text in sorted(lines, key=lambda item: -item[0])[:4]]


def in_flight(summary: Mapping[str, Any], sources: Iterable[str], *, requests: bool) -> str:
    """``; 3 still in flight when the run ended``: the chains ``sources`` started (their
    requests, or their messages on the way to a sink) that had not finished when the run
    ended (``chains_at_end``, ``zsim.results.causal_times``); empty when none."""
    names = sorted(set(sources))
    count = sum(int((summary["sockets"].get(name, {}).get("chains_at_end") or {}).get("in_flight", 0)) for name in names)
    if not count:
        return ""
    if requests:
        return f"; {count:,} more still in flight when the run ended (not in these times)"
    sent_at = names[0] if len(names) == 1 else f"{len(names)} sources"
    return f"; {count:,} sent at {sent_at} still on the way when the run ended (not in these times)"


def _answer(summary: dict[str, Any], scenario: Scenario) -> str:
    lines = headline(summary, scenario)
    lossless = lines[0].startswith("Every copy")
    return (f'<div class="{"calm" if lossless else "answer"}" id="answer"><h2>The answer</h2><ul>'
            + "".join(f"<li>{esc(line)}</li>" for line in lines) + "</ul></div>")


def _warnings(summary: dict[str, Any], scenario: Scenario) -> str:
    from ..checks import fold_warnings

    warnings = fold_warnings(summary.get("warnings") or [], scenario)
    if not warnings:
        # the check list, not a verdict: copies can be lost in a run that warns of nothing
        links = ", no link offered more than it carries" if summary.get("network") else ""
        return ('<p class="note" id="warnings">The run raised no warning: no receiver offered more than it can take'
                f"{links}, no backlog left at the end, latency and loss settled, every sender reached its rate, every "
                "subscription matches a topic sent.</p>")
    items = "".join(f"<li><b>{esc(w['path'])}</b> <code>{esc(w['code'])}</code>: {esc(w['message'])}</li>" for w in warnings)
    if any(w["code"] in HORIZON_CODES for w in warnings):
        why = "Some figures below describe this run's horizon or setup, not a steady state of the design."
    else:  # contention, a full link or buffer, a sender short of its rate, a subscription that matches nothing
        why = ("No figure below is an artefact of the horizon: these name limits the design ran into, or parts of the file "
               "that may not be meant.")
    return (f'<div class="warnings" id="warnings"><h2>{len(warnings)} warning{"s" if len(warnings) != 1 else ""}: read these before '
            f"the numbers</h2><p>{why}</p><ul>{items}</ul></div>")


#: warnings that make a run's figures describe its horizon or setup rather than a steady state
HORIZON_CODES = frozenset({"overloaded", "backlog_at_end", "latency_not_settled", "loss_not_settled", "starts_after_horizon"})


def _run_table(summary: dict[str, Any], scenario: Scenario, command: str | None) -> str:
    until = scenario.until_s
    rows: list[tuple[str, str]] = [
        ("scenario", f"{summary['scenario']} ({shown_path(scenario.source)})"),
        ("seed", str(summary["seed"])),
        ("profile", str(summary["profile"])),
        ("horizon", f"{until:g} s (scenario.until_s)" if until is not None else "none: until no event is left"),
        ("simulated", f"{seconds(summary['sim_time_s'])} in {summary['wall_s']:.2f} s wall-clock time"),
        ("messages", f"{summary['ledger']['sent']:,} sent, {summary['ledger']['copies']:,} copies"),
        ("zsim", f"{summary['versions']['zsim']} (models libzmq {summary['versions']['models_libzmq']}), scenario digest "
                 f"{summary['scenario_digest'][:16]}"),
    ]
    if command:
        rows.append(("command", command))
    return page.table([], (([Cell(k), Cell(v)], False) for k, v in rows))


def _receivers(summary: dict[str, Any], load: dict[str, Any], flags: dict[str, list[str]]) -> str:
    rows = []
    for name, sock in summary["sockets"].items():
        inbound = sock.get("inbound")
        if not inbound:
            continue
        lat = sock.get("latency_s") or {}
        util = load.get(f"socket.{name}.offered_utilisation")
        where = "; ".join(f"{n:,} at {w}" for w, n in inbound["dropped_by"].items())
        # red: copies the design lost; copies still in flight at the end are the horizon's
        bad_loss = inbound["dropped"] + inbound["lost_on_close"] + inbound["discarded"] > 0 or "backlog_at_end" in flags.get(name, [])
        rows.append(([
            Cell(name), Cell(sock["type"]), Cell(count(inbound["copies"]), True),
            Cell(count(inbound["delivered"] + inbound["forwarded"]), True),
            Cell(count(inbound["dropped"]), True, inbound["dropped"] > 0),
            Cell(count(inbound["lost_on_close"] + inbound["discarded"]), True),
            Cell(count(inbound["queued_at_end"]), True, "backlog_at_end" in flags.get(name, [])),
            Cell(percent(inbound["loss_fraction"]), True, bad_loss),
            Cell("-" if util is None or util != util else f"{util:.2f}", True, "overloaded" in flags.get(name, [])),
            Cell(seconds(lat.get("p50")), True), Cell(seconds(lat.get("p99")), True), Cell(seconds(lat.get("p99_9")), True),
            Cell(seconds(lat.get("max")), True), Cell(where or "-"),
            Cell(plotting.flag_text(flags.get(name, [])) or "-", bad=bool(flags.get(name))),
        ], bool(flags.get(name))))
    if not rows:
        return "<p>No socket received copies.</p>"
    head = ["receiver", "type", "copies meant for it", "taken (delivered + forwarded)", "dropped", "lost or discarded", "queued at end",
            "loss %", "offered utilisation", "p50", "p99", "p99.9", "max", "dropped where (pipe: rule)", "warnings"]
    return (page.table(head, rows) + '<p class="note">loss % counts every copy meant for the receiver that it did not get: dropped, '
            "lost, discarded, and still queued at the end. Offered utilisation: copies offered per second x mean service time / "
            "share of time not paused (above 1 it cannot keep up). Latency: delivered copies only.</p>")


def _senders(summary: dict[str, Any], flags: dict[str, list[str]]) -> str:
    senders = summary.get("senders") or {}
    if not senders:
        return ""
    rows = []
    for name, sender in senders.items():
        sock_flags = [f for f in flags.get(sender["socket"], []) if f == "rate_not_achieved"]
        rows.append(([
            Cell(name), Cell(sender["socket"]), Cell(count(sender["sent"]), True),
            Cell(count(sender["again"] + sender["unroutable"]), True), Cell(rate(sender.get("requested_rate_per_s")), True),
            Cell(rate(sender.get("achieved_rate_per_s")) if sender.get("active_s") else "-", True, bool(sock_flags)),
            Cell(seconds(sender.get("blocked_s")), True), Cell(seconds(sender.get("finished_at_s")), True),
        ], bool(sock_flags)))
    return "<h3>Senders</h3>" + page.table(
        ["sender", "socket", "sent", "EAGAIN / unroutable", "asked", "achieved", "blocked in send", "finished at"], rows)


def _sockets(summary: dict[str, Any]) -> str:
    rows = []
    for name, sock in summary["sockets"].items():
        rows.append(([
            Cell(name), Cell(sock["type"]), Cell(sock["process"]), Cell(count(sock["sent"]), True),
            Cell(count(sock["send_again"] + sock["send_unroutable"]), True), Cell(count(sock["received"]), True),
            Cell(count(sock["dropped"]), True, sock["dropped"] > 0), Cell(count(sock["discarded"]), True),
            Cell(count(sock["lost_on_close"]), True), Cell(seconds(sock["blocked_s"]), True),
        ], False))
    return page.table(["socket", "type", "process", "sent", "EAGAIN / unroutable", "received", "dropped (as writer)", "discarded",
                       "lost on close", "blocked"], rows)


def _carried(result: Any) -> np.ndarray:
    """Per pipe index: the message copies whose fate the ledger recorded on it."""
    pipe = result.messages["pipe"].astype(np.int64)
    return np.bincount(pipe[pipe >= 0], minlength=len(result.summary["pipes"]))


_KIND_ORDER = {"send": 0, "inproc": 0, "recv": 1}


def _pipes(result: Any) -> str:
    summary = result.summary
    carried = _carried(result)
    rows = []
    idle = 0
    order = sorted(range(len(summary["pipes"])), key=lambda i: (f"{summary['pipes'][i]['from']}->{summary['pipes'][i]['to']}",
                                                                 _KIND_ORDER.get(summary["pipes"][i]["kind"], 2), i))
    # a copy's fate is recorded on the last pipe it reached (a tcp copy: the reader's recv
    # pipe), so a direction carried copies when any of its pipes has one: its send pipe too
    directions = {(p["from"], p["to"]) for p, n in zip(summary["pipes"], carried.tolist(), strict=True) if n}
    for index in order:
        pipe = summary["pipes"][index]
        if (pipe["from"], pipe["to"]) not in directions and pipe["dropped"] == 0:
            idle += 1
            continue
        by_rule = ", ".join(f"{rule} {n:,}" for rule, n in (pipe.get("dropped_by_rule") or {}).items())
        rows.append(([
            Cell(pipe["name"]), Cell(pipe["kind"]), Cell("none" if pipe["hwm"] <= 0 else count(pipe["hwm"]), True),
            Cell(count(pipe["written"]), True), Cell(count(pipe["read"]), True), Cell(count(pipe["max_depth"]), True,
                                                                                   0 < pipe["hwm"] <= pipe["max_depth"]),
            Cell(f"{pipe['mean_depth']:.3g}", True), Cell(count(pipe.get("p99_depth", 0)), True),
            Cell(human_bytes(pipe.get("max_bytes", 0)), True),
            Cell(count(pipe["dropped"]), True, pipe["dropped"] > 0), Cell(by_rule or "-"),
            Cell(count(pipe["depth_at_end"]), True),
        ], pipe["dropped"] > 0))
    note = (f'<p class="note">Sorted by direction (writer->reader). Left out: {idle} pipe{"s" if idle != 1 else ""} that carried no '
            "message copy (the subscriber->publisher pipes of PUB/SUB carry only subscriptions). Written and read count "
            "subscriptions too; kind: "
            "send = the writer's pipe to its engine, recv = the reader's pipe from its engine.</p>") if idle else ""
    note += ('<p class="note">Depths in messages. p99 depth: the level the pipe held at most for 99 % of the run\'s time '
             "(time-weighted: what a buffer sized to it holds almost always); max bytes: the most payload it held at once.</p>")
    return page.table(["pipe", "kind", "HWM", "written", "read", "max depth", "mean depth", "p99 depth", "max bytes", "dropped",
                       "dropped by rule", "at end"], rows) + note


def _links(result: Any) -> str:
    summary = result.summary
    carried = _carried(result)
    with_copies = {f"{pipe['from']}->{pipe['to']}" for pipe, n in zip(summary["pipes"], carried.tolist(), strict=True) if n}
    rows = []
    left_out = 0
    for link in sorted(summary.get("links") or [], key=lambda link: link["name"]):
        transport = link["transport"] + (f" #{link['number']}" if link["number"] > 1 else "") + (" (broken)" if link["broken"] else "")
        for name, level in sorted((link.get("directions") or {}).items()):
            km, kb = level["kernel_messages"], level["kernel_bytes"]
            if name not in with_copies:
                left_out += 1
                continue
            rows.append(([
                Cell(name), Cell(transport), Cell(f"{count(km['max'])} / {page.bytes_text(kb['max'])}", True),
                Cell(f"{count(km['mean'])} / {page.bytes_text(kb['mean'])}", True),
                Cell(f"{count(km['at_end'])} / {page.bytes_text(kb['at_end'])}", True),
                Cell(f"{count(level['sender_engine_messages']['max'])} / {page.bytes_text(level['sender_engine_bytes']['max'])}", True),
                Cell(f"{count(level['receiver_engine_messages']['max'])} / {page.bytes_text(level['receiver_engine_bytes']['max'])}",
                     True),
            ], False))
    if not rows:
        return ""
    return ("<h3>Link directions (tcp, ipc)</h3>" + page.table(
        ["direction (writer->reader)", "transport", "kernel max", "kernel time-average", "kernel at end", "writer's out batch max",
         "reader's engine max"], rows) + '<p class="note">messages / bytes. Kernel: the writer\'s send buffer and the reader\'s '
        "receive buffer together. Out batch: written by the writer's engine, not yet in the kernel. Reader's engine: decoded, "
        f"refused by its full pipe. Left out: {left_out} direction{'s' if left_out != 1 else ''} that carried no message copy "
        "(subscriptions only).</p>")


def _drops_table(drops: data.Drops) -> str:
    if not drops.lines:
        return ""
    rows = [([Cell(line.pipe or line.label.rsplit(":", 1)[0]), Cell(line.rule), Cell(count(line.total), True, True),
              Cell(seconds(line.first_s), True), Cell(seconds(line.last_s), True)], False) for line in drops.lines]
    return page.table(["pipe (or socket)", "rule", "copies dropped", "first", "last"], rows)


def _processes(summary: dict[str, Any]) -> str:
    lines = []
    for name, proc in (summary.get("processes") or {}).items():
        if proc["term_blocked"]:
            lines.append(f"process {name}: zmq_ctx_term still blocked at the end (LINGER -1 with messages the peer never took)")
        elif proc["exit_completed_s"] is not None and proc["exit_started_s"] is not None:
            lines.append(f"process {name}: exit at {seconds(proc['exit_started_s'])}, context terminated at "
                         f"{seconds(proc['exit_completed_s'])}")
        if proc["crashed_s"] is not None:
            lines.append(f"process {name}: crashed at {seconds(proc['crashed_s'])}")
    if not lines:
        return ""
    return "<h3>Processes</h3><ul>" + "".join(f"<li>{esc(line)}</li>" for line in lines) + "</ul>"


def _hosts(summary: dict[str, Any]) -> str:
    """Per [[host]]: its cores, its processes, and how much CPU they used and waited for."""
    hosts = summary.get("hosts") or {}
    if not hosts:
        return ""
    # which machine each host is, when one is not the run's profile ([[host]] profile)
    kinds = any(host.get("profile", summary.get("profile")) != summary.get("profile") for host in hosts.values())
    rows = []
    for name, host in hosts.items():
        machine = host.get("machine")
        threads = (machine or {}).get("threads", {}).values()
        used = sum(t["cpu_s"] for t in threads)
        waited = sum(t["waited_s"] for t in threads)
        kind = [str(host.get("profile", ""))] if kinds else []
        rows.append(([name, *kind, f"{host['cores']}" if host["cores"] else "a core per thread", ", ".join(host["processes"]),
                      seconds(used) if machine else "", seconds(waited) if machine else ""], bool(waited and waited > 0.1 * used)))
    return "<h3>Hosts</h3>" + page.table(["host", *(["machine (profile)"] if kinds else []), "cores", "processes", "CPU used",
                                          "waited for a core"], rows)


def _network_section(summary: Mapping[str, Any], links: Sequence[data.NetworkPanel], series: RunSeries | None,
                     fig: Callable[[str, str, str, str], str], name: str) -> list[str]:
    """With [[link]]s: each direction's busy share and queue over time, and a table per direction
    and per connection (the same numbers as ``zsim run``'s two network tables)."""
    network = summary.get("network")
    if not network:
        return []
    rows: list[tuple[list[Cell | str], bool]] = []
    connections: list[tuple[list[Cell | str], bool]] = []
    for link, directions in network.items():
        for direction, carried in directions.items():
            numbers = [f"{carried['bandwidth_bps'] / 1e6:.4g} Mbit/s", seconds(carried["latency_s"]), percent(carried["utilisation"]),
                       percent(carried["active_utilisation"]), human_bits(carried["goodput_bps"]),
                       human_bytes(carried["max_queue_bytes"]), count(carried["queue_drops"]),
                       count(carried.get("local_drops", 0)), count(carried["loss_drops"]), count(carried["retransmits"])]
            rows.append(([f"{link} {direction}", *(Cell(n, True) for n in numbers)], bool(carried["queue_drops"] or carried["loss_drops"])))
            for conn, tcp in carried["connections"].items():
                if not tcp["bytes"]:
                    continue
                # a few bytes (subscriptions) have no rate: the bytes carried, no share of its time
                rated = carries_a_rate(tcp)
                numbers = [human_bits(tcp["throughput_bps"]) if rated else f"{human_bytes(tcp['bytes'])} only",
                           seconds(tcp["rtt_s"]), seconds(tcp["max_rtt_s"]),
                           human_bytes(tcp["max_cwnd_bytes"]), human_bytes(tcp["max_sndbuf_bytes"]),
                           *((percent(share) for share in limited_shares(tcp)) if rated else ("-", "-"))]
                connections.append(([conn, f"{link} {direction}", *(Cell(n, True) for n in numbers)],
                                    connection_limit(carried, tcp) is not None))
    width = seconds(series.width_s) if series is not None else "-"
    return [
        '<h2 id="network">Network links</h2>',
        fig("network.png", f"network links over time, {name}",
            f"Per direction of each [[link]]: the share of each {width} bucket it spent serializing frames (left axis) and the "
            "most bytes its queue held in the bucket (right axis, its limit dotted); drops at the queue and packets lost on the "
            f"way are marked on the time axis. {min(len(links), MAX_PANELS)} of {len(links)} directions that carried traffic, "
            "busiest first.", "network-figure"),
        page.table(["link direction", "rate", "one way", "busy (run)", "busy (active)", "goodput", "max queue", "queue drops",
                    "refused", "lost", "resent"], rows),
        '<p class="note">Busy (active): over the span from its first frame to its last. Refused: of the queue drops, those '
        "in skbs the sending host's own queue refused whole, which TCP keeps and sends later, slowing down without counting "
        'a loss (local congestion). Red rows dropped or lost packets.</p>',
        page.table(["tcp connection", "over", "throughput", "rtt mean", "rtt max", "largest cwnd", "send buffer",
                    "rwnd-limited", "sndbuf-limited"], connections),
        '<p class="note">Throughput: payload acknowledged per second while the connection had data to send; a connection '
        f"that carried less than an initial window ({RATE_MIN_BYTES:,} bytes: subscriptions, a few small requests) shows "
        "the bytes it carried instead, and no share of its time. Rtt: a segment\'s "
        "send to its ACK, the link's queue included. Send buffer: the most payload it could hold (autotuned unless sndbuf is "
        "set). Red rows: the receiver's window or the send buffer held the connection back half the time it had data to "
        "send, on a link that did not run at its capacity (the sndbuf_limited and window_limited warnings).</p>",
    ]


def _html(result: Any, scenario: Scenario, topo: data.Topology, panels: Sequence[data.DepthPanel],
          latency: Sequence[data.LatencyPanel], drops: data.Drops, pngs: dict[str, bytes], shown: dict[str, str],
          series: RunSeries | None, command: str | None, links: Sequence[data.NetworkPanel] = ()) -> str:
    summary = result.summary
    flags = data.warning_flags(summary)
    load = flat_metrics(summary, scenario=scenario)
    name = summary["scenario"]
    who = f"{name}, seed {summary['seed']}"

    def fig(file: str, alt: str, caption: str, anchor: str) -> str:
        if file in shown:
            return f'<p id="{anchor}" class="calm">{esc(who)}: {esc(shown[file])}</p>'
        return page.figure(pngs[file], alt, caption + f' (also <code>{esc(file)}</code> beside this page)', anchor)

    ledger = summary["ledger"]
    from ..explain import explain

    story = explain(result, series, scenario)
    paragraphs = [f"<p>{esc(text)}</p>" for text in story.paragraphs()]
    if story.more_episodes:
        paragraphs.append(f"<p>... and {story.more_episodes} more loss episodes (the largest {len(story.episodes)} are above).</p>")
    lead = story.no_loss()
    if lead is not None:
        paragraphs.insert(0, f"<p>{esc(lead)}</p>")
    paragraphs += [f"<p>{esc(text)}</p>" for text in story.refusal_paragraphs()]
    paragraphs += [f"<p>{esc(stall)}</p>" for stall in story.stalls]
    body = [
        f"<h1>zsim run report: {esc(name)}</h1>",
        f'<p class="description">{esc(scenario.description)}</p>' if scenario.description else "",
        "<nav>" + "".join(f'<a href="#{anchor}">{label}</a>' for anchor, label in (
            ("answer", "answer"), ("warnings", "warnings"), ("run", "run"), ("explain", "what happened"), ("topology", "topology"),
            ("receivers", "receivers"), ("depth", "depth"), ("pipes", "pipes"),
            *((("network", "network"),) if summary.get("network") else ()),
            ("latency", "latency"), ("drops", "drops"))) + "</nav>",
        _answer(summary, scenario),
        _warnings(summary, scenario),
        '<h2 id="run">The run</h2>',
        _run_table(summary, scenario, command),
        f"<p>All copies pooled: {ledger['delivered']:,} delivered, {ledger['forwarded']:,} forwarded by proxies or stages, "
        f"{ledger['dropped']:,} dropped, {ledger['discarded']:,} discarded, {ledger['lost_on_close']:,} lost on close, "
        f"{ledger['queued_at_end']:,} still queued at the end, of {ledger['copies']:,} copies.</p>",
        '<h2 id="explain">What happened: loss episodes and stalls</h2>',
        '<p class="note">The same as <code>zsim explain</code>: each statement is read off the run (the ledger, the counters, the '
        "levels recorded over time).</p>",
        *paragraphs,
        '<h2 id="topology-section">Topology</h2>',
        fig("topology.png", f"topology of {name}",
            "Processes and their sockets; arrows point the way data flows, labelled with transport and HWMs. Red: the connection "
            "dropped copies (count on it), or the socket has warnings (in red under it).", "topology"),
        '<h2 id="receivers">Receivers, senders, sockets</h2>',
        _receivers(summary, load, flags),
        _senders(summary, flags),
        "<h3>Sockets</h3>",
        _sockets(summary),
        _processes(summary),
        _hosts(summary),
        '<h2 id="depth-section">Where messages wait</h2>',
        fig("depth.png", f"depth over time per direction of data, {name}",
            f"Per direction of data (writer->reader): messages in the writer's pipe, its engine's unwritten batch, the kernel "
            f"buffers, the reader's engine and the reader's pipe, over simulated time. Recorded in buckets of "
            f"{seconds(series.width_s) if series else '-'}{_fewer_buckets(series)}: the line is the most held in each bucket, the "
            f"band goes down to the "
            f"fewest. {min(len(panels), MAX_PANELS)} of {len(panels)} directions that held a message, largest backlog first. A pipe "
            "can drop below its HWM: its writer counts the messages the reader took only when the reader reports them, every LWM "
            "= (HWM + 1) / 2 reads (pipe_t::check_hwm), so the writer's view of the depth lags the depth drawn here.",
            "depth"),
        '<h2 id="pipes">Pipes and link directions</h2>',
        _pipes(result),
        _links(result),
        *_network_section(summary, links, series, fig, name),
        '<h2 id="latency-section">Latency</h2>',
        fig("latency.png", f"latency against send time per receiver, {name}",
            "Per receiver: median latency (delivery time - send time) of the copies sent in each bin, shaded from the fastest to "
            "the slowest. Only delivered copies have a latency: a receiver that lost or still holds copies would look faster than "
            "it is, so the right axis shows, per send-time bin, the share of copies it lost (red) and the share still queued when "
            "the run ended (dashed). Red title: the run has warnings about this receiver.", "latency"),
        '<h2 id="drops">Drops</h2>',
        fig("drops.png", f"copies dropped over time by pipe and rule, {name}",
            "Copies dropped per time bin, one line per pipe and rule (hwm: the pipe was full; not_subscribed_yet: the "
            "subscription had not arrived; ...).", "drops-figure"),
        _drops_table(drops),
        f'<p class="note">zsim {esc(summary["versions"]["zsim"])}, Python {esc(summary["versions"]["python"])}, SimPy '
        f'{esc(summary["versions"]["simpy"])}, numpy {esc(summary["versions"]["numpy"])}. The same scenario and seed give the same '
        "numbers and figures; only the wall-clock time differs.</p>",
    ]
    return page.page(f"zsim run report: {name} (seed {summary['seed']})", [part for part in body if part])
