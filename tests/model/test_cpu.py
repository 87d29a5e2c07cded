"""zsim.model.cpu and [machine] cores: threads that share cores, exact where the model's
own rules decide (processor sharing, one switch a time slice, the wake-up delay)."""

from __future__ import annotations

import copy
import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zsim
from zsim import profile as profile_module
from zsim.cli import format_summary
from zsim.errors import ScenarioError
from zsim.model.cpu import Machine, fair_shares
from zsim.model.kernel import Environment
from zsim.model.params import SchedulerParams
from zsim.results import flat_metrics
from zsim.spec import from_dict
from zsim.sweep.plan import expand
from zsim.sweep.plan import from_dict as sweep_from_dict

ROOT = Path(__file__).resolve().parents[2]
START = 0.1
SERVICE = 0.001
PER_WORKER = 10


def _profile(**scheduler: float) -> profile_module.Profile:
    """No time costs at all but the scheduler's (and what ``api`` adds)."""
    api = scheduler.pop("api", None)
    raw: dict[str, Any] = {"profile": {"name": "test"}, "scheduler": {"context_switch_s": 0.0, "wakeup_s": 0.0, **scheduler}}
    if api:
        raw["api"] = api
    return profile_module.from_dict(raw)


def two_workers(cores: int | None, *, busy: bool = True, transport: str = "inproc") -> dict[str, Any]:
    """A PUSH deals 20 tasks to two PULL workers at once; each task is 1 ms of service."""
    if transport == "inproc":
        processes: list[dict[str, Any]] = [{"name": "main"}]
        places = ("main", "main", "main")
        endpoint = "inproc://tasks"
    else:
        processes = [{"name": "vent"}, {"name": "w1"}, {"name": "w2"}]
        places = ("vent", "w1", "w2")
        endpoint = "tcp://127.0.0.1:5557"
    raw: dict[str, Any] = {
        "scenario": {"name": "two-workers", "profile": "ideal"},
        "process": processes,
        "socket": [
            {"name": "push", "type": "PUSH", "process": places[0], "bind": endpoint},
            {"name": "pull1", "type": "PULL", "process": places[1], "connect": endpoint},
            {"name": "pull2", "type": "PULL", "process": places[2], "connect": endpoint},
        ],
        "send": [{"socket": "push", "count": 2 * PER_WORKER, "interval_s": 0, "start_s": START}],
        "recv": [{"socket": "pull1", "service_s": SERVICE, "busy": busy}, {"socket": "pull2", "service_s": SERVICE, "busy": busy}],
    }
    if cores is not None:
        raw["machine"] = {"cores": cores}
    return raw


def spin_waits(raw: dict[str, Any], spin: float) -> dict[str, Any]:
    """Every workload spins the last ``spin`` seconds of its waits (``wait_spin_s``)."""
    for key in ("send", "recv"):
        for table in raw.get(key, []):
            table["wait_spin_s"] = spin
    return raw


def makespan(summary: dict[str, Any]) -> float:
    """From the first task sent to the last one done (the run ends when nothing can move)."""
    return summary["sim_time_s"] - START


# -- processor sharing, exactly ---------------------------------------------------------------


@pytest.mark.parametrize("transport", ["inproc", "tcp"])
def test_two_cpu_bound_workers_on_one_core_take_twice_as_long_as_on_two(transport):
    work = PER_WORKER * SERVICE
    results = {cores: zsim.run(two_workers(cores, transport=transport), profile=_profile()).summary for cores in (0, 1, 2, 3)}
    for summary in results.values():
        assert summary["sockets"]["pull1"]["received"] == summary["sockets"]["pull2"]["received"] == PER_WORKER
    assert makespan(results[0]) == pytest.approx(work, rel=1e-12)  # a core per thread
    assert makespan(results[2]) == pytest.approx(work, rel=1e-12)  # a core per worker
    assert makespan(results[3]) == pytest.approx(work, rel=1e-12)  # a core to spare
    assert makespan(results[1]) == pytest.approx(2 * work, rel=1e-12)  # two workers, one core: each at half speed
    threads = results[1]["machine"]["threads"]
    for name in ("recv.pull1", "recv.pull2"):
        assert threads[name]["cpu_s"] == pytest.approx(work, rel=1e-12)
        assert threads[name]["waited_s"] == pytest.approx(work, rel=1e-12)  # it waited as long as it worked
        assert threads[name]["bursts"] == PER_WORKER
    assert results[1]["machine"]["max_runnable"] == 2
    assert results[2]["machine"]["threads"]["recv.pull1"]["waited_s"] == pytest.approx(0.0, abs=1e-12)


def test_a_time_slice_costs_a_context_switch_when_threads_share_a_core():
    # one switch (0.1 ms) per 1 ms slice: a shared core does 1/1.1 of its work
    profile = _profile(timeslice_s=0.001, context_switch_s=0.0001)
    shared = zsim.run(two_workers(1), profile=profile).summary
    alone = zsim.run(two_workers(2), profile=profile).summary
    assert makespan(shared) == pytest.approx(2 * PER_WORKER * SERVICE * 1.1, rel=1e-12)
    assert makespan(alone) == pytest.approx(PER_WORKER * SERVICE, rel=1e-12)  # nobody shares: no switches


def test_a_service_time_that_waits_needs_no_core():
    # busy = false (the default) in a program that only sleeps (the default): one core is plenty
    raw = two_workers(1, busy=False)
    summary = zsim.run(raw, profile=_profile()).summary
    assert makespan(summary) == pytest.approx(PER_WORKER * SERVICE, rel=1e-12)
    assert all(thread["waited_s"] == 0 and thread["cpu_s"] == 0 for thread in summary["machine"]["threads"].values())
    assert [w for w in summary["warnings"] if w["code"] == "cpu_contention"] == []


@pytest.mark.parametrize(("spin", "spun"), [(0.5e-3, 0.5e-3), (0.25e-3, 0.25e-3), (0.002, SERVICE)])
def test_a_precise_wait_spins_its_end_and_on_a_shared_core_the_spin_takes_longer(spin, spun):
    # A program that sleeps, then spins the last wait_spin_s of a wait (as the harness's
    # wait_until does): CPU work as long as the spin. Both workers spin at once: on one core
    # each spin runs at half speed, so each 1 ms service takes 1 ms + spun; on two cores,
    # exactly 1 ms.
    raw = spin_waits(two_workers(1, busy=False), spin)
    summary = zsim.run(raw, profile=_profile()).summary
    assert makespan(summary) == pytest.approx(PER_WORKER * (SERVICE + spun), rel=1e-9)
    assert summary["machine"]["threads"]["recv.pull1"]["wait_spin_s"] == spin
    raw["machine"]["cores"] = 2
    alone = zsim.run(raw, profile=_profile()).summary
    assert makespan(alone) == pytest.approx(PER_WORKER * SERVICE, rel=1e-9)
    for name in ("recv.pull1", "recv.pull2"):
        shared, own = summary["machine"]["threads"][name], alone["machine"]["threads"][name]
        assert shared["spin_cpu_s"] == shared["cpu_s"] == own["spin_cpu_s"] == pytest.approx(PER_WORKER * spun, rel=1e-9)
        assert shared["waited_s"] == pytest.approx(PER_WORKER * spun, rel=1e-9)  # half of each spin's length
        assert own["waited_s"] == pytest.approx(0.0, abs=1e-12)


def test_two_loops_of_one_socket_each_spin_their_own_waits():
    # a socket's workloads share its thread: both loops sleep at once, each must still spin
    # and send at its own time (one pending spin must not replace the other)
    raw = {"scenario": {"name": "two-loops", "profile": "ideal"},
           "socket": [{"name": "push", "type": "PUSH", "bind": "inproc://x"},
                      {"name": "pull", "type": "PULL", "connect": "inproc://x"}],
           "send": [{"name": "a", "socket": "push", "count": 10, "interval_s": 0.002, "start_s": 0.01},
                    {"name": "b", "socket": "push", "count": 10, "interval_s": 0.003, "start_s": 0.0105}],
           "recv": [{"socket": "pull"}], "machine": {"cores": 1}}
    spin_waits(raw, 0.0005)
    summary = zsim.run(raw, profile=_profile()).summary
    assert {name: sender["sent"] for name, sender in summary["senders"].items()} == {"a": 10, "b": 10}
    assert summary["sockets"]["pull"]["received"] == 20
    assert summary["machine"]["threads"]["socket.push"]["spin_cpu_s"] == pytest.approx(20 * 0.0005, rel=1e-9)


def test_a_spinning_thread_slows_a_cpu_bound_one_sharing_its_core():
    # worker 1 computes (busy), worker 2 waits with its whole service spun: on one core
    # the computing worker gets half of it while the other spins, so its work takes longer
    raw = two_workers(1)
    raw["recv"][1]["busy"] = False
    raw["recv"][1]["wait_spin_s"] = 1.0
    summary = zsim.run(raw, profile=_profile()).summary
    threads = summary["machine"]["threads"]
    assert threads["recv.pull1"]["cpu_s"] == pytest.approx(PER_WORKER * SERVICE, rel=1e-9)
    assert threads["recv.pull1"]["waited_s"] > 0.5 * PER_WORKER * SERVICE
    assert threads["recv.pull2"]["spin_cpu_s"] > 0
    assert summary["sockets"]["pull1"]["received"] == summary["sockets"]["pull2"]["received"] == PER_WORKER


def test_woken_thread_waits_for_a_busy_core_then_shares_it():
    """A sender (10 us per send call) on the one core a spinning worker holds: each send
    call first waits the wake-up delay (the core is taken), then runs at half speed."""
    call, wakeup, interval = 10e-6, 50e-6, 0.001
    raw = {
        "scenario": {"name": "wake", "until_s": 0.05},
        "socket": [
            {"name": "feed", "type": "PUSH", "bind": "inproc://feed"},
            {"name": "spinner", "type": "PULL", "connect": "inproc://feed"},
            {"name": "out", "type": "PUSH", "bind": "inproc://out"},
            {"name": "sink", "type": "PULL", "connect": "inproc://out"},
        ],
        "send": [{"name": "one", "socket": "feed", "count": 1, "interval_s": 0},
                 {"name": "ticks", "socket": "out", "count": 20, "interval_s": interval, "start_s": 0.01}],
        "recv": [{"socket": "spinner", "service_s": 1.0, "busy": True}, {"socket": "sink"}],
        "machine": {"cores": 1},  # a program that sleeps (the default): woken for each send
    }

    def sent_and_ticks(raw: dict[str, Any]) -> tuple[np.ndarray, dict[str, Any]]:
        result = zsim.run(raw, profile=_profile(wakeup_s=wakeup, api={"send_call_s": call}))
        table = result.messages
        sent = np.sort(table["t0"][table["origin"] == result.socket_names.index("out")])
        return sent, result.summary["machine"]["threads"]["ticks"]

    sent, ticks = sent_and_ticks(raw)
    cycle = wakeup + 2 * call + interval  # woken late, the call at half speed, then the sleep
    assert sent == pytest.approx(0.01 + cycle * np.arange(20), rel=1e-12)
    assert ticks["wake_waits"] == 20
    assert ticks["waited_s"] == pytest.approx(20 * (wakeup + call), rel=1e-9)
    # A program that spins the end of its waits (0.5 ms) is woken for the spin, which runs
    # at half speed; the call that follows it is no wake-up: each cycle is the interval, one
    # wake-up, the call and the spin's extra 0.5 ms (and the first call's wake-up)
    spin = 0.0005
    raw["send"][1]["wait_spin_s"] = spin
    sent, ticks = sent_and_ticks(raw)
    cycle = interval + spin + wakeup + 2 * call
    assert sent == pytest.approx(np.concatenate([[0.01], 0.01 + wakeup + cycle * np.arange(1, 20)]), rel=1e-12)
    assert ticks["wake_waits"] == 1 + 20  # the first call, then every spin (the last send waits too)
    assert ticks["spin_cpu_s"] == pytest.approx(20 * spin, rel=1e-9)


def test_affinity_confines_a_process_to_its_cores():
    # both workers pinned to core 0 of two: as slow as one core; a free third thread is not
    raw = two_workers(2, transport="tcp")
    raw["process"][1]["affinity"] = [0]
    raw["process"][2]["affinity"] = [0]
    summary = zsim.run(raw, profile=_profile()).summary
    assert makespan(summary) == pytest.approx(2 * PER_WORKER * SERVICE, rel=1e-12)
    assert summary["machine"]["threads"]["recv.pull1"]["cores"] == [0]
    raw["process"][2]["affinity"] = [1]
    assert makespan(zsim.run(raw, profile=_profile()).summary) == pytest.approx(PER_WORKER * SERVICE, rel=1e-12)


def test_fair_shares_water_fill_over_affinities():
    machine = Machine(Environment(), SchedulerParams(cores=3))
    a, b = machine.thread("a", "app", "p", [0]), machine.thread("b", "app", "p", [0])
    c = machine.thread("c", "app", "q", [0, 1])
    d = machine.thread("d", "app", "r", None)
    shares = fair_shares([a, b, c, d], machine.all_cores)
    # a and b split core 0; c and d have cores 1 and 2 between them, one each
    assert shares == {a: 0.5, b: 0.5, c: 1.0, d: 1.0}
    e = machine.thread("e", "app", "r", None)
    shares = fair_shares([a, b, c, d, e], machine.all_cores)
    assert shares[a] == shares[b] == 0.5
    assert shares[c] == shares[d] == shares[e] == pytest.approx(2 / 3)


def test_an_io_thread_serves_its_engines_one_event_at_a_time():
    """Two tcp connections out of one process: its one I/O thread does both engines'
    work; with io_threads = 2 each has its own."""
    raw = {
        "scenario": {"name": "io", "profile": "default"},
        "process": [{"name": "src"}, {"name": "dst"}],
        "socket": [
            {"name": "a", "type": "PUSH", "process": "src", "bind": "tcp://127.0.0.1:6001"},
            {"name": "b", "type": "PUSH", "process": "src", "bind": "tcp://127.0.0.1:6002"},
            {"name": "ra", "type": "PULL", "process": "dst", "connect": "tcp://127.0.0.1:6001"},
            {"name": "rb", "type": "PULL", "process": "dst", "connect": "tcp://127.0.0.1:6002"},
        ],
        "send": [{"socket": "a", "count": 2000, "interval_s": 0, "start_s": 0.01},
                 {"socket": "b", "count": 2000, "interval_s": 0, "start_s": 0.01}],
        "recv": [{"socket": "ra"}, {"socket": "rb"}],
        "machine": {"cores": 8},
    }
    no_wake = dataclasses.replace(profile_module.load("default"), io_wake_s=0.0)
    one = zsim.run(raw, profile=no_wake).summary["machine"]["threads"]
    assert "io.src" in one and "io.src.1" not in one
    raw["process"][0]["io_threads"] = 2
    two = zsim.run(raw, profile=no_wake).summary["machine"]["threads"]
    assert two["io.src.1"]["bursts"] > 0 and two["io.src.2"]["bursts"] > 0
    # the engine work is the same; split over two threads
    assert two["io.src.1"]["cpu_s"] + two["io.src.2"]["cpu_s"] == pytest.approx(one["io.src"]["cpu_s"], rel=0.05)


def test_an_idle_io_thread_pays_its_wake_up_and_one_kept_busy_does_not():
    """io_wake_s is CPU an I/O thread spends to wake for an event: paced messages (each an
    event of its own) pay it every time, on both ends; it is burnt after the event's effects,
    so the messages arrive when they would without it."""
    wake = 25e-6

    def paced(interval: float) -> dict[str, Any]:
        return {
            "scenario": {"name": "paced", "until_s": 1.0},
            "process": [{"name": "src"}, {"name": "dst"}],
            "socket": [{"name": "push", "type": "PUSH", "process": "src", "bind": "tcp://127.0.0.1:6001"},
                       {"name": "pull", "type": "PULL", "process": "dst", "connect": "tcp://127.0.0.1:6001"}],
            "send": [{"socket": "push", "count": 10, "interval_s": interval, "start_s": 0.1}],
            "recv": [{"socket": "pull"}],
            "machine": {"cores": 2},
        }

    base = zsim.run(paced(0.001), profile=_profile())
    woken = zsim.run(paced(0.001), profile=_profile(io_wake_s=wake))
    for process in ("src", "dst"):
        extra = woken.summary["machine"]["threads"][f"io.{process}"]["cpu_s"] - base.summary["machine"]["threads"][f"io.{process}"]["cpu_s"]
        bursts = woken.summary["machine"]["threads"][f"io.{process}"]["bursts"]
        assert extra == pytest.approx(bursts * wake, rel=1e-9) and bursts >= 10
    assert np.array_equal(woken.messages["time"], base.messages["time"])
    assert woken.summary["processes"]["dst"]["cpu_s"] == pytest.approx(
        sum(t["cpu_s"] for t in woken.summary["machine"]["threads"].values() if t["process"] == "dst"), rel=1e-12)
    # back to back, one wake-up starts a run of events: far fewer wake-ups than messages
    burst = zsim.run(paced(0.0), profile=_profile(io_wake_s=wake)).summary["machine"]["threads"]["io.src"]
    assert burst["cpu_s"] < 5 * wake


# -- cores = 0 is the model without a machine ------------------------------------------------


def _ledger(result: Any) -> list[np.ndarray]:
    table = result.messages
    return [np.asarray(table[key]) for key in ("msg_id", "state", "socket", "pipe", "rule", "size", "origin", "time", "t0")]


@pytest.mark.parametrize("name", ["examples/push_pull_tcp.toml", "validation/scenarios/slow_joiner_paced.toml",
                                  "examples/broker.toml"])
def test_cores_zero_is_exactly_no_machine(tmp_path, name):
    """``[machine] cores = 0`` under the shipped profile (which records 2 cores) gives
    bit for bit what the same profile without a core count gives: the model without a
    machine."""
    source = ROOT / name
    copy_path = tmp_path / source.name  # the same file with [machine] cores = 0
    copy_path.write_text(source.read_text() + "\n[machine]\ncores = 0\n")
    shipped = profile_module.load("default")
    assert shipped.cores == 2
    zero = zsim.run(copy_path, 0)
    without = zsim.run(source, 0, profile=dataclasses.replace(shipped, cores=0))
    assert "machine" not in zero.summary and "machine" not in without.summary
    for a, b in zip(_ledger(zero), _ledger(without), strict=True):
        assert np.array_equal(a, b)
    assert zero.summary["sockets"] == without.summary["sockets"]
    assert "machine" in zsim.run(source, 0).summary  # the shipped profile's 2 cores


def test_no_machine_means_the_profiles_core_count(tmp_path):
    raw = two_workers(None)
    assert "machine" not in zsim.run(raw, profile=_profile()).summary  # the profile records none
    assert makespan(zsim.run(raw, profile=_profile(cores=1)).summary) == pytest.approx(2 * PER_WORKER * SERVICE, rel=1e-12)
    raw["machine"] = {"cores": 2}  # the scenario's wins
    assert makespan(zsim.run(raw, profile=_profile(cores=1)).summary) == pytest.approx(PER_WORKER * SERVICE, rel=1e-12)
    # the shipped profile records the calibration machine's 2 cores: docs/model.md, "Cores"
    assert profile_module.load("default").cores == 2
    assert profile_module.load("ideal").cores == 0


# -- what the run says ---------------------------------------------------------------------------


def test_contention_is_a_warning_per_waiting_thread_and_a_table():
    summary = zsim.run(two_workers(1), profile=_profile()).summary
    found = [w for w in summary["warnings"] if w["code"] == "cpu_contention"]
    assert [w["path"] for w in found] == ["thread[recv.pull1]", "thread[recv.pull2]"]
    assert found[0]["message"] == "waited 10 ms for a core, against 10 ms of its own CPU work: up to 2 threads wanted the 1 core at once"
    text = format_summary(summary)
    assert "machine: 1 core, up to 2 threads runnable at once" in text
    line = next(line for line in text.splitlines() if line.startswith("recv.pull1"))
    assert line.split()[-3:] == ["10.000", "10.000", "10"]
    row = flat_metrics(summary)  # a sweep's row
    assert row["warning.cpu_contention"] == 2 and row["machine.cores"] == 1
    assert row["thread.recv.pull1.waited_s"] == pytest.approx(0.01, rel=1e-12)
    assert row["machine.cpu_s"] == pytest.approx(0.02, rel=1e-12)
    assert not [w for w in zsim.run(two_workers(2), profile=_profile()).summary["warnings"] if w["code"] == "cpu_contention"]


def test_waits_shorter_than_the_machines_wake_up_in_a_long_run_are_no_contention():
    """Each worker waits 1 ms a task for the one core (10 ms over its 10 tasks, as much as its
    CPU work). In a run of 1 s that is a warning on a machine whose idle wake-up (io_wake_s)
    is shorter than 1 ms, none where a wake-up alone takes longer (issue 30: a sender that
    waited 3 us a message, 0.1 % of a quiet run, was reported as contention); in the 0.12 s
    the batch takes alone, 10 ms is 8 % of the run, a warning whatever the wake-up (a thread
    slowed on every burst by short waits is still contention)."""
    def contended(io_wake_s: float, until_s: float | None) -> list[str]:
        raw = two_workers(1)
        if until_s is not None:
            raw["scenario"]["until_s"] = until_s
        summary = zsim.run(raw, profile=_profile(io_wake_s=io_wake_s)).summary
        assert summary["machine"]["threads"]["recv.pull1"]["waited_s"] == pytest.approx(0.01, rel=1e-12)
        return [w["path"] for w in summary["warnings"] if w["code"] == "cpu_contention"]

    assert contended(0.0009, 1.0) == ["thread[recv.pull1]", "thread[recv.pull2]"]
    assert contended(0.0011, 1.0) == []
    assert contended(0.0011, None) == ["thread[recv.pull1]", "thread[recv.pull2]"]


def test_contention_made_by_wait_spins_says_so_and_sleeping_waits_make_none():
    """Two workers whose 1 ms service is a wait (busy = false) on 1 core: a harness-like
    spin of each wait's last 0.5 ms is all the CPU there is, so the warning says so; a
    program that sleeps (wait_spin_s = 0, the default) never competes; spins that are a
    small part of the CPU (under 20 %) go unmentioned."""
    spin_note = ("; 100% of all the threads' CPU was spinning the end of precise waits "
                 "(wait_spin_s = 500 us on their workloads; 0, the default, if the program sleeps)")
    spinning = spin_waits(two_workers(1, busy=False), 0.0005)
    found = [w for w in zsim.run(spinning, profile=_profile()).summary["warnings"] if w["code"] == "cpu_contention"]
    assert [w["message"] for w in found] == [
        "waited 5 ms for a core, against 5 ms of its own CPU work: up to 2 threads wanted the 1 core at once" + spin_note] * 2
    sleeping = two_workers(1, busy=False)
    assert zsim.run(sleeping, profile=_profile()).summary["warnings"] == []
    short = spin_waits(two_workers(1, busy=False), 0.0001)  # 2 ms of spin against 20 ms of recv calls
    messages = [w["message"] for w in zsim.run(short, profile=_profile(api={"recv_call_s": 0.001})).summary["warnings"]]
    assert messages == ["waited 11 ms for a core, against 11 ms of its own CPU work: up to 2 threads wanted the 1 core at once"] * 2


def test_machine_cores_is_a_sweep_axis():
    sweep = sweep_from_dict({"sweep": {"name": "cores", "replications": 1}, "base": two_workers(None),
                             "axes": {"machine.cores": [1, 2, 4]}})
    plan = expand(sweep)
    assert [point.values for point in plan.points] == [{"machine.cores": n} for n in (1, 2, 4)]
    spans = [makespan(zsim.run(plan.scenario(point.id), profile=_profile()).summary) for point in plan.points]
    assert spans == pytest.approx([0.02, 0.01, 0.01], rel=1e-12)


# -- bad input: one line, exit 2 -----------------------------------------------------------------


@pytest.mark.parametrize("change,expected", [
    (lambda raw: raw.update(machine={"cores": -1}), "machine.cores: must be >= 0, got -1"),
    (lambda raw: raw.update(machine={"cores": 1.5}), "machine.cores: must be an integer, got 1.5"),
    (lambda raw: raw.update(machine={"core": 2}), "machine.core: unknown field (did you mean 'cores'?); known: cores"),
    (lambda raw: raw.update(machine={"cores": 2, "wait_spin_s": 0.0005}),
     "machine.wait_spin_s: how a program waits is the program's, not the machine's: set wait_spin_s on its [[send]]/[[recv]] "
     "workloads (default 0: the program sleeps)"),
    (lambda raw: raw["recv"][0].update(wait_spin_s=-0.001), "recv[pull1].wait_spin_s: must be >= 0, got -0.001"),
    (lambda raw: raw["recv"][0].update(wait_spin_s="0.5ms"), "recv[pull1].wait_spin_s: must be a number of seconds, got '0.5ms'"),
    (lambda raw: raw["send"][0].update(loop_cpu_s=-1), "send[push].loop_cpu_s: must be >= 0, got -1"),
    (lambda raw: raw["process"][1].update(affinity=[2]),
     "process[w1].affinity[0]: core 2 does not exist: the machine has 2 cores (0 to 1)"),
    (lambda raw: raw["process"][1].update(affinity=[0, 0]), "process[w1].affinity[1]: core 0 is listed twice"),
    (lambda raw: raw["process"][1].update(affinity=[]), "process[w1].affinity: must be a non-empty list of core numbers"),
    (lambda raw: raw.update(machine={"cores": 0}) or raw["process"][1].update(affinity=[0]),
     "process[w1].affinity: needs [machine] cores >= 1"),
    (lambda raw: raw["process"][1].update(io_threads=0), "process[w1].io_threads: must be >= 1, got 0"),
    (lambda raw: raw["recv"][0].update(busy="yes"), "recv[pull1].busy: must be true or false, got 'yes'"),
])
def test_bad_machine_input_is_one_line(change, expected):
    raw = two_workers(2, transport="tcp")
    change(raw)
    with pytest.raises(ScenarioError) as info:
        from_dict(raw)
    assert expected in str(info.value)


def test_affinity_beyond_the_profiles_cores_is_refused_at_build():
    raw = two_workers(None, transport="tcp")
    raw["process"][1]["affinity"] = [3]
    with pytest.raises(ScenarioError, match=r"process\[w1\]\.affinity\[0\]: core 3 does not exist: the machine has 2 cores"):
        zsim.run(raw, profile=_profile(cores=2))


def test_bad_cores_on_the_command_line_exits_2(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[machine]\ncores = -2\n[[socket]]\nname = "a"\ntype = "PUSH"\nbind = "inproc://a"\n')
    proc = subprocess.run([sys.executable, "-m", "zsim", "run", str(path)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "zsim: machine.cores: must be >= 0, got -2"


def test_the_scenario_copy_is_untouched():
    raw = two_workers(1)
    before = copy.deepcopy(raw)
    zsim.run(raw, profile=_profile())
    assert raw == before
