"""Small sweeps shared by the sweep tests (fast scenarios: tens of milliseconds a run),
and a check that they stay valid and fast."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

BASE: dict[str, Any] = {
    "scenario": {"name": "gc-pause-small", "profile": "default", "until_s": 0.4},
    "socket": [
        {"name": "publisher", "type": "PUB", "bind": ["tcp://127.0.0.1:5555"], "options": {"sndhwm": 100}},
        {"name": "subscriber", "type": "SUB", "connect": ["tcp://127.0.0.1:5555"], "options": {"rcvhwm": 100, "subscribe": [""]}},
    ],
    "send": [{"socket": "publisher", "rate_per_s": 2000, "size_bytes": 1000, "start_s": 0.01}],
    "recv": [{"socket": "subscriber", "service_s": {"dist": "exponential", "mean_s": 0.0003},
              "pause_every_s": {"dist": "exponential", "mean_s": 0.2}, "pause_s": 0.05}],
}


def sweep_dict(name: str = "small", replications: int = 3, **head: Any) -> dict[str, Any]:
    """3 HWMs x 2 sizes = 6 points, rcvhwm linked to sndhwm."""
    return {
        "sweep": {"name": name, "replications": replications, "seed": 5, **head},
        "base": copy.deepcopy(BASE),
        "axes": {
            "socket": {"publisher": {"options": {"sndhwm": [2, 20, 200]}}},
            "send.publisher.size_bytes": [100, 65536],
        },
        "link": {"socket.subscriber.options.rcvhwm": "socket.publisher.options.sndhwm"},
    }


SWEEP_TOML = """\
[sweep]
name = "{name}"
base = "base.toml"
replications = {replications}
seed = 5

[axes]
socket.publisher.options.sndhwm = [2, 20, 200]
"send.publisher.size_bytes" = [100, 65536]

[link]
"socket.subscriber.options.rcvhwm" = "socket.publisher.options.sndhwm"
"""

BASE_TOML = """\
[scenario]
name = "gc-pause-small"
profile = "default"
until_s = 0.4

[[socket]]
name = "publisher"
type = "PUB"
bind = ["tcp://127.0.0.1:5555"]
options = { sndhwm = 100 }

[[socket]]
name = "subscriber"
type = "SUB"
connect = ["tcp://127.0.0.1:5555"]
options = { rcvhwm = 100, subscribe = [""] }

[[send]]
socket = "publisher"
rate_per_s = 2000
size_bytes = 1000
start_s = 0.01

[[recv]]
socket = "subscriber"
service_s = { dist = "exponential", mean_s = 0.0003 }
pause_every_s = { dist = "exponential", mean_s = 0.2 }
pause_s = 0.05
"""


def write_sweep_files(directory: Path, name: str = "small", replications: int = 3) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "base.toml").write_text(BASE_TOML)
    path = directory / f"{name}.toml"
    path.write_text(SWEEP_TOML.format(name=name, replications=replications))
    return path


def rows(out: Path, name: str = "small"):
    """The rows of a sweep without wall time (the one column allowed to differ)."""
    from zsim.sweep import store

    frame = store.read_frame(store.sweep_dir(out, name))
    return frame.drop(columns=["wall_s"])


def test_base_scenario_is_valid_and_fast() -> None:
    import time

    import zsim

    started = time.perf_counter()
    summary = zsim.run(BASE, seed=1).summary
    assert summary["ok"] and summary["ledger"]["sent"] > 0
    assert time.perf_counter() - started < 5
