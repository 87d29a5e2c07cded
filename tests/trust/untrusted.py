"""Helpers for the tests of files from others (issue 27): scenarios that name code which,
if it ran, would leave a marker file; snapshots of a folder tree to show nothing outside
the folder the user named changed; the CLI's one-line outcome."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from zsim.cli import main

#: A PUSH -> PULL scenario over inproc with 20 messages: quick, and every command runs it.
PUSH_PULL = """
[scenario]
name = "{name}"
profile = "ideal"
{extra_scenario}

[[socket]]
name = "push"
type = "PUSH"
bind = "inproc://p"

[[socket]]
name = "pull"
type = "PULL"
connect = "inproc://p"

[[send]]
socket = "push"
count = 20
interval_s = 0.001

[[recv]]
socket = "pull"
"""


def scenario_text(name: str = "s", extra_scenario: str = "", apps: Iterable[str] = ()) -> str:
    text = PUSH_PULL.format(name=name, extra_scenario=extra_scenario)
    for function in apps:
        text += f'\n[[app]]\nfunction = "{function}"\n'
    return text


def evil_code(marker: Path, function: str = "f", body: str = "pass") -> str:
    """Python that, when imported, creates ``marker``, and whose ``function`` does too."""
    return (f"from pathlib import Path\nPath({str(marker)!r}).write_text('imported')\n\n"
            f"def {function}(app):\n    Path({str(marker)!r}).write_text('ran')\n    {body}\n")


def snapshot(root: Path, skip: Iterable[Path] = ()) -> dict[str, tuple[int, int, str]]:
    """Every file, folder and link under ``root`` (outside ``skip``): size, mtime, kind."""
    skipped = [Path(p).resolve() for p in skip]
    found: dict[str, tuple[int, int, str]] = {}
    for folder, dirs, names in os.walk(root):
        here = Path(folder)
        dirs[:] = [d for d in dirs if (here / d).resolve() not in skipped]
        for name in dirs + names:
            path = here / name
            info = path.lstat()
            kind = "link" if path.is_symlink() else ("dir" if path.is_dir() else "file")
            found[str(path.relative_to(root))] = (0 if kind == "dir" else info.st_size, 0 if kind == "dir" else info.st_mtime_ns,
                                                  kind)
    return found


def one_line(capsys: Any, argv: list[str], status: int) -> str:
    """Run the CLI; its exit status must be ``status`` and stderr exactly one ``zsim:`` line."""
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == status, (code, err)
    assert len(err) == 1, err
    assert err[0].startswith("zsim: ") and "Traceback" not in err[0]
    return err[0]
