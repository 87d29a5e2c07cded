"""Outages against the real kernel (issue 43, item 4): ``zsim validate`` of a deployment whose
WAN link between two switches is cut for 2 s, silently: the harness discards at each switch
what arrives over the link (``ip rule ... blackhole``, validation/netns.py ``Deployment.cut``)
at the model's times, so the hosts' interfaces, routes and neighbours never change and TCP
sees pure loss. Host a reaches switch s1 over 100 Mbit/s, s1 reaches s2 over the 10 Mbit/s
WAN, s2 reaches host b over 100 Mbit/s; 1 KB messages at 500 a second.

What load cannot change: the cut and the repair are the harness's (it records when it made
them: within 10 ms of the plan); TCP's timers decide the rest. The retransmission timeout is
srtt + max(200 ms, 4 rttvar), doubled at each try: a segment lost at 2.0 s is sent again at
2.2, 2.6, 3.4 and 5.0 s, and the try at 5.0 s, a second after the repair, gets through (real:
rto 204 ms on this path, ``ss -ti``). A connect's SYNs are sent 1 s apart five times
(``tcp_syn_linear_timeouts``, Linux 6.5+), so one made at 2.5 s connects at 4.5 s.

A dead host (``host_crash``): its links are cut, then its processes killed 0.1 s later (so
that their kernel's FIN or RST reaches nobody); a PUSH dealing to a worker there is not told.

Known difference (docs/model.md, "Outages"): after the recovery, real connections sometimes
stall once more, for about two smoothed round trips that an RTT sample taken across the
outage inflated (the tail loss probe's timeout): seen in 2 of 3 real PUB/SUB runs and in 1
of 7 PUSH/PULL runs (the last message 0.8 s later); zsim recovers at the first try, and the
cases accept either. Without root or iproute2 the cases skip with one line.
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

CUT_AT, CUT_S = 2.0, 2.0

WAN = """\
[scenario]
name = "{name}"
description = "{description}"
until_s = {until}

[[host]]
name = "a"
[[host]]
name = "b"
[[switch]]
name = "s1"
[[switch]]
name = "s2"
[[link]]
hosts = ["a", "s1"]
bandwidth_bps = 100e6
[[link]]
name = "wan"
hosts = ["s1", "s2"]
bandwidth_bps = 10e6
[[link]]
hosts = ["s2", "b"]
bandwidth_bps = 100e6

[[fault]]
name = "cut"
kind = "link_down"
link = "wan"
at_s = {cut_at}
duration_s = {cut_s}

[[process]]
name = "src"
host = "a"
[[process]]
name = "dst"
host = "b"

"""

SCENARIO = WAN + """\
[[socket]]
name = "tx"
type = "{sender}"
process = "src"
connect = ["tcp://b:5555"]
open_at_s = {open_at}
options = {{ sndhwm = 200 }}
[[socket]]
name = "rx"
type = "{receiver}"
process = "dst"
bind = ["tcp://*:5555"]
{receiver_options}

[[send]]
socket = "tx"
rate_per_s = 500
count = {count}
size_bytes = 1000
start_s = {start}

[[recv]]
socket = "rx"
"""


def _validate(tmp_path: Path, name: str, text: str | None = None, cut_s: float = CUT_S,
              **fields: Any) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """The real summary, zsim's flat row (its ledger's receive times) and the validation."""
    from validation.compare import validate

    values = {"name": "wan-outage", "until": 8.0, "cut_at": CUT_AT, "cut_s": cut_s, "sender": "PUSH", "receiver": "PULL",
              "receiver_options": "", "open_at": 0.0, "count": 3000, "start": 0.5,
              "description": "1 KB messages at 500 a second from a to b over a 10 Mbit/s WAN between two switches, cut for a while",
              **fields}
    path = tmp_path / f"{name}.toml"
    path.write_text(text if text is not None else SCENARIO.format(**values))
    result = validate(path, replications=1, trace_depth=False)
    assert not result.real_errors, result.real_errors
    real = result.real_summaries[0]
    # the harness cut and repaired the link when the model does, within 50 ms (it records when)
    (cut, repaired), = real["real"]["faults"]["cut"]
    assert CUT_AT <= cut < CUT_AT + 0.05 and CUT_AT + cut_s <= repaired < CUT_AT + cut_s + 0.05, (cut, repaired)
    simulated = run(path, seed=result.seeds[0])
    return real, flat_metrics(simulated.summary, simulated), result


def _waited_as_modelled(real: float, modelled: float) -> None:
    """The longest wait (the message sent as the link went down): zsim's within 10 %, or, when
    real Linux stalls once more after the recovery (the known difference: two smoothed round
    trips after an RTT sample of about the wait itself, so up to a quarter of it), at most
    10 % beyond that; never shorter than zsim's less 5 % (nothing recovers before the first
    try after the repair)."""
    assert 0.95 * modelled <= real <= 1.10 * 1.25 * modelled, {"real": real, "zsim": modelled}
    assert CUT_S + 0.9 < real, real


@needs_links
def test_a_push_waits_out_an_outage_and_recovers_at_tcps_first_try_after_it(tmp_path: Path):
    real, row, _ = _validate(tmp_path, "push")
    # nothing is lost: TCP kept what was written, PUSH blocked on its full pipe meanwhile
    assert real["sockets"]["rx"]["received"] == row["socket.rx.received"] == 3000
    # the message sent as the link went down waited for the try after the repair (5.0 s):
    # measured real 3.14-3.16 s in 6 of 7 runs, zsim 3.02-3.03 s (Linux's timeout is 204 ms
    # here where zsim's is 201 ms, and its timers fire on jiffies: 4 %); in 1 of 7 the known
    # second stall (3.96 s)
    _waited_as_modelled(real["latency_s"]["max"], row["pooled_latency_max_s"])
    # zsim's own account: the first frame across the WAN a second after the repair, four timeouts
    assert 1.0 <= row["fault.cut.recovery_s"] < 1.1 and row["network.a-s1.a->s1.timeouts"] == 4


@needs_links
def test_a_pub_drops_at_its_hwm_during_an_outage_and_delivers_its_backlog_late(tmp_path: Path):
    # 1,500 messages from 0.5 to 3.5 s: 750 cross before the cut; during it the kernel's buffers
    # and the PUB's pipe (SNDHWM 200) fill and the rest is dropped at the pipe; what they held
    # arrives after the repair. How much the pipe holds then is libzmq's exact credit: the
    # engine returns it every LWM (100) reads, so 101-200 messages fit, by where the engine's
    # reads stood when the kernel stopped taking more. Measured: 1,000 received in 4 real runs;
    # zsim 900, 1,000 and 1,000 with seeds 0-2 (its send buffer, autotuned with the window,
    # differs by a few segments between seeds and moves that phase)
    real, row, _ = _validate(tmp_path, "pub", sender="PUB", receiver="SUB", receiver_options='options = { subscribe = [""] }',
                             count=1500, until=10.0)
    path = tmp_path / "pub.toml"
    modelled = [run(path, seed=seed).summary["sockets"]["rx"]["received"] for seed in (0, 1, 2)]
    received = real["sockets"]["rx"]["received"]
    assert 0.98 * min(modelled) <= received <= 1.02 * max(modelled), (received, modelled)
    assert 750 + 100 <= received < 1500 - 300, received
    assert row["socket.tx.dropped"] == 1500 - row["socket.rx.received"]
    # the backlog arrived late: at zsim's first try after the repair, or (the known difference,
    # 2 of 3 runs here) after one more stall (real 3.18 s, or 3.95 s; zsim 3.02-3.03 s)
    _waited_as_modelled(real["latency_s"]["max"], row["pooled_latency_max_s"])


@needs_links
def test_a_connect_made_during_an_outage_gets_through_at_the_first_syn_after_it(tmp_path: Path):
    # the PUSH connects at 2.5 s: SYNs at 2.5 and 3.5 s are lost, the one at 4.5 s gets
    # through (real: the first message at 4.53-4.55 s in 3 runs)
    real, row, _ = _validate(tmp_path, "connect", open_at=2.5, start=2.5, count=1000)
    first = {"real": real["sockets"]["rx"]["first_recv_s"], "zsim": row["socket.rx.first_recv_s"]}
    assert 4.5 <= first["real"] < 4.7 and first["zsim"] == pytest.approx(first["real"], abs=0.1), first
    assert real["sockets"]["rx"]["received"] == row["socket.rx.received"] == 1000


HEARTBEATS = (WAN + """\
[[socket]]
name = "tx"
type = "PUB"
process = "src"
bind = ["tcp://*:5555"]
options = {{ sndhwm = 200, heartbeat_ivl = 1000, heartbeat_timeout = 3000 }}
[[socket]]
name = "rx"
type = "SUB"
process = "dst"
connect = ["tcp://a:5555"]
options = {{ subscribe = [""], heartbeat_ivl = 1000, heartbeat_timeout = 3000 }}

[[send]]
socket = "tx"
rate_per_s = 500
count = 4500
size_bytes = 1000
start_s = 0.5

[[recv]]
socket = "rx"
""").format(
    name="wan-outage-heartbeats", until=12.0, cut_at=2.0, cut_s=5.0,
    description="a PUB on a feeds a SUB on b, both with ZMTP heartbeats (1 s, timeout 3 s), through a 5 s cut of the WAN")


@needs_links
def test_heartbeats_drop_a_silent_connection_and_the_sub_resubscribes_after_the_repair(tmp_path: Path):
    # The first PING after the cut goes unanswered: 3 s later the engine fails (timeout_error),
    # the PUB's pipe to the SUB terminates with what it held, the SUB reconnects: its SYNs are
    # lost until 7 s, the one after gets through, and it subscribes again. So nothing sent
    # before the repair arrives late (the longest wait is the link's, milliseconds), and what
    # is sent after the new connection arrives. Measured: received 1,817-1,881 real (2 runs),
    # zsim 1,834-1,925 (seeds 0-1); without heartbeats TCP keeps the connection and delivers
    # the PUB's backlog seconds late (the cases above)
    real, row, _ = _validate(tmp_path, "heartbeats", text=HEARTBEATS, cut_s=5.0)
    received = {"real": real["sockets"]["rx"]["received"], "zsim": row["socket.rx.received"]}
    assert received["zsim"] == pytest.approx(received["real"], rel=0.10), received
    assert 750 < received["real"] < 750 + 2.5 * 500, received  # before the cut, and after the new connection
    waited = {"real": real["latency_s"]["max"], "zsim": row["pooled_latency_max_s"]}
    assert waited["real"] < 0.1 and waited["zsim"] < 0.1, waited
    assert 3.0 <= row["fault.cut.detect_s"] <= 4.05 and row["fault.cut.disconnects"] == 1


DEAD_WORKER = """\
[scenario]
name = "dead-worker-host"
description = "a PUSH on a feeds PULL workers on b and c through a switch; host b dies at 2 s and stays down"
until_s = 8.0

[[host]]
name = "a"
[[host]]
name = "b"
[[host]]
name = "c"
[[switch]]
name = "s"
[[link]]
hosts = ["a", "s"]
bandwidth_bps = 100e6
[[link]]
hosts = ["b", "s"]
bandwidth_bps = 100e6
[[link]]
hosts = ["c", "s"]
bandwidth_bps = 100e6

[[fault]]
name = "b-dies"
kind = "host_crash"
host = "b"
at_s = 2.0
duration_s = 100.0

[[process]]
name = "ventilator"
host = "a"
[[process]]
name = "w1"
host = "b"
[[process]]
name = "w2"
host = "c"

[[socket]]
name = "push"
type = "PUSH"
process = "ventilator"
bind = ["tcp://*:5555"]
options = {{ sndhwm = 100{heartbeats} }}
[[socket]]
name = "pull1"
type = "PULL"
process = "w1"
connect = ["tcp://a:5555"]
options = {{ rcvhwm = 100 }}
[[socket]]
name = "pull2"
type = "PULL"
process = "w2"
connect = ["tcp://a:5555"]
options = {{ rcvhwm = 100 }}

[[send]]
socket = "push"
rate_per_s = 200
count = 1200
size_bytes = 100
start_s = 0.5

[[recv]]
socket = "pull1"
[[recv]]
socket = "pull2"
"""


@needs_links
@pytest.mark.parametrize("heartbeats", ["", ", heartbeat_ivl = 500, heartbeat_timeout = 1500"], ids=["silent", "heartbeats"])
def test_a_push_keeps_feeding_a_worker_whose_host_died_until_its_pipe_is_full(tmp_path: Path, heartbeats: str):
    # Host b dies at 2 s: its links are cut, then (0.1 s later, so that its kernel's FIN or RST
    # reaches nobody) its process is killed. The PUSH is not told: it goes on dealing every
    # other task to w1 until that pipe (SNDHWM 100) and the kernel's send buffer are full, then
    # all to w2; what they hold is stuck. With heartbeats (500 ms, timeout 1.5 s) the PUSH drops
    # the dead connection 1.5-2 s later and deals everything after to w2. Measured (2 runs):
    # w2 got 650 real, 600 zsim silent; 825-845 real, 879-892 zsim with heartbeats (zsim's send
    # buffer holds about 50 more of these 100-byte tasks). Without the silent crash (a reset at
    # once) w2 gets about 1,045
    from validation.compare import validate

    path = tmp_path / "dead.toml"
    path.write_text(DEAD_WORKER.format(heartbeats=heartbeats))
    result = validate(path, replications=1, trace_depth=False)
    assert not result.real_errors, result.real_errors
    real, simulated = result.real_summaries[0], result.sim_summaries[0]
    (cut,), = real["real"]["faults"]["b-dies"]
    assert 2.0 <= cut < 2.05, cut
    got = {side: (summary["sockets"]["pull1"]["received"], summary["sockets"]["pull2"]["received"])
           for side, summary in (("real", real), ("zsim", simulated))}
    # before the crash: every other task of 1.5 s at 200 a second, to each worker
    assert abs(got["real"][0] - got["zsim"][0]) <= 8 and 140 <= got["real"][0] <= 165, got
    assert got["zsim"][1] == pytest.approx(got["real"][1], rel=0.10), got
    stuck = 1200 - sum(got["real"])
    if heartbeats:
        assert 100 <= stuck <= 300, got  # what w1's pipe and kernel held when the timeout broke it
    else:
        assert 300 <= stuck <= 500, got  # the pipe and the send buffer full, for good
