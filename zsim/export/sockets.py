"""The sockets of a program ``zsim export`` writes: per socket an opener, and the thread
that owns it.

An opener (``open_<socket>``) makes the socket, sets every option explicitly (the
scenario's value or ZeroMQ's default, so the program says what it runs with) and binds and
connects as written. A socket's thread opens it when the timeline says (after the binds it
waits for: ``plan.Plan.waits``), calls its loops (``loops``), makes its ``[[call]]``s at their
times (``<socket>_calls``: the list of (t, call) the thread's ``Calls`` goes through) and
holds it open until its close; a [[proxy]]'s thread owns both its sockets and forwards
between them (and makes their calls).
"""

from __future__ import annotations

from .. import spec
from ..socket_types import TYPES
from ..spec import LOCAL_HOSTS, CallSpec, Endpoint, RecvSpec, Scenario, SendSpec, SocketSpec
from .literals import doc_safe, docstring, num, quoted, quoted_bytes, seconds
from .naming import Namespace
from .plan import SocketUnit

_SOCKET_CONSTANT = {name: f"zmq.{name}" for name in TYPES}


class Sockets:
    """Writes openers, socket threads and proxies, naming them in ``names``."""

    def __init__(self, scenario: Scenario, names: Namespace, waits: dict[str, list[str]],
                 restart_s: dict[str, float] | None = None) -> None:
        self.s = scenario
        self.names = names
        #: per socket, the sockets whose bind it waits for before it connects (``plan.Plan.waits``)
        self.waits = waits
        #: per process that starts again, when (its calls before then are not made again)
        self.restart_s = restart_s or {}

    def opener(self, sock: SocketSpec, member: bool) -> list[str]:
        """``open_<socket>(ctx)``: makes the socket, sets its options, binds and connects."""
        traits = TYPES[sock.type]
        opts = sock.options
        fn = self.names.ident("socket", sock.name, member, prefix="open_")
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
                                        ("reconnect_ivl_max", "RECONNECT_IVL_MAX", 0), ("heartbeat_ivl", "HEARTBEAT_IVL", 0),
                                        ("heartbeat_timeout", "HEARTBEAT_TIMEOUT", -1), ("heartbeat_ttl", "HEARTBEAT_TTL", 0),
                                        ("tcp_keepalive", "TCP_KEEPALIVE", -1), ("tcp_keepalive_idle", "TCP_KEEPALIVE_IDLE", -1),
                                        ("tcp_keepalive_intvl", "TCP_KEEPALIVE_INTVL", -1),
                                        ("tcp_keepalive_cnt", "TCP_KEEPALIVE_CNT", -1)):
            value = getattr(opts, name)
            if value != default:
                lines.append(f"    sock.setsockopt(zmq.{constant}, {value})")
        for name, constant in (("immediate", "IMMEDIATE"), ("conflate", "CONFLATE"), ("router_mandatory", "ROUTER_MANDATORY"),
                               ("xpub_nodrop", "XPUB_NODROP"), ("xpub_verbose", "XPUB_VERBOSE"), ("xpub_verboser", "XPUB_VERBOSER"),
                               ("xpub_manual", "XPUB_MANUAL"), ("invert_matching", "INVERT_MATCHING"),
                               ("router_handover", "ROUTER_HANDOVER"), ("probe_router", "PROBE_ROUTER"), ("req_relaxed", "REQ_RELAXED"),
                               ("req_correlate", "REQ_CORRELATE")):
            if getattr(opts, name):
                lines.append(f"    sock.setsockopt(zmq.{constant}, 1)")
        if traits.filters_on_recv:
            for prefix in opts.subscribe:
                lines.append(f"    sock.setsockopt(zmq.SUBSCRIBE, {quoted_bytes(prefix)})" + ("  # everything" if prefix == "" else ""))
        for endpoint in sock.bind:
            lines.append(f"    sock.bind({quoted(endpoint.text)})")
        for index, endpoint in enumerate(sock.connect):
            if index == 0 and opts.connect_routing_id is not None:
                lines.append(f"    sock.setsockopt(zmq.CONNECT_ROUTING_ID, {quoted_bytes(opts.connect_routing_id)})  # the name of this "
                             "connect's peer")
            if _on_host(endpoint):
                lines.append(f"    sock.connect({_connect_text(endpoint)})  # a [[host]]'s name: its address in HOSTS")
            else:
                lines.append(f"    sock.connect({_connect_text(endpoint)})")
        if traits.sends_subscriptions and not traits.filters_on_recv:
            for prefix in opts.subscribe:
                lines.append(f'    sock.send(b"\\x01" + {quoted_bytes(prefix)})  # an XSUB subscribes by sending \\x01 + prefix')
        lines.append("    return sock")
        return lines

    def calls(self, fn: str, calls: list[CallSpec], member: bool) -> list[str]:
        """``<socket>_calls(sock, ...)`` (named ``fn``): the [[call]]s on the sockets of one
        thread, as the list of (t, the call) its ``Calls`` makes at their times, each a pyzmq
        call with a comment naming its [[call]]."""
        socks = [name for name in dict.fromkeys(call.socket for call in calls)]
        variables = {name: self.names.var(self.s.socket(name), member) for name in socks}
        params = ", ".join(f"{variables[name]}: zmq.Socket" for name in socks) + (", i: int" if member else "")
        on = " and ".join(socks)
        lines = [f"def {fn}({params}) -> list[tuple[float, Any]]:",
                 *docstring(f"The [[call]]s on {on}: (t, the call), in time order. The thread that owns "
                            f"{'them' if len(socks) > 1 else 'it'} makes each at its t (Calls).", 4),
                 "    return ["]
        for call in calls:
            var = variables[call.socket]
            for index, code in enumerate(self._call_code(call, var)):
                note = f"  # {call.label}" + (f": {call.action}" if call.action in ("set", "subscribe", "unsubscribe") else "")
                lines.append(f"        ({num(call.at_s)}, lambda: {code}),{note if index == 0 else ''}")
        lines.append("    ]")
        return lines

    def _call_code(self, call: CallSpec, var: str) -> list[str]:
        """The pyzmq calls one [[call]] makes, in order."""
        sock = self.s.socket(call.socket)
        traits = TYPES[sock.type]
        if call.action in ("bind", "unbind"):
            return [f"{var}.{call.action}({quoted(endpoint.text)})" for endpoint in call.endpoints]
        if call.action in ("connect", "disconnect"):
            return [f"{var}.{call.action}({_connect_text(endpoint)})" for endpoint in call.endpoints]
        if call.action == "set":
            return [f"{var}.setsockopt(zmq.{name.upper()}, {_option_value(value)})" for name, value in call.options]
        subscribe = call.action == "subscribe"
        if traits.sends_subscriptions and not traits.filters_on_recv:  # an XSUB subscribes by sending \x01 + prefix
            head = 'b"\\x01"' if subscribe else 'b"\\x00"'
            return [f"{var}.send({head} + {quoted_bytes(prefix)})" for prefix in call.prefixes]
        constant = "zmq.SUBSCRIBE" if subscribe else "zmq.UNSUBSCRIBE"
        return [f"{var}.setsockopt({constant}, {quoted_bytes(prefix)})" for prefix in call.prefixes]

    def _calls_start(self, fn: str, calls: list[CallSpec], member: bool, indent: str) -> str:
        """``calls = Calls(proc, <socket>_calls(...))``: the thread's [[call]]s (``fn``), from now on."""
        socks = dict.fromkeys(call.socket for call in calls)
        args = ", ".join(self.names.var(self.s.socket(name), member) for name in socks) + (", i" if member else "")
        restart = self.restart_s.get(self.s.socket(calls[0].socket).process)
        extra = f", restart_s={num(restart)}" if restart is not None else ""
        return f"{indent}calls = Calls(proc, {fn}({args}){extra})  # its [[call]]s, made by this thread at their times"

    def _open_call(self, sock: SocketSpec, member: bool) -> str:
        """``proc.open(...)``: the socket from its open_at_s (after the binds it waits for) to its close."""
        fn = self.names.ident("socket", sock.name, member, prefix="open_")
        args = ", i" if member else ""
        close = f", close_at_s={num(sock.close_at_s)}" if sock.close_at_s is not None else ""
        after = self.waits.get(sock.name, [])
        if after:
            close += f", after=({', '.join(quoted(name) for name in after)},)"
        return f"proc.open({quoted(sock.name)}, {fn}{args}, at_s={num(sock.open_at_s)}{close})"

    def thread(self, unit: SocketUnit, exit_after_sends: bool, member: bool) -> list[str]:
        """``<socket>_thread(proc)``: opens the socket (and the one its results go to) and
        calls its loops in turn, or its poll loop."""
        sock = unit.sock
        var = self.names.var(sock, member)
        fn = self.names.ident("socket", sock.name, member, suffix="_thread")
        i_param = ", i: int" if member else ""
        i_arg = ", i" if member else ""
        owned = f"socket {sock.name}" + (f" and socket {unit.forward.name} (its results go there)" if unit.forward else "")
        held = f"until t = {seconds(sock.close_at_s)}" if sock.close_at_s is not None else "until the process leaves"
        runs = ", then ".join(w.name for w in unit.loops) if unit.loops else "no loop"
        if unit.interleaved:
            runs = " and ".join(w.name for w in unit.loops) + " in one poll loop"
        calls = f", makes its [[call]]s at their times ({self.names.ident('socket', sock.name, member, suffix='_calls')})" \
            if unit.calls else ""
        doc = f"The thread that owns {owned}: opened at t = {seconds(sock.open_at_s)}, runs {runs}{calls}, held open {held}."
        named = unit.loops or unit.calls
        lines = [f"def {fn}(proc: Proc{i_param}) -> None:", *docstring(doc, 4),
                 f"    with {self._open_call(sock, member)} as {var}:" if named else f"    with {self._open_call(sock, member)}:"]
        indent = "        "
        forward_var = None
        if unit.forward is not None:
            forward_var = self.names.var(unit.forward, member)
            lines.append(f"{indent}with {self._open_call(unit.forward, member)} as {forward_var}:")
            indent += "    "
        through = ""
        if unit.calls:
            self.names.needs.add("calls")
            lines.append(self._calls_start(self.names.ident("socket", sock.name, member, suffix="_calls"), unit.calls, member, indent))
            through = ", calls"
        if not unit.loops and not unit.calls:
            lines.append(f"{indent}pass  # no [[send]] or [[recv]] uses it: it is open, and its queues fill")
        if unit.interleaved:
            lines.append(f"{indent}{self.names.ident('socket', sock.name, member, suffix='_loop')}(proc, {var}{through}{i_arg})")
            if exit_after_sends:
                lines.append(f"{indent}proc.sender_done()")
        else:
            for workload in unit.loops:
                kind = "send" if isinstance(workload, SendSpec) else "recv"
                loop_fn = self.names.ident(kind, workload.name, member, prefix=f"{kind}_")
                extra = f", {forward_var}" if isinstance(workload, RecvSpec) and workload.forward_to is not None else ""
                lines.append(f"{indent}{loop_fn}(proc, {var}{extra}{through}{i_arg})")
                if kind == "send" and exit_after_sends:
                    lines.append(f"{indent}proc.sender_done()")
        if unit.calls:
            lines.append(f"{indent}calls.finish()  # the [[call]]s still to come, each at its time")
        return lines

    def proxy(self, proxy: spec.ProxySpec, calls: list[CallSpec] | None = None) -> list[str]:
        """``<proxy>_proxy(proc)``: opens the proxy's two sockets and forwards between them
        until one of them closes (making the [[call]]s on them, ``calls``, at their times)."""
        front, back = self.s.socket(proxy.frontend), self.s.socket(proxy.backend)
        fn = self.names.ident("proxy", proxy.name, False, suffix="_proxy")
        fv, bv = self.names.var(front, False), self.names.var(back, False)
        closes = [t for t in (front.close_at_s, back.close_at_s) if t is not None]
        doc = (f"[[proxy]] {proxy.name}: zmq.proxy({fv}, {bv}) written out as its poll loop, so that what it forwards is counted: "
               f"every message that arrives on one side is sent on the other (a blocking send).")
        lines = [f"def {fn}(proc: Proc) -> None:", *docstring(doc, 4)]
        first, second = sorted((front, back), key=lambda sock: sock.open_at_s)
        lines.append(f"    with {self._open_call(first, False)} as {self.names.var(first, False)}:")
        lines.append(f"        with {self._open_call(second, False)} as {self.names.var(second, False)}:")
        body = "            "
        if calls:
            self.names.needs.add("calls")
            lines.append(self._calls_start(self.names.ident("proxy", proxy.name, False, suffix="_calls"), calls, False, body))
        lines += [f"{body}poller = zmq.Poller()", f"{body}poller.register({fv}, zmq.POLLIN)", f"{body}poller.register({bv}, zmq.POLLIN)"]
        if calls:
            # the poll ends at each [[call]] too, and the blocking send makes those due meanwhile
            end = min(closes) if closes else None
            lines += [f"{body}while proc.now() < {num(end)}:  # the proxy ends when one of its sockets closes" if end is not None
                      else f"{body}while True:",
                      f"{body}    events = calls.poll(poller{f', {num(end)}' if end is not None else ''})",
                      f"{body}    if events is None:", f"{body}        return  # the process is leaving",
                      f"{body}    for sock in events:",
                      f"{body}        other = {bv} if sock is {fv} else {fv}",
                      f"{body}        message = sock.recv_multipart()",
                      f"{body}        proc.count(sock, \"received\")",
                      f"{body}        calls.send_multipart(other, message)",
                      f"{body}        proc.count(other, \"sent\")"]
            return lines
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


def _on_host(endpoint: Endpoint) -> bool:
    """A tcp endpoint whose host is a [[host]]'s name (its address is in the program's HOSTS)."""
    return endpoint.transport == "tcp" and endpoint.host not in LOCAL_HOSTS


def _connect_text(endpoint: Endpoint) -> str:
    """What a connect (or disconnect) names: the endpoint, through ``on_host`` for a [[host]]'s name."""
    return f"on_host({quoted(endpoint.text)})" if _on_host(endpoint) else quoted(endpoint.text)


def _option_value(value: object) -> str:
    """An option's value as setsockopt takes it: an int (a flag as 1 or 0), a routing id as bytes."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, str):
        return quoted_bytes(value)
    return str(value)
