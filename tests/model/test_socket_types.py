"""The one table of socket types agrees with pyzmq and with what the scenario checks allow."""

from __future__ import annotations

import pytest
import zmq

from zsim import spec
from zsim.errors import ScenarioError
from zsim.socket_types import TYPES


def test_table_is_in_pyzmq_constant_order():
    assert [getattr(zmq, name) for name in TYPES] == list(range(len(TYPES)))


def test_valid_peers_are_symmetric():
    # mechanism_t::check_socket_type: A may talk to B exactly when B may talk to A
    for name, t in TYPES.items():
        for peer in t.valid_peers:
            assert name in TYPES[peer].valid_peers, (name, peer)


def test_spec_sets_are_read_off_the_table():
    assert spec.CAN_SEND == {"PAIR", "PUB", "XPUB", "REQ", "DEALER", "ROUTER", "PUSH"}
    assert spec.CAN_RECEIVE == {"PAIR", "SUB", "XSUB", "REQ", "REP", "DEALER", "ROUTER", "PULL", "XPUB"}
    assert spec.CONFLATE_TYPES == {"DEALER", "PULL", "PUSH", "PUB", "SUB"}


@pytest.mark.parametrize("stage_type, ok", [("PUSH", True), ("PUB", True), ("XPUB", True), ("DEALER", True), ("PAIR", True),
                                            ("ROUTER", False), ("REQ", False), ("REP", False)])
def test_forward_to_accepts_exactly_the_envelope_free_senders(stage_type, ok):
    peer = {"PUSH": "PULL", "PUB": "SUB", "XPUB": "SUB", "DEALER": "DEALER", "PAIR": "PAIR", "ROUTER": "DEALER",
            "REQ": "REP", "REP": "REQ"}[stage_type]
    raw = {"scenario": {"name": "t", "until_s": 1.0},
           "socket": [{"name": "a", "type": "PUSH", "bind": "inproc://in"},
                      {"name": "b", "type": "PULL", "connect": "inproc://in"},
                      {"name": "out", "type": stage_type, "bind": "inproc://out"},
                      {"name": "far", "type": peer, "connect": "inproc://out"}],
           "send": [{"socket": "a", "count": 1}],
           "recv": [{"socket": "b", "forward_to": "out"}]}
    if ok:
        spec.load(raw)
    else:
        with pytest.raises(ScenarioError) as err:
            spec.load(raw)
        assert err.value.path == "recv[b].forward_to"
        assert "DEALER, PAIR, PUB, PUSH, XPUB" in str(err.value)
