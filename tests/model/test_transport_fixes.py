"""Three places where libzmq 4.3.5's own tests (tests/*.cpp at v4.3.5) and its source
disagreed with the model, each followed to the source:

* a ROUTER that connects identifies its peer when the peer's routing id arrives (the
  handshake, or the bind of an inproc name), and ignores a second peer presenting an id
  already in use (``router_t::identify_peer``);
* an inproc connect whose socket closed before anybody bound the name keeps its messages
  for the binder (``ctx_t::pend_connection``, ``connect_inproc_sockets``);
* handshakes served by one I/O thread complete in the order they started, so connects made
  one after another attach in that order (``io_thread_t``'s poller loop).
"""

from __future__ import annotations

from typing import Any

import pytest

import zsim
from support import scenario


def _summary(raw: dict[str, Any], seed: int = 0) -> dict[str, Any]:
    return zsim.run(raw, seed).summary


# -- a ROUTER that connects ---------------------------------------------------------------


@pytest.mark.parametrize("endpoint, dealer_opens_at_s", [
    ("tcp://127.0.0.1:47001", 0.0),
    ("ipc://router-connects", 0.0),
    ("inproc://router-connects", 0.001),  # the ROUTER connects before the DEALER binds
], ids=["tcp", "ipc", "inproc-connect-before-bind"])
def test_a_router_that_connects_replies_to_its_peer(endpoint, dealer_opens_at_s):
    """test_spec_req.cpp's ROUTER-connects-to-REQ case depends on it: the ROUTER's pipe,
    attached at connect(), is anonymous until the peer's routing id arrives, then filed
    under that id (``router_t::xread_activated`` -> ``identify_peer``), so its replies are
    routed. The model filed it under a key it had before the handshake: 5 unroutable."""
    raw = scenario(
        {"name": "dealer", "type": "DEALER", "bind": endpoint, "open_at_s": dealer_opens_at_s},
        {"name": "router", "type": "ROUTER", "connect": endpoint},
        sends=[{"socket": "dealer", "count": 5, "start_s": 0.1}],
        recvs=[{"socket": "router", "reply": True}, {"socket": "dealer"}],
        profile="default", until_s=1.0,
    )
    summary = _summary(raw)
    router, dealer = summary["sockets"]["router"], summary["sockets"]["dealer"]
    assert (router["received"], router["sent"], router["dropped"]) == (5, 5, 0)
    assert dealer["received"] == 5
    assert summary["ledger"]["dropped_by_rule"] == {}


def test_a_router_ignores_a_second_peer_presenting_a_routing_id_in_use():
    """test_router_handover.cpp test_without_handover (l.63-113): a second DEALER "X" is
    not identified (``identify_peer`` returns false: "Ignore peers with duplicate ID"),
    so the ROUTER never reads what it sends (l.100: EAGAIN) and "X" stays the first's
    (l.111-113). The model refused it for routing only and handed its message to the
    ROUTER's application."""
    raw = scenario(
        {"name": "router", "type": "ROUTER", "bind": "tcp://127.0.0.1:5555"},
        {"name": "one", "type": "DEALER", "connect": "tcp://127.0.0.1:5555", "options": {"routing_id": "X"}},
        {"name": "two", "type": "DEALER", "connect": "tcp://127.0.0.1:5555", "open_at_s": 0.5, "options": {"routing_id": "X"}},
        sends=[{"socket": "one", "count": 1, "start_s": 0.1}, {"socket": "two", "count": 1, "start_s": 0.8},
               {"socket": "router", "count": 1, "to": ["X"], "start_s": 1.0}],
        recvs=[{"socket": "router"}, {"socket": "one"}, {"socket": "two"}],
        profile="default", until_s=3.0,
    )
    result = zsim.run(raw, 0)
    sockets = result.summary["sockets"]
    assert (sockets["router"]["received"], sockets["one"]["received"], sockets["two"]["received"]) == (1, 1, 0)
    frame = result.messages_frame()
    from_two = frame[frame["origin"] == "two"]
    # never read: still in the ROUTER's pipe from "two" when the run ends
    assert from_two["state"].tolist() == ["queued_at_end"]
    assert from_two["pipe_name"].tolist() == ["two->router (tcp recv)"]


# -- an inproc connect that closes before the bind ----------------------------------------


def _connect_close_then_bind(linger: int, connectors: int = 1, **process: Any) -> dict[str, Any]:
    """test_hwm.cpp test_inproc_connect_and_close_first (l.119-147, from l.241): PUSH
    (SNDHWM 1) connects to inproc://a nobody has bound, sends DONTWAIT until EAGAIN, and
    closes; then a PULL (RCVHWM 0) binds and receives."""
    pushes = [{"name": f"push{i}", "type": "PUSH", "process": "p", "connect": "inproc://a", "close_at_s": 0.005,
               "options": {"sndhwm": 1, "linger": linger}} for i in range(connectors)]
    return scenario(
        *pushes,
        {"name": "pull", "type": "PULL", "process": "p", "bind": "inproc://a", "open_at_s": 0.01, "options": {"rcvhwm": 0}},
        sends=[{"socket": f"push{i}", "count": 10_000, "dontwait": True, "on_again": "stop", "size_bytes": 0}
               for i in range(connectors)],
        recvs=[{"socket": "pull", "start_s": 0.3}],
        processes=[{"name": "p", **process}], until_s=1.0,
    )


@pytest.mark.parametrize("linger", [-1, 0, 100])
def test_a_closed_inproc_connect_keeps_its_messages_for_a_later_binder(linger):
    """test_hwm.cpp:147 (and :245, the count): the context keeps the pending connection,
    pipe and delimiter (``ctx_t::pend_connection``), and ``connect_pending`` hands it to the
    binder, which reads up to the delimiter. LINGER does not apply: an inproc pipe has no
    session (``pipe_t::process_pipe_term`` waits for the delimiter). The model lost it
    under ``close_linger``."""
    summary = _summary(_connect_close_then_bind(linger))
    push, pull = summary["sockets"]["push0"], summary["sockets"]["pull"]
    assert (push["sent"], push["send_again"], pull["received"]) == (1, 1, 1)
    assert (summary["ledger"]["delivered"], summary["ledger"]["lost_on_close"]) == (1, 0)


def test_every_closed_connect_of_a_name_reaches_its_later_binder():
    """test_inproc_connect.cpp:188 (test_multiple_threads, with PUSH for its PAIR): every
    connector sends one message and closes before the bind; the binder gets them all."""
    summary = _summary(_connect_close_then_bind(-1, connectors=5))
    assert summary["sockets"]["pull"]["received"] == 5
    assert summary["ledger"]["delivered"] == summary["ledger"]["copies"] == 5


def test_a_closed_connect_nobody_binds_in_time_is_still_queued_at_the_end():
    raw = _connect_close_then_bind(-1)
    raw["socket"][-1]["open_at_s"] = 2.0  # after the run's end
    ledger = _summary(raw)["ledger"]
    assert (ledger["queued_at_end"], ledger["lost_on_close"]) == (1, 0)


@pytest.mark.parametrize("ending, rule", [({"exit_at_s": 0.008}, "close_linger"), ({"crash_at_s": 0.008}, "crash")])
def test_the_context_ending_before_the_bind_loses_the_closed_connects_messages(ending, rule):
    """``zmq_ctx_term`` binds a PAIR to every name with pending connects and closes it
    (``ctx_t::terminate``): the messages go with the context, as they do when it dies."""
    ledger = _summary(_connect_close_then_bind(-1, **ending))["ledger"]
    assert (ledger["lost_on_close"], ledger["lost_by_rule"], ledger["delivered"]) == (1, {rule: 1}, 0)


# -- handshakes on one I/O thread -----------------------------------------------------------


def _req_and_five_reps(endpoint: str) -> dict[str, Any]:
    """test_spec_req.cpp test_round_robin_out (l.19-42): a REQ binds, five REPs of the same
    context connect one after another (here: at the same instant, in that order), and the
    REQ's requests go to them in turn, in connect order."""
    return scenario(
        {"name": "req", "type": "REQ", "bind": endpoint},
        *({"name": f"rep{i}", "type": "REP", "connect": endpoint} for i in range(5)),
        sends=[{"socket": "req", "count": 5, "size_bytes": 4, "start_s": 1.5}],
        recvs=[{"socket": f"rep{i}"} for i in range(5)],
        profile="default", until_s=3.0,
    )


@pytest.mark.parametrize("endpoint", ["tcp://127.0.0.1:5555", "ipc://req-round-robin"])
def test_simultaneous_connects_attach_in_connect_order(endpoint):
    """One I/O thread serves the five handshakes one event at a time, in the order they
    started: the k-th connect attaches k-th whatever its drawn latency, for every seed.
    The model drew each handshake's time independently (seed 0: rep0, rep3, rep4, rep1,
    rep2 over tcp)."""
    for seed in range(4):
        frame = zsim.run(_req_and_five_reps(endpoint), seed).messages_frame()
        requests = frame[frame["origin"] == "req"].sort_values("msg_id")
        assert requests["socket"].tolist() == [f"rep{i}" for i in range(5)], f"seed {seed}"


def test_handshakes_on_threads_of_their_own_keep_their_own_times():
    """Two connections that share no I/O thread (four processes, a core each): each
    handshake takes its own drawn time, the same as with the other connection absent."""

    def pairs(count: int) -> dict[str, Any]:
        sockets, sends, recvs, processes = [], [], [], []
        for i in range(count):
            processes += [{"name": f"src{i}"}, {"name": f"dst{i}"}]
            sockets += [{"name": f"push{i}", "type": "PUSH", "process": f"src{i}", "bind": f"tcp://127.0.0.1:{6000 + i}"},
                        {"name": f"pull{i}", "type": "PULL", "process": f"dst{i}", "connect": f"tcp://127.0.0.1:{6000 + i}"}]
            # blocked until the connection attaches: its first message's send time is then
            sends.append({"socket": f"push{i}", "count": 1})
            recvs.append({"socket": f"pull{i}"})
        raw = scenario(*sockets, sends=sends, recvs=recvs, processes=processes, profile="default", until_s=0.1)
        raw["machine"] = {"cores": 0}  # a core per thread: no CPU shared between the two either
        return raw

    for seed in range(3):
        alone = zsim.run(pairs(1), seed).messages_frame()
        both = zsim.run(pairs(2), seed).messages_frame()
        first = both[both["origin"] == "push0"]
        assert first["end_s"].tolist() == alone["end_s"].tolist()
