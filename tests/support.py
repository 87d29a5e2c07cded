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
