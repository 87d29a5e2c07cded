"""The scenario file of one design a search, a sweep report or a comparison chose: its base
scenario with the design's values applied, as TOML a designer can run, read and carry on
(``zsim run``, ``zsim export``, ``zsim validate``), with a header saying what it is, the
command that made it, and the same design as ``--set`` changes of the base file.

The file is the base scenario as written (templates unexpanded, the author's own keys),
with each changed field set by its path (``zsim.spec.set_path``, as sweeps and ``--set``
set them), written by ``zsim.tomlw``. Relative paths in it (a profile file, ``[[app]]``
code) keep their meaning only beside the base scenario, so the header names that folder
and the ``--set`` command, which runs the base file itself. Every text from someone
else's file goes into a comment as one line (``zsim.textsafe.one_line``): a newline in a
name cannot end the comment and add a field.
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from . import spec
from .files import shown_path
from .textsafe import one_line
from .tomlw import to_toml, value_text

#: the name a chosen design's scenario file gets in a results or report folder
CHOSEN = "chosen.toml"


def set_command(base_source: str | None, changes: Sequence[tuple[str, Any]], command: str = "run") -> str | None:
    """``zsim run base.toml --set path=value ...``: the design from its base file, or None
    when the base is no file (an inline ``[base]`` table)."""
    if not base_source or base_source.startswith("<"):
        return None
    words = ["zsim", command, shown_path(base_source)]
    for path, value in changes:
        words += ["--set", f"{path}={value_text(value)}"]
    return " ".join(shlex.quote(word) for word in words)


def design_toml(base: Mapping[str, Any], changes: Sequence[tuple[str, Any]], *, title: str, made_by: str | None,
                base_source: str | None, base_dir: str | None, notes: Sequence[str] = ()) -> str:
    """The base scenario with ``changes`` ((path, value), in order) applied, as TOML with a
    comment header: ``title`` (what the design is and who chose it), the command that
    made it, the changed fields, the same as ``zsim run BASE --set ...``, where relative
    paths point, and any ``notes``."""
    raw = copy.deepcopy(dict(base))
    for path, value in changes:
        spec.set_path(raw, path, copy.deepcopy(value))
    lines = [f"# {one_line(title)}"]
    if made_by:
        lines.append(f"# Made by: {one_line(made_by)}")
    where = shown_path(base_source) if base_source and not base_source.startswith("<") else "the inline [base] scenario"
    if changes:
        lines.append(f"# It is {one_line(where)} with these fields changed:")
        lines += [f"#   {one_line(path)} = {one_line(value_text(value))}" for path, value in changes]
    else:
        lines.append(f"# It is {one_line(where)} as it is.")
    again = set_command(base_source, changes)
    if again:
        lines.append(f"# The same design from its base file: {one_line(again)}")
    if base_dir:
        lines.append(f"# Relative paths in it (a profile file, [[app]] code) are relative to {one_line(base_dir)}, the base "
                     "scenario's folder: run it from a copy there, or with the command above.")
    lines += [f"# {one_line(note)}" for note in notes]
    return to_toml(raw, header="\n".join(lines))
