"""``zsim run``: exit codes, one-line errors, the JSON contract, Parquet output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from zsim.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pub_sub_inproc.toml"


def test_run_prints_a_table(capsys):
    assert main(["run", str(EXAMPLE), "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "socket" in out and "pub->sub" in out and "latency pooled over all receivers: p50" in out


def test_run_prints_a_line_per_link_direction(capsys):
    assert main(["run", str(ROOT / "examples" / "two_hosts.toml"), "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert "network link direction" in out
    (line,) = [text for text in out.splitlines() if text.startswith("wan dc->branch")]
    # 20 Mbit/s, 10 ms; the feed offers more than the link carries: busy, dropping nothing
    # itself (the PUB's pipes drop), goodput below the rate
    assert "20 Mb/s" in line and "10 ms" in line and " %" in line
    assert any(text.startswith("wan branch->dc") for text in out.splitlines())
    # and each connection's TCP: the two share the link, together near its rate (not evenly: each
    # keeps in the FIFO queue what its own TCP small queues allow, issue 42), 20 ms round trips and more
    rates = []
    for sub in ("sub1", "sub2"):
        (line,) = [text for text in out.splitlines() if text.startswith(f"pub->{sub} (wan dc->branch)")]
        rate, rtt = line.split()[3:5], float(line.split()[5])
        assert rate[1] == "Mb/s" and float(rate[0]) > 2 and rtt >= 20.0
        rates.append(float(rate[0]))
    assert 17 < sum(rates) < 20.1


def test_run_json_has_the_contract_keys(capsys):
    assert main(["run", str(EXAMPLE), "--json", "--seed", "5"]) == 0
    data = json.loads(capsys.readouterr().out)
    for key in ("sent", "send_again", "received", "dropped"):
        assert key in data["sockets"]["pub"]
    for key in ("from", "to", "hwm", "max_depth", "dropped"):
        assert key in data["pipes"][0]
    for key in ("sent", "delivered", "dropped", "discarded", "lost_on_close", "queued_at_end"):
        assert key in data["ledger"]
    for key in ("p50", "p99", "max"):
        assert key in data["latency_s"]
    assert data["seed"] == 5 and data["sim_time_s"] > 0 and data["wall_s"] > 0
    assert data["versions"]["models_libzmq"] == "4.3.5"


def test_same_seed_same_result(capsys):
    main(["run", str(EXAMPLE), "--json", "--seed", "11"])
    first = json.loads(capsys.readouterr().out)
    main(["run", str(EXAMPLE), "--json", "--seed", "11"])
    second = json.loads(capsys.readouterr().out)
    first.pop("wall_s"), second.pop("wall_s")
    assert first == second


def test_out_writes_parquet(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    assert main(["run", str(EXAMPLE), "--out", str(tmp_path)]) == 0
    messages = pd.read_parquet(tmp_path / "messages.parquet")
    depth = pd.read_parquet(tmp_path / "depth.parquet")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert len(messages) == summary["ledger"]["copies"]
    assert (messages["state"] == "dropped").sum() == summary["ledger"]["dropped"]
    delivered = messages[messages["state"] == "delivered"]
    assert delivered["latency_s"].max() == pytest.approx(summary["latency_s"]["max"])
    assert set(depth["pipe_name"]) >= {"pub->sub"}
    pub_sub = depth[depth["pipe_name"] == "pub->sub"]
    assert pub_sub["depth"].max() == next(p["max_depth"] for p in summary["pipes"] if p["name"] == "pub->sub")


@pytest.mark.parametrize(
    "content,expected",
    [
        ('[scenario]\nname = "x"\n[[socket]\nname = "a"\n', "TOML syntax error"),
        ('[[socket]]\nname = "a"\ntype = "PUB"\nbind = ["tcp://*:1"]\noptions = { sndhwm = -5 }\n', "socket[a].options.sndhwm: must be >= "
                                                                                                    "0, got -5"),
        ('[[socket]]\nname = "a"\ntype = "PUB"\nbind = ["inproc://x"]\n[[socket]]\nname = "b"\ntype = "PULL"\nconnect = ["inproc://y"]\n',
         "socket[b].connect[0]: nobody binds inproc://y"),
    ],
)
def test_bad_scenario_exits_2_with_one_line_and_no_traceback(tmp_path, content, expected):
    path = tmp_path / "bad.toml"
    path.write_text(content)
    proc = subprocess.run([sys.executable, "-m", "zsim", "run", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert expected in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_missing_file_exits_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "zsim", "run", str(tmp_path / "nope.toml")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "no such file" in proc.stderr and "Traceback" not in proc.stderr


def test_a_reader_that_goes_away_ends_the_command_quietly(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``zsim run FILE | head -1``: the closed pipe is not an error (it is an OSError, so the
    generic 'a failing OS call' line used to win and say ``zsim: Broken pipe``, exit 1)."""

    class Closed:
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Closed())
    assert main(["run", str(EXAMPLE)]) == 0
    assert capsys.readouterr().err == ""


def test_run_folds_a_big_template_and_shows_its_worst_members_first() -> None:
    """A PUB to 12 subscribers of one template over tcp on one core: one socket row for the
    template, its worst 3 receivers (by loss, then p99) and one line for the other 9, one
    row per pipe kind, thread and link direction of the members, and one warning per
    template and code (issue 30: 50 subscribers printed ~500 lines)."""
    from zsim.cli import format_summary
    from zsim.runner import run
    from zsim.spec import from_dict

    raw = {
        "scenario": {"name": "t", "until_s": 1.0},
        "process": [{"name": "src"}, {"name": "r{i}", "count": 12}],
        "socket": [
            {"name": "pub", "type": "PUB", "process": "src", "bind": "tcp://*:5556", "options": {"sndhwm": 20}},
            {"name": "sub{i}", "type": "SUB", "process": "r", "connect": "tcp://127.0.0.1:5556",
             "options": {"subscribe": "", "rcvhwm": 20}},
        ],
        "send": [{"socket": "pub", "rate_per_s": 2000, "start_s": 0.05, "size_bytes": 100}],
        "recv": [{"socket": "sub", "service_s": 0.0001}],
        "machine": {"cores": 1},
    }
    scenario = from_dict(raw)
    summary = run(raw, 0).summary
    text = format_summary(summary, scenario)
    lines = text.splitlines()
    assert sum(line.startswith("sub") and line.split()[0] in {f"sub{i}" for i in range(12)} for line in lines) == 3
    socket_row = next(line for line in lines if line.startswith("sub{i} x12"))
    assert int(socket_row.split()[5]) == sum(summary["sockets"][f"sub{i}"]["received"] for i in range(12))
    receivers = lines[lines.index(next(line for line in lines if line.startswith("receiver  "))) + 2:]
    worst = sorted((f"sub{i}" for i in range(12)),
                   key=lambda n: (-summary["sockets"][n]["inbound"]["loss_fraction"], -summary["sockets"][n]["latency_s"]["p99"]))
    assert [line.split()[0] for line in receivers[:3]] == worst[:3]
    assert receivers[3].startswith("  ... 9 more of sub{i}, none worse: loss ")
    assert any(line.startswith("pub->sub{i} (tcp send) x12") for line in lines)
    assert any(line.startswith("io.r{i} x12") for line in lines)
    assert any(line.startswith("pub->sub{i} x12") for line in lines)  # the link table
    assert sum(line.startswith("warning [cpu_contention] thread[io.r{i}]: all 12 members") for line in lines) == 1
    assert not any("thread[io.r3]" in line for line in lines)


def test_run_prints_a_line_per_receiving_template_with_its_worst_member() -> None:
    """Four subscribers made by one template, one of them slow: the template's line sums
    the members' copies and names the worst member's loss and the spread of their p99."""
    from zsim.cli import format_summary
    from zsim.runner import run

    scenario = {
        "scenario": {"name": "t", "profile": "ideal"},
        "socket": [
            {"name": "pub", "type": "PUB", "bind": "inproc://feed", "options": {"sndhwm": 10}},
            {"name": "sub{i}", "count": 4, "type": "SUB", "connect": "inproc://feed", "options": {"subscribe": "", "rcvhwm": 10}},
        ],
        "send": [{"socket": "pub", "count": 1000, "interval_s": 0.001, "start_s": 0.01}],
        # a reader per member, sub3 four times slower than the rest
        "recv": [{"socket": f"sub{i}", "service_s": 0.002 if i == 3 else 0.0005} for i in range(4)],
    }
    summary = run(scenario, 0).summary
    text = format_summary(summary)
    line = next(line for line in text.splitlines() if line.startswith("sub{i}"))
    members = [summary["sockets"][f"sub{i}"] for i in range(4)]
    fields = line.split()
    assert fields[1] == "4"
    assert int(fields[2]) == sum(m["inbound"]["copies"] for m in members) == 4000
    assert int(fields[3]) == sum(m["inbound"]["delivered"] for m in members)
    assert int(fields[4]) == sum(m["inbound"]["dropped"] for m in members) > 0
    worst = max(m["inbound"]["loss_fraction"] for m in members)
    assert worst == members[3]["inbound"]["loss_fraction"] > 0.4
    assert fields[7] == f"{100 * worst:.2f}"
    p99 = [m["latency_s"]["p99"] for m in members]
    assert line.endswith(f"{1e3 * min(p99):.3f} .. {1e3 * max(p99):.3f}")


def test_validate_and_calibrate_come_from_validations_entry_point(capsys):
    """``zsim validate``/``calibrate`` are added by validation itself (the ``zsim.commands``
    entry point of pyproject.toml): the installed console script still has them."""
    from importlib.metadata import entry_points

    from zsim.cli import COMMANDS_GROUP, build_parser

    assert {point.value for point in entry_points(group=COMMANDS_GROUP)} == {"validation.cli:register"}
    import validation.cli

    parser = build_parser()
    assert parser.parse_args(["validate", "s.toml", "-n", "2"]).func is validation.cli.cmd_validate
    assert parser.parse_args(["calibrate", "--quick"]).func is validation.cli.cmd_calibrate
    for command in ("validate", "calibrate"):
        done = subprocess.run([sys.executable, "-m", "zsim", command, "--help"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and f"usage: zsim {command}" in done.stdout, done.stderr


def test_zsim_imports_nothing_of_validation_not_even_by_name():
    """lint-imports sees ``import`` statements; a module named in a string (importlib) it
    does not: neither may name validation."""
    import ast
    import re

    module_path = re.compile(r"validation(\.\w+)*(:\w+)?")
    found = []
    for path in sorted((ROOT / "zsim").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and module_path.fullmatch(node.value):
                names = [node.value] if node.value != "validation" else []  # a TOML table's name, not a module
            found += [f"{path.relative_to(ROOT)}:{node.lineno}: {name}" for name in names if module_path.fullmatch(name)]
    assert not found


def test_set_changes_the_scenario_of_run_and_explain(capsys):
    # issue 30: run, explain and the run report had no --set; the paths are those of sweeps and compare --vary
    assert main(["run", str(EXAMPLE), "--json", "--set", "socket.pub.options.sndhwm=7", "--set", "scenario.until_s=0.25"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sim_time_s"] <= 0.25
    assert {pipe["hwm"] for pipe in data["pipes"] if pipe["from"] == "pub"} == {7 + 10}  # inproc: SNDHWM + the SUB's RCVHWM
    assert main(["explain", str(EXAMPLE), "--json", "--set", "scenario.until_s=0.25"]) == 0
    json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("change", "expected"), [
    ("socket.pub.options.sndhwm=-5", "zsim: --set socket.pub.options.sndhwm: socket[pub].options.sndhwm: must be >= 0, got -5"),
    ("socket.nope.options.sndhwm=5", "zsim: --set socket.nope.options.sndhwm: no [[socket]] entry named 'nope'"),
    ("sndhwm", "zsim: --set: expected PATH=VALUE (e.g. socket.pub.options.sndhwm=5000), got 'sndhwm'"),
])
@pytest.mark.parametrize("command", ["run", "explain", "export", "validate"])
def test_a_bad_set_is_one_line_naming_its_path(capsys, tmp_path, command, change, expected):
    # issue 41: every command that takes a scenario takes --set, with the same checks
    extra = ["--pyzmq", str(tmp_path / "p.py")] if command == "export" else []
    assert main([command, str(EXAMPLE), *extra, "--set", change]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == expected and captured.out == ""
    assert not (tmp_path / "p.py").exists()


def test_export_and_validate_take_the_design_set_on_the_command_line(capsys, tmp_path, monkeypatch):
    # issue 41, finding 5: the chosen design could not be carried on: export and validate had no --set
    assert main(["export", str(EXAMPLE), "--pyzmq", str(tmp_path / "p.py"), "--set", "socket.pub.options.sndhwm=7",
                 "--set", "send.pub.count=12"]) == 0
    program = (tmp_path / "p.py").read_text()
    assert "sock.setsockopt(zmq.SNDHWM, 7)" in program and "for _ in range(12):" in program
    assert "pub_sub_inproc.toml --set socket.pub.options.sndhwm=7 --set send.pub.count=12" in " ".join(program.split())

    import validation.compare

    seen = []

    def validate(scenario, **kwargs):  # the design validate would run on both sides
        seen.append(scenario)
        raise KeyboardInterrupt

    monkeypatch.setattr(validation.compare, "validate", validate)
    assert main(["validate", str(EXAMPLE), "--set", "socket.pub.options.sndhwm=7", "--set", "send.pub.count=12"]) == 130
    [scenario] = seen
    assert scenario.socket("pub").options.sndhwm == 7 and scenario.sends[0].count == 12


def test_sweep_and_compare_take_jobs_and_sweep_still_takes_workers():
    from zsim.cli import build_parser

    parser = build_parser()
    for command in (["sweep", "s.toml"], ["compare", "a.toml", "b.toml"]):
        assert parser.parse_args([*command, "--jobs", "3"]).jobs == 3
    assert parser.parse_args(["sweep", "s.toml", "--workers", "2"]).jobs == 2  # the old name, unlisted
    sweep_help = subprocess.run([sys.executable, "-m", "zsim.cli", "sweep", "--help"], capture_output=True, text=True, timeout=60).stdout
    assert "--jobs N" in sweep_help and "--workers" not in sweep_help
