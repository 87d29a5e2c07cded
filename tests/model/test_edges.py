"""Trustworthy edges of ``zsim run``: bad input is one line and exit 2, a failing OS call
one line and exit 1, no input runs without bound, and nothing already written is lost.

Each test feeds the bad input the way a user would (a file, a flag) and asserts the
outcome the CLI decides: the exit status, a single stderr line naming the field or path
and the reason, and what is (not) on disk afterwards.
"""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import zsim
from support import scenario
from zsim import runner
from zsim.cli import main
from zsim.errors import LimitExceeded, ScenarioError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pub_sub_inproc.toml"

PUB = {"name": "pub", "type": "PUB", "bind": "inproc://feed", "options": {"sndhwm": 10}}
SUB = {"name": "sub", "type": "SUB", "connect": "inproc://feed", "options": {"rcvhwm": 10, "subscribe": [""]}}


def _toml(value) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    raise TypeError(value)


def write_scenario(path: Path, raw: dict) -> Path:
    """A scenario dict as a TOML file (enough of TOML for these tests)."""
    lines = []
    for key, value in raw.items():
        if isinstance(value, dict):
            lines.append(f"[{key}]")
            lines += [f"{k} = {_toml(v)}" for k, v in value.items()]
        else:
            for item in value:
                lines.append(f"[[{key}]]")
                lines += [f"{k} = {_toml(v)}" for k, v in item.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def one_line_error(capsys, argv: list[str], status: int) -> str:
    """Run the CLI, check its exit status and that stderr is exactly one ``zsim:`` line."""
    assert main(argv) == status
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "Traceback" not in err[0]
    return err[0]


# -- input files ------------------------------------------------------------------------


def _file(folder: Path, data: bytes) -> Path:
    path = folder / "scenario.toml"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda d: d, "is a folder"),
        (lambda d: Path("/dev/zero"), "is a device"),
        (lambda d: _file(d, b"[scenario]\nname = \"caf\xe9\"\n"), "is not UTF-8"),
        (lambda d: _file(d, b"[scenario]\x00\n"), "NUL byte"),
        (lambda d: _file(d, b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n"), "too deeply"),
        (lambda d: _file(d, b"x = " + b"[" * 40 + b"]" * 40 + b"\n"), "levels deep"),
        (lambda d: d / "missing.toml", "no such file"),
        (lambda d: _file(d, b"#" * (17 * 1024 * 1024)), "bytes"),
    ],
    ids=["folder", "dev-zero", "not-utf8", "nul", "deep-recursion", "deep", "missing", "too-large"],
)
def test_bad_scenario_files_are_one_line_exit_2(tmp_path, capsys, make, reason):
    path = make(tmp_path)
    line = one_line_error(capsys, ["run", str(path)], 2)
    assert line.startswith(f"zsim: {path}: ") and reason in line


@pytest.mark.timeout(20)
def test_a_fifo_is_refused_without_blocking(tmp_path, capsys):
    fifo = tmp_path / "scenario.toml"
    os.mkfifo(fifo)
    line = one_line_error(capsys, ["run", str(fifo)], 2)
    assert "FIFO" in line


def test_a_profile_that_is_a_device_is_refused(tmp_path, capsys):
    path = write_scenario(tmp_path / "s.toml", scenario(PUB, SUB, sends=[{"socket": "pub", "count": 3}], profile="/dev/zero"))
    line = one_line_error(capsys, ["run", str(path)], 2)
    assert line == "zsim: scenario.profile: /dev/zero: is a device, not a profile file"


# -- values libzmq refuses ---------------------------------------------------------------


@pytest.mark.parametrize(
    "change, field, reason",
    [
        (lambda r: r["socket"][0]["options"].update(sndhwm=2**31), "socket[pub].options.sndhwm", "2,147,483,647"),
        (lambda r: r["socket"][1]["options"].update(hwm=2**40), "socket[sub].options.hwm", "C ints"),
        (lambda r: r["socket"][0]["options"].update(linger=2**31), "socket[pub].options.linger", "C ints"),
        (lambda r: r["send"][0].update(size_bytes=1e300), "send[pub].size_bytes", "4 GiB"),
        (lambda r: r["send"][0].update(size_bytes={"dist": "exponential", "mean_bytes": 1e12}), "send[pub].size_bytes.mean_bytes", "4 GiB"),
        (lambda r: r["socket"][0].update(bind="tcp://127.0.0.1:55\u06655") or r["socket"][1].update(connect="tcp://127.0.0.1:55\u06655"),
         "socket[pub].bind[0]", "port number"),
        (lambda r: r["socket"][0].update(bind="inproc://a\x00b"), "socket[pub].bind[0]", "control character"),
        (lambda r: r["socket"][0].update(bind="ipc://" + "x" * 120) or r["socket"][1].update(connect="ipc://" + "x" * 120),
         "socket[pub].bind[0]", "ENAMETOOLONG"),
        (lambda r: r["send"][0].update(size_bytes={"dist": "lognormal", "mean_bytes": 100, "sigma": 1e10}),
         "send[pub].size_bytes.sigma", "<= 10"),
        (lambda r: r.update(limits={"max_events": -1}), "limits.max_events", ">= 0"),
        (lambda r: r.update(limits={"max_wall": 3}), "limits.max_wall", "unknown limit"),
    ],
    ids=["sndhwm-2^31", "hwm-2^40", "linger-2^31", "size-1e300", "size-mean", "port-non-ascii", "nul-endpoint", "ipc-too-long",
         "sigma", "limit-negative", "limit-typo"],
)
def test_values_outside_libzmq_limits_are_refused_at_load(change, field, reason):
    raw = scenario(PUB, SUB, sends=[{"socket": "pub", "count": 3}], recvs=[{"socket": "sub"}])
    change(raw)
    with pytest.raises(ScenarioError) as info:
        zsim.load(raw)
    assert info.value.path == field and reason in info.value.reason


def test_the_largest_c_int_is_accepted():
    raw = scenario(PUB, SUB, sends=[{"socket": "pub", "count": 3}])
    raw["socket"][0]["options"]["sndhwm"] = 2**31 - 1
    assert zsim.load(raw).socket("pub").options.sndhwm == 2**31 - 1


def test_two_sends_on_one_req_socket_are_refused():
    raw = scenario({"name": "req", "type": "REQ", "connect": "inproc://r"}, {"name": "rep", "type": "REP", "bind": "inproc://r"},
                   sends=[{"name": "a", "socket": "req", "count": 2}, {"name": "b", "socket": "req", "count": 2}],
                   recvs=[{"socket": "rep"}])
    with pytest.raises(ScenarioError) as info:
        zsim.load(raw)
    assert info.value.path == "send[b].socket" and "one [[send]]" in info.value.reason


def _pipeline_loop(until_s=None):
    return scenario(
        {"name": "a", "type": "PUSH", "bind": "inproc://a"}, {"name": "b", "type": "PULL", "connect": "inproc://a"},
        {"name": "c", "type": "PUSH", "connect": "inproc://c"}, {"name": "d", "type": "PULL", "bind": "inproc://c"},
        sends=[{"socket": "a", "count": 1}],
        recvs=[{"socket": "b", "forward_to": "c", "service_s": 0.001}, {"socket": "d", "forward_to": "a", "service_s": 0.001}],
        until_s=until_s,
    )


def test_a_forwarding_cycle_without_a_horizon_is_refused():
    with pytest.raises(ScenarioError) as info:
        zsim.load(_pipeline_loop())
    assert info.value.path in ("recv[b].forward_to", "recv[d].forward_to")
    assert "b -> d -> b" in info.value.reason or "d -> b -> d" in info.value.reason
    assert "until_s" in info.value.reason


def test_a_forwarding_cycle_with_a_horizon_runs_and_ends():
    summary = zsim.run(_pipeline_loop(until_s=0.1), 1).summary
    # one message goes round the loop every 2 ms of service: about 50 passes in 0.1 s
    assert 45 <= summary["sockets"]["b"]["received"] <= 51


def test_a_reply_loop_between_two_dealers_is_refused_without_a_horizon():
    raw = scenario({"name": "x", "type": "DEALER", "bind": "inproc://x"}, {"name": "y", "type": "DEALER", "connect": "inproc://x"},
                   sends=[{"socket": "x", "count": 1}], recvs=[{"socket": "x", "reply": True}, {"socket": "y", "reply": True}])
    with pytest.raises(ScenarioError, match="round a loop"):
        zsim.load(raw)


@pytest.mark.parametrize("argv, option", [
    (["--seed", "-1"], "--seed"),
    (["--seed", "x"], "--seed"),
    (["--max-wall-s", "nan"], "--max-wall-s"),
    (["--max-wall-s", "inf"], "--max-wall-s"),
    (["--max-events", "-5"], "--max-events"),
])
def test_bad_flags_are_one_usage_line(capsys, argv, option):
    with pytest.raises(SystemExit) as info:
        main(["run", str(EXAMPLE), *argv])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("zsim run: error: argument") and option in err[-1]


def test_validate_flags_refuse_nan_timeouts_and_negative_seeds(capsys):
    for argv in (["--timeout", "nan"], ["--timeout", "-1"], ["--seed", "-1"], ["--replications", "0"]):
        with pytest.raises(SystemExit) as info:
            main(["validate", str(EXAMPLE), *argv])
        assert info.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


# -- outputs ------------------------------------------------------------------------------


def test_out_naming_a_file_fails_before_the_run_and_keeps_the_file(tmp_path, capsys):
    target = tmp_path / "results"
    target.write_text("my notes")
    line = one_line_error(capsys, ["run", str(EXAMPLE), "--out", str(target)], 2)
    assert line == f"zsim: {target}: is a file; --out must name a folder (or a path that does not exist yet)"
    assert target.read_text() == "my notes"


def test_out_in_a_read_only_place_fails_before_the_run(capsys):
    line = one_line_error(capsys, ["run", str(EXAMPLE), "--out", "/proc/zsim-out"], 1)
    assert line.startswith("zsim: /proc/zsim-out: cannot be created")


def test_a_failed_run_leaves_earlier_results_in_out(tmp_path, capsys):
    pytest.importorskip("pandas")
    assert main(["run", str(EXAMPLE), "--out", str(tmp_path)]) == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    capsys.readouterr()
    one_line_error(capsys, ["run", str(EXAMPLE), "--out", str(tmp_path), "--max-events", "100"], 2)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_results_are_written_atomically_with_the_usual_mode(tmp_path, capsys):
    pytest.importorskip("pandas")
    assert main(["run", str(EXAMPLE), "--out", str(tmp_path)]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["depth.parquet", "messages.parquet", "summary.json"]  # no temporary files left
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "summary.json").stat().st_mode) == 0o666 & ~umask


# -- bounded work -------------------------------------------------------------------------


def _endless_at_zero_time():
    return scenario(PUB, SUB, sends=[{"socket": "pub", "interval_s": 0, "duration_s": 1.0}], recvs=[{"socket": "sub", "service_s": 0.002}])


@pytest.mark.timeout(120)
def test_a_loop_that_advances_no_time_is_named(capsys, tmp_path):
    raw = _endless_at_zero_time()
    raw["limits"] = {"max_events_at_one_time": 200_000}  # the default, 2,000,000, takes a few seconds
    path = write_scenario(tmp_path / "zero.toml", raw)
    line = one_line_error(capsys, ["run", str(path)], 2)
    assert line.startswith("zsim: send[pub].interval_s: 0 with profile 'ideal' never advances simulated time")


def test_zero_time_sends_with_a_count_are_not_a_loop():
    raw = scenario(PUB, SUB, sends=[{"socket": "pub", "interval_s": 0, "count": 50_000}], recvs=[{"socket": "sub"}])
    limits = runner.RunLimits(max_events_at_one_time=20_000)
    summary = zsim.run(raw, 1, limits=limits).summary
    assert summary["sockets"]["pub"]["sent"] == 50_000


def test_a_zero_time_forwarding_loop_is_named():
    raw = _pipeline_loop(until_s=1.0)
    for recv in raw["recv"]:
        recv["service_s"] = 0
    with pytest.raises(LimitExceeded) as info:
        zsim.run(raw, 1, limits={"max_events_at_one_time": 50_000})
    assert info.value.path in ("recv[b]", "recv[d]") and "round a loop at zero simulated time" in info.value.reason


@pytest.mark.parametrize("limit, value, words", [
    ("max_events", 50_000, "events (limit 50,000)"),
    ("max_messages", 20_000, "message copies (limit 20,000)"),
])
def test_limits_stop_the_run_and_name_what_drove_it(limit, value, words):
    raw = scenario(PUB, SUB, sends=[{"socket": "pub", "rate_per_s": 1e9, "duration_s": 10.0}], recvs=[{"socket": "sub"}])
    with pytest.raises(LimitExceeded) as info:
        zsim.run(raw, 1, limits={limit: value})
    assert info.value.path == f"limits.{limit}"
    assert words in info.value.reason
    assert "most of it came from send[pub] (rate_per_s = 1000000000.0, duration_s = 10.0)" in info.value.reason
    assert f"--{limit.replace('_', '-')} N" in info.value.reason


def test_the_wall_clock_limit_stops_a_run():
    raw = scenario(PUB, SUB, sends=[{"socket": "pub", "rate_per_s": 1e9, "duration_s": 10.0}], recvs=[{"socket": "sub"}])
    with pytest.raises(LimitExceeded) as info:
        zsim.run(raw, 1, limits={"max_wall_s": 1e-6})
    assert info.value.path == "limits.max_wall_s"


def test_scenario_limits_apply_and_the_caller_overrides_them():
    raw = scenario(PUB, SUB, sends=[{"socket": "pub", "rate_per_s": 1e9, "duration_s": 10.0}], recvs=[{"socket": "sub"}])
    raw["limits"] = {"max_events": 40_000}
    with pytest.raises(LimitExceeded, match="limit 40,000"):
        zsim.run(raw, 1)
    with pytest.raises(LimitExceeded, match="message copies"):
        zsim.run(raw, 1, limits={"max_events": 0, "max_messages": 30_000})


def test_a_run_within_its_limits_is_unchanged():
    raw = scenario(PUB, SUB, sends=[{"socket": "pub", "count": 2000, "interval_s": 0.001}], recvs=[{"socket": "sub", "service_s": 0.002}])
    plain = zsim.run(raw, 3).summary
    tight = zsim.run(raw, 3, limits={"max_events": 100_000, "max_messages": 2000, "max_wall_s": 60}).summary
    for summary in (plain, tight):
        summary.pop("wall_s")
    assert plain == tight


def test_cli_limit_flags_reach_the_run(capsys):
    line = one_line_error(capsys, ["run", str(EXAMPLE), "--max-messages", "100"], 2)
    assert line.startswith("zsim: limits.max_messages: the run created") and "--max-messages N" in line


def test_progress_is_shown_on_a_terminal_for_long_runs(monkeypatch):
    monkeypatch.setattr(runner, "PROGRESS_AFTER_S", 0.0)
    stream = io.StringIO()
    raw = scenario(PUB, SUB, sends=[{"socket": "pub", "rate_per_s": 100_000, "duration_s": 1.0}], recvs=[{"socket": "sub"}])
    zsim.run(raw, 1, progress=stream)
    text = stream.getvalue()
    assert "[test] simulated" in text and "events" in text and text.endswith("\r\033[K")


def test_many_parts_cost_no_more_than_one(capsys):
    raw = scenario(PUB, SUB, sends=[{"socket": "pub", "count": 10, "parts": 10**9, "size_bytes": 1000}], recvs=[{"socket": "sub"}])
    summary = zsim.run(raw, 1).summary
    assert summary["sockets"]["sub"]["received"] == 10


def test_a_tiny_sndbuf_is_raised_to_the_linux_minimum():
    base = {"name": "push", "type": "PUSH", "bind": "tcp://127.0.0.1:5555"}
    pull = {"name": "pull", "type": "PULL", "connect": "tcp://127.0.0.1:5555"}
    results = []
    for snd, rcv in ((1, 1), (2304, 1152)):
        raw = scenario({**base, "options": {"sndbuf": snd}}, {**pull, "options": {"rcvbuf": rcv}},
                       sends=[{"socket": "push", "count": 3, "size_bytes": 65536}], recvs=[{"socket": "pull"}], profile="default")
        results.append(zsim.run(raw, 1).summary)
    # Linux raises SO_SNDBUF = 1 to its minimum: the same run as asking for the minimum
    for key in ("latency_s", "ledger", "links", "pipes"):
        assert results[0][key] == results[1][key], key


def test_an_internal_error_is_one_line_unless_asked(tmp_path):
    """A bug inside zsim: one line and exit 1; ZSIM_TRACEBACK=1 shows the traceback."""
    code = ("import zsim.cli, zsim.runner\n"
            "def boom(*a, **k):\n    raise TypeError('boom')\n"
            "zsim.runner.run = boom\n"
            f"raise SystemExit(zsim.cli.main(['run', {str(EXAMPLE)!r}]))\n")
    env = {k: v for k, v in os.environ.items() if k != "ZSIM_TRACEBACK"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "zsim: internal error (a bug in zsim, please report it with the input): TypeError: boom (ZSIM_TRACEBACK=1 shows where)"]
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**env, "ZSIM_TRACEBACK": "1"}, timeout=60)
    assert "Traceback" in shown.stderr
