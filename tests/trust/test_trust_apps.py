"""Code named by a scenario or sweep file runs only when the user says so (issue 27, part 1).

Every case feeds a file that names Python code which, if it ran, would create a marker
file; it asserts the one-line outcome, that the marker does not appear, and that nothing
outside the folder the user named changed."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

import zsim
from untrusted import evil_code, one_line, scenario_text, snapshot
from zsim.cli import main
from zsim.sweep import run_sweep
from zsim.sweep.worker import run_task

REFUSED = ("zsim: app[f].function: runs Python code from 'evil.py'; zsim runs a scenario's code only with --allow-apps "
           "(or ZSIM_ALLOW_APPS=1)")


@pytest.fixture(autouse=True)
def no_env_permission(monkeypatch):
    monkeypatch.delenv("ZSIM_ALLOW_APPS", raising=False)


def study(tmp_path: Path, function: str = "evil.py:f", code: bool = True) -> tuple[Path, Path]:
    """``study/s.toml`` naming ``function``, ``study/evil.py``; the marker path."""
    folder = tmp_path / "study"
    folder.mkdir()
    marker = tmp_path / "MARKER"
    if code:
        (folder / "evil.py").write_text(evil_code(marker))
    (folder / "s.toml").write_text(scenario_text(apps=[function]))
    return folder / "s.toml", marker


def test_run_refuses_a_scenario_that_names_code_without_the_opt_in(tmp_path, capsys):
    path, marker = study(tmp_path)
    before = snapshot(tmp_path)
    out = tmp_path / "out"
    assert one_line(capsys, ["run", str(path), "--out", str(out), "--report", str(tmp_path / "rep")], 2) == REFUSED
    assert not marker.exists()
    assert snapshot(tmp_path) == before  # not even the output folders were created


@pytest.mark.parametrize("command", [["explain"], ["run", "--json"]])
def test_every_command_that_runs_refuses(tmp_path, capsys, command):
    path, marker = study(tmp_path)
    assert one_line(capsys, [command[0], str(path), *command[1:]], 2) == REFUSED
    assert not marker.exists()


def test_allow_apps_runs_it_and_says_which_file_first(tmp_path, capsys):
    path, marker = study(tmp_path)
    assert main(["run", str(path), "--allow-apps"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [f"zsim: running app code from {(path.parent / 'evil.py').resolve()} (function f), as --allow-apps allows"]
    assert marker.read_text() == "ran"


def test_the_environment_variable_allows_it_for_batch_use(tmp_path, capsys, monkeypatch):
    path, marker = study(tmp_path)
    monkeypatch.setenv("ZSIM_ALLOW_APPS", "1")
    assert main(["run", str(path)]) == 0
    assert "as ZSIM_ALLOW_APPS=1 allows" in capsys.readouterr().err
    assert marker.read_text() == "ran"


def test_a_value_of_the_variable_that_is_not_yes_or_no_is_refused(tmp_path, capsys, monkeypatch):
    path, marker = study(tmp_path)
    monkeypatch.setenv("ZSIM_ALLOW_APPS", "please")
    line = one_line(capsys, ["run", str(path)], 2)
    assert line == "zsim: ZSIM_ALLOW_APPS: must be 1 (run the code scenarios name) or 0, got 'please'"
    assert not marker.exists()


def test_a_file_outside_the_scenarios_folder_is_refused_even_with_allow_apps(tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    marker = tmp_path / "MARKER"
    (elsewhere / "evil.py").write_text(evil_code(marker))
    path, _ = study(tmp_path, "../elsewhere/evil.py:f", code=False)
    before = snapshot(tmp_path)
    line = one_line(capsys, ["run", str(path), "--allow-apps"], 2)
    assert line.startswith("zsim: app[f].function: '../elsewhere/evil.py' is ") and "outside" in line
    assert "--allow-apps-from DIR" in line
    assert not marker.exists() and snapshot(tmp_path) == before
    # an absolute path too
    path.write_text(scenario_text(apps=[f"{elsewhere / 'evil.py'}:f"]))
    line = one_line(capsys, ["run", str(path), "--allow-apps"], 2)
    assert "is an absolute path, outside" in line and not marker.exists()
    # the folder named by --allow-apps-from is allowed, and said so
    assert main(["run", str(path), "--allow-apps-from", str(elsewhere)]) == 0
    assert f"as --allow-apps-from {elsewhere.resolve()} allows" in capsys.readouterr().err
    assert marker.read_text() == "ran"


def test_a_symlink_out_of_the_folder_is_followed_and_refused(tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    marker = tmp_path / "MARKER"
    (elsewhere / "evil.py").write_text(evil_code(marker))
    path, _ = study(tmp_path, "evil.py:f", code=False)
    (path.parent / "evil.py").symlink_to(elsewhere / "evil.py")
    line = one_line(capsys, ["run", str(path), "--allow-apps"], 2)
    assert str((elsewhere / "evil.py").resolve()) in line and "outside" in line
    assert not marker.exists()


def test_a_module_is_installed_code_and_needs_the_opt_in(tmp_path, capsys):
    path, marker = study(tmp_path, "antigravity:f", code=False)  # importing it would open a web browser
    line = one_line(capsys, ["run", str(path)], 2)
    assert line == ("zsim: app[f].function: imports the Python module 'antigravity'; zsim runs a scenario's code only with "
                    "--allow-apps (or ZSIM_ALLOW_APPS=1)")
    line = one_line(capsys, ["run", str(path), "--allow-apps-from", str(tmp_path)], 2)
    assert "a module needs --allow-apps" in line


def test_python_api_needs_allow_apps_for_a_scenarios_code_not_for_its_own(tmp_path):
    path, marker = study(tmp_path)
    with pytest.raises(zsim.ScenarioError, match=r"^app\[f\]\.function: runs Python code from 'evil\.py'; .* allow_apps=True$"):
        zsim.run(path)
    raw = zsim.load(path).raw
    with pytest.raises(zsim.ScenarioError, match="allow_apps=True"):
        zsim.run(dict(raw))  # a dict: relative to the working folder, refused all the same
    assert not marker.exists()
    assert zsim.run_safe(path)["ok"] is False and not marker.exists()
    calls = []
    plain = zsim.load(path)
    assert zsim.run(path, allow_apps=True).summary["ledger"]["sent"] == 20
    assert marker.read_text() == "ran"
    # the caller's own functions are its own code: no opt-in
    raw = dict(plain.raw)
    raw.pop("app")
    zsim.run(raw, apps=[lambda app: calls.append(app.name)])
    assert calls == ["<lambda>"]


def test_validate_runs_no_app_code_and_says_so_first(tmp_path, capsys):
    path, marker = study(tmp_path)
    line = one_line(capsys, ["validate", str(path)], 2)
    assert line.startswith("zsim: app[f].function: the real-pyzmq harness runs the scenario's [[send]]/[[recv]] workloads only")
    assert not marker.exists()


# -- sweeps and comparisons: the workers run only what the driver allowed ------------------


def sweep_file(tmp_path: Path, marker: Path) -> Path:
    folder = tmp_path / "study"
    folder.mkdir(exist_ok=True)
    (folder / "evil.py").write_text(evil_code(marker))
    base = scenario_text().replace("[scenario]", "[base.scenario]").replace("[[socket]]", "[[base.socket]]") \
        .replace("[[send]]", "[[base.send]]").replace("[[recv]]", "[[base.recv]]")
    text = ('[sweep]\nname = "s"\nreplications = 1\n\n[axes]\n"socket.push.options.sndhwm" = [10, 100]\n\n' + base +
            '\n[[base.app]]\nfunction = "evil.py:f"\n')
    (folder / "sweep.toml").write_text(text)
    return folder / "sweep.toml"


def test_a_sweep_whose_base_names_code_is_refused_before_anything_is_written(tmp_path, capsys):
    marker = tmp_path / "MARKER"
    path = sweep_file(tmp_path, marker)
    before = snapshot(tmp_path)
    line = one_line(capsys, ["sweep", str(path), "--engine", "serial", "--out", str(tmp_path / "out")], 2)
    assert line == REFUSED
    assert not marker.exists() and snapshot(tmp_path) == before


def test_a_sweep_with_allow_apps_runs_the_code_in_its_workers(tmp_path, capsys):
    marker = tmp_path / "MARKER"
    path = sweep_file(tmp_path, marker)
    assert main(["sweep", str(path), "--engine", "local", "--workers", "2", "--out", str(tmp_path / "out"), "--allow-apps"]) == 0
    captured = capsys.readouterr()
    assert f"zsim: running app code from {(path.parent / 'evil.py').resolve()} (function f), as --allow-apps allows" in captured.err
    assert "2 runs done now" in captured.out and "0 failed" in captured.out
    assert marker.read_text() == "ran"


def _payload(path: Path, apps: object) -> dict:
    from zsim.sweep.plan import load, plan

    payload = plan(load(path)).worker_payload()
    if apps is not None:
        payload["apps"] = apps
    return payload


def test_a_worker_refuses_code_the_driver_did_not_allow(tmp_path):
    marker = tmp_path / "MARKER"
    path = sweep_file(tmp_path, marker)
    point = next(iter(_payload(path, None)["points"]))
    row = run_task(_payload(path, None), point, 0, 1)  # no permission in the task
    assert row["ok"] is False and "which the driver did not allow" in row["error"] and not marker.exists()
    evil = (path.parent / "evil.py").resolve()
    digest = hashlib.sha256(evil.read_bytes()).hexdigest()
    other = {"granted": [[f"file:{tmp_path / 'other.py'}", digest]], "how": "--allow-apps"}
    row = run_task(_payload(path, other), point, 0, 1)  # permission for another file
    assert row["ok"] is False and "which the driver did not allow" in row["error"] and not marker.exists()
    changed = {"granted": [[f"file:{evil}", "0" * 64]], "how": "--allow-apps"}
    row = run_task(_payload(path, changed), point, 0, 1)  # the file differs from the one allowed
    assert row["ok"] is False and "differs from the file the driver allowed" in row["error"] and not marker.exists()
    granted = {"granted": [[f"file:{evil}", digest]], "how": "--allow-apps"}
    assert run_task(_payload(path, json.loads(json.dumps(granted))), point, 0, 1)["ok"] is True
    assert marker.read_text() == "ran"


def test_run_sweep_from_python_needs_allow_apps(tmp_path):
    marker = tmp_path / "MARKER"
    path = sweep_file(tmp_path, marker)
    with pytest.raises(zsim.ScenarioError, match="allow_apps=True"):
        run_sweep(path, tmp_path / "out", engine="serial", stream=None)
    assert not marker.exists() and not (tmp_path / "out").exists()
    outcome = run_sweep(path, tmp_path / "out", engine="serial", stream=None, allow_apps=True)
    assert outcome.complete and outcome.failed == 0 and marker.read_text() == "ran"


def test_compare_refuses_designs_that_name_code(tmp_path, capsys):
    path, marker = study(tmp_path)
    other = path.parent / "b.toml"
    other.write_text(scenario_text(name="b"))
    before = snapshot(tmp_path)
    line = one_line(capsys, ["compare", str(other), str(path), "--engine", "serial", "-n", "2"], 2)
    assert line.endswith("app[f].function: runs Python code from 'evil.py'; zsim runs a scenario's code only with --allow-apps "
                         "(or ZSIM_ALLOW_APPS=1)")
    assert not marker.exists() and snapshot(tmp_path) == before
    assert main(["compare", str(other), str(path), "--engine", "serial", "-n", "2", "--allow-apps"]) == 0
    assert "zsim: running app code from" in capsys.readouterr().err and marker.read_text() == "ran"


def test_the_example_runs_with_the_opt_in_only(capsys):
    example = Path(__file__).resolve().parents[2] / "examples" / "lru_broker.toml"
    line = one_line(capsys, ["run", str(example)], 2)
    assert line.startswith("zsim: app[broker].function: runs Python code from 'apps/lru_broker.py'")
    assert main(["run", str(example), "--allow-apps", "--json"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [f"zsim: running app code from {example.parent / 'apps' / 'lru_broker.py'} (functions broker, workers, clients), "
                   "as --allow-apps allows"]


def test_the_opt_in_is_not_inherited_from_the_environment_by_python(tmp_path, monkeypatch):
    path, marker = study(tmp_path)
    monkeypatch.setenv("ZSIM_ALLOW_APPS", "1")  # for the command line; Python says so itself
    with pytest.raises(zsim.ScenarioError, match="allow_apps=True"):
        zsim.run(path)
    assert not marker.exists()
    assert os.environ["ZSIM_ALLOW_APPS"] == "1"


@pytest.mark.spark
def test_spark_executors_run_only_what_the_driver_allowed(tmp_path):
    import shutil as _shutil

    if _shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java")
    pytest.importorskip("pyspark")
    from zsim.sweep.spark import SparkEngine

    marker = tmp_path / "MARKER"
    path = sweep_file(tmp_path, marker)
    outcome = run_sweep(path, tmp_path / "out", engine="spark", master="local[1]", stream=None, allow_apps=True)
    assert outcome.complete and outcome.failed == 0 and marker.read_text() == "ran"
    marker.unlink()
    # a task without the driver's permission: the executor refuses, nothing runs
    from zsim.sweep.plan import Task

    payload = _payload(path, None)
    point = next(iter(payload["points"]))
    with SparkEngine(payload, master="local[1]") as engine:
        done = [c for c in engine.run([[Task(point, 0, 1)]]) if c is not None]
    assert done[0].rows is not None and done[0].rows[0]["ok"] is False
    assert "which the driver did not allow" in done[0].rows[0]["error"] and not marker.exists()
