"""A results folder is data (issue 39): every file and folder in one may have been planted
by someone else. A link inside it leads no write, rename, delete or read elsewhere (a lock,
a point folder, a part file, a report's scratch folder); its manifest decides nothing about
where code runs and each field of it is checked; rows read back are checked before the code
computes on them; a run counts once however many rows name it.

Each case plants the bad entry, runs the command and asserts the one-line outcome and, with
a snapshot of a decoy folder outside ``--out``, that nothing outside changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from untrusted import evil_code, one_line, scenario_text, snapshot
from zsim import files
from zsim.cli import main
from zsim.sweep import run_sweep, store
from zsim.tomlw import to_toml

LINK = ("is a symbolic link inside a results folder; zsim follows no link there (it could lead a write, a rename or a delete "
        "elsewhere, or a read of another file): remove it")
METRIC = "socket.pull.latency_mean_s"
REPLAY_HOW = ("--allow-apps and the sweep file the results came from named on the command line (zsim explain SWEEP.toml --sweep "
              "DIR --worst METRIC --allow-apps; a results folder does not decide where code comes from), or --allow-apps-from DIR")


@pytest.fixture(autouse=True)
def no_env_permission(monkeypatch):
    monkeypatch.delenv("ZSIM_ALLOW_APPS", raising=False)


def sweep_raw(name: str = "s", replications: int = 2, noisy: bool = False) -> dict:
    """Two points of PUSH -> PULL; ``noisy``: Poisson sends and exponential service, so a
    latency varies from run to run."""
    base = files.parse_toml(scenario_text(), "base")
    if noisy:
        base["send"][0] = {"socket": "push", "count": 40, "rate_per_s": 900, "start_s": 0.001}
        base["recv"][0]["service_s"] = {"dist": "exponential", "mean_s": 0.001}
    return {"sweep": {"name": name, "replications": replications, "seed": 3}, "axes": {"socket.push.options.sndhwm": [1, 100]},
            "base": base}


def sweep_file(folder: Path, **kwargs) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "s.toml"
    path.write_text(to_toml(sweep_raw(**kwargs)))
    return path


def last_line(capsys: pytest.CaptureFixture[str], argv: list[str], status: int) -> str:
    """Run the CLI; its exit status must be ``status`` and its one ``zsim:`` line the last on
    stderr (a search says what it is about to do first)."""
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == status, (code, err)
    lines = [line for line in err if line.startswith("zsim:")]
    assert len(lines) == 1 and err[-1] == lines[0] and "Traceback" not in "".join(err), err
    return lines[0]


def sweep_argv(path: Path, out: Path, *more: str) -> list[str]:
    return ["sweep", str(path), "--engine", "serial", "--out", str(out), *more]


@pytest.fixture
def finished(tmp_path: Path) -> tuple[Path, Path]:
    """A finished sweep (2 points x 2 replications, a part file per run): its file and --out."""
    path = sweep_file(tmp_path / "study")
    out = tmp_path / "out"
    run_sweep(path, out, engine="serial", stream=None, batch_size=1)
    return path, out


def decoy(tmp_path: Path) -> Path:
    """A folder outside --out with what a sweep would remove, rename or write over."""
    folder = tmp_path / "decoy"
    folder.mkdir()
    (folder / "victim.txt").write_text("keep me")
    (folder / ".notes.123.abc.tmp").write_text("a dot-file ending .tmp: a leftover's name")
    (folder / "part-zz.parquet").write_text("not Parquet: a damaged result file's look")
    return folder


def point_folders(out: Path, name: str = "s") -> list[Path]:
    return sorted(p for p in (out / f"sweep={name}").iterdir() if p.name.startswith("point="))


SEARCH = """
[search]
name = "q"
seed = 1
confidence = 0.9
indifference = 0.05
budget_runs = 40
cost = "socket.push.options.sndhwm"

[variables]
"socket.push.options.sndhwm" = { low = 1, high = 4, step = 1, monotone = "decreasing" }

[[constraint]]
metric = "socket.pull.latency_mean_s"
below = 0.01
"""


def search_file(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    base = sweep_raw(noisy=True)["base"]
    path = folder / "q.toml"
    path.write_text(SEARCH + "\n" + to_toml({"base": base}))
    return path


@pytest.fixture
def searched(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    """A finished search: its file and --out."""
    path = search_file(tmp_path / "study")
    out = tmp_path / "sout"
    assert main(["search", str(path), "--out", str(out), "--no-figure"]) in (0, 1)
    capsys.readouterr()
    return path, out


# -- finding 1: a planted .lock --------------------------------------------------------------


@pytest.mark.parametrize("target", ["existing", "dangling"])
@pytest.mark.parametrize("command", ["sweep", "search"])
def test_a_lock_that_is_a_link_is_refused_and_nothing_is_written_through_it(tmp_path, capsys, request, command, target):
    path, out = request.getfixturevalue("finished" if command == "sweep" else "searched")
    folder = decoy(tmp_path)
    victim = folder / ("victim.txt" if target == "existing" else "created.txt")
    lock = out / f"sweep={'s' if command == 'sweep' else 'q'}" / ".lock"
    lock.unlink()
    lock.symlink_to(victim)
    before = snapshot(folder)
    argv = sweep_argv(path, out) if command == "sweep" else ["search", str(path), "--out", str(out), "--no-figure"]
    assert last_line(capsys, argv, 2) == f"zsim: {lock}: {LINK}"
    assert snapshot(folder) == before  # the victim keeps its text; a dangling link created nothing


@pytest.mark.parametrize("kind", ["hard link", "fifo"])
def test_a_lock_that_is_not_a_file_of_its_own_is_refused(tmp_path, capsys, finished, kind):
    path, out = finished
    folder = decoy(tmp_path)
    lock = out / "sweep=s" / ".lock"
    lock.unlink()
    if kind == "hard link":
        os.link(folder / "victim.txt", lock)
    else:
        os.mkfifo(lock)
    before = snapshot(folder)
    line = one_line(capsys, sweep_argv(path, out), 2)
    assert line.startswith(f"zsim: {lock}: is not a regular file") and line.endswith("remove it")
    assert snapshot(folder) == before and (folder / "victim.txt").read_text() == "keep me"


# -- finding 2: a point folder (or part file) that is a link -------------------------------------


@pytest.mark.parametrize("flags", [(), ("--retry-failed",), ("--precision", f"{METRIC}=0.5")])
def test_a_sweep_refuses_a_point_folder_that_is_a_link(tmp_path, capsys, finished, flags):
    path, out = finished
    folder = decoy(tmp_path)
    point = point_folders(out)[0]
    parts = sorted(point.iterdir())
    for part in parts:
        shutil.move(part, folder / part.name)
    (folder / parts[0].name).unlink()  # a run left to do: a sweep would write its part file here
    point.rmdir()
    point.symlink_to(folder)
    before = snapshot(folder)
    assert one_line(capsys, sweep_argv(path, out, *flags), 2) == f"zsim: {point}: {LINK}"
    assert snapshot(folder) == before  # no leftover removed, no file set aside, no part file written


def test_a_search_refuses_a_point_folder_that_is_a_link(tmp_path, capsys, searched):
    path, out = searched
    folder = decoy(tmp_path)
    point = point_folders(out, "q")[0]
    for part in point.iterdir():
        shutil.move(part, folder / part.name)
    point.rmdir()
    point.symlink_to(folder)
    before = snapshot(folder)
    assert last_line(capsys, ["search", str(path), "--out", str(out), "--no-figure"], 2) == f"zsim: {point}: {LINK}"
    assert snapshot(folder) == before


def test_report_and_explain_read_nothing_through_a_point_folder_that_is_a_link(tmp_path, capsys, finished):
    _, out = finished
    folder = decoy(tmp_path)
    point = point_folders(out)[0]
    for part in point.iterdir():
        shutil.move(part, folder / part.name)
    point.rmdir()
    point.symlink_to(folder)
    before = snapshot(folder)
    line = one_line(capsys, ["report", str(out), "--out", str(tmp_path / "rep")], 2)
    assert line == f"zsim: {out / 'sweep=s'}: no report: {point}: {LINK}"
    assert one_line(capsys, ["explain", "--sweep", str(out), "--worst", METRIC], 2) == f"zsim: {point}: {LINK}"
    assert snapshot(folder) == before


def test_a_part_file_that_is_a_link_is_not_read_and_its_runs_run_again(tmp_path, capsys, finished):
    path, out = finished
    folder = decoy(tmp_path)
    part = sorted(point_folders(out)[0].iterdir())[0]
    shutil.move(part, folder / part.name)  # rows of this very sweep, but outside it
    part.symlink_to(folder / part.name)
    before = snapshot(folder)
    assert main(sweep_argv(path, out)) == 0
    captured = capsys.readouterr()
    assert f"warning: {part}: damaged result file (a symbolic link: zsim reads no link inside a results folder); moved to " \
           f"_{part.name}.damaged" in captured.err
    assert "sweep s: 1 runs done now, 3 were already done" in captured.out  # its row ran again, into the folder
    assert (part.parent / f"_{part.name}.damaged").is_symlink() and part.is_file() and not part.is_symlink()
    assert snapshot(folder) == before


def test_a_results_folder_whose_sweep_folder_is_a_link_is_refused(tmp_path, capsys, finished):
    _, out = finished
    moved = tmp_path / "elsewhere"
    shutil.move(out / "sweep=s", moved)
    (out / "sweep=s").symlink_to(moved)
    before = snapshot(moved)
    line = one_line(capsys, ["report", str(out)], 2)
    assert line.startswith(f"zsim: {out / 'sweep=s'}: resolves to ") and "outside the results folder" in line
    assert snapshot(moved) == before and not (out / "report").exists()


def test_a_manifest_that_is_a_link_is_refused(tmp_path, capsys, finished):
    path, out = finished
    folder = decoy(tmp_path)
    manifest = out / "sweep=s" / "_sweep.json"
    shutil.move(manifest, folder / "manifest.json")  # a manifest, but outside the results folder
    manifest.symlink_to(folder / "manifest.json")
    before = snapshot(folder)
    line = one_line(capsys, ["report", str(out), "--out", str(tmp_path / "rep")], 2)
    assert line == f"zsim: {out / 'sweep=s'}: no report: {manifest}: {LINK}"
    assert one_line(capsys, ["explain", "--sweep", str(out), "--worst", METRIC], 2) == f"zsim: {manifest}: {LINK}"
    assert one_line(capsys, sweep_argv(path, out), 2) == f"zsim: {manifest}: {LINK}"
    assert snapshot(folder) == before and manifest.is_symlink()


def test_a_default_report_folder_that_is_a_link_is_refused_even_inside_the_results(tmp_path, capsys, finished):
    _, out = finished
    other = out / "report" / "other"
    other.mkdir(parents=True)
    (out / "report" / "s").symlink_to(other)
    line = one_line(capsys, ["report", str(out)], 2)
    assert line == f"zsim: {out / 'sweep=s'}: no report: {out / 'report' / 's'}: " \
                   f"{LINK.replace('a results folder', 'the report folder')}"
    assert not list(other.iterdir())


def _dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def test_report_never_moves_or_removes_what_a_planted_scratch_link_points_to(tmp_path, capsys, finished):
    _, out = finished
    folder = decoy(tmp_path)
    (out / "report").mkdir()
    (out / "report" / f".s.zsim-new-{_dead_pid()}-abc").symlink_to(folder)  # looks like a killed writer's scratch folder
    before = snapshot(folder)
    assert main(["report", str(out)]) == 0
    assert snapshot(folder) == before
    assert not (out / "report" / "s" / "victim.txt").exists()


def test_a_search_writes_no_report_through_a_planted_report_link(tmp_path, capsys, searched):
    path, out = searched
    folder = decoy(tmp_path)
    shutil.rmtree(out / "report")
    (out / "report").symlink_to(folder)
    before = snapshot(folder)
    line = one_line(capsys, ["search", str(path), "--out", str(out), "--no-figure"], 2)
    assert line.startswith(f"zsim: {out / 'report'}: resolves to ") and "outside the results folder" in line
    (out / "report").unlink()
    (out / "report").symlink_to(out / "sweep=q")  # a link inside the results folder is no folder to write in either
    line = one_line(capsys, ["search", str(path), "--out", str(out), "--no-figure"], 2)
    assert line == f"zsim: {out / 'report'}: {LINK.replace('a results folder', 'the results folder')}"
    assert snapshot(folder) == before and not (out / "sweep=q" / "q").exists()


# -- finding 3: the manifest does not decide where code runs --------------------------------------


def test_explain_sweep_runs_no_app_code_from_the_folder_a_manifest_names(tmp_path, capsys):
    study = tmp_path / "study"
    study.mkdir()
    good, evil = tmp_path / "GOOD", tmp_path / "EVIL"
    (study / "app.py").write_text(evil_code(good))
    raw = sweep_raw()
    raw["base"]["app"] = [{"function": "app.py:f"}]
    (study / "s.toml").write_text(to_toml(raw))
    out = tmp_path / "out"
    assert main(sweep_argv(study / "s.toml", out, "--allow-apps")) == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "app.py").write_text(evil_code(evil))
    manifest_path = out / "sweep=s" / "_sweep.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["base_dir"] = str(elsewhere)  # the edit that made explain run another folder's file
    manifest_path.write_text(json.dumps(manifest))
    good.unlink()
    capsys.readouterr()
    line = one_line(capsys, ["explain", "--sweep", str(out), "--worst", METRIC, "--allow-apps"], 2)
    assert line == f"zsim: app[f].function: runs Python code from 'app.py'; zsim runs a scenario's code only with {REPLAY_HOW}"
    assert not evil.exists() and not good.exists()
    # the sweep file named on the command line: its folder's code runs, the manifest's folder is not looked at
    assert main(["explain", str(study / "s.toml"), "--sweep", str(out), "--worst", METRIC, "--allow-apps"]) == 0
    assert f"zsim: running app code from {(study / 'app.py').resolve()} (function f)" in capsys.readouterr().err
    assert good.read_text() == "ran" and not evil.exists()
    # --allow-apps-from names a folder: the user's word, which allows that folder only
    line = one_line(capsys, ["explain", "--sweep", str(out), "--worst", METRIC, "--allow-apps-from", str(study)], 2)
    assert line.startswith("zsim: app[f].function: 'app.py' is ") and "outside" in line and not evil.exists()


# -- finding 7: every manifest field, and rows read back, are checked ----------------------------


NESTED = "NESTED"


def _edit_manifest(out: Path, change) -> Path:  # type: ignore[no-untyped-def]
    path = out / "sweep=s" / "_sweep.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest).replace(json.dumps(NESTED), "[" * 5000 + "]" * 5000))  # deeper than json.dumps goes
    return path


MANIFEST_CASES = [
    ("base_scenario", lambda m: m.update(base_scenario=None), "base_scenario: must be a table, got null"),
    ("points[0].overrides", lambda m: m["points"][0].update(overrides=None), "points[0].overrides: must be a table, got null"),
    ("points[1].index", lambda m: m["points"][1].update(index="first"), "points[1].index: must be a whole number, got text"),
    ("axes[0].names", lambda m: m["axes"][0].update(names=["one"]), "axes[0].names: names 1 values, the axis has 2"),
    ("axes[0].path", lambda m: m["axes"][0].update(path=[1]), "axes[0].path: must be text, got a list"),
    ("replications", lambda m: m.update(replications=10**30), "replications: must be from 1 to 1,000,000, got a number out of "
                                                               "that range"),
    ("point_replications", lambda m: m.update(point_replications={m["points"][0]["id"]: "many"}),
     "point_replications.{id}: must be a whole number, got text"),
    ("links", lambda m: m.update(links={"a": {"b": 1}}), "links.a: must be text, got a table"),
    ("nesting", lambda m: m.update(description=NESTED), None),
]


def _reason(manifest: Path, reason: str | None) -> str:
    if reason is None:
        return "nests lists or tables "
    return reason.replace("{id}", json.loads(manifest.read_text())["points"][0]["id"]) if "{id}" in reason else reason


@pytest.mark.parametrize("command", ["explain", "report"])
@pytest.mark.parametrize(("field", "change", "reason"), MANIFEST_CASES, ids=[c[0] for c in MANIFEST_CASES])
def test_a_malformed_manifest_field_is_one_line_naming_it(tmp_path, capsys, finished, command, field, change, reason):
    _, out = finished
    manifest = _edit_manifest(out, change)
    expected = _reason(manifest, reason)
    argv = {"explain": ["explain", "--sweep", str(out), "--worst", METRIC],
            "report": ["report", str(out), "--out", str(tmp_path / "rep")]}[command]
    before = snapshot(out / "sweep=s")
    line = one_line(capsys, argv, 2)
    shown = f"{out / 'sweep=s'}: no report: " if command == "report" else ""
    assert line.startswith(f"zsim: {shown}{manifest}: {expected}")
    assert reason is None or line == f"zsim: {shown}{manifest}: {expected}"
    assert snapshot(out / "sweep=s") == before  # nothing rewritten, not even the manifest


@pytest.mark.parametrize(("field", "change", "reason"), MANIFEST_CASES, ids=[c[0] for c in MANIFEST_CASES])
def test_a_sweep_sets_a_malformed_manifest_aside_naming_the_field_and_writes_it_again(tmp_path, capsys, finished, field, change,
                                                                                      reason):
    path, out = finished
    manifest = _edit_manifest(out, change)
    expected = _reason(manifest, reason)
    damaged = manifest.read_bytes()
    assert main(sweep_argv(path, out)) == 0
    captured = capsys.readouterr()
    assert f"warning: {manifest}: {expected}" in captured.err
    assert "moved to _sweep.json.damaged, and written again from the sweep file" in captured.err
    assert (manifest.parent / "_sweep.json.damaged").read_bytes() == damaged  # kept, for inspection
    assert "0 runs done now, 4 were already done" in captured.out
    assert main(["explain", "--sweep", str(out), "--worst", METRIC, "--json"]) == 0  # the rewritten manifest serves


def _plant_value(part: Path, column: str, value: float) -> None:
    table = pq.read_table(part)
    values = table.column(column).to_pylist()
    values[0] = value
    pq.write_table(table.set_column(table.schema.get_field_index(column), column, pa.array(values, pa.float64())), part)


def test_a_search_resumed_from_a_row_holding_1e308_sets_the_file_aside_and_runs_it_again(tmp_path, capsys, searched):
    path, out = searched
    part = sorted(point_folders(out, "q")[0].iterdir())[0]
    rows = pq.read_metadata(part).num_rows
    _plant_value(part, METRIC, 1e308)
    assert main(["search", str(path), "--out", str(out), "--no-figure"]) in (0, 1)
    err = capsys.readouterr().err
    assert f"{part}: damaged result file (column {METRIC!r} holds 1e+308 in its row 0, beyond any value a run gives (at most " \
           f"1e+100 in size)); moved to _{part.name}.damaged" in err
    assert (part.parent / f"_{part.name}.damaged").exists()
    frame = store.read_frame(out / "sweep=q")
    assert frame[METRIC].abs().max() < 1 and rows >= 1  # its runs were made again


def test_a_precision_round_on_a_row_holding_1e308_sets_the_file_aside(tmp_path, capsys):
    path = sweep_file(tmp_path / "study", noisy=True, replications=3)
    out = tmp_path / "out"
    run_sweep(path, out, engine="serial", stream=None)
    part = next(iter(point_folders(out)[1].iterdir()))
    _plant_value(part, METRIC, -1e308)
    assert main(sweep_argv(path, out, "--precision", f"{METRIC}=0.01")) == 0
    captured = capsys.readouterr()
    assert f"{part}: damaged result file (column {METRIC!r} holds -1e+308" in captured.err
    assert "--precision: met at every point" in captured.out


# -- finding 8: a run counts once -------------------------------------------------------------------


def test_report_counts_a_duplicated_part_file_once(tmp_path, capsys, finished):
    _, out = finished
    for point in point_folders(out):
        for part in list(point.iterdir()):
            shutil.copy(part, point / f"part-copy-{part.name}")  # the same rows again, under another name
    assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 0
    points = (tmp_path / "rep" / "s" / "points.csv").read_text().splitlines()
    header = points[0].split(",")
    runs = [int(line.split(",")[header.index("runs")]) for line in points[1:]]
    assert runs == [2, 2]
    assert "differ" not in capsys.readouterr().err  # the same run twice is no conflict


def test_a_conflicting_duplicate_row_warns_naming_both_files_and_the_first_counts(tmp_path, capsys, finished):
    path, out = finished
    part = sorted(point_folders(out)[0].iterdir())[0]
    original = pq.read_table(part)
    copy = part.with_name("part-zz-copy.parquet")  # after the original in name order
    changed = original.set_column(original.schema.get_field_index("ok"), "ok", pa.array([False] * original.num_rows))
    pq.write_table(changed, copy)
    assert main(sweep_argv(path, out)) == 0
    err = capsys.readouterr().err
    replication = original.column("replication")[0].as_py()
    assert f"warning: point {part.parent.name.split('=', 1)[1]} replication {replication}: rows that differ in {part}, {copy}; " \
           "each run counts once, as its first row (files in name order)" in err
    frame = store.read_frame(out / "sweep=s")
    assert len(frame) == 4 and frame["ok"].all()  # four runs, the original row kept


def test_precision_counts_duplicated_rows_once(tmp_path):
    raw = sweep_raw(noisy=True, replications=3)
    outs = [tmp_path / "plain", tmp_path / "doubled"]
    for out in outs:
        run_sweep(raw, out, engine="serial", stream=None)
    for point in point_folders(outs[1]):
        for part in list(point.iterdir()):
            shutil.copy(part, point / f"part-copy-{part.name}")
    outcomes = [run_sweep(raw, out, engine="serial", stream=None, precision=[f"{METRIC}=0.001"]) for out in outs]
    assert outcomes[0].ran > 0  # the target needs rounds
    assert outcomes[1].ran == outcomes[0].ran and outcomes[1].precision == outcomes[0].precision
    frames = [store.read_frame(out / "sweep=s") for out in outs]
    assert len(frames[1]) == len(frames[0])
