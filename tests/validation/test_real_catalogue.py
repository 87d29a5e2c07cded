"""Deterministic outcomes of the validation catalogue: simulation and real pyzmq must give the
same exact counts (one replication each; the timing-sensitive metrics are left to
``python -m validation``). Marked ``real``; about 30 s in all."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from validation.compare import validate

pytestmark = [pytest.mark.real, pytest.mark.timeout(180)]

CATALOGUE = Path(__file__).resolve().parents[2] / "validation" / "scenarios"

EXACT = [
    "inproc_summed_hwm",  # zguide: inproc's HWM is the sum of both sides
    "hwm_action_by_type",  # zguide: PUB and ROUTER drop, PUSH, DEALER, PAIR block
    "pub_dontwait",  # a PUB never raises Again
    "pubsub_envelopes",  # prefix filtering at the publisher, multipart envelopes
    "router_dealer_broker",  # REQ -> ROUTER | proxy | DEALER -> REP
    "slow_joiner",  # a burst before the SUB connects is lost entirely
    "linger_term_blocks",  # LINGER -1 with queued messages: zmq_ctx_term blocks
]


#: runs of one scenario before the comparison is given up as machine-bound
ATTEMPTS = 3


@pytest.mark.parametrize("name", EXACT)
def test_exact_metrics_agree(name):
    # A real run whose paced senders fell more than the margin behind their own schedule
    # (verdict machine-bound: the horizon cut a sender that had not done its sends, say)
    # measured the machine: when its counts differ it is run again, and reported if every
    # attempt was machine-bound. A difference in a run that kept its schedule fails.
    reasons = []
    for _ in range(ATTEMPTS):
        result = validate(CATALOGUE / f"{name}.toml", replications=1, trace_depth=False)
        assert not result.real_errors, result.real_errors
        exact = [m for m in result.metrics if m.tolerance.kind == "exact"]
        assert exact
        differing = [m for m in exact if m.verdict != "agrees"]
        if not differing:
            return
        if not result.machine_bound:
            metric = differing[0]
            raise AssertionError(f"{name}: {metric.metric}: sim {metric.sim}, real {metric.real} (the real side kept its "
                                 f"schedule; {len(reasons)} machine-bound attempts before: {reasons})")
        reasons.append(f"{[(m.metric, m.sim, m.real) for m in differing]}: {result.verdict_reason}")
    warnings.warn(f"{name}: exact counts not compared, every real run was machine-bound: {reasons}", stacklevel=1)
