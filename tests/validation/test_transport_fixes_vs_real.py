"""Three libzmq outcomes the model once contradicted, on real pyzmq in this test run and in
the simulator (tests/model/test_transport_fixes.py has the model's side in detail).

Only what machine load cannot change is asserted: counts and orders that libzmq fixes by
construction (one I/O thread serves its events in order; a ROUTER never reads a peer it
ignored), with every wait bounded and generous.
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Any

import pytest

import zsim
from support import scenario

zmq = pytest.importorskip("zmq")

pytestmark = [pytest.mark.real, pytest.mark.timeout(60)]

#: a generous bound on waits that succeed at once on an idle machine
PATIENCE_MS = 5000


@pytest.fixture
def ctx():
    context = zmq.Context()
    yield context
    context.destroy(linger=0)


@pytest.fixture
def ipc_dir():
    path = tempfile.mkdtemp(prefix="zsim-test-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _sim(raw: dict[str, Any], seed: int = 0) -> dict[str, Any]:
    return zsim.run(raw, seed).summary


# -- a ROUTER that connects ---------------------------------------------------------------


@pytest.mark.parametrize("transport", ["tcp", "ipc", "inproc"])
def test_a_router_that_connects_replies_to_its_peer(ctx, ipc_dir, transport):
    """DEALER binds, ROUTER connects (over inproc before the bind), the DEALER sends 5 and
    the ROUTER answers each: all 5 replies arrive."""
    dealer = ctx.socket(zmq.DEALER)
    router = ctx.socket(zmq.ROUTER)
    for sock in (dealer, router):
        sock.rcvtimeo = PATIENCE_MS
    if transport == "inproc":
        router.connect("inproc://router-connects")
        dealer.bind("inproc://router-connects")
    else:
        dealer.bind("tcp://127.0.0.1:0" if transport == "tcp" else f"ipc://{ipc_dir}/router-connects")
        router.connect(dealer.getsockopt_string(zmq.LAST_ENDPOINT))
    for i in range(5):
        dealer.send(b"%d" % i)
    for _ in range(5):
        router.send_multipart(router.recv_multipart())
    replies = [dealer.recv() for _ in range(5)]
    assert replies == [b"%d" % i for i in range(5)]

    endpoint = {"tcp": "tcp://127.0.0.1:47001", "ipc": "ipc://router-connects", "inproc": "inproc://router-connects"}[transport]
    summary = _sim(scenario(
        {"name": "dealer", "type": "DEALER", "bind": endpoint, "open_at_s": 0.001 if transport == "inproc" else 0.0},
        {"name": "router", "type": "ROUTER", "connect": endpoint},
        sends=[{"socket": "dealer", "count": 5, "start_s": 0.1}],
        recvs=[{"socket": "router", "reply": True}, {"socket": "dealer"}],
        profile="default", until_s=1.0,
    ))
    assert summary["sockets"]["dealer"]["received"] == len(replies)


def test_a_router_ignores_a_second_peer_presenting_a_routing_id_in_use(ctx):
    """test_router_handover.cpp test_without_handover: the ROUTER never reads what the
    second "X" sends, and "X" stays the first's."""
    router = ctx.socket(zmq.ROUTER)
    router.bind("tcp://127.0.0.1:0")
    endpoint = router.getsockopt_string(zmq.LAST_ENDPOINT)
    one, two = ctx.socket(zmq.DEALER), ctx.socket(zmq.DEALER)
    for sock in (one, two):
        sock.routing_id = b"X"
    one.connect(endpoint)
    one.send(b"Hello")
    router.rcvtimeo = PATIENCE_MS
    assert router.recv_multipart() == [b"X", b"Hello"]
    two.connect(endpoint)
    two.send(b"Hello")
    router.rcvtimeo = 1000  # whether or not two's handshake is done by then, nothing comes
    with pytest.raises(zmq.Again):
        router.recv_multipart()
    router.send_multipart([b"X", b"Reply"])
    one.rcvtimeo = PATIENCE_MS
    assert one.recv() == b"Reply"

    summary = _sim(scenario(
        {"name": "router", "type": "ROUTER", "bind": "tcp://127.0.0.1:5555"},
        {"name": "one", "type": "DEALER", "connect": "tcp://127.0.0.1:5555", "options": {"routing_id": "X"}},
        {"name": "two", "type": "DEALER", "connect": "tcp://127.0.0.1:5555", "open_at_s": 0.5, "options": {"routing_id": "X"}},
        sends=[{"socket": "one", "count": 1, "start_s": 0.1}, {"socket": "two", "count": 1, "start_s": 0.8},
               {"socket": "router", "count": 1, "to": ["X"], "start_s": 1.0}],
        recvs=[{"socket": "router"}, {"socket": "one"}, {"socket": "two"}],
        profile="default", until_s=3.0,
    ))["sockets"]
    assert (summary["router"]["received"], summary["one"]["received"], summary["two"]["received"]) == (1, 1, 0)


# -- an inproc connect that closes before the bind ----------------------------------------


@pytest.mark.parametrize("linger", [-1, 0, 100])
def test_a_closed_inproc_connect_keeps_its_messages_for_a_later_binder(ctx, linger):
    """test_hwm.cpp:119-147: PUSH (SNDHWM 1) connects to a name nobody bound, sends until
    EAGAIN, closes; a PULL that binds afterwards receives what it sent, whatever LINGER."""
    push = ctx.socket(zmq.PUSH)
    push.sndhwm, push.linger = 1, linger
    push.connect("inproc://a")
    sent = 0
    with pytest.raises(zmq.Again):
        while sent < 10_000:
            push.send(b"", zmq.DONTWAIT)
            sent += 1
    push.close()
    pull = ctx.socket(zmq.PULL)
    pull.rcvhwm = 0
    pull.bind("inproc://a")
    pull.rcvtimeo = PATIENCE_MS
    received = [pull.recv() for _ in range(sent)]
    assert (sent, len(received)) == (1, 1)

    summary = _sim(scenario(
        {"name": "push", "type": "PUSH", "connect": "inproc://a", "close_at_s": 0.005, "options": {"sndhwm": 1, "linger": linger}},
        {"name": "pull", "type": "PULL", "bind": "inproc://a", "open_at_s": 0.01, "options": {"rcvhwm": 0}},
        sends=[{"socket": "push", "count": 10_000, "dontwait": True, "on_again": "stop", "size_bytes": 0}],
        recvs=[{"socket": "pull", "start_s": 0.3}],
        until_s=1.0,
    ))["sockets"]
    assert (summary["push"]["sent"], summary["pull"]["received"]) == (sent, len(received))


# -- connects from one context attach in connect order --------------------------------------


def test_connects_from_one_context_attach_in_connect_order(ctx):
    """test_spec_req.cpp test_round_robin_out over tcp: a REQ binds, five REPs of the same
    context (one I/O thread) connect one after another, and the requests go to them in
    connect order."""
    req = ctx.socket(zmq.REQ)
    req.bind("tcp://127.0.0.1:0")
    endpoint = req.getsockopt_string(zmq.LAST_ENDPOINT)
    monitor = req.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
    monitor.rcvtimeo = PATIENCE_MS
    reps = []
    for _ in range(5):
        rep = ctx.socket(zmq.REP)
        rep.connect(endpoint)
        reps.append(rep)
    for _ in reps:  # every connection handshaken: its pipe waits in the REQ's mailbox
        monitor.recv_multipart()
    order = []
    poller = zmq.Poller()
    for rep in reps:
        poller.register(rep, zmq.POLLIN)
    for _ in reps:
        req.send(b"ABC")
        ready = dict(poller.poll(PATIENCE_MS))
        (index,) = [i for i, rep in enumerate(reps) if rep in ready]
        reps[index].send(reps[index].recv())
        req.recv()
        order.append(index)
    req.disable_monitor()
    monitor.close(linger=0)
    assert order == [0, 1, 2, 3, 4]

    raw = scenario(
        {"name": "req", "type": "REQ", "bind": "tcp://127.0.0.1:5555"},
        *({"name": f"rep{i}", "type": "REP", "connect": "tcp://127.0.0.1:5555"} for i in range(5)),
        sends=[{"socket": "req", "count": 5, "size_bytes": 3, "start_s": 1.5}],
        recvs=[{"socket": f"rep{i}"} for i in range(5)],
        profile="default", until_s=3.0,
    )
    frame = zsim.run(raw, 0).messages_frame()
    requests = frame[frame["origin"] == "req"].sort_values("msg_id")
    assert requests["socket"].tolist() == [f"rep{i}" for i in order]
