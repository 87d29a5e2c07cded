"""The program's own habits are scenario fields, the machine's costs are the profile's.

A workload's ``loop_cpu_s`` (its own CPU per attempt beyond the ZeroMQ call) and
``wait_spin_s`` (how it waits: sleep, or sleep and spin the end) default to a plain pyzmq
program: nothing beyond the call, ``time.sleep``. The machine's sleep lateness
(``[api] sleep_late_s``, by sleep length) and a precise wait's (``timer_jitter_s``) come
from the profile. The validation harness declares its own loop cost
(``validation.harness_program``); nothing of it reaches ``zsim run``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zsim
from zsim import profile as profile_module
from zsim import spec
from zsim.errors import ScenarioError

ROOT = Path(__file__).resolve().parents[2]
CALL = 2e-6


def _profile(**api: Any) -> profile_module.Profile:
    return profile_module.from_dict({"profile": {"name": "test"}, "api": {"send_call_s": CALL, **api}})


def _ticks(**send: Any) -> dict[str, Any]:
    return {
        "scenario": {"name": "ticks"},
        "socket": [{"name": "push", "type": "PUSH", "bind": "inproc://t"}, {"name": "pull", "type": "PULL", "connect": "inproc://t"}],
        "send": [{"socket": "push", "count": 11, "interval_s": 0.001, **send}],
        "recv": [{"socket": "pull"}],
    }


def _send_times(raw: dict[str, Any], profile: profile_module.Profile) -> np.ndarray:
    result = zsim.run(raw, profile=profile)
    return np.sort(result.messages["t0"])


def test_a_plain_loop_costs_the_call_and_the_interval_only():
    sent = _send_times(_ticks(), _profile())
    assert np.diff(sent) == pytest.approx(np.full(10, CALL + 0.001), rel=1e-12)


def test_loop_cpu_s_adds_the_programs_own_work_to_every_attempt():
    sent = _send_times(_ticks(loop_cpu_s=5e-6), _profile())
    assert np.diff(sent) == pytest.approx(np.full(10, CALL + 5e-6 + 0.001), rel=1e-12)


@pytest.mark.parametrize(("interval", "late"), [(0.0002, 50e-6), (0.001, 60e-6), (0.05, 130e-6), (1.0, 150e-6)])
def test_a_sleeping_wait_is_late_by_the_machines_sleep_of_the_nearest_length(interval, late):
    # constant lateness per table, so the period is exact: the table nearest in ratio
    tables = [{"wait_s": 0.0001, "dist": "constant", "value_s": 50e-6},
              {"wait_s": 0.001, "dist": "constant", "value_s": 60e-6},
              {"wait_s": 0.01, "dist": "constant", "value_s": 100e-6},
              {"wait_s": 0.1, "dist": "constant", "value_s": 130e-6},
              {"wait_s": 1.0, "dist": "constant", "value_s": 150e-6}]
    profile = _profile(sleep_late_s=tables, timer_jitter_s=1e-6)
    sent = _send_times(_ticks(interval_s=interval), profile)
    assert np.diff(sent) == pytest.approx(np.full(10, CALL + interval + late), rel=1e-12)
    # a program that spins the end of its waits is late by the precise wait's lateness
    spun = _send_times(_ticks(interval_s=interval, wait_spin_s=0.0005), profile)
    assert np.diff(spun) == pytest.approx(np.full(10, CALL + interval + 1e-6), rel=1e-12)


def test_the_shipped_profile_holds_the_machine_only():
    shipped = profile_module.load("default")
    assert [wait for wait, _ in shipped.sleep_late] == [0.0001, 0.001, 0.01, 0.1]
    medians = [float(np.median(dist.values)) for _, dist in shipped.sleep_late]
    assert medians == sorted(medians) and 20e-6 < medians[0] < medians[-1] < 1e-3  # a longer sleep wakes later
    text = (ROOT / "zsim" / "profiles" / "default.toml").read_text()
    assert "send_loop_s =" not in text and "recv_loop_s =" not in text


def test_an_old_profile_with_the_harness_loop_is_refused_in_one_line():
    with pytest.raises(ScenarioError, match=r"^api.send_loop_s: not a machine figure: .*loop_cpu_s.*delete this line$"):
        profile_module.from_dict({"profile": {"name": "old"}, "api": {"send_loop_s": 1.4e-6}})


def test_the_workloads_of_one_socket_wait_one_way():
    raw = _ticks(wait_spin_s=0.0005)
    raw["socket"][0]["type"] = "DEALER"
    raw["socket"][1]["type"] = "DEALER"
    raw["recv"] = [{"socket": "push", "wait_spin_s": 0.0}, {"socket": "pull"}]
    with pytest.raises(ScenarioError, match=r"^recv\[push\].wait_spin_s: 0 differs from send\[push\]'s 0.0005: the workloads of "
                                            r"socket 'push' run in one thread, which waits one way$"):
        spec.from_dict(raw)


def test_the_harness_declares_its_own_loop_and_only_to_what_it_validates(tmp_path):
    from validation import harness_program

    declared = tmp_path / "harness.toml"
    declared.write_text("[loop]\nsend_cpu_s = 1e-6\nrecv_cpu_s = 3e-6\n")
    raw = _ticks(loop_cpu_s=5e-6)
    scenario = harness_program.declare(spec.from_dict(raw), declared)
    assert [s.loop_cpu_s for s in scenario.sends] == [pytest.approx(6e-6, rel=1e-12)]
    assert [r.loop_cpu_s for r in scenario.recvs] == [pytest.approx(3e-6, rel=1e-12)]
    assert spec.from_dict(raw).sends[0].loop_cpu_s == 5e-6  # the scenario itself is untouched
    # the file in the repository is the measured one, and sane
    send_cpu, recv_cpu = harness_program.loop_costs()
    assert 0 < send_cpu < 1e-4 and 0 < recv_cpu < 1e-4
    bad = tmp_path / "bad.toml"
    bad.write_text("[loop]\nsend_cpu_s = -1\nrecv_cpu_s = 0\n")
    with pytest.raises(ScenarioError, match=r"loop.send_cpu_s: must be a number of seconds in \[0, 1\), got -1"):
        harness_program.loop_costs(bad)


def test_zsim_never_reads_the_harness_declaration():
    # the defaults describe a plain program: no module of zsim names the harness's file
    for path in (ROOT / "zsim").rglob("*.py"):
        assert "harness-program" not in path.read_text() and "harness_program" not in path.read_text(), path
