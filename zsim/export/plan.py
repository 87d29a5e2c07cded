"""The scenario as a program lays it out, before any code is written.

A ZeroMQ socket belongs to one thread: the program gives each socket a thread of its own
(``SocketUnit``) that runs its loops one after another, or a [[send]] and a [[recv]] in one
poll loop where the simulator runs them side by side and one thread can do so faithfully
(``interleaved``); a [[recv]]'s forward_to socket belongs to the same thread, a proxy's two
sockets to the proxy. What cannot be laid out so is refused here, in one line naming the
socket. The plan also says which sockets wait for a peer's bind before they connect
(``waits``), when the timeline's last event is, and (``notes``) where the program runs
one after another what the simulator runs side by side. A socket's ``[[call]]``s belong to
the thread that owns it (``SocketUnit.calls``, ``Plan.proxy_calls``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import spec
from ..errors import ScenarioError
from ..socket_types import TYPES
from ..spec import CallSpec, RecvSpec, Scenario, SendSpec, SocketSpec
from ..templates import Template
from .literals import seconds


@dataclass
class SocketUnit:
    """A socket and what its thread does: its loops (in start order) and the socket a
    [[recv]] of it forwards to, which the same thread owns."""

    sock: SocketSpec
    loops: list[SendSpec | RecvSpec] = field(default_factory=list)
    forward: SocketSpec | None = None
    #: a [[send]] and a [[recv]] that the simulator runs side by side: one poll loop (``interleaved``)
    interleaved: bool = False
    #: the [[call]]s on its socket and on its forward socket, in time order (the thread makes them)
    calls: list[CallSpec] = field(default_factory=list)


class Plan:
    """Who does what in the program of ``scenario``: per process its socket threads
    (``units``) and proxies, template membership, and the waits for binds."""

    def __init__(self, scenario: Scenario) -> None:
        self.s = scenario
        #: loops of one socket that run one after another here and side by side in the simulator
        self.notes: list[str] = []
        #: (kind, entity name) -> (its template, its index)
        self.member_of: dict[tuple[str, str], tuple[Template, int]] = {}
        for template in scenario.templates:
            for index, member in enumerate(template.members):
                self.member_of[(template.kind, member)] = (template, index)
        self.proxied = {name for proxy in scenario.proxies for name in (proxy.frontend, proxy.backend)}
        #: per process, its sockets and the proxies it runs, in the scenario's order (looked up
        #: per process: a scan of every socket per process was quadratic in a template's members)
        self.sockets_of: dict[str, list[SocketSpec]] = {}
        for sock in scenario.sockets:
            self.sockets_of.setdefault(sock.process, []).append(sock)
        self.proxies_of: dict[str, list[spec.ProxySpec]] = {}
        for proxy in scenario.proxies:
            self.proxies_of.setdefault(scenario.socket(proxy.frontend).process, []).append(proxy)
        #: per socket, its [[call]]s with their places in the scenario's (time-ordered) list
        self.calls_of: dict[str, list[tuple[int, CallSpec]]] = {}
        for index, call in enumerate(scenario.calls):
            self.calls_of.setdefault(call.socket, []).append((index, call))
        #: per proxy, the [[call]]s on its two sockets in time order (its thread makes them)
        self.proxy_calls = {proxy.name: self._proxy_calls(proxy) for proxy in scenario.proxies}
        self.units = self._units()
        #: per socket, the sockets in other threads whose bind it waits for before it connects
        self.waits = self._waits()
        waited = {name for names in self.waits.values() for name in names}  # one set: a scan per socket was quadratic
        #: the sockets some socket waits for, in the scenario's order (the program's BINDERS)
        self.binders = [sock.name for sock in scenario.sockets if sock.name in waited]

    def _units(self) -> dict[str, list[SocketUnit]]:
        """Per process, its socket threads (proxied sockets belong to their proxy)."""
        s = self.s
        owner: dict[str, str] = {}
        loops: dict[str, list[SendSpec | RecvSpec]] = {sock.name: [] for sock in s.sockets}
        for send in s.sends:
            loops[send.socket].append(send)
        for recv in s.recvs:
            loops[recv.socket].append(recv)
            if recv.forward_to is not None:
                label = spec.workload_label("recv", recv.name)
                other = owner.get(recv.forward_to)
                if other is not None and other != recv.socket:
                    raise ScenarioError(f"{label}.forward_to", f"socket {recv.forward_to!r} is also forwarded to from socket {other!r}; "
                                                               "the exported program gives each socket to one thread")
                owner[recv.forward_to] = recv.socket
        for target, source in owner.items():
            if loops[target]:
                first = loops[target][0]
                kind = "send" if isinstance(first, SendSpec) else "recv"
                raise ScenarioError(f"{spec.workload_label(kind, first.name)}.socket",
                                    f"socket {target!r} is the forward_to of a [[recv]] on {source!r} and has loops of its own; the "
                                    "exported program gives each socket to one thread (the one that forwards to it)")
        units: dict[str, list[SocketUnit]] = {proc.name: [] for proc in s.processes}
        for sock in s.sockets:
            if sock.name in self.proxied or sock.name in owner:
                continue
            ordered = sorted(loops[sock.name], key=lambda w: max(w.start_s, sock.open_at_s))
            forwards = {w.forward_to for w in ordered if isinstance(w, RecvSpec) and w.forward_to is not None}
            unit = SocketUnit(sock, ordered, s.socket(forwards.pop()) if forwards else None)
            unit.interleaved = self._side_by_side(unit)
            unit.calls = self._calls_of_thread([sock.name] + ([unit.forward.name] if unit.forward is not None else []))
            units[sock.process].append(unit)
            if not unit.interleaved:
                self._note_sequential(unit)
        return units

    def _calls_of_thread(self, sockets: list[str]) -> list[CallSpec]:
        """The [[call]]s on the sockets one thread owns, in time order (calls at one time in
        the file's order)."""
        return [call for _index, call in sorted(found for name in sockets for found in self.calls_of.get(name, []))]

    def _proxy_calls(self, proxy: spec.ProxySpec) -> list[CallSpec]:
        """The [[call]]s on a proxy's sockets, which its poll loop makes until it ends (when
        one of them closes); a call after that is refused in one line."""
        s = self.s
        calls = self._calls_of_thread([proxy.frontend, proxy.backend])
        closes = [t for t in (s.socket(proxy.frontend).close_at_s, s.socket(proxy.backend).close_at_s) if t is not None]
        for call in calls:
            if closes and call.at_s >= min(closes):
                raise ScenarioError(f"{call.label} (socket {call.socket}).at_s",
                                    f"is {call.at_s:g} s, after proxy {proxy.name} ends (one of its sockets closes at {min(closes):g} s): "
                                    "the exported program makes a proxy's calls in its poll loop")
        return calls

    def _side_by_side(self, unit: SocketUnit) -> bool:
        """Whether a [[send]] and a [[recv]] of the socket overlap in time (the simulator runs
        them side by side, the program in one poll loop: ``interleaved``); raises
        ScenarioError, naming the socket and why, where one thread cannot do that faithfully."""
        s, sock = self.s, unit.sock
        sends = [w for w in unit.loops if isinstance(w, SendSpec)]
        recvs = [w for w in unit.loops if isinstance(w, RecvSpec)]
        ends = [s.ends_at(w) for w in unit.loops]
        overlap = any(isinstance(a, SendSpec) != isinstance(b, SendSpec) and (end is None or end > s.starts_at(b))
                      for a, b, end in zip(unit.loops, unit.loops[1:], ends))  # noqa: B905 - one shorter by construction
        if not overlap:
            return False
        label = f"socket[{sock.name}]"
        if len(sends) != 1 or len(recvs) != 1:
            raise ScenarioError(label, f"{len(sends)} [[send]] and {len(recvs)} [[recv]] loops run side by side on it; zsim export "
                                       "interleaves one [[send]] with one [[recv]] in the poll loop of the thread that owns the socket")
        send, recv = sends[0], recvs[0]
        why = None
        if TYPES[sock.type].request:
            why = "a REQ's [[send]] takes each reply itself"
        elif recv.forward_to is not None or recv.reply:
            why = f"{recv.name} answers or forwards what it receives"
        elif not (recv.service.is_constant and recv.service.value == 0) or recv.pause_every is not None:
            why = f"{recv.name} works or stalls between receives (service_s, pause_s)"
        elif sock.options.rcvtimeo >= 0 or sock.options.sndtimeo >= 0:
            why = "its RCVTIMEO/SNDTIMEO bound single calls"
        elif s.starts_at(recv) > s.starts_at(send):
            why = f"{recv.name} starts after {send.name}"
        if why is not None:
            raise ScenarioError(label, f"{send.name} and {recv.name} run side by side on it and {why}: one thread (a ZeroMQ socket "
                                       "belongs to one thread) would hold one back while the other waits, which the simulator does not; "
                                       "give the receives a socket of their own")
        return True

    def _note_sequential(self, unit: SocketUnit) -> None:
        """Loops on one socket run one after another in its thread; say so when the
        simulator would run them side by side."""
        sock = unit.sock
        for before, after in zip(unit.loops, unit.loops[1:]):  # noqa: B905 - one shorter by construction
            ends = self.s.ends_at(before)
            if ends is None or ends > self.s.starts_at(after):
                self.notes.append(
                    f"socket {sock.name}: its loops {before.name} and {after.name} run one after the other in the thread that owns "
                    f"the socket (a ZeroMQ socket belongs to one thread); the simulator runs them side by side from "
                    f"t = {seconds(self.s.starts_at(before))} and {seconds(self.s.starts_at(after))}"
                )

    def _waits(self) -> dict[str, list[str]]:
        """Per socket that connects (tcp, ipc) at the instant its peer binds in another thread,
        the binders it waits for: the simulator binds every socket due at an instant before it
        connects any, and ZeroMQ retries a refused connect only after reconnect_ivl."""
        s = self.s
        binders = {e.key: sock for sock in s.sockets for e in sock.bind}
        thread: dict[str, str] = {}
        for units in self.units.values():
            for unit in units:
                thread[unit.sock.name] = unit.sock.name
                if unit.forward is not None:
                    thread[unit.forward.name] = unit.sock.name
        for proxy in s.proxies:
            thread[proxy.frontend] = thread[proxy.backend] = f"proxy {proxy.name}"
        waits: dict[str, list[str]] = {}
        for sock in s.sockets:
            for endpoint in sock.connect:
                peer = binders.get(endpoint.key)
                if (peer is not None and endpoint.transport != "inproc" and peer.open_at_s == sock.open_at_s
                        and thread[peer.name] != thread[sock.name] and peer.name not in waits.get(sock.name, [])):
                    waits.setdefault(sock.name, []).append(peer.name)
        return waits

    def last_event(self) -> float:
        """When the timeline's last event happens (a socket opens or closes, a loop starts or
        ends, a process exits, crashes or starts again, a [[call]] is made)."""
        s = self.s
        times = [0.0]
        for sock in s.sockets:
            times += [sock.open_at_s] + ([sock.close_at_s] if sock.close_at_s is not None else [])
        for proc in s.processes:
            times += [t for t in (proc.exit_at_s, proc.crash_at_s, proc.restart_at_s) if t is not None]
        workloads: list[SendSpec | RecvSpec] = [*s.sends, *s.recvs]
        for w in workloads:
            times.append(s.starts_at(w) + (w.duration_s or 0.0))
        times += [call.at_s for call in s.calls]
        return max(times)
