"""``Socket`` (``zsim.model.socket``) driven call by call, without a scenario or workloads.

Each test builds a ``World`` with the ``ideal`` profile's parameters (only the command
throttle and the wake-up latency are set where the test is about them), opens a few
sockets on inproc endpoints, and calls ``send``/``recv``/``wait`` itself, asserting exact
``(time, event)`` traces and the real ``Ledger``'s records ``(msg id, state, socket, pipe,
rule, time)``. What each trace must be comes from libzmq 4.3.5: ``socket_base_t::send`` /
``recv`` / ``process_commands`` (src/socket_base.cpp), ``pipe_t::check_write`` /
``process_activate_write`` (src/pipe.cpp), ``req_t``, ``rep_t``, ``pair_t``, ``sub_t``/``xsub_t``
and ``xpub_t`` (src/req.cpp ... src/xpub.cpp). Times are multiples of 1/8 so that every
comparison is exact in binary floating point.

Pipe indexes are creation order: a connect makes connector->binder, then binder->connector.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from zsim import profile
from zsim.build import model_params, stream_factory
from zsim.distributions import Distribution
from zsim.ledger import Ledger
from zsim.model.appthread import AppThread
from zsim.model.fates import (
    AGAIN,
    DISCARDED,
    DROPPED,
    LOST,
    RULE_FILTERED,
    RULE_HWM,
    RULE_LINGER,
    RULE_NO_DELIMITER,
    RULE_NO_PEERS,
    RULE_REQ_STATE,
    SENT,
)
from zsim.model.kernel import Environment
from zsim.model.pipe import BOTTOM, MSG_ENVELOPE, MSG_ID, MSG_TOPIC, SUBSCRIBE_ID, UNSUBSCRIBE_ID
from zsim.model.routing import Distribute, FairQueue, LoadBalance, RouteByIdentity
from zsim.model.socket import Socket
from zsim.model.sockets import CLASSES, Pair, Pub, Rep, Req, Router, Sub, XPub, XSub
from zsim.model.world import World
from zsim.socket_types import DIST, LB, ROUTE, TYPES
from zsim.spec import SocketOptions, parse_endpoint


class Net:
    """A world of one process; sockets by name; the ledger's records as tuples."""

    def __init__(self, throttle_s: float = 0.0, wake_s: float | None = None) -> None:
        params = replace(model_params(profile.load("ideal")), command_throttle_s=throttle_s,
                         app_wake=Distribution.constant(wake_s) if wake_s is not None else None)
        self.env = Environment()
        self.ledger = Ledger()
        self.world = World(self.env, params, self.ledger, stream_factory(1))
        self.process = self.world.add_process("proc")
        self.app = AppThread(self.world)  # makes the messages, as an application thread does

    def socket(self, name: str, type_name: str, bind: tuple[str, ...] = (), connect: tuple[str, ...] = (), **options: Any) -> Socket:
        sock = self.world.add_socket(
            name, type_name, self.process, SocketOptions(**options), name,
            tuple(parse_endpoint(e, f"socket.{name}.bind") for e in bind),
            tuple(parse_endpoint(e, f"socket.{name}.connect") for e in connect),
        )
        self.world.open_socket(sock)
        return sock

    def msg(self, topic: str = "", envelope: tuple = ()) -> tuple:
        return self.app.message(self.env.now, 1, 3, topic, envelope, -1)

    def at(self, t: float) -> None:
        self.env.run_through(t)  # the model's horizon: what is due at t runs

    def pipe(self, name: str) -> Any:
        (info,) = [i for i in self.world.pipe_info if i.name == name]
        return info.pipe

    def records(self) -> list[tuple]:
        t = self.ledger.table()
        return [(int(t["msg_id"][i]), int(t["state"][i]), int(t["socket"][i]), int(t["pipe"][i]), int(t["rule"][i]),
                 float(t["time"][i])) for i in range(len(t["msg_id"]))]


def recording_command(net: Net, trace: list, label: str):
    """A command that notes when the socket's thread executes it."""

    def run(_arg: Any) -> None:
        trace.append((net.env.now, label))

    return run


# -- command processing -------------------------------------------------------------------


def test_send_looks_at_the_mailbox_at_most_once_per_command_throttle():
    """socket_base_t::send -> process_commands (0, true): skipped while
    ``tsc - _last_tsc <= max_command_delay``; the window starts at the last look, even a
    look that found nothing."""
    net = Net(throttle_s=0.25)
    net.socket("pull", "PULL", bind=("inproc://q",))
    push = net.socket("push", "PUSH", connect=("inproc://q",))
    trace: list = []
    for t, event in [(0.0, "send"), (0.0, "post c1"), (0.125, "send"), (0.25, "send"), (0.375, "send"), (0.5, "send"),
                     (1.0, "send"), (1.0, "post c2"), (1.125, "send"), (1.25, "send"), (1.375, "send")]:
        net.at(t)
        if event == "send":
            assert push.send(net.msg()) == SENT
            trace.append((t, "send", push.last_command_time))
        else:
            push.post(recording_command(net, trace, event[5:]), None)
    assert trace == [
        (0.0, "send", 0.0),
        (0.125, "send", 0.0),
        (0.25, "send", 0.0),  # 0.25 - 0 <= 0.25: still inside the window
        (0.375, "c1"),
        (0.375, "send", 0.375),
        (0.5, "send", 0.375),
        (1.0, "send", 1.0),  # an empty mailbox: the look still restarts the window
        (1.125, "send", 1.0),
        (1.25, "send", 1.0),
        (1.375, "c2"),
        (1.375, "send", 1.375),
    ]


def test_recv_processes_commands_every_inbound_poll_rate_calls_and_when_empty():
    """socket_base_t::recv: ``if (++_ticks == inbound_poll_rate)`` process commands; a
    recv that finds nothing processes them and tries once more (an activate_read that is
    already waiting makes that second try succeed)."""
    net = Net()
    pull = net.socket("pull", "PULL", bind=("inproc://q",))
    push = net.socket("push", "PUSH", connect=("inproc://q",), sndhwm=0)
    pull.process_commands()  # the bind command: the pipe is attached
    for _ in range(250):
        push.send(net.msg())
    trace: list = []
    got: list = []
    pull.post(recording_command(net, trace, "c1"), None)
    for call in range(1, 252):
        if call == 101:
            pull.post(recording_command(net, trace, "c2"), None)
        if call == 201:
            pull.post(recording_command(net, trace, "c3"), None)
        before = len(trace)
        m = pull.recv()
        got.append(None if m is None else m[MSG_ID])
        if len(trace) > before:
            trace[-1] += (call,)
    assert trace == [(0.0, "c1", 100), (0.0, "c2", 200), (0.0, "c3", 251)]
    assert got == list(range(250)) + [None]
    # the pipe is drained and its reader asleep: the next write posts activate_read, and
    # the first recv processes it after finding the (deactivated) pipe empty
    net.at(0.5)
    push.send(net.msg())
    assert len(pull.mailbox) == 1
    m = pull.recv()
    assert m is not None and m[MSG_ID] == 250 and pull.mailbox == []


def test_a_blocked_sender_wakes_when_activate_write_arrives_plus_the_wake_latency():
    """PUSH with a full pipe blocks (lb_t: EAGAIN); the reader's lwm-th read posts
    activate_write; the blocked thread wakes ``api.wake_s`` later, processes its commands
    and retries (socket_base_t::send's blocking loop: process_commands (timeout), xsend)."""
    trace = blocked_push_trace(wake_s=0.125)
    assert trace == [
        (1.0, "recv", 0),
        (1.0, "push mailbox", 0),
        (1.0, "recv", 1),  # read 2 = lwm: activate_write(2) posted to push
        (1.0, "push mailbox", 1),
        (1.125, "retry", SENT),
    ]


def test_with_no_wake_latency_the_blocked_sender_runs_inside_the_readers_call():
    trace = blocked_push_trace(wake_s=None)
    assert trace == [
        (1.0, "recv", 0),
        (1.0, "push mailbox", 0),
        (1.0, "retry", SENT),  # woken at the same instant, before the reader goes on
        (1.0, "recv", 1),
        (1.0, "push mailbox", 0),
    ]


def test_a_command_that_arrived_before_the_sender_blocked_wakes_it_at_once():
    """The throttled send at 0.125 did not look at the mailbox, so it saw the pipe full;
    blocking (process_commands with a timeout) finds the waiting activate_write at once:
    the thread runs again after the wake latency, not after another command."""
    net = Net(throttle_s=0.25, wake_s=0.125)
    pull = net.socket("pull", "PULL", bind=("inproc://q",), rcvhwm=2)
    push = net.socket("push", "PUSH", connect=("inproc://q",), sndhwm=2)
    pull.process_commands()
    assert [push.send(net.msg()) for _ in range(4)] == [SENT] * 4
    net.at(0.125)
    assert [pull.recv()[MSG_ID] for _ in range(2)] == [0, 1]  # type: ignore[index]
    blocked = net.msg()
    assert push.send(blocked) == AGAIN and len(push.mailbox) == 1
    trace: list = []

    def retry() -> None:
        status = push.xsend(blocked)
        trace.append((net.env.now, "retry", status))
        push.stop_waiting(retry)

    push.wait(retry)
    net.env.run()
    assert trace == [(0.25, "retry", SENT)]


def blocked_push_trace(wake_s: float | None) -> list:
    net = Net(wake_s=wake_s)
    pull = net.socket("pull", "PULL", bind=("inproc://q",), rcvhwm=2)
    push = net.socket("push", "PUSH", connect=("inproc://q",), sndhwm=2)
    pipe = net.pipe("push->pull")
    assert (pipe.hwm, pipe.lwm) == (4, 2)  # inproc: sndhwm + rcvhwm
    pull.process_commands()
    assert [push.send(net.msg()) for _ in range(5)] == [SENT] * 4 + [AGAIN]
    trace: list = []
    blocked = net.msg()

    def retry() -> None:
        status = push.xsend(blocked)
        trace.append((net.env.now, "retry", status))
        if status == SENT:
            push.stop_waiting(retry)

    push.wait(retry)

    def reader() -> None:
        for _ in range(2):
            got = pull.recv()
            assert got is not None
            trace.append((net.env.now, "recv", got[MSG_ID]))
            trace.append((net.env.now, "push mailbox", len(push.mailbox)))

    net.env.call_later(1.0, reader)
    net.env.run()
    assert push.waiters == [] and [m[MSG_ID] for m in pipe.queue] == [2, 3, 5]
    return trace


def test_pub_drops_to_a_pipe_its_reader_emptied_until_it_processes_activate_write():
    """The stale view: PUB's send looks at commands at most once per throttle, so the
    activate_write the SUB posted at 0.125 reaches it at 0.375; the send at 0.125 is
    dropped (rule hwm) into a pipe that holds nothing."""
    net = Net(throttle_s=0.25)
    pub = net.socket("pub", "PUB", bind=("inproc://t",), sndhwm=2)
    sub = net.socket("sub", "SUB", connect=("inproc://t",), rcvhwm=2, subscribe=("",))
    pipe = net.pipe("pub->sub")
    assert (pipe.index, pipe.hwm) == (1, 4)
    assert [pub.send(net.msg("x")) for _ in range(5)] == [SENT] * 5  # PUB never blocks
    net.at(0.125)
    assert [sub.recv()[MSG_ID] for _ in range(4)] == [0, 1, 2, 3]  # type: ignore[index]
    assert len(pub.mailbox) == 2  # activate_write(2), activate_write(4)
    pub.send(net.msg("x"))
    assert (pipe.depth, pipe.written - pipe.peers_read) == (0, 4)
    net.at(0.375)
    pub.send(net.msg("x"))
    assert [m[MSG_ID] for m in pipe.queue] == [6]
    assert net.records() == [(4, DROPPED, pub.index, 1, RULE_HWM, 0.0), (5, DROPPED, pub.index, 1, RULE_HWM, 0.125)]
    assert (pub.copies, pub.dropped) == (7, 2)


# -- REQ / REP -----------------------------------------------------------------------------


def test_req_lockstep_efsm_and_a_reply_from_another_pipe_is_discarded():
    """req_t::xsend refuses a second request (EFSM, strict); req_t::recv_reply_pipe
    discards what comes from any pipe but the one the request went to."""
    net = Net()
    rep = net.socket("a", "REP", bind=("inproc://a",))
    router = net.socket("b", "ROUTER", bind=("inproc://b",))
    req = net.socket("req", "REQ", connect=("inproc://a", "inproc://b"))
    b_to_req = net.pipe("b->req")
    assert b_to_req.index == 3
    assert req.send(net.msg()) == SENT  # m0 -> a (lb: first pipe)
    with pytest.raises(RuntimeError, match="EFSM"):
        req.send(net.msg())
    assert req.has_out() is False
    net.at(0.5)
    stray = net.msg(envelope=("req",))
    assert router.send(stray) == SENT  # b speaks to req unasked
    assert req.recv() is None
    assert net.records() == [(stray[MSG_ID], DISCARDED, req.index, 3, RULE_REQ_STATE, 0.5)]
    net.at(1.0)
    request = rep.recv()
    assert request is not None and request[MSG_ID] == 0
    reply = net.msg()
    assert rep.send(reply) == SENT
    got = req.recv()  # processes the activate_read of a->req after finding nothing
    assert got is not None and got[MSG_ID] == reply[MSG_ID]
    assert req.send(net.msg()) == SENT  # lockstep over: the next request (to b)
    assert [m[MSG_ID] for m in net.pipe("req->b").queue] == [reply[MSG_ID] + 1]


def test_req_discards_stale_replies_when_it_sends_the_next_request():
    net = Net()
    rep = net.socket("a", "REP", bind=("inproc://a",))
    router = net.socket("b", "ROUTER", bind=("inproc://b",))
    req = net.socket("req", "REQ", connect=("inproc://a", "inproc://b"))
    req.send(net.msg())  # m0 -> a
    rep.recv()
    rep.send(net.msg())  # m1: a's reply
    stale = net.msg(envelope=("req",))
    router.send(stale)  # m2: b "replies too"
    got = req.recv()
    assert got is not None and got[MSG_ID] == 1  # fq: a's pipe first
    net.at(0.25)
    assert req.send(net.msg()) == SENT  # m3 -> b; libzmq drops m2 here
    assert req.recv() is None  # b has not answered m3
    assert net.records() == [(stale[MSG_ID], DISCARDED, req.index, 3, RULE_REQ_STATE, 0.25)]


def test_rep_reply_to_a_peer_that_is_gone_is_dropped_no_peer():
    net = Net()
    rep = net.socket("rep", "REP", bind=("inproc://r",))
    req = net.socket("req", "REQ", connect=("inproc://r",))
    req.send(net.msg())
    request = rep.recv()
    assert request is not None and rep.has_out() is True
    net.at(0.5)
    net.world.close_socket(req)
    assert rep.reply_peer is not None  # rep has not processed the pipe_term yet
    net.at(0.75)
    reply = net.msg()
    assert rep.send(reply) == SENT  # processes the commands: the peer is gone
    assert net.records() == [(reply[MSG_ID], DROPPED, rep.index, -1, RULE_NO_PEERS, 0.75)]
    assert (rep.copies, rep.dropped, rep.peers) == (1, 1, [])


def test_rep_skips_whole_a_request_without_the_empty_delimiter():
    """rep_t::xrecv copies the frames with MORE into the reply pipe until an empty one
    (the bottom); a message whose last frame comes first is rolled back
    (router_t::rollback) and skipped whole, and the loop reads on: the REP's application
    never sees it and owes no reply. ZMQ_POLLIN still says readable (router_t::xhas_in
    looks at the pipes, not at the envelope), so a poll is followed by EAGAIN. A DEALER
    sending ``[b"", body]`` is what the REP wants; its reply comes back as ``[b"", reply]``."""
    net = Net()
    rep = net.socket("rep", "REP", bind=("inproc://r",))
    dealer = net.socket("d", "DEALER", connect=("inproc://r",))
    d_to_rep = net.pipe("d->rep")
    bare, good, framed = net.msg(), net.msg(envelope=(BOTTOM,)), net.msg(envelope=("x",))  # [body] [b"", body] [b"x", body]
    for m in (bare, good, framed):
        assert dealer.send(m) == SENT
    net.at(0.25)
    got = rep.recv()
    assert got is not None and got[MSG_ID] == good[MSG_ID]
    assert net.records() == [(bare[MSG_ID], DISCARDED, rep.index, d_to_rep.index, RULE_NO_DELIMITER, 0.25)]
    reply = net.msg()
    assert rep.send(reply) == SENT
    back = dealer.recv()
    assert back is not None and back[MSG_ID] == reply[MSG_ID] and back[MSG_ENVELOPE] == (BOTTOM,)
    net.at(0.5)
    assert rep.has_in() is True  # only the malformed one is queued
    assert rep.recv() is None
    assert net.records()[-1] == (framed[MSG_ID], DISCARDED, rep.index, d_to_rep.index, RULE_NO_DELIMITER, 0.5)
    assert rep.has_in() is False and rep.has_out() is False  # still waiting for a request
    assert (rep.discarded, rep.copies) == (2, 1)


def test_req_skips_a_reply_without_the_empty_delimiter_and_keeps_waiting():
    """req_t::xrecv: the first frame of a reply must be empty with MORE; otherwise the
    rest of the message is read and thrown away and the REQ waits on. The request it sent
    carries the delimiter under the routing id the ROUTER pushed."""
    net = Net()
    router = net.socket("r", "ROUTER", bind=("inproc://r",))
    req = net.socket("req", "REQ", connect=("inproc://r",))
    r_to_req = net.pipe("r->req")
    assert req.send(net.msg()) == SENT
    request = router.recv()
    assert request is not None and request[MSG_ENVELOPE] == ("req", BOTTOM)
    bare = net.msg(envelope=("req",))  # [b"req", reply]: no delimiter reaches the REQ
    assert router.send(bare) == SENT
    assert req.recv() is None
    assert net.records() == [(bare[MSG_ID], DISCARDED, req.index, r_to_req.index, RULE_NO_DELIMITER, 0.0)]
    assert req.has_out() is False  # still owes the wait for its reply
    reply = net.msg(envelope=request[MSG_ENVELOPE])
    assert router.send(reply) == SENT
    got = req.recv()
    assert got is not None and got[MSG_ID] == reply[MSG_ID]
    assert req.has_out() is True


# -- PUB/SUB, XPUB ------------------------------------------------------------------------


def test_sub_discards_what_its_filter_no_longer_matches():
    """sub_t/xsub_t::xrecv with options.filter: a message already in the pipe when the
    SUB unsubscribed is received and thrown away (rule filtered); the PUB stops sending
    once the unsubscription reaches it."""
    net = Net()
    pub = net.socket("pub", "PUB", bind=("inproc://t",))
    sub = net.socket("sub", "SUB", connect=("inproc://t",), subscribe=("a", "b"))
    pub_to_sub = net.pipe("pub->sub")
    for topic in ("a1", "b1"):
        assert pub.send(net.msg(topic)) == SENT
    net.at(0.5)
    sub.send_subscription("b", False)
    got = [sub.recv(), sub.recv()]
    assert [m[MSG_TOPIC] if m else None for m in got] == ["a1", None]
    assert net.records() == [(1, DISCARDED, sub.index, pub_to_sub.index, RULE_FILTERED, 0.5)]
    net.at(1.0)
    pub.send(net.msg("b2"))  # the unsubscription is processed first: no copy for sub
    pub.send(net.msg("a2"))
    assert [m[MSG_TOPIC] for m in pub_to_sub.queue] == ["a2"]
    assert (pub.copies, sub.discarded) == (3, 1)


def subscription_events(sock: Socket) -> list[tuple[str, str] | None]:
    out: list[tuple[str, str] | None] = []
    while True:
        m = sock.recv()
        if m is None:
            return out
        out.append(({SUBSCRIBE_ID: "+", UNSUBSCRIBE_ID: "-"}[m[MSG_ID]], m[MSG_TOPIC]))


def test_xpub_receives_new_subscriptions_and_last_unsubscriptions():
    """xpub_t::xread_activated: a subscription reaches the application when it is the
    first for its prefix (mtrie add returns true), an unsubscription when no pipe wants the
    prefix any more; a closed subscriber's last prefixes come as unsubscriptions
    (xpub_t::xpipe_terminated -> send_unsubscription)."""
    net = Net()
    xpub = net.socket("xpub", "XPUB", bind=("inproc://t",))
    s1 = net.socket("s1", "SUB", connect=("inproc://t",), subscribe=("a",))
    s2 = net.socket("s2", "SUB", connect=("inproc://t",), subscribe=("a", "b"))
    assert subscription_events(xpub) == [("+", "a"), ("+", "b")]
    s2.send_subscription("a", False)  # s1 still wants "a"
    s2.send_subscription("b", False)
    assert subscription_events(xpub) == [("-", "b")]
    s2.send_subscription("b", True)
    assert subscription_events(xpub) == [("+", "b")]
    net.world.close_socket(s1)
    assert subscription_events(xpub) == [("-", "a")]
    net.world.close_socket(s2)
    assert subscription_events(xpub) == [("-", "b")]


def test_xpub_passes_up_an_unsubscription_it_had_no_subscription_for():
    """xpub_t::xread_activated: ``notify = rm_result != values_remain``; mtrie_t::rm
    returns not_found for a prefix the pipe is not subscribed to, so the cancel reaches
    the application. Here the XSUB's subscription to "z" was lost at the full pipe
    (xsub_t::xsend caches it all the same), so its later cancel is one the XPUB never saw
    subscribed."""
    net = Net()
    xpub = net.socket("xpub", "XPUB", bind=("inproc://t",), rcvhwm=1)
    xsub = net.socket("xsub", "XSUB", connect=("inproc://t",), sndhwm=1)
    for prefix in ("a", "b", "z"):  # hwm 1 + 1: "z" does not fit and is lost (xsub_t::xsend)
        xsub.send_subscription(prefix, True)
    assert subscription_events(xpub) == [("+", "a"), ("+", "b")]  # activate_write to xsub
    net.at(0.125)  # past xsub's command throttle: it sees the room the reads made
    xsub.send_subscription("z", False)  # xsub's own trie had "z": the cancel is sent
    assert subscription_events(xpub) == [("-", "z")]


def test_xpub_passes_up_a_stray_unsubscription_while_others_keep_the_prefix():
    """mtrie_t::rm erases the pipe from the prefix's set: erased == 0 with other pipes
    left is not_found, not values_remain, so the XPUB's application hears "-c" although
    s1 still subscribes to "c" (and still gets "c" messages). A pipe that did subscribe
    and leaves others behind (values_remain) is not passed up."""
    net = Net()
    xpub = net.socket("xpub", "XPUB", bind=("inproc://t",), rcvhwm=1)
    s1 = net.socket("s1", "SUB", connect=("inproc://t",), subscribe=("c",))
    xsub = net.socket("xsub", "XSUB", connect=("inproc://t",), sndhwm=1)
    for prefix in ("a", "b", "c"):  # "c" does not fit in xsub's pipe: lost
        xsub.send_subscription(prefix, True)
    assert subscription_events(xpub) == [("+", "c"), ("+", "a"), ("+", "b")]
    net.at(0.125)
    xsub.send_subscription("c", False)
    assert subscription_events(xpub) == [("-", "c")]
    assert xpub.send(net.msg("c1")) == SENT
    got = s1.recv()
    assert got is not None and got[MSG_TOPIC] == "c1"
    s2 = net.socket("s2", "SUB", connect=("inproc://t",), subscribe=("a",))
    assert subscription_events(xpub) == []  # "a" is not new
    s2.send_subscription("a", False)  # xsub keeps "a": values_remain
    assert subscription_events(xpub) == []


# -- the types as compositions --------------------------------------------------------------


def test_every_type_of_the_table_has_its_class():
    assert list(CLASSES) == list(TYPES)


@pytest.mark.parametrize("type_name", list(TYPES))
def test_each_type_builds_the_composition_its_row_names(type_name: str):
    """sockets.CLASSES: a name of ``TYPES`` makes the class of that name, over the policies
    its row says (push_t { lb_t }, dealer_t { fq_t; lb_t }, ...), derived where libzmq
    derives (pub_t : xpub_t, sub_t : xsub_t, req_t : dealer_t)."""
    t = TYPES[type_name]
    sock = Net().socket("s", type_name)
    assert type(sock) is CLASSES[type_name] and type(sock).__name__.upper() == type_name
    assert isinstance(getattr(sock, "dist", None), Distribute) == (t.send == DIST)
    assert isinstance(getattr(sock, "lb", None), LoadBalance) == (t.send == LB)
    assert isinstance(getattr(sock, "router", None), RouteByIdentity) == (t.send == ROUTE)
    assert isinstance(getattr(sock, "fq", None), FairQueue) == t.receives
    assert isinstance(sock, XPub) == t.reads_subscriptions
    assert (isinstance(sock, XPub) and not isinstance(sock, Pub)) == t.app_sees_subscriptions
    assert isinstance(sock, XSub) == t.sends_subscriptions == (sock.own_subs is not None)
    assert isinstance(sock, Sub) == t.filters_on_recv
    assert isinstance(sock, Req) == t.request
    assert isinstance(sock, Rep) == t.reply
    assert isinstance(sock, Router) == t.prepends_identity
    assert isinstance(sock, Pair) == t.single_peer
    # a type that cannot send refuses in its xsend (socket_base_t's, or sub_t's: ENOTSUP);
    # an XSUB sends upstream (xsub_t::xsend)
    assert (isinstance(sock, XSub) and not isinstance(sock, Sub)) == t.sends_upstream
    if not t.app_send:
        with pytest.raises(RuntimeError, match="do not send application messages"):
            sock.xsend(Net().msg())
    assert (type(sock).xsend is Socket.xsend) == (t.send is None and not t.filters_on_recv and not t.sends_upstream)


# -- PAIR ----------------------------------------------------------------------------------


def test_pair_refuses_a_second_peer():
    """pair_t::xattach_pipe: ``if (_pipe == NULL) _pipe = pipe_; else pipe_->terminate
    (false)``: the second connection's pipe is closed, what it had sent is lost, and its
    socket can no longer send."""
    net = Net()
    p = net.socket("p", "PAIR", bind=("inproc://p",))
    q1 = net.socket("q1", "PAIR", connect=("inproc://p",))
    q2 = net.socket("q2", "PAIR", connect=("inproc://p",))
    q2_to_p = net.pipe("q2->p")
    early = net.msg()
    assert q2.send(early) == SENT  # q2 attached its own end at connect
    net.at(0.5)
    p.process_commands()  # both bind commands: q1 first, q2 refused
    assert p.pair_peer is not None and p.pair_peer.remote is q1
    assert q2.pair_peer is None and q2.send(net.msg()) == AGAIN and q2.has_out() is False
    m = net.msg()
    assert q1.send(m) == SENT
    got = p.recv()
    assert got is not None and got[MSG_ID] == m[MSG_ID]
    # the refused pipe's message is recorded as lost at p, under the rule close_side
    # gives a refusal (close_linger)
    assert net.records() == [(early[MSG_ID], LOST, p.index, q2_to_p.index, RULE_LINGER, 0.5)]


def test_router_prepends_the_senders_routing_id_on_recv():
    net = Net()
    router = net.socket("r", "ROUTER", bind=("inproc://r",))
    dealer = net.socket("d", "DEALER", connect=("inproc://r",))
    dealer.send(net.msg(envelope=("x",)))
    got = router.recv()
    assert got is not None and got[MSG_ENVELOPE] == ("d", "x")
    assert router.send(net.msg(envelope=("d", "y"))) == SENT
    back = dealer.recv()
    assert back is not None and back[MSG_ENVELOPE] == ("y",)
