"""Apps are sandboxed in time and failure (issue 27, part 3): an app that keeps the thread
is stopped by the run's limits (a watchdog), and whatever an app's code does (raise,
yield something that is not an event, call env.run, sys.exit, raise a BaseException) ends
the run with one line naming the app, its function and the reason, exit status 2; what an
earlier run wrote stays whole."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import zsim
from untrusted import scenario_text
from zsim.cli import main


def app_scenario(tmp_path: Path, body: str, top: str = "", start: str = "") -> Path:
    """``s.toml`` with one app ``f`` in ``evil.py`` whose process waits 0.1 s then runs ``body``."""
    (tmp_path / "evil.py").write_text(
        f"import sys, time\n{top}\n\ndef f(app):\n    {start or 'pass'}\n\n    def loop():\n        yield app.env.timeout(0.1)\n"
        + "".join(f"        {line}\n" for line in body.splitlines()) + "\n    app.process(loop())\n")
    path = tmp_path / "s.toml"
    path.write_text(scenario_text(apps=["evil.py:f"]))
    return path


def outcome(capsys, argv: list[str]) -> tuple[int, str]:
    """Exit status and the one stderr line after the announcement of the app's file."""
    code = main(argv)
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("zsim: running app code")]
    assert len(err) == 1, err
    assert "Traceback" not in err[0]
    return code, err[0]


@pytest.mark.parametrize("body", ["while True:\n    pass", "time.sleep(1e6)"])
def test_an_app_that_never_yields_is_stopped_by_the_wall_clock_limit(tmp_path, capsys, body):
    path = app_scenario(tmp_path, body)
    started = time.perf_counter()
    code, line = outcome(capsys, ["run", str(path), "--allow-apps", "--max-wall-s", "1"])
    assert time.perf_counter() - started < 30
    assert code == 2
    assert line.startswith("zsim: limits.max_wall_s: the run took ")
    assert "app[f] kept the run's thread without giving the event loop control back (at evil.py:" in line
    assert "app function f" in line and "--max-wall-s N" in line


def test_an_app_that_catches_every_interruption_ends_the_process_with_one_line(tmp_path):
    # the last resort of the command line (zsim.limits.LAST_RESORT): in a process of its own
    body = "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass"
    path = app_scenario(tmp_path, body)
    done = subprocess.run([sys.executable, "-m", "zsim", "run", str(path), "--allow-apps", "--max-wall-s", "0.5"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    err = [line for line in done.stderr.splitlines() if not line.startswith("zsim: running app code")]
    assert len(err) == 1 and err[0].startswith("zsim: limits.max_wall_s: the run took ")
    assert "app[f]" in err[0] and "(the code caught every interruption and went on: zsim ended the process)" in err[0]


def test_the_python_api_stops_it_too(tmp_path):
    path = app_scenario(tmp_path, "while True:\n    pass")
    with pytest.raises(zsim.LimitExceeded, match=r"^limits\.max_wall_s: .* app\[f\] kept the run's thread"):
        zsim.run(path, allow_apps=True, limits={"max_wall_s": 0.5})


def test_an_app_function_that_loops_before_time_0_and_a_module_that_loops_at_import(tmp_path, capsys):
    path = app_scenario(tmp_path, "pass", start="while True: pass")
    code, line = outcome(capsys, ["run", str(path), "--allow-apps", "--max-wall-s", "0.5"])
    assert code == 2 and line.startswith("zsim: limits.max_wall_s:") and "app[f]" in line
    path = app_scenario(tmp_path, "pass", top="while True: pass")
    code, line = outcome(capsys, ["run", str(path), "--allow-apps", "--max-wall-s", "0.5"])
    assert code == 2 and line.startswith("zsim: limits.max_wall_s:") and "app[f]" in line


def test_sends_in_a_loop_without_yield_are_stopped_by_the_message_limit(tmp_path, capsys):
    path = app_scenario(tmp_path, "while True:\n    app.socket('push').send(1)")
    code, line = outcome(capsys, ["run", str(path), "--allow-apps", "--max-messages", "2000", "--max-wall-s", "60"])
    assert code == 2 and line.startswith("zsim: limits.max_messages:") and "app[f]" in line


@pytest.mark.parametrize(("body", "reason"), [
    ("raise KeyError('k')", "KeyError: 'k' (at evil.py:9 in loop, app function f)"),
    ("yield 42", "yielded 42, which is not a SimPy event (at evil.py:9 in loop): yield a socket call"),
    ("yield app.env.run(until=1)", "called env.run(...) from inside the model (at evil.py:9 in loop, app function f)"),
    ("app.env.step()", "called env.step(...) from inside the model (at evil.py:9 in loop, app function f)"),
    ("sys.exit(0)", "SystemExit: the app called sys.exit(0); an app ends by returning"),
    ("sys.exit()", "SystemExit: the app called sys.exit(None)"),
    ("class Odd(BaseException):\n    pass\nraise Odd('odd')", "Odd: odd (at evil.py:11 in loop, app function f)"),
    ("raise GeneratorExit", "GeneratorExit (at evil.py:9 in loop, app function f)"),
])
def test_whatever_an_app_does_ends_the_run_with_one_line(tmp_path, capsys, body, reason):
    path = app_scenario(tmp_path, body)
    code, line = outcome(capsys, ["run", str(path), "--allow-apps"])
    assert code == 2
    assert line.startswith("zsim: app[f]: ") and reason in line, line


def test_failures_outside_app_process_are_named_too(tmp_path, capsys):
    # the app function itself raises SystemExit; a process the app starts with env.process
    # (not app.process) raises; one yields a non-event
    path = app_scenario(tmp_path, "pass", start="sys.exit(3)")
    code, line = outcome(capsys, ["run", str(path), "--allow-apps"])
    assert code == 2 and line.startswith("zsim: app[f]: SystemExit: the app called sys.exit(3)")
    (tmp_path / "evil.py").write_text("def f(app):\n    def raw():\n        yield app.env.timeout(0.1)\n        raise ValueError('raw')\n"
                                      "    app.env.process(raw())\n")
    code, line = outcome(capsys, ["run", str(path), "--allow-apps"])
    assert code == 2 and line.startswith("zsim: app[f]: ValueError: raw (at evil.py:4 in raw, app function f)")
    (tmp_path / "evil.py").write_text("def f(app):\n    def raw():\n        yield 'x'\n    app.env.process(raw())\n")
    code, line = outcome(capsys, ["run", str(path), "--allow-apps"])
    assert code == 2 and line.startswith('zsim: app[f]: yielded "x"') and "which is not a SimPy event" in line
    (tmp_path / "evil.py").write_text("import sys\nsys.exit(0)\n")
    code, line = outcome(capsys, ["run", str(path), "--allow-apps"])
    assert code == 2 and line.startswith("zsim: app[f].function: cannot import 'evil.py': SystemExit: the app called sys.exit(0)")


def test_a_failing_app_leaves_what_an_earlier_run_wrote_whole(tmp_path, capsys):
    path = app_scenario(tmp_path, "yield app.env.timeout(1)")
    out = tmp_path / "out"
    assert main(["run", str(path), "--allow-apps", "--out", str(out), "--report", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    for body in ("sys.exit(0)", "while True:\n    pass"):
        path = app_scenario(tmp_path, body)
        code, _ = outcome(capsys, ["run", str(path), "--allow-apps", "--out", str(out), "--report", str(out), "--max-wall-s", "0.5"])
        assert code == 2
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.py", "out", "s.toml"]


def test_a_sweep_row_records_the_app_failure_and_the_sweep_goes_on(tmp_path, capsys):
    (tmp_path / "evil.py").write_text("import sys\n\ndef f(app):\n    def loop():\n        yield app.env.timeout(0.1)\n"
                                      "        if app.socket('push')._sock.options.sndhwm == 10:\n            sys.exit(0)\n"
                                      "    app.process(loop())\n")
    base = scenario_text(apps=["evil.py:f"])
    for table in ("scenario", "socket", "send", "recv", "app"):
        base = base.replace(f"[[{table}]]", f"[[base.{table}]]").replace(f"[{table}]", f"[base.{table}]")
    (tmp_path / "sweep.toml").write_text('[sweep]\nname = "s"\nreplications = 1\n\n[axes]\n"socket.push.options.sndhwm" = [10, 100]\n\n'
                                         + base)
    assert main(["sweep", str(tmp_path / "sweep.toml"), "--engine", "serial", "--out", str(tmp_path / "out"), "--allow-apps"]) == 0
    out = capsys.readouterr().out
    assert "2 runs done now, 0 were already done, 1 failed" in out
    assert "app[f]: SystemExit: the app called sys.exit(0)" in out


def test_the_watchdog_does_not_touch_a_run_that_keeps_going(tmp_path):
    path = app_scenario(tmp_path, "for _ in range(2000):\n    yield app.env.timeout(0.001)")
    summary = zsim.run(path, allow_apps=True, limits={"max_wall_s": 30}).summary
    assert summary["ok"] is True
    assert json.dumps(summary)  # a normal summary
