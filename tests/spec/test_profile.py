"""Calibration profiles: loading, selection from a scenario, and the fitted kernel still
reproducing the measurements it was fitted to (a guard against model drift: a change to
the transport model that moves these numbers needs a refit, `zsim.calibration.fit_kernel`)."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

import zsim
from zsim import profile as profile_module
from zsim.calibration import simulate_accepted
from zsim.errors import ScenarioError

DEFAULT = Path(profile_module.__file__).parent / "profiles" / "default.toml"


def test_default_profile_records_where_it_was_measured():
    raw = tomllib.loads(DEFAULT.read_text())
    head = raw["profile"]
    for key in ("kernel", "machine", "libzmq", "pyzmq", "measured_on"):
        assert head.get(key), key
    assert head["libzmq"] == "4.3.5"
    profile = profile_module.load("default")
    assert profile.command_throttle_s > 0.0005
    assert profile.transport("tcp").kernel.capacity(12, 10) > 1_000_000


def test_ideal_profile_has_no_time_costs_but_the_same_buffers():
    ideal, default = profile_module.load("ideal"), profile_module.load("default")
    assert ideal.send_call_s == ideal.recv_call_s == ideal.command_throttle_s == 0
    assert ideal.transport("tcp").hop_latency.expected() == 0
    assert ideal.transport("ipc").kernel.capacity(102, 10) == default.transport("ipc").kernel.capacity(102, 10)


CELLS = [("ipc", "kernel", 10, 10), ("ipc", "hwm_1_1", 1, 1), ("ipc", "hwm_100_100", 100, 100), ("tcp", "kernel", 10, 10),
         ("tcp", "hwm_100_100", 100, 100)]


@pytest.mark.parametrize("transport,table,sndhwm,rcvhwm", CELLS)
def test_fitted_kernel_still_reproduces_its_calibration(transport, table, sndhwm, rcvhwm):
    raw = tomllib.loads(DEFAULT.read_text())
    kernel = raw[transport]["kernel"]
    cells = kernel if table == "kernel" else kernel[table]
    profile = profile_module.load("default")
    for size, fitted in zip(cells["payload_bytes"], cells["fitted_accepted"], strict=True):
        if transport == "tcp" and size < 1000:
            continue  # 40k-350k messages per run: covered by the calibration itself
        assert simulate_accepted(profile, transport, size, sndhwm, rcvhwm) == fitted, (transport, table, size)


def test_scenario_selects_a_profile_file_relative_to_itself(tmp_path):
    custom = tmp_path / "slow.toml"
    text = DEFAULT.read_text().replace("command_throttle_s = ", "command_throttle_s = 0.01 # ", 1)
    custom.write_text(text)
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        '[scenario]\nprofile = "slow.toml"\n'
        '[[socket]]\nname = "pub"\ntype = "PUB"\nbind = ["inproc://a"]\noptions = { sndhwm = 1 }\n'
        '[[socket]]\nname = "sub"\ntype = "SUB"\nconnect = ["inproc://a"]\noptions = { rcvhwm = 1, subscribe = [""] }\n'
        '[[send]]\nsocket = "pub"\ncount = 20000\nstart_s = 0.01\n[[recv]]\nsocket = "sub"\n'
    )
    slow = zsim.run(scenario, 1).summary
    assert slow["profile"] == profile_module.load("default").name
    shutil.copy(DEFAULT, custom)
    profile_module._CACHE.clear()
    normal = zsim.run(scenario, 1).summary
    # a publisher that looks at its commands 8 times less often learns of reads later
    assert slow["ledger"]["delivered"] < normal["ledger"]["delivered"]


def test_missing_profile_is_a_clear_error(tmp_path):
    raw = {"scenario": {"profile": "nope.toml"}, "socket": [{"name": "a", "type": "PUB", "bind": ["inproc://x"]}]}
    with pytest.raises(ScenarioError, match="no such profile file"):
        zsim.run(raw, 1)
