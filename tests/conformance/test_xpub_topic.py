"""libzmq tests/test_xpub_topic.cpp (tcp): a subscription to a long topic reaches the
XPUB intact, on either side of the 255-byte short-frame limit of the SUBSCRIBE command."""

from __future__ import annotations

import pytest

from conformance.ported import endpoint, ports, reader, run, scenario

SHORT_TOPIC = ("ABCDEFGHIJKLMNOP" * 16)[:245]  # test_xpub_topic.cpp:12: 245 chars + 10 = 255
LONG_TOPIC = ("ABCDEFGHIJKLMNOP" * 16)[:246]  # test_xpub_topic.cpp:19: 246 chars + 10 = 256


@ports("test_xpub_topic.cpp:42", "test_subscribe_cancel: the XPUB receives 1 + the topic, for a 245- and a "
       "246-character topic", "a subscribe message with the whole topic, both lengths", ("tcp",))
@pytest.mark.parametrize("topic", [SHORT_TOPIC, LONG_TOPIC], ids=["245", "246"])
def test_xpub_subscribe_long_topic_subscription_intact(transport, topic):
    """test_xpub_topic.cpp:58: XPUB binds, SUB connects and subscribes to the topic (here:
    at open); the XPUB receives the subscription. (The cancel, l.53, waits for
    ZMQ_UNSUBSCRIBE at a time.)"""
    where = endpoint(transport, "xpub_topic")
    log: list = []
    run(scenario({"name": "xpub", "type": "XPUB", "bind": where},
                 {"name": "sub", "type": "SUB", "connect": where, "options": {"subscribe": topic}}, until_s=1.0),
        reader("xpub", log))
    assert [(got.kind, got.topic) for _, got in log] == [("subscribe", topic)]
