"""Text from files cannot act where zsim shows it (issue 27, part 5): the terminal gets
control characters escaped, matplotlib plain text, Markdown escaped cells, HTML escaped
text, generated Python Python's own literal escaping; compare's design names are unique."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import zsim
from untrusted import one_line, scenario_text
from zsim import textsafe
from zsim.cli import main
from zsim.export import export_pyzmq
from zsim.sweep import run_sweep

ESC = "\x1b]0;pwned\x07\x1b[2J"
PAYLOAD = "__import__('os').system('touch MARKER')"
#: quotes, triple quotes, backslashes, a newline, a NUL and code
NASTY = 'q"\'"""\'\'\'\\ \n\x00 ' + PAYLOAD


def toml_string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a TOML basic string (\\u escapes included)


def test_the_helpers():
    assert textsafe.terminal("a\x1b[2Jb\x07\nc\x00\u202e") == "a\\x1b[2Jb\\x07\nc\\x00\\u202e"
    assert textsafe.one_line("a\nb\tc\x9b") == "a\\nb\\tc\\x9b"
    assert textsafe.md("<b>x|y</b> [a](javascript:x) ![i](http://h/t.png)") == \
        "&lt;b&gt;x\\|y&lt;/b&gt; \\[a\\](javascript:x) !\\[i\\](http://h/t.png)"
    assert textsafe.md_code("a`b|c", in_table=True) == "``a`b\\|c``"


# -- the terminal ----------------------------------------------------------------------------


def test_run_and_explain_print_control_characters_escaped(tmp_path, capsys):
    path = tmp_path / "s.toml"
    text = scenario_text(name="x", extra_scenario=f"description = {toml_string('d' + ESC)}")
    path.write_text(text.replace('name = "x"', f"name = {toml_string('name' + ESC + chr(10) + 'fake line')}"))
    assert main(["run", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert out.splitlines()[0].startswith("scenario name\\x1b]0;pwned\\x07\\x1b[2J\\nfake line  seed")
    assert main(["explain", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert main(["run", str(path), "--json"]) == 0  # JSON escapes them itself
    assert "\x1b" not in capsys.readouterr().out


def test_an_error_line_escapes_what_it_quotes(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(scenario_text().replace('profile = "ideal"', f"profile = {toml_string('p' + ESC + chr(10) + 'x')}"))
    line = one_line(capsys, ["run", str(path)], 2)
    assert "\x1b" not in line and "\x07" not in line


# -- matplotlib: no mathtext -----------------------------------------------------------------


MATH = r"$\frac{$ a $x^2$ \undefined $"


def test_dollars_in_names_reach_figures_as_plain_text(tmp_path, capsys):
    path = tmp_path / "s.toml"
    text = scenario_text(name="x").replace('name = "x"', f"name = {toml_string(MATH)}")
    path.write_text(text.replace("inproc://p", "ipc://$x^$"))
    assert main(["run", str(path), "--report", str(tmp_path / "rep")]) == 0
    assert (tmp_path / "rep" / "topology.png").stat().st_size > 1000
    other = tmp_path / "b.toml"
    other.write_text(text.replace("count = 20", "count = 30").replace("inproc://p", "ipc://$y^$"))
    assert main(["compare", str(path), str(other), "--engine", "serial", "-n", "2", "--name", MATH, "--name", "$\\sqrt{$",
                 "--report", str(tmp_path / "cmp")]) == 0
    assert list((tmp_path / "cmp").glob("*.png"))


def test_a_figure_title_with_dollars_in_a_sweep_report(tmp_path, capsys):
    raw = {"sweep": {"name": "s", "replications": 1},
           "axes": {"socket.push.options.sndhwm": {"values": [10, 100], "names": [MATH, "<b>|x|</b>"], "label": "$HWM|<i>"}},
           "base": zsim.files.parse_toml(scenario_text(), "base"),
           "report": {"figure": [{"kind": "line", "x": "socket.push.options.sndhwm", "y": "delivered", "title": MATH}]}}
    run_sweep(raw, tmp_path / "res", engine="serial", stream=None)
    assert main(["report", str(tmp_path / "res"), "--out", str(tmp_path / "out")]) == 0
    summary = (tmp_path / "out" / "s" / "summary.md").read_text()
    assert "<b>" not in summary and "<i>" not in summary and "&lt;b&gt;\\|x\\|&lt;/b&gt;" in summary
    for table in summary.split("\n\n"):  # every row of every table has as many cells as its header
        rows = [row.replace("\\|", "") for row in table.splitlines() if row.startswith("|")]
        assert len({row.count("|") for row in rows}) <= 1, table


# -- HTML ---------------------------------------------------------------------------------------


def test_the_run_report_escapes_html(tmp_path, capsys):
    path = tmp_path / "s.toml"
    evil = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    text = scenario_text(name="x", extra_scenario=f"description = {toml_string(evil)}")
    path.write_text(text.replace('name = "x"', f"name = {toml_string(evil)}").replace("inproc://p", "ipc://<script>"))
    assert main(["run", str(path), "--report", str(tmp_path / "rep")]) == 0
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "<script>" not in html and "<img src=x" not in html and "&lt;script&gt;" in html


# -- generated code -------------------------------------------------------------------------------


def nasty_scenario() -> dict:
    endpoint = "inproc://x" + NASTY.replace("\n", "").replace("\x00", "")  # endpoints are C strings: no NUL, no newline
    return {"scenario": {"name": "n" + NASTY, "description": "d" + NASTY, "profile": "ideal"},
            "socket": [{"name": "pub", "type": "PUB", "bind": endpoint},
                       {"name": "sub", "type": "SUB", "connect": endpoint, "options": {"subscribe": ["t" + NASTY]}}],
            "send": [{"socket": "pub", "count": 5, "interval_s": 0.001, "topic": "t" + NASTY}],
            "recv": [{"socket": "sub"}]}


def test_an_export_of_hostile_text_compiles_and_importing_it_runs_nothing(tmp_path, monkeypatch):
    text = export_pyzmq(zsim.spec.from_dict(nasty_scenario()))
    assert "\x00" not in text
    code = compile(text, "program.py", "exec")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "exported"}  # not __main__: the top level only
    exec(code, namespace)  # noqa: S102
    assert namespace["SCENARIO"] == "n" + NASTY  # the name comes back as it was
    assert namespace["__doc__"].startswith("n" + NASTY.replace("\n", "\\x0a").replace("\x00", "\\x00"))  # shown, not acting
    assert not (tmp_path / "MARKER").exists()


@pytest.mark.real
def test_an_export_of_hostile_text_runs_and_nothing_executes(tmp_path):
    program = tmp_path / "program.py"
    program.write_text(export_pyzmq(zsim.spec.from_dict(nasty_scenario())))
    done = subprocess.run([sys.executable, str(program), "--quiet-s", "0.3"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["scenario"] == "n" + NASTY and report["sockets"]["pub"]["sent"] == 5
    assert not (tmp_path / "MARKER").exists()


# -- compare: every design its own name ---------------------------------------------------------


def test_compare_names_every_design_differently(tmp_path, capsys):
    a = tmp_path / "a.toml"
    a.write_text(scenario_text())
    twin = tmp_path / "a (2).toml"
    twin.write_text(scenario_text().replace("count = 20", "count = 30"))
    assert main(["compare", str(a), str(a), str(twin), "--engine", "serial", "-n", "2", "--json"]) == 0
    names = [d["name"] for d in json.loads(capsys.readouterr().out)["designs"]]
    assert names == ["a", "a (3)", "a (2)"]
    from zsim.compare.designs import unique_names

    assert unique_names(["a", "a (2)", "a", "a"]) == ["a", "a (2)", "a (3)", "a (4)"]
    assert unique_names(["x\x1b", "x\\x1b"]) == ["x\\x1b", "x\\x1b (2)"]
