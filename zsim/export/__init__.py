"""Design to code: ``zsim export FILE --pyzmq OUT.py`` writes a standalone pyzmq program.

The program does what the scenario describes, on real sockets, laid out as a zguide
example: per ``[[process]]`` one function (one OS process with one ``zmq.Context``; a
scenario of one process runs it in a thread), per socket an opener that sets every option
explicitly and binds/connects as written, a thread that owns the socket from ``open_at_s``
to ``close_at_s`` and runs its ``[[send]]``/``[[recv]]`` loops, a poll loop per
``[[proxy]]``, and ``main()``, which starts the processes, ends the run (at ``until_s``, or
when no message has moved for a while) and prints the counts per socket as JSON, the
keys of ``zsim run --json``'s ``sockets`` (``sent``, ``received``, ``send_again``,
``send_unroutable``, ``recv_again``), so a test can compare the two.

What a program cannot express (the profile's costs, the simulator's random streams, a
crash's exact mechanics...) is said in the program's own header, field by field.

Templates (``count = N``): the members of a counted process, or of a counted socket in an
ordinary process, come out as one function with the member index ``i`` when their code
differs only in strings and numbers that are linear in ``i`` (``"w{i+1}_in"`` ->
``f"w{i + 1}_in"``), checked for every member; otherwise each member is written out.

Nothing here imports zmq: the output is text. The stages, each a module that imports only
those listed after it (an import-linter contract in pyproject.toml holds them to it):

* ``program``: the whole text; per process a function, then main(), folding templates;
* ``header``: the program's docstring (with what it cannot express), imports, constants;
* ``sockets``: per socket its opener and the thread that owns it, and the proxies;
* ``loops``: the [[send]], [[recv]] and side-by-side loops a socket's thread runs;
* ``plan``: which thread owns which socket and runs which loops, what waits for a bind,
  and the refusals for what one thread per socket cannot do;
* ``naming``: unique identifiers, and the helpers the code written so far uses;
* ``fold``: the members' texts folded into one text of the member index ``i``;
* ``literals``: scenario text as Python literals, docstrings and comments, and numbers
  and distributions as code and words;
* ``plumbing``: the fixed part of every program (the clock, the end of the run, the counts).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .. import files, spec
from ..errors import ScenarioError
from ..spec import Scenario
from .program import program_text


def export_pyzmq(scenario: Scenario, source: str | None = None, program: str = "program.py") -> str:
    """The source of a standalone pyzmq program that does what ``scenario`` describes.

    ``source`` names the scenario in the program's header (default: its file), ``program``
    the program's file (for its "Run it" line). Raises
    ``ScenarioError`` for what a program cannot be written for (an ``[[app]]``, a socket a
    forwarding stage writes to that has loops of its own).
    """
    from ..limits import MAX_EXPORT_BYTES

    text = program_text(scenario, source if source is not None else scenario.source, program)
    if MAX_EXPORT_BYTES is not None and len(text) > MAX_EXPORT_BYTES:
        templates = ", ".join(f"{t.kind}[{t.name}] (count {t.count:,})" for t in scenario.templates[:3])
        raise ScenarioError("", f"the program would be {len(text) / 2**20:,.0f} MB, more than zsim export writes "
                                f"({MAX_EXPORT_BYTES / 2**20:,.0f} MB, zsim.limits.MAX_EXPORT_BYTES)"
                                + (f": its templates ({templates}) do not fold into loops" if templates else ""))
    return text


def write_pyzmq(scenario_path: str | Path, out: str | Path, load: Callable[[], Scenario] | None = None,
                source: str | None = None) -> Path:
    """``zsim export FILE --pyzmq OUT``: load, write the program atomically, return its path.
    ``load``: how to load the scenario (``zsim export FILE --set PATH=VALUE``: the file with
    its changes, ``zsim.cli.load_scenario``), after the output is checked; ``source``: how
    the program's header names it (default: the file)."""
    files.refuse_overwriting_inputs([out], [scenario_path], "--pyzmq")
    files.prepare_output_file(out, "pyzmq program")
    scenario = load() if load is not None else spec.load(scenario_path)
    text = export_pyzmq(scenario, source if source is not None else files.shown_path(scenario_path), Path(out).name)
    return files.atomic_write(out, text)


__all__ = ["export_pyzmq", "write_pyzmq"]
