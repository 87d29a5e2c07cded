"""The socket options of the types (``Socket.xsetsockopt`` and the scenario's options), call
by call on a ``World`` without workloads, against libzmq 4.3.5's source: ``xpub_t``
(XPUB_VERBOSE, XPUB_VERBOSER, XPUB_MANUAL and the messages an XSUB sends upstream),
``xsub_t``/``sub_t`` (ZMQ_SUBSCRIBE/UNSUBSCRIBE while connected, INVERT_MATCHING),
``router_t`` (ROUTER_HANDOVER and a duplicate routing id without it, PROBE_ROUTER,
CONNECT_ROUTING_ID), ``dealer_t`` (PROBE_ROUTER), ``req_t`` (REQ_RELAXED, REQ_CORRELATE),
and the ZMTP handshake's socket-type check (``mechanism_t::check_socket_type``), which
inproc does not make. Each test asserts what the application gets and the ledger's
records ``(msg id, state, socket, pipe, rule)``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

import zsim
from support import scenario
from zsim import profile
from zsim.build import model_params, stream_factory
from zsim.ledger import Ledger
from zsim.model.appthread import AppThread
from zsim.model.fates import (
    AGAIN,
    DISCARDED,
    LOST,
    RULE_DISCONNECT,
    RULE_FILTERED,
    RULE_LINGER,
    RULE_NO_DELIMITER,
    RULE_REQ_STATE,
    SENT,
)
from zsim.model.kernel import Environment
from zsim.model.pipe import BOTTOM, MSG_ENVELOPE, MSG_ID, MSG_TOPIC, PROBE_ID, SUBSCRIBE_ID, UNSUBSCRIBE_ID
from zsim.model.socket import Socket
from zsim.model.world import World
from zsim.spec import SocketOptions, parse_endpoint


class Net:
    """A world of one process; sockets by name (routing id: the name unless given)."""

    def __init__(self) -> None:
        params = replace(model_params(profile.load("ideal")), command_throttle_s=0.0, app_wake=None)
        self.env = Environment()
        self.ledger = Ledger()
        self.world = World(self.env, params, self.ledger, stream_factory(1))
        self.process = self.world.add_process("proc")
        self.app = AppThread(self.world)

    def socket(self, name: str, type_name: str, bind: tuple[str, ...] = (), connect: tuple[str, ...] = (), rid: str | None = None,
               **options: Any) -> Socket:
        sock = self.world.add_socket(
            name, type_name, self.process, SocketOptions(**options), rid or name,
            tuple(parse_endpoint(e, f"socket.{name}.bind") for e in bind),
            tuple(parse_endpoint(e, f"socket.{name}.connect") for e in connect),
        )
        self.world.open_socket(sock)
        return sock

    def msg(self, topic: str = "", envelope: tuple = ()) -> tuple:
        return self.app.message(self.env.now, 1, 3, topic, envelope, -1)

    def control(self, kind: int, prefix: str) -> tuple:
        """An (un)subscription message an XSUB's application sends."""
        return (kind, self.env.now, 0, len(prefix) + 3, prefix, (), -1, -1)

    def pipe(self, name: str) -> Any:
        (info,) = [i for i in self.world.pipe_info if i.name == name]
        return info.pipe

    def records(self) -> list[tuple]:
        t = self.ledger.table()
        return [(int(t["msg_id"][i]), int(t["state"][i]), int(t["socket"][i]), int(t["pipe"][i]), int(t["rule"][i]))
                for i in range(len(t["msg_id"]))]


def events(sock: Socket) -> list[tuple[str, str]]:
    """What an XPUB's application reads now: ("+"/"-", prefix), or ("msg", topic)."""
    out = []
    while True:
        m = sock.recv()
        if m is None:
            return out
        out.append(({SUBSCRIBE_ID: "+", UNSUBSCRIBE_ID: "-"}.get(m[MSG_ID], "msg"), m[MSG_TOPIC]))


def topics(sock: Socket) -> list[str]:
    out = []
    while True:
        m = sock.recv()
        if m is None:
            return out
        out.append(m[MSG_TOPIC])


# -- XPUB_VERBOSE / XPUB_VERBOSER ----------------------------------------------------------------


def _two_subscribers(**xpub_options: Any) -> tuple[Net, Socket, Socket, Socket]:
    net = Net()
    xpub = net.socket("xpub", "XPUB", bind=("inproc://t",), **xpub_options)
    s0 = net.socket("s0", "SUB", connect=("inproc://t",))
    s1 = net.socket("s1", "SUB", connect=("inproc://t",))
    return net, xpub, s0, s1


@pytest.mark.parametrize("verbose,expected", [(False, [("+", "A")]), (True, [("+", "A")] * 3)])
def test_xpub_verbose_passes_up_every_subscription(verbose, expected):
    """xpub_t::xread_activated: ``notify = first_added || _verbose_subs``. sub_t::xsetsockopt
    sends a duplicate subscription upstream too (xsub_t::xsend no longer filters them)."""
    _net, xpub, s0, s1 = _two_subscribers(xpub_verbose=verbose)
    assert s0.xsetsockopt("subscribe", "A") and s1.xsetsockopt("subscribe", "A") and s0.xsetsockopt("subscribe", "A")
    assert events(xpub) == expected


@pytest.mark.parametrize("option,expected", [("xpub_verbose", []), ("xpub_verboser", [("-", "A")])])
def test_xpub_verboser_passes_up_a_cancel_while_another_subscriber_keeps_the_prefix(option, expected):
    """``notify = rm_result != values_remain || _verbose_unsubs``: only XPUB_VERBOSER sets
    _verbose_unsubs."""
    _net, xpub, s0, s1 = _two_subscribers(**{option: True})
    s0.xsetsockopt("subscribe", "A")
    s1.xsetsockopt("subscribe", "A")
    events(xpub)
    s0.xsetsockopt("unsubscribe", "A")
    assert events(xpub) == expected


def test_a_sub_sends_a_cancel_only_for_its_last_reference_and_none_for_an_unknown_prefix():
    """sub_t::xsetsockopt -> xsub_t::xsend: the cache counts references (trie_t::rm is true
    when the last goes); a cancel that removes nothing is not sent."""
    _net, xpub, s0, _s1 = _two_subscribers(xpub_verboser=True)
    s0.xsetsockopt("unsubscribe", "A")
    assert events(xpub) == []
    s0.xsetsockopt("subscribe", "A")
    s0.xsetsockopt("subscribe", "A")
    s0.xsetsockopt("unsubscribe", "A")
    assert events(xpub) == [("+", "A"), ("+", "A")]
    s0.xsetsockopt("unsubscribe", "A")
    s0.xsetsockopt("unsubscribe", "A")
    assert events(xpub) == [("-", "A")]


@pytest.mark.parametrize("option,expected", [("xpub_verbose", []), ("xpub_verboser", [("-", "A")])])
def test_a_closing_subscriber_with_xpub_verboser_cancels_even_what_others_keep(option, expected):
    """xpub_t::xpipe_terminated: ``_subscriptions.rm (pipe, send_unsubscription, this,
    !_verbose_unsubs)``: mtrie_t::rm calls back only for prefixes no pipe keeps unless
    XPUB_VERBOSER."""
    net, xpub, s0, s1 = _two_subscribers(**{option: True})
    s0.xsetsockopt("subscribe", "A")
    s1.xsetsockopt("subscribe", "A")
    events(xpub)
    net.world.close_socket(s0)
    assert events(xpub) == expected


def test_xpub_verbose_set_after_xpub_verboser_clears_the_verbose_cancels():
    """xpub_t::xsetsockopt: XPUB_VERBOSE sets _verbose_subs and clears _verbose_unsubs."""
    _net, xpub, _s0, _s1 = _two_subscribers(xpub_verboser=True)
    assert xpub.xsetsockopt("xpub_verbose", True)
    assert (xpub.verbose_subs, xpub.verbose_unsubs) == (True, False)


# -- XPUB_MANUAL ------------------------------------------------------------------------------


def test_xpub_manual_applies_only_what_the_application_subscribes_the_last_pipe_to():
    """xpub_t with _manual: a subscription is kept for the pipe's termination and passed up
    with its pipe (xread_activated), not applied; setsockopt(ZMQ_SUBSCRIBE) applies to the
    pipe of the last one the application read (xrecv sets _last_pipe). A topic nobody
    applied makes no copy: with the application deciding, no slow joiner is counted."""
    net = Net()
    xpub = net.socket("xpub", "XPUB", bind=("inproc://m",), xpub_manual=True)
    xsub = net.socket("xsub", "XSUB", connect=("inproc://m",))
    assert xsub.send(net.control(SUBSCRIBE_ID, "A")) == SENT
    assert xpub.xsetsockopt("subscribe", "B")  # nothing read yet: no last pipe, nothing applied
    assert events(xpub) == [("+", "A")]
    assert xpub.xsetsockopt("subscribe", "B")
    a, b = net.msg("A"), net.msg("B")
    assert xpub.send(a) == SENT and xpub.send(b) == SENT
    assert topics(xsub) == ["B"]
    assert (xpub.copies, net.records()) == (1, [])
    # duplicates go up too, one per (un)subscription
    xsub.send(net.control(SUBSCRIBE_ID, "A"))
    xsub.send(net.control(UNSUBSCRIBE_ID, "A"))
    xsub.send(net.control(UNSUBSCRIBE_ID, "A"))
    assert events(xpub) == [("+", "A"), ("-", "A")]  # the XSUB counted two, so it sent one cancel


def test_xpub_manual_cancels_what_a_closed_pipe_asked_for_and_forgets_it_as_last_pipe():
    """xpub_t::xpipe_terminated with _manual: send_unsubscription for every prefix in
    _manual_subscriptions of the pipe (what it asked for, not what the application
    applied), each with no pipe; the pipe leaves _subscriptions silently; a later
    ZMQ_UNSUBSCRIBE finds no last pipe and does nothing."""
    net = Net()
    xpub = net.socket("xpub", "XPUB", bind=("inproc://m",), xpub_manual=True)
    xsub = net.socket("xsub", "XSUB", connect=("inproc://m",))
    xsub.send(net.control(SUBSCRIBE_ID, "A"))
    assert events(xpub) == [("+", "A")]
    xpub.xsetsockopt("subscribe", "XA")
    peer = xpub.last_pipe
    net.world.close_socket(xsub)
    assert events(xpub) == [("-", "A")]
    assert xpub.last_pipe is None and peer.applied.prefixes == {} and xpub.all_subs.prefixes == {}
    assert xpub.xsetsockopt("unsubscribe", "XA")


def test_subscribe_on_an_xpub_without_xpub_manual_an_xsub_or_a_pub_is_not_the_types_option():
    """xpub_t::xsetsockopt: ZMQ_SUBSCRIBE only ``&& _manual``; xsub_t::xsetsockopt knows
    neither: EINVAL (and options_t does not know them either)."""
    net = Net()
    xpub = net.socket("xpub", "XPUB", bind=("inproc://a",))
    pub = net.socket("pub", "PUB", bind=("inproc://b",))
    xsub = net.socket("xsub", "XSUB", connect=("inproc://a",))
    assert [s.xsetsockopt("subscribe", "A") for s in (xpub, pub, xsub)] == [False, False, False]
    assert xpub.xsetsockopt("xpub_manual", True) and xpub.xsetsockopt("subscribe", "A")


# -- what an XSUB sends upstream ---------------------------------------------------------------


def test_an_xsub_user_message_reaches_the_xpub_application_and_a_pub_throws_it_away():
    """xsub_t::xsend: a message that is neither a subscription nor a cancel goes to every
    peer (dist_t::send_to_all); xpub_t::xread_activated keeps it for the application
    (``options.type != ZMQ_PUB``): a PUB throws it away (rule ``filtered``)."""
    net = Net()
    xpub = net.socket("xpub", "XPUB", bind=("inproc://x",))
    pub = net.socket("pub", "PUB", bind=("inproc://p",))
    xsub = net.socket("xsub", "XSUB", connect=("inproc://x", "inproc://p"))
    m = net.msg("A")
    assert xsub.send(m) == SENT and xsub.copies == 2
    got = xpub.recv()
    assert got is m and xpub.last_pipe_index == net.pipe("xsub->xpub").index
    assert pub.recv() is None
    assert net.records() == [(m[MSG_ID], DISCARDED, pub.index, net.pipe("xsub->pub").index, RULE_FILTERED)]


def test_a_user_message_the_xpub_application_never_read_is_queued_at_the_end_or_lost_at_close():
    """xpub_t::_pending_data holds it outside the pipe: at the end it is still queued; a
    closing XPUB loses it (rule ``close_linger``)."""
    net = Net()
    xpub = net.socket("xpub", "XPUB", bind=("inproc://x",))
    xsub = net.socket("xsub", "XSUB", connect=("inproc://x",))
    m = net.msg("A")
    xsub.send(m)
    xpub.process_commands()
    pipe = net.pipe("xsub->xpub").index
    assert [(msg[MSG_ID], sock, p) for msg, sock, p, _where in net.world.unfinished()] == [(m[MSG_ID], xpub.index, pipe)]
    net.world.close_socket(xpub)
    assert net.records() == [(m[MSG_ID], LOST, xpub.index, pipe, RULE_LINGER)]
    assert net.world.unfinished() == []


# -- INVERT_MATCHING ------------------------------------------------------------------------------


def test_invert_matching_sends_to_the_pipes_that_do_not_match_and_a_sub_takes_what_matches_none():
    """xpub_t::xsend: ``if (options.invert_matching) _dist.reverse_match ()``; xsub_t::match:
    ``matching ^ options.invert_matching``."""
    net = Net()
    pub = net.socket("pub", "PUB", bind=("inproc://i",), invert_matching=True)
    sa = net.socket("sa", "SUB", connect=("inproc://i",), subscribe=("a",), invert_matching=True)
    sb = net.socket("sb", "SUB", connect=("inproc://i",), subscribe=("b",), invert_matching=True)
    pub.process_commands()
    for topic in ("a1", "b1", "c1"):
        pub.send(net.msg(topic))
    assert (topics(sa), topics(sb), pub.copies) == (["b1", "c1"], ["a1", "c1"], 4)


def test_an_inverting_sub_filters_what_matches_and_one_subscribed_to_everything_takes_nothing():
    net = Net()
    pub = net.socket("pub", "PUB", bind=("inproc://i",))
    everything = net.socket("all", "SUB", connect=("inproc://i",), subscribe=("",), invert_matching=True)
    pub.process_commands()
    m = net.msg("x")
    pub.send(m)
    assert everything.recv() is None
    assert net.records() == [(m[MSG_ID], DISCARDED, everything.index, net.pipe("pub->all").index, RULE_FILTERED)]


# -- PROBE_ROUTER --------------------------------------------------------------------------------


def test_probe_router_writes_an_empty_message_to_each_new_peer():
    """router_t::xattach_pipe and dealer_t::xattach_pipe: with _probe_router an empty message
    goes into the new pipe first; a ROUTER reads it as [routing id, empty frame]."""
    net = Net()
    router = net.socket("router", "ROUTER", bind=("inproc://r",), probe_router=True)
    dealer = net.socket("dealer", "DEALER", connect=("inproc://r",), probe_router=True)
    got = router.recv()  # attaches the dealer: its probe is there, and the router's goes out
    assert (got[MSG_ID], got[MSG_TOPIC], got[MSG_ENVELOPE]) == (PROBE_ID, "", ("dealer",))
    got = dealer.recv()
    assert (got[MSG_ID], got[MSG_ENVELOPE]) == (PROBE_ID, ())


def test_a_rep_skips_a_probe_without_counting_a_copy():
    """rep_t::xrecv: an empty message ends before the delimiter: rolled back and skipped.
    A probe is no application message: no copy, no ledger record."""
    net = Net()
    rep = net.socket("rep", "REP", bind=("inproc://r",))
    net.socket("req", "REQ", connect=("inproc://r",), probe_router=True)
    assert rep.recv() is None
    assert (rep.discarded, net.records()) == (0, [])


# -- ROUTER_HANDOVER, and a duplicate routing id without it ----------------------------------------


def _duplicate_x(handover: bool) -> tuple[Net, Socket, Socket, Socket, tuple, tuple]:
    net = Net()
    router = net.socket("router", "ROUTER", bind=("inproc://r",), router_handover=handover)
    one = net.socket("one", "DEALER", connect=("inproc://r",), rid="X")
    first = net.msg()
    one.send(first)
    assert router.recv()[MSG_ID] == first[MSG_ID]
    unread = net.msg()
    one.send(unread)  # still in one's pipe when two comes
    two = net.socket("two", "DEALER", connect=("inproc://r",), rid="X")
    hello = net.msg()
    two.send(hello)
    return net, router, one, two, unread, hello


def test_without_router_handover_a_second_peer_with_the_same_id_is_never_read():
    """router_t::identify_peer: ``if (!_handover) return false`` ("Ignore peers with duplicate
    ID"): the pipe is anonymous, read by nobody, routed to by nobody; the id stays the
    first peer's."""
    net, router, one, two, unread, hello = _duplicate_x(handover=False)
    assert router.recv()[MSG_ID] == unread[MSG_ID]
    assert router.recv() is None
    assert net.pipe("two->router").depth == 1  # hello waits there, unread
    reply = net.msg(envelope=("X",))
    router.send(reply)
    assert one.recv()[MSG_ID] == reply[MSG_ID] and two.recv() is None


def test_with_router_handover_the_new_peer_takes_the_id_and_the_old_pipe_terminates():
    """identify_peer with _handover: the old pipe gets a generated id and is terminated
    (pipe_t::terminate (true)): what it brought that the ROUTER had not read is dropped
    (rule ``disconnect``), its peer can no longer send there, and the id routes to the
    new peer."""
    net, router, one, two, unread, hello = _duplicate_x(handover=True)
    old_pipe = net.pipe("one->router").index
    router.process_commands()  # as zmq_poll does: two attaches (a recv would first read what is there)
    assert net.records() == [(unread[MSG_ID], LOST, router.index, old_pipe, RULE_DISCONNECT)]
    got = router.recv()
    assert (got[MSG_ID], got[MSG_ENVELOPE]) == (hello[MSG_ID], ("X",))
    reply = net.msg(envelope=("X",))
    router.send(reply)
    assert two.recv()[MSG_ID] == reply[MSG_ID]
    assert one.recv() is None
    assert one.send(net.msg()) == AGAIN  # its only pipe is gone


# -- REQ_RELAXED / REQ_CORRELATE ----------------------------------------------------------------


def test_req_relaxed_sends_a_new_request_and_skips_the_late_reply_to_the_old_one():
    """req_t::xsend without _strict: ``_receiving_reply = false``, the request goes to the
    next pipe; req_t::recv_reply_pipe skips what comes from another pipe."""
    net = Net()
    req = net.socket("req", "REQ", bind=("inproc://q",), req_relaxed=True)
    rep0 = net.socket("rep0", "REP", connect=("inproc://q",))
    rep1 = net.socket("rep1", "REP", connect=("inproc://q",))
    assert req.send(net.msg("A")) == SENT and rep0.recv()[MSG_TOPIC] == "A"
    assert not req.send_refused() and req.has_out()
    assert req.send(net.msg("C")) == SENT and rep1.recv()[MSG_TOPIC] == "C"
    wrong, ok = net.msg("WRONG"), net.msg("OK")
    rep0.send(wrong)
    rep1.send(ok)
    assert req.recv()[MSG_ID] == ok[MSG_ID]
    assert net.records() == [(wrong[MSG_ID], DISCARDED, req.index, net.pipe("rep0->req").index, RULE_REQ_STATE)]


def test_req_correlate_puts_the_request_id_first_and_skips_a_reply_with_another():
    """req_t::xsend with _request_id_frames_enabled: a uint32 id frame (one more per
    request) before the delimiter; req_t::xrecv skips a reply whose first frame is not the
    current id, and returns the body without the id."""
    net = Net()
    router = net.socket("router", "ROUTER", bind=("inproc://c",))
    req = net.socket("req", "REQ", connect=("inproc://c",), req_correlate=True)
    req.send(net.msg())
    got = router.recv()
    rid, request_id, bottom = got[MSG_ENVELOPE]
    assert (rid, bottom, isinstance(request_id, int)) == ("req", BOTTOM, True)
    assert req.request_id == request_id
    bad, good = net.msg(envelope=("req", request_id + 1, BOTTOM)), net.msg(envelope=("req", request_id, BOTTOM))
    router.send(bad)
    router.send(good)
    reply = req.recv()
    assert (reply[MSG_ID], reply[MSG_ENVELOPE]) == (good[MSG_ID], (BOTTOM,))
    assert net.records() == [(bad[MSG_ID], DISCARDED, req.index, net.pipe("router->req").index, RULE_REQ_STATE)]
    req.send(net.msg())
    assert router.recv()[MSG_ENVELOPE][1] == request_id + 1


def test_req_correlate_skips_a_reply_with_the_id_but_no_delimiter_after_it():
    net = Net()
    router = net.socket("router", "ROUTER", bind=("inproc://c",))
    req = net.socket("req", "REQ", connect=("inproc://c",), req_correlate=True)
    req.send(net.msg())
    request_id = router.recv()[MSG_ENVELOPE][1]
    bad = net.msg(envelope=("req", request_id))
    router.send(bad)
    assert req.recv() is None
    assert net.records() == [(bad[MSG_ID], DISCARDED, req.index, net.pipe("router->req").index, RULE_NO_DELIMITER)]


# -- CONNECT_ROUTING_ID ---------------------------------------------------------------------------


@pytest.mark.parametrize("connect_first", [False, True])
def test_connect_routing_id_names_the_peer_of_the_first_connect(connect_first):
    """routing_socket_base_t::extract_connect_routing_id in router_t::identify_peer of the
    pipe the connect attaches: the ROUTER routes to that name at once and receives with
    it; the option is used up (a second connect's peer keeps its own id)."""
    net = Net()
    if connect_first:
        conn = net.socket("conn", "ROUTER", connect=("inproc://b", "inproc://c"), connect_routing_id="conn1")
    b = net.socket("b", "ROUTER", bind=("inproc://b",))
    c = net.socket("c", "ROUTER", bind=("inproc://c",))
    if not connect_first:
        conn = net.socket("conn", "ROUTER", connect=("inproc://b", "inproc://c"), connect_routing_id="conn1")
    assert conn.router.by_key["conn1"].remote is b
    hi = net.msg(envelope=("conn1",))
    conn.send(hi)
    assert b.recv()[MSG_ENVELOPE] == ("conn",)
    b.send(net.msg(envelope=("conn",)))
    assert conn.recv()[MSG_ENVELOPE] == ("conn1",)
    assert conn.take_connect_routing_id() is None  # used up: the peer at c keeps its own name
    assert [peer.routing_key for peer in conn.peers if peer.remote is c] != ["conn1"]


# -- the socket-type check: tcp and ipc handshakes only ----------------------------------------------


def _mismatched(transport: str) -> dict:
    where = {"inproc": "inproc://m", "ipc": "ipc://m", "tcp": "tcp://127.0.0.1:5999"}[transport]
    return scenario(
        {"name": "pull", "type": "PULL", "bind": where},
        {"name": "pair", "type": "PAIR", "connect": where},
        sends=[{"socket": "pair", "count": 3, "dontwait": True, "size_bytes": 0}],
        recvs=[{"socket": "pull", "start_s": 0.1}],
        until_s=1.0,
        profile="default",  # a handshake that takes time: the three sends are queued before it
    )


def test_inproc_connects_a_pair_to_a_pull():
    """ctx_t::connect_inproc_sockets checks no types (test_inproc_connect.cpp:171)."""
    result = zsim.run(_mismatched("inproc"), 1)
    assert result.summary["sockets"]["pull"]["received"] == 3
    assert any(w["code"] == "incompatible_peer" for w in result.summary["warnings"])


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
def test_the_tcp_and_ipc_handshake_refuses_a_pair_with_a_pull_and_does_not_retry(transport):
    """mechanism_t::check_socket_type fails on the READY command: each engine stops with a
    protocol error and session_base_t::engine_error terminates the connect side's session
    (no reconnect); its pipe goes with what was queued in it (rule ``disconnect``)."""
    result = zsim.run(_mismatched(transport), 1)
    summary = result.summary
    assert summary["sockets"]["pull"]["received"] == 0
    assert summary["sockets"]["pair"]["sent"] == 3  # queued in the pipe before the handshake
    assert summary["ledger"]["discarded_by_rule"] == {"disconnect": 3}
    assert summary["links"] == [] or all(link["name"] != "pair<->pull" for link in summary["links"])


# -- the application's calls (zsim.app) ---------------------------------------------------------


def test_an_xsub_application_sends_subscriptions_and_messages_and_only_the_messages_count():
    """An XSUB's send(subscribe=...) is a zmq_send of b"\\x01" + prefix (xsub_t::xsend): no
    message of the run (no id, not in ``sent``); a plain send is a message like any other."""
    seen = []

    def app(app):
        xpub, xsub = app.socket("xpub"), app.socket("xsub")

        def flow():
            yield app.env.timeout(0.001)
            seen.append((yield xsub.send(subscribe="A")))
            seen.append((yield xsub.send(unsubscribe="A")))
            seen.append((yield xsub.send(2, topic="T")))
            for _ in range(3):
                got = yield xpub.recv()
                seen.append((got.kind, got.topic))

        app.process(flow())

    summary = zsim.run(scenario({"name": "xpub", "type": "XPUB", "bind": "inproc://x"},
                                {"name": "xsub", "type": "XSUB", "connect": "inproc://x"}), 1, apps=[app]).summary
    assert seen == [None, None, 0, ("subscribe", "A"), ("unsubscribe", "A"), ("message", "T")]
    assert (summary["ledger"]["sent"], summary["ledger"]["delivered"], summary["sockets"]["xsub"]["sent"]) == (1, 1, 1)


def test_subscription_calls_fail_like_pyzmq_where_libzmq_refuses_them():
    caught = []

    def app(app):
        xpub, xsub, sub = app.socket("xpub"), app.socket("xsub"), app.socket("sub")

        def flow():
            yield app.env.timeout(0.001)
            for call in (lambda: xsub.subscribe("A"), lambda: xpub.subscribe("A"), lambda: sub.subscribe(b"A")):
                try:
                    call()
                except (zsim.InvalidArgument, TypeError) as exc:
                    caught.append(type(exc).__name__)
            for event in (sub.send(subscribe="A"), xsub.send(subscribe="A", topic="x"), xsub.send(subscribe="A", unsubscribe="B")):
                try:
                    yield event
                except (zsim.NotSupported, ValueError) as exc:
                    caught.append(type(exc).__name__)
            sub.subscribe("A")  # a SUB's own option: fine

        app.process(flow())

    zsim.run(scenario({"name": "xpub", "type": "XPUB", "bind": "inproc://x"},
                      {"name": "xsub", "type": "XSUB", "connect": "inproc://x"},
                      {"name": "sub", "type": "SUB", "connect": "inproc://x"}), 1, apps=[app])
    assert caught == ["InvalidArgument", "InvalidArgument", "TypeError", "NotSupported", "ValueError", "ValueError"]
