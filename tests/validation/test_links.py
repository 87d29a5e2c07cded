"""zsim's model of TCP over a link (zsim/model/transport/network.py) against real pyzmq
over a real link: two network namespaces joined by a veth pair, each direction shaped by
tbf (validation/netns.py); the programs are tests/link_programs.py.

Each case runs the same scenario twice: real processes in the namespaces, and zsim with
``[[host]]``/``[[link]]`` of the same rate, MTU and queue. What is asserted is what load
cannot change: the links are a few tens of Mbit/s, far slower than the sockets on either
side even on a loaded 2-core machine, so the link (or a reader paced by deadline) decides;
where the machine could still show (a publisher's schedule, a round trip's wake-ups) the
same run measures it: the publisher reports how long its schedule took, and the round
trips of large requests are taken against small ones sent in turn. There is no netem here:
latency's effect is checked against TCP's arithmetic in tests/model/test_network.py. The
namespaces are removed whatever happens; without root or iproute2 the cases skip with one line.
"""

from __future__ import annotations

import statistics
import subprocess
from typing import Any

import link_programs as programs
import pytest

from validation import netns
from zsim.results import flat_metrics
from zsim.runner import run

pytestmark = pytest.mark.real

_REASON = netns.available()
needs_links = pytest.mark.skipif(_REASON is not None, reason=f"no network namespaces here: {_REASON}")

#: tbf's limit in the real link and queue_bytes in the model
QUEUE_BYTES = 256 * 1024


def _scenario(rate_bps: float, sockets: list[dict[str, Any]], sends: list[dict[str, Any]], recvs: list[dict[str, Any]],
              processes: dict[str, str]) -> dict[str, Any]:
    """A two-host scenario: processes on host a or b, one link between them like ``netns.link``'s."""
    return {
        "scenario": {"name": "link-vs-real", "description": "a real link's case, simulated"},
        "host": [{"name": "a"}, {"name": "b"}],
        "link": [{"hosts": ["a", "b"], "bandwidth_bps": rate_bps, "queue_bytes": QUEUE_BYTES}],
        "process": [{"name": name, "host": host} for name, host in processes.items()],
        "socket": sockets,
        "send": sends,
        "recv": recvs,
    }


def _simulate(scenario: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    result = run(scenario, seed=1)
    return result.summary, flat_metrics(result.summary, result)


def _py(ln: netns.Link, host: str, code: str, *args: Any, out: bool = True) -> subprocess.Popen[str]:
    return ln.python(host, code, *map(str, args), stdout=subprocess.PIPE if out else None, stderr=subprocess.PIPE, text=True)


# -- a bulk transfer the link limits ------------------------------------------------------


def _push_pull(rate_bps: float, count: int, size: int, pace_s: float) -> tuple[float, dict[str, Any], dict[str, Any]]:
    with netns.link(netns.LinkSpec(rate_bps=rate_bps, queue_bytes=QUEUE_BYTES)) as ln:
        endpoint = f"tcp://{ln.b_address}:5555"
        pull = programs.started(_py(ln, ln.b, programs.PULL, endpoint, count, pace_s))
        push = _py(ln, ln.a, programs.PUSH, endpoint, count, size, out=False)
        real = programs.result(pull)["seconds"]
        push.wait(timeout=30)
    recv: dict[str, Any] = {"socket": "pull"}
    if pace_s > 0:
        # the real reader keeps a deadline per message (programs.PULL): its waits end on
        # time on average and their lateness does not add up, as a spun wait's
        recv.update(service_s=pace_s, wait_spin_s=pace_s)
    summary, row = _simulate(_scenario(
        rate_bps,
        [{"name": "push", "type": "PUSH", "process": "src", "connect": ["tcp://b:5555"]},
         {"name": "pull", "type": "PULL", "process": "dst", "bind": ["tcp://*:5555"]}],
        [{"socket": "push", "count": count, "interval_s": 0, "size_bytes": size}], [recv], {"src": "a", "dst": "b"}))
    return real, summary, row


@needs_links
def test_a_bulk_transfer_takes_the_links_time():
    # 5,000 x 1 KB over 20 Mbit/s: the link's rate, TCP/IP and Ethernet headers per
    # 1448-byte segment and ZMTP's 9 bytes per message decide it (about 2.2 s)
    real, summary, row = _push_pull(20e6, 5000, 1024, 0.0)
    simulated = row["socket.pull.last_recv_s"] - row["socket.pull.first_recv_s"]
    assert simulated == pytest.approx(real, rel=0.10), f"zsim {simulated:.3f} s, real {real:.3f} s"
    assert summary["network"]["a-b"]["a->b"]["utilisation"] > 0.9


@needs_links
def test_a_slow_reader_behind_a_fast_link_limits_the_transfer():
    # 1,500 x 1 KB over 40 Mbit/s to a reader taking 1 ms a message: 8 Mbit/s, the reader decides
    real, summary, row = _push_pull(40e6, 1500, 1024, 0.001)
    simulated = row["socket.pull.last_recv_s"] - row["socket.pull.first_recv_s"]
    assert simulated == pytest.approx(real, rel=0.10), f"zsim {simulated:.3f} s, real {real:.3f} s"
    assert summary["network"]["a-b"]["a->b"]["utilisation"] < 0.4  # the link idles most of the time


# -- a PUB offering more than the link carries ---------------------------------------------


def _pub_subs(rate_bps: float, msg_rate: float, seconds: float, size: int, subs: int) -> tuple[list[int], dict, dict]:
    with netns.link(netns.LinkSpec(rate_bps=rate_bps, queue_bytes=QUEUE_BYTES)) as ln:
        endpoint = f"tcp://{ln.a_address}:5556"
        pub = _py(ln, ln.a, programs.PUB, "tcp://*:5556", msg_rate, seconds, size, subs)
        readers = [programs.started(_py(ln, ln.b, programs.SUB, endpoint, 0.5)) for _ in range(subs)]
        sent = programs.result(pub, timeout=60)
        received = [programs.result(reader)["received"] for reader in readers]
    # the real publisher kept its schedule (it busy-waits; the link, not the CPU, limits)
    assert sent["seconds"] == pytest.approx(seconds, rel=0.05)
    sockets = [{"name": "pub", "type": "PUB", "process": "feed", "bind": ["tcp://*:5556"]}]
    recvs = []
    processes = {"feed": "a"}
    for index in range(subs):
        sockets.append({"name": f"sub{index}", "type": "SUB", "process": f"reader{index}", "connect": ["tcp://a:5556"],
                        "options": {"subscribe": [""]}})
        recvs.append({"socket": f"sub{index}"})
        processes[f"reader{index}"] = "b"
    summary, row = _simulate(_scenario(
        rate_bps, sockets,
        [{"socket": "pub", "count": int(msg_rate * seconds), "interval_s": 1.0 / msg_rate, "size_bytes": size, "start_s": 0.5,
          "pacing": "schedule", "wait_spin_s": 1.0 / msg_rate}],  # programs.PUB busy-waits each deadline
        recvs, processes))
    return received, summary, row


@needs_links
def test_a_pub_offering_twice_the_link_loses_at_its_pipe():
    # 1 KB at 4,800 msg/s (40 Mbit/s) for 2.5 s into a 20 Mbit/s link: what the link carries
    # in that time, plus what the PUB's pipe and the kernel buffers hold, arrives
    received, summary, row = _pub_subs(20e6, 4800, 2.5, 1024, 1)
    simulated = row["socket.sub0.delivered"]
    assert simulated == pytest.approx(received[0], rel=0.15), f"zsim {simulated}, real {received[0]}"
    # zsim says where the rest went: every drop is the PUB's, at its pipe to the subscriber (SNDHWM)
    inbound = summary["sockets"]["sub0"]["inbound"]
    assert inbound["dropped_by"] == {"pub->sub0 (tcp send): hwm": row["dropped"]}
    assert row["socket.pub.dropped_sending"] == row["dropped"] > 0.3 * row["sent"]
    assert summary["network"]["a-b"]["a->b"]["queue_drops"] == 0


@needs_links
def test_two_subscribers_share_one_link():
    # 1 KB at 4,000 msg/s to each of two subscribers (66 Mbit/s offered) over 40 Mbit/s
    received, summary, row = _pub_subs(40e6, 4000, 2.5, 1024, 2)
    simulated = [row[f"socket.sub{index}.delivered"] for index in range(2)]
    # together they get what the link carries (what load cannot change)
    assert sum(simulated) == pytest.approx(sum(received), rel=0.10), f"zsim {simulated}, real {received}"
    # how a FIFO queue splits it between two connections varies from run to run on the real
    # link: each subscriber's share of the total was 0.41-0.59 (5,500 to 8,200 of 10,000
    # offered each; the uneven runs are issue 42's finding 4, drops and timeouts favouring one
    # flow), so a share is compared, not a count: neither starves on either side, and zsim's
    # shares (its own windows and TCP small queues decide them, nothing forces them even) are
    # within 0.15 of the real ones (on 2026-12-08 a real run split 7,990 / 5,500 where zsim said
    # 6,704 / 6,935: shares 0.59 / 0.41 against 0.49 / 0.51, a count 26 % off)
    for got, predicted in zip(received, simulated, strict=True):
        real_share, model_share = got / sum(received), predicted / sum(simulated)
        assert real_share > 0.3 and model_share > 0.3, f"zsim {simulated}, real {received}"
        assert model_share == pytest.approx(real_share, abs=0.15), f"zsim {simulated}, real {received}"


# -- a request/response with a large request -----------------------------------------------


def _req_rep_p50(size: int, count: int) -> float:
    """zsim's median round trip of ``count`` requests of ``size`` bytes over 10 Mbit/s."""
    summary, _row = _simulate(_scenario(
        10e6,
        [{"name": "req", "type": "REQ", "process": "client", "connect": ["tcp://b:5557"]},
         {"name": "rep", "type": "REP", "process": "server", "bind": ["tcp://*:5557"]}],
        [{"socket": "req", "count": count, "interval_s": 0, "size_bytes": size}],
        [{"socket": "rep", "reply": True, "reply_size_bytes": 2}], {"client": "a", "server": "b"}))
    (sender,) = summary["senders"].values()
    return float(sender["rtt_s"]["p50"])


@needs_links
def test_a_large_request_round_trips_in_the_links_time():
    # 20 KB requests over 10 Mbit/s: about 17 ms of serialization each. The machine's share
    # of a round trip (wake-ups on both sides, more under load) is measured by 10-byte
    # requests taken in turn with the large ones; what the link adds is the difference.
    count, size, small = 120, 20_000, 10
    with netns.link(netns.LinkSpec(rate_bps=10e6, queue_bytes=QUEUE_BYTES)) as ln:
        endpoint = f"tcp://{ln.b_address}:5557"
        rep = programs.started(_py(ln, ln.b, programs.REP, endpoint, count))
        got = programs.result(_py(ln, ln.a, programs.REQ, endpoint, count, size, small))
        rep.wait(timeout=30)
    real_large, real_small = statistics.median(got["rtts"][5:]), statistics.median(got["small_rtts"][5:])
    sim_large, sim_small = _req_rep_p50(size, count // 2), _req_rep_p50(small, count // 2)
    real, simulated = real_large - real_small, sim_large - sim_small
    assert simulated == pytest.approx(real, rel=0.10), (f"the link's share: zsim {simulated * 1e3:.2f} ms, real {real * 1e3:.2f} ms "
                                                        f"(round trips zsim {sim_large * 1e3:.2f} / {sim_small * 1e3:.2f}, "
                                                        f"real {real_large * 1e3:.2f} / {real_small * 1e3:.2f} ms)")


# -- zsim validate of a deployment --------------------------------------------------------


def _validate(name: str) -> Any:
    """``validate`` of a catalogue deployment (harness.run_real builds a namespace per host and
    a tbf-shaped veth pair per link), its errors and the verdicts of the metrics it does not
    explain; the namespaces of this process are gone after it."""
    from pathlib import Path

    from validation.compare import validate

    path = Path(__file__).resolve().parents[2] / "validation" / "scenarios" / f"{name}.toml"
    result = validate(path, replications=2, trace_depth=False)
    assert not result.real_errors, result.real_errors
    for metric in result.metrics:
        if metric.note is None:
            assert metric.verdict == "agrees", f"{metric.metric}: zsim {metric.sim}, real {metric.real} ({metric.detail})"
    assert not [name for name in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
                if name.startswith(f"{netns.PREFIX}{netns.run_tag()}x")]
    return result


@needs_links
def test_zsim_validate_runs_a_deployment_over_real_links():
    # Three hosts, two links: a PUB at 3,000 x 1 KB a second, one subscriber behind 20 Mbit/s
    # (the link decides what arrives, and when), one behind 40 Mbit/s (everything arrives).
    # Load cannot change those: the links are far slower than the sockets, the rate light.
    result = _validate("wan_two_branches")
    by_name = {m.metric: m for m in result.metrics}
    real = result.real_summaries[0]
    # what only a real deployment has: the namespaces' qdiscs counted each direction
    slow = real["network"]["slow-wan"]
    assert slow["dc->slow"]["bytes"] > 4_000_000 and slow["slow->dc"]["bytes"] < 4096
    # the slow subscriber lost copies, the fast one none
    assert real["sockets"]["sub2"]["received"] == real["senders"]["send.pub"]["sent"] > real["sockets"]["sub1"]["received"]
    # the known difference, in the direction its note says: the model serializes each frame
    # at 40 Mbit/s, the real token bucket lets a lightly loaded link pass it at once
    known = by_name["sockets.sub2.latency_s.p50"]
    assert known.note is not None and min(known.sim) > max(known.real)


@needs_links
def test_a_fixed_send_buffer_holds_what_linux_doubles_it_to():
    # A PUB with SO_SNDBUF 65,536 behind a saturated 20 Mbit/s link, SNDHWM 50: a delivered
    # copy waits behind the pipe and the kernel's buffer. Linux doubles SO_SNDBUF; the model
    # did not (it waited 37 ms against the real 50 ms); now it holds two thirds of the doubled
    # buffer where the real one, paying for its skbs, holds about half (the known note)
    result = _validate("link_fixed_sndbuf")
    known = {m.metric: m for m in result.metrics}["sockets.sub.latency_s.p50"]
    real, simulated = statistics.mean(known.real), statistics.mean(known.sim)
    assert known.note is not None and real < simulated < 1.25 * real
