"""``zsim explain FILE``: why copies were lost and senders stalled, one paragraph each.

A *loss episode* is a run of copies that ended the same way at the same place: dropped
(or lost, or discarded) on one pipe, or by one socket with no pipe, by one rule, with no
pause between them longer than a fiftieth of the run (or five typical gaps between two of
them). Each episode says when it started and ended, where, how many copies, and then the
chain of causes the model can see, reader first:

* the reader the copies were meant for: its offered utilisation (copies offered per
  second x mean service time / share of time not paused; ``zsim.checks``), its pauses,
  whether it had started reading, whether it was connected and subscribed yet (the slow
  joiner: the copies it wanted before its subscription reached the publisher,
  ``xpub_t``/``dist_t`` match only pipes whose subscription has been applied);
* the places between the writer and the reader and the most each held during the
  episode (the levels recorded over time, ``zsim.report_run.series``): the reader's pipe
  (full at its RCVHWM?), the reader's engine holding decoded messages its pipe refused
  (``stream_engine_base_t`` stops reading), the kernel buffers, the writer's engine batch;
* the pipe the copies were dropped at, and whether it was full or the writer dropped on
  its own stale view of it: the writer counts what the reader took only when the reader
  reports it, every LWM reads (``pipe_t::check_hwm``, ``activate_write``), so a pipe that
  never held its HWM during the episode was refused on that lagging count.

A *refused-send episode* is a run of a ``[[send]]``'s calls that returned zmq.Again
(EAGAIN: DONTWAIT, or SNDTIMEO expired) with no pause between them longer than the same
gap: their messages never entered a pipe, so they are no copy's fate and no loss episode,
and a run whose only shortfall they are still has a story. Each says when, how many, on
which socket and why: the pipes the socket could send on and the most each held against
its HWM (a socket refuses when none has room in its writer's view, ``lb_t::sendpipe``,
``pipe_t::check_write``), and what the model knows of their readers.

Stalls: senders blocked in send (for how long, on which pipes and readers) and REQ
lockstep waits (each request waits for its reply: the round trip bounds the rate).

Every statement is read off the run: the ledger (when and where each copy ended), the
summary (counters, utilisation, when each reader paused: the first
``zsim.model.workload.MAX_PAUSE_RECORDS`` pauses) and the recorded levels.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .ledger import DISCARDED, DROPPED, LOST, QUEUED, RULES
from .metrics import flat_metrics
from .model.fates import WHERE_PIPE
from .model.occupancy import FIELDS as OCCUPANCY_FIELDS
from .spec import Scenario, workload_label
from .units import human_bytes, human_time

#: ``zsim.model.routing.RULE_FILTERED``: a SUB's own filter (not a loss: never wanted)
_RULE_FILTERED = 6
#: episodes written out in full; the rest are counted
MAX_EPISODES = 20
STATE_WORDS = {DROPPED: "dropped", LOST: "lost", DISCARDED: "discarded"}


@dataclass
class _Story:
    """An episode told in one paragraph: its head (when, how many, where), then its causes."""

    start_s: float
    end_s: float
    causes: list[str] = field(default_factory=list, init=False)

    #: what the head calls an earlier episode of the same kind ("episode", "refused sends")
    called = ""

    def _span(self) -> str:
        return (f"at {human_time(self.start_s)}" if self.end_s == self.start_s
                else f"from {human_time(self.start_s)} to {human_time(self.end_s)}")

    def _head(self, number: int) -> str:
        raise NotImplementedError

    def paragraph(self, number: int) -> str:
        return " ".join([self._head(number), *self.causes])

    def like(self, number: int, earlier: _Story, earlier_number: int) -> str:
        """The paragraph of an episode like ``earlier`` (at the same place by the same rule;
        of the same sender): only the statements that differ from the earlier one's (a
        GC-pausing reader makes the same episode every pause; eight full paragraphs would
        hide what differs)."""
        different = [cause for cause in self.causes if cause not in earlier.causes]
        if len(different) == len(self.causes):
            return self.paragraph(number)
        if not different:
            return f"{self._head(number)} The same causes as {self.called} {earlier_number}."
        return " ".join([f"{self._head(number)} As {self.called} {earlier_number}, except:", *different])


@dataclass
class Episode(_Story):
    """A loss episode: copies that ended the same way at the same place."""

    state: str  # "dropped", "lost", "discarded"
    rule: str
    where: str  # the pipe's name, or "<socket> (no pipe)"
    socket: str  # the socket that dropped, lost or discarded them
    copies: int

    called = "episode"

    def _head(self, number: int) -> str:
        return (f"Loss episode {number}: {self._span()}, {self.copies:,} cop{'y' if self.copies == 1 else 'ies'} {self.state} at "
                f"{self.where} (rule {self.rule}).")


@dataclass
class Refusal(_Story):
    """An episode of refused sends: calls of one ``[[send]]`` that returned zmq.Again."""

    sender: str  # the workload's label, ``send[push]``
    socket: str
    sends: int

    called = "refused sends"

    def _head(self, number: int) -> str:
        return (f"Refused sends {number}: {self._span()}, {self.sends:,} send{'' if self.sends == 1 else 's'} of {self.sender} on "
                f"{self.socket} {'was' if self.sends == 1 else 'were'} refused (zmq.Again).")


@dataclass
class Explanation:
    scenario: str
    seed: int
    episodes: list[Episode]
    stalls: list[str]
    more_episodes: int = 0
    #: socket -> the template it is a member of (``zsim.templates``), for folding
    members: dict[str, str] = field(default_factory=dict)
    #: the episodes of refused sends (largest first, at most ``MAX_EPISODES``; in time order)
    refusals: list[Refusal] = field(default_factory=list)
    #: every send refused with zmq.Again in the run, per [[send]] label
    refused: dict[str, int] = field(default_factory=dict)
    more_refusals: int = 0
    #: the run page's answer (``zsim.report_run.headline``): per receiver the share of the
    #: copies meant for it that it did not get, the receivers table's loss %, with the
    #: copies still queued at the end said apart; request -> reply and end-to-end times
    answer: list[str] = field(default_factory=list)

    def _member(self, episode: Episode) -> str | None:
        """The member of a template an episode's place names (its reader, writer or socket)."""
        return next((name for name in re.split(r"->| \(", episode.where)[:2] if name in self.members), None)

    def _folded(self) -> list[tuple[Episode, list[Episode]]]:
        """The episodes with those at the same place of other members of one template, by
        the same rule, folded into the first (a slow joiner's start-up drops on fourteen
        identical subscribers are one story, not fourteen)."""
        groups: dict[tuple[str, str, str], tuple[Episode, list[Episode]]] = {}
        out: list[tuple[Episode, list[Episode]]] = []
        for episode in self.episodes:
            member = self._member(episode)
            if member is None:
                out.append((episode, []))
                continue
            key = (episode.state, episode.rule, episode.where.replace(member, "{" + self.members[member] + "}", 1))
            if key in groups:
                groups[key][1].append(episode)
            else:
                groups[key] = (episode, [])
                out.append(groups[key])
        return out

    def paragraphs(self) -> list[str]:
        """One paragraph per episode, in time order; an episode at the place and by the rule
        of an earlier one says only what differs from the first of them; episodes at the
        same place of other members of one template are folded into the first."""
        first: dict[tuple[str, str, str], tuple[Episode, int]] = {}
        out = []
        for number, (episode, others) in enumerate(self._folded(), 1):
            key = (episode.state, episode.where, episode.rule)
            if key in first:
                text = episode.like(number, *first[key])
            else:
                first[key] = (episode, number)
                text = episode.paragraph(number)
            if others:
                names = [self._member(o) or o.where for o in others]
                copies = episode.copies + sum(o.copies for o in others)
                start = min(e.start_s for e in (episode, *others))
                end = max(e.end_s for e in (episode, *others))
                own = self._member(episode) or episode.where
                if len(set(names)) == len(names) and own not in names:  # one more episode per other member
                    shown = ", ".join(names[:3]) + (f", ... {names[-1]}" if len(names) > 3 else "")
                    text += (f" The same happened at the same place of {len(others)} more member{'s' if len(others) > 1 else ''} "
                             f"of the same template ({shown}): {copies:,} copies in all, from {human_time(start)} to "
                             f"{human_time(end)}.")
                else:  # members lost again later: count the episodes, name each member once
                    members = list(dict.fromkeys([own, *names]))
                    shown = ", ".join(members[:4]) + (f" and {len(members) - 4} more" if len(members) > 4 else "")
                    text += (f" The same happened {len(others)} more time{'s' if len(others) > 1 else ''} at the same place, "
                             f"at {len(members)} members of the same template ({shown}): {copies:,} copies in all, from "
                             f"{human_time(start)} to {human_time(end)}.")
            out.append(text)
        return out

    def no_loss(self) -> str | None:
        """The line that stands for no loss episode: none when there are some; with sends
        refused, it says so first (a run whose only shortfall is refused sends lost them
        before any pipe: "no copy was dropped" is not the whole story)."""
        if self.episodes:
            return None
        if not self.refused:
            return "No copy was dropped, lost or discarded during the run."
        total = sum(self.refused.values())
        if len(self.refused) == 1:
            who = f"{'' if total == 1 else 'all '}by {next(iter(self.refused))}"
        else:
            who = ", ".join(f"{n:,} by {label}" for label, n in self.refused.items())
        return (f"{total:,} send{' was' if total == 1 else 's were'} refused (zmq.Again): {who}; a refused send never enters a "
                "pipe, and no copy that was sent was dropped, lost or discarded.")

    def refusal_paragraphs(self) -> list[str]:
        first: dict[str, tuple[Refusal, int]] = {}
        out = []
        for number, refusal in enumerate(self.refusals, 1):
            if refusal.sender in first:
                out.append(refusal.like(number, *first[refusal.sender]))
            else:
                first[refusal.sender] = (refusal, number)
                out.append(refusal.paragraph(number))
        if self.more_refusals:
            out.append(f"... and {self.more_refusals} more episodes of refused sends (the largest {len(self.refusals)} are above).")
        return out

    def text(self) -> str:
        lines = [f"zsim explain: {self.scenario}, seed {self.seed}", ""]
        if self.answer:
            lines += [*self.answer, ""]
        lead = self.no_loss()
        if lead is not None:
            lines.append(lead)
        for paragraph in self.paragraphs():
            lines += [paragraph, ""]
        if self.more_episodes:
            lines += [f"... and {self.more_episodes} more loss episodes (the largest {len(self.episodes)} are above).", ""]
        if self.refusals:
            if lead is not None:
                lines.append("")
            for paragraph in self.refusal_paragraphs():
                lines += [paragraph, ""]
        if self.stalls:
            lines += ["Stalls:", ""]
            for stall in self.stalls:
                lines += [stall, ""]
        return "\n".join(lines).rstrip() + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "seed": self.seed,
            "answer": self.answer,
            "episodes": [{"state": e.state, "rule": e.rule, "where": e.where, "socket": e.socket, "start_s": e.start_s,
                          "end_s": e.end_s, "copies": e.copies, "paragraph": e.paragraph(i)}
                         for i, e in enumerate(self.episodes, 1)],
            "more_episodes": self.more_episodes,
            "refused": self.refused,
            "refusals": [{"sender": r.sender, "socket": r.socket, "start_s": r.start_s, "end_s": r.end_s, "sends": r.sends,
                          "paragraph": r.paragraph(i)} for i, r in enumerate(self.refusals, 1)],
            "more_refusals": self.more_refusals,
            "stalls": self.stalls,
        }


# -- finding the episodes ----------------------------------------------------------------------


def episodes(result: Any) -> list[tuple[int, int, int, int, np.ndarray]]:
    """``(state, pipe index or -2 - socket index, rule, socket index, times)`` per episode,
    the largest first."""
    table = result.messages
    state, rule = table["state"], table["rule"].astype(np.int64)
    loss = ((state == DROPPED) | (state == LOST) | (state == DISCARDED)) & ~((state == DISCARDED) & (rule == _RULE_FILTERED))
    if not loss.any():
        return []
    pipe, sock = table["pipe"][loss].astype(np.int64), table["socket"][loss].astype(np.int64)
    where = np.where(pipe >= 0, pipe, -2 - sock)
    keys = np.stack([state[loss].astype(np.int64), where, rule[loss]], axis=1)
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    times_all, socks_all = table["time"][loss], sock
    span = float(result.summary["sim_time_s"]) or 1.0
    found = []
    for k, (s, w, r) in enumerate(unique.tolist()):
        mine = inverse == k
        times = np.sort(times_all[mine])
        owner = int(np.bincount(socks_all[mine][socks_all[mine] >= 0]).argmax()) if (socks_all[mine] >= 0).any() else -1
        for part in _bursts(times, span):
            found.append((s, w, r, owner, part))
    found.sort(key=lambda item: (-len(item[4]), float(item[4][0])))
    return found


def _bursts(times: np.ndarray, span: float) -> list[np.ndarray]:
    """Sorted event times cut where the gap between two is longer than a fiftieth of the
    run or five typical gaps: the episodes."""
    gaps = np.diff(times)
    typical = float(np.median(gaps[gaps > 0])) if (gaps > 0).any() else 0.0
    split = max(span / 50, 5 * typical)
    return np.split(times, np.flatnonzero(gaps > split) + 1)


def refusal_episodes(result: Any) -> list[tuple[str, np.ndarray]]:
    """``(sender, times)`` per episode of refused sends (``RunResult.refused``), the largest first."""
    span = float(result.summary["sim_time_s"]) or 1.0
    found = [(name, part) for name, times in (getattr(result, "refused", None) or {}).items() if len(times)
             for part in _bursts(np.sort(times), span)]
    found.sort(key=lambda item: (-len(item[1]), float(item[1][0])))
    return found


# -- what the model saw --------------------------------------------------------------------------


class _Context:
    """The run, indexed for the statements: sockets, pipes, levels, readers."""

    def __init__(self, result: Any, series: Any, scenario: Scenario) -> None:
        self.result = result
        self.summary = result.summary
        self.series = series
        self.scenario = scenario
        self.metrics = flat_metrics(self.summary, result=result, scenario=scenario)
        self.sockets = {s.name: s for s in scenario.sockets}
        self.recvs: dict[str, list[Any]] = {}
        for recv in scenario.recvs:
            self.recvs.setdefault(recv.socket, []).append(recv)
        self.proxied = {name: proxy for proxy in scenario.proxies for name in (proxy.frontend, proxy.backend)}
        self.receivers = self.summary.get("receivers") or {}
        self.pipes = self.summary["pipes"]
        self.first_delivery = self._first_delivery()

    def _first_delivery(self) -> dict[str, float]:
        table = self.result.messages
        delivered = (table["state"] == 0) | (table["state"] == 1)
        found: dict[str, float] = {}
        if delivered.any():
            socks, times = table["socket"][delivered], table["time"][delivered]
            for index in np.unique(socks).tolist():
                found[self.result.socket_names[index]] = float(times[socks == index].min())
        return found

    def arrival(self, name: str) -> tuple[int, float]:
        """How many of the copies meant for socket ``name`` reached it, and over how long:
        those it read (delivered, forwarded) or threw away itself (not its SUB filter's: never
        meant for it), and those still queued in a pipe it reads when the run ended; from its
        first read to its last, or to the end of the run while copies still waited in its
        pipe. Not those dropped before it, or still in a writer's pipe, an engine, the
        kernels or a link: what was sent to it is its ``inbound`` copies, what arrived is this
        (the ledger records when a copy was read, not when it arrived: a reader that kept up
        read each as it came)."""
        table = self.result.messages
        index = self.result.socket_names.index(name) if name in self.result.socket_names else -1
        state, rule = table["state"], table["rule"]
        read = (table["socket"] == index) & (((state == 0) | (state == 1)) | ((state == DISCARDED) & (rule != _RULE_FILTERED)))
        into = [i for i, pipe in enumerate(self.pipes)
                if (pipe.get("destination") or pipe["to"]) == name and pipe["kind"] in ("recv", "inproc")]
        waiting = int(np.count_nonzero((state == QUEUED) & (rule == WHERE_PIPE) & np.isin(table["pipe"], into)))
        times = table["time"][read]
        if not len(times):
            return waiting, 0.0
        last = float(self.summary["sim_time_s"]) if waiting else float(times.max())
        return len(times) + waiting, last - float(times.min())

    def levels(self, pipe_index: int, start: float, end: float) -> tuple[int, int] | None:
        """The fewest and the most messages pipe ``pipe_index`` held in the buckets
        overlapping ``[start, end]`` (None without a series)."""
        if self.series is None:
            return None
        levels = self.series.pipes.get(pipe_index)
        if levels is None:
            return (0, 0)
        lo, hi = self._window(levels, start, end)
        return int(levels.lo[lo:hi, 0].min()), int(levels.hi[lo:hi, 0].max())

    def _window(self, levels: Any, start: float, end: float) -> tuple[int, int]:
        width = self.series.width_s
        first = max(0, min(len(levels.times) - 1, int(math.floor(start / width))))
        last = max(first + 1, min(len(levels.times), int(math.floor(end / width)) + 1))
        return first, last

    def direction(self, name: str, start: float, end: float) -> dict[str, int] | None:
        """The most each place of link direction ``name`` held during ``[start, end]``."""
        if self.series is None:
            return None
        found: dict[str, int] = {}
        for _link, direction, levels in self.series.directions:
            if direction != name:
                continue
            lo, hi = self._window(levels, start, end)
            for channel, field_name in enumerate(OCCUPANCY_FIELDS):
                found[field_name] = max(found.get(field_name, 0), int(levels.hi[lo:hi, channel].max()))
        return found or None

    def reader(self, name: str, start: float, end: float | None = None) -> list[str]:
        """What the model knows about socket ``name`` as a reader, around an episode from
        ``start`` to ``end``."""
        end = start if end is None else end
        sock = self.sockets.get(name)
        kind = sock.type if sock else "?"
        out = []
        recvs = self.recvs.get(name, [])
        util = self.metrics.get(f"socket.{name}.offered_utilisation")
        if recvs:
            service = sum(r.service.expected() for r in recvs) / len(recvs)
            inbound = (self.summary["sockets"].get(name) or {}).get("inbound") or {}
            window = inbound.get("offered_window_s") or 0
            copies = inbound.get("copies", 0)
            rate = copies / window if window > 0 else None
            if util is not None and util == util and math.isfinite(util):
                verdict = ("too slow for what it is offered: it cannot keep up, so its backlog grows as long as the load lasts"
                           if util >= 1 else "fast enough on average for the copies it was offered")
                arrive = ""
                if rate:
                    # a link, or a full pipe before the reader, lets fewer through than the
                    # writers sent: then the rate that arrived is not the rate sent
                    arrived, span = self.arrival(name)
                    from .checks import paced_by_a_link, pause_share

                    busy = 1.0 - sum(pause_share(r) for r in recvs) / len(recvs)
                    if util >= 1 and span > 0 and paced_by_a_link(name, self.summary.get("network"), inbound, service, busy):
                        # idle with what reached it: not the reader's doing; the same rule
                        # leaves ``overloaded`` out of the run's warnings
                        verdict = (f"fast enough for what reached it (busy about {100 * arrived / span * service:.0f} % "
                                   "of the time with it): what was sent to it was held back before it")
                    arrive = (f"{rate:,.0f} copies/s arrive, " if arrived >= copies else
                              f"{rate:,.0f} copies/s were sent to it, {arrived / span:,.0f}/s arrived, " if span > 0 else
                              f"{rate:,.0f} copies/s were sent to it, {arrived:,} arrived, ")
                out.append(f"The reader, {kind} {name}, is {verdict} (offered utilisation {util:.2f}: {arrive}it takes "
                           f"{human_time(service)} per copy).")
            for recv in recvs:
                label = workload_label("recv", recv.name)
                if recv.pause_every is not None and recv.pause is not None:
                    asked = (f"{label} pauses for {human_time(recv.pause.expected())} about every "
                             f"{human_time(recv.pause_every.expected())}")
                    out.append(_pauses(asked, self.receivers.get(recv.name) or {}, start, end))
                begin = max(recv.start_s, sock.open_at_s if sock else 0.0)
                if begin > start:
                    out.append(f"{label} had not started reading yet: it starts at {human_time(begin)} (start_s).")
        elif name in self.proxied:
            proxy = self.proxied[name]
            out.append(f"The reader, {kind} {name}, is the frontend of proxy {proxy.name}, which forwards each copy to "
                       f"{proxy.backend} as fast as that socket takes it.")
        else:
            out.append(f"The reader, {kind} {name}, is read by an app or by nobody (no [[recv]] reads it).")
        return out

    def hwm_word(self, kind: str) -> str:
        return {"send": "SNDHWM", "recv": "RCVHWM"}.get(kind, "HWM")


def _messages(count: int, what: str = "message") -> str:
    return f"{count:,} {what}{'' if count == 1 else 's'}"


def _pipe_chain(ctx: _Context, pipe_index: int, start: float, end: float) -> list[str]:
    """The places between the pipe's writer and its reader, reader side first."""
    pipe = ctx.pipes[pipe_index]
    out = []
    frm, to = pipe["from"], pipe["to"]
    direction = f"{frm}->{to}"
    if pipe["kind"] == "send":  # tcp/ipc: what lies beyond the writer's pipe
        recv_pipes = [i for i, p in enumerate(ctx.pipes) if p["from"] == frm and p["to"] == to and p["kind"] == "recv"]
        for index in recv_pipes:
            held = ctx.levels(index, start, end)
            hwm = ctx.pipes[index]["hwm"]
            if held is None:
                continue
            full = hwm > 0 and held[1] >= hwm
            out.append(f"{to}'s own pipe from its engine ({ctx.pipes[index]['name']}) held up to {_messages(held[1])} "
                       f"(RCVHWM {hwm:,}){': full' if full else ''}.")
        places = ctx.direction(direction, start, end)
        if places:
            if places["receiver_engine_messages"]:
                out.append(f"{to}'s engine held up to {_messages(places['receiver_engine_messages'], 'decoded message')} "
                           f"({human_bytes(places['receiver_engine_bytes'])}) its pipe refused, so it stopped reading the socket "
                           "(stream_engine_base_t: input stopped until the pipe has room).")
            if places["kernel_messages"]:
                out.append(f"The kernel buffers of {direction} held up to {_messages(places['kernel_messages'])} "
                           f"({human_bytes(places['kernel_bytes'])}).")
            if places["sender_engine_messages"]:
                out.append(f"{frm}'s engine held up to {_messages(places['sender_engine_messages'])} "
                           f"({human_bytes(places['sender_engine_bytes'])}) written from its pipe but not yet into the kernel.")
        out += _links_crossed(ctx, direction)
    return out


def _links_crossed(ctx: _Context, direction: str) -> list[str]:
    """The network link a tcp connection ``writer->reader`` crosses between two hosts
    ([[link]]), with what it carried over the whole run (explain reads the run's totals; a run
    report also draws each link over time), and whether it was saturated or the receiver's
    window or its own send buffer held the connection back (the ``link_saturated`` rule and
    ``connection_limit`` of zsim.checks)."""
    from .checks import LINK_SATURATED, bits_per_s, connection_limit, oversubscribed, queue_drops_text

    out = []
    crossed: list[tuple[str, str, dict[str, Any]]] = []
    network = ctx.summary.get("network") or {}
    route = _route_links(ctx, direction)
    for link, ways in sorted(network.items(), key=lambda item: route.index(item[0]) if item[0] in route else len(route)):
        for way, carried in ways.items():
            times = (carried.get("connections") or {}).get(direction)
            if times is None:
                continue
            crossed.append((link, way, carried))
            busy = carried["active_utilisation"]
            full = busy >= LINK_SATURATED  # ran at its capacity whenever it had traffic
            saturated = full and carried["queue_drops"] > 0
            text = (f"The connection {direction} crosses link {link} ({way}: {carried['bandwidth_bps'] / 1e6:.4g} Mbit/s, "
                    f"{human_time(carried['latency_s'])} one way). ")
            if oversubscribed(carried):
                # what the writers wanted to send that way, against what it carries
                others = {other: d["bandwidth_bps"] for other, d in ways.items() if other != way}
                if all(rate == carried["bandwidth_bps"] for rate in others.values()):
                    named = f"The {bits_per_s(carried['bandwidth_bps'])} link {link}"
                else:  # an asymmetric link (its reverse): the rate of the way it was offered, and the other's
                    back = ", ".join(f"{bits_per_s(rate)} {other}" for other, rate in others.items())
                    named = f"Link {link}, {bits_per_s(carried['bandwidth_bps'])} {way} ({back}),"
                text += (f"{named} was offered "
                         f"{bits_per_s(carried['offered_bps'])} {way} by the writers of the connections crossing it "
                         f"({carried['offered_utilisation']:.3g}x its capacity: link_oversubscribed). ")
            text += (f"Over the whole run that direction was busy "
                    f"{100 * busy:.0f} % of the time it carried traffic, its queue held up to {human_bytes(carried['max_queue_bytes'])}"
                    f" and {queue_drops_text(carried)}")
            held = connection_limit(carried, times)
            if full:
                text += (f": the link ran at its capacity{' and its queue overflowed (link_saturated)' if saturated else ''}, "
                         "so it, not the reader, set how fast copies left the sender's buffers.")
            elif held is not None and held[0] == "sndbuf_limited":
                text += (f"; its own send buffer ({times['max_sndbuf_bytes']:,} bytes), full of bytes in flight, held this "
                         f"connection back {100 * held[1]:.0f} % of the time it had data to send (sndbuf_limited): "
                         "send buffer / round trip, not the link, bounds it.")
            elif held is not None:
                text += (f"; the receiver's window held this connection back {100 * held[1]:.0f} % of the time it had data to "
                         "send (window_limited): window / round trip, not the link, bounds it.")
            else:
                text += "."
            out.append(text)
    if len(crossed) > 1:
        out.append(_bottleneck_hop(crossed))
    return out


def _faults_behind(ctx: _Context, direction: str, start: float, end: float, writer: str, reader: str) -> list[str]:
    """The [[fault]]s on the links the connection ``writer->reader`` crosses that were under way
    during the episode, or ended no more than their recovery before it (``summary["faults"]``):
    when the link was down, how long after the repair TCP's backed-off retransmission got
    through, and that nothing in libzmq noticed, so the writer kept queueing."""
    faults = ctx.summary.get("faults") or {}
    if not faults:
        return []
    crossed = set(_route_links(ctx, direction)) or {link for link, ways in (ctx.summary.get("network") or {}).items()
                                                     if any(direction in (way.get("connections") or {}) for way in ways.values())}
    out = []
    for name, fault in faults.items():
        links = [link for link in fault["links"] if link in crossed]
        if not links:
            continue
        recovery = fault["longest_recovery_s"] if fault["longest_recovery_s"] == fault["longest_recovery_s"] else 0.0
        during = [(a, b) for a, b in fault["intervals"] if a <= end and b + recovery + 1e-3 >= start]
        if not during:
            continue
        when = ", ".join(f"{human_time(a)} to {human_time(b)}" for a, b in during[:3]) + (" ..." if len(during) > 3 else "")
        what = "down" if fault["kind"] != "loss" else "losing packets"
        text = f"Link {', '.join(links)} was {what} from {when} (fault {name}: {fault['kind']})"
        if fault["kind"] != "loss" and fault["recovery_s"] == fault["recovery_s"]:
            why = ("a connection broken meanwhile is made again by its connecting side, whose SYNs are lost until then"
                   if fault["disconnects"] else "TCP sends again only on its retransmission timeout, doubled at each try")
            text += f"; nothing crossed it until {human_time(fault['recovery_s'])} after the repair ({why})"
        options = ctx.sockets[writer].options if writer in ctx.sockets else None
        watched = options is not None and (options.heartbeat_ivl > 0 or options.tcp_keepalive == 1)
        if fault["disconnects"]:
            broke = ", ".join(f"{reason} ({count:,})" for reason, count in fault["disconnected_by"].items())
            text += (f". It broke {fault['disconnects']:,} connection{'s' if fault['disconnects'] > 1 else ''} over its links "
                     f"{human_time(fault['detect_s'])} after it began ({broke}); until then {writer} kept queueing for {reader}.")
        else:
            had = ("heartbeats or keepalive on, which did not fire in time" if watched
                   else "neither ZMTP heartbeats nor TCP keepalive on")
            text += (f". Nothing noticed it (TCP keeps a connection through an outage; {writer} had {had}), so it kept "
                     f"queueing for {reader} until its pipe held SNDHWM.")
        out.append(text)
    return out


def _route_links(ctx: _Context, direction: str) -> list[str]:
    """The links of the connection ``writer->reader``'s route through [[switch]]es, in the order
    its copies cross them (zsim.spec.route), so explain names them in that order; empty without
    switches (one link a connection)."""
    scenario = ctx.scenario
    writer, _, reader = direction.partition("->")
    sockets = ctx.sockets
    if not scenario.switches or writer not in sockets or reader not in sockets:
        return []
    from .spec import RouteError, route

    hosts = {p.name: p.host for p in scenario.processes}
    try:
        hops = route(scenario.links, {switch.name for switch in scenario.switches}, hosts[sockets[writer].process],
                     hosts[sockets[reader].process])
    except RouteError:
        return []
    return [hop.name for hop, _ in hops]


def _bottleneck_hop(crossed: list[tuple[str, str, dict[str, Any]]]) -> str:
    """Which of the links a routed connection crosses (through [[switch]]es) held it back: the
    busiest over the span it carried traffic, then the one whose queue held the most."""
    link, way, carried = max(crossed, key=lambda hop: (round(hop[2]["active_utilisation"], 2), hop[2]["max_queue_bytes"]))
    others = max(hop[2]["active_utilisation"] for hop in crossed if hop[2] is not carried)
    return (f"Of the {len(crossed)} links this connection crosses, {link} ({way}, {carried['bandwidth_bps'] / 1e6:.4g} Mbit/s) "
            f"is the one whose queue held its copies back: busy {100 * carried['active_utilisation']:.0f} % of the time it carried "
            f"traffic, its queue up to {human_bytes(carried['max_queue_bytes'])}; the others were busy at most {100 * others:.0f} %.")


def _stale_or_full(ctx: _Context, pipe_index: int, start: float, end: float) -> str:
    pipe = ctx.pipes[pipe_index]
    writer = pipe["from"]
    sock = ctx.sockets.get(writer)
    kind = sock.type if sock else ""
    hwm = pipe["hwm"]
    word = ctx.hwm_word(pipe["kind"]) if pipe["kind"] != "inproc" else "HWM"
    held = ctx.levels(pipe_index, start, end)
    if held is None or hwm <= 0:
        return f"{kind} {writer} dropped them because its pipe {pipe['name']} was at its {word} ({hwm:,})."
    lwm = pipe["lwm"]
    pipe_reader = f"{writer}'s own engine" if pipe["kind"] == "send" else pipe["to"]
    if held[1] < hwm:
        return (f"{kind} {writer}'s pipe {pipe['name']} never held more than {_messages(held[1])} during the episode, below its "
                f"{word} of {hwm:,}: {writer} dropped on its own stale view of the pipe. The pipe's reader, {pipe_reader}, "
                f"reports what it took only every LWM = {lwm:,} reads (pipe_t::check_hwm counts written - reported >= {word}), so "
                f"{writer} still counted copies already taken out of the pipe.")
    return (f"{kind} {writer}'s pipe {pipe['name']} was full: it held up to {_messages(held[1])}, its {word} is {hwm:,}, and a "
            f"{kind} drops a copy for a full pipe rather than wait (its mute state is 'drop').")


def _pauses(asked: str, receiver: dict[str, Any], start: float, end: float) -> str:
    """When the reader paused around an episode from ``start`` to ``end`` (its recorded
    pauses, ``summary["receivers"][name]["pauses"]``), after what the scenario asked for."""
    record = receiver.get("pauses")
    if record is None:  # a summary of a version that kept no record
        return f"{asked}."
    count = int(receiver.get("pause_count", len(record)))
    during = [(a, b) for a, b in record if a <= end and b >= start]
    if during:
        a, b = during[0]
        into = (f"the episode began {human_time(start - a)} into it" if a <= start
                else f"{human_time(a - start)} after the episode began")
        text = f"{asked}: it was paused from {human_time(a)} to {human_time(b)}, {into}"
        if len(during) > 1:
            text += f", and {len(during) - 1:,} more time{'s' if len(during) > 2 else ''} before the episode ended"
        return text + "."
    before = [b for a, b in record if b < start]
    if len(record) < count and (not record or record[-1][1] < start):  # past what was recorded
        return f"{asked} ({count:,} pauses in all; the model records the first {len(record):,}, all before this episode)."
    last = f"; its last pause before ended at {human_time(before[-1])}" if before else ""
    return f"{asked}, but it was not paused during the episode{last}."


def _slow_joiner(ctx: _Context, reader: str, writer: str) -> list[str]:
    sock = ctx.sockets.get(reader)
    first = ctx.first_delivery.get(reader)
    opened = f"{reader} opened at {human_time(sock.open_at_s)}" if sock else reader
    got = f" and got its first copy at {human_time(first)}" if first is not None else " and never got a copy"
    return [f"The reader, {reader}, wanted them, but its subscription had not reached {writer} yet (the slow joiner: a publisher "
            f"sends only to pipes whose subscription it has applied): {opened}{got}."]


def _explain_episode(ctx: _Context, state: int, where: int, rule: int, owner: int, times: np.ndarray) -> Episode:
    rule_name = RULES.get(rule, str(rule)) or "-"
    start, end = float(times[0]), float(times[-1])
    socket = ctx.result.socket_names[owner] if owner >= 0 else "?"
    if where >= 0:
        pipe = ctx.pipes[where]
        episode = Episode(start, end, STATE_WORDS[state], rule_name, pipe["name"], socket, len(times))
        reader = pipe.get("destination") or pipe["to"]
        writer = pipe["from"]
        causes = episode.causes
        if state == DROPPED and rule_name == "hwm":
            causes += _faults_behind(ctx, f"{writer}->{pipe['to']}", start, end, writer, reader)
            causes += ctx.reader(reader, start, end)
            causes += _pipe_chain(ctx, where, start, end)
            causes.append(_stale_or_full(ctx, where, start, end))
        elif state == DROPPED and rule_name in ("not_subscribed_yet", "not_connected"):
            causes += _slow_joiner(ctx, reader, writer)
        elif rule_name == "conflated":
            causes.append(f"{pipe['name']} conflates (CONFLATE): a newer message replaced each of them before {reader} read it.")
        else:
            causes += _lost_causes(ctx, rule_name, socket, start, end)
        return episode
    socket = ctx.result.socket_names[-2 - where]
    episode = Episode(start, end, STATE_WORDS[state], rule_name, f"{socket} (no pipe)", socket, len(times))
    if rule_name == "unroutable":
        episode.causes += _unroutable(ctx, socket)
    else:
        episode.causes += _lost_causes(ctx, rule_name, socket, start, end)
    return episode


def _unroutable(ctx: _Context, socket: str) -> list[str]:
    known = {s.routing_id for s in ctx.scenario.sockets}
    unknown: list[str] = []
    for send in ctx.scenario.sends:
        if send.socket == socket:
            unknown += [peer for peer in send.to if peer not in known and peer not in unknown]
    names = (" The [[send]] addresses " + ", ".join(repr(p) for p in unknown) + ", which no socket of the scenario is called."
             if unknown else " The peers it addressed had not connected, or had gone.")
    return [f"ROUTER {socket} had no pipe to the peer named in the envelope, and a ROUTER drops such a copy "
            f"(router_t::xsend; router_mandatory = true makes the send fail with EHOSTUNREACH instead).{names}"]


def _lost_causes(ctx: _Context, rule: str, socket: str, start: float, end: float) -> list[str]:
    out = []
    what = {
        "close_linger": "the socket closed and LINGER let these go",
        "crash": "the process crashed",
        "disconnect": "the connection went away with them queued",
        "engine_hup": "the ipc engine saw EPOLLHUP and left them in the kernel",
        "kernel_lost": "they were in the kernel or in flight when the connection broke",
        "req_state": "REQ discards a reply from a pipe it did not send its request to",
        "no_delimiter": ("a REP (or a REQ waiting for its reply) throws away a message with no empty delimiter frame "
                         "under its routing ids (rep_t::xrecv, req_t::xrecv); a DEALER or ROUTER [[send]] or a forwarding "
                         "stage sends none, a REQ's requests and the replies to them carry it"),
        "no_peer": "the peer to reply to was gone",
        "app_disconnect": ("the application ended their connection with zmq_disconnect or zmq_unbind ([[call]]): what had come "
                           "in unread was thrown away, what it had sent went as LINGER allowed"),
        "send_failed": ("a proxy's blocking send of it failed when the target's SNDTIMEO expired: zmq_proxy returned -1 "
                        "with the message closed, and the proxy forwarded nothing more"),
    }.get(rule)
    if what:
        out.append(f"Rule {rule}: {what}.")
    slack = max(1e-3, (end - start) * 0.05)
    for name, proc in (ctx.summary.get("processes") or {}).items():
        for key, event in (("crashed_s", "crashed"), ("exit_started_s", "began to exit")):
            at = proc.get(key)
            if at is not None and start - slack <= at <= end + slack:
                out.append(f"Process {name} {event} at {human_time(at)}.")
    for sock in ctx.scenario.sockets:
        if sock.close_at_s is not None and start - slack <= sock.close_at_s <= end + slack:
            out.append(f"Socket {sock.name} closed at {human_time(sock.close_at_s)} (close_at_s).")
    return out


# -- refused sends ------------------------------------------------------------------------------


def _explain_refusal(ctx: _Context, sender_name: str, times: np.ndarray) -> Refusal:
    summary_sender = (ctx.summary.get("senders") or {}).get(sender_name) or {}
    socket = summary_sender.get("socket", "?")
    sock = ctx.sockets.get(socket)
    kind = sock.type if sock else ""
    start, end = float(times[0]), float(times[-1])
    refusal = Refusal(start, end, workload_label("send", sender_name), f"{kind} {socket}".strip(), len(times))
    spec = next((send for send in ctx.scenario.sends if send.name == sender_name), None)
    causes = refusal.causes
    if spec is not None and spec.dontwait:
        how = "with DONTWAIT (dontwait = true), so the call returned at once"
    elif sock is not None and sock.options.sndtimeo == 0:
        how = "with SNDTIMEO 0, so the call returned at once"
    elif sock is not None and sock.options.sndtimeo > 0:
        how = f"and each call waited its SNDTIMEO of {sock.options.sndtimeo:,} ms for room first"
    else:
        how = "without waiting"
    then = ("the next attempt came an interval later (on_again = \"skip\")" if spec is None or spec.on_again != "stop"
            else "the workload stopped at the first (on_again = \"stop\")")
    them = "that message was" if len(times) == 1 else "those messages were"
    causes.append(f"{'An' if kind.startswith('X') else 'A'} {kind} refuses a send (EAGAIN) when no pipe it may send on has room, "
                  f"{how}: {them} not sent and never entered a pipe, and {then}.")
    pipes = [i for i, pipe in enumerate(ctx.pipes) if pipe["from"] == socket and pipe["kind"] in ("send", "inproc")]
    if not pipes:
        causes.append(f"{socket} had no pipe to send on: no peer was connected to it yet.")
        return refusal
    for index in pipes:
        pipe = ctx.pipes[index]
        hwm = pipe["hwm"]
        held = ctx.levels(index, start, end)
        word = ctx.hwm_word(pipe["kind"]) if pipe["kind"] != "inproc" else "HWM"
        reader = pipe.get("destination") or pipe["to"]
        if held is None or hwm <= 0:
            causes.append(f"Its pipe {pipe['name']} ({word} {hwm:,}) leads to {reader}.")
        elif held[1] >= hwm:
            causes.append(f"Its pipe {pipe['name']} was full: it held up to {_messages(held[1])} during the episode, its {word} "
                          f"is {hwm:,}.")
        else:
            pipe_reader = f"{socket}'s own engine" if pipe["kind"] == "send" else pipe["to"]
            causes.append(f"Its pipe {pipe['name']} held up to {_messages(held[1])} during the episode, below its {word} of "
                          f"{hwm:,}: {socket} refused on its own stale view of it. The pipe's reader, {pipe_reader}, reports "
                          f"what it took only every LWM = {pipe['lwm']:,} reads (pipe_t::check_hwm counts written - reported >= "
                          f"{word}).")
        causes += ctx.reader(reader, start, end)
        if pipe["kind"] == "send":
            causes += _pipe_chain(ctx, index, start, end)
    return refusal


# -- stalls ----------------------------------------------------------------------------------------


def _stalls(ctx: _Context) -> list[str]:
    found = []
    for name, sender in (ctx.summary.get("senders") or {}).items():
        socket = sender["socket"]
        sock = ctx.sockets.get(socket)
        kind = sock.type if sock else ""
        label = workload_label("send", name)
        blocked = sender.get("blocked_s") or 0.0
        active = sender.get("active_s") or 0.0
        if blocked > 0:
            times = (ctx.summary["sockets"].get(socket) or {}).get("blocked_count", 0)
            parts = [f"{label} on {kind} {socket} was blocked in send for {human_time(blocked)} of its {human_time(active)} "
                     f"({times:,} times): a {kind} waits when no pipe has room for the message (its mute state is 'block')."]
            for pipe in ctx.pipes:
                if pipe["from"] != socket or pipe["kind"] not in ("send", "inproc") or pipe["hwm"] <= 0:
                    continue
                # within LWM of its HWM: full in the writer's (lagging) view
                if pipe["max_depth"] >= pipe["hwm"] - pipe["lwm"]:
                    reader = pipe.get("destination") or pipe["to"]
                    places = ctx.direction(f"{socket}->{pipe['to']}", 0.0, ctx.summary["sim_time_s"]) if pipe["kind"] == "send" else None
                    kernel = (f"; the kernel of {socket}->{pipe['to']} held up to {places['kernel_messages']:,} messages "
                              f"({human_bytes(places['kernel_bytes'])})" if places and places.get("kernel_messages") else "")
                    parts.append(f"Its pipe {pipe['name']} reached {pipe['max_depth']:,} of {ctx.hwm_word(pipe['kind'])} "
                                 f"{pipe['hwm']:,}{kernel}.")
                    parts += [s for s in ctx.reader(reader, 0.0) if "had not started" in s or "offered utilisation" in s]
            found.append(" ".join(parts))
        if kind == "REQ" and sender.get("rtt_s", {}).get("count"):
            rtt = sender["rtt_s"]
            waited = rtt["mean"] * rtt["count"]
            found.append(f"{label} on REQ {socket} works in lockstep: each request waits for its reply before the next is sent. "
                         f"{rtt['count']:,} round trips took {human_time(rtt['p50'])} at the median and {human_time(rtt['p99'])} at "
                         f"p99, {human_time(waited)} of waiting in all, so it cannot send faster than one request per round trip "
                         f"(about {1 / rtt['mean']:,.0f}/s here).")
    return found


def explain(result: Any, series: Any, scenario: Scenario) -> Explanation:
    """The loss episodes (largest first, at most ``MAX_EPISODES``) and stalls of one run.
    ``series``: the levels recorded over time (``SeriesRecorder.result``), or None."""
    ctx = _Context(result, series, scenario)
    found = episodes(result)
    shown = [_explain_episode(ctx, *item) for item in found[:MAX_EPISODES]]
    shown.sort(key=lambda e: (e.start_s, e.where))
    members = {name: template.name for template in scenario.templates if template.kind == "socket" for name in template.members}
    from .report_run import headline  # the page's answer: one definition of loss on both

    refused = refusal_episodes(result)
    refusals = [_explain_refusal(ctx, *item) for item in refused[:MAX_EPISODES]]
    refusals.sort(key=lambda r: (r.start_s, r.sender))
    totals = {workload_label("send", name): int(sender.get("again") or 0)
              for name, sender in (result.summary.get("senders") or {}).items() if sender.get("again")}
    return Explanation(result.summary["scenario"], result.summary["seed"], shown, _stalls(ctx), max(0, len(found) - MAX_EPISODES),
                       members, refusals, totals, max(0, len(refused) - MAX_EPISODES), headline(result.summary, scenario))
