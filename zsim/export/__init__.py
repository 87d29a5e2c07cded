"""Design to code: ``zsim export FILE --pyzmq OUT.py`` writes a standalone pyzmq program.

The program does what the scenario describes, on real sockets, laid out as a zguide
example: per ``[[process]]`` one function (one OS process with one ``zmq.Context``; a
scenario of one process runs it in a thread), per socket an opener that sets every option
explicitly and binds/connects as written, a thread that owns the socket from ``open_at_s``
to ``close_at_s`` and runs its ``[[send]]``/``[[recv]]`` loops, a poll loop per
``[[proxy]]``, and ``main()``, which starts the processes, ends the run (at ``until_s``, or
when no message has moved for a while) and prints the counts per socket as JSON, the
keys of ``zsim run --json``'s ``sockets`` (``sent``, ``received``, ``send_again``,
``send_unroutable``, ``recv_again``), so a test can compare the two.

What a program cannot express (the profile's costs, the simulator's random streams, a
crash's exact mechanics...) is said in the program's own header, field by field.

Templates (``count = N``): the members of a counted process, or of a counted socket in an
ordinary process, come out as one function with the member index ``i`` when their code
differs only in strings and numbers that are linear in ``i`` (``"w{i+1}_in"`` ->
``f"w{i + 1}_in"``), checked for every member; otherwise each member is written out.

Nothing here imports zmq: the output is text. ``zsim.export.plumbing`` holds the fixed
part of every program (the clock, the end of the run, the counts).
"""

from __future__ import annotations

import builtins
import keyword
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__, files, spec
from ..distributions import Distribution
from ..errors import ScenarioError
from ..socket_types import DIST, ROUTE, TYPES
from ..spec import LOCAL_HOSTS, RecvSpec, Scenario, SendSpec, SocketSpec
from ..templates import Template
from . import plumbing
from .fold import fold, fstring_literal, infer
from .literals import describe, doc_safe, docstring, draw, num, quoted, quoted_bytes, seconds, section, value_lists, wrap

#: Names the generated code uses itself: a socket or loop never gets one of them.
_RESERVED = frozenset(
    set(dir(builtins)) | set(keyword.kwlist) | {
        "annotations", "argparse", "contextlib", "itertools", "json", "math", "multiprocessing", "np", "os", "queue",
        "signal", "sys", "threading", "time", "traceback", "zlib", "zmq", "Any", "Run", "Proc", "Stopped", "COUNTS",
        "SCENARIO", "SEED", "UNTIL_S", "QUIET_S", "LAST_EVENT_S", "BINDERS", "frames", "main", "proc", "run", "i", "n", "mp",
        "message", "reply", "envelope", "body", "size", "due", "rng", "poller", "other", "sock", "topics", "peers",
        "payload", "received", "next_pause", "message_in", "events", "ready", "sending", "receiving", "pause", "error", "args",
        "parser", "processes", "process", "thread",
        "report", "result", "ctx", "name", "opener", "target", "intervals", "sizes", "service_times", "reply_sizes",
        "pause_gaps", "pause_lengths",
    }
)

_SOCKET_CONSTANT = {name: f"zmq.{name}" for name in TYPES}


# --------------------------------------------------------------------------------------
# The scenario, as the program lays it out


@dataclass
class _SocketUnit:
    """A socket and what its thread does: its loops (in start order) and the socket a
    [[recv]] of it forwards to, which the same thread owns."""

    sock: SocketSpec
    loops: list[SendSpec | RecvSpec] = field(default_factory=list)
    forward: SocketSpec | None = None
    #: a [[send]] and a [[recv]] that the simulator runs side by side: one poll loop (``interleaved``)
    interleaved: bool = False


class _Writer:
    def __init__(self, scenario: Scenario, source: str, program: str) -> None:
        self.s = scenario
        self.source = source
        self.program_name = program
        self.names: dict[tuple[str, str], str] = {}
        self.taken: set[str] = set(_RESERVED)
        self.needs: set[str] = set()
        self.notes: list[str] = []
        self.member: dict[tuple[str, str], tuple[Template, int]] = {}
        for template in scenario.templates:
            for index, member in enumerate(template.members):
                self.member[(template.kind, member)] = (template, index)
        self.proxied = {name for proxy in scenario.proxies for name in (proxy.frontend, proxy.backend)}
        #: per process, its sockets and the proxies it runs, in the scenario's order (looked up
        #: per process: a scan of every socket per process was quadratic in a template's members)
        self.sockets_of: dict[str, list[SocketSpec]] = {}
        for sock in scenario.sockets:
            self.sockets_of.setdefault(sock.process, []).append(sock)
        self.proxies_of: dict[str, list[spec.ProxySpec]] = {}
        for proxy in scenario.proxies:
            self.proxies_of.setdefault(scenario.socket(proxy.frontend).process, []).append(proxy)
        self.units = self._units()
        self.waits = self._waits()
        waited = {name for names in self.waits.values() for name in names}  # one set: a scan per socket was quadratic
        self.binders = [sock.name for sock in scenario.sockets if sock.name in waited]
        self.folded: list[Template] = []  # written once, as functions of i
        self.expanded: list[Template] = []  # written out member by member

    # -- names -----------------------------------------------------------------------

    def ident(self, kind: str, name: str, member: bool, suffix: str = "", prefix: str = "") -> str:
        """The Python name of an entity: its (template) name made an identifier, unique."""
        base = name
        if member and (kind, name) in self.member:
            base = self.member[(kind, name)][0].name
        for head in ("send.", "recv."):
            if kind in ("send", "recv") and base.startswith(head):
                base = base[len(head):]
        key = (kind + prefix + suffix, base)
        if key in self.names:
            return self.names[key]
        word = re.sub(r"\W", "_", base)
        if not word or word[0].isdigit():
            word = "s" + word
        word = f"{prefix}{word}{suffix}"
        candidate, n = word, 2
        while candidate in self.taken or keyword.iskeyword(candidate):
            candidate = f"{word}_{n}"
            n += 1
        self.taken.add(candidate)
        self.names[key] = candidate
        return candidate

    def var(self, sock: SocketSpec, member: bool) -> str:
        return self.ident("socket", sock.name, member)

    # -- layout ------------------------------------------------------------------------

    def _units(self) -> dict[str, list[_SocketUnit]]:
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
        units: dict[str, list[_SocketUnit]] = {proc.name: [] for proc in s.processes}
        for sock in s.sockets:
            if sock.name in self.proxied or sock.name in owner:
                continue
            ordered = sorted(loops[sock.name], key=lambda w: max(w.start_s, sock.open_at_s))
            forwards = {w.forward_to for w in ordered if isinstance(w, RecvSpec) and w.forward_to is not None}
            unit = _SocketUnit(sock, ordered, s.socket(forwards.pop()) if forwards else None)
            unit.interleaved = self._side_by_side(unit)
            units[sock.process].append(unit)
            if not unit.interleaved:
                self._note_sequential(unit)
        return units

    def _side_by_side(self, unit: _SocketUnit) -> bool:
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

    def _note_sequential(self, unit: _SocketUnit) -> None:
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

    # -- code: sockets -----------------------------------------------------------------

    def opener(self, sock: SocketSpec, member: bool) -> list[str]:
        traits = TYPES[sock.type]
        opts = sock.options
        fn = self.ident("socket", sock.name, member, prefix="open_")
        params = "ctx: zmq.Context" + (", i: int" if member else "")
        where = [f"binds {e.text}" for e in sock.bind] + [f"connects {e.text}" for e in sock.connect]
        lines = [f"def {fn}({params}) -> zmq.Socket:",
                 f'    """[[socket]] {sock.name}: {sock.type}, {doc_safe(", then ".join(where))}."""',
                 f"    sock = ctx.socket({_SOCKET_CONSTANT[sock.type]})"]
        lines.append(f"    sock.setsockopt(zmq.SNDHWM, {opts.sndhwm})" + ("  # 0: no limit" if opts.sndhwm == 0 else ""))
        lines.append(f"    sock.setsockopt(zmq.RCVHWM, {opts.rcvhwm})" + ("  # 0: no limit" if opts.rcvhwm == 0 else ""))
        linger_note = {-1: "  # close and zmq_ctx_term wait until every queued message is sent",
                       0: "  # close drops what is queued"}.get(opts.linger, "  # ms")
        lines.append(f"    sock.setsockopt(zmq.LINGER, {opts.linger}){linger_note}")
        if traits.has_routing_id:
            note = "  # the name ROUTER peers address it by" if sock.options.routing_id is None else ""
            lines.append(f"    sock.setsockopt(zmq.ROUTING_ID, {quoted_bytes(sock.routing_id)}){note}")
        for name, constant, default in (("sndtimeo", "SNDTIMEO", -1), ("rcvtimeo", "RCVTIMEO", -1), ("sndbuf", "SNDBUF", -1),
                                        ("rcvbuf", "RCVBUF", -1), ("reconnect_ivl", "RECONNECT_IVL", 100),
                                        ("reconnect_ivl_max", "RECONNECT_IVL_MAX", 0)):
            value = getattr(opts, name)
            if value != default:
                lines.append(f"    sock.setsockopt(zmq.{constant}, {value})")
        for name, constant in (("immediate", "IMMEDIATE"), ("conflate", "CONFLATE"), ("router_mandatory", "ROUTER_MANDATORY"),
                               ("xpub_nodrop", "XPUB_NODROP")):
            if getattr(opts, name):
                lines.append(f"    sock.setsockopt(zmq.{constant}, 1)")
        if traits.filters_on_recv:
            for prefix in opts.subscribe:
                lines.append(f"    sock.setsockopt(zmq.SUBSCRIBE, {quoted_bytes(prefix)})" + ("  # everything" if prefix == "" else ""))
        for endpoint in sock.bind:
            lines.append(f"    sock.bind({quoted(endpoint.text)})")
        for endpoint in sock.connect:
            if endpoint.transport == "tcp" and endpoint.host not in LOCAL_HOSTS:
                lines.append(f"    sock.connect(on_host({quoted(endpoint.text)}))  # a [[host]]'s name: its address in HOSTS")
            else:
                lines.append(f"    sock.connect({quoted(endpoint.text)})")
        if traits.sends_subscriptions and not traits.filters_on_recv:
            for prefix in opts.subscribe:
                lines.append(f'    sock.send(b"\\x01" + {quoted_bytes(prefix)})  # an XSUB subscribes by sending \\x01 + prefix')
        lines.append("    return sock")
        return lines

    def _open_call(self, sock: SocketSpec, member: bool) -> str:
        fn = self.ident("socket", sock.name, member, prefix="open_")
        args = ", i" if member else ""
        close = f", close_at_s={num(sock.close_at_s)}" if sock.close_at_s is not None else ""
        after = self.waits.get(sock.name, [])
        if after:
            close += f", after=({', '.join(quoted(name) for name in after)},)"
        return f"proc.open({quoted(sock.name)}, {fn}{args}, at_s={num(sock.open_at_s)}{close})"

    def socket_thread(self, unit: _SocketUnit, exit_after_sends: bool, member: bool) -> list[str]:
        sock = unit.sock
        var = self.var(sock, member)
        fn = self.ident("socket", sock.name, member, suffix="_thread")
        i_param = ", i: int" if member else ""
        i_arg = ", i" if member else ""
        owned = f"socket {sock.name}" + (f" and socket {unit.forward.name} (its results go there)" if unit.forward else "")
        held = f"until t = {seconds(sock.close_at_s)}" if sock.close_at_s is not None else "until the process leaves"
        runs = ", then ".join(w.name for w in unit.loops) if unit.loops else "no loop"
        if unit.interleaved:
            runs = " and ".join(w.name for w in unit.loops) + " in one poll loop"
        doc = f"The thread that owns {owned}: opened at t = {seconds(sock.open_at_s)}, runs {runs}, held open {held}."
        lines = [f"def {fn}(proc: Proc{i_param}) -> None:", *docstring(doc, 4),
                 f"    with {self._open_call(sock, member)} as {var}:" if unit.loops else f"    with {self._open_call(sock, member)}:"]
        indent = "        "
        forward_var = None
        if unit.forward is not None:
            forward_var = self.var(unit.forward, member)
            lines.append(f"{indent}with {self._open_call(unit.forward, member)} as {forward_var}:")
            indent += "    "
        if not unit.loops:
            lines.append(f"{indent}pass  # no [[send]] or [[recv]] uses it: it is open, and its queues fill")
        if unit.interleaved:
            lines.append(f"{indent}{self.ident('socket', sock.name, member, suffix='_loop')}(proc, {var}{i_arg})")
            if exit_after_sends:
                lines.append(f"{indent}proc.sender_done()")
            return lines
        for workload in unit.loops:
            kind = "send" if isinstance(workload, SendSpec) else "recv"
            loop_fn = self.ident(kind, workload.name, member, prefix=f"{kind}_")
            extra = f", {forward_var}" if isinstance(workload, RecvSpec) and workload.forward_to is not None else ""
            lines.append(f"{indent}{loop_fn}(proc, {var}{extra}{i_arg})")
            if kind == "send" and exit_after_sends:
                lines.append(f"{indent}proc.sender_done()")
        return lines

    # -- code: loops -----------------------------------------------------------------------

    def _header(self, count: int | None, end_s: float | None, need_n: bool, loop: str, resumable: bool) -> list[str]:
        """The loop statement and its end check; its counter is ``n`` when ``need_n``."""
        counter = "n" if need_n else "_"
        if count is not None:
            iterate = f"proc.attempts({quoted(loop)}, {count})" if resumable else f"range({count})"
            head = [f"    for {counter} in {iterate}:"]
        elif end_s is not None and not need_n:
            return [f"    while proc.now() < {num(end_s)}:"]
        elif need_n:
            self.needs.add("itertools")
            head = [f"    for {counter} in itertools.count():"]
        else:
            head = ["    while True:"]
        if end_s is not None:
            head += [f"        if proc.now() >= {num(end_s)}:", "            return"]
        return head

    def send_loop(self, send: SendSpec, member: bool, resumable: bool) -> list[str]:
        sock = self.s.socket(send.socket)
        traits = TYPES[sock.type]
        var = self.var(sock, member)
        fn = self.ident("send", send.name, member, prefix="send_")
        start = self.s.starts_at(send)
        end_s = self._send_end(send)
        doc = f"[[send]] {send.name} on {sock.name}: {self._send_words(send)}."
        if traits.request:
            doc += " Each request waits for its reply (REQ)."
        params = f"proc: Proc, {var}: zmq.Socket" + (", i: int" if member else "")
        lines = [f"def {fn}({params}) -> None:", *docstring(doc, 4)]
        schedule = send.pacing == "schedule" and not (send.interval.is_constant and send.interval.value == 0)
        prelude, message = self._send_prelude(send)
        lines += prelude[:self._rng_lines(send)]
        if schedule:
            lines += [f"    due = {num(start)}", "    if not proc.sleep_until(due):", "        return"]
        else:
            lines += [f"    if not proc.sleep_until({num(start)}):", "        return"]
        lines += prelude[self._rng_lines(send):]
        need_n = len(send.topics or ("",)) > 1 or len(send.to) > 1
        lines += self._header(send.count, end_s, need_n, send.name, resumable)
        body = "        "
        if sock.close_at_s is not None and not send.dontwait and sock.options.sndtimeo < 0 and traits.mute == "block":
            # a send that could block for ever must give up when the socket closes (SNDTIMEO bounds the others)
            lines += [f"{body}if not {var}.poll(proc.ms_until({num(sock.close_at_s)}), zmq.POLLOUT):",
                      f"{body}    return  # still no room when the socket closes"]
        lines += self._send_one(send, var, body, message, "return")
        if not (send.interval.is_constant and send.interval.value == 0):
            if schedule:
                lines += [f"{body}due += {draw(send.interval, 'intervals')}",
                          f"{body}if not proc.sleep_until(due):  # behind schedule: at once, until caught up",
                          f"{body}    return"]
            else:
                lines += [f"{body}if not proc.sleep({draw(send.interval, 'intervals')}):", f"{body}    return"]
        return lines

    def _send_end(self, send: SendSpec) -> float | None:
        """When a [[send]] stops: its duration's end or its socket's close, whichever first."""
        sock = self.s.socket(send.socket)
        end_s = self.s.ends_at(send)
        if sock.close_at_s is not None:
            end_s = sock.close_at_s if end_s is None else min(end_s, sock.close_at_s)
        return end_s

    def _send_words(self, send: SendSpec) -> str:
        """``5,000 messages of 100 B from t = 100 ms; back to back``: a [[send]] for its docstring."""
        bound = f"{send.count:,} messages" if send.count is not None else "messages"
        if send.duration_s is not None:
            bound += f" for {seconds(send.duration_s)}"
        elif send.count is None:
            bound += " until the run ends"
        what = f"of {describe(send.size)}" + (f", topic {', '.join(repr(t) for t in send.topics)}" if send.topics else "")
        if send.parts > 1:
            what += f", {send.parts} frames"
        if send.pacing == "schedule":
            pace = f"attempts due every {describe(send.interval)} (a schedule: a late send does not delay the next)"
        elif send.interval.is_constant and send.interval.value == 0:
            pace = "back to back"
        else:
            pace = f"send(), then wait {describe(send.interval)}"
        return f"{bound} {what} from t = {seconds(self.s.starts_at(send))}; {pace}"

    def _rng_lines(self, send: SendSpec) -> int:
        """How many lines of ``_send_prelude`` draw random numbers (they come before the first wait)."""
        if send.interval.is_constant and send.size.is_constant:
            return 0
        return 1 + len(value_lists([(send.interval, "intervals"), (send.size, "sizes")]))

    def _send_prelude(self, send: SendSpec) -> tuple[list[str], tuple[str | None, str]]:
        """The lines before a [[send]]'s loop (its random generator, its topics, routing ids and
        message, when it is the same every time) and ``_message``'s (constant message, or None;
        the expression that builds one)."""
        lines = []
        if not send.interval.is_constant or not send.size.is_constant:
            self.needs.add("rng")
            lines.append(f"    rng = proc.rng({quoted(send.name)})  # numpy: not the simulator's draws")
            lines += value_lists([(send.interval, "intervals"), (send.size, "sizes")])
        # the message: topic + payload in one frame, or frames
        topics = send.topics or ("",)
        topic_exprs = [quoted_bytes(t) if t else 'b""' for t in topics]
        if len(topics) > 1:
            lines.append(f"    topics = [{', '.join(topic_exprs)}]")
        if len(send.to) > 1:
            lines.append(f"    peers = [{', '.join(quoted_bytes(t) for t in send.to)}]  # routing ids, in turn")
        topic_expr = "topics[n % len(topics)]" if len(topics) > 1 else topic_exprs[0]
        message = self._message(send, topic_expr, topic_exprs[0] if len(topics) == 1 else None)
        if message[0] is not None:
            lines.append(f"    message = {message[0]}")
        return lines, message

    def _send_one(self, send: SendSpec, var: str, body: str, message: tuple[str | None, str], stop: str) -> list[str]:
        """One send of a [[send]] and its counts (``_send_prelude`` first); ``stop`` ends the
        loop (on_again = "stop")."""
        sock = self.s.socket(send.socket)
        traits = TYPES[sock.type]
        lines = []
        if message[0] is None:
            if not send.size.is_constant:
                lines.append(f"{body}size = {draw(send.size, 'sizes', integer=True)}")
            lines.append(f"{body}message = {message[1]}")
        multi = send.parts > 1 or bool(send.to)
        body_expr = "proc.stamp(message)" if _stampable(send, traits) else "message"
        if send.to:
            peer = "peers[n % len(peers)]" if len(send.to) > 1 else quoted_bytes(send.to[0])
            frames_expr = f"[{peer}, {body_expr}]" if send.parts <= 1 else f"[{peer}, *{body_expr}]"
        else:
            frames_expr = body_expr
        call = f"{var}.send_multipart({frames_expr}" if multi else f"{var}.send({body_expr}"
        call += ", zmq.DONTWAIT)" if send.dontwait else ")"
        again = send.dontwait or sock.options.sndtimeo >= 0
        unroutable = traits.send == ROUTE and sock.options.router_mandatory
        after = [f"proc.count({var}, \"sent\")"]
        if traits.request:
            reply = [f"reply = {var}.recv_multipart()"]
            if sock.close_at_s is not None and sock.options.rcvtimeo < 0:
                reply = [f"if not {var}.poll(proc.ms_until({num(sock.close_at_s)})):",
                         "    return  # no reply before the socket closes", *reply]
            elif sock.options.rcvtimeo >= 0:
                reply = ["try:", f"    reply = {var}.recv_multipart()",
                         "except zmq.Again:  # RCVTIMEO expired: a REQ cannot send again before its reply",
                         "    return"]
            after += reply + [f"proc.received({var}, reply)  # the reply, and the time since the request"]
        stop_line = stop if send.on_again == "stop" else None
        if again or unroutable:
            lines += [f"{body}try:", f"{body}    {call}"]
            if again:
                why = "DONTWAIT" if send.dontwait else "SNDTIMEO"
                note = " (a PUB never raises it: it drops)" if traits.send == DIST and not sock.options.xpub_nodrop else ""
                lines += [f"{body}except zmq.Again:  # {why} and no room{note}", f"{body}    proc.count({var}, \"send_again\")"]
                if stop_line:
                    lines.append(f"{body}    {stop_line}  # on_again = \"stop\"")
            if unroutable:
                lines += [f"{body}except zmq.ZMQError as error:  # ROUTER_MANDATORY: no peer of that routing id",
                          f"{body}    if error.errno != zmq.EHOSTUNREACH:", f"{body}        raise",
                          f"{body}    proc.count({var}, \"send_unroutable\")"]
                if stop_line:
                    lines.append(f"{body}    {stop_line}  # on_again = \"stop\"")
            lines += [f"{body}else:"] + [f"{body}    {line}" for line in after]
        else:
            lines += [f"{body}{call}"] + [f"{body}{line}" for line in after]
        return lines

    def interleaved_loop(self, unit: _SocketUnit, member: bool, resumable: bool) -> list[str]:
        """A socket's [[send]] and [[recv]] in one zmq.Poller loop (``_side_by_side`` said it can
        be written): it waits for a message or for the next send, whichever comes first, as the
        simulator's two loops do side by side."""
        sock = unit.sock
        send = next(w for w in unit.loops if isinstance(w, SendSpec))
        recv = next(w for w in unit.loops if isinstance(w, RecvSpec))
        var = self.var(sock, member)
        fn = self.ident("socket", sock.name, member, suffix="_loop")
        doc = (f"{send.name} and {recv.name} on {sock.name}, in one poll loop: a ZeroMQ socket belongs to one thread, and the "
               f"simulator runs the two side by side. [[send]] {send.name}: {self._send_words(send)}. [[recv]] {recv.name}: "
               f"{f'{recv.count:,} messages' if recv.count is not None else 'every message'} from t = "
               f"{seconds(self.s.starts_at(recv))}.")
        lines = [f"def {fn}(proc: Proc, {var}: zmq.Socket{', i: int' if member else ''}) -> None:", *docstring(doc, 4)]
        prelude, message = self._send_prelude(send)
        lines += prelude
        blocks = TYPES[sock.type].mute == "block" and not send.dontwait
        send_end, recv_end = self._send_end(send), self.s.ends_at(recv)
        if sock.close_at_s is not None:
            recv_end = sock.close_at_s if recv_end is None else min(recv_end, sock.close_at_s)
        lines += [f"    if not proc.sleep_until({num(self.s.starts_at(recv))}):", "        return",
                  "    poller = zmq.Poller()", f"    poller.register({var}, zmq.POLLIN)",
                  f"    due = {num(self.s.starts_at(send))}  # when {send.name} sends next"]
        counted = send.count is not None or len(send.topics) > 1 or len(send.to) > 1
        if counted:
            lines.append(f"    n = {'proc.loops.get(' + quoted(send.name) + ', 0)' if resumable else '0'}  # sends so far")
        if recv.count is not None:
            lines.append(f"    received = {'proc.loops.get(' + quoted(recv.name) + ', 0)' if resumable else '0'}")
        sending = "True" if send.count is None else f"n < {send.count}"
        receiving = "True" if recv.count is None else f"received < {recv.count}"
        lines += [f"    sending, receiving = {sending}, {receiving}", "    while sending or receiving:"]
        body = "        "
        if recv_end is not None:
            lines += [f"{body}if receiving and proc.now() >= {num(recv_end)}:  # {recv.name} ends",
                      f"{body}    receiving = False", f"{body}    poller.unregister({var})"]
        if send_end is not None:
            lines += [f"{body}if sending and due >= {num(send_end)}:  # {send.name} ends", f"{body}    sending = False"]
        if blocks:  # a send waits for room (POLLOUT), as the simulator's send loop blocks, while receives go on
            lines += [f"{body}ready = sending and proc.now() >= due",
                      f"{body}poller.register({var}, (zmq.POLLIN if receiving else 0) | (zmq.POLLOUT if ready else 0))",
                      f"{body}events = proc.poll(poller, None if ready or not sending else due)  # a message, room, or the next send"]
        else:
            lines.append(f"{body}events = proc.poll(poller, due if sending else None)  # a message, or the next send")
        lines += [f"{body}if events is None:", f"{body}    return  # the process is leaving"]
        incoming = f"events.get({var}, 0) & zmq.POLLIN" if blocks else f"{var} in events"
        lines += [f"{body}if {incoming}:", f"{body}    message_in = {var}.recv_multipart()",
                  f"{body}    proc.received({var}, message_in)"]
        if recv.count is not None:
            lines += [f"{body}    received += 1"]
            if resumable:
                lines.append(f"{body}    proc.loops[{quoted(recv.name)}] = received")
            lines += [f"{body}    if received == {recv.count}:", f"{body}        receiving = False",
                      f"{body}        poller.unregister({var})", f"{body}        {self._finished(recv)[0].strip()}"]
        if blocks:
            lines.append(f"{body}if ready and events.get({var}, 0) & zmq.POLLOUT:")
        else:
            lines.append(f"{body}if sending and proc.now() >= due:")
        inner = body + "    "
        lines += self._send_one(send, var, inner, message, "sending = False")
        if counted:
            lines.append(f"{inner}n += 1")
            if resumable:
                lines.append(f"{inner}proc.loops[{quoted(send.name)}] = n")
            if send.count is not None:
                lines.append(f"{inner}sending = sending and n < {send.count}")
        gap = draw(send.interval, "intervals")
        if send.pacing == "schedule":
            lines.append(f"{inner}due += {gap}  # a schedule: behind it, the next is due at once")
        else:
            lines.append(f"{inner}due = proc.now() + {gap}" if gap != "0.0" else f"{inner}due = proc.now()")
        return lines

    def _message(self, send: SendSpec, topic_expr: str, one_topic: str | None) -> tuple[str | None, str]:
        """(the message built once, or None) and the expression that builds it per send."""
        size = str(int(round(send.size.value))) if send.size.is_constant else "size"
        if send.parts <= 1:
            payload = f"bytes({size})"
            expression = payload if topic_expr == 'b""' else f"{topic_expr} + {payload}"
            constant = expression if send.size.is_constant and one_topic is not None else None
            return constant, expression
        if send.size.is_constant and one_topic is not None:
            frames = []
            total = int(round(send.size.value))
            count = send.parts - 1 if one_topic != 'b""' else send.parts
            base, extra = divmod(total, count)
            if one_topic != 'b""':
                frames.append(one_topic)
            frames += [f"bytes({base + (1 if k < extra else 0)})" for k in range(count)]
            return f"[{', '.join(frames)}]", ""
        self.needs.add("frames")
        return None, f"frames({topic_expr}, {size}, {send.parts})"

    def recv_loop(self, recv: RecvSpec, member: bool, resumable: bool) -> list[str]:
        sock = self.s.socket(recv.socket)
        var = self.var(sock, member)
        fn = self.ident("recv", recv.name, member, prefix="recv_")
        start = self.s.starts_at(recv)
        end_s = self.s.ends_at(recv)
        close = sock.close_at_s
        if close is not None:
            end_s = close if end_s is None else min(end_s, close)
        forward = self.s.socket(recv.forward_to) if recv.forward_to is not None else None
        random = any(d is not None and not d.is_constant for d in (recv.service, recv.reply_size, recv.pause_every, recv.pause))
        bound = f"{recv.count:,} messages" if recv.count is not None else "every message"
        if recv.duration_s is not None:
            bound += f" for {seconds(recv.duration_s)}"
        work = "no work between receives" if recv.service.is_constant and recv.service.value == 0 else \
            f"{describe(recv.service)} of work each"
        doc = f"[[recv]] {recv.name} on {sock.name}: {bound} from t = {seconds(start)}, {work}"
        if recv.pause_every is not None and recv.pause is not None:
            doc += f"; stalls of {describe(recv.pause)} every {describe(recv.pause_every)}"
        if forward is not None:
            doc += f"; the result goes out on {forward.name}"
        elif recv.reply:
            doc += "; replies to each"
        doc += "."
        params = f"proc: Proc, {var}: zmq.Socket" + (f", {self.var(forward, member)}: zmq.Socket" if forward else "")
        params += ", i: int" if member else ""
        lines = [f"def {fn}({params}) -> None:", *docstring(doc, 4)]
        if random:
            self.needs.add("rng")
            lines.append(f"    rng = proc.rng({quoted(recv.name)})  # numpy: not the simulator's draws")
            lines += value_lists([(recv.service, "service_times"), (recv.reply_size, "reply_sizes"), (recv.pause_every, "pause_gaps"),
                              (recv.pause, "pause_lengths")])
        lines += [f"    if not proc.sleep_until({num(start)}):", "        return"]
        pauses = recv.pause_every is not None and recv.pause is not None
        timeout = sock.options.rcvtimeo >= 0
        if pauses:
            assert recv.pause_every is not None
            lines.append(f"    next_pause = proc.now() + {draw(recv.pause_every, 'pause_gaps')}")
        body = "        "
        if recv.count is not None and timeout and not resumable:
            lines += ["    received = 0", f"    while received < {recv.count}:"]
            if end_s is not None:
                lines += [f"        if proc.now() >= {num(end_s)}:", "            return"]
        else:
            lines += self._header(recv.count, end_s, False, recv.name, resumable)
        if pauses:
            assert recv.pause is not None and recv.pause_every is not None
            lines += [f"{body}if proc.now() >= next_pause:  # a stall (a GC pause): no recv meanwhile",
                      f"{body}    pause = {draw(recv.pause, 'pause_lengths')}",
                      f"{body}    next_pause = proc.now() + pause + {draw(recv.pause_every, 'pause_gaps')}",
                      f"{body}    if not proc.sleep(pause):", f"{body}        return"]
        if close is not None and not timeout:  # (RCVTIMEO bounds the wait otherwise)
            lines += [f"{body}if not {var}.poll(proc.ms_until({num(close)})):",
                      f"{body}    return  # nothing more before the socket closes"]
        take = f"message = {var}.recv_multipart()"
        if timeout:
            retry = "continue" if recv.on_timeout == "retry" else "return"
            lines += [f"{body}try:", f"{body}    {take}",
                      f"{body}except zmq.Again:  # RCVTIMEO expired",
                      f"{body}    proc.count({var}, \"recv_again\")", f"{body}    {retry}  # on_timeout = \"{recv.on_timeout}\""]
        else:
            lines.append(f"{body}{take}")
        lines.append(f"{body}proc.received({var}, message)")
        if recv.count is not None and timeout and not resumable:
            lines.append(f"{body}received += 1")
        if not (recv.service.is_constant and recv.service.value == 0):
            if recv.busy:
                lines += [f"{body}if not proc.busy({draw(recv.service, 'service_times')}):  # the work, on the CPU (busy = true)",
                          f"{body}    return"]
            else:
                lines += [f"{body}if not proc.sleep({draw(recv.service, 'service_times')}):  # the work", f"{body}    return"]
        if forward is not None:
            out = self.var(forward, member)
            size = "sum(len(frame) for frame in message)"
            if recv.reply_size is not None:
                size = draw(recv.reply_size, "reply_sizes", integer=True)
            lines.append(f"{body}{out}.send(proc.carry(message, {size}))  # blocks while {forward.name} has no room")
            lines.append(f"{body}proc.count({out}, \"sent\")")
        elif recv.reply:
            lines += self._reply(recv, sock, var, body)
        if recv.count is not None:
            lines += self._finished(recv)
        return lines

    def _finished(self, recv: RecvSpec) -> list[str]:
        """After a count-bounded [[recv]]'s loop: the batch is done (since the first count-bounded
        [[send]] started, if there is one)."""
        senders = [w for w in self.s.sends if w.count is not None]
        if not senders:
            return [f"    proc.finished({quoted(recv.name)})  # every message it waited for"]
        first = min(senders, key=self.s.starts_at)
        return [f"    proc.finished({quoted(recv.name)}, since_s={num(self.s.starts_at(first))})  # the batch, since {first.name} "
                "began"]

    def _reply(self, recv: RecvSpec, sock: SocketSpec, var: str, body: str) -> list[str]:
        traits = TYPES[sock.type]
        lines = []
        frames = "message"
        if not traits.reply:  # a ROUTER or a DEALER sends the request's envelope back itself
            counts = {max(1, send.parts) for send in self.s.sends}
            if len(counts) == 1:
                count = counts.pop()
                lines += [f"{body}# the routing ids and delimiter the hops put before the request's {count} frame"
                          f"{'s' if count > 1 else ''}",
                          f"{body}envelope = message[:-{count}]"]
            elif traits.prepends_identity:
                lines += [f"{body}# the routing id, and the empty delimiter frame when the peer is a REQ",
                          f"{body}envelope = message[:2] if len(message) > 2 and message[1] == b\"\" else message[:1]"]
            else:
                lines += [f"{body}# up to the REQ delimiter, if a ROUTER in between kept one",
                          f"{body}envelope = message[:message.index(b\"\") + 1] if b\"\" in message[:-1] else []"]
            frames = "message[len(envelope):]"
        size = f"sum(len(frame) for frame in {frames})"
        if recv.reply_size is not None:
            size = draw(recv.reply_size, "reply_sizes", integer=True)
        lines.append(f"{body}reply = proc.carry(message, {size})  # the request's stamp, if it has one")
        if traits.reply:
            return lines + [f"{body}{var}.send(reply)", f"{body}proc.count({var}, \"sent\")"]
        call = f"{var}.send_multipart([*envelope, reply]"
        mandatory = traits.send == ROUTE and sock.options.router_mandatory
        if traits.send == ROUTE and not mandatory:
            # a ROUTER without ROUTER_MANDATORY never blocks: it drops what it cannot route
            return lines + [f"{body}{call})", f"{body}proc.count({var}, \"sent\")"]
        lines += [f"{body}try:", f"{body}    {call}, zmq.DONTWAIT)  # a reply never waits (as in the simulator)",
                  f"{body}except zmq.Again:", f"{body}    proc.count({var}, \"send_again\")"]
        if mandatory:
            lines += [f"{body}except zmq.ZMQError as error:  # ROUTER_MANDATORY: the peer is gone",
                      f"{body}    if error.errno != zmq.EHOSTUNREACH:", f"{body}        raise",
                      f"{body}    proc.count({var}, \"send_unroutable\")"]
        return lines + [f"{body}else:", f"{body}    proc.count({var}, \"sent\")"]

    # -- code: proxies, processes --------------------------------------------------------

    def proxy(self, proxy: spec.ProxySpec) -> list[str]:
        front, back = self.s.socket(proxy.frontend), self.s.socket(proxy.backend)
        fn = self.ident("proxy", proxy.name, False, suffix="_proxy")
        fv, bv = self.var(front, False), self.var(back, False)
        closes = [t for t in (front.close_at_s, back.close_at_s) if t is not None]
        doc = (f"[[proxy]] {proxy.name}: zmq.proxy({fv}, {bv}) written out as its poll loop, so that what it forwards is counted: "
               f"every message that arrives on one side is sent on the other (a blocking send).")
        lines = [f"def {fn}(proc: Proc) -> None:", *docstring(doc, 4)]
        first, second = sorted((front, back), key=lambda sock: sock.open_at_s)
        lines.append(f"    with {self._open_call(first, False)} as {self.var(first, False)}:")
        lines.append(f"        with {self._open_call(second, False)} as {self.var(second, False)}:")
        body = "            "
        lines += [f"{body}poller = zmq.Poller()", f"{body}poller.register({fv}, zmq.POLLIN)", f"{body}poller.register({bv}, zmq.POLLIN)"]
        if closes:
            end = min(closes)
            lines += [f"{body}while proc.now() < {num(end)}:  # the proxy ends when one of its sockets closes",
                      f"{body}    for sock, _ in poller.poll(proc.ms_until({num(end)})):"]
        else:
            lines += [f"{body}while True:", f"{body}    for sock, _ in poller.poll():"]
        lines += [f"{body}        other = {bv} if sock is {fv} else {fv}",
                  f"{body}        message = sock.recv_multipart()",
                  f"{body}        proc.count(sock, \"received\")",
                  f"{body}        other.send_multipart(message)",
                  f"{body}        proc.count(other, \"sent\")"]
        return lines

    def process_code(self, proc: spec.ProcessSpec, member: bool) -> str:
        """The process function and everything it runs, as one text."""
        fn = self.ident("process", proc.name, member, suffix="_process")
        units = self.units[proc.name]
        proxies = self.proxies_of.get(proc.name, [])
        restart = proc.restart_at_s is not None
        senders = sum(1 for unit in units for w in unit.loops if isinstance(w, SendSpec))
        params = "run: Run" + (", i: int" if member else "") + (", resume: dict[str, int] | None = None" if restart else "")
        own = [sock.name for sock in self.sockets_of.get(proc.name, []) if sock.name not in self.proxied]
        parts = [f"socket{'s' if len(own) > 1 else ''} {', '.join(own)}" if own else ""]
        parts += [f"proxy {p.name} ({p.frontend}, {p.backend})" for p in proxies]
        timeline = []
        if proc.exit_at_s is not None:
            timeline.append(f"exits at t = {seconds(proc.exit_at_s)}")
        if proc.exit_after_sends:
            timeline.append("exits once its sends are done")
        if proc.crash_at_s is not None:
            timeline.append(f"crashes at t = {seconds(proc.crash_at_s)}")
        if restart:
            assert proc.restart_at_s is not None
            timeline.append(f"starts again at t = {seconds(proc.restart_at_s)} (main() does that)")
        doc = f"[[process]] {proc.name}: {'; '.join(p for p in parts if p) or 'no sockets'}"
        doc += f"; {', '.join(timeline)}" if timeline else ""
        doc += ". One zmq.Context; each thread owns its sockets."
        args = [quoted(proc.name)]
        if proc.exit_after_sends:
            args.append(f"senders={senders}")
        if restart:
            args.append("resume=resume")
        if proc.io_threads != 1:
            args.append(f"io_threads={proc.io_threads}")
        cores = self._cores(proc)
        if cores is not None:
            args.append(f"cores=tuple(range({len(cores)}))" if len(cores) > 8 and cores == tuple(range(len(cores))) else
                        f"cores={cores!r}")
        i_arg = ", i" if member else ""
        starts: list[str] = []
        blocks: list[str] = []
        grouped: set[str] = set()
        for unit in units:
            found = None if member else self.member.get(("socket", unit.sock.name))
            if found is not None and found[0].root.startswith("socket[") and not restart:
                template = found[0]
                if template.name in grouped:
                    continue
                grouped.add(template.name)
                group = [u for u in units if self.member.get(("socket", u.sock.name), (None, 0))[0] is template]
                folded = self._try_fold(lambda group=group: [self._unit_code(u, proc, True, restart) for u in group])
                if folded is not None:
                    self.folded.append(template)
                    thread = self.names[("socket_thread", template.name)]
                    starts += [f"    for i in range({len(group)}):", f"        proc.start({thread}, i)"]
                    blocks.append(folded)
                    continue
                if len(group) > 1:
                    self.expanded.append(template)
                for one in group:
                    starts.append(f"    proc.start({self.ident('socket', one.sock.name, False, suffix='_thread')})")
                    blocks.append(self._unit_code(one, proc, False, restart))
                continue
            thread = self.ident("socket", unit.sock.name, member, suffix="_thread")
            starts.append(f"    proc.start({thread}{i_arg})")
            blocks.append(self._unit_code(unit, proc, member, restart))
        for proxy in proxies:
            starts.append(f"    proc.start({self.ident('proxy', proxy.name, False, suffix='_proxy')})")
            blocks += ["\n".join(self.opener(self.s.socket(proxy.frontend), False)),
                       "\n".join(self.opener(self.s.socket(proxy.backend), False)),
                       "\n".join(self.proxy(proxy))]
        live = []
        if proc.exit_at_s is not None:
            live.append(f"exit_at_s={num(proc.exit_at_s)}")
        if proc.exit_after_sends:
            live.append("exit_after_sends=True")
        if proc.crash_at_s is not None:
            live.append(f"crash_at_s={num(proc.crash_at_s)}")
        lines = [f"def {fn}({params}) -> None:", *docstring(doc, 4), f"    proc = Proc(run, {', '.join(args)})", *starts,
                 f"    proc.live({', '.join(live)})"]
        return "\n\n\n".join(["\n".join(lines), *blocks])

    def _try_fold(self, texts: Any) -> str | None:
        """Fold the members' texts (made by ``texts()``), or leave no trace of trying."""
        saved = (dict(self.names), set(self.taken), set(self.needs), list(self.notes))
        folded = fold(texts())
        if folded is None:
            self.names, self.taken, self.needs, self.notes = saved[0], saved[1], saved[2], saved[3]
        return folded

    def _cores(self, proc: spec.ProcessSpec) -> tuple[int, ...] | None:
        """The CPUs (k-th of those the program may use) a process is pinned to, as the real
        harness pins it: ``[machine] cores = N`` the first N, ``affinity`` among those."""
        cores = self.s.machine.cores or 0
        if proc.affinity is not None:
            return tuple(proc.affinity)
        return tuple(range(cores)) if cores else None

    def _unit_code(self, unit: _SocketUnit, proc: spec.ProcessSpec, member: bool, resumable: bool) -> str:
        blocks = ["\n".join(self.opener(unit.sock, member))]
        if unit.forward is not None:
            blocks.append("\n".join(self.opener(unit.forward, member)))
        blocks.append("\n".join(self.socket_thread(unit, proc.exit_after_sends, member)))
        if unit.interleaved:
            blocks.append("\n".join(self.interleaved_loop(unit, member, resumable)))
            return "\n\n\n".join(blocks)
        for workload in unit.loops:
            if isinstance(workload, SendSpec):
                blocks.append("\n".join(self.send_loop(workload, member, resumable)))
            else:
                blocks.append("\n".join(self.recv_loop(workload, member, resumable)))
        return "\n\n\n".join(blocks)

    # -- the whole program -----------------------------------------------------------------

    def program(self) -> str:
        s = self.s
        if s.apps:
            app = s.apps[0]
            raise ScenarioError(f"app[{app.name}]", f"the scenario's logic is SimPy code ({app.function}), which zsim export cannot write "
                                                    "as a pyzmq program; export a scenario of [[send]], [[recv]] and [[proxy]] loops")
        groups = self._process_groups()
        sections: list[str] = []
        for title, code in groups:
            sections.append(section(title) + "\n\n\n" + code)
        threads_only = len(s.processes) == 1 and s.processes[0].crash_at_s is None
        main = self.main(threads_only)
        self._notes()
        fixed = plumbing.CORE.strip("\n")
        if "rng" in self.needs:
            fixed += "\n" + plumbing.RNG.rstrip("\n")
        if "frames" in self.needs:
            fixed += "\n" + plumbing.FRAMES.rstrip("\n")
        parts = [self.header(threads_only), self.imports() + "\n\n" + self.constants()]
        parts += sections
        parts.append(section("main: start the processes, end the run, print the counts") + "\n\n\n" + main)
        parts.append(section("plumbing: the run's clock, its end and the counts (the same in every exported program)") + "\n\n\n"
                     + fixed)
        parts.append('if __name__ == "__main__":\n    sys.exit(main())')
        return "\n\n\n".join(part.strip("\n") for part in parts) + "\n"

    def _process_groups(self) -> list[tuple[str, str]]:
        """Per process (or template of processes): a section title and its code."""
        s = self.s
        done: set[str] = set()
        groups: list[tuple[str, str]] = []
        for proc in s.processes:
            if proc.name in done:
                continue
            found = self.member.get(("process", proc.name))
            if found is not None:
                template = found[0]
                members = [s.process(name) for name in template.members]
                done.update(template.members)
                code = self._fold_processes(template, members)
                if code is not None:
                    self.folded.append(template)
                    groups.append((f"[[process]] {template.pattern}, i = 0 .. {template.count - 1}", code))
                    continue
                if template.count > 1:
                    self.expanded.append(template)
                for member in members:
                    groups.append((f"[[process]] {member.name}", self.process_code(member, False)))
                continue
            done.add(proc.name)
            groups.append((f"[[process]] {proc.name}", self.process_code(proc, False)))
        return groups

    def _fold_processes(self, template: Template, members: list[spec.ProcessSpec]) -> str | None:
        if len(members) < 2 or any(m.restart_at_s is not None for m in members):
            return None
        return self._try_fold(lambda: [self.process_code(member, True) for member in members])

    def main(self, threads_only: bool) -> str:
        s = self.s
        lines = ["def main() -> int:",
                 '    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])',
                 '    parser.add_argument("--seed", type=int, default=SEED, help="seed of the random draws (default %(default)s)")',
                 '    parser.add_argument("--until-s", type=float, default=UNTIL_S,',
                 '                        help="end the run at this time (default: the scenario\'s until_s, %(default)s)")',
                 '    parser.add_argument("--quiet-s", type=float, default=QUIET_S,',
                 '                        help="without --until-s, end the run when no message has moved for this long '
                 '(default %(default)s)")',
                 "    args = parser.parse_args()",
                 '    mp = multiprocessing.get_context("spawn")  # each process starts afresh: no state inherited by fork',
                 "    run = Run(mp, args.seed)"]
        if threads_only:
            proc = s.processes[0]
            fn = self.names[("process_process", proc.name)]
            lines += [f"    thread = threading.Thread(target={fn}, args=(run,), name={quoted(proc.name)}, daemon=True)",
                      "    thread.start()",
                      "    run.begin(1)",
                      "    run.wait_for_end(args.until_s, args.quiet_s)",
                      "    report = run.finish(1)",
                      "    thread.join(5.0)"]
        else:
            lines += self._process_entries()
            lines += ["    for process in processes:",
                      "        process.start()",
                      "    run.begin(len(processes))"]
            restarts = sorted((p for p in s.processes if p.restart_at_s is not None), key=lambda p: p.restart_at_s or 0.0)
            for proc in restarts:
                assert proc.restart_at_s is not None and proc.crash_at_s is not None
                fn = self.names[("process_process", proc.name)]
                lines += [f"    # {proc.name} crashes at t = {seconds(proc.crash_at_s)} and starts again at "
                          f"t = {seconds(proc.restart_at_s)}, with what its loops had left",
                          f"    if run.sleep_until({num(proc.restart_at_s)}, args.until_s):",
                          f"        process = mp.Process(target={fn}, args=(run, run.resume({quoted(proc.name)})), "
                          f"name={quoted(proc.name)})",
                          "        process.start()",
                          "        processes.append(process)"]
            lines += ["    run.wait_for_end(args.until_s, args.quiet_s)",
                      "    report = run.finish(len(processes))",
                      "    for process in processes:",
                      "        process.join(5.0)",
                      "        if process.is_alive():",
                      "            process.kill()"]
        lines += ["    print(json.dumps(report, indent=2))", "    return 1 if report[\"errors\"] else 0"]
        return "\n".join(lines)

    def _process_entries(self) -> list[str]:
        """``processes = [...]``: one entry per process, one comprehension per folded template."""
        plain: list[str] = []
        lines: list[str] = []
        done: set[str] = set()

        def flush() -> None:
            if plain:
                head = "    processes = [" if not lines else "    processes += ["
                lines.extend([head, *plain, "    ]"])
                plain.clear()

        for proc in self.s.processes:
            if proc.name in done:
                continue
            found = self.member.get(("process", proc.name))
            if found is not None and found[0] in self.folded:
                template = found[0]
                done.update(template.members)
                flush()
                fn = self.names[("process_process", template.name)]
                pattern = infer(list(template.members))
                name = fstring_literal(pattern) if pattern else quoted(template.name)
                head = "processes = " if not lines else "processes += "
                lines.append(f"    {head}[mp.Process(target={fn}, args=(run, i), name={name}) for i in range({template.count})]")
                continue
            done.add(proc.name)
            fn = self.names[("process_process", proc.name)]
            plain.append(f"        mp.Process(target={fn}, args=(run,), name={quoted(proc.name)}),")
        flush()
        return lines

    def header(self, threads_only: bool) -> str:
        s = self.s
        title = f"{s.name}: a pyzmq program written by zsim export from a zsim scenario."
        lines = [title, ""]
        if s.description.strip():
            lines += textwrap.fill(" ".join(s.description.split()), 88).splitlines() + [""]
        about = [f"Scenario: {self.source} (digest {s.digest}), exported by zsim {__version__}."]
        if threads_only:
            about.append("One process: its sockets' threads run in this program's process, with one zmq.Context.")
        else:
            about.append(f"{len(s.processes)} processes: each runs as an OS process of its own (multiprocessing), with one "
                         "zmq.Context and one thread per socket.")
        about.append("Times are seconds from the start of the run (t = 0, once every process has its context).")
        lines += wrap(" ".join(about), 88)
        lines += ["",
                  f"Run it: python {self.program_name} [--seed N] [--until-s S] [--quiet-s S]",
                  "At the end it prints one JSON object: per socket the messages sent and received (and",
                  "sends and receives that failed), with the keys of `zsim run --json`'s sockets, and per",
                  "process how it ended. It needs pyzmq" + (" and numpy." if "rng" in self.needs else "."), ""]
        lines += textwrap.wrap(
            "Carried over: processes (io_threads, affinity, [machine] cores), sockets (type, every option set explicitly, "
            "bind and connect in order), the timeline (open_at_s, close_at_s, start_s, exit_at_s, exit_after_sends, "
            "until_s), loops (count, duration_s, pacing, sizes, topics, frames, routing ids, dontwait, on_again, service "
            "times, busy, replies, forward_to, pauses, on_timeout) and proxies. Not carried over, or only approximately:", 88)
        for note in self.notes:
            lines += wrap(note, 86, "- ", "  ")
        text = "\n".join(doc_safe(line) for line in lines)  # the name and the description are the file's text
        return f'"""{text}\n"""'

    def _notes(self) -> None:
        s = self.s
        notes = [f"profile {s.profile or 'default'!r}: the simulator charges each call, hop and byte what the profile "
                 "measured; here each costs what it costs on this machine, and nothing in this file models it."]
        if "rng" in self.needs:
            notes.append("random distributions: drawn with numpy from the seed (--seed, default the scenario's seed or 0) and "
                         "each loop's name: the same distributions as the simulator's, not the same values.")
        if s.until_s is None:
            notes.append("the end: the simulation ends when nothing can move any more; this program ends when no message has "
                         f"moved for --quiet-s seconds (0.5) after the timeline's last event (at {seconds(self.last_event())}) "
                         "and after every planned wait.")
        else:
            notes.append(f"the end: at until_s = {seconds(s.until_s)} every process takes its counts and leaves at once "
                         "(LINGER 0), as the simulation stops there.")
        workloads: list[SendSpec | RecvSpec] = [*s.sends, *s.recvs]
        short = [w.name for w in workloads if _short_wait(w)]
        if short:
            notes.append("timing: waits are threading.Event.wait, late by some 0.05-0.1 ms each, so waits below 1 ms come out "
                         f"longer than asked ({', '.join(short[:4])}{', ...' if len(short) > 4 else ''}).")
        if any(w.forward_to is not None and TYPES[s.socket(w.forward_to).type].send == DIST for w in s.recvs):
            notes.append("forward_to: a result carries no topic here; the simulator lets it keep the input's topic for filtering.")
        if s.hosts:
            placed = "; ".join(f"{host.name}: {', '.join(p.name for p in s.processes if p.host == host.name) or 'none'}"
                               for host in s.hosts)
            links = "; ".join(f"{link.name} {link.bandwidth_bps / 1e6:g} Mbit/s, {seconds(link.latency_s)} one way"
                              for link in s.links)
            notes.append(f"[[host]]s and [[link]]s: every process runs on this machine and every host's name is 127.0.0.1 in "
                         f"HOSTS, so nothing here crosses a network. A real deployment runs each host's processes on that host "
                         f"({placed}), with HOSTS giving each host's address, on a network that provides the links ({links}); "
                         "this program cannot emulate their bandwidth, latency, queue or loss (Linux's tc can: "
                         "docs/validation.md, section Links).")
            other = [f"{host.name} ({host.profile})" for host in s.hosts if host.profile is not None and host.profile != s.profile]
            if other:
                notes.append(f"[[host]] profile: the simulator modelled {', '.join(other)} as another kind of machine; here every "
                             "host is this one, with this machine's costs.")
        if s.machine.cores or any(p.affinity is not None for p in s.processes):
            notes.append(f"[machine] cores = {s.machine.cores or 0} and affinity: each process is pinned to its CPUs "
                         "(os.sched_setaffinity, Linux; core k is the k-th CPU this program may use), so its threads share "
                         "them as the simulator's do; the scheduler's costs are this machine's, not the model's.")
        spinning = [w.name for w in workloads if w.wait_spin_s > 0]
        if spinning:
            notes.append(f"wait_spin_s ({', '.join(spinning[:4])}{', ...' if len(spinning) > 4 else ''}): this program's waits "
                         "sleep (threading.Event.wait); the simulated design spins the end of each wait, which costs CPU on "
                         "shared cores: remove wait_spin_s to simulate this program as written.")
        working = [w.name for w in workloads if w.loop_cpu_s > 0]
        if working:
            notes.append(f"loop_cpu_s ({', '.join(working[:4])}{', ...' if len(working) > 4 else ''}): the simulated design "
                         "spends that CPU per message beyond the ZeroMQ call; this program does only its own bookkeeping.")
        if any(r.busy for r in s.recvs):
            notes.append("busy = true: the service time is a busy loop (proc.busy), which holds its process's GIL: the other "
                         "threads of that process wait for it, which the simulator does not model (put busy workers in "
                         "processes of their own).")
        if s.proxies:
            subscriptions = any(TYPES[s.socket(name).type].app_sees_subscriptions for name in self.proxied)
            notes.append("[[proxy]]: written as zmq.proxy's poll loop, to count what it forwards"
                         + (" (the XSUB's sent counts the subscriptions it passes upstream; the simulator's does not)"
                            if subscriptions else "")
                         + "; libzmq's proxy reads a side only while the other can take a message, this loop blocks in the "
                         "send instead.")
        for proc in s.processes:
            if proc.crash_at_s is not None:
                notes.append(f"process {proc.name} crash_at_s: the OS process is killed (SIGKILL) at "
                             f"t = {seconds(proc.crash_at_s)}, right after it reported its counts.")
            if proc.restart_at_s is not None:
                notes.append(f"process {proc.name} restart_at_s: main() starts it again at t = {seconds(proc.restart_at_s)} as a "
                             "new OS process; its sockets open at once, count-bounded loops carry on with the attempts they had "
                             "left, loops bounded by time keep their times (the simulator resumes every loop at once).")
        if self.folded:
            notes.append(f"templates: {_templates(self.folded)} written once, as functions of the member index i.")
        if self.expanded:
            notes.append(f"templates: {_templates(self.expanded)} written out member by member (their code differs in more "
                         "than the member index).")
        ignored = [f"[{key}]" for key in ("validation", "limits", "sweep") if key in s.raw]
        if ignored:
            notes.append(f"{', '.join(ignored)}: read by zsim only.")
        notes.append("measurements: counts, latencies from the send time each message carries in its last 8 bytes (end to end: "
                     "a reply or result carries its request's on; zsim's per-socket latency is per hop) and the batch time of a "
                     "[[recv]] with a count; no pipe depths or drops (a real socket does not report them).")
        self.notes = notes + self.notes

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
        s = self.s
        times = [0.0]
        for sock in s.sockets:
            times += [sock.open_at_s] + ([sock.close_at_s] if sock.close_at_s is not None else [])
        for proc in s.processes:
            times += [t for t in (proc.exit_at_s, proc.crash_at_s, proc.restart_at_s) if t is not None]
        workloads: list[SendSpec | RecvSpec] = [*s.sends, *s.recvs]
        for w in workloads:
            times.append(s.starts_at(w) + (w.duration_s or 0.0))
        return max(times)

    def imports(self) -> str:
        modules = ["argparse", "contextlib", "json", "multiprocessing", "os", "queue", "signal", "sys", "threading", "time",
                   "traceback"]
        if "itertools" in self.needs:
            modules.append("itertools")
        if "rng" in self.needs:
            modules.append("zlib")
        if any(d.kind == "lognormal" for d in self._distributions()):
            modules.append("math")
        lines = ["from __future__ import annotations", ""] + [f"import {m}" for m in sorted(modules)]
        lines += ["from typing import Any", ""]
        if "rng" in self.needs:
            lines.append("import numpy as np")
        lines.append("import zmq")
        return "\n".join(lines)

    def _distributions(self) -> Iterable[Distribution]:
        for send in self.s.sends:
            yield send.interval
            yield send.size
        for recv in self.s.recvs:
            yield from (d for d in (recv.service, recv.reply_size, recv.pause_every, recv.pause) if d is not None)

    def constants(self) -> str:
        s = self.s
        return "\n".join([
            f"SCENARIO = {quoted(s.name)}",
            f"SEED = {s.seed if s.seed is not None else 0}  # scenario.seed (or 0); --seed changes it",
            f"UNTIL_S = {num(s.until_s) if s.until_s is not None else None}  # scenario.until_s, the horizon; --until-s changes it",
            "QUIET_S = 0.5  # without a horizon the run ends when no message has moved for this long ...",
            f"LAST_EVENT_S = {num(self.last_event())}  # ... after the timeline's last event (open, close, start, exit)",
            *_binders(self.binders),
            *_hosts(s),
        ])



def _hosts(s: Scenario) -> list[str]:
    """``HOSTS`` and ``on_host``: the address each [[host]] is reached at (every host this
    machine's loopback until the user gives real addresses)."""
    if not s.hosts:
        return []
    lines = ["# the address each [[host]] is reached at: every one is this machine until you give real addresses",
             "HOSTS = {"]
    lines += [f"    {quoted(host.name)}: \"127.0.0.1\"," for host in s.hosts]
    lines += ["}", "", "",
              "def on_host(endpoint):",
              '    """tcp://NAME:PORT with NAME a [[host]] -> tcp://ADDRESS:PORT (HOSTS)."""',
              '    name, _, port = endpoint[len("tcp://"):].rpartition(":")',
              '    return f"tcp://{HOSTS[name]}:{port}"']
    return lines


def _binders(names: list[str]) -> list[str]:
    """``BINDERS = (...)``: the sockets others wait for before they connect (``Proc.open``'s ``after``)."""
    comment = "  # sockets that others connecting at the same instant wait for: binds come first"
    if not names:
        return ["BINDERS: tuple[str, ...] = ()" + comment]
    items = ", ".join(quoted(name) for name in names) + ("," if len(names) == 1 else "")
    wrapped = textwrap.wrap(items, 100)
    if len(wrapped) == 1:
        return [f"BINDERS = ({items})" + comment]
    return ["BINDERS = (" + comment, *(f"    {line}" for line in wrapped), ")"]


def _templates(templates: list[Template]) -> str:
    return ", ".join(f"{t.kind} {t.pattern} (count = {t.count})" for t in templates)


def _stampable(send: SendSpec, traits: Any) -> bool:
    """Whether send's messages carry their send time (``proc.stamp``: the last 8 bytes of the
    last frame): not an XSUB's (they are subscriptions), and not where a topic shares the
    frame with fewer than 8 bytes of payload (the stamp would overwrite the topic)."""
    if traits.sends_subscriptions and not traits.filters_on_recv:
        return False
    return not send.topics or send.parts > 1 or (send.size.is_constant and send.size.value >= 8)


def _short_wait(workload: SendSpec | RecvSpec) -> bool:
    dist = workload.interval if isinstance(workload, SendSpec) else workload.service
    return 0 < dist.expected() < 0.001


# --------------------------------------------------------------------------------------
# Entry points


def export_pyzmq(scenario: Scenario, source: str | None = None, program: str = "program.py") -> str:
    """The source of a standalone pyzmq program that does what ``scenario`` describes.

    ``source`` names the scenario in the program's header (default: its file), ``program``
    the program's file (for its "Run it" line). Raises
    ``ScenarioError`` for what a program cannot be written for (an ``[[app]]``, a socket a
    forwarding stage writes to that has loops of its own).
    """
    from ..limits import MAX_EXPORT_BYTES

    text = _Writer(scenario, source if source is not None else scenario.source, program).program()
    if MAX_EXPORT_BYTES is not None and len(text) > MAX_EXPORT_BYTES:
        templates = ", ".join(f"{t.kind}[{t.name}] (count {t.count:,})" for t in scenario.templates[:3])
        raise ScenarioError("", f"the program would be {len(text) / 2**20:,.0f} MB, more than zsim export writes "
                                f"({MAX_EXPORT_BYTES / 2**20:,.0f} MB, zsim.limits.MAX_EXPORT_BYTES)"
                                + (f": its templates ({templates}) do not fold into loops" if templates else ""))
    return text


def write_pyzmq(scenario_path: str | Path, out: str | Path) -> Path:
    """``zsim export FILE --pyzmq OUT``: load, write the program atomically, return its path."""
    files.refuse_overwriting_inputs([out], [scenario_path], "--pyzmq")
    files.prepare_output_file(out, "pyzmq program")
    scenario = spec.load(scenario_path)
    text = export_pyzmq(scenario, files.shown_path(scenario_path), Path(out).name)
    return files.atomic_write(out, text)


__all__ = ["export_pyzmq", "write_pyzmq"]
