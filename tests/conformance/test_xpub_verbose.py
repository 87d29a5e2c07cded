"""libzmq tests/test_xpub_verbose.cpp (inproc): which subscriptions an XPUB passes to its
application. Without XPUB_VERBOSE it passes the first subscription to a topic and filters
duplicates, from the same SUB or another. Most of this test changes subscriptions on
connected SUBs and sets XPUB_VERBOSE(R) while running: those assertions wait for
``setsockopt`` at a time and ``xpub_verbose`` (docs/validation.md). Here each SUB
subscribes at open, in the order the C test subscribes it."""

from __future__ import annotations

from conformance.ported import delivered, endpoint, ports, reader, run, scenario

WHERE = endpoint("inproc", "soname")


def _one_sub(log=None):
    """test_xpub_verbose.cpp:16 test_xpub_verbose_one_sub: XPUB binds, SUB connects and
    subscribes to A, then B; the XPUB sends A and B; the SUB receives both."""
    raw = scenario({"name": "pub", "type": "XPUB", "bind": WHERE},
                   {"name": "sub", "type": "SUB", "connect": WHERE, "options": {"subscribe": ["A", "B"]}},
                   sends=[{"socket": "pub", "count": 2, "topic": ["A", "B"], "size_bytes": 0, "start_s": 0.001}],
                   recvs=[{"socket": "sub"}], until_s=1.0)
    return run(raw, *([reader("pub", log)] if log is not None else []))


@ports("test_xpub_verbose.cpp:28", "test_xpub_verbose_one_sub: the XPUB receives {1,'A'}", "subscribe A first")
def test_verbose_one_sub_subscription_a_arrives(transport):
    log: list = []
    _one_sub(log)
    assert (log[0][1].kind, log[0][1].topic) == ("subscribe", "A")


@ports("test_xpub_verbose.cpp:34", "test_xpub_verbose_one_sub: then {1,'B'} when the SUB subscribes to B",
       "subscribe B second")
def test_verbose_one_sub_subscription_b_arrives(transport):
    log: list = []
    _one_sub(log)
    assert [(got.kind, got.topic) for _, got in log] == [("subscribe", "A"), ("subscribe", "B")]


@ports("test_xpub_verbose.cpp:56", "test_xpub_verbose_one_sub: the SUB receives A, then B (l.56-57)", "A then B")
def test_verbose_one_sub_sub_receives_a_then_b(transport):
    got = delivered(_one_sub(), "sub")
    assert [msg_id for msg_id, *_ in got] == sorted(msg_id for msg_id, *_ in got) and len(got) == 2


def _two_subs(sub0_topics, log=None):
    """test_xpub_verbose.cpp:64 create_xpub_with_2_subs + :76
    create_duplicate_subscription: XPUB binds, sub0 and sub1 connect; sub0 subscribes to
    A (and B), then sub1 subscribes to A (1 ms later); the XPUB sends A, then B."""
    raw = scenario({"name": "pub", "type": "XPUB", "bind": WHERE},
                   {"name": "sub0", "type": "SUB", "connect": WHERE, "options": {"subscribe": sub0_topics}},
                   {"name": "sub1", "type": "SUB", "connect": WHERE, "options": {"subscribe": "A"}, "open_at_s": 0.001},
                   sends=[{"socket": "pub", "count": 2, "topic": ["A", "B"], "size_bytes": 0, "start_s": 0.002}],
                   recvs=[{"socket": "sub0"}, {"socket": "sub1"}], until_s=1.0)
    return run(raw, *([reader("pub", log)] if log is not None else []))


@ports("test_xpub_verbose.cpp:83", "create_duplicate_subscription: the XPUB receives sub0's {1,'A'}", "subscribe A")
def test_duplicate_subscription_first_arrives(transport):
    log: list = []
    _two_subs("A", log)
    assert (log[0][1].kind, log[0][1].topic) == ("subscribe", "A")
    assert log[0][0] < 0.001  # before sub1 exists: it is sub0's


@ports("test_xpub_verbose.cpp:90", "create_duplicate_subscription: sub1's subscription to A is filtered (EAGAIN at "
       "the XPUB)", "nothing more after sub0's A")
def test_duplicate_subscription_from_second_sub_filtered(transport):
    log: list = []
    _two_subs("A", log)
    assert [(got.kind, got.topic) for _, got in log] == [("subscribe", "A")]


@ports("test_xpub_verbose.cpp:104", "test_xpub_verbose_two_subs: sub0's subscription to B is received",
       "subscribe A, then B; sub1's A filtered")
def test_verbose_two_subs_subscription_b_arrives(transport):
    log: list = []
    _two_subs(["A", "B"], log)
    assert [(got.kind, got.topic) for _, got in log] == [("subscribe", "A"), ("subscribe", "B")]


@ports("test_xpub_verbose.cpp:122", "test_xpub_verbose_two_subs: sub0 gets A, sub1 gets A, sub0 gets B (l.122-124)",
       "A at both, B at sub0 only")
def test_verbose_two_subs_each_sub_receives_its_topics(transport):
    result = _two_subs(["A", "B"])
    first, second = sorted({msg_id for msg_id, *_ in delivered(result)})
    assert sorted((msg_id, receiver) for msg_id, _, receiver, _ in delivered(result)) == [
        (first, "sub0"), (first, "sub1"), (second, "sub0")]


@ports("test_xpub_verbose.cpp:153", "test_xpub_verboser_one_sub: the XPUB receives {1,'A'} when the SUB subscribes",
       "subscribe A")
def test_verboser_one_sub_subscription_arrives(transport):
    log: list = []
    run(scenario({"name": "pub", "type": "XPUB", "bind": WHERE},
                 {"name": "sub", "type": "SUB", "connect": WHERE, "options": {"subscribe": "A"}}, until_s=1.0),
        reader("pub", log))
    assert [(got.kind, got.topic) for _, got in log] == [("subscribe", "A")]


@ports("test_xpub_verbose.cpp:196", "test_xpub_verboser_one_sub: the SUB subscribed to A receives the XPUB's A",
       "received")
def test_verboser_one_sub_sub_receives_a(transport):
    raw = scenario({"name": "pub", "type": "XPUB", "bind": WHERE},
                   {"name": "sub", "type": "SUB", "connect": WHERE, "options": {"subscribe": "A"}},
                   sends=[{"socket": "pub", "count": 1, "topic": "A", "size_bytes": 0, "start_s": 0.001}],
                   recvs=[{"socket": "sub"}], until_s=1.0)
    assert len(delivered(run(raw), "sub")) == 1


@ports("test_xpub_verbose.cpp:262", "test_xpub_verboser_two_subs: both SUBs subscribed to A receive A (l.262-263)",
       "received by sub0 and sub1")
def test_verboser_two_subs_both_receive_a(transport):
    raw = scenario({"name": "pub", "type": "XPUB", "bind": WHERE},
                   {"name": "sub0", "type": "SUB", "connect": WHERE, "options": {"subscribe": "A"}},
                   {"name": "sub1", "type": "SUB", "connect": WHERE, "options": {"subscribe": "A"}},
                   sends=[{"socket": "pub", "count": 1, "topic": "A", "size_bytes": 0, "start_s": 0.001}],
                   recvs=[{"socket": "sub0"}, {"socket": "sub1"}], until_s=1.0)
    assert sorted(receiver for _, _, receiver, _ in delivered(run(raw))) == ["sub0", "sub1"]
