"""Warnings: models that are valid but almost surely not what the user meant, and results
that look like answers but are artefacts of the run.

Each warning is ``{"code", "path", "message"}``: ``code`` is stable (tests and sweeps
count by it), ``path`` names the scenario field or entity it is about, ``message`` says
what is wrong and what to do. ``zsim run`` prints them after its table, ``--json`` lists
them under ``warnings``.

Static checks read the scenario only (a SUB that subscribes to nothing, a subscription
that matches no topic sent, a workload that starts after the horizon); the others read a
run's summary (a receiver offered more work than it can do, a backlog still queued at the
end, a receiver's latency or loss that has not settled by the end (``zsim.steady``), a
sender that did not reach its requested rate).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .socket_types import DIST, TYPES
from .spec import Scenario, workload_label

#: A sender below this share of its requested rate is reported.
ACHIEVED_RATE_SHARE = 0.95
#: A receiver with at least this share of its copies still queued at the end is reported.
BACKLOG_SHARE = 0.10
#: A thread is reported when it waited for a core at least this share of its own CPU
#: time, and the waits were long enough to matter: on average at least what waking an
#: idle I/O thread costs this machine (the profile's ``io_wake_s``; at least
#: ``CPU_WAIT_MIN_S``) each time it ran, or in all at least ``CPU_WAIT_SPAN_SHARE`` of the
#: run. Below both, each wait is shorter than the machine's own wake-up and all of them a
#: sliver of the run (with the shipped profile every run shares 2 cores, and a sender that
#: waited 3 us a message, 0.1 % of a quiet run, is not an answer); a thread slowed by short
#: waits on every burst (many tiny sends on one shared core) still adds up to the span rule.
CPU_WAIT_SHARE = 0.05
CPU_WAIT_MIN_S = 1e-6
CPU_WAIT_SPAN_SHARE = 0.05
#: A ``cpu_contention`` warning says how much of the CPU was spin when at least this share
#: of all the threads' CPU time spun the end of precise waits (the workloads' ``wait_spin_s``):
#: in a program that sleeps instead, that CPU is not used.
CPU_SPIN_SHARE = 0.2
#: Offered utilisation (arrival rate x mean service / share of time not paused) at or
#: above this is reported: the receiver cannot keep up in steady state.
UTILISATION = 1.0
#: A link direction busy at least this share of the span it carried traffic, with packets
#: dropped at its full queue, is reported as saturated (docs/model.md, "Links").
LINK_SATURATED = 0.9
#: A link direction is reported as oversubscribed (``link_oversubscribed``) when its writers
#: offered it more than this many standard errors above its capacity: offered utilisation >
#: 1 + ``OVERSUBSCRIBED_SIGMAS`` x the relative standard error the offered bytes would have
#: had the same copies come at random (Poisson: sqrt(sum of squared sizes) / sum of sizes,
#: ``offered_noise``; 3 / sqrt(N) for N copies of one size). A sender offering exactly the
#: link's rate at random crosses it in about 1 run in 1,000; a paced one (rate_per_s) counts
#: its copies nearly exactly, so the margin only asks for a few more. 1 itself is already
#: beyond the capacity, not at it: the offered bytes are the ZMTP stream's, and the wire adds
#: 66 bytes of TCP/IP and Ethernet headers to every segment (4.6 % of a full 1,448-byte one).
OVERSUBSCRIBED_SIGMAS = 3.0
#: the fewest copies whose rate ``link_oversubscribed`` trusts (as ``overloaded``'s 10)
OVERSUBSCRIBED_MIN_COPIES = 10
#: A connection over a link is reported as window-limited when the receiver's window held
#: it back at least this share of the time it had data to send, on a direction that did not
#: run at its capacity (``connection_limit``; send-buffer-limited likewise, when its own send
#: buffer did).
WINDOW_LIMITED_SHARE = 0.5


def _warning(code: str, path: str, message: str) -> dict[str, str]:
    return {"code": code, "path": path, "message": message}


_PATH_NAME = re.compile(r"^(\w+)\[([^\]]+)\]")


def _thread_name(kind: str, name: str) -> str:
    """The thread ``[machine] cores`` gives a process (its I/O thread, ``io.reader3``) or a
    workload (its own, ``recv.sub3``), from the member's name or the template's pattern."""
    if kind == "process":
        return f"io.{name}"
    return name if name.startswith(kind + ".") else f"{kind}.{name}"


def fold_warnings(warnings: Sequence[Mapping[str, Any]], scenario: Scenario) -> list[dict[str, Any]]:
    """The warnings as a reader takes them: those of one code about members of one template
    become one entry (``members``: how many warned, of how many; ``names``: which) whose
    message is the members' messages merged (``merge_messages``: "waited 5.16 ms .. 5.78 ms
    for a core"), or, where they differ in more than their numbers, the first member's, named.
    ``summary["warnings"]`` keeps one per member (machine-readable, counted by sweeps);
    ``zsim run`` and the run report show these."""
    member_of: dict[tuple[str, str], Any] = {}
    for template in scenario.templates:
        for name in template.members:
            member_of[(template.kind, name)] = template
            if name.startswith(template.kind + "."):  # a workload's path shows "recv[in1]" for "recv.in1"
                member_of[(template.kind, name[len(template.kind) + 1:])] = template
            # with [machine] cores, each member has a thread: a process its I/O thread
            # ("io.reader3"), a workload its own ("recv.sub3")
            if template.kind in ("process", "send", "recv"):
                member_of[("thread", _thread_name(template.kind, name))] = template
    folded: list[dict[str, Any]] = []
    groups: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for warning in warnings:
        found = _PATH_NAME.match(str(warning["path"]))
        owner = member_of.get((found.group(1), found.group(2))) if found else None
        if owner is None or found is None:  # not about a member of a template
            folded.append(dict(warning))
            continue
        kind = found.group(1)
        key = (str(warning["code"]), kind, owner.kind, owner.name)
        group = groups.get(key)
        if group is None:
            rest = str(warning["path"])[found.end():]
            # a member's name as the path shows it, as a pattern
            if kind == "thread":
                pattern = _thread_name(owner.kind, owner.pattern)
            elif owner.pattern.startswith(owner.kind + ".") and not found.group(2).startswith(owner.kind + "."):
                pattern = owner.pattern[len(owner.kind) + 1:]  # "recv[in1]" of the workload "recv.in{i+1}"
            else:
                pattern = owner.pattern
            label = f"thread[{pattern}]" if kind == "thread" else owner.label
            group = {"code": warning["code"], "path": f"{label}{rest}", "message": warning["message"],
                     "members": 0, "of": len(owner.members), "names": [], "messages": [], "pattern": pattern}
            groups[key] = group
            folded.append(group)
        group["members"] += 1
        group["names"].append(found.group(2))
        group["messages"].append(str(warning["message"]))
    for group in groups.values():
        messages, pattern = group.pop("messages"), group.pop("pattern")
        if group["members"] == 1:  # one member: as it was
            group["path"] = f"{group['path'].split('[', 1)[0]}[{group['names'][0]}]{group['path'].split(']', 1)[1]}"
            for extra in ("members", "of", "names"):
                del group[extra]
        else:
            names = group["names"]
            shown = ", ".join(names) if len(names) <= 4 else ", ".join(names[:3]) + f", ... {names[-1]}"
            every = "all" if group["members"] == group["of"] else f"{group['members']} of"
            merged = merge_messages(messages, names, pattern)
            told = merged if merged is not None else f"{names[0]}: {messages[0]}"
            group["message"] = f"{every} {group['of']} members ({shown}): {told}"
    return folded


#: A number in a message, with its unit if it has one (``513 us``, ``0.138 %``, ``1,024 B``):
#: not a digit inside a name (``w1_in``, ``thread[io.worker3]``, ``worker-1``), a quoted
#: topic (``'15'``), a port (``:5557``) or a path, nor a sentence's comma after it.
_QUANTITY = re.compile(r"(?<![\w.\[\-:/'\"])(-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+)?)"
                       r"(?: ?(s|ms|us|ns|%|B|KB|MB|GB|KiB|MiB|GiB|b/s|kb/s|Mb/s|Gb/s))?(?![\w.'\"-])")
#: each unit's family (only quantities of one family are set side by side) and scale
_UNITS = {None: ("", 1.0), "%": ("%", 1.0), "s": ("s", 1.0), "ms": ("s", 1e-3), "us": ("s", 1e-6), "ns": ("s", 1e-9),
          "B": ("B", 1.0), "KB": ("B", 1e3), "MB": ("B", 1e6), "GB": ("B", 1e9), "KiB": ("B", 2.0**10),
          "MiB": ("B", 2.0**20), "GiB": ("B", 2.0**30), "b/s": ("b/s", 1.0), "kb/s": ("b/s", 1e3), "Mb/s": ("b/s", 1e6),
          "Gb/s": ("b/s", 1e9)}


def merge_messages(messages: Sequence[str], names: Sequence[str], pattern: str) -> str | None:
    """One message for several members' messages that differ only in their numbers and in
    each member's own name: each number that differs becomes the members' range (``waited
    5.16 ms .. 5.78 ms for a core``), each own name the template's pattern (``in{i+1}``).
    None when they differ in anything else (a reader then gets one member's message, named)."""
    skeletons, slots = set(), []
    for message, name in zip(messages, names, strict=True):
        own = re.sub(rf"(?<![\w.]){re.escape(name)}(?!\w)", "\x00", message)
        quantities = list(_QUANTITY.finditer(own))
        skeletons.add(_QUANTITY.sub("\x01", own))
        slots.append(quantities)
    if len(skeletons) != 1:
        return None
    merged = skeletons.pop().replace("\x00", pattern)
    for column in zip(*slots, strict=True):
        texts = [found.group(0) for found in column]
        if len(set(texts)) == 1:
            merged = merged.replace("\x01", texts[0], 1)
            continue
        families = {_UNITS[found.group(2)][0] for found in column}
        if len(families) != 1:
            return None
        value = [float(found.group(1).replace(",", "")) * _UNITS[found.group(2)][1] for found in column]
        low, high = min(range(len(value)), key=value.__getitem__), max(range(len(value)), key=value.__getitem__)
        merged = merged.replace("\x01", texts[low] if value[low] == value[high] else f"{texts[low]} .. {texts[high]}", 1)
    return merged


def static_warnings(scenario: Scenario) -> list[dict[str, str]]:
    """Warnings that follow from the scenario alone."""
    found: list[dict[str, str]] = []
    proxied = {name for proxy in scenario.proxies for name in (proxy.frontend, proxy.backend)}
    by_name = {sock.name: sock for sock in scenario.sockets}
    topics_sent: set[str] = set()
    for send in scenario.sends:
        if TYPES[by_name[send.socket].type].send == DIST:
            topics_sent.update(send.topics or ("",))
    for recv in scenario.recvs:
        if recv.forward_to is not None and TYPES[by_name[recv.forward_to].type].send == DIST:
            topics_sent.add("")  # a stage forwards the payload it got: topics unknown here, assume anything
    for sock in scenario.sockets:
        if TYPES[sock.type].filters_on_recv and not sock.options.subscribe:
            found.append(_warning(
                "no_subscription", f"socket[{sock.name}].options.subscribe",
                f"SUB socket {sock.name!r} subscribes to nothing, so it receives no message (ZeroMQ's most common surprise); "
                "subscribe = [\"\"] receives everything"))
        elif TYPES[sock.type].sends_subscriptions and sock.options.subscribe and topics_sent and sock.name not in proxied:
            unmatched = [p for p in sock.options.subscribe if not any(t.startswith(p) for t in topics_sent)]
            if len(unmatched) == len(sock.options.subscribe):
                shown = ", ".join(repr(t) for t in sorted(topics_sent)[:5])
                found.append(_warning(
                    "subscription_matches_nothing", f"socket[{sock.name}].options.subscribe",
                    f"no topic sent in this scenario starts with {', '.join(repr(p) for p in unmatched)} "
                    f"(topics sent: {shown}); subscriptions are prefix matches on the first frame"))
    bound = {endpoint.key: sock for sock in scenario.sockets for endpoint in sock.bind}
    for sock in scenario.sockets:
        for index, endpoint in enumerate(sock.connect):
            peer = bound.get(endpoint.key)
            if peer is None or peer.type in TYPES[sock.type].valid_peers:
                continue
            allowed = ", ".join(sorted(TYPES[sock.type].valid_peers))
            if endpoint.transport == "inproc":
                outcome = ("libzmq does not check socket types on inproc: they are connected, and each side follows its own type's "
                           "rules")
            else:
                outcome = (f"the {endpoint.transport} handshake refuses them (ZMTP Socket-Type): nothing is delivered either way, the "
                           "connect is not retried and what the connector queued is dropped")
            found.append(_warning(
                "incompatible_peer", f"socket[{sock.name}].connect[{index}]",
                f"a {sock.type} connects to the {peer.type} socket {peer.name!r}, which ZeroMQ does not pair with a {sock.type} "
                f"(only {allowed}); {outcome}"))
    until = scenario.until_s
    if until is not None:
        for send in scenario.sends:
            start = scenario.starts_at(send)
            if start >= until:
                found.append(_warning(
                    "starts_after_horizon", f"{workload_label('send', send.name)}.start_s",
                    f"starts at {start:g} s, at or after scenario.until_s = {until:g} s: it never sends"))
        for recv in scenario.recvs:
            if recv.start_s >= until:
                found.append(_warning(
                    "starts_after_horizon", f"{workload_label('recv', recv.name)}.start_s",
                    f"starts at {recv.start_s:g} s, at or after scenario.until_s = {until:g} s: it never receives"))
    return found


def pause_share(recv: Any) -> float:
    """The share of time a receiver with ``pause_every_s``/``pause_s`` spends paused."""
    if recv.pause_every is None or recv.pause is None:
        return 0.0
    every, pause = recv.pause_every.expected(), recv.pause.expected()
    return pause / (every + pause) if every + pause > 0 else 0.0


def paced_by_a_link(socket: str, network: Mapping[str, Any] | None, inbound: Mapping[str, Any], service: float,
                     busy: float) -> bool:
    """Whether a reader sent more than it can take was fed across an oversubscribed link
    direction (``oversubscribed``) and was idle a good share of the time with what got
    through: the copies sent to it were dropped before the link, which set the pace, not
    the reader (a PUB's 5,000 copies/s for a SUB of 1 ms behind a 10 Mbit/s link: 581/s
    arrive, a utilisation of 0.58, not 5). Then ``overloaded`` would blame the wrong
    component. What it read is the floor of what arrived; a reader busy at least
    ``LINK_SATURATED`` of the time with it is still reported (both were too slow)."""
    window = inbound.get("offered_window_s") or 0.0
    if window <= 0 or busy <= 0:
        return False
    fed = any(oversubscribed(carried) and any(name.endswith(f"->{socket}") for name in (carried.get("connections") or {}))
              for directions in (network or {}).values() for carried in directions.values())
    read = inbound["delivered"] + inbound["forwarded"]
    return fed and read / window * service / busy < LINK_SATURATED


def run_warnings(scenario: Scenario, summary: Mapping[str, Any]) -> list[dict[str, str]]:
    """Warnings read off a run: overload, a backlog left at the end, a rate not achieved."""
    found: list[dict[str, str]] = []
    sockets = summary["sockets"]
    explained: set[str] = set()  # sockets whose overload or backlog is already reported
    for recv in scenario.recvs:
        sock = sockets.get(recv.socket, {})
        inbound = sock.get("inbound")
        if not inbound or inbound.get("offered_window_s", 0) <= 0:
            continue
        rate = inbound["copies"] / inbound["offered_window_s"]
        service = recv.service.expected()
        busy = 1.0 - pause_share(recv)
        utilisation = rate * service / busy if busy > 0 else float("inf")
        # A load-balanced worker at utilisation 1 is just busy (its sender waits for it);
        # overload is work arriving regardless: copies dropped, lost or left queued.
        undelivered = inbound["dropped"] + inbound["lost_on_close"] + inbound["queued_at_end"]
        if utilisation >= UTILISATION and paced_by_a_link(recv.socket, summary.get("network"), inbound, service, busy):
            continue  # link_oversubscribed names what set the pace; the reader kept up with what came
        if utilisation >= UTILISATION and inbound["copies"] >= 10 and undelivered >= 0.01 * inbound["copies"]:
            explained.add(recv.socket)
            unit = " (service_s is in seconds: 100 us is 0.0001)" if service >= 1.0 else ""
            pauses = f", paused {100 * (1 - busy):.0f} % of the time" if busy < 1 else ""
            found.append(_warning(
                "overloaded", f"{workload_label('recv', recv.name)}.service_s",
                f"offered utilisation {utilisation:.2f}: {rate:,.0f} copies/s arrive for socket {recv.socket!r}, each takes "
                f"{service * 1e6:,.0f} us{pauses}{unit}; it cannot keep up in steady state, so its loss and latency grow "
                "with the horizon"))
    for name, sock in sockets.items():
        inbound = sock.get("inbound")
        if not inbound or not inbound["copies"]:
            continue
        share = inbound["queued_at_end"] / inbound["copies"]
        if share >= BACKLOG_SHARE and inbound["queued_at_end"] >= 10:
            explained.add(name)
            found.append(_warning(
                "backlog_at_end", f"socket[{name}]",
                f"{inbound['queued_at_end']:,} of the {inbound['copies']:,} copies meant for {name!r} ({100 * share:.0f} %) are "
                "still queued when the run ends: they count as not delivered, and a longer horizon may change the answer"))
    # A horizon too short for a metric (zsim.steady): asked of open-ended load only. When
    # every sender stopped (a count reached) the run is a finite job, which has no steady
    # state to reach (a batch's latency grows from its first task to its last).
    senders = summary.get("senders") or {}
    open_ended = any(sender.get("finished_at_s") is None for sender in senders.values())
    for name, sock in sockets.items():
        if name in explained or not open_ended:
            continue
        for series, code, what in (("latency", "latency_not_settled", "latency of the copies for"),
                                   ("loss", "loss_not_settled", "share of copies lost for")):
            verdict = (sock.get("settling") or {}).get(series)
            if verdict is None or verdict["settled"]:
                continue
            found.append(_warning(
                code, f"socket[{name}]",
                f"the {what} {name!r} has not settled: MSER-5's warm-up still runs at half of the run (copy "
                f"{verdict['warmup_copies']:,} of {verdict['observations']:,}, sent at {verdict['warmup_end_s']:.4g} s), so its "
                f"{series} figures describe this horizon, not a steady state (a longer scenario.until_s settles it, or shows it "
                "still growing)"))
    for name, sender in summary.get("senders", {}).items():
        asked, got = sender.get("requested_rate_per_s"), sender.get("achieved_rate_per_s")
        active = sender.get("active_s", 0)
        if asked and got is not None and got < ACHIEVED_RATE_SHARE * asked and active > 0:
            why = _shortfall(sender, asked, active)
            found.append(_warning(
                "rate_not_achieved", workload_label("send", name),
                f"sent {got:,.0f} messages/s where {asked:,.0f}/s was asked ({100 * got / asked:.0f} %): {why}; the load "
                "offered downstream is lower than asked"))
    found += cpu_warnings(summary.get("machine"), float(summary.get("sim_time_s") or 0.0))
    found += link_warnings(summary.get("network"))
    return found


def _shortfall(sender: Mapping[str, Any], asked: float, active: float) -> str:
    """Why a sender sent fewer messages per second than it asked: its sends refused with
    zmq.Again (DONTWAIT or SNDTIMEO, no pipe with room: the attempts kept pace, the
    messages were not sent), time blocked in send, or the cost of its own calls and late
    wake-ups on top of the interval (pacing). Refused sends are named first, and alone
    when the attempts kept pace: then they, not the pacing, are the shortfall."""
    again, attempts = int(sender.get("again") or 0), int(sender.get("attempts") or 0)
    tried = attempts / active
    refused = ""
    if again:
        refused = (f"{again:,} of its {attempts:,} sends were refused (zmq.Again: no pipe had room, under DONTWAIT or SNDTIMEO), "
                   f"{again / active:,.0f} messages/s not sent")
        if tried >= ACHIEVED_RATE_SHARE * asked:
            return f"it attempted {tried:,.0f} sends/s, but {refused}: the refused sends, not its pacing, are the shortfall"
    blocked = sender.get("blocked_s", 0.0)
    if blocked >= 0.05 * active:
        why = f"it was blocked in send for {blocked:.3g} s of its {active:.3g} s (its peers' pipes were full)"
    else:
        why = ("each send call, and each wait's late wake-up (a sleep returns late), take time on top of the "
               "interval between sends (pacing = \"schedule\" keeps a fixed schedule instead)")
    if refused:
        return f"{refused}; and it attempted only {tried:,.0f} sends/s: {why}"
    return why


def oversubscribed(carried: Mapping[str, Any]) -> bool:
    """Whether a link direction (one of ``summary["network"][link]``) was offered more than it
    carries by a margin chance cannot make (``OVERSUBSCRIBED_SIGMAS``): the rule of the
    warnings, ``zsim explain`` and the run page alike. False for a summary without the
    offered figures (one written before they were counted)."""
    offered, noise = carried.get("offered_utilisation"), carried.get("offered_noise")
    if offered is None or noise is None or offered != offered or noise != noise:
        return False
    return bool(carried["offered_copies"] >= OVERSUBSCRIBED_MIN_COPIES and offered > 1.0 + OVERSUBSCRIBED_SIGMAS * noise)


def bits_per_s(value: float) -> str:
    """``82.2 Mbit/s``, ``640 kbit/s``, ``1.2 Gbit/s``."""
    for scale, unit in ((1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g} bit/s"


def offered_against_capacity(link: str, direction: str, carried: Mapping[str, Any]) -> str:
    """``link 'a-c' a->c (10 Mbit/s) was offered 82.2 Mbit/s (8.22x its capacity)``."""
    return (f"link {link!r} {direction} ({bits_per_s(carried['bandwidth_bps'])}) was offered "
            f"{bits_per_s(carried['offered_bps'])} ({carried['offered_utilisation']:.3g}x its capacity)")


def link_pace(carried: Mapping[str, Any]) -> str:
    """Who set the pace across a direction offered more than it carries: the link, when it
    ran at its capacity (``LINK_SATURATED``), else whatever held its connections back below
    its rate before it."""
    busy = carried["active_utilisation"]
    if busy >= LINK_SATURATED:
        return f"it ran at its capacity (busy {100 * busy:.0f} % of the time it carried traffic): it, not the reader, set the pace"
    return (f"it was busy only {100 * busy:.0f} % of the time it carried traffic: its connections were held back below its "
            "rate before it (a window, a send buffer: see window_limited and sndbuf_limited)")


def oversubscription(link: str, direction: str, carried: Mapping[str, Any]) -> str:
    """The ``link_oversubscribed`` warning's message: what a direction that ``oversubscribed``
    was offered against what it carries, over which span, who set the pace, and how many of
    the copies sent across it were not delivered."""
    copies, through = carried["offered_copies"], carried["offered_delivered"]
    return (f"{offered_against_capacity(link, direction, carried)} by the writers of the connections crossing it that way, "
            f"over the {carried['offered_window_s']:.3g} s they sent: {link_pace(carried)}; {copies - through:,} of the "
            f"{copies:,} copies sent across it ({100 * (copies - through) / copies:.0f} %) were not delivered (dropped, lost, or "
            "still on their way when the run ended)")


def queue_drops_text(carried: Mapping[str, Any]) -> str:
    """``dropped N packets (... segments sent again)`` of a link direction, naming the packets
    in skbs the sending host's own queue refused whole (local congestion: TCP keeps them and
    slows, without a loss) when there were any, and the frames lost to [[fault]]s; one wording
    for explain and the warnings."""
    local = carried.get("local_drops", 0)
    refused = (f"{local:,} of them in skbs the sending host's own queue refused whole, which TCP keeps and sends later, "
               "slowing down without a loss (local congestion); ") if local else ""
    text = f"dropped {carried['queue_drops']:,} packets ({refused}{carried['retransmits']:,} segments sent again)"
    faulted = [f"{carried[key]:,} {words}" for key, words in (("outage_drops", "frames on its wire while it was down"),
                                                              ("fault_loss_drops", "frames to loss faults"))
               if carried.get(key)]
    return text + (f", and lost {' and '.join(faulted)}" if faulted else "")


def link_warnings(network: Mapping[str, Any] | None) -> list[dict[str, str]]:
    """With [[link]]s (``summary["network"]``): a direction offered more than it carries
    (``oversubscribed``), a direction saturated (busy nearly all the time it carried traffic,
    and its queue dropping), and a connection the receiver's window or its own send buffer
    held back while the link had room (docs/model.md, "Links")."""
    found: list[dict[str, str]] = []
    for link, directions in (network or {}).items():
        for direction, carried in directions.items():
            busy = carried["active_utilisation"]
            rate = f"{carried['bandwidth_bps'] / 1e6:.4g} Mbit/s"
            if oversubscribed(carried):
                found.append(_warning("link_oversubscribed", f"link[{link}]", oversubscription(link, direction, carried)))
            saturated = busy >= LINK_SATURATED and carried["queue_drops"] > 0
            if saturated:
                found.append(_warning(
                    "link_saturated", f"link[{link}]",
                    f"link {link!r} {direction} is saturated: busy {100 * busy:.0f} % of the time it carried traffic, and its "
                    f"queue {queue_drops_text(carried)}: the "
                    f"connections crossing it that way offer more than its {rate}; their goodput together is "
                    f"{carried['goodput_bps'] / 1e6:.3g} Mbit/s"))
            for connection, times in carried["connections"].items():
                held = connection_limit(carried, times)
                if held is None:
                    continue
                code, share = held
                sending = times["sending_s"]
                if code == "sndbuf_limited":
                    sndbuf, rtt = times["max_sndbuf_bytes"], times["rtt_s"]
                    bound = f" = {8 * sndbuf / rtt / 1e6:.3g} Mbit/s" if rtt > 0 else ""
                    raise_it = ("a larger sndbuf on the sending socket, or none so that Linux autotunes it, raises it"
                                if times["sndbuf_fixed"] else "it is autotuned, up to tcp_wmem's maximum: raising "
                                "net.ipv4.tcp_wmem's third value raises it")
                    found.append(_warning(
                        "sndbuf_limited", f"link[{link}]",
                        f"connection {connection} over link {link!r} {direction} is send-buffer-limited: its send buffer, full "
                        f"of bytes in flight, held the writer back {100 * share:.0f} % of the {sending:.3g} s it had data to "
                        f"send while the link was busy {100 * busy:.0f} % of the time; it carried "
                        f"{times['throughput_bps'] / 1e6:.3g} Mbit/s, below send buffer / round trip ({sndbuf:,} bytes / "
                        f"{1000 * rtt:.3g} ms{bound}): the buffer, not the {rate} link, bounds its goodput ({raise_it})"))
                else:
                    found.append(_warning(
                        "window_limited", f"link[{link}]",
                        f"connection {connection} over link {link!r} {direction} is window-limited: the receiver's window held "
                        f"it back {100 * share:.0f} % of the {sending:.3g} s it had data to send while the reader kept up and "
                        f"the link was busy {100 * busy:.0f} % of the time: window / round trip, not the {rate} link, bounds its "
                        "goodput (a larger rcvbuf on the receiving socket, or none so that Linux autotunes it, raises it)"))
    return found


def connection_limit(carried: Mapping[str, Any], times: Mapping[str, Any]) -> tuple[str, float] | None:
    """What held a tcp connection over a link back (one of ``carried["connections"]``, its
    direction's report ``carried``): ``("sndbuf_limited", share)`` when its own send buffer,
    full of bytes in flight, did for at least ``WINDOW_LIMITED_SHARE`` of the time it had data
    to send, ``("window_limited", share)`` when the receiver's window did; None otherwise, and
    when the direction ran at its capacity whenever it had traffic (``LINK_SATURATED``): then
    the link, not a buffer, set the pace, and a larger buffer would only lengthen its queue.
    The rule of the warnings, ``zsim explain`` and the run page alike."""
    if times["sending_s"] <= 0 or carried["active_utilisation"] >= LINK_SATURATED or not carries_a_rate(times):
        return None  # (a few bytes, subscriptions: no rate that a buffer could have held back)
    window, sndbuf = limited_shares(times)
    share, code = max((sndbuf, "sndbuf_limited"), (window, "window_limited"))
    return (code, share) if share >= WINDOW_LIMITED_SHARE else None


#: the payload a connection must carry before its bytes per second are a rate: Linux's initial
#: window of 10 full segments (RFC 6928). Less goes out in a round trip or two, which is a
#: latency, not a rate: a SUB's subscriptions, a REQ's small requests.
RATE_MIN_BYTES = 10 * 1448


def carries_a_rate(times: Mapping[str, Any]) -> bool:
    """Whether a connection over a link carried enough for its throughput and its limited
    shares to say anything (``RATE_MIN_BYTES``)."""
    return bool(times["bytes"] >= RATE_MIN_BYTES)


def limited_shares(times: Mapping[str, Any]) -> tuple[float, float]:
    """The shares of the time a connection over a link had data to send that the receiver's
    window and its own send buffer held it back (0 for a connection that sent nothing)."""
    sending = times["sending_s"]
    if sending <= 0:
        return 0.0, 0.0
    return times["window_limited_s"] / sending, times["sndbuf_limited_s"] / sending


def cpu_warnings(machine: dict[str, Any] | None, span_s: float = 0.0) -> list[dict[str, str]]:
    """One ``cpu_contention`` warning per thread that waited for a core ([machine] cores):
    more threads wanted CPU than there were cores for them, for long enough to matter
    (``CPU_WAIT_SHARE``; the machine's wake-up each time it ran, or ``CPU_WAIT_SPAN_SHARE``
    of the run's ``span_s``)."""
    if not machine:
        return []
    found = []
    cores = machine["cores"]
    spin = sum(thread["spin_cpu_s"] for thread in machine["threads"].values())
    spun = ""
    if spin > 0.0 and spin >= CPU_SPIN_SHARE * machine["cpu_s"]:
        spinners = sorted({thread["wait_spin_s"] for thread in machine["threads"].values() if thread["spin_cpu_s"] > 0})
        spun = (f"; {spin / machine['cpu_s']:.0%} of all the threads' CPU was spinning the end of precise waits "
                f"(wait_spin_s = {' / '.join(_duration(value) for value in spinners)} on their workloads; "
                "0, the default, if the program sleeps)")
    noise = max(float(machine.get("io_wake_s") or 0.0), CPU_WAIT_MIN_S)
    for name, thread in machine["threads"].items():
        waited, used = thread["waited_s"], thread["cpu_s"]
        short = waited < noise * max(1, thread.get("bursts", 1)) and waited < CPU_WAIT_SPAN_SHARE * span_s
        if short or waited < CPU_WAIT_SHARE * used:
            continue
        plural = "s" if cores != 1 else ""
        where = f"the {len(thread['cores'])} of the {cores} cores it may use" if thread["cores"] else f"the {cores} core{plural}"
        found.append(_warning(
            "cpu_contention", f"thread[{name}]",
            f"waited {_duration(waited)} for a core, against {_duration(used)} of its own CPU work: up to "
            f"{machine['max_runnable']} threads wanted {where} at once{spun}"))
    return found


def _duration(seconds: float) -> str:
    seconds = float(f"{seconds:.3g}")  # 0.9996 ms is 1 ms, not "1e+03 us"
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"
