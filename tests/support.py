"""Helpers the tests share (imported as ``support``: tests/ is on pytest's pythonpath):
scenarios as dicts, run them, read numbers out of the summary."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest

import zsim


def scenario(*sockets: dict[str, Any], sends: list[dict[str, Any]] | None = None, recvs: list[dict[str, Any]] | None = None,
             profile: str = "ideal", until_s: float | None = None, processes: list[dict[str, Any]] | None = None,
             proxies: list[dict[str, Any]] | None = None, name: str = "test") -> dict[str, Any]:
    raw: dict[str, Any] = {"scenario": {"name": name, "profile": profile}, "socket": [copy.deepcopy(s) for s in sockets]}
    if until_s is not None:
        raw["scenario"]["until_s"] = until_s
    if sends:
        raw["send"] = copy.deepcopy(sends)
    if recvs:
        raw["recv"] = copy.deepcopy(recvs)
    if processes:
        raw["process"] = copy.deepcopy(processes)
    if proxies:
        raw["proxy"] = copy.deepcopy(proxies)
    return raw


def pub_to_subs_over_link(subs: int, queue_bytes: int, send: dict[str, Any], description: str, rate_bps: float = 20e6
                          ) -> dict[str, Any]:
    """A PUB on host ``a`` (bound on port 5556) and ``subs`` SUBs (``sub0``...) on host ``b``,
    each in its own process, over one link of ``rate_bps`` with ``queue_bytes`` of queue;
    ``send`` is the PUB's [[send]] less its socket."""
    sockets: list[dict[str, Any]] = [{"name": "pub", "type": "PUB", "process": "feed", "bind": ["tcp://*:5556"]}]
    processes = [{"name": "feed", "host": "a"}]
    for index in range(subs):
        sockets.append({"name": f"sub{index}", "type": "SUB", "process": f"reader{index}", "connect": ["tcp://a:5556"],
                        "options": {"subscribe": [""]}})
        processes.append({"name": f"reader{index}", "host": "b"})
    return {"scenario": {"name": "small-queue", "description": description},
            "host": [{"name": "a"}, {"name": "b"}],
            "link": [{"hosts": ["a", "b"], "bandwidth_bps": rate_bps, "queue_bytes": queue_bytes}],
            "process": processes, "socket": sockets,
            "send": [{"socket": "pub", **send}],
            "recv": [{"socket": f"sub{index}"} for index in range(subs)]}


def on_one_host(raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` without its [[host]]s and [[link]]s and its processes' ``host``: the same design
    on one machine's loopback (its tcp endpoints still name hosts; the caller rewrites them)."""
    for key in ("host", "link"):
        del raw[key]
    for process in raw["process"]:
        del process["host"]
    return raw


def run(raw: dict[str, Any], seed: int = 1) -> dict[str, Any]:
    return zsim.run(raw, seed).summary


def pipe(summary: dict[str, Any], name_part: str) -> dict[str, Any]:
    matches = [p for p in summary["pipes"] if name_part in p["name"]]
    assert len(matches) == 1, f"{name_part!r} matches {[p['name'] for p in summary['pipes']]}"
    return matches[0]


def unwritable_folder(tmp_path: Path) -> Path:
    """A folder the test process cannot write into (for 'a failing OS call: one line, exit 1')."""
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o500)
        return folder
    if Path("/sys/kernel").is_dir():  # root may write anywhere but in sysfs
        return Path("/sys/kernel")
    pytest.skip("running as root with no sysfs: no folder is unwritable")


def dealer_worker_behind_broker(*clients: dict[str, Any]) -> dict[str, Any]:
    """REQ clients (``{"name", and send fields}``) -> ROUTER | proxy | DEALER over ipc -> a
    DEALER worker with ``reply = true``: the worker gets each client's routing id and
    delimiter before the request and must send them back for the reply to be routed."""
    return {
        "scenario": {"name": "dealer-worker", "until_s": 1.5},
        "process": [{"name": "broker"}, {"name": "clients"}, {"name": "worker"}],
        "socket": [
            {"name": "frontend", "type": "ROUTER", "process": "broker", "bind": "ipc://front"},
            {"name": "backend", "type": "DEALER", "process": "broker", "bind": "ipc://back"},
            *({"name": c["name"], "type": "REQ", "process": "clients", "connect": "ipc://front", "open_at_s": 0.05}
              for c in clients),
            {"name": "w", "type": "DEALER", "process": "worker", "connect": "ipc://back", "open_at_s": 0.05},
        ],
        "proxy": [{"name": "broker", "frontend": "frontend", "backend": "backend"}],
        "send": [{"socket": c["name"], "start_s": 0.3, **{k: v for k, v in c.items() if k != "name"}} for c in clients],
        "recv": [{"socket": "w", "reply": True}],
    }


def router_to_dealer_workers(count: int = 60, metrics: dict[str, Any] | None = None) -> dict[str, Any]:
    """Issue 41's design: a ROUTER hands requests (64 bytes, every 5 ms, by routing id in
    turn) to two DEALER workers in processes of their own; each replies after 2 ms of
    service, and a [[recv]] on the ROUTER reads the replies. Its request -> reply times are
    the ROUTER's ``sockets.router.rtt_s``; its [[send]] has none of its own (it does not wait
    for replies). ``metrics``: a ``[validation.metrics]`` table (default: none, the defaults)."""
    raw: dict[str, Any] = {
        "scenario": {"name": "router-dealer-workers"},
        "process": [{"name": "front"}, {"name": "worker1"}, {"name": "worker2"}],
        "socket": [
            {"name": "router", "type": "ROUTER", "process": "front", "bind": "tcp://127.0.0.1:5701"},
            {"name": "w1", "type": "DEALER", "process": "worker1", "connect": "tcp://127.0.0.1:5701"},
            {"name": "w2", "type": "DEALER", "process": "worker2", "connect": "tcp://127.0.0.1:5701"},
        ],
        "send": [{"socket": "router", "to": ["w1", "w2"], "count": count, "interval_s": 0.005, "size_bytes": 64,
                  "start_s": 0.3, "pacing": "schedule"}],
        "recv": [{"socket": "router"}, {"socket": "w1", "reply": True, "service_s": 0.002},
                 {"socket": "w2", "reply": True, "service_s": 0.002}],
    }
    if metrics is not None:
        raw["validation"] = {"metrics": metrics}
    return raw


def request_paths_design(count: int = 10) -> dict[str, Any]:
    """Three request paths on one loopback, messages of 64 bytes (room for the stamp a reply
    or result carries, validation.child.CAUSED_SIZE): a ROUTER's requests to a DEALER worker
    that replies; a REQ client through a ROUTER | proxy | DEALER broker to a REP worker; and
    a ventilator's tasks through a stage (``forward_to``) to a sink. ``count`` requests on each,
    20 ms apart; every service 2 ms."""
    return {
        "scenario": {"name": "request-paths"},
        "process": [{"name": "front"}, {"name": "worker"}, {"name": "broker"}, {"name": "client"}, {"name": "rep"},
                    {"name": "vent"}, {"name": "stage"}],
        "socket": [
            {"name": "router", "type": "ROUTER", "process": "front", "bind": "tcp://127.0.0.1:5711"},
            {"name": "dw", "type": "DEALER", "process": "worker", "connect": "tcp://127.0.0.1:5711"},
            {"name": "frontend", "type": "ROUTER", "process": "broker", "bind": "tcp://127.0.0.1:5712"},
            {"name": "backend", "type": "DEALER", "process": "broker", "bind": "tcp://127.0.0.1:5713"},
            {"name": "req", "type": "REQ", "process": "client", "connect": "tcp://127.0.0.1:5712", "open_at_s": 0.05},
            {"name": "rw", "type": "REP", "process": "rep", "connect": "tcp://127.0.0.1:5713", "open_at_s": 0.05},
            {"name": "vent", "type": "PUSH", "process": "vent", "bind": "tcp://127.0.0.1:5714"},
            {"name": "sink", "type": "PULL", "process": "vent", "bind": "tcp://127.0.0.1:5715"},
            {"name": "s_in", "type": "PULL", "process": "stage", "connect": "tcp://127.0.0.1:5714", "open_at_s": 0.05},
            {"name": "s_out", "type": "PUSH", "process": "stage", "connect": "tcp://127.0.0.1:5715", "open_at_s": 0.05},
        ],
        "proxy": [{"name": "broker", "frontend": "frontend", "backend": "backend"}],
        "send": [{"socket": name, "count": count, "interval_s": 0.02, "size_bytes": 64, "start_s": 0.3, **extra}
                 for name, extra in (("router", {"to": ["dw"]}), ("req", {}), ("vent", {}))],
        "recv": [{"socket": "router"}, {"socket": "dw", "reply": True, "service_s": 0.002},
                 {"socket": "rw", "service_s": 0.002}, {"socket": "s_in", "forward_to": "s_out", "service_s": 0.002},
                 {"socket": "sink"}],
    }


# -- [[call]]s whose outcome load cannot change (run simulated, by the real harness and as an
# exported program): every call is 100 ms or more from the sends around it


def push_disconnects_one_pull(transport: str = "tcp") -> dict[str, Any]:
    """A PUSH round-robins 10 messages over two PULLs, disconnects from the first at 0.3 s,
    then sends 10 more: the first gets 5, the second 5 + 10."""
    endpoint = {"tcp": "tcp://127.0.0.1:{port}", "ipc": "ipc://calls-{port}", "inproc": "inproc://calls-{port}"}[transport]
    a, b = endpoint.format(port=5801), endpoint.format(port=5802)
    raw = scenario({"name": "pa", "type": "PULL", "bind": a}, {"name": "pb", "type": "PULL", "bind": b},
                   {"name": "push", "type": "PUSH", "connect": [a, b]},
                   sends=[{"name": "before", "socket": "push", "count": 10, "start_s": 0.1, "size_bytes": 32},
                          {"name": "after", "socket": "push", "count": 10, "start_s": 0.5, "size_bytes": 32}],
                   recvs=[{"socket": "pa"}, {"socket": "pb"}], name="push-disconnects")
    raw["call"] = [{"socket": "push", "at_s": 0.3, "disconnect": a}]
    return raw


def sub_subscribes_later() -> dict[str, Any]:
    """A SUB of topic A subscribes to B too at 0.4 s: of 10 messages alternating A and B
    before, it gets the 5 A; of 10 after, all 10."""
    raw = scenario({"name": "pub", "type": "PUB", "bind": "tcp://127.0.0.1:5803"},
                   {"name": "sub", "type": "SUB", "connect": "tcp://127.0.0.1:5803", "options": {"subscribe": ["A"]}},
                   sends=[{"name": "before", "socket": "pub", "count": 10, "topic": ["A", "B"], "start_s": 0.2, "size_bytes": 32},
                          {"name": "after", "socket": "pub", "count": 10, "topic": ["A", "B"], "start_s": 0.6, "size_bytes": 32}],
                   recvs=[{"socket": "sub"}], name="sub-subscribes")
    raw["call"] = [{"socket": "sub", "at_s": 0.4, "subscribe": "B"}]
    return raw


def pull_unbinds_and_binds_again() -> dict[str, Any]:
    """A PULL unbinds its tcp endpoint at 0.25 s and binds it again at 0.6 s: the PUSH sends
    10 before, 10 while nobody listens (queued for its reconnect), and all 20 arrive."""
    raw = scenario({"name": "pull", "type": "PULL", "bind": "tcp://127.0.0.1:5804"},
                   {"name": "push", "type": "PUSH", "connect": "tcp://127.0.0.1:5804", "options": {"reconnect_ivl": 10}},
                   sends=[{"name": "before", "socket": "push", "count": 10, "start_s": 0.1, "size_bytes": 32},
                          {"name": "unbound", "socket": "push", "count": 10, "start_s": 0.4, "size_bytes": 32}],
                   recvs=[{"socket": "pull"}], name="pull-rebinds")
    raw["call"] = [{"socket": "pull", "at_s": 0.25, "unbind": "tcp://127.0.0.1:5804"},
                   {"socket": "pull", "at_s": 0.6, "bind": "tcp://127.0.0.1:5804"}]
    return raw


def hwm_raised_while_connected(on: str = "push") -> dict[str, Any]:
    """test_sockopt_hwm.cpp:59 (test_change_after_connected): a PULL (RCVHWM 1) connects
    over inproc, a PUSH (SNDHWM 1) binds after it, then SNDHWM 5 on the PUSH (``on =
    "pull"``: RCVHWM 5 on the PULL, which has no loop) while connected: 5 + 1 sends before
    EAGAIN. (libzmq's order: the connect is pending when the bind attaches the pipe to both.)"""
    # 100 ms between the connect, the bind, the call and the sends: a real run on a busy
    # machine must not bind before the connect (then the pipe keeps 1 + 1: see
    # test_hwm_set_before_the_bind_side_attached_the_pipe_leaves_it)
    raw = scenario({"name": "pull", "type": "PULL", "connect": "inproc://hwm", "options": {"rcvhwm": 1}},
                   {"name": "push", "type": "PUSH", "bind": "inproc://hwm", "open_at_s": 0.1, "options": {"sndhwm": 1}},
                   sends=[{"socket": "push", "count": 10_000, "dontwait": True, "on_again": "stop", "size_bytes": 0, "start_s": 0.3}],
                   until_s=0.6, name="hwm-raised")
    raw["call"] = [{"socket": on, "at_s": 0.2, "set": {"sndhwm" if on == "push" else "rcvhwm": 5}}]
    return raw
