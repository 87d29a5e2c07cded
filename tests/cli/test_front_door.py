"""The front door says only what is true (issue 41, finding 8): the README is short, opens
with the two commands a fresh clone needs, shows a run that is what ``zsim run`` prints,
quotes no duration that a script did not measure and date, and links pages that exist;
``zsim compare`` says each note once; ``benchmarks/timings.py`` writes what the docs quote."""

from __future__ import annotations

import datetime
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from zsim.cli import main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: the run the README shows, and the line that introduces its output there
README_RUN = "examples/pub_sub_inproc.toml"
#: the pages the README must send a newcomer to
NEXT = ["tutorial", "scenario-format", "model", "api", "studies", "validation", "sweeps", "search", "compare", "export", "safety"]
#: a duration nobody measured: "~70 s", "~12 min", "under a minute", "in 2 minutes", "3x faster"
UNMEASURED = re.compile(r"~\s?\d[\d.,]*\s?(s|min|minutes?|h|hours?)\b|under a minute|about a minute|\d+x faster", re.I)
INLINE = re.compile(r"<!-- timing:(?P<key>[\w-]+) -->(?P<text>.*?)<!-- /timing -->", re.S)
DATED = re.compile(r"^(\d+(\.\d)? s|\d+ min \d+ s|\d+ h \d+ min) on \d{4}-\d{2}-\d{2}$")


def timings_module() -> ModuleType:
    """benchmarks/timings.py, a script (benchmarks/ is not an installed package)."""
    name = "benchmarks_timings"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "timings.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # its dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[name]


def prose(text: str) -> str:
    """A page without its code blocks."""
    return re.sub(r"^```.*?^```$", "", text, flags=re.S | re.M)


def pages() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "experiments").glob("*/README.md"))]


def test_the_readme_is_short_and_opens_with_the_two_commands() -> None:
    text = README.read_text()
    lines = text.splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines: the details belong in docs/"
    assert lines[0] == "```" and lines[1].startswith("bash dev.sh demo ") and lines[2].startswith("bash dev.sh test ") and lines[3] == "```"
    # the two jobs exist as the README names them (an unknown job prints the usage and exits 2)
    usage = subprocess.run(["bash", str(ROOT / "dev.sh"), "no-such-job"], capture_output=True, text=True, timeout=30)
    assert usage.returncode == 2 and "demo|test|" in usage.stderr
    linked = set(re.findall(r"\]\(docs/([\w-]+)\.md", text))
    assert not [page for page in NEXT if page not in linked]
    assert not UNMEASURED.search(prose(text)), UNMEASURED.search(prose(text))


def test_the_readme_run_is_what_zsim_run_prints() -> None:
    """Every number of the README's run is the command's: the block after its command line
    is its output, line for line, but for the wall time the run takes on this machine."""
    text = README.read_text()
    shown = re.search(rf"^\$ \.venv/bin/zsim run {re.escape(README_RUN)}\n(.*?)^```$", text, re.S | re.M)
    assert shown is not None, "the README shows `.venv/bin/zsim run examples/pub_sub_inproc.toml` and its output"
    done = subprocess.run([sys.executable, "-m", "zsim", "run", README_RUN], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr

    def steady(output: str) -> list[str]:
        return [re.sub(r"in [0-9.]+ s wall$", "in ... s wall", line.rstrip()) for line in output.rstrip("\n").splitlines()]

    assert steady(shown.group(1)) == steady(done.stdout)


def test_every_relative_link_of_the_docs_reaches_a_file_and_its_heading() -> None:
    """What moved out of the README is still reachable: every relative link of the README,
    docs/ and the experiments' write-ups names a file that exists, and a heading in it."""

    def slug(heading: str) -> str:  # GitHub's anchors: lower case, punctuation dropped, spaces to hyphens
        return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")

    broken = []
    for page in pages():
        for target in re.findall(r"\]\(([^)\s]+)\)", prose(page.read_text())):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path) if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and file.suffix == ".md":
                headings = {slug(h) for h in re.findall(r"^#+ (.*)$", prose(file.read_text()), re.M)}
                if anchor not in headings:
                    broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken


def test_every_quoted_timing_is_measured_and_dated_or_marked() -> None:
    """The figures the docs quote come from benchmarks/timings.py: a key it measures, and a
    text that gives the duration and the day, or says it is to be regenerated."""
    timings = timings_module()
    keys = {command.key for command in timings.COMMANDS} | {"demo-sweep"}
    quoted = []
    for page in pages():
        for found in INLINE.finditer(page.read_text()):
            quoted.append(found["key"])
            assert found["key"] in keys, f"{page.name}: timing:{found['key']} is not a command benchmarks/timings.py runs"
            text = found["text"]
            assert DATED.match(text) or text.startswith("to be regenerated"), f"{page.name}: timing:{found['key']}: {text!r}"
    assert {"demo", "test-quick", "test-fast", "test"} <= set(quoted)
    begin, end = timings.TABLE_MARKERS
    assert begin in timings.TABLE_FILE.read_text() and end in timings.TABLE_FILE.read_text()


def test_timings_writes_the_figures_where_the_docs_quote_them(tmp_path: Path) -> None:
    timings = timings_module()
    day = "2026-12-08"
    quiet = timings.Timing("test-quick", "bash dev.sh test-quick", 47.4, 45.0, 0.2, 1.3, 0, tmp_path / "log")
    demo = timings.Timing("demo", "bash dev.sh demo", 131.0, 250.0, 0.4, 1.9, 0, tmp_path / "log",
                          parts=[("demo-sweep", "its sweep (buffer-sizing-demo)", 75.2, "576 runs on spark, 0 failed")])
    busy = timings.Timing("test-fast", "bash dev.sh test-fast", 259.0, 240.0, 3.4, 3.9, 0, tmp_path / "log")
    failed = timings.Timing("test", "bash dev.sh test", 12.0, 3.0, 0.1, 0.2, 1, tmp_path / "log")
    assert [timings.duration(s) for s in (4.25, 47.4, 259.0, 3725.0)] == ["4.2 s", "47 s", "4 min 19 s", "1 h 2 min"]
    # quiet figures: the duration and the day; a failed command's figure is none
    assert timings.inline_texts([quiet, demo, failed], day, busy_ok=False) == {
        "test-quick": "47 s on 2026-12-08", "demo": "2 min 11 s on 2026-12-08", "demo-sweep": "1 min 15 s on 2026-12-08"}
    # a busy machine's: none without --busy-ok, marked with it
    assert timings.inline_texts([quiet, busy], day, busy_ok=False) == {}
    assert timings.inline_texts([busy], day, busy_ok=True) == {"test-fast": "to be regenerated (4 min 19 s at load 3.4 on 2026-12-08)"}
    page = "a <!-- timing:test-quick -->to be regenerated<!-- /timing -->, b <!-- timing:test -->1 s on 2026-01-01<!-- /timing -->"
    assert timings.replace_inline(page, {"test-quick": "47 s on 2026-12-08"}) == (
        "a <!-- timing:test-quick -->47 s on 2026-12-08<!-- /timing -->, b <!-- timing:test -->1 s on 2026-01-01<!-- /timing -->")
    table = timings.table([quiet, demo, busy, failed], day, "a machine", ["--all"])
    assert table.splitlines()[0].startswith("Measured on 2026-12-08 by `python benchmarks/timings.py --all` on a machine.")
    assert "| `bash dev.sh test-quick` | 47 s | 45 s | 0.20 | 1.30 |" in table
    assert "| ... its sweep (buffer-sizing-demo): 576 runs on spark, 0 failed | 1 min 15 s | | | |" in table
    assert "| `bash dev.sh test-fast` | 4 min 19 s | 4 min 0 s | 3.40 (busy) | 3.90 |" in table
    assert "| `bash dev.sh test` | 12 s (failed: exit status 1) |" in table
    begin, end = timings.TABLE_MARKERS
    assert timings.replace_table(f"x\n{begin}\nold\n{end}\ny", table) == f"x\n{begin}\n{table}\n{end}\ny"
    # the demo's sweep, as zsim/sweep/demo.py prints it (the engine as the sweep names it, spaces and all)
    line = "sweep buffer-sizing-demo: 576 runs done now, 0 already done, 0 failed; 100.8 s on spark (local[*], 2 cores)"
    found = timings.DEMO_SWEEP_LINE.search(f"wrote x\n{line}\nwrote y\n")
    assert found is not None and (found["ran"], found["wall"], found["engine"]) == ("576", "100.8", "spark (local[*], 2 cores)")


def test_timings_times_the_readme_run_on_this_machine(tmp_path: Path) -> None:
    """The script end to end, on its shortest command: the table names the day, this
    machine's CPU and cores, and the load before and after."""
    env = {**os.environ, "ZSIM_VENV": sys.prefix}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "timings.py"), "--only", "run", "--logs", str(tmp_path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    timings = timings_module()
    first, row = done.stdout.splitlines()[0], done.stdout.splitlines()[-1]
    today = datetime.datetime.now(datetime.timezone.utc).date()
    assert first.startswith(f"Measured on {today} by `python benchmarks/timings.py --only run --logs")
    assert f"{timings.cpu_model()}, {os.cpu_count()} cores" in first
    assert re.fullmatch(rf"\| `\.venv/bin/zsim run {re.escape(README_RUN)}` \| [0-9.]+ s \| [0-9.]+ s \| [0-9.]+( \(busy\))? \| [0-9.]+ \|",
                        row), row
    assert (tmp_path / "run.log").read_text().startswith("scenario pub-sub-inproc  seed 0")


@pytest.fixture
def seeded(tmp_path: Path) -> Path:
    scenario = tmp_path / "seeded.toml"
    scenario.write_text((ROOT / README_RUN).read_text().replace('profile = "ideal"', 'profile = "ideal"\nseed = 7\nuntil_s = 0.2'))
    return scenario


def test_compare_says_its_seed_note_once(seeded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 41: the note that a scenario's seed is not used came on stderr before the runs
    and again in the table."""
    assert main(["compare", str(seeded), "--vary", "socket.pub.options.sndhwm=10,20", "-n", "2", "--engine", "serial",
                 "--metric", "socket.sub.delivered"]) == 0
    printed = capsys.readouterr()
    note = f"{seeded} sets scenario.seed; a comparison does not use it"
    assert (printed.out + printed.err).count(note) == 1
    assert f"note: {note}" in printed.out
