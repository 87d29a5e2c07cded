"""Deterministic outcomes of the validation catalogue: simulation and real pyzmq must give the
same exact counts (one replication each; the timing-sensitive metrics are left to
``python -m validation``). Marked ``real``; about 30 s in all."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.compare import validate

pytestmark = [pytest.mark.real, pytest.mark.timeout(180)]

CATALOGUE = Path(__file__).resolve().parent.parent / "validation" / "scenarios"

EXACT = [
    "inproc_summed_hwm",  # zguide: inproc's HWM is the sum of both sides
    "hwm_action_by_type",  # zguide: PUB and ROUTER drop, PUSH, DEALER, PAIR block
    "pub_dontwait",  # a PUB never raises Again
    "pubsub_envelopes",  # prefix filtering at the publisher, multipart envelopes
    "router_dealer_broker",  # REQ -> ROUTER | proxy | DEALER -> REP
    "slow_joiner",  # a burst before the SUB connects is lost entirely
    "linger_term_blocks",  # LINGER -1 with queued messages: zmq_ctx_term blocks
]


@pytest.mark.parametrize("name", EXACT)
def test_exact_metrics_agree(name):
    result = validate(CATALOGUE / f"{name}.toml", replications=1, trace_depth=False)
    assert not result.real_errors, result.real_errors
    exact = [m for m in result.metrics if m.tolerance.kind == "exact"]
    assert exact
    for metric in exact:
        assert metric.verdict == "agrees", f"{name}: {metric.metric}: sim {metric.sim}, real {metric.real}"
