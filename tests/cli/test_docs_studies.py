"""docs/studies.md runs as written: its files are written into an empty folder, its
commands run there in order, and every line of the output block after a command is a
line that command printed (issue 30: the design questions answered with zsim's own
outputs, executed by the docs test)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STUDIES = ROOT / "docs" / "studies.md"


def page_parts(text: str) -> tuple[dict[str, str], list[tuple[str, list[str]]]]:
    """The files (a block after ``<!-- file: NAME -->``) and each ``sh`` command with the
    lines of the plain block that follows it (its output as the page shows it)."""
    files = dict(re.findall(r"<!-- file: (\S+) -->\n```\w*\n(.*?)^```", text, re.S | re.M))
    steps = []
    for command, shown in re.findall(r"^```sh\n(.*?)^```\s*\n+```\n(.*?)^```", text, re.S | re.M):
        steps.append((" ".join(command.replace("\\\n", " ").split()), [line for line in shown.splitlines() if line.strip()]))
    return files, steps


def test_every_study_runs_and_prints_what_the_page_shows(tmp_path: Path) -> None:
    text = STUDIES.read_text()
    files, steps = page_parts(text)
    assert set(files) == {"rpc.toml", "batch.toml", "fanout.toml"}
    assert len(steps) == 6 and len(re.findall(r"^```sh$", text, re.M)) == 6  # every command has its output shown
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    for command, shown in steps:
        argv = [sys.executable, "-m", "zsim", *shlex.split(command)[1:]]
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{command}: {done.stderr[-2000:]}"
        printed = done.stdout.splitlines()
        missing = [line for line in shown if line.strip() != "..." and line not in printed]
        assert missing == [], f"{command}: lines the page shows that it did not print: {missing}"

