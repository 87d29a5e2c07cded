"""The calls a living program makes while it runs: ``zmq_bind``, ``zmq_unbind``,
``zmq_connect``, ``zmq_disconnect`` and ``zmq_setsockopt`` at times (``[[call]]``) and from
``[[app]]`` code (``AppSocket``), with libzmq 4.3.5's semantics (issue 40, item 4):

* SNDHWM/RCVHWM set on a connected socket reach its pipes (``update_pipe_options``);
* a disconnected connection's queued messages go as ``term_endpoint`` sends them: what
  came in and was not read is thrown away, what was sent and not taken goes as LINGER
  says (inproc: the peer reads it up to the delimiter), each under rule ``app_disconnect``;
* an unbind stops new connections; tcp's accepted sessions end with their listener, the
  peers reconnect; inproc's connections stay;
* a SUB's subscriptions change while it runs.

None of this could be said before (b623754): every test here fails there.
"""

from __future__ import annotations

import pytest

import zsim
from support import run, scenario


def _push_pull_inproc(**extra):
    # connect first, then bind (test_sockopt_hwm.cpp's order): the bind attaches the pipe
    # in zmq_bind itself (ctx_t::connect_inproc_sockets)
    raw = scenario(
        {"name": "push", "type": "PUSH", "bind": "inproc://a", "open_at_s": 0.001, "options": {"sndhwm": 1}},
        {"name": "pull", "type": "PULL", "connect": "inproc://a", "options": {"rcvhwm": 1}},
        sends=[{"socket": "push", "count": 10_000, "dontwait": True, "on_again": "stop", "size_bytes": 0, "start_s": 0.1}],
        until_s=1.0)
    raw.update(extra)
    return raw


def test_sndhwm_set_on_a_connected_socket_reaches_its_pipe():
    # test_sockopt_hwm.cpp:59 (test_change_after_connected): SNDHWM 1 / RCVHWM 1 over
    # inproc, then SNDHWM 5 on the connected PUSH: 5 + 1 sends before EAGAIN
    summary = run(_push_pull_inproc(call=[{"socket": "push", "at_s": 0.05, "set": {"sndhwm": 5}}]))
    assert summary["sockets"]["push"]["sent"] == 6


def test_without_the_call_the_pipe_holds_the_sum_of_the_declared_hwms():
    assert run(_push_pull_inproc())["sockets"]["push"]["sent"] == 2


def test_a_lower_hwm_on_a_full_pipe_drops_nothing_and_applies_to_what_follows():
    # test_sockopt_hwm.cpp:103 (test_decrease_when_full): SNDHWM 100 / RCVHWM 1, fill,
    # SNDHWM 70, read everything (none lost), fill again: at most 70 + 1
    raw = scenario(
        {"name": "push", "type": "PUSH", "bind": "inproc://a", "options": {"sndhwm": 100}},
        {"name": "pull", "type": "PULL", "connect": "inproc://a", "options": {"rcvhwm": 1, "rcvtimeo": 0}},
        sends=[{"name": "fill", "socket": "push", "count": 10_000, "dontwait": True, "on_again": "stop", "size_bytes": 0,
                "start_s": 0.3},
               {"name": "refill", "socket": "push", "count": 10_000, "dontwait": True, "on_again": "stop", "size_bytes": 0,
                "start_s": 1.5}],
        # recv(DONTWAIT) until EAGAIN (RCVTIMEO 0 and on_timeout = "stop")
        recvs=[{"socket": "pull", "start_s": 0.9, "on_timeout": "stop"}],
        until_s=2.0)
    raw["call"] = [{"socket": "push", "at_s": 0.6, "set": {"sndhwm": 70}}]
    summary = run(raw)
    first = summary["senders"]["fill"]["sent"]
    assert first == 101  # test_sockopt_hwm.cpp:91: at most SNDHWM + 1, more than SNDHWM / 10
    assert summary["receivers"]["recv.pull"]["received"] == first  # :139: none were dropped
    # :146: the new HWM holds (at most 70 + 1, more than 7); how many exactly depends on
    # what the writer has seen read (an activate_write every LWM reads): zsim's 55
    assert 7 < summary["senders"]["refill"]["sent"] <= 71
    assert summary["senders"]["refill"]["sent"] == 55
    assert summary["ledger"]["dropped"] == 0


@pytest.mark.parametrize("transport", ["tcp", "ipc", "inproc"])
def test_after_a_disconnect_a_push_sends_to_the_peers_left(transport):
    endpoint = {"tcp": "tcp://127.0.0.1:{port}", "ipc": "ipc://lc{port}", "inproc": "inproc://lc{port}"}[transport]
    a, b = endpoint.format(port=5601), endpoint.format(port=5602)
    raw = scenario(
        {"name": "pa", "type": "PULL", "bind": a},
        {"name": "pb", "type": "PULL", "bind": b},
        {"name": "push", "type": "PUSH", "connect": [a, b]},
        sends=[{"socket": "push", "count": 20, "interval_s": 0.01, "start_s": 0.1}],
        recvs=[{"socket": "pa"}, {"socket": "pb"}],
        until_s=1.0)
    raw["call"] = [{"socket": "push", "at_s": 0.195, "disconnect": a}]
    summary = run(raw)
    # round robin over both for the first 10 sends, then pb alone
    assert summary["sockets"]["pa"]["received"] == 5
    assert summary["sockets"]["pb"]["received"] == 15
    assert summary["ledger"]["delivered"] == 20


def test_disconnect_throws_away_what_came_in_unread_under_its_own_rule():
    # zmq_disconnect(3): messages received from the network and not yet by the application
    # are discarded; a DEALER that never reads loses the replies queued for it
    raw = scenario(
        {"name": "router", "type": "ROUTER", "bind": "tcp://127.0.0.1:5610"},
        {"name": "dealer", "type": "DEALER", "connect": "tcp://127.0.0.1:5610"},
        sends=[{"socket": "router", "count": 5, "to": ["dealer"], "start_s": 0.1, "interval_s": 0.001}],
        until_s=1.0)
    raw["call"] = [{"socket": "dealer", "at_s": 0.5, "disconnect": "tcp://127.0.0.1:5610"}]
    summary = run(raw)
    assert summary["ledger"]["lost_by_rule"] == {"app_disconnect": 5}
    assert summary["ledger"]["queued_at_end"] == 0


def test_disconnect_before_the_connection_was_made_keeps_or_drops_by_linger():
    # zmq_disconnect terminates the session (socket_base_t::term_endpoint -> term_child):
    # it connects no more. LINGER -1: it keeps the messages queued for it and never sends
    # them (zmq_ctx_term would wait for ever); LINGER 0: they are dropped at once
    raw = scenario(
        {"name": "pull", "type": "PULL", "bind": "tcp://127.0.0.1:5620", "open_at_s": 0.3},
        {"name": "push", "type": "PUSH", "connect": "tcp://127.0.0.1:5620"},
        sends=[{"socket": "push", "count": 5, "interval_s": 0.001}],
        recvs=[{"socket": "pull"}],
        until_s=2.0)
    raw["call"] = [{"socket": "push", "at_s": 0.1, "disconnect": "tcp://127.0.0.1:5620"}]
    lingering = run(raw)
    raw["socket"][1]["options"] = {"linger": 0}
    dropped = run(raw)
    # LINGER -1: a disconnected, never-established connection keeps its messages but will
    # never connect again (no reconnect after zmq_disconnect): they stay queued; LINGER 0:
    # they are dropped at the disconnect
    assert lingering["sockets"]["pull"]["received"] == 0
    assert lingering["ledger"]["queued_at_end"] == 5
    assert dropped["ledger"]["lost_by_rule"] == {"app_disconnect": 5}


def test_unbind_over_tcp_ends_the_accepted_connections_and_a_later_bind_takes_them_back():
    raw = scenario(
        {"name": "pull", "type": "PULL", "bind": "tcp://127.0.0.1:5630"},
        {"name": "push", "type": "PUSH", "connect": "tcp://127.0.0.1:5630", "options": {"reconnect_ivl": 10}},
        sends=[{"socket": "push", "count": 30, "interval_s": 0.01, "start_s": 0.05}],
        recvs=[{"socket": "pull"}],
        until_s=2.0)
    raw["call"] = [{"socket": "pull", "at_s": 0.1501, "unbind": "tcp://127.0.0.1:5630"},
                   {"socket": "pull", "at_s": 0.5, "bind": "tcp://127.0.0.1:5630"}]
    summary = run(raw)
    # nothing is lost: the PUSH queues for the peer it reconnects to; all arrive after the rebind
    assert summary["sockets"]["pull"]["received"] == 30
    assert summary["ledger"]["delivered"] == 30


def test_unbind_inproc_keeps_its_connections():
    raw = scenario(
        {"name": "pull", "type": "PULL", "bind": "inproc://u"},
        {"name": "push", "type": "PUSH", "connect": "inproc://u"},
        sends=[{"socket": "push", "count": 10, "interval_s": 0.01}],
        recvs=[{"socket": "pull"}],
        until_s=1.0)
    raw["call"] = [{"socket": "pull", "at_s": 0.02, "unbind": "inproc://u"}]
    assert run(raw)["sockets"]["pull"]["received"] == 10


def test_a_sub_that_subscribes_later_receives_from_then_on():
    raw = scenario(
        {"name": "pub", "type": "PUB", "bind": "inproc://p"},
        {"name": "sub", "type": "SUB", "connect": "inproc://p", "options": {"subscribe": ["A"]}},
        sends=[{"socket": "pub", "count": 20, "interval_s": 0.01, "topic": ["A", "B"], "start_s": 0.1}],
        recvs=[{"socket": "sub"}],
        until_s=1.0)
    raw["call"] = [{"socket": "sub", "at_s": 0.195, "subscribe": "B"},
                   {"socket": "sub", "at_s": 0.195, "unsubscribe": "A"}]
    summary = run(raw)
    # the first 10 (at 0.10 .. 0.19): A only, 5 of them; then B only, 5 of the next 10
    assert summary["sockets"]["sub"]["received"] == 10
    assert summary["ledger"]["dropped_by_rule"].get("not_subscribed_yet", 0) == 0


def test_an_app_disconnects_connects_and_sets_options():
    seen = {}
    raw = scenario(
        {"name": "pa", "type": "PULL", "bind": "inproc://a"},
        {"name": "pb", "type": "PULL", "bind": "inproc://b"},
        {"name": "push", "type": "PUSH", "connect": "inproc://a", "options": {"sndhwm": 1}},
        until_s=1.0)

    def app(app):
        env, push, pa = app.env, app.socket("push"), app.socket("pa")

        def run_it():
            yield push.send(1)
            push.disconnect("inproc://a")
            with pytest.raises(zsim.NoSuchEndpoint):
                push.disconnect("inproc://a")
            push.connect("inproc://b")
            push.setsockopt("sndhwm", 3)
            sent = 0
            while True:
                try:
                    yield push.send(1, dontwait=True)
                    sent += 1
                except zsim.Again:
                    break
            seen["sent_after"] = sent
            got = yield pa.recv()
            seen["pa"] = got.size
            with pytest.raises(ValueError, match="unknown socket option"):
                push.setsockopt("sndhmw", 3)
            yield env.timeout(0.1)

        app.process(run_it())

    zsim.run(raw, 0, apps=[app])
    # the message queued for pa before the disconnect is still read by pa (inproc:
    # pipe_t::terminate (true), the peer reads up to the delimiter); pb's pipe holds 3 + 1000
    assert seen["pa"] == 1
    assert seen["sent_after"] == 1003


@pytest.mark.parametrize("call, message", [
    ({"socket": "push", "at_s": 0.1, "disconnect": "inproc://nope"}, "is not connected by this socket at 0.1 s (zmq_disconnect: ENOENT)"),
    ({"socket": "pull", "at_s": 0.1, "unbind": "inproc://a"}, "is not bound by this socket"),
    ({"socket": "push", "at_s": 0.1, "set": {"sndhwm": 1}, "disconnect": "inproc://a"}, "makes one call"),
    ({"socket": "push", "at_s": 2.0, "set": {"sndhwm": 1}}, "when the socket is already closed"),
    ({"socket": "push", "at_s": 0.1, "set": {"subscribe": "A"}}, "is its own call"),
    ({"socket": "push", "at_s": 0.1, "subscribe": "A"}, "a PUSH socket has no subscriptions to change"),
    ({"socket": "pusj", "at_s": 0.1, "set": {"sndhwm": 1}}, "unknown socket 'pusj' (did you mean 'push'?)"),
    ({"socket": "push", "at_s": 0.1, "set": {"sndhwm": -1}}, "sndhwm: must be >= 0"),
])
def test_a_call_that_libzmq_would_refuse_is_one_line(call, message):
    raw = scenario({"name": "pull", "type": "PULL", "connect": "inproc://a"},
                   {"name": "push", "type": "PUSH", "bind": "inproc://a", "close_at_s": 1.0},
                   sends=[{"socket": "push", "count": 1}])
    raw["socket"][0], raw["socket"][1] = raw["socket"][1], raw["socket"][0]
    raw["socket"][1]["connect"], raw["socket"][0]["bind"] = "inproc://a", "inproc://a"
    raw["call"] = [call]
    with pytest.raises(zsim.ScenarioError) as caught:
        zsim.run(raw, 0)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_restarted_process_reopens_what_it_declares_not_what_calls_changed():
    raw = scenario(
        {"name": "pa", "type": "PULL", "bind": "tcp://127.0.0.1:5640"},
        {"name": "pb", "type": "PULL", "bind": "tcp://127.0.0.1:5641"},
        {"name": "push", "type": "PUSH", "process": "p", "connect": "tcp://127.0.0.1:5640"},
        processes=[{"name": "main"}, {"name": "p", "crash_at_s": 0.5, "restart_at_s": 0.6}],
        sends=[{"socket": "push", "count": 100, "interval_s": 0.01}],
        recvs=[{"socket": "pa"}, {"socket": "pb"}],
        until_s=2.0)
    for sock in raw["socket"][:2]:
        sock["process"] = "main"
    raw["call"] = [{"socket": "push", "at_s": 0.255, "disconnect": "tcp://127.0.0.1:5640"},
                   {"socket": "push", "at_s": 0.255, "connect": "tcp://127.0.0.1:5641"}]
    summary = run(raw)
    # before the crash: pa until 0.25, then pb; after the restart the program connects to
    # inproc://a again, as it declares
    assert summary["sockets"]["pb"]["received"] == 24  # the sends at 0.26 .. 0.49
    assert summary["sockets"]["pa"]["received"] == 26 + 50  # 0.00 .. 0.25, then the 50 left from 0.6


def test_a_call_on_a_socket_template_is_made_by_every_member():
    # [[call]] socket = "sub{i}" is one call per member (it used to stop the load with a
    # KeyError when the scenario had templates: the calls had no names for their template)
    raw = scenario(
        {"name": "pub", "type": "PUB", "bind": "inproc://p"},
        {"name": "sub{i}", "count": 2, "type": "SUB", "connect": "inproc://p", "options": {"subscribe": ["A"]}},
        sends=[{"socket": "pub", "count": 20, "interval_s": 0.01, "topic": ["A", "B"], "start_s": 0.1}],
        recvs=[{"socket": "sub{i}"}],
        until_s=1.0)
    raw["call"] = [{"socket": "sub{i}", "at_s": 0.195, "subscribe": "B"}]
    loaded = zsim.spec.from_dict(raw)
    assert [(call.socket, call.label) for call in loaded.calls] == [("sub0", "call[0]"), ("sub1", "call[1]")]
    assert [(t.kind, t.members) for t in loaded.templates if t.kind == "call"] == [("call", ("call[0]", "call[1]"))]
    summary = run(raw)
    # the 10 A, and the 5 B sent after the subscription (0.21 .. 0.29 s), at each member
    assert summary["sockets"]["sub0"]["received"] == summary["sockets"]["sub1"]["received"] == 15


def test_hwm_set_before_the_bind_side_attached_the_pipe_leaves_it():
    """inproc, the PUSH binds first, the PULL connects, the PUSH sets SNDHWM 5 before it
    processed its "bind" command (no call of its own since): update_pipe_options walks only
    the pipes it has attached, so the pipe keeps 1 + 1 (real pyzmq 27.3.0: 2; connect
    first, 6: test_sockopt_hwm.cpp:59)."""
    raw = scenario(
        {"name": "push", "type": "PUSH", "bind": "inproc://a", "options": {"sndhwm": 1}},
        {"name": "pull", "type": "PULL", "connect": "inproc://a", "open_at_s": 0.01, "options": {"rcvhwm": 1}},
        sends=[{"socket": "push", "count": 10_000, "dontwait": True, "on_again": "stop", "size_bytes": 0, "start_s": 0.1}],
        until_s=1.0)
    raw["call"] = [{"socket": "push", "at_s": 0.05, "set": {"sndhwm": 5}}]
    assert run(raw)["sockets"]["push"]["sent"] == 2


@pytest.mark.parametrize("option", ["router_mandatory", "xpub_nodrop"])
def test_a_type_option_on_another_type_is_refused_whatever_its_value(option):
    raw = scenario({"name": "push", "type": "PUSH", "bind": "inproc://a", "options": {option: False}},
                   {"name": "pull", "type": "PULL", "connect": "inproc://a"})
    with pytest.raises(zsim.ScenarioError, match=f"socket\\[push\\].options.{option}: applies to"):
        zsim.run(raw, 0)


def _handover(call_at_s=None):
    # test_router_handover.cpp's steps: a second DEALER with the routing id "X" connects
    # while the first is still connected, and sends
    raw = scenario(
        {"name": "router", "type": "ROUTER", "bind": "inproc://r"},
        {"name": "one", "type": "DEALER", "connect": "inproc://r", "options": {"routing_id": "X"}},
        {"name": "two", "type": "DEALER", "connect": "inproc://r", "open_at_s": 0.2, "options": {"routing_id": "X"}},
        sends=[{"socket": "one", "count": 1, "start_s": 0.1}, {"socket": "two", "count": 1, "start_s": 0.3}],
        recvs=[{"socket": "router"}],
        until_s=1.0)
    if call_at_s is not None:
        raw["call"] = [{"socket": "router", "at_s": call_at_s, "set": {"router_handover": True}}]
    return raw


def test_a_type_option_set_by_a_call_reaches_the_type():
    """socket_base_t::setsockopt offers an option to the type's xsetsockopt first:
    ROUTER_HANDOVER set at 0.05 s lets the second "X" take the id, so the ROUTER reads its
    message too (the [[call]] used to change the options record and not the ROUTER)."""
    assert run(_handover())["sockets"]["router"]["received"] == 1  # router_t::identify_peer: the duplicate is ignored
    assert run(_handover(call_at_s=0.05))["sockets"]["router"]["received"] == 2


def test_xpub_verbose_set_by_an_app_passes_the_duplicate_subscription_up():
    # test_xpub_verbose.cpp:44-50: zmq_setsockopt (pub, ZMQ_XPUB_VERBOSE) on the running XPUB
    raw = scenario(
        {"name": "pub", "type": "XPUB", "bind": "inproc://p"},
        {"name": "sub0", "type": "SUB", "connect": "inproc://p", "open_at_s": 0.1, "options": {"subscribe": ["A"]}},
        {"name": "sub1", "type": "SUB", "connect": "inproc://p", "open_at_s": 0.2, "options": {"subscribe": ["A"]}},
        until_s=1.0)
    got = []

    def app(app):
        pub = app.socket("pub")

        def read():
            pub.setsockopt("xpub_verbose", True)
            while True:
                msg = yield pub.recv()
                got.append((msg.kind, msg.topic))

        app.process(read())

    zsim.run(raw, 0, apps=[app])
    assert got == [("subscribe", "A"), ("subscribe", "A")]


@pytest.mark.parametrize("transport", ["tcp", "inproc"])
def test_a_socket_may_take_its_only_endpoint_from_a_call(transport):
    """zmq_socket now, zmq_bind later: test_inproc_connect.cpp:273 test_unbind binds a
    second PAIR to the name the first unbound, which a [[socket]] cannot declare (two
    binds of one endpoint)."""
    where = {"tcp": "tcp://127.0.0.1:5650", "inproc": "inproc://late"}[transport]
    raw = scenario(
        {"name": "first", "type": "PULL", "bind": where},
        {"name": "second", "type": "PULL"},
        {"name": "push", "type": "PUSH", "connect": where, "open_at_s": 0.3},
        sends=[{"socket": "push", "count": 10, "interval_s": 0.01, "start_s": 0.3}],
        recvs=[{"socket": "first"}, {"socket": "second"}],
        until_s=1.0)
    raw["call"] = [{"socket": "first", "at_s": 0.1, "unbind": where},
                   {"socket": "second", "at_s": 0.2, "bind": where}]
    summary = run(raw)
    assert (summary["sockets"]["first"]["received"], summary["sockets"]["second"]["received"]) == (0, 10)


def test_a_socket_without_endpoints_and_no_call_to_make_one_is_one_line():
    raw = scenario({"name": "pull", "type": "PULL", "bind": "inproc://a"},
                   {"name": "push", "type": "PUSH", "connect": "inproc://a"},
                   {"name": "idle", "type": "PULL"})
    raw["call"] = [{"socket": "idle", "at_s": 0.1, "set": {"rcvhwm": 5}}]
    with pytest.raises(zsim.ScenarioError, match=r"^socket\[idle\]: binds and connects nothing: give bind = \[...\] or connect = "
                                                 r"\[...\] \(or a \[\[call\]\] that does\)$"):
        zsim.run(raw, 0)


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
def test_a_connection_that_will_not_reconnect_lets_its_endpoint_go(transport):
    """RECONNECT_IVL -1, the listener unbinds: session_base_t::reconnect sends the socket
    term_endpoint, which ends the endpoint as zmq_disconnect does (test_reconnect_ivl.cpp).
    The PUSH then has no pipe (a send: EAGAIN, where zsim used to queue it in the dead
    connection's pipe), a zmq_disconnect finds nothing (ENOENT), and a new zmq_connect, once
    the PULL binds again, is a new connection that delivers."""
    where = {"tcp": "tcp://127.0.0.1:5660", "ipc": "ipc://no-reconnect"}[transport]
    raw = scenario({"name": "pull", "type": "PULL", "bind": where},
                   {"name": "push", "type": "PUSH", "connect": where, "options": {"reconnect_ivl": -1}},
                   until_s=2.0)
    seen = {}

    def app(app):
        env, push, pull = app.env, app.socket("push"), app.socket("pull")

        def dontwait_send():
            try:
                yield push.send(1, dontwait=True)
                return "sent"
            except zsim.Again:
                return "EAGAIN"

        def steps():
            yield push.send(1)
            yield pull.recv()
            pull.unbind(where)
            yield env.timeout(0.3)
            seen["after_unbind"] = yield from dontwait_send()
            with pytest.raises(zsim.NoSuchEndpoint):
                push.disconnect(where)
            pull.bind(where)
            yield env.timeout(0.3)
            seen["after_rebind"] = yield from dontwait_send()
            push.connect(where)
            yield env.timeout(0.3)
            seen["after_connect"] = yield from dontwait_send()
            seen["received"] = (yield pull.recv()).size

        app.process(steps())

    zsim.run(raw, 0, apps=[app])
    assert seen == {"after_unbind": "EAGAIN", "after_rebind": "EAGAIN", "after_connect": "sent", "received": 1}


@pytest.mark.parametrize(("close_at_s", "refused"), [(0.2, False), (0.4, True)])
def test_a_call_may_bind_what_a_closed_socket_bound(close_at_s, refused):
    """zmq_close lets the endpoint go: a new socket binds it (test_rebind_ipc.cpp,
    test_immediate.cpp:172); while the first is open, the bind is EADDRINUSE."""
    where = "ipc://rebound"
    raw = scenario({"name": "sb0", "type": "PUSH", "bind": where, "close_at_s": close_at_s},
                   {"name": "sb1", "type": "PUSH", "open_at_s": 0.3},
                   {"name": "sc", "type": "PULL", "connect": where},
                   sends=[{"socket": "sb0", "count": 1, "size_bytes": 2}, {"socket": "sb1", "count": 1, "size_bytes": 2, "start_s": 0.3}],
                   recvs=[{"socket": "sc"}], until_s=1.0)
    raw["call"] = [{"socket": "sb1", "at_s": 0.3, "bind": where}]
    if refused:
        with pytest.raises(zsim.ScenarioError, match=r"^call\[0\] \(socket sb1\)\.bind\[0\]: ipc://rebound is bound by socket 'sb0' "
                                                     r"at 0\.3 s \(EADDRINUSE\)$"):
            zsim.run(raw, 0)
    else:
        assert run(raw)["sockets"]["sc"]["received"] == 2
