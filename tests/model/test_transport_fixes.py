"""Where libzmq 4.3.5's own tests (tests/*.cpp at v4.3.5) and its source disagreed with
the model's transports, each followed to the source:

* a ROUTER that connects identifies its peer when the peer's routing id arrives (the
  handshake, or the bind of an inproc name), and ignores a second peer presenting an id
  already in use (``router_t::identify_peer``).
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
