"""libzmq tests/test_xpub_welcome_msg.cpp (inproc): a SUB that subscribed before it
connected sends its subscription on connect. (The welcome message itself, l.32, needs
ZMQ_XPUB_WELCOME_MSG, which zsim does not model: docs/validation.md.)"""

from __future__ import annotations

from conformance.ported import endpoint, ports, reader, run, scenario


@ports("test_xpub_welcome_msg.cpp:29", "the XPUB receives {1,'W'} from a SUB that subscribed to W before connecting",
       "subscribe W")
def test_xpub_receives_the_welcome_subscription(transport):
    where = endpoint(transport, "soname")
    log: list = []
    run(scenario({"name": "pub", "type": "XPUB", "bind": where},
                 {"name": "sub", "type": "SUB", "connect": where, "options": {"subscribe": "W"}}, until_s=1.0),
        reader("pub", log))
    assert [(got.kind, got.topic) for _, got in log] == [("subscribe", "W")]
