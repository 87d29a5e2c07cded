"""The exact libzmq numbers, measured on real pyzmq sockets in this test run and compared
with the simulator to the message. All inproc, all in one process: fast and bounded."""

from __future__ import annotations

import itertools
import time

import pytest

from support import run, scenario

zmq = pytest.importorskip("zmq")

pytestmark = [pytest.mark.real, pytest.mark.timeout(60)]

_names = itertools.count()


def endpoint() -> str:
    return f"inproc://real-{next(_names)}"


def fill(sock, payload: bytes = b"x", flags: int = 0, limit: int = 1_000_000, parts: int = 1) -> int:
    """Send with DONTWAIT until Again; how many were accepted."""
    sent = 0
    try:
        while sent < limit:
            if parts > 1:
                sock.send_multipart([payload] * parts, zmq.DONTWAIT | flags)
            else:
                sock.send(payload, zmq.DONTWAIT | flags)
            sent += 1
    except zmq.Again:
        pass
    return sent


@pytest.fixture
def ctx():
    context = zmq.Context()
    yield context
    context.destroy(linger=0)


def sim_stalled_push(sndhwm: int, rcvhwm: int) -> int:
    raw = scenario(
        {"name": "push", "type": "PUSH", "connect": ["inproc://x"], "open_at_s": 0.001, "options": {"sndhwm": sndhwm, "sndtimeo": 0}},
        {"name": "pull", "type": "PULL", "bind": ["inproc://x"], "options": {"rcvhwm": rcvhwm}},
        sends=[{"socket": "push", "count": 100_000, "on_again": "stop"}],
    )
    return run(raw)["sockets"]["push"]["sent"]


@pytest.mark.parametrize("sndhwm,rcvhwm", [(10, 10), (5, 7), (1, 1), (3, 0), (1000, 1000)])
def test_inproc_summed_hwm(ctx, sndhwm, rcvhwm):
    pull = ctx.socket(zmq.PULL)
    pull.rcvhwm = rcvhwm
    name = endpoint()
    pull.bind(name)
    push = ctx.socket(zmq.PUSH)
    push.sndhwm = sndhwm
    push.connect(name)
    real = fill(push, limit=100_000)
    assert real == sim_stalled_push(sndhwm, rcvhwm)


@pytest.mark.parametrize("fill_before_bind", [False, True])
def test_inproc_connect_first(ctx, fill_before_bind):
    name = endpoint()
    push = ctx.socket(zmq.PUSH)
    push.sndhwm = 5
    push.connect(name)
    before = fill(push) if fill_before_bind else sum(1 for _ in range(5) if push.send(b"x", zmq.DONTWAIT) is None)
    pull = ctx.socket(zmq.PULL)
    pull.rcvhwm = 7
    pull.bind(name)
    after = fill(push)
    raw = scenario(
        {"name": "push", "type": "PUSH", "connect": ["inproc://x"], "options": {"sndhwm": 5, "sndtimeo": 0}},
        {"name": "pull", "type": "PULL", "bind": ["inproc://x"], "open_at_s": 1.0, "options": {"rcvhwm": 7}},
        sends=[
            {"name": "before", "socket": "push", "count": 6 if fill_before_bind else 5, "start_s": 0.1},
            {"name": "after", "socket": "push", "count": 100, "start_s": 2.0, "on_again": "stop"},
        ],
    )
    summary = run(raw)
    assert (before, after) == (summary["senders"]["before"]["sent"], summary["senders"]["after"]["sent"])
    assert (before, after) == ((5, 0) if fill_before_bind else (5, 7))


@pytest.mark.parametrize("hwm_each", [5, 50])
def test_lwm_step(ctx, hwm_each):
    """After k reads the writer gets L * floor(k / L) more slots, L = (2h + 1) // 2."""
    name = endpoint()
    pull = ctx.socket(zmq.PULL)
    pull.rcvhwm = hwm_each
    pull.bind(name)
    push = ctx.socket(zmq.PUSH)
    push.sndhwm = hwm_each
    push.connect(name)
    lwm = (2 * hwm_each + 1) // 2
    real_extra = []
    assert fill(push) == 2 * hwm_each
    for _ in range(lwm):
        pull.recv()
        # A DONTWAIT send looks at commands at most once per max_command_delay (about
        # 1.3 ms here) and not again when it fails: right after the LWM-th read the
        # writer still sees a full pipe.
        immediately = fill(push)
        time.sleep(0.003)
        real_extra.append(immediately + fill(push))
        assert immediately == 0
    assert real_extra == [0] * (lwm - 1) + [lwm]
    # the simulator: reads once a second, the writer retries in between
    raw = scenario(
        {"name": "push", "type": "PUSH", "connect": ["inproc://x"], "open_at_s": 0.001, "options": {"sndhwm": hwm_each, "sndtimeo": 0}},
        {"name": "pull", "type": "PULL", "bind": ["inproc://x"], "options": {"rcvhwm": hwm_each}},
        sends=[{"socket": "push", "count": 100_000, "interval_s": 0.001}],
        recvs=[{"socket": "pull", "start_s": 1.0, "service_s": 1.0}],
        until_s=lwm + 0.5,
    )
    assert run(raw)["sockets"]["push"]["sent"] == 2 * hwm_each + sum(real_extra)


def test_pub_dontwait_never_again(ctx):
    name = endpoint()
    pub = ctx.socket(zmq.PUB)
    pub.sndhwm = 1
    pub.bind(name)
    sub = ctx.socket(zmq.SUB)
    sub.rcvhwm = 1
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(name)
    again = 0
    for _ in range(200_000):
        try:
            pub.send(b"x", zmq.DONTWAIT)
        except zmq.Again:
            again += 1
    raw = scenario(
        {"name": "pub", "type": "PUB", "bind": ["inproc://x"], "options": {"sndhwm": 1}},
        {"name": "sub", "type": "SUB", "connect": ["inproc://x"], "options": {"rcvhwm": 1, "subscribe": [""]}},
        sends=[{"socket": "pub", "count": 200_000, "dontwait": True, "start_s": 0.01}],
    )
    assert again == run(raw)["sockets"]["pub"]["send_again"] == 0


@pytest.mark.parametrize("mandatory", [False, True])
def test_router_drop_or_again(ctx, mandatory):
    name = endpoint()
    router = ctx.socket(zmq.ROUTER)
    router.sndhwm = 3
    router.router_mandatory = int(mandatory)
    router.bind(name)
    dealer = ctx.socket(zmq.DEALER)
    dealer.rcvhwm = 3
    dealer.routing_id = b"peer"
    dealer.connect(name)
    sent = again = 0
    for _ in range(100):
        try:
            router.send_multipart([b"peer", b"x"], zmq.DONTWAIT)
            sent += 1
        except zmq.Again:
            again += 1
            break
    received = 0
    while dealer.poll(50):
        dealer.recv()
        received += 1
    summary = run(
        scenario(
            {"name": "router", "type": "ROUTER", "bind": ["inproc://x"], "options": {"sndhwm": 3, "router_mandatory": mandatory}},
            {"name": "peer", "type": "DEALER", "connect": ["inproc://x"], "options": {"rcvhwm": 3}},
            sends=[{"socket": "router", "count": 100, "to": ["peer"], "dontwait": True, "on_again": "stop", "start_s": 0.01}],
        )
    )
    assert (sent, again) == (summary["sockets"]["router"]["sent"], summary["sockets"]["router"]["send_again"])
    assert received == summary["ledger"]["queued_at_end"] == 6


def test_xpub_nodrop_again_at_sum(ctx):
    name = endpoint()
    xpub = ctx.socket(zmq.XPUB)
    xpub.sndhwm = 5
    xpub.setsockopt(zmq.XPUB_NODROP, 1)
    xpub.bind(name)
    sub = ctx.socket(zmq.SUB)
    sub.rcvhwm = 5
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(name)
    assert xpub.recv() == b"\x01"  # the subscription has arrived
    real = fill(xpub)
    raw = scenario(
        {"name": "xpub", "type": "XPUB", "bind": ["inproc://x"], "options": {"sndhwm": 5, "xpub_nodrop": True}},
        {"name": "sub", "type": "SUB", "connect": ["inproc://x"], "options": {"rcvhwm": 5, "subscribe": [""]}},
        sends=[{"socket": "xpub", "count": 100, "dontwait": True, "on_again": "stop", "start_s": 0.01}],
    )
    assert real == run(raw)["sockets"]["xpub"]["sent"] == 10


def test_multipart_counts_once(ctx):
    name = endpoint()
    push = ctx.socket(zmq.PUSH)
    push.sndhwm = 2
    push.bind(name)
    pull = ctx.socket(zmq.PULL)
    pull.rcvhwm = 2
    pull.connect(name)
    real = fill(push, parts=5)
    raw = scenario(
        {"name": "push", "type": "PUSH", "bind": ["inproc://x"], "options": {"sndhwm": 2, "sndtimeo": 0}},
        {"name": "pull", "type": "PULL", "connect": ["inproc://x"], "options": {"rcvhwm": 2}},
        sends=[{"socket": "push", "count": 100, "parts": 5, "on_again": "stop", "start_s": 0.01}],
    )
    assert real == run(raw)["sockets"]["push"]["sent"] == 4


def test_hwm_option_number_is_rejected_by_libzmq_4(ctx):
    """zmq.HWM is libzmq 2.x's option 1: EINVAL on 4.3.5; zsim rejects upper-case names."""
    sock = ctx.socket(zmq.SUB)
    with pytest.raises(zmq.ZMQError):
        sock.setsockopt(zmq.HWM, 10)
    sock.hwm = 7  # the pyzmq property sets both
    assert (sock.sndhwm, sock.rcvhwm) == (7, 7)
    from zsim import spec
    from zsim.errors import ScenarioError

    with pytest.raises(ScenarioError, match="lowercase"):
        spec.from_dict({"socket": [{"name": "s", "type": "SUB", "bind": ["inproc://a"], "options": {"HWM": 10}}]})
    options = spec.from_dict({"socket": [{"name": "s", "type": "SUB", "bind": ["inproc://a"], "options": {"hwm": 7}}]}).socket("s").options
    assert (options.sndhwm, options.rcvhwm) == (7, 7)


# -- the options of the socket types, and the socket-type check ----------------------------------


@pytest.mark.parametrize("name,type_name,value", [("router_notify", "ROUTER", 3), ("hiccup_msg", "DEALER", b"h"),
                                                    ("xpub_manual_last_value", "XPUB", 1), ("only_first_subscribe", "XPUB", 1)])
def test_draft_options_as_a_release_build_of_libzmq_4_3_5_takes_them_and_zsim_refuses_them(ctx, name, type_name, value):
    """Draft API (zmq.h's ZMQ_BUILD_DRAFT_API section): router_t's ROUTER_NOTIFY and
    options_t's HICCUP_MSG are #ifdef'd out of a release build (EINVAL); xpub_t::xsetsockopt
    handles XPUB_MANUAL_LAST_VALUE and ONLY_FIRST_SUBSCRIBE without an #ifdef."""
    from zsim import spec
    from zsim.constants import DRAFT_OPTIONS_TAKEN
    from zsim.errors import UnsupportedOption

    sock = ctx.socket(getattr(zmq, type_name))
    try:
        sock.setsockopt(getattr(zmq, name.upper()), value)
        taken = True
    except zmq.ZMQError:
        taken = False
    assert taken == (name in DRAFT_OPTIONS_TAKEN)
    with pytest.raises(UnsupportedOption, match="draft API"):
        spec.from_dict({"socket": [{"name": "x", "type": type_name, "bind": ["inproc://a"], "options": {name: value}}]})


def test_inproc_connects_a_pair_to_a_pull(ctx):
    """libzmq checks socket types in the ZMTP handshake only: over inproc they talk."""
    name = endpoint()
    pull = ctx.socket(zmq.PULL)
    pull.bind(name)
    pair = ctx.socket(zmq.PAIR)
    pair.connect(name)
    for _ in range(3):
        pair.send(b"x")
    real = sum(1 for _ in range(3) if pull.poll(1000) and pull.recv())
    raw = scenario({"name": "pull", "type": "PULL", "bind": ["inproc://x"]}, {"name": "pair", "type": "PAIR", "connect": ["inproc://x"]},
                   sends=[{"socket": "pair", "count": 3}], recvs=[{"socket": "pull"}])
    assert real == run(raw)["sockets"]["pull"]["received"] == 3


def test_a_duplicate_routing_id_is_never_read_without_handover(ctx):
    """router_t::identify_peer ignores the second peer named X: its messages stay unread."""
    name = endpoint()
    router = ctx.socket(zmq.ROUTER)
    router.bind(name)
    one, two = ctx.socket(zmq.DEALER), ctx.socket(zmq.DEALER)
    one.routing_id = two.routing_id = b"X"
    one.connect(name)
    one.send(b"1")
    assert router.recv_multipart() == [b"X", b"1"]
    two.connect(name)
    two.send(b"2")
    two.send(b"3")
    real = 1 + sum(1 for _ in range(2) if router.poll(300))
    raw = scenario({"name": "router", "type": "ROUTER", "bind": ["inproc://x"]},
                   {"name": "one", "type": "DEALER", "connect": ["inproc://x"], "options": {"routing_id": "X"}},
                   {"name": "two", "type": "DEALER", "connect": ["inproc://x"], "open_at_s": 0.01, "options": {"routing_id": "X"}},
                   sends=[{"socket": "one", "count": 1}, {"socket": "two", "count": 2, "start_s": 0.02}], recvs=[{"socket": "router"}],
                   until_s=1.0)
    summary = run(raw)
    assert real == summary["sockets"]["router"]["received"] == 1
    assert summary["ledger"]["queued_at_end"] == 2
