"""docs/search.md runs as written: its files are written into an empty folder, its
command run, and what the command prints is what the page shows; its typo gives the line
the page shows."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "search.md"


def test_the_worked_example_runs_as_written(tmp_path: Path) -> None:
    text = PAGE.read_text()
    files = dict(re.findall(r"<!-- file: (\S+) -->\n```\w*\n(.*?)^```", text, re.S | re.M))
    commands = [line.strip() for block in re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M) for line in block.splitlines()]
    assert set(files) == {"mm1k.toml", "hwm-search.toml"} and commands == ["zsim search hwm-search.toml"]
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    argv = [sys.executable, "-m", "zsim", *shlex.split(commands[0])[1:]]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout in text  # the page shows the whole answer, as printed
    answer = json.loads((tmp_path / "out" / "searches" / "report" / "hwm-search" / "search.json").read_text())
    assert answer["answer"]["design"] == {"socket.pub.options.sndhwm": 5} and answer["runs"] == 40
    assert (tmp_path / "out" / "searches" / "report" / "hwm-search" / "search.png").stat().st_size > 10_000
    # the same command again resumes: nothing to run, the same answer
    again = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert again.stdout == done.stdout.replace("runs: 40 (40 now)", "runs: 40 (0 now)")
    # the typo the page shows gives the line it shows, exit status 2
    (tmp_path / "bad.toml").write_text(files["hwm-search.toml"].replace("below = 0.09", "bellow = 0.09"))
    bad = subprocess.run([sys.executable, "-m", "zsim", "search", "bad.toml"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.strip() in text and len(bad.stderr.strip().splitlines()) == 1
