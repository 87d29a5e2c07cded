"""libzmq tests/test_xpub_topic.cpp (tcp): a subscription to a long topic, and its cancel,
reach the XPUB intact, on either side of the 255-byte short-frame limit of the SUBSCRIBE
command. The C test's steps as an app: the SUB subscribes and unsubscribes while
connected, the XPUB's application receives each (un)subscription."""

from __future__ import annotations

import functools

import pytest

from conformance.ported import app_scenario, endpoint, ports, run, steps, what

SHORT_TOPIC = ("ABCDEFGHIJKLMNOP" * 16)[:245]  # test_xpub_topic.cpp:12: 245 chars + 10 = 255
LONG_TOPIC = ("ABCDEFGHIJKLMNOP" * 16)[:246]  # test_xpub_topic.cpp:19: 246 chars + 10 = 256
TOPICS = pytest.mark.parametrize("topic", [SHORT_TOPIC, LONG_TOPIC], ids=["245", "246"])


@functools.cache
def _subscribe_cancel(transport: str) -> dict[tuple[str, str], object]:
    """test_xpub_topic.cpp:58 test_xpub_subscribe_long_topic: XPUB binds, SUB connects;
    test_subscribe_cancel (l.27) with the short topic, then with the long one: the SUB
    subscribes, the XPUB receives; the SUB unsubscribes, the XPUB receives."""
    where = endpoint(transport, "xpub_topic")
    seen: dict[tuple[str, str], object] = {}

    def flow(app):
        xpub, sub = app.socket("xpub"), app.socket("sub")
        for topic in (SHORT_TOPIC, LONG_TOPIC):
            sub.subscribe(topic)
            seen[("subscribe", topic)] = what((yield xpub.recv()))
            sub.unsubscribe(topic)
            seen[("unsubscribe", topic)] = what((yield xpub.recv()))

    run(app_scenario({"name": "xpub", "type": "XPUB", "bind": where}, {"name": "sub", "type": "SUB", "connect": where},
                     profile="default"), steps(flow))
    return seen


@ports("test_xpub_topic.cpp:42", "test_subscribe_cancel: the XPUB receives 1 + the topic, for a 245- and a "
       "246-character topic", "a subscribe message with the whole topic, both lengths", ("tcp",))
@TOPICS
def test_xpub_subscribe_long_topic_subscription_intact(transport, topic):
    assert _subscribe_cancel(transport)[("subscribe", topic)] == ("subscribe", topic)


@ports("test_xpub_topic.cpp:53", "test_subscribe_cancel: after ZMQ_UNSUBSCRIBE the XPUB receives 0 + the topic, for a "
       "245- and a 246-character topic", "an unsubscribe message with the whole topic, both lengths", ("tcp",))
@TOPICS
def test_xpub_subscribe_long_topic_cancel_intact(transport, topic):
    assert _subscribe_cancel(transport)[("unsubscribe", topic)] == ("unsubscribe", topic)
