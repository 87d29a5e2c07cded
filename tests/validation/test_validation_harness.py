"""The real-run harness without running it: endpoints, plans, message headers, merging."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from validation.child import FULL, KIND_DATA, KIND_REPLY, SHORT, build_frames, compute, parse_header, split_envelope
from validation.harness import EndpointMap, build_plans, free_tcp_ports, merge_results, real_cpus, real_defaults
from zsim import profile as profile_module
from zsim import spec
from zsim.cli import main as zsim_main
from zsim.errors import ScenarioError
from zsim.model.workload import message_wire_bytes


def _scenario() -> spec.Scenario:
    return spec.from_dict({
        "scenario": {"name": "plan", "until_s": 2.0},
        "process": [{"name": "a", "exit_at_s": 1.0}, {"name": "b"}],
        "socket": [
            {"name": "pub", "type": "PUB", "process": "a", "bind": "tcp://*:5555", "options": {"sndhwm": 7}},
            {"name": "sub", "type": "SUB", "process": "b", "connect": "tcp://localhost:5555", "options": {"subscribe": ["A"]}},
            {"name": "router", "type": "ROUTER", "process": "a", "bind": "ipc://r"},
            {"name": "dealer", "type": "DEALER", "process": "b", "connect": "ipc://r", "options": {"routing_id": "d1"}},
            {"name": "pull", "type": "PULL", "process": "a", "bind": "inproc://p"},
            {"name": "push", "type": "PUSH", "process": "a", "connect": "inproc://p"},
        ],
        "send": [{"socket": "pub", "count": 5, "topic": ["A", "B"], "interval_s": {"dist": "exponential", "mean_s": 0.01}},
                 {"socket": "router", "count": 3, "to": ["d1"]}],
        "recv": [{"socket": "sub", "service_s": 0.01}, {"socket": "dealer", "reply": True}],
    })


def test_endpoints_are_free_ports_and_private_ipc_paths(tmp_path):
    scenario = _scenario()
    endpoints = EndpointMap.allocate(scenario, str(tmp_path))
    tcp = endpoints.real(scenario.socket("pub").bind[0])
    assert tcp.startswith("tcp://127.0.0.1:") and tcp != "tcp://127.0.0.1:5555"
    assert endpoints.real(scenario.socket("sub").connect[0]) == tcp  # localhost and * are the same endpoint
    assert endpoints.real(scenario.socket("router").bind[0]) == f"ipc://{tmp_path}/e1"
    assert endpoints.real(scenario.socket("pull").bind[0]) == "inproc://p"
    ports = free_tcp_ports(5)
    assert len(set(ports)) == 5


def test_plans_carry_the_scenario_per_process(tmp_path):
    scenario = _scenario()
    endpoints = EndpointMap.allocate(scenario, str(tmp_path))
    plans = build_plans(scenario, endpoints, seed=3, results_dir=str(tmp_path), horizon_s=2.0, hard_limit_s=10.0)
    assert set(plans) == {"a", "b"}
    a, b = plans["a"], plans["b"]
    assert a["exit_at_s"] == 1.0 and b["exit_at_s"] is None
    assert [s["name"] for s in a["sockets"]] == ["pub", "router", "pull", "push"]
    dealer = next(s for s in b["sockets"] if s["name"] == "dealer")
    assert dealer["routing_id"] == "d1" and dealer["multipart"] is False
    router = next(s for s in a["sockets"] if s["name"] == "router")
    assert router["multipart"] is True and router["routing_id"] == "router"
    pub = next(s for s in a["sockets"] if s["name"] == "pub")
    assert pub["options"]["sndhwm"] == 7
    send = a["sends"][0]
    assert send["topics"] == ["A", "B"] and send["interval"] == {"dist": "exponential", "mean_s": 0.01}
    assert b["recvs"][1]["reply"] is True
    json.dumps(plans)  # plans travel as JSON


def test_defaults_bound_every_run():
    settings = real_defaults(_scenario())
    assert settings["timeout_s"] == 32.0
    assert settings["quiet_s"] >= 0.5


def test_frames_have_the_simulators_sizes_and_a_header():
    for size, topic, parts in [(0, "", 1), (10, "", 1), (16, "AB", 1), (100, "", 3), (40, "B", 2), (1000, "", 1)]:
        frames = build_frames(size, topic, parts, 1, 3, 7, 1.5)
        total = sum(len(f) for f in frames)
        assert total == message_wire_bytes(size, topic, parts)[0]
        if parts > 1 and topic:
            assert frames[0] == topic.encode()
        elif topic:
            assert frames[0].startswith(topic.encode())
        header = parse_header(frames[-1])
        last = len(frames[-1]) - (len(topic) if parts == 1 else 0)
        if last >= FULL.size:
            assert header == (1, 3, 7, 1.5)
        elif last >= SHORT.size:
            assert header == (1, 3, 7, None)
        else:
            assert header is None


def test_merge_counts_what_the_sockets_did(tmp_path):
    scenario = _scenario()
    np.save(tmp_path / "latency-sub.npy", np.array([0.001, 0.002, 0.003]))
    results = {
        "a": {"process": "a", "snapshot_s": 2.0, "exit_started_s": 1.0, "exit_completed_s": 1.001, "term_blocked": False,
              "sockets": {"pub": {"sent": 5}, "router": {"sent": 3}}, "errors": [],
              "senders": {"send.pub": {"socket": "pub", "attempts": 5, "sent": 5, "again": 0, "unroutable": 0, "finished_at_s": 0.1},
                          "send.router": {"socket": "router", "attempts": 3, "sent": 3, "again": 0, "unroutable": 0}},
              "receivers": {}, "proxies": {}, "replies_sent": 0, "replies_received": 0},
        "b": {"process": "b", "snapshot_s": 2.0, "sockets": {"sub": {"received": 3, "indices": {"s0": [[0, 0], [2, 4]]}},
                                                            "dealer": {"received": 3, "sent": 3}},
              "senders": {}, "receivers": {"recv.sub": {"socket": "sub", "received": 3, "paused_s": 0.0},
                                          "recv.dealer": {"socket": "dealer", "received": 3, "paused_s": 0.0}},
              "proxies": {}, "replies_sent": 3, "replies_received": 0, "errors": []},
    }
    samples: dict = {}
    summary = merge_results(scenario, results, tmp_path, seed=1, wall_s=3.0, t0=0.0, samples=samples)
    assert summary["ledger"]["sent"] == 11  # 5 + 3 + 3 replies
    assert summary["ledger"]["delivered"] == 6
    assert summary["ledger"]["dropped"] is None  # not observable on real sockets
    assert summary["sockets"]["sub"]["latency_s"]["count"] == 3
    assert summary["latency_s"]["p50"] == 0.002
    assert summary["real"]["indices"]["sub"] == {"send.pub": [[0, 0], [2, 4]]}
    assert summary["processes"]["a"]["exit_completed_s"] == 1.001
    assert list(samples["latency"]) == [0.001, 0.002, 0.003]
    assert set(summary) >= {"sockets", "senders", "receivers", "proxies", "processes", "ledger", "latency_s", "seed"}
    # requested against achieved rate, as the simulator reports them: a finished sender was
    # active from its start to its last send, one still running until its process's snapshot
    pub, router = summary["senders"]["send.pub"], summary["senders"]["send.router"]
    assert pub["requested_rate_per_s"] == pytest.approx(100.0)  # exponential, mean 10 ms
    assert pub["active_s"] == pytest.approx(0.1) and pub["achieved_rate_per_s"] == pytest.approx(50.0)
    assert router["requested_rate_per_s"] is None  # back to back
    assert router["active_s"] == pytest.approx(2.0) and router["achieved_rate_per_s"] == pytest.approx(1.5)


# -- command-line edges: refused in one line before anything runs or measures ----------------------


CATALOGUE = Path(__file__).resolve().parents[2] / "validation" / "scenarios"
SCENARIO = str(CATALOGUE / "inproc_summed_hwm.toml")


def _exit_code(argv: list[str]) -> int:
    """``zsim.cli.main``'s status; argparse's own refusals leave through SystemExit."""
    try:
        return zsim_main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def _one_error_line(capsys, *words: str) -> str:
    """stderr holds one ``zsim...`` error line (argparse may print its usage above it) and
    no traceback; that line contains every word."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.strip().splitlines() if not line.startswith(("usage:", " "))]
    assert len(lines) == 1, err
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_validate_timeout_must_be_finite_and_positive(value, capsys):
    assert _exit_code(["validate", SCENARIO, "--timeout", value]) == 2
    _one_error_line(capsys, "--timeout")


@pytest.mark.timeout(30)
@pytest.mark.parametrize("value", ["0", "-1"])
def test_validate_replications_must_be_at_least_one(value, capsys):
    assert _exit_code(["validate", SCENARIO, "--replications", value]) == 2
    _one_error_line(capsys, "--replications")


@pytest.mark.parametrize("replications,timeout,field", [
    (0, None, "--replications"), (-1, None, "--replications"), (True, None, "--replications"), (2.5, None, "--replications"),
    (1, math.nan, "--timeout"), (1, math.inf, "--timeout"), (1, -3.0, "--timeout"), (1, 0.0, "--timeout"), (1, "5", "--timeout"),
])
def test_cmd_validate_checks_its_arguments_itself(replications, timeout, field):
    """What argparse lets through (or a caller builds) is checked in validation.cli too."""
    import argparse

    from validation.cli import cmd_validate

    args = argparse.Namespace(scenario=SCENARIO, replications=replications, timeout=timeout, seed=0, json=True, report=None)
    with pytest.raises(ScenarioError) as info:
        cmd_validate(args)
    assert info.value.path == field


@pytest.mark.timeout(30)
def test_validate_report_folder_is_checked_before_any_run(tmp_path, capsys):
    not_a_folder = tmp_path / "report.md"
    not_a_folder.write_text("x")
    assert _exit_code(["validate", SCENARIO, "--report", str(not_a_folder)]) == 2
    line = _one_error_line(capsys, str(not_a_folder), "report folder")
    assert "simulated" not in line
    assert not_a_folder.read_text() == "x"


@pytest.mark.timeout(30)
def test_validate_metric_typo_is_one_line_before_any_run(tmp_path, capsys):
    text = Path(SCENARIO).read_text()
    assert '"sockets.pull.received"' in text
    bad = tmp_path / "typo.toml"
    bad.write_text(text.replace('"sockets.pull.received"', '"sockets.plul.received"'))
    assert _exit_code(["validate", str(bad), "-n", "1"]) == 2
    _one_error_line(capsys, "validation.metrics[2]: unknown metric 'sockets.plul.received'", "sockets.pull.received")


@pytest.mark.timeout(30)
def test_calibrate_out_folder_is_refused_before_measuring(tmp_path, capsys):
    # a full calibration measures for about 95 s: the timeout proves it did not start
    assert _exit_code(["calibrate", "--out", str(tmp_path)]) == 2
    _one_error_line(capsys, str(tmp_path), "is a folder", "profile file")
    inside_a_file = tmp_path / "file"
    inside_a_file.write_text("x")
    assert _exit_code(["calibrate", "--out", str(inside_a_file / "profile.toml")]) == 2
    _one_error_line(capsys, "profile.toml")


def test_calibrate_writes_the_profile_atomically(tmp_path, monkeypatch):
    """The measurements stubbed: the profile lands in one piece and no temporary file stays."""
    import validation.calibrate.cli as cal  # where calibrate() looks its measurements up

    monkeypatch.setattr(cal, "measure_api", lambda quick, progress: ({"send_call_s": 1e-6}, {}))
    monkeypatch.setattr(cal, "measure_latencies", lambda transport, api, quick, progress: ({}, {}))
    monkeypatch.setattr(cal, "measure_send_wake_cost", lambda transport, quick: {"idle_s": [1e-4, 1e-3], "cost_s": [1e-5, 2e-5]})
    monkeypatch.setattr(cal, "measure_engine", lambda transport, quick, progress: ({}, {}))
    monkeypatch.setattr(cal, "measure_kernel", lambda transport, quick, progress: ({}, {}))
    monkeypatch.setattr(cal, "measure_scheduler", lambda quick, progress: ({"timeslice_s": 0.003}, {}))
    monkeypatch.setattr(cal, "fit_kernel", lambda profile, progress: profile)
    monkeypatch.setattr(cal, "to_toml", lambda profile, header="": "# stub profile\n")
    out = tmp_path / "new" / "profile.toml"
    cal.calibrate(str(out), quick=True, progress=lambda _msg: None)
    assert out.read_text() == "# stub profile\n"
    assert sorted(p.name for p in out.parent.iterdir()) == ["profile.toml"]


@pytest.mark.timeout(30)
def test_catalogue_run_checks_its_report_folder_before_any_run(tmp_path, capsys):
    from validation.__main__ import main as catalogue_main

    not_a_folder = tmp_path / "report"
    not_a_folder.write_text("x")
    assert catalogue_main(["--only", "inproc-summed-hwm", "--report", str(not_a_folder)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "report folder" in err[0] and str(not_a_folder) in err[0], err


def _machine_scenario(cores: int | None, affinity: list[int] | None = None) -> spec.Scenario:
    raw: dict = {
        "scenario": {"name": "cores"},
        "process": [{"name": "a", "io_threads": 2}, {"name": "b", **({"affinity": affinity} if affinity else {})}],
        "socket": [
            {"name": "push", "type": "PUSH", "process": "a", "bind": "tcp://127.0.0.1:5557"},
            {"name": "pull", "type": "PULL", "process": "b", "connect": "tcp://127.0.0.1:5557"},
        ],
        "send": [{"socket": "push", "count": 3}],
        "recv": [{"socket": "pull", "service_s": 0.01, "busy": True}],
    }
    if cores is not None:
        raw["machine"] = {"cores": cores}
    return spec.from_dict(raw)


def test_plans_carry_busy_io_threads_and_the_cpus_of_the_machine(tmp_path):
    scenario = _machine_scenario(2, affinity=[1])
    endpoints = EndpointMap.allocate(scenario, str(tmp_path))
    plans = build_plans(scenario, endpoints, seed=1, results_dir=str(tmp_path), horizon_s=None, hard_limit_s=10.0)
    assert plans["b"]["recvs"][0]["busy"] is True
    assert plans["a"]["io_threads"] == 2 and plans["b"]["io_threads"] == 1
    usable = sorted(os.sched_getaffinity(0))
    if len(usable) >= 2:
        assert plans["a"]["cpus"] == usable[:2]  # the machine: the first two CPUs the harness may use
        assert plans["b"]["cpus"] == [usable[1]]  # its core 1


def test_real_cpus_map_cores_onto_the_cpus_the_harness_may_use():
    available = {2, 5, 7}
    assert real_cpus(_machine_scenario(None), available) == {"a": None, "b": None}  # nothing pinned
    assert real_cpus(_machine_scenario(2), available) == {"a": [2, 5], "b": [2, 5]}
    assert real_cpus(_machine_scenario(2, affinity=[1]), available) == {"a": [2, 5], "b": [5]}
    assert real_cpus(_machine_scenario(None, affinity=[2]), available) == {"a": None, "b": [7]}
    with pytest.raises(ScenarioError, match=r"machine.cores: the real harness runs on this machine's CPUs, and it may use 3"):
        real_cpus(_machine_scenario(4), available)
    with pytest.raises(ScenarioError, match=r"process\[b\]\.affinity\[0\]: core 3 does not exist here"):
        real_cpus(_machine_scenario(None, affinity=[3]), available)


def test_a_busy_service_computes_its_cpu_time_and_a_waiting_one_sleeps():
    import threading
    import time

    from validation.timing import wait_until

    # CPU work is measured on the thread's own CPU clock, which a busy machine cannot
    # advance for it: exactly 20 ms of it (to the loop's step), however long that takes
    start_cpu, start = time.thread_time(), time.perf_counter()
    assert compute(0.02) is True
    busy_cpu, busy_wall = time.thread_time() - start_cpu, time.perf_counter() - start
    assert 0.02 <= busy_cpu <= 0.021
    assert busy_wall >= 0.0199  # the two clocks are read microseconds apart
    start_cpu, start = time.thread_time(), time.perf_counter()
    assert wait_until(start + 0.02)
    waiting_cpu = time.thread_time() - start_cpu
    # asleep but for the last 0.5 ms spin
    assert waiting_cpu <= 0.005
    # a closing socket ends the work at its wall deadline, a stopping process at once
    start = time.perf_counter()
    assert compute(10.0, until=start + 0.01) is None
    stop = threading.Event()
    stop.set()
    assert compute(10.0, stop) is False
    assert time.perf_counter() - start < 1.0


@pytest.mark.real
@pytest.mark.timeout(120)
def test_scheduler_measurements_pin_their_processes_and_make_a_loadable_profile():
    """What load cannot change: two busy loops pinned to one CPU share at most that CPU
    (unpinned, on two CPUs, each would get a whole one), and the section is a valid
    ``[scheduler]`` whose costs the model takes."""
    import os

    from validation.calibrate.scheduler import _spinners, measure_scheduler

    cpu = sorted(os.sched_getaffinity(0))[-1]
    shared = _spinners([cpu, cpu], 0.3)
    # over the span both windows cover together: a spinner that got the CPU before the
    # other was first scheduled ran alone for a while (more so on a busy machine), so
    # each one's own cpu/wall share may sum above 1 without two CPUs being used
    span = max(s["end_s"] for s in shared) - min(s["start_s"] for s in shared)
    assert sum(s["cpu_s"] for s in shared) <= 1.02 * span
    section, notes = measure_scheduler(True, lambda _msg: None)
    assert sorted(section) == ["context_switch_s", "cores", "io_wake_s", "timeslice_s", "wakeup_s"]
    assert notes["cpus"] == sorted(os.sched_getaffinity(0))
    profile = profile_module.from_dict({"profile": {"name": "t"}, "scheduler": section})
    # the CPUs it may use become every scenario's default [machine] cores
    assert profile.cores == len(os.sched_getaffinity(0)) and profile.timeslice_s == section["timeslice_s"] > 0
    assert profile.io_wake_s == section["io_wake_s"] > 0


def test_the_envelope_is_every_frame_before_the_senders_own_whatever_the_hops():
    """What a replying ROUTER or DEALER sends back: the routing ids and the delimiter in
    front of the sending workload's frames (counted from its header), not a fixed shape."""
    body = build_frames(100, "", 1, KIND_DATA, 3, 0, 0.0)
    three = build_frames(100, "T", 3, KIND_DATA, 4, 0, 0.0)
    frames = {"s3": 1, "s4": 3}
    # a DEALER worker behind a ROUTER broker: the client's id and the REQ delimiter
    assert split_envelope([b"\x00id01", b"", *body], "DEALER", frames) == ([b"\x00id01", b""], body)
    # two ROUTER hops, then a multi-part request with a topic frame
    assert split_envelope([b"hop2", b"hop1", b"", *three], "ROUTER", frames) == ([b"hop2", b"hop1", b""], three)
    # a DEALER client's request at a ROUTER: the id alone
    assert split_envelope([b"id", *body], "ROUTER", frames) == ([b"id"], body)
    # a reply or a forwarded result is one frame
    reply = build_frames(50, "", 1, KIND_REPLY, 0, 0, 0.0)
    assert split_envelope([b"id", *reply], "ROUTER", {}) == ([b"id"], reply)
    # too short for a header: the envelope's shape decides (a DEALER then has none)
    assert split_envelope([b"id", b"", b"abc"], "ROUTER", frames) == ([b"id", b""], [b"abc"])
    assert split_envelope([b"abc"], "DEALER", frames) == ([], [b"abc"])


def test_the_harness_draws_what_the_simulator_draws(tmp_path):
    """Stream names and the effective DONTWAIT are derived once (``zsim.spec``): a seed
    gives the real harness's workloads the simulator's intervals, sizes, service times and
    pauses, value for value, and ``sndtimeo = 0`` makes both sides' sends non-blocking."""
    from types import SimpleNamespace

    from validation.child import RecvTask, SendTask
    from zsim.build import build, stream_factory

    scenario = spec.from_dict({
        "scenario": {"name": "draws", "until_s": 1.0},
        "process": [{"name": "a"}, {"name": "b"}],
        "socket": [
            {"name": "push", "type": "PUSH", "process": "a", "bind": "tcp://*:5555", "options": {"sndtimeo": 0}},
            {"name": "pull", "type": "PULL", "process": "b", "connect": "tcp://localhost:5555"},
        ],
        "send": [{"name": "load", "socket": "push", "interval_s": {"dist": "exponential", "mean_s": 0.01},
                  "size_bytes": {"dist": "uniform", "low_bytes": 10, "high_bytes": 900}}],
        "recv": [{"name": "work", "socket": "pull", "service_s": {"dist": "lognormal", "mean_s": 0.001, "sigma": 0.5},
                  "pause_every_s": {"dist": "uniform", "low_s": 0.1, "high_s": 0.3}, "pause_s": {"dist": "exponential", "mean_s": 0.02}}],
    })
    seed = 11
    plans = build_plans(scenario, EndpointMap.allocate(scenario, str(tmp_path)), seed=seed, results_dir=str(tmp_path),
                        horizon_s=1.0, hard_limit_s=10.0)
    model = build(scenario, seed)
    sim_send, sim_recv = model.senders[0], model.receivers[0]
    assert plans["a"]["sends"][0]["dontwait"] is True and sim_send.dontwait is True
    real_send = SendTask(plans["a"]["sends"][0], SimpleNamespace(streams=stream_factory(seed)), None)
    real_recv = RecvTask(plans["b"]["recvs"][0], SimpleNamespace(streams=stream_factory(seed)), None)
    # the simulator draws the first pause point when it builds the receiver
    assert sim_recv.next_pause_at == scenario.starts_at(scenario.recvs[0]) + real_recv.pause_every.next()
    pairs = [(sim_send.interval, real_send.interval), (sim_send.size, real_send.size),
             (sim_recv.service, real_recv.service), (sim_recv.pause_every, real_recv.pause_every),
             (sim_recv.pause, real_recv.pause)]
    for sim, real in pairs:
        drawn = [sim.next() for _ in range(50)]
        assert len(set(drawn)) > 40  # random, not a constant
        assert drawn == [real.next() for _ in range(50)]


# --------------------------------------------------------------------------------------
# A deployment of [[host]]s: what the harness builds without building it (the real runs over
# namespaces are in test_links.py)


def _deployment(**link: object) -> dict:
    return {
        "scenario": {"name": "hosts", "until_s": 1.0},
        "host": [{"name": "a", "cores": 1}, {"name": "b", "cores": 1}],
        "link": [{"name": "wire", "hosts": ["a", "b"], "bandwidth_bps": 20e6, **link}],
        "process": [{"name": "src", "host": "a"}, {"name": "dst", "host": "b"}, {"name": "near", "host": "a"}],
        "socket": [
            {"name": "pub", "type": "PUB", "process": "src", "bind": "tcp://127.0.0.1:5556"},
            {"name": "far", "type": "SUB", "process": "dst", "connect": "tcp://a:5556", "options": {"subscribe": [""]}},
            {"name": "local", "type": "SUB", "process": "near", "connect": "tcp://localhost:5556", "options": {"subscribe": [""]}},
        ],
        "send": [{"socket": "pub", "count": 10}],
        "recv": [{"socket": "far"}, {"socket": "local"}],
    }


def test_on_hosts_a_bind_listens_on_every_address_and_a_connect_goes_to_the_link_or_loopback(tmp_path):
    scenario = spec.from_dict(_deployment())
    seen: list[tuple[str, str]] = []

    def where(host: str, seen_from: str) -> str:
        seen.append((host, seen_from))
        return "127.0.0.1" if host == seen_from else f"10.9.9.{'ab'.index(host) + 1}"

    endpoints = EndpointMap.allocate(scenario, str(tmp_path), where)
    plans = build_plans(scenario, endpoints, seed=1, results_dir=str(tmp_path), horizon_s=1.0, hard_limit_s=10.0)
    # each host is a namespace of its own: the file's port, on every address of the host
    assert plans["src"]["sockets"][0]["bind"] == ["tcp://0.0.0.0:5556"]
    assert plans["dst"]["sockets"][0]["connect"] == ["tcp://10.9.9.1:5556"]  # a's end of the link
    assert plans["near"]["sockets"][0]["connect"] == ["tcp://127.0.0.1:5556"]
    assert sorted(seen) == [("a", "a"), ("a", "b")]


@pytest.mark.parametrize(("field", "value"), [("latency_s", 0.01), ("loss", 0.001)])
def test_the_harness_refuses_what_tbf_cannot_emulate_before_anything_runs(field, value):
    from validation.compare import validate
    from validation.harness import check_deployment

    scenario = spec.from_dict(_deployment(**{field: value}))
    with pytest.raises(ScenarioError, match=rf"link\[wire\]\.{field}: the real harness emulates a link's rate, MTU and queue "
                                            rf"with tbf, not its delay or loss"):
        check_deployment(scenario)
    with pytest.raises(ScenarioError, match=rf"link\[wire\]\.{field}"):
        validate(scenario, replications=1)
    check_deployment(spec.from_dict(_deployment()))  # rate, MTU and queue: built
    with pytest.raises(ScenarioError, match=r"link\[wire\]\.queue_bytes: the real harness's tbf holds at most"):
        check_deployment(spec.from_dict(_deployment(queue_bytes=2**32)))


def test_zsim_validate_of_a_deployment_says_in_one_line_what_it_cannot_do(tmp_path, monkeypatch, capsys):
    from validation import netns
    from zsim import tomlw

    path = tmp_path / "d.toml"
    path.write_text(tomlw.to_toml(_deployment(latency_s=0.01)))
    assert zsim_main(["validate", str(path)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "zsim: link[wire].latency_s: the real harness emulates a link's rate, MTU and queue with tbf, not its delay or loss "
        "(no netem): validate the deployment with latency_s = 0 (docs/validation.md, \"Links\")"]
    path.write_text(tomlw.to_toml(_deployment()))
    monkeypatch.setattr(netns, "available", lambda: "network namespaces need root")
    assert zsim_main(["validate", str(path)]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        "zsim: zsim validate: a scenario with [[host]]s runs its real side in network namespaces: network namespaces need root"]


def test_each_host_gets_its_own_cpus_when_they_fit_and_shares_them_otherwise():
    from validation.harness import host_slices

    fits = spec.from_dict(_deployment())
    assert host_slices(fits, [4, 6]) == {"a": [4], "b": [6]}
    assert real_cpus(fits, {4, 6}) == {"src": [4], "dst": [6], "near": [4]}
    raw = _deployment()
    raw["host"][1]["cores"] = 2  # 1 + 2 cores: more than the two this machine may use
    raw["process"][2]["affinity"] = [0]
    shared = spec.from_dict(raw)
    assert host_slices(shared, [4, 6]) is None
    assert real_cpus(shared, {4, 6}) == {"src": None, "dst": None, "near": [4]}
    assert host_slices(shared, [1, 2, 3]) == {"a": [1], "b": [2, 3]}


def test_a_links_qdisc_counters_are_read_from_tc():
    from validation.netns import LinkUnavailable, parse_qdisc_stats

    text = ("qdisc tbf 8001: root refcnt 2 rate 20Mbit burst 3028b lat 104.9ms \n"
            " Sent 5276658 bytes 3507 pkt (dropped 12, overlimits 2848 requeues 0) \n backlog 0b 0p requeues 0\n")
    assert parse_qdisc_stats(text) == {"bytes": 5276658, "packets": 3507, "drops": 12}
    with pytest.raises(LinkUnavailable, match="no statistics"):
        parse_qdisc_stats("qdisc noqueue 0: root refcnt 2")


def test_a_deployments_default_metrics_compare_what_each_link_direction_carried():
    from validation.compare import check_metric_path, default_metrics

    scenario = spec.from_dict(_deployment())
    metrics = default_metrics(scenario)
    assert {name for name in metrics if name.startswith("network.")} == {"network.wire.a->b.bytes", "network.wire.b->a.bytes"}
    assert check_metric_path("network.wire.a->b.queue_drops", scenario, {}) is None
    assert "did you mean 'network.wire.a->b.bytes'" in check_metric_path("network.wire.a->b.byte", scenario, {})


def test_a_host_naming_the_scenarios_machine_is_this_machine(tmp_path):
    from validation.harness import check_deployment

    raw = _deployment()
    raw["host"][0]["profile"] = "default"  # the scenario names none: the same machine
    check_deployment(spec.from_dict(raw))
    (tmp_path / "other.toml").write_text((profile_module.PROFILE_DIR / "default.toml").read_text().replace(
        'name = "linux-x86_64-loopback-intel-xeon-processor-2cores"', 'name = "small-board"', 1))
    raw["host"][0]["profile"] = "other.toml"
    with pytest.raises(ScenarioError, match=r"^host\[a\]\.profile: the real harness runs every host on this machine"):
        check_deployment(spec.from_dict(raw, base_dir=str(tmp_path)))
