"""How long the commands the docs quote take: each one timed, dated, on a named machine.

Every duration the README and docs/ quote comes from this script (docs/speed.md, "Timings").
It runs each command in turn, from this checkout, as a new user runs it: the demo's sweep
into a new, empty results folder (so it does all of its runs, not a resume), the tests as
``dev.sh`` runs them. Nothing else of its own runs meanwhile; each command's output goes to
a log file, not the terminal. It prints one Markdown table: the date, the machine (CPU
model, cores, kernel), zsim's mode and commit, and per command its wall time, the CPU time
its processes used, and the 1-minute load average before and after it.

    python benchmarks/timings.py                 # zsim run, the demo's parts, bash dev.sh test-quick
    python benchmarks/timings.py --all --write   # and test-fast and the whole suite; paste into the docs
    python benchmarks/timings.py --only run      # one command (run, demo-examples, demo, test-quick, test-fast, test)

The figures are only as good as the machine is quiet. A command that starts at a 1-minute
load average of 1.0 or more is marked busy, ``--wait-quiet S`` waits (up to S seconds before
each command) for the load to fall below 1.0, and ``--write`` refuses a table with a busy
row unless ``--busy-ok``, which pastes its figures marked "to be regenerated".

``--write`` replaces the table between ``<!-- timings:begin -->`` and ``<!-- timings:end -->``
in docs/speed.md and, in README.md, docs/*.md and experiments/*/README.md, the text of each
``<!-- timing:KEY -->...<!-- /timing -->`` whose command ran (the others keep theirs, with
their own date).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the load average (1 minute) from which a figure is not a quiet machine's
BUSY_LOAD = 1.0
#: the run the README shows
README_RUN = "examples/pub_sub_inproc.toml"
TABLE_FILE = ROOT / "docs" / "speed.md"
TABLE_MARKERS = ("<!-- timings:begin -->", "<!-- timings:end -->")
INLINE = re.compile(r"(<!-- timing:(?P<key>[\w-]+) -->)(?P<text>.*?)(<!-- /timing -->)", re.S)
#: the line the demo prints after its sweep (zsim/sweep/demo.py)
DEMO_SWEEP_LINE = re.compile(r"^sweep (?P<sweep>\S+): (?P<ran>\d+) runs done now, \d+ already done, (?P<failed>\d+) failed; "
                             r"(?P<wall>[0-9.]+) s on (?P<engine>.+)$", re.M)


@dataclasses.dataclass(frozen=True)
class Command:
    """One command the docs quote: its key (the ``timing:KEY`` markers), how the docs write
    it, and how to run it here (``out`` is a new empty folder of its own)."""

    key: str
    shown: str
    argv: Callable[[Path, Path], list[str]]


@dataclasses.dataclass
class Timing:
    key: str
    shown: str
    wall_s: float
    cpu_s: float
    load_before: float
    load_after: float
    returncode: int
    log: Path
    #: figures the command printed about its own parts: (key, shown, seconds, what)
    parts: list[tuple[str, str, float, str]] = dataclasses.field(default_factory=list)

    @property
    def busy(self) -> bool:
        return self.load_before >= BUSY_LOAD


def venv() -> Path:
    """The virtual environment ``dev.sh`` uses (``ZSIM_VENV``, as dev.sh reads it)."""
    return (ROOT / os.environ.get("ZSIM_VENV", ".venv")).resolve()


COMMANDS = [
    Command("run", f".venv/bin/zsim run {README_RUN}", lambda venv, out: [str(venv / "bin" / "zsim"), "run", README_RUN]),
    Command("demo-examples", "bash dev.sh demo --no-sweep", lambda venv, out: ["bash", "dev.sh", "demo", "--no-sweep"]),
    Command("demo", "bash dev.sh demo", lambda venv, out: ["bash", "dev.sh", "demo", "--out", str(out / "sweeps")]),
    Command("test-quick", "bash dev.sh test-quick", lambda venv, out: ["bash", "dev.sh", "test-quick"]),
    Command("test-fast", "bash dev.sh test-fast", lambda venv, out: ["bash", "dev.sh", "test-fast"]),
    Command("test", "bash dev.sh test", lambda venv, out: ["bash", "dev.sh", "test", "-q"]),
]
DEFAULT = ("run", "demo-examples", "demo", "test-quick")


def load() -> float:
    return os.getloadavg()[0]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_commit() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if done.returncode != 0:
        return "unknown"
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True)
    return done.stdout.strip() + (" with changes" if dirty.stdout.strip() else "")


def installed(python: Path) -> str:
    """The Python and zsim mode the commands run with (the environment's, not this script's)."""
    code = "import platform, zsim.native as n; print(f'Python {platform.python_version()}; zsim {n.describe()}')"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, cwd=ROOT)
    return done.stdout.strip() if done.returncode == 0 else f"{python}: zsim does not import"


def duration(seconds: float) -> str:
    """``4.2 s``, ``41 s``, ``4 min 19 s``, ``1 h 2 min``: as the docs write durations."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def wait_for_quiet(limit_s: float, say: Callable[[str], None]) -> None:
    deadline = time.monotonic() + limit_s
    while load() >= BUSY_LOAD and time.monotonic() < deadline:
        say(f"load {load():.2f}: waiting for it to fall below {BUSY_LOAD}")
        time.sleep(min(15.0, max(0.0, deadline - time.monotonic())))


def time_command(command: Command, logs: Path, say: Callable[[str], None]) -> Timing:
    """Run one command from the checkout, its output to ``logs/KEY.log``."""
    out = Path(tempfile.mkdtemp(prefix=f"zsim-timings-{command.key}-"))
    log = logs / f"{command.key}.log"
    argv = command.argv(venv(), out)
    say(f"{command.shown} (log: {log})")
    before = load()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    try:
        with log.open("w") as sink:
            done = subprocess.run(argv, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    finally:
        wall = time.perf_counter() - started
        shutil.rmtree(out, ignore_errors=True)
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (used.ru_utime - children.ru_utime) + (used.ru_stime - children.ru_stime)
    timing = Timing(command.key, command.shown, wall, cpu, before, load(), done.returncode, log)
    if command.key == "demo":
        found = DEMO_SWEEP_LINE.search(log.read_text(errors="replace"))
        if found:
            timing.parts.append(("demo-sweep", f"its sweep ({found['sweep']})", float(found["wall"]),
                                 f"{found['ran']} runs on {found['engine']}, {found['failed']} failed, as the demo prints it"))
    say(f"  {duration(wall)} wall, {duration(cpu)} CPU, load {before:.2f} -> {timing.load_after:.2f}"
        + (f", exit status {done.returncode}" if done.returncode else ""))
    return timing


def machine_line(environment: str, commit: str) -> str:
    return f"{cpu_model()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; {environment}, commit {commit}"


def table(timings: Sequence[Timing], day: str, machine: str, argv: Sequence[str]) -> str:
    """The Markdown the docs paste: what ran, where, when, and how long each command took."""
    command = " ".join(["python benchmarks/timings.py", *argv])
    lines = [f"Measured on {day} by `{command}` on {machine}. "
             "Wall: the command's elapsed time; CPU: the user and system time of the processes it waited for (not Spark's "
             "JVM and executors, which Spark starts and ends itself); "
             f"load: the 1-minute load average just before and just after it (busy from {BUSY_LOAD}).", "",
             "| command | wall | CPU | load before | load after |", "|---|---|---|---|---|"]
    for t in timings:
        wall = duration(t.wall_s) + (f" (failed: exit status {t.returncode})" if t.returncode else "")
        lines.append(f"| `{t.shown}` | {wall} | {duration(t.cpu_s)} | {t.load_before:.2f}{' (busy)' if t.busy else ''} "
                     f"| {t.load_after:.2f} |")
        for _, shown, seconds, what in t.parts:
            lines.append(f"| ... {shown}: {what} | {duration(seconds)} | | | |")
    return "\n".join(lines)


def inline_texts(timings: Sequence[Timing], day: str, busy_ok: bool) -> dict[str, str]:
    """The text each ``timing:KEY`` marker gets: the duration and the day, or, measured on a
    busy machine, that it is to be regenerated."""
    texts = {}
    for t in timings:
        if t.returncode:
            continue
        figures = [(t.key, t.wall_s)] + [(key, seconds) for key, _, seconds, _ in t.parts]
        for key, seconds in figures:
            if t.busy:
                texts[key] = f"to be regenerated ({duration(seconds)} at load {t.load_before:.1f} on {day})"
            else:
                texts[key] = f"{duration(seconds)} on {day}"
    return texts if busy_ok or not any(t.busy for t in timings) else {}


def replace_inline(text: str, texts: dict[str, str]) -> str:
    return INLINE.sub(lambda m: m.group(1) + texts.get(m["key"], m["text"]) + m.group(4), text)


def replace_table(text: str, body: str) -> str:
    begin, end = TABLE_MARKERS
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        raise ValueError(f"no {begin} ... {end} in the page")
    return text[: start + len(begin)] + "\n" + body.rstrip("\n") + "\n" + text[stop:]


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "experiments").glob("*/README.md"))]


def write(body: str, texts: dict[str, str]) -> list[Path]:
    """Paste the table into docs/speed.md and the figures into every page's markers; return
    the pages changed (each replaced whole, as zsim writes its own files)."""
    changed = []
    for page in pages():
        if not page.exists():
            continue
        old = page.read_text()
        new = replace_inline(old, texts)
        if page == TABLE_FILE:
            new = replace_table(new, body)
        if new != old:
            partial = page.with_name(f".{page.name}.timings")
            partial.write_text(new)
            partial.replace(page)
            changed.append(page)
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true", help="also bash dev.sh test-fast")
    parser.add_argument("--full", action="store_true", help="also bash dev.sh test, the whole suite (long)")
    parser.add_argument("--all", action="store_true", help="--fast and --full")
    parser.add_argument("--only", action="append", choices=[c.key for c in COMMANDS], help="only this command (repeatable)")
    parser.add_argument("--wait-quiet", type=float, default=0.0, metavar="S",
                        help=f"before each command, wait up to S seconds for the load average to fall below {BUSY_LOAD}")
    parser.add_argument("--write", action="store_true", help="paste the table and the figures into the docs")
    parser.add_argument("--busy-ok", action="store_true", help="with --write: paste a busy machine's figures, marked 'to be regenerated'")
    parser.add_argument("--logs", metavar="DIR", help="where each command's output goes (default: a new temporary folder)")
    args = parser.parse_args(argv)
    keys = args.only or [*DEFAULT, *(["test-fast"] if args.fast or args.all else []), *(["test"] if args.full or args.all else [])]
    chosen = [c for c in COMMANDS if c.key in keys]

    def say(text: str) -> None:
        print(f"[timings] {text}", file=sys.stderr, flush=True)

    python = venv() / "bin" / "python"
    if not python.exists():
        say(f"no {python}: run bash dev.sh setup first (the timings are of an installed checkout, not of its first install)")
        return 1
    logs = Path(args.logs) if args.logs else Path(tempfile.mkdtemp(prefix="zsim-timings-"))
    logs.mkdir(parents=True, exist_ok=True)
    day = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    machine = machine_line(installed(python), git_commit())
    timings = []
    for command in chosen:
        if args.wait_quiet:
            wait_for_quiet(args.wait_quiet, say)
        timings.append(time_command(command, logs, say))
    body = table(timings, day, machine, list(argv if argv is not None else sys.argv[1:]))
    print(body)
    failed = [t for t in timings if t.returncode]
    busy = [t for t in timings if t.busy]
    if busy:
        say(f"busy: {', '.join(t.key for t in busy)} started at a load average of {BUSY_LOAD} or more: not a quiet machine's figures")
    if args.write:
        if busy and not args.busy_ok:
            say("not written: the table has busy rows (--wait-quiet S waits for a quiet machine; --busy-ok writes them marked)")
            return 1
        for page in write(body, inline_texts(timings, day, args.busy_ok)):
            say(f"wrote {page.relative_to(ROOT)}")
    for t in failed:
        say(f"{t.shown} failed with exit status {t.returncode}: see {t.log}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
