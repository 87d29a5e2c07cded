"""The validation harness's own habits, declared: what its program does beyond a plain one.

zsim's defaults describe a plain pyzmq program: a loop that calls ``send``/``recv`` and
nothing else, waits that sleep. The harness (``validation.child``) honours a scenario's
program fields (a workload's ``wait_spin_s``: it sleeps, or sleeps and spins the end of
each wait; ``loop_cpu_s``: it computes that long per attempt), but its Python loop around
each call (building frames with a header, a generator and its scheduler, statistics)
costs more than a bare loop, and that cannot be taken out. So the harness states it:
``HARNESS_PROGRAM`` (``harness-program.toml`` beside this file, measured by
``python -m validation.calibrate --harness-program``) holds that extra CPU per send attempt
and per message received on the machine it was measured on, and ``declare`` adds it to
every workload's ``loop_cpu_s`` of the scenario that ``zsim validate`` simulates, so the
simulated program is the program the harness really runs. Nothing here reaches zsim's
defaults: ``zsim run`` never reads this file.
"""

from __future__ import annotations

from copy import deepcopy
from pathlib import Path
from typing import Any

from zsim import spec
from zsim.errors import ScenarioError
from zsim.files import load_toml

HARNESS_PROGRAM = Path(__file__).with_name("harness-program.toml")


def loop_costs(path: Path = HARNESS_PROGRAM) -> tuple[float, float]:
    """(per send attempt, per message received): the harness's loop beyond a bare one."""
    raw = load_toml(path, "harness program file")
    loop = raw.get("loop", {})
    values = []
    for key in ("send_cpu_s", "recv_cpu_s"):
        value = loop.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
            raise ScenarioError(f"{path.name}: loop.{key}", f"must be a number of seconds in [0, 1), got {value!r}")
        values.append(float(value))
    return values[0], values[1]


def declare(scenario: spec.Scenario, path: Path = HARNESS_PROGRAM) -> spec.Scenario:
    """``scenario`` as the harness runs it: each [[send]] and [[recv]] costs its own
    ``loop_cpu_s`` plus the harness's loop. (A [[proxy]] is ``zmq.proxy``, a C loop: nothing.)"""
    send_cpu, recv_cpu = loop_costs(path)
    raw: dict[str, Any] = deepcopy(dict(scenario.raw))
    for key, extra in (("send", send_cpu), ("recv", recv_cpu)):
        for table in raw.get(key, []):
            table["loop_cpu_s"] = float(table.get("loop_cpu_s", 0.0)) + extra
    return spec.from_dict(raw, base_dir=scenario.base_dir, source=scenario.source)
