"""Bounds on the size of a topology, counted before the work (issue 27, part 4): sockets,
processes, workloads, I/O threads, rendered text and name lengths after template expansion,
refused with one line naming the field that drove them before anything big is allocated;
zsim export linear in a template's members and bounded in output size."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import zsim
from untrusted import one_line, scenario_text, snapshot
from zsim import limits
from zsim.export import export_pyzmq


def write(tmp_path: Path, raw: dict) -> Path:
    from zsim.tomlw import to_toml

    path = tmp_path / "s.toml"
    path.write_text(to_toml(raw))
    return path


def fanout(members: int, templates: int = 1, io_threads: int = 1) -> dict:
    """A PUSH in process ``src`` and ``templates`` PULL templates of ``members`` members each,
    one counted process per template."""
    raw: dict = {"scenario": {"name": "big", "profile": "ideal", "until_s": 0.01},
                 "process": [{"name": "src"}], "socket": [{"name": "push", "type": "PUSH", "process": "src", "bind": "tcp://127.0.0.1:5555"}],
                 "send": [{"socket": "push", "count": 1}]}
    for t in range(templates):
        raw["process"].append({"name": f"w{t}_{{i}}", "count": members, "io_threads": io_threads})
        raw["socket"].append({"name": f"p{t}_{{i}}", "type": "PULL", "process": f"w{t}_{{i}}", "connect": "tcp://127.0.0.1:5555"})
    return raw


def test_ten_templates_of_100000_members_are_refused_at_once(tmp_path, capsys):
    raw = {"scenario": {"name": "big", "profile": "ideal"},
           "socket": [{"name": "push", "type": "PUSH", "bind": "inproc://p"}]
           + [{"name": f"s{t}_{{i}}", "type": "PULL", "connect": "inproc://p", "count": 100_000} for t in range(10)]}
    path = write(tmp_path, raw)
    before = snapshot(tmp_path)
    started = time.perf_counter()
    line = one_line(capsys, ["run", str(path), "--out", str(tmp_path / "out")], 2)
    assert time.perf_counter() - started < 5  # refused from the counts, not after building a million sockets
    assert line == ("zsim: socket[s0_].count: makes 1,000,001 sockets in all after template expansion; zsim builds at most "
                    "100,000 (zsim.limits.MAX_SOCKETS): make the topology smaller")
    assert snapshot(tmp_path) == before


def test_sockets_made_by_a_counted_process_count_with_its_members(tmp_path, capsys):
    line = one_line(capsys, ["run", str(write(tmp_path, fanout(60_000)))], 2)
    assert line.startswith("zsim: process[w0_].count: makes 60,001 processes in all after template expansion")


def test_io_threads_over_every_process_are_bounded(tmp_path, capsys):
    line = one_line(capsys, ["run", str(write(tmp_path, fanout(2_000, io_threads=4096)))], 2)
    assert line == ("zsim: process[w0_].io_threads: 2,000 members x io_threads = 4,096 makes 8,192,001 I/O threads in all after "
                    "template expansion; zsim builds at most 100,000 (zsim.limits.MAX_IO_THREADS): make the topology smaller")


def test_workloads_are_bounded(tmp_path, capsys):
    raw = fanout(1)
    raw["send"] = [{"name": "s{i}", "socket": "push", "count": 1, "copies": 100_000}] * 3
    raw["send"] = [dict(raw["send"][0], name=f"s{k}_{{i}}") for k in range(3)]
    line = one_line(capsys, ["run", str(write(tmp_path, raw))], 2)
    assert line.startswith("zsim: send[s0_].copies: makes 300,000 [[send]] and [[recv]] workloads in all")


def test_text_rendered_by_members_is_bounded(tmp_path, capsys):
    raw = fanout(20_000)
    raw["socket"][1]["connect"] = "ipc://p" + "x" * 3000 + "{i}"
    line = one_line(capsys, ["run", str(write(tmp_path, raw))], 2)
    assert line.startswith("zsim: process[w0_].count: makes 60,") and "characters of text" in line


def test_a_100000_character_name_is_refused_before_anything_uses_it(tmp_path, capsys):
    raw = fanout(2)
    raw["scenario"]["name"] = "n" * 100_000
    started = time.perf_counter()
    line = one_line(capsys, ["run", str(write(tmp_path, raw)), "--report", str(tmp_path / "rep")], 2)
    assert time.perf_counter() - started < 5
    assert line == "zsim: scenario.name: is 100,000 characters long; at most 200 are accepted (zsim.limits.MAX_NAME_CHARS)"
    raw["scenario"]["name"] = "ok"
    raw["socket"][0]["name"] = "s" * 300
    assert "socket[" in one_line(capsys, ["run", str(write(tmp_path, raw))], 2)
    raw["socket"][0]["name"] = "push"
    raw["process"][1]["name"] = "w" * 300 + "{i}"
    assert "is 303 characters long" in one_line(capsys, ["run", str(write(tmp_path, raw))], 2)
    raw["process"][1]["name"] = "w0_{i}"
    raw["scenario"]["description"] = "d" * 30_000
    assert one_line(capsys, ["run", str(write(tmp_path, raw))], 2).startswith("zsim: scenario.description: is 30,000 characters")


def test_the_bounds_are_set_from_python_not_from_the_file(tmp_path, monkeypatch):
    raw = fanout(3)
    monkeypatch.setattr(limits, "MAX_SOCKETS", 3)
    with pytest.raises(zsim.ScenarioError, match=r"makes 4 sockets"):
        zsim.run(raw)
    monkeypatch.setattr(limits, "MAX_SOCKETS", 4)
    assert zsim.run(raw).summary["ok"] is True
    raw["limits"] = {"max_sockets": 10}  # not a [limits] field: a file cannot lift them
    with pytest.raises(zsim.ScenarioError, match=r"^limits\.max_sockets: unknown limit"):
        zsim.run(raw)


def test_a_sweep_axis_over_a_count_is_refused_at_planning(tmp_path, capsys):
    raw = {"sweep": {"name": "s", "replications": 1}, "axes": {"process.w0_.count": [10, 200_000]}, "base": fanout(2)}
    path = tmp_path / "sweep.toml"
    from zsim.tomlw import to_toml

    path.write_text(to_toml(raw))
    line = one_line(capsys, ["sweep", str(path), "--engine", "serial", "--out", str(tmp_path / "out")], 2)
    assert "makes 200,001 processes" in line or "at most 100,000 members" in line
    assert not (tmp_path / "out").exists()


# -- zsim export: linear, and bounded -------------------------------------------------------------


def irregular(members: int) -> dict:
    """A template of ``members`` processes, each with a socket connecting to one PUSH."""
    return fanout(members)


def _export_time(members: int) -> tuple[float, int]:
    scenario = zsim.spec.from_dict(irregular(members))
    started = time.perf_counter()
    text = export_pyzmq(scenario)
    return time.perf_counter() - started, len(text)


def test_export_is_linear_in_a_templates_members():
    _export_time(200)  # warm up
    small_t, small_n = _export_time(1000)
    large_t, large_n = _export_time(4000)
    # 4 times the members: about 4 times the time and the text (a quadratic step gave 16)
    assert large_n < 5 * small_n
    assert large_t < 9 * small_t, (small_t, large_t)


def test_export_output_is_bounded(tmp_path, capsys, monkeypatch):
    path = write(tmp_path, irregular(300))
    monkeypatch.setattr(limits, "MAX_EXPORT_BYTES", 5_000)
    out = tmp_path / "p.py"
    line = one_line(capsys, ["export", str(path), "--pyzmq", str(out)], 2)
    assert line.startswith("zsim: the program would be ") and "zsim.limits.MAX_EXPORT_BYTES" in line
    assert not out.exists()
    monkeypatch.undo()
    assert json.dumps(scenario_text())  # untouched helper still importable
