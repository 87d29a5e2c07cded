"""The four routing policies (``zsim.model.routing``) on real pipes, one class at a time.

Who gets which message, in what order, is libzmq's: the expected sequences below are
worked out by hand from libzmq 4.3.5's ``lb_t::sendpipe`` / ``lb_t::activated`` /
``lb_t::pipe_terminated`` (src/lb.cpp), ``fq_t::recvpipe`` / ``fq_t::activated`` (src/fq.cpp),
``dist_t::write`` + ``xpub_t::xsend`` (src/dist.cpp, src/xpub.cpp) and ``router_t::xsend``
(src/router.cpp), over ``array_t::swap`` / ``array_t::erase`` (src/array.hpp), not read off
what the code does today. The pipes are real ``Pipe`` objects whose ends record the
commands they post, so a trace line is ``(time, event, pipe, ...)``; the dropping policies
report to a recording ledger through a small ``SendOwner``.
"""

from __future__ import annotations

from typing import Any

import pytest

from zsim.model.fates import AGAIN, RULE_HWM, RULE_NOT_CONNECTED, RULE_NOT_SUBSCRIBED, RULE_UNROUTABLE, SENT, UNROUTABLE
from zsim.model.kernel import Environment
from zsim.model.peer import Peer, Subscriptions
from zsim.model.pipe import MSG_ENVELOPE, Pipe, PipeEndpoint
from zsim.model.routing import Distribute, FairQueue, LoadBalance, RouteByIdentity, SendOwner
from zsim.model.sink import LedgerSink

# -- fixtures ------------------------------------------------------------------------------


class End(PipeEndpoint):
    """The object at a pipe's end (a socket or session): records the commands posted."""

    def __init__(self, env: Environment, trace: list) -> None:
        self.env, self.trace = env, trace

    def post_activate_write(self, pipe: Pipe, read_count: int) -> None:
        self.trace.append((self.env.now, "activate_write", pipe.name, read_count))

    def post_activate_read(self, pipe: Pipe) -> None:
        self.trace.append((self.env.now, "activate_read", pipe.name))


class RecordingLedger(LedgerSink):
    """A ``LedgerSink`` that keeps each call as a tuple (state, msg id, socket, pipe, rule, time)."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.records: list = []

    def delivered(self, msg: Any, socket_index: int, pipe_index: int, now: float) -> None:
        self.calls.append(("delivered", msg[0], socket_index, pipe_index, 0, now))

    def forwarded(self, msg: Any, socket_index: int, pipe_index: int, now: float) -> None:
        self.calls.append(("forwarded", msg[0], socket_index, pipe_index, 0, now))

    def dropped(self, msg: Any, socket_index: int, pipe_index: int, rule: int, now: float) -> None:
        self.calls.append(("dropped", msg[0], socket_index, pipe_index, rule, now))

    def discarded(self, msg: Any, socket_index: int, pipe_index: int, rule: int, now: float) -> None:
        self.calls.append(("discarded", msg[0], socket_index, pipe_index, rule, now))

    def lost(self, msg: Any, socket_index: int, pipe_index: int, rule: int, now: float) -> None:
        self.calls.append(("lost", msg[0], socket_index, pipe_index, rule, now))

    def queued(self, msg: Any, socket_index: int, pipe_index: int, where: int, now: float) -> None:
        self.calls.append(("queued", msg[0], socket_index, pipe_index, where, now))


class Owner(SendOwner):
    """A ``SendOwner``: the socket a dropping policy counts copies and drops for."""

    name = "pub"

    def __init__(self, env: Environment, index: int = 7) -> None:
        self.env = env
        self.clock = env.clock
        self.index = index
        self.copies = 0
        self.dropped = 0
        self.ledger: Any = RecordingLedger()  # the LedgerSink the policy reports to


class Remote:
    """The far end of a connection as a ``Peer`` sees it (``RemoteEnd``)."""

    def __init__(self, name: str, own_subs: Subscriptions | None = None) -> None:
        self.name = name
        self.routing_id = name
        self.own_subs = own_subs


class World:
    """One clock, one trace, pipes named and indexed in creation order."""

    def __init__(self) -> None:
        self.env = Environment()
        self.trace: list[tuple] = []
        self.end = End(self.env, self.trace)
        self.pipes: list[Pipe] = []

    def pipe(self, name: str, hwm: int = 1000) -> Pipe:
        pipe = Pipe(self.env, name, hwm, writer=self.end, reader=self.end, index=len(self.pipes))
        self.pipes.append(pipe)
        return pipe

    def at(self, t: float) -> None:
        self.env.run_through(t)  # the model's horizon: what is due at t runs


def msg(i: int, topic: str = "", envelope: tuple = ()) -> tuple:
    return (i, 0.0, 1, 3, topic, envelope, 0)


def names(pipes: list[Pipe]) -> list[str]:
    return [p.name for p in pipes]


def ids(pipe: Pipe) -> list[int]:
    return [m[0] for m in pipe.queue]


# -- LoadBalance (lb_t) --------------------------------------------------------------------


def make_lb(w: World, hwms: dict[str, int]) -> tuple[LoadBalance, dict[str, Pipe]]:
    lb = LoadBalance()
    pipes = {}
    for name, hwm in hwms.items():
        pipes[name] = w.pipe(name, hwm)
        lb.attach(pipes[name], Peer(None, Remote(name), None))
    return lb, pipes


def lb_send(lb: LoadBalance, n: int, first: int = 0) -> list[str]:
    out = []
    for i in range(first, first + n):
        status, pipe = lb.send(msg(i))
        out.append(pipe.name if status == SENT else "AGAIN")  # type: ignore[union-attr]
    return out


def test_lb_round_robins_in_attach_order():
    w = World()
    lb, _ = make_lb(w, {"p0": 10, "p1": 10, "p2": 10})
    assert (names(lb.pipes), lb.active, lb.current) == (["p0", "p1", "p2"], 3, 0)
    assert lb_send(lb, 7) == ["p0", "p1", "p2", "p0", "p1", "p2", "p0"]
    assert lb.current == 1


def test_lb_a_full_pipe_is_swapped_out_and_comes_back_at_the_end_of_the_active_set():
    """lb_t::sendpipe: a failed write does ``_active--; if (_current < _active)
    swap(_current, _active) else _current = 0``; lb_t::activated swaps the pipe to
    ``_active`` and increments it. p1 (HWM 1) fills on m1 and is found full by m4."""
    w = World()
    lb, pipes = make_lb(w, {"p0": 10, "p1": 1, "p2": 10})
    assert lb_send(lb, 4) == ["p0", "p1", "p2", "p0"]
    # m4: p1 full -> active 2, swap(1, 2) -> [p0, p2, p1]; the message goes to p2 at once
    assert lb_send(lb, 3, first=4) == ["p2", "p0", "p2"]
    assert (names(lb.pipes), lb.active, lb.current) == (["p0", "p2", "p1"], 2, 0)
    assert ids(pipes["p1"]) == [1]
    # the reader of p1 takes its message at t = 1: lwm 1 -> activate_write(1) to the writer
    w.at(1.0)
    assert pipes["p1"].read()[0] == 1
    assert w.trace == [(1.0, "activate_write", "p1", 1)]
    # the writer has not processed the command: p1 stays out of the rotation
    assert lb_send(lb, 2, first=7) == ["p0", "p2"]
    # processing it (socket_base_t::process_commands -> pipe_t::process_activate_write
    # -> lb_t::activated): swap(2, 2), active 3; current was 0
    assert pipes["p1"].apply_activate_write(1) is True
    lb.activated(pipes["p1"])
    assert (names(lb.pipes), lb.active, lb.current) == (["p0", "p2", "p1"], 3, 0)
    assert lb_send(lb, 4, first=9) == ["p0", "p2", "p1", "p0"]


def test_lb_a_full_last_pipe_sends_current_back_to_the_first():
    """The ``else _current = 0`` branch: the full pipe is the last active one."""
    w = World()
    lb, _ = make_lb(w, {"p0": 10, "p1": 10, "p2": 1})
    assert lb_send(lb, 3) == ["p0", "p1", "p2"]
    assert lb_send(lb, 2, first=3) == ["p0", "p1"]
    # m5 finds p2 full at current 2: active 2, current 0 (no swap) -> p0
    assert lb_send(lb, 3, first=5) == ["p0", "p1", "p0"]
    assert (names(lb.pipes), lb.active, lb.current) == (["p0", "p1", "p2"], 2, 1)


def test_lb_activation_in_the_middle_of_a_round_joins_at_the_end_of_the_active_set():
    w = World()
    lb, pipes = make_lb(w, {"p0": 1, "p1": 10, "p2": 10})
    # m3 finds p0 full at current 0: active 2, swap(0, 2) -> [p2, p1, p0], and the same
    # slot now holds p2, which takes m3: p2 gets two in a row
    assert lb_send(lb, 4) == ["p0", "p1", "p2", "p2"]
    assert (names(lb.pipes), lb.active, lb.current) == (["p2", "p1", "p0"], 2, 1)
    pipes["p0"].read()
    assert pipes["p0"].apply_activate_write(1)
    lb.activated(pipes["p0"])  # swap(2, 2), active 3, current unchanged
    assert (names(lb.pipes), lb.active, lb.current) == (["p2", "p1", "p0"], 3, 1)
    assert lb_send(lb, 3, first=4) == ["p1", "p0", "p2"]


def test_lb_every_pipe_full_is_again_and_has_out_is_false():
    w = World()
    lb, pipes = make_lb(w, {"p0": 1, "p1": 1})
    assert lb.has_out() is True
    assert lb_send(lb, 3) == ["p0", "p1", "AGAIN"]
    assert lb.active == 0 and lb.has_out() is False
    assert [p.depth for p in pipes.values()] == [1, 1]  # lb_t never drops


def test_lb_has_out_deactivates_the_full_pipes_it_looks_at():
    """lb_t::has_out walks from ``_current``, deactivating full pipes, like a send."""
    w = World()
    lb, pipes = make_lb(w, {"p0": 10, "p1": 1, "p2": 10})
    assert lb_send(lb, 4) == ["p0", "p1", "p2", "p0"]  # current 1: the full p1
    assert lb.has_out() is True
    assert (names(lb.pipes), lb.active, lb.current) == (["p0", "p2", "p1"], 2, 1)
    assert pipes["p1"].out_active is False
    assert lb_send(lb, 1, first=4) == ["p2"]


def test_lb_terminated_pipe_leaves_by_swap_then_erase():
    """lb_t::pipe_terminated: ``_active--; swap(index, _active); if (_current == _active)
    _current = 0``, then array_t::erase (the last item takes the hole)."""
    w = World()
    lb, pipes = make_lb(w, {"p0": 10, "p1": 10, "p2": 10, "p3": 10})
    assert lb_send(lb, 1) == ["p0"]  # current 1
    lb.terminated(pipes["p1"])  # active 3, swap(1, 3) -> [p0, p3, p2, p1]; erase p1
    assert (names(lb.pipes), lb.active, lb.current) == (["p0", "p3", "p2"], 3, 1)
    assert lb_send(lb, 4, first=1) == ["p3", "p2", "p0", "p3"]
    assert lb.current == 2
    # terminating p0 moves it to slot 2, where current points: current goes back to 0
    lb.terminated(pipes["p0"])  # index 0: active 2, swap(0, 2) -> [p2, p3, p0]; current 2 == 2 -> 0
    assert (names(lb.pipes), lb.active, lb.current) == (["p2", "p3"], 2, 0)
    assert lb_send(lb, 2, first=5) == ["p2", "p3"]


def test_lb_terminating_an_inactive_pipe_keeps_the_active_set():
    w = World()
    lb, pipes = make_lb(w, {"p0": 1, "p1": 10, "p2": 10})
    assert lb_send(lb, 4) == ["p0", "p1", "p2", "p2"]
    assert (names(lb.pipes), lb.active) == (["p2", "p1", "p0"], 2)
    lb.terminated(pipes["p0"])
    assert (names(lb.pipes), lb.active) == (["p2", "p1"], 2)
    lb.terminated(pipes["p0"])  # a second time: not known any more, nothing happens
    assert names(lb.pipes) == ["p2", "p1"]


# -- FairQueue (fq_t) ----------------------------------------------------------------------


def make_fq(w: World, contents: dict[str, list[int]]) -> tuple[FairQueue, dict[str, Pipe]]:
    fq = FairQueue()
    pipes = {}
    for name, items in contents.items():
        pipes[name] = w.pipe(name)
        fq.attach(pipes[name], Peer(None, Remote(name), None))
        for i in items:
            pipes[name].write(msg(i))
    return fq, pipes


def fq_read(fq: FairQueue, n: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(n):
        m, pipe = fq.recv()
        out.append(None if m is None else (pipe.name, m[0]))  # type: ignore[union-attr]
    return out


def test_fq_reads_one_message_per_pipe_per_turn_and_deactivates_empty_pipes():
    """fq_t::recvpipe: on a fetch ``_current = (_current + 1) % _active``; on an empty
    pipe ``_active--; swap(_current, _active); if (_current == _active) _current = 0``."""
    w = World()
    fq, _ = make_fq(w, {"a": [10, 11], "b": [20], "c": [30, 31, 32]})
    assert fq_read(fq, 7) == [("a", 10), ("b", 20), ("c", 30), ("a", 11), ("c", 31), ("c", 32), None]
    # b was found empty at current 1: [a, c, b]; then a at 0: [c, a, b]; then c: all idle
    assert (names(fq.pipes), fq.active, fq.current) == (["c", "a", "b"], 0, 0)
    assert all(p.reader_asleep for p in fq.pipes)


def test_fq_reactivated_pipes_are_served_in_the_order_their_activate_read_arrived():
    w = World()
    fq, pipes = make_fq(w, {"a": [10], "b": [20], "c": [30]})
    assert fq_read(fq, 4) == [("a", 10), ("b", 20), ("c", 30), None]
    # a found empty at 0: swap(0, 2) -> [c, b, a]; c: swap(0, 1) -> [b, c, a]; b: none left
    assert names(fq.pipes) == ["b", "c", "a"] and fq.active == 0
    # writes to sleeping readers post activate_read (ypipe_t::flush returning false)
    w.at(1.0)
    pipes["c"].write(msg(31))
    pipes["c"].write(msg(32))  # the reader is awake already: no second command
    w.at(2.0)
    pipes["a"].write(msg(11))
    assert w.trace == [(1.0, "activate_read", "c"), (2.0, "activate_read", "a")]
    # the socket processes the commands in order (fq_t::activated: swap(index, _active))
    fq.activated(pipes["c"])  # swap(1, 0) -> [c, b, a]
    fq.activated(pipes["a"])  # swap(2, 1) -> [c, a, b]
    assert (names(fq.pipes), fq.active) == (["c", "a", "b"], 2)
    assert fq_read(fq, 4) == [("c", 31), ("a", 11), ("c", 32), None]


def test_fq_a_pipe_written_while_deactivated_is_not_read_before_its_command():
    w = World()
    fq, pipes = make_fq(w, {"a": [], "b": [20]})
    assert fq_read(fq, 2) == [("b", 20), None]
    pipes["a"].write(msg(10))  # asleep since the first recv: activate_read posted
    assert fq_read(fq, 1) == [None]  # not processed yet: a is not in the active set
    fq.activated(pipes["a"])
    assert fq_read(fq, 2) == [("a", 10), None]


def test_fq_attach_puts_the_new_pipe_at_the_end_of_the_active_set():
    """fq_t::attach: push_back, then swap(_active, size - 1): ahead of inactive pipes."""
    w = World()
    fq, pipes = make_fq(w, {"a": [], "b": [20]})
    assert fq_read(fq, 2) == [("b", 20), None]
    assert (names(fq.pipes), fq.active) == (["b", "a"], 0)
    fq.activated(pipes["a"])
    assert (names(fq.pipes), fq.active) == (["a", "b"], 1)
    late = w.pipe("c")
    late.write(msg(30))
    fq.attach(late, Peer(None, Remote("c"), None))
    assert (names(fq.pipes), fq.active) == (["a", "c", "b"], 2)


def test_fq_has_in_skips_empty_pipes_and_puts_their_readers_to_sleep():
    w = World()
    fq, pipes = make_fq(w, {"a": [], "b": [20]})
    assert fq.has_in() is True
    assert (names(fq.pipes), fq.active, fq.current) == (["b", "a"], 1, 0)
    assert pipes["a"].reader_asleep is True
    assert fq_read(fq, 1) == [("b", 20)]
    assert fq.has_in() is False and fq.active == 0


def test_fq_terminated_pipe_leaves_the_rotation():
    w = World()
    fq, pipes = make_fq(w, {"a": [10, 11], "b": [20, 21], "c": [30, 31]})
    assert fq_read(fq, 1) == [("a", 10)]  # current 1
    fq.terminated(pipes["b"])  # active 2, swap(1, 2) -> [a, c, b]; erase -> [a, c]
    assert (names(fq.pipes), fq.active, fq.current) == (["a", "c"], 2, 1)
    assert fq_read(fq, 4) == [("c", 30), ("a", 11), ("c", 31), None]


# -- Distribute (dist_t + xpub_t::xsend) --------------------------------------------------


def make_dist(w: World, subscribers: dict[str, dict[str, Any]], nodrop: bool = False) -> tuple[Distribute, Owner, dict[str, Peer]]:
    """``subscribers``: name -> {hwm, applied (what this side has received), wants (the
    subscriber's own subscriptions), attached}."""
    owner = Owner(w.env)
    dist = Distribute(owner, nodrop)
    peers = {}
    for name, spec in subscribers.items():
        wants = spec.get("wants")
        peer = Peer(owner, Remote(name, Subscriptions(tuple(wants)) if wants is not None else None), None)
        peer.out_pipe = w.pipe(f"pub->{name}", spec.get("hwm", 1000))
        peer.attached = spec.get("attached", True)
        for prefix in spec.get("applied", ()):
            peer.applied.set_once(prefix)
        dist.add(peer)
        peers[name] = peer
    return dist, owner, peers


def test_dist_copies_to_every_matching_pipe_and_drops_per_full_pipe():
    """dist_t::distribute writes to each matching pipe; dist_t::write failing removes that
    pipe from the eligible set for this and later messages; nothing else is affected."""
    w = World()
    dist, owner, peers = make_dist(w, {
        "s0": {"hwm": 2, "applied": [""]},
        "s1": {"hwm": 10, "applied": ["a"]},
        "s2": {"hwm": 10, "applied": ["b"]},
    })
    for i, topic in enumerate(["a1", "b1", "a2", "a3"]):
        w.at(float(i))
        assert dist.send(msg(i, topic)) == SENT
    assert [ids(p.out_pipe) for p in peers.values()] == [[0, 1], [0, 2, 3], [1]]  # type: ignore[arg-type]
    s0 = peers["s0"].out_pipe
    assert s0 is not None and s0.index == 0 and s0.dropped == 2 and s0.out_active is False
    assert (owner.copies, owner.dropped) == (8, 2)
    # the ledger record: (msg id, socket index, pipe index, rule, time)
    assert owner.ledger.calls == [("dropped", 2, 7, 0, RULE_HWM, 2.0), ("dropped", 3, 7, 0, RULE_HWM, 3.0)]


def test_dist_keeps_dropping_to_a_pipe_its_reader_emptied_until_the_writer_processes_activate_write():
    """The stale view: pipe_t::check_write compares against ``_peers_msgs_read``, which
    only ``process_activate_write`` moves; until then the emptied pipe is still full."""
    w = World()
    dist, owner, peers = make_dist(w, {"s0": {"hwm": 2, "applied": [""]}})
    pipe = peers["s0"].out_pipe
    assert pipe is not None
    for i in range(3):
        dist.send(msg(i, "t"))
    w.at(1.0)
    assert [pipe.read()[0], pipe.read()[0]] == [0, 1]  # type: ignore[index]
    assert pipe.depth == 0
    assert w.trace == [(1.0, "activate_write", "pub->s0", 1), (1.0, "activate_write", "pub->s0", 2)]
    w.at(1.5)
    dist.send(msg(3, "t"))
    assert owner.ledger.calls[-1] == ("dropped", 3, 7, 0, RULE_HWM, 1.5)
    assert pipe.apply_activate_write(1) is True  # commands processed in order
    assert pipe.apply_activate_write(2) is False
    w.at(2.0)
    dist.send(msg(4, "t"))
    assert ids(pipe) == [4]
    assert [c[1] for c in owner.ledger.calls] == [2, 3]


def test_dist_slow_joiner_copies_are_dropped_with_the_reason():
    """A subscriber whose subscription has not reached the publisher (or whose pipe the
    publisher has not attached) costs a copy that is dropped: ``not_subscribed_yet`` with
    the pipe's index, ``not_connected`` with it or -1 with no pipe yet. A subscriber that
    does not want the topic costs nothing."""
    w = World()
    dist, owner, peers = make_dist(w, {
        "late_sub": {"applied": [], "wants": ["a"]},
        "unattached": {"applied": [], "wants": ["a"], "attached": False},
        "uninterested": {"applied": [], "wants": ["b"]},
        "gone": {"applied": [], "wants": ["a"], "attached": False},
    })
    peers["gone"].alive = False  # a dead peer costs nothing
    nopipe = Peer(owner, Remote("nopipe", Subscriptions(("a",))), None)
    dist.add(nopipe)
    dist.add(nopipe)  # added once only
    w.at(0.25)
    assert dist.send(msg(5, "a")) == SENT
    assert sorted(owner.ledger.calls) == sorted([
        ("dropped", 5, 7, 0, RULE_NOT_SUBSCRIBED, 0.25),
        ("dropped", 5, 7, 1, RULE_NOT_CONNECTED, 0.25),
        ("dropped", 5, 7, -1, RULE_NOT_CONNECTED, 0.25),
    ])
    assert (owner.copies, owner.dropped) == (3, 3)
    assert all(p.depth == 0 for p in w.pipes)


def test_dist_removed_peer_gets_nothing():
    w = World()
    dist, owner, peers = make_dist(w, {"s0": {"applied": [""]}, "s1": {"applied": [""]}})
    dist.remove(peers["s0"])
    dist.remove(peers["s0"])
    dist.send(msg(0, "x"))
    assert [ids(p) for p in w.pipes] == [[], [0]]
    assert owner.copies == 1


def test_xpub_nodrop_returns_again_and_writes_nothing_while_a_matching_pipe_is_full():
    """xpub_t::xsend with ZMQ_XPUB_NODROP: ``_dist.check_hwm ()`` over the matching pipes
    first; one full pipe makes the whole send EAGAIN (no copy anywhere). A full pipe that
    does not match does not block."""
    w = World()
    dist, owner, peers = make_dist(w, {
        "s0": {"hwm": 1, "applied": ["a"]},
        "s1": {"hwm": 10, "applied": [""]},
    }, nodrop=True)
    assert dist.send(msg(0, "a")) == SENT
    assert dist.send(msg(1, "a")) == AGAIN
    assert dist.send(msg(2, "b")) == SENT  # s0 does not match "b"
    assert [ids(p) for p in w.pipes] == [[0], [0, 2]]
    assert (owner.copies, owner.dropped, owner.ledger.calls) == (3, 0, [])
    assert dist.has_out() is True  # dist_t::has_out: always
    pipe = peers["s0"].out_pipe
    assert pipe is not None
    pipe.read()
    assert dist.send(msg(3, "a")) == AGAIN  # the writer's view: still full
    pipe.apply_activate_write(1)
    assert dist.send(msg(4, "a")) == SENT
    assert [ids(p) for p in w.pipes] == [[4], [0, 2, 4]]


# -- RouteByIdentity (router_t) -----------------------------------------------------------


def make_router(w: World, hwms: dict[str, int], mandatory: bool = False) -> tuple[RouteByIdentity, Owner, dict[str, Peer]]:
    owner = Owner(w.env, index=3)
    router = RouteByIdentity(owner, mandatory)
    peers = {}
    for name, hwm in hwms.items():
        peer = Peer(owner, Remote(name), None)
        peer.out_pipe = w.pipe(f"router->{name}", hwm)
        router.add(peer.routing_key, peer)
        peers[name] = peer
    return router, owner, peers


def test_router_sends_to_the_named_peer_and_strips_its_id():
    w = World()
    router, owner, peers = make_router(w, {"A": 10, "B": 10})
    assert router.send(msg(0, envelope=("B", "hop"))) == SENT
    assert router.send(msg(1, envelope=("A",))) == SENT
    assert [[(m[0], m[MSG_ENVELOPE]) for m in p.queue] for p in w.pipes] == [[(1, ())], [(0, ("hop",))]]
    assert (owner.copies, owner.dropped, owner.ledger.calls) == (2, 0, [])


def test_router_unknown_peer_is_dropped_or_unroutable_with_mandatory():
    """router_t::xsend: no out pipe for the id -> silently dropped, or EHOSTUNREACH with
    ZMQ_ROUTER_MANDATORY (no copy made)."""
    w = World()
    router, owner, _ = make_router(w, {"A": 10})
    w.at(0.5)
    assert router.send(msg(0, envelope=("nobody",))) == SENT
    assert router.send(msg(1)) == SENT  # no envelope at all: nobody to route to
    assert owner.ledger.calls == [("dropped", 0, 3, -1, RULE_UNROUTABLE, 0.5), ("dropped", 1, 3, -1, RULE_UNROUTABLE, 0.5)]
    assert (owner.copies, owner.dropped) == (2, 2)

    w2 = World()
    strict, owner2, _ = make_router(w2, {"A": 10}, mandatory=True)
    assert strict.send(msg(0, envelope=("nobody",))) == UNROUTABLE
    assert (owner2.copies, owner2.dropped, owner2.ledger.calls) == (0, 0, [])


def test_router_full_pipe_drops_or_is_again_with_mandatory():
    """A full pipe: dropped (rule hwm, the pipe's index) without mandatory; EAGAIN with it
    (``pipe_full = !check_hwm ()``); a terminating pipe with room is EHOSTUNREACH."""
    w = World()
    router, owner, peers = make_router(w, {"A": 10, "B": 1})
    assert router.send(msg(0, envelope=("B",))) == SENT
    w.at(2.0)
    assert router.send(msg(1, envelope=("B",))) == SENT
    assert owner.ledger.calls == [("dropped", 1, 3, 1, RULE_HWM, 2.0)]
    assert (owner.copies, owner.dropped, peers["B"].out_pipe.dropped) == (2, 1, 1)  # type: ignore[union-attr]
    assert router.has_out() is True  # not mandatory: always

    w2 = World()
    strict, owner2, peers2 = make_router(w2, {"A": 1, "B": 1}, mandatory=True)
    assert strict.send(msg(0, envelope=("B",))) == SENT
    assert strict.has_out() is True  # A has room (router_t::xhas_out: any pipe)
    assert strict.send(msg(1, envelope=("B",))) == AGAIN
    assert (owner2.copies, owner2.dropped, owner2.ledger.calls) == (1, 0, [])
    peers2["A"].out_pipe.mark_delimited()  # type: ignore[union-attr]  # A is terminating
    assert strict.send(msg(2, envelope=("A",))) == UNROUTABLE
    assert strict.has_out() is True  # check_hwm only: A's room still counts
    assert [ids(p) for p in w2.pipes] == [[], [0]]


def test_router_mandatory_has_out_is_false_when_every_pipe_is_full():
    w = World()
    strict, _owner, _peers = make_router(w, {"A": 1, "B": 1}, mandatory=True)
    strict.send(msg(0, envelope=("A",)))
    assert strict.has_out() is True
    strict.send(msg(1, envelope=("B",)))
    assert strict.has_out() is False


def test_router_duplicate_routing_id_is_refused():
    """router_t::identify_peer without ZMQ_ROUTER_HANDOVER: a second pipe with an id
    already in use is ignored; the first keeps it, and removing the refused one does not
    take the id from the first."""
    w = World()
    router, owner, peers = make_router(w, {"A": 10})
    impostor = Peer(owner, Remote("A"), None)
    impostor.out_pipe = w.pipe("router->A(2)")
    router.add("A", impostor)
    assert router.by_key == {"A": peers["A"]}
    router.remove("A", impostor)
    assert router.send(msg(0, envelope=("A",))) == SENT
    assert [ids(p) for p in w.pipes] == [[0], []]
    router.remove("A", peers["A"])
    assert router.send(msg(1, envelope=("A",))) == SENT
    assert owner.ledger.calls == [("dropped", 1, 3, -1, RULE_UNROUTABLE, 0.0)]


@pytest.mark.parametrize("mandatory", [False, True])
def test_router_peer_without_a_pipe_is_unknown(mandatory):
    w = World()
    router, owner, peers = make_router(w, {"A": 10}, mandatory=mandatory)
    peers["A"].out_pipe = None
    status = router.send(msg(0, envelope=("A",)))
    assert status == (UNROUTABLE if mandatory else SENT)
    assert owner.ledger.calls == ([] if mandatory else [("dropped", 0, 3, -1, RULE_UNROUTABLE, 0.0)])
