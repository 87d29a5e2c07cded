"""The real-pyzmq harness on real sockets: counts, timing, bounds and clean-up.

Marked ``real``; every test is bounded (small counts, short horizons, pytest-timeout).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from support import dealer_worker_behind_broker
from validation.harness import run_real
from zsim.cli import main as zsim_main

pytestmark = [pytest.mark.real, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "validation" / "scenarios"


def _leftovers(directory: str) -> set[str]:
    return set(glob.glob(os.path.join(directory, "zsim-val-*")))


@pytest.fixture
def private_tmp(monkeypatch):
    """A temporary folder of this test's own for the harness's run directories: other
    runs on the machine (other test sessions) create theirs in /tmp at the same time.
    Short, so that ipc paths stay below the 107-byte limit."""
    path = tempfile.mkdtemp(prefix="zt-")
    monkeypatch.setattr(tempfile, "tempdir", path)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _children_of(pid: int) -> list[int]:
    try:
        # this run's children only (-P): other sessions may run the harness meanwhile
        out = subprocess.run(["pgrep", "-P", str(pid), "-f", "validation.child"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [int(p) for p in out.split()]


def test_inproc_counts_are_exact(private_tmp):
    summary = run_real(CATALOGUE / "inproc_summed_hwm.toml", seed=0)
    assert summary["ok"], summary["real"]["errors"]
    assert summary["sockets"]["push"]["sent"] == 12
    assert summary["sockets"]["push"]["send_again"] == 1
    assert summary["sockets"]["pull"]["received"] == 12
    assert summary["real"]["indices"]["pull"] == {"send.push": [[0, 11]]}
    assert summary["ledger"]["dropped"] is None
    assert _leftovers(private_tmp) == set()


def test_two_processes_over_tcp_with_latency_and_a_shared_clock():
    raw = {
        "scenario": {"name": "tcp-pair", "until_s": 1.0},
        "process": [{"name": "p"}, {"name": "s"}],
        "socket": [
            {"name": "pub", "type": "PUB", "process": "p", "bind": "tcp://*:5999"},
            {"name": "sub", "type": "SUB", "process": "s", "connect": "tcp://127.0.0.1:5999", "open_at_s": 0.05,
             "options": {"subscribe": [""]}},
        ],
        "send": [{"socket": "pub", "count": 100, "interval_s": 0.002, "size_bytes": 64, "start_s": 0.3}],
        "recv": [{"socket": "sub"}],
    }
    samples: dict = {}
    summary = run_real(raw, seed=0, samples=samples)
    assert summary["sockets"]["pub"]["sent"] == 100
    assert summary["sockets"]["sub"]["received"] == 100
    lat = summary["latency_s"]
    assert lat["count"] == 100 and len(samples["latency"]) == 100
    # one clock for both processes: no message is received before it was sent, and the
    # first was sent at start_s or later (how much later is the machine's business)
    assert samples["latency"].min() > 0, lat
    first_sent = summary["sockets"]["sub"]["first_sent_s"]
    assert 0.3 <= first_sent <= summary["sockets"]["sub"]["first_recv_s"]
    # The sender's timeline is its schedule plus the lateness it measured itself: never
    # early, all 100 intervals waited, the finish no earlier than intervals + ZeroMQ
    # calls + measured lateness (how late on a loaded machine is reported, not guessed).
    schedule = summary["real"]["schedule"]["send.pub"]
    assert schedule["pauses_s"] == pytest.approx(100 * 0.002)
    finished = summary["senders"]["send.pub"]["finished_at_s"]
    assert finished >= 0.3 + 100 * 0.002
    expected = 0.3 + schedule["pauses_s"] + schedule["zmq_s"] + schedule["behind_s"]
    assert finished >= expected - 1e-4, (finished, schedule)  # finish() follows the last wait


def test_router_identities_and_replies():
    raw = {
        "scenario": {"name": "router", "until_s": 1.0},
        "process": [{"name": "r"}, {"name": "d"}],
        "socket": [
            {"name": "router", "type": "ROUTER", "process": "r", "bind": "ipc://rt"},
            {"name": "d1", "type": "DEALER", "process": "d", "connect": "ipc://rt", "open_at_s": 0.05},
            {"name": "d2", "type": "DEALER", "process": "d", "connect": "ipc://rt", "open_at_s": 0.05,
             "options": {"routing_id": "second"}},
        ],
        "send": [{"socket": "router", "count": 20, "to": ["d1", "second", "nobody"], "interval_s": 0.001, "start_s": 0.3}],
        "recv": [{"socket": "d1"}, {"socket": "d2"}],
    }
    summary = run_real(raw, seed=0)
    assert summary["sockets"]["router"]["sent"] == 20  # no ROUTER_MANDATORY: unknown peers are dropped silently
    assert summary["sockets"]["d1"]["received"] == 7
    assert summary["sockets"]["d2"]["received"] == 7


def test_a_dealer_worker_behind_a_router_broker_replies_with_the_clients_envelope():
    """REQ clients -> ROUTER | proxy | DEALER -> a DEALER worker with reply = true: the
    worker receives the client's routing id and delimiter before the request and must send
    them back, or the broker's ROUTER cannot route the reply (the simulator keeps the
    envelope the same way). Every request gets its reply, in the simulator and for real."""
    raw = dealer_worker_behind_broker({"name": "c1", "count": 20, "size_bytes": 32},
                                      {"name": "c2", "count": 20, "size_bytes": 32, "parts": 3})
    import zsim

    simulated = zsim.run(raw, seed=0).summary["sockets"]
    real = run_real(raw, seed=0)["sockets"]
    for summary in (simulated, real):
        assert (summary["c1"]["received"], summary["c2"]["received"], summary["w"]["sent"]) == (20, 20, 40)


def test_exit_with_blocked_term_is_bounded_and_reported():
    raw = {
        "scenario": {"name": "blocked"},
        "process": [{"name": "sender", "exit_at_s": 0.3}, {"name": "receiver"}],
        "socket": [
            {"name": "pull", "type": "PULL", "process": "receiver", "bind": "tcp://127.0.0.1:5998", "open_at_s": 99.0},
            {"name": "push", "type": "PUSH", "process": "sender", "connect": "tcp://127.0.0.1:5998"},
        ],
        "send": [{"socket": "push", "count": 3, "start_s": 0.1}],
        "validation": {"quiet_s": 0.5},
    }
    started = time.perf_counter()
    summary = run_real(raw, seed=0, timeout_s=4.0)
    took = time.perf_counter() - started
    assert took < 4.0 + 10.0
    assert summary["processes"]["sender"]["term_blocked"] is True
    started_exit = summary["processes"]["sender"]["exit_started_s"]
    assert 0.3 <= started_exit < took, started_exit  # never early (how late is the scheduler's)
    assert summary["sockets"]["push"]["sent"] == 3


def test_close_at_and_rcvtimeo_bound_blocking_calls():
    raw = {
        "scenario": {"name": "close", "until_s": 1.2},
        "socket": [
            {"name": "pull", "type": "PULL", "bind": "inproc://c", "close_at_s": 0.5},
            {"name": "pull2", "type": "PULL", "bind": "inproc://c2", "options": {"rcvtimeo": 100}},
            {"name": "push", "type": "PUSH", "connect": "inproc://c2", "open_at_s": 0.05},
        ],
        "send": [{"socket": "push", "count": 2, "start_s": 0.05}],
        "recv": [{"socket": "pull"}, {"socket": "pull2", "on_timeout": "stop", "start_s": 0.2}],
    }
    summary = run_real(raw, seed=0)
    assert summary["sockets"]["pull2"]["received"] == 2
    assert summary["sockets"]["pull2"]["recv_again"] == 1
    assert summary["ok"], summary["real"]["errors"]


def test_interrupted_run_leaves_no_process_and_no_ipc_directory(private_tmp):
    script = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
        "from validation.harness import run_real\n"
        f"run_real({str(CATALOGUE / 'termination_rcvhwm_ipc.toml')!r}, seed=0)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=str(ROOT), env={**os.environ, "TMPDIR": private_tmp})
    # wait until the run has started its processes (imports take longer on a busy machine),
    # then a little more so that they are mid-run
    deadline = time.time() + 60
    children = _children_of(proc.pid)
    while not children and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
        children = _children_of(proc.pid)
    assert children, "the run should have started its processes"
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=20)
    deadline = time.time() + 10
    while time.time() < deadline and any(_alive(pid) for pid in children):
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in children)
    assert _leftovers(private_tmp) == set()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_zsim_validate_cli_json_and_report(tmp_path, capsys):
    code = zsim_main(["validate", str(CATALOGUE / "inproc_summed_hwm.toml"), "-n", "1", "--json", "--report", str(tmp_path)])
    out = capsys.readouterr().out
    data = json.loads(out)
    assert code == 0
    assert data["verdict"] == "agrees"
    assert {m["metric"] for m in data["metrics"]} == {"sockets.push.sent", "sockets.push.send_again", "sockets.pull.received"}
    assert (tmp_path / "report.md").exists()
    assert (tmp_path / "results.json").exists()
    assert "agrees" in (tmp_path / "report.md").read_text()


def test_zsim_validate_bad_input_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(Path(CATALOGUE / "inproc_summed_hwm.toml").read_text().replace("replications = 3", "replications = 0"))
    assert zsim_main(["validate", str(bad), "-n", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("zsim: validation.replications:")


def test_crash_kills_the_process_without_linger():
    """crash_at_s SIGKILLs the process: no linger, no zmq_ctx_term, nothing sent after it.

    Asserted on counts and order only. How many of the last messages a live receiver gets
    depends on how far the crashing process's I/O thread had got with its pipe when the
    signal came (on a busy machine several messages still sit there): that is bounded by
    the run's own counts, not by a guess at the scheduler."""
    raw = {
        "scenario": {"name": "crash", "until_s": 1.0},
        "process": [{"name": "s", "crash_at_s": 0.4}, {"name": "r"}],
        "socket": [
            {"name": "push", "type": "PUSH", "process": "s", "bind": "tcp://127.0.0.1:5997"},
            {"name": "pull", "type": "PULL", "process": "r", "connect": "tcp://127.0.0.1:5997", "open_at_s": 0.05},
            # queued for a peer that binds only after the crash: with LINGER (or a live
            # process) these would be delivered when it appears; a killed process never does
            {"name": "orphan", "type": "PUSH", "process": "s", "connect": "tcp://127.0.0.1:5996"},
            {"name": "late", "type": "PULL", "process": "r", "bind": "tcp://127.0.0.1:5996", "open_at_s": 0.6},
        ],
        "send": [{"socket": "push", "count": 1000, "interval_s": 0.001, "start_s": 0.2},
                 {"socket": "orphan", "count": 20, "interval_s": 0.001, "start_s": 0.05}],
        "recv": [{"socket": "pull"}, {"socket": "late"}],
    }
    summary = run_real(raw, seed=0)
    assert summary["ok"], summary["real"]["errors"]
    process = summary["processes"]["s"]
    crashed = process["crashed_s"]
    assert crashed is not None and 0.4 <= crashed < 1.0, process  # never early; before the end
    assert process["exit_started_s"] is None and not process["term_blocked"]  # no close, no term
    # the paced sender cannot have sent more than its schedule allows up to the crash
    sent = summary["sockets"]["push"]["sent"]
    assert 0 < sent <= int((crashed - 0.2) / 0.001) + 1, (sent, crashed)
    # the live receiver got a prefix of what was sent, in order, never more: the crashing
    # process reads its counters, then kills itself; a send call already under way in the
    # paced sender's thread at that moment can still complete (its next wait sees the stop
    # flag), so at most one message more than counted
    received = summary["sockets"]["pull"]["received"]
    assert 0 < received <= sent + 1, (received, sent)
    assert summary["real"]["indices"]["pull"] == {"send.push": [[0, received - 1]]}
    # what sat in the killed process's pipes is gone: the late peer gets nothing
    orphan = summary["senders"]["send.orphan"]
    if orphan["finished_at_s"] is not None and orphan["finished_at_s"] <= crashed:
        assert summary["sockets"]["orphan"]["sent"] == 20, orphan
    assert summary["sockets"]["orphan"]["sent"] > 0, orphan
    assert summary["sockets"]["late"]["received"] == 0


def _fan_out(subscribers: int, interval_s: float, until_s: float) -> dict:
    socket = [
        {"name": "xsub", "type": "XSUB", "process": "proxy", "bind": "tcp://127.0.0.1:5600"},
        {"name": "xpub", "type": "XPUB", "process": "proxy", "bind": "tcp://127.0.0.1:5601"},
        {"name": "pub", "type": "PUB", "process": "pub", "connect": "tcp://127.0.0.1:5600", "open_at_s": 0.05},
    ]
    socket += [{"name": f"sub{i}", "type": "SUB", "process": "subs", "connect": "tcp://127.0.0.1:5601", "open_at_s": 0.05,
                "options": {"subscribe": [""]}} for i in range(subscribers)]
    return {
        "scenario": {"name": "fan-out", "until_s": until_s},
        "process": [{"name": "proxy"}, {"name": "pub"}, {"name": "subs"}],
        "socket": socket,
        "proxy": [{"name": "proxy", "frontend": "xsub", "backend": "xpub"}],
        # still sending at the horizon: the counters are read while every thread is busy
        "send": [{"socket": "pub", "interval_s": interval_s, "size_bytes": 64, "start_s": 0.3, "duration_s": 10.0}],
        "recv": [{"socket": f"sub{i}"} for i in range(subscribers)],
    }


@pytest.mark.timeout(60)
def test_counters_read_while_threads_receive_crash_no_thread():
    """PUB -> XSUB/XPUB -> 8 SUB over tcp at 20,000 msg/s, counters taken at the horizon
    while every subscriber thread is still receiving (issue 8: reading a growing sample
    array through a NumPy view made the threads' next append raise BufferError)."""
    for seed in range(3):
        summary = run_real(_fan_out(8, 0.00005, 0.8), seed=seed)
        assert summary["real"]["errors"] == [], summary["real"]["errors"]
        assert summary["ok"]
        assert summary["sockets"]["pub"]["sent"] > 0
        # (each process reads its counters at the horizon on its own: a SUB may count a
        # message or two the PUB's snapshot did not, so no cross-process inequality here)
        for i in range(8):
            assert summary["sockets"][f"sub{i}"]["received"] > 0, i


TOO_FAST = """
[scenario]
name = "too-fast"
until_s = 0.6

[[socket]]
name = "pub"
type = "PUB"
bind = "inproc://fast"

[[socket]]
name = "sub"
type = "SUB"
connect = "inproc://fast"
options = { subscribe = [""] }

# one message per microsecond: no Python send loop keeps that pace
[[send]]
socket = "pub"
count = 20000
interval_s = 0.000001
size_bytes = 16
start_s = 0.1

[[recv]]
socket = "sub"

[validation]
replications = 1
[validation.metrics]
"sockets.pub.sent" = "exact"
"""


@pytest.mark.timeout(90)
def test_a_rate_the_real_side_cannot_keep_is_reported_as_machine_bound(tmp_path, capsys):
    """The verdict says the numbers measure the machine, in text, --json and the report."""
    path = tmp_path / "too_fast.toml"
    path.write_text(TOO_FAST)
    code = zsim_main(["validate", str(path), "--json", "--report", str(tmp_path / "report")])
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    assert data["verdict"] == "machine-bound"
    assert data["schedule"]["missed"] is True
    assert data["schedule"]["worst"]["sender"] == "send.pub"
    assert data["schedule"]["worst_rate_fraction"] < 1 - data["schedule"]["margin"]
    assert data["verdict_reason"].startswith("the real side sent ")
    assert "% of the requested rate" in data["verdict_reason"] and "these numbers measure this machine" in data["verdict_reason"]
    assert data["metrics_verdict"] in ("agrees", "differs")
    assert data["machine"]["before"]["cores"] == os.cpu_count()
    assert len(data["machine"]["after"]["load"]) == 3
    run = data["real_runs"][0]["real"]["schedule"]["send.pub"]
    assert run["rate_fraction"] < 0.9 and run["behind_s"] > 0 and run["pauses_s"] > 0
    report = (tmp_path / "report" / "report.md").read_text()
    assert "machine-bound" in report and "these numbers measure this machine" in report and "machine load" in report.lower()

    assert zsim_main(["validate", str(path)]) == 1
    captured = capsys.readouterr()
    last = captured.out.strip().splitlines()[-1]
    assert last.startswith("verdict: machine-bound: the real side sent "), last
    assert "machine load" in captured.out and "machine load" in captured.err  # table and progress


@pytest.mark.timeout(60)
def test_the_schedule_check_decides_the_verdict_consistently(tmp_path, capsys):
    """A sender paced 20 ms apart: whatever the load, the reported schedule and the verdict
    agree with each other (machine-bound exactly when the rate fell short by the margin)."""
    path = tmp_path / "paced.toml"
    path.write_text(TOO_FAST.replace("count = 20000", "count = 10").replace("interval_s = 0.000001", "interval_s = 0.02")
                    .replace("until_s = 0.6", "until_s = 0.5"))
    code = zsim_main(["validate", str(path), "--json"])
    data = json.loads(capsys.readouterr().out)
    fraction = data["schedule"]["worst_rate_fraction"]
    assert 0 < fraction <= 1
    run = data["real_runs"][0]["real"]["schedule"]["send.pub"]
    assert run["pauses_s"] == pytest.approx(0.2)  # ten intervals of 20 ms, all waited for
    assert run["rate_fraction"] == fraction
    assert data["schedule"]["missed"] == (fraction < 1 - data["schedule"]["margin"])
    if data["schedule"]["missed"]:
        assert data["verdict"] == "machine-bound" and code == 1, data["verdict_reason"]
    else:
        assert data["verdict"] == data["metrics_verdict"] == "agrees" and code == 0, data["metrics"]


def test_rate_per_s_is_an_offered_poisson_load_on_the_real_side_too():
    """pacing = "schedule" (the default of rate_per_s): the real sender's attempts are due at
    start + the drawn intervals, the same draws as the simulator's, whatever the send calls
    cost. 2,000 sends at 5,000/s: the schedule lasts the sum of 2,000 exponential intervals
    (0.4 s, sd 2.2 %); the real run ends then plus the lateness it measured itself."""
    import zsim

    raw = {
        "scenario": {"name": "poisson", "until_s": 3.0},
        "socket": [
            {"name": "pub", "type": "PUB", "bind": "tcp://*:5998", "options": {"sndhwm": 0}},
            {"name": "sub", "type": "SUB", "connect": "tcp://127.0.0.1:5998", "options": {"subscribe": [""], "rcvhwm": 0}},
        ],
        "send": [{"socket": "pub", "count": 2000, "rate_per_s": 5000, "size_bytes": 64, "start_s": 0.3}],
        "recv": [{"socket": "sub"}],
    }
    sim = zsim.run(raw, 4).summary["senders"]["send.pub"]
    real = run_real(raw, seed=4)
    schedule = real["real"]["schedule"]["send.pub"]
    assert real["senders"]["send.pub"]["sent"] == 2000 == sim["sent"]
    # the same 2,000 draws on both sides: the schedules are the same length (the simulated
    # sender ends at its last wake-up, which carries the profile's timer jitter: < 0.1 ms)
    assert schedule["pauses_s"] == pytest.approx(sim["active_s"], abs=1e-4)
    # ... and that length is a Poisson process's: within 4 sd of 0.4 s
    assert abs(schedule["pauses_s"] - 0.4) < 4 * 0.4 / 2000**0.5
    assert sim["achieved_rate_per_s"] == pytest.approx(2000 / schedule["pauses_s"], rel=1e-3)
    finished = real["senders"]["send.pub"]["finished_at_s"] - 0.3
    # never early; late by what the sender measured itself (a loaded machine), nothing else:
    # ZeroMQ's call time does not move a schedule
    assert finished >= schedule["pauses_s"] - 1e-3
    assert finished <= schedule["pauses_s"] + schedule["behind_s"] + 0.005, (
        f"the real sender ended {finished - schedule['pauses_s']:.4f} s after its schedule, "
        f"{schedule['behind_s']:.4f} s of it measured lateness (machine load {os.getloadavg()[0]:.1f})")
