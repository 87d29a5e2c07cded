"""An asymmetric link against the real kernel (issue 42, finding 5): ``zsim validate`` of a
deployment whose link is 20 Mbit/s a -> b and 2 Mbit/s b -> a (its ``reverse``), a PUSH
sending a fixed bulk transfer one way, then the other. The harness gives each end of the
veth pair a tbf of its own direction's rate and queue (validation/netns.py); zsim runs the
same file.

What is asserted is what load cannot change: a bulk transfer over a link of a few Mbit/s
takes the link's time (the sockets on either side are far faster, even on a loaded
2-core machine), so each transfer's time, first message to last, is held against zsim's
within 10 % (as tests/validation/test_links.py's bulk transfer) and against its own
direction's rate (payload 1,448 of each 1,514 bytes on the wire, 9 bytes of ZMTP per
message) within 10 %; the slow way takes about ten times the fast way's time per byte.
The way back carries only ACKs (about 0.4 Mbit/s for the fast transfer's, a fifth of the
2 Mbit/s, which then never queue) and the handshakes, a few KB. Without root or iproute2
the cases skip with one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from validation import netns
from zsim.results import flat_metrics
from zsim.runner import run

pytestmark = pytest.mark.real

_REASON = netns.available()
needs_links = pytest.mark.skipif(_REASON is not None, reason=f"no network namespaces here: {_REASON}")

FAST_BPS, SLOW_BPS = 20e6, 2e6
SIZE = 1024
#: each message's bytes on the ZMTP stream (a long frame: flags + 8-byte size)
WIRE = SIZE + 9
MSS = 1448
#: payload bytes a second of a saturated direction (a 1,514-byte frame carries 1,448)
PAYLOAD_SHARE = MSS / (MSS + 52 + netns.ETHERNET_HEADER_BYTES)
#: about 2 s each way: 5,000 x 1 KB a -> b at 20 Mbit/s, 500 x 1 KB b -> a at 2 Mbit/s
COUNT = {"a": 5000, "b": 500}

SCENARIO = """\
[scenario]
name = "asymmetric-link-{sender}"
description = "a bulk PUSH {sender} -> {receiver} over a link of 20 Mbit/s a -> b and 2 Mbit/s b -> a"
until_s = 15.0

[[host]]
name = "a"

[[host]]
name = "b"

[[link]]
hosts = ["a", "b"]
bandwidth_bps = {fast}
queue_bytes = 262144
reverse = {{ bandwidth_bps = {slow}, queue_bytes = 131072 }}

[[process]]
name = "src"
host = "{sender}"

[[process]]
name = "dst"
host = "{receiver}"

[[socket]]
name = "push"
type = "PUSH"
process = "src"
connect = ["tcp://{receiver}:5555"]

[[socket]]
name = "pull"
type = "PULL"
process = "dst"
bind = ["tcp://*:5555"]

[[send]]
socket = "push"
count = {count}
interval_s = 0
size_bytes = {size}
start_s = 0.3

[[recv]]
socket = "pull"
"""


def _validate(tmp_path: Path, sender: str) -> tuple[float, float, Any]:
    """(real seconds first message to last, zsim's, the validation) of the bulk transfer from ``sender``."""
    from validation.compare import validate

    receiver = "b" if sender == "a" else "a"
    path = tmp_path / f"asym_{sender}.toml"
    path.write_text(SCENARIO.format(sender=sender, receiver=receiver, fast=FAST_BPS, slow=SLOW_BPS, count=COUNT[sender], size=SIZE))
    result = validate(path, replications=1, trace_depth=False)
    assert not result.real_errors, result.real_errors
    pull = result.real_summaries[0]["sockets"]["pull"]
    assert pull["received"] == COUNT[sender]
    # zsim's: from its ledger (the summary of a simulated run keeps no receive times)
    simulated = run(path, seed=result.seeds[0])
    row = flat_metrics(simulated.summary, simulated)
    assert row["socket.pull.received"] == COUNT[sender]
    return float(pull["last_recv_s"] - pull["first_recv_s"]), row["socket.pull.last_recv_s"] - row["socket.pull.first_recv_s"], result


@needs_links
@pytest.mark.parametrize("sender, rate_bps", [("a", FAST_BPS), ("b", SLOW_BPS)])
def test_each_direction_of_an_asymmetric_link_carries_a_transfer_at_its_own_rate(tmp_path, sender, rate_bps):
    real, simulated, result = _validate(tmp_path, sender)
    own_rate = (COUNT[sender] - 1) * WIRE / (rate_bps / 8 * PAYLOAD_SHARE)
    assert simulated == pytest.approx(real, rel=0.10), f"zsim {simulated:.3f} s, real {real:.3f} s"
    assert real == pytest.approx(own_rate, rel=0.10), f"real {real:.3f} s, the direction's rate {own_rate:.3f} s"
    # the real qdiscs: the transfer crossed the sender's direction, a few KB (handshakes,
    # ACKs counted as headers only) crossed back; the model carries the same payload
    way, back = ("a->b", "b->a") if sender == "a" else ("b->a", "a->b")
    carried = result.real_summaries[0]["network"]["a-b"]
    assert carried[way]["bytes"] >= COUNT[sender] * WIRE > 100 * carried[back]["bytes"]
    modelled = result.sim_summaries[0]["network"]["a-b"]
    assert modelled[way]["bandwidth_bps"] == rate_bps
    assert modelled[way]["bytes"] == pytest.approx(carried[way]["bytes"], rel=0.01)
