"""Outputs stay where the user put them, whole (issue 27, part 2): names from saved
manifests stay inside --out, an output is never an input, the set of --out files is
replaced as a set, a killed writer's leftovers are cleaned up, a full disk names the path."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from untrusted import one_line, scenario_text, snapshot
from zsim import files
from zsim.cli import main
from zsim.sweep import run_sweep

SET = ("messages.parquet", "depth.parquet", "summary.json")


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def scenario_file(folder: Path, name: str = "s.toml", count: int = 20) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(scenario_text().replace("count = 20", f"count = {count}"))
    return path


# -- zsim report: names from a saved manifest -----------------------------------------------


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A finished two-point sweep, its manifest's report settings the only ones (no sweep file)."""
    raw = {"sweep": {"name": "s", "replications": 1}, "axes": {"socket.push.options.sndhwm": [10, 100]},
           "base": files.parse_toml(scenario_text(), "base")}
    out = tmp_path / "results"
    run_sweep(raw, out, engine="serial", stream=None)
    return out


def _set_report(results: Path, report: dict) -> None:
    path = results / "sweep=s" / "_sweep.json"
    manifest = json.loads(path.read_text())
    manifest["report"] = report
    manifest["source"], manifest["source_path"] = "<dict>", None
    path.write_text(json.dumps(manifest))


@pytest.mark.parametrize("name", ["../../PWNED.png", "/tmp/PWNED.png", "..", ".hidden.png", "a\x1b[2Jb.png", "x/../../PWNED.png"])
def test_report_refuses_a_figure_name_that_is_not_a_plain_file_name(tmp_path, results, capsys, name):
    _set_report(results, {"figure": [{"kind": "line", "x": "socket.push.options.sndhwm", "y": "delivered", "file": name}]})
    out = tmp_path / "out"
    before = snapshot(tmp_path)
    line = one_line(capsys, ["report", str(results), "--out", str(out)], 2)
    assert line.startswith(f"zsim: {results / 'sweep=s'}: no report: report.figure[0].file: must be a plain file name")
    assert not list(tmp_path.parent.rglob("PWNED.png")) and not Path("/tmp/PWNED.png").exists()
    after = snapshot(tmp_path, skip=[out])
    assert {k: v for k, v in after.items() if not k.startswith("out")} == before
    assert not [p for p in out.rglob("*") if p.is_file()]  # nothing written, not even points.csv


def test_report_with_a_plain_figure_name_writes_it_inside_out(tmp_path, results, capsys):
    _set_report(results, {"figure": [{"kind": "line", "x": "socket.push.options.sndhwm", "y": "delivered", "file": "mine.png"}]})
    assert main(["report", str(results), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "s" / "mine.png").stat().st_size > 1000


def test_report_refuses_a_sweep_folder_whose_name_climbs_out(tmp_path, results, capsys):
    (results / "sweep=s").rename(results / "sweep=..")
    out = tmp_path / "deep" / "out"
    line = one_line(capsys, ["report", str(results), "--out", str(out)], 2)
    assert "'..' is not a sweep name zsim writes" in line
    assert not (tmp_path / "deep" / "points.csv").exists() and not list(tmp_path.rglob("points.csv"))


def test_report_refuses_a_default_report_folder_that_links_elsewhere(tmp_path, results, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (results / "report").symlink_to(elsewhere)
    line = one_line(capsys, ["report", str(results)], 2)
    assert "outside the results folder" in line
    assert not list(elsewhere.iterdir())


def test_report_files_replace_links_rather_than_write_through_them(tmp_path, results, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / "out" / "s").mkdir(parents=True)
    (tmp_path / "out" / "s" / "summary.md").symlink_to(victim)
    assert main(["report", str(results), "--out", str(tmp_path / "out")]) == 0
    assert victim.read_text() == "keep me"
    assert not (tmp_path / "out" / "s" / "summary.md").is_symlink()


# -- an output is never an input --------------------------------------------------------------


def test_export_refuses_to_overwrite_its_scenario(tmp_path, capsys):
    path = scenario_file(tmp_path)
    original = path.read_bytes()
    line = one_line(capsys, ["export", str(path), "--pyzmq", str(path)], 2)
    assert line == f"zsim: --pyzmq: {str(path)!r} is the input {str(path)!r} itself; zsim does not overwrite a file it reads " \
                   "(name another output)"
    (tmp_path / "hard.py").hardlink_to(path)
    (tmp_path / "soft.py").symlink_to(path)
    for alias in ("hard.py", "soft.py", "./s.toml"):
        one_line(capsys, ["export", str(path), "--pyzmq", str(tmp_path / alias)], 2)
    assert path.read_bytes() == original


def test_run_refuses_an_out_folder_whose_files_are_the_scenario(tmp_path, capsys):
    folder = tmp_path / "o"
    path = scenario_file(folder, "summary.json")
    original = path.read_bytes()
    line = one_line(capsys, ["run", str(path), "--out", str(folder)], 2)
    assert line.startswith("zsim: --out: ") and "zsim does not overwrite a file it reads" in line
    assert path.read_bytes() == original


# -- zsim run --out: the set is replaced as a set ---------------------------------------------


def _contents(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in SET}


def test_the_set_is_replaced_as_a_set_and_other_files_stay(tmp_path, capsys):
    path = scenario_file(tmp_path)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out)]) == 0
    (out / "notes.txt").write_text("mine")
    (out / "sub").mkdir()
    (out / "sub" / "x").write_text("x")
    (out / "link").symlink_to("notes.txt")
    path.write_text(scenario_text().replace("count = 20", "count = 30"))
    assert main(["run", str(path), "--out", str(out)]) == 0
    assert json.loads((out / "summary.json").read_text())["ledger"]["sent"] == 30
    assert (out / "notes.txt").read_text() == "mine" and (out / "sub" / "x").read_text() == "x"
    assert os.readlink(out / "link") == "notes.txt"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "s.toml"]  # no scratch folder left beside it


def test_an_interrupted_write_leaves_the_previous_set(tmp_path, capsys, monkeypatch):
    path = scenario_file(tmp_path)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out)]) == 0
    before = _contents(out)
    path.write_text(scenario_text().replace("count = 20", "count = 30"))
    real = files._write_file
    calls = []

    def interrupted(target, write, label):
        calls.append(target.name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(target, write, label)

    monkeypatch.setattr(files, "_write_file", interrupted)
    assert main(["run", str(path), "--out", str(out)]) == 130
    assert _contents(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "s.toml"]


KILLER = """
import os, signal, sys
import zsim.files as files
point = sys.argv[1]
if point == "write":
    real = files._write_file
    done = []
    def write(target, content, label):
        real(target, content, label)
        done.append(target)
        if len(done) == 2:
            os.kill(os.getpid(), signal.SIGKILL)
    files._write_file = write
elif point == "swap":
    def exchange(a, b):
        os.kill(os.getpid(), signal.SIGKILL)
    files._exchange = exchange
elif point == "figures":
    import zsim.report_run as report
    real_render = report._render
    def render(folder, name, draw):
        data = real_render(folder, name, draw)
        os.kill(os.getpid(), signal.SIGKILL)
    report._render = render
from zsim.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _killed(tmp_path: Path, point: str, argv: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLER), point, *argv], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == -9, done.stderr


@pytest.mark.parametrize("point", ["write", "swap"])
def test_kill_9_during_the_write_keeps_the_old_set_and_the_next_run_cleans_up(tmp_path, capsys, point):
    path = scenario_file(tmp_path)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out)]) == 0
    (out / "sub").mkdir()  # an entry of the user's, moved aside just before the swap
    (out / "sub" / "x").write_text("x")
    before = _contents(out)
    path.write_text(scenario_text().replace("count = 20", "count = 30"))
    _killed(tmp_path, point, ["run", str(path), "--out", str(out)])
    assert _contents(out) == before  # the old set, whole
    assert [p.name for p in tmp_path.iterdir() if ".zsim-new-" in p.name]  # the killed writer's scratch folder
    assert main(["run", str(path), "--out", str(out)]) == 0
    assert json.loads((out / "summary.json").read_text())["ledger"]["sent"] == 30
    assert (out / "sub" / "x").read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "s.toml"]


def test_a_killed_report_leaves_figures_scratch_that_the_next_run_removes(tmp_path, capsys):
    path = scenario_file(tmp_path)
    report = tmp_path / "rep"
    _killed(tmp_path, "figures", ["run", str(path), "--report", str(report)])
    assert [p for p in report.iterdir() if p.name.startswith(".zsim-figures-")]
    live = report / f".zsim-figures-{os.getppid()}-live"  # a live writer's: left alone
    live.mkdir()
    stale = report / f".report.html.{dead_pid()}.abcd1234.tmp"
    stale.write_text("half")
    assert main(["run", str(path), "--report", str(report)]) == 0
    left = sorted(p.name for p in report.iterdir() if p.name.startswith("."))
    assert left == [live.name]
    assert (report / "report.html").stat().st_size > 1000


def test_the_next_run_removes_tmp_files_of_a_killed_writer(tmp_path, capsys):
    path = scenario_file(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    dead = dead_pid()
    for name in SET:
        (out / f".{name}.{dead}.k2j4h1ab.tmp").write_text("half")
    alive = out / f".summary.json.{os.getppid()}.zzzzzzzz.tmp"
    alive.write_text("being written")
    assert main(["run", str(path), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted([*SET, alive.name])


def test_a_full_disk_names_the_path_and_keeps_the_old_set(tmp_path, capsys, monkeypatch):
    path = scenario_file(tmp_path)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out)]) == 0
    before = _contents(out)

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full)
    line = one_line(capsys, ["run", str(path), "--out", str(out)], 1)
    assert line == f"zsim: {out / 'messages.parquet'}: cannot be written: No space left on device"
    assert _contents(out) == before
    monkeypatch.undo()
    report = tmp_path / "rep"
    monkeypatch.setattr(files.os, "fsync", full)
    line = one_line(capsys, ["run", str(path), "--report", str(report)], 1)
    assert line == f"zsim: {report / 'topology.png'}: cannot be written: No space left on device"
    assert not [p for p in report.iterdir()]


def test_out_in_the_working_folder_is_replaced_file_by_file(tmp_path, capsys, monkeypatch):
    path = scenario_file(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    assert main(["run", str(path), "--out", "."]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(SET)
    assert Path.cwd() == out and out.exists()
    shutil.rmtree(out / ".." / "out", ignore_errors=False)


def test_a_sweep_does_not_write_through_a_results_folder_linking_out_of_out(tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "sweep=s").symlink_to(elsewhere)
    raw = {"sweep": {"name": "s", "replications": 1}, "axes": {"socket.push.options.sndhwm": [10, 100]},
           "base": files.parse_toml(scenario_text(), "base")}
    sweep = tmp_path / "s.toml"
    from zsim.tomlw import to_toml

    sweep.write_text(to_toml(raw))
    line = one_line(capsys, ["sweep", str(sweep), "--engine", "serial", "--out", str(out)], 2)
    assert "outside the output folder (--out)" in line
    assert not list(elsewhere.iterdir())
