"""The loops of a program ``zsim export`` writes: the code a socket's thread runs.

Per [[send]] a loop that paces its sends as the scenario says (back to back, a wait after
each send, or a schedule) and counts what each send did (sent, send_again,
send_unroutable); per [[recv]] a loop that receives, works (a wait, or a busy loop),
stalls, replies or forwards, and counts; per socket whose [[send]] and [[recv]] run side by
side (``plan.SocketUnit.interleaved``), one zmq.Poller loop that does both. A loop of a
process that starts again resumes with the attempts it had left (``resumable``). A loop of a
thread with ``[[call]]``s (``calls``) waits through the thread's ``Calls`` (the plumbing): its
sleeps, polls and blocking sends and receives end at each call's time, the thread makes it,
and the wait goes on.
"""

from __future__ import annotations

from typing import Any

from ..socket_types import DIST, ROUTE, TYPES
from ..spec import RecvSpec, Scenario, SendSpec, SocketSpec
from .literals import describe, docstring, draw, num, quoted, quoted_bytes, seconds, value_lists
from .naming import Namespace
from .plan import SocketUnit


class Loops:
    """Writes the loop functions, naming them (and noting the helpers they use) in ``names``."""

    def __init__(self, scenario: Scenario, names: Namespace) -> None:
        self.s = scenario
        self.names = names

    def _loop_head(self, count: int | None, end_s: float | None, need_n: bool, loop: str, resumable: bool) -> list[str]:
        """The loop statement and its end check; its counter is ``n`` when ``need_n``."""
        counter = "n" if need_n else "_"
        if count is not None:
            iterate = f"proc.attempts({quoted(loop)}, {count})" if resumable else f"range({count})"
            head = [f"    for {counter} in {iterate}:"]
        elif end_s is not None and not need_n:
            return [f"    while proc.now() < {num(end_s)}:"]
        elif need_n:
            self.names.needs.add("itertools")
            head = [f"    for {counter} in itertools.count():"]
        else:
            head = ["    while True:"]
        if end_s is not None:
            head += [f"        if proc.now() >= {num(end_s)}:", "            return"]
        return head

    def send_loop(self, send: SendSpec, member: bool, resumable: bool, calls: bool = False) -> list[str]:
        """``send_<loop>(proc, sock)``: waits for its start, then sends and counts, paced as
        the [[send]] says, until its count, its duration or its socket's close; with
        ``calls``, ``send_<loop>(proc, sock, calls)``, whose waits end at each [[call]]."""
        sock = self.s.socket(send.socket)
        traits = TYPES[sock.type]
        var = self.names.var(sock, member)
        fn = self.names.ident("send", send.name, member, prefix="send_")
        start = self.s.starts_at(send)
        end_s = self._send_end(send)
        doc = f"[[send]] {send.name} on {sock.name}: {self._send_words(send)}."
        if traits.request:
            doc += " Each request waits for its reply (REQ)."
        params = f"proc: Proc, {var}: zmq.Socket" + (", calls: Calls" if calls else "") + (", i: int" if member else "")
        lines = [f"def {fn}({params}) -> None:", *docstring(doc, 4)]
        paced = not (send.interval.is_constant and send.interval.value == 0)
        schedule = send.pacing == "schedule" and paced
        prelude, message = self._send_prelude(send)
        lines += prelude[:self._rng_lines(send)]
        waits = _waits(calls)
        if paced:  # each attempt due at a time: how late it comes is said in the JSON (proc.attempt)
            lines += [f"    due = {num(start)}", f"    if not {waits}.sleep_until(due):", "        return"]
        else:
            lines += [f"    if not {waits}.sleep_until({num(start)}):", "        return"]
        lines += prelude[self._rng_lines(send):]
        need_n = len(send.topics or ("",)) > 1 or len(send.to) > 1
        lines += self._loop_head(send.count, end_s, need_n, send.name, resumable)
        body = "        "
        if paced:
            lines.append(f"{body}proc.attempt({quoted(send.name)}, due{'' if schedule else ', moves=True'})")
        if sock.close_at_s is not None and not send.dontwait and sock.options.sndtimeo < 0 and traits.mute == "block":
            # a send that could block for ever must give up when the socket closes (SNDTIMEO bounds the others)
            lines += [f"{body}if not {_ready(var, 'zmq.POLLOUT', sock.close_at_s, calls)}:",
                      f"{body}    return  # still no room when the socket closes"]
        lines += self._send_one(send, var, body, message, "return", calls)
        if schedule:
            lines += [f"{body}due += {draw(send.interval, 'intervals')}",
                      f"{body}if not {waits}.sleep_until(due):  # behind schedule: at once, until caught up",
                      f"{body}    return"]
        elif paced:
            lines += [f"{body}due = proc.now() + {draw(send.interval, 'intervals')}  # send(), then wait",
                      f"{body}if not {waits}.sleep_until(due):", f"{body}    return"]
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
            self.names.needs.add("rng")
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

    def _send_one(self, send: SendSpec, var: str, body: str, message: tuple[str | None, str], stop: str,
                  calls: bool = False) -> list[str]:
        """One send of a [[send]] and its counts (``_send_prelude`` first); ``stop`` ends the
        loop (on_again = "stop"); with ``calls``, a send or receive that blocks makes the
        thread's [[call]]s due meanwhile."""
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
        if calls and not send.dontwait:
            call = f"calls.send_multipart({var}, {frames_expr})" if multi else f"calls.send({var}, {body_expr})"
        again = send.dontwait or sock.options.sndtimeo >= 0
        unroutable = traits.send == ROUTE and sock.options.router_mandatory
        after = [f"proc.count({var}, \"sent\")"]
        if traits.request:
            take = f"calls.recv_multipart({var})" if calls else f"{var}.recv_multipart()"
            reply = [f"reply = {take}"]
            if sock.close_at_s is not None and sock.options.rcvtimeo < 0:
                reply = [f"if not {_ready(var, 'zmq.POLLIN', sock.close_at_s, calls)}:",
                         "    return  # no reply before the socket closes", *reply]
            elif sock.options.rcvtimeo >= 0:
                if send.on_timeout == "stop":
                    reply = ["try:", f"    reply = {take}",
                             "except zmq.Again:  # RCVTIMEO expired: a REQ cannot send again before its reply",
                             f"    proc.count({var}, \"recv_again\")",
                             "    return  # on_timeout = \"stop\""]
                else:
                    reply = ["while True:", "    try:", f"        reply = {take}", "        break",
                             "    except zmq.Again:  # RCVTIMEO expired before the reply: wait again (on_timeout = \"retry\")",
                             f"        proc.count({var}, \"recv_again\")"]
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

    def interleaved_loop(self, unit: SocketUnit, member: bool, resumable: bool, calls: bool = False) -> list[str]:
        """A socket's [[send]] and [[recv]] in one zmq.Poller loop (``plan.Plan`` found it can
        be written): it waits for a message or for the next send, whichever comes first, as the
        simulator's two loops do side by side (with ``calls``: or for the next [[call]])."""
        sock = unit.sock
        send = next(w for w in unit.loops if isinstance(w, SendSpec))
        recv = next(w for w in unit.loops if isinstance(w, RecvSpec))
        var = self.names.var(sock, member)
        fn = self.names.ident("socket", sock.name, member, suffix="_loop")
        doc = (f"{send.name} and {recv.name} on {sock.name}, in one poll loop: a ZeroMQ socket belongs to one thread, and the "
               f"simulator runs the two side by side. [[send]] {send.name}: {self._send_words(send)}. [[recv]] {recv.name}: "
               f"{f'{recv.count:,} messages' if recv.count is not None else 'every message'} from t = "
               f"{seconds(self.s.starts_at(recv))}.")
        params = f"proc: Proc, {var}: zmq.Socket" + (", calls: Calls" if calls else "") + (", i: int" if member else "")
        lines = [f"def {fn}({params}) -> None:", *docstring(doc, 4)]
        prelude, message = self._send_prelude(send)
        lines += prelude
        waits = _waits(calls)
        blocks = TYPES[sock.type].mute == "block" and not send.dontwait
        send_end, recv_end = self._send_end(send), self.s.ends_at(recv)
        if sock.close_at_s is not None:
            recv_end = sock.close_at_s if recv_end is None else min(recv_end, sock.close_at_s)
        lines += [f"    if not {waits}.sleep_until({num(self.s.starts_at(recv))}):", "        return",
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
                      f"{body}events = {waits}.poll(poller, None if ready or not sending else due)  # a message, room, or the next send"]
        else:
            lines.append(f"{body}events = {waits}.poll(poller, due if sending else None)  # a message, or the next send")
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
        if not blocks and not (send.interval.is_constant and send.interval.value == 0):
            # how late it comes is said in the JSON (proc.attempt); a send that waits for room
            # is ZeroMQ's back-pressure, not lateness: not measured there
            lines.append(f"{inner}proc.attempt({quoted(send.name)}, due{'' if send.pacing == 'schedule' else ', moves=True'})")
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
        self.names.needs.add("frames")
        return None, f"frames({topic_expr}, {size}, {send.parts})"

    def recv_loop(self, recv: RecvSpec, member: bool, resumable: bool, calls: bool = False) -> list[str]:
        """``recv_<loop>(proc, sock)``: waits for its start, then receives, works, stalls,
        replies or forwards, and counts, until its count, its duration or its socket's close;
        with ``calls``, ``recv_<loop>(proc, sock, calls)``, whose waits end at each [[call]]."""
        sock = self.s.socket(recv.socket)
        var = self.names.var(sock, member)
        fn = self.names.ident("recv", recv.name, member, prefix="recv_")
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
        params = f"proc: Proc, {var}: zmq.Socket" + (f", {self.names.var(forward, member)}: zmq.Socket" if forward else "")
        params += (", calls: Calls" if calls else "") + (", i: int" if member else "")
        lines = [f"def {fn}({params}) -> None:", *docstring(doc, 4)]
        waits = _waits(calls)
        if random:
            self.names.needs.add("rng")
            lines.append(f"    rng = proc.rng({quoted(recv.name)})  # numpy: not the simulator's draws")
            lines += value_lists([(recv.service, "service_times"), (recv.reply_size, "reply_sizes"), (recv.pause_every, "pause_gaps"),
                              (recv.pause, "pause_lengths")])
        lines += [f"    if not {waits}.sleep_until({num(start)}):", "        return"]
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
            lines += self._loop_head(recv.count, end_s, False, recv.name, resumable)
        if pauses:
            assert recv.pause is not None and recv.pause_every is not None
            lines += [f"{body}if proc.now() >= next_pause:  # a stall (a GC pause): no recv meanwhile",
                      f"{body}    pause = {draw(recv.pause, 'pause_lengths')}",
                      f"{body}    next_pause = proc.now() + pause + {draw(recv.pause_every, 'pause_gaps')}",
                      f"{body}    if not {waits}.sleep(pause):", f"{body}        return"]
        if close is not None and not timeout:  # (RCVTIMEO bounds the wait otherwise)
            lines += [f"{body}if not {_ready(var, 'zmq.POLLIN', close, calls)}:",
                      f"{body}    return  # nothing more before the socket closes"]
        take = f"message = calls.recv_multipart({var})" if calls else f"message = {var}.recv_multipart()"
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
                lines += [f"{body}if not {waits}.busy({draw(recv.service, 'service_times')}):  # the work, on the CPU (busy = true)",
                          f"{body}    return"]
            else:
                lines += [f"{body}if not {waits}.sleep({draw(recv.service, 'service_times')}):  # the work", f"{body}    return"]
        if forward is not None:
            out = self.names.var(forward, member)
            size = "sum(len(frame) for frame in message)"
            if recv.reply_size is not None:
                size = draw(recv.reply_size, "reply_sizes", integer=True)
            sent = f"calls.send({out}, proc.carry(message, {size}))" if calls else f"{out}.send(proc.carry(message, {size}))"
            lines.append(f"{body}{sent}  # blocks while {forward.name} has no room")
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
        """The reply to the message just received: on a REP as is, on a ROUTER or a DEALER
        behind the request's envelope, which it sends back itself."""
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


def _waits(calls: bool) -> str:
    """What a loop's sleeps and polls go through: ``proc``, or the thread's ``calls`` (they
    end at each [[call]] for the thread to make it)."""
    return "calls" if calls else "proc"


def _ready(var: str, event: str, until_s: float, calls: bool) -> str:
    """The wait for a socket's event until ``until_s`` (its close): a poll, or with ``calls``
    the thread's (it makes the [[call]]s due meanwhile)."""
    if calls:
        return f"calls.wait({var}, {event}, {num(until_s)})"
    return f"{var}.poll(proc.ms_until({num(until_s)}), {event})" if event != "zmq.POLLIN" else f"{var}.poll(proc.ms_until({num(until_s)}))"


def _stampable(send: SendSpec, traits: Any) -> bool:
    """Whether send's messages carry their send time (``proc.stamp``: the last 8 bytes of the
    last frame): not an XSUB's (they are subscriptions), and not where a topic shares the
    frame with fewer than 8 bytes of payload (the stamp would overwrite the topic)."""
    if traits.sends_subscriptions and not traits.filters_on_recv:
        return False
    return not send.topics or send.parts > 1 or (send.size.is_constant and send.size.value >= 8)
