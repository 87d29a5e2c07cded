"""The real-run harness without running it: endpoints, plans, message headers, merging."""

from __future__ import annotations

import json

import numpy as np

from validation.child import FULL, SHORT, build_frames, parse_header
from validation.harness import EndpointMap, build_plans, free_tcp_ports, merge_results, real_defaults
from zsim import spec
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
