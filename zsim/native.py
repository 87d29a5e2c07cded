"""Compiled or pure Python: which copy of the model's hot modules this process runs.

The modules in ``MODULES`` are plain Python files that Cython can compile in its
pure-Python mode: the ``.pxd`` file beside each declares C types for its classes, fields
and methods, and the ``.py`` file itself does not change. ``pip install`` (``setup.py``)
compiles them with the system C compiler when it can, and installs them uncompiled
otherwise. Both copies give bit-identical ledgers (``tests/model/test_compiled.py`` checks the
pinned fingerprints in both modes).

Which copy runs:

* ``ZSIM_PURE_PYTHON=1``: the ``.py`` files, even where compiled ones exist (a finder put
  in front of ``sys.meta_path`` by ``select()``; Python would otherwise prefer the
  extension module beside the source).
* otherwise the compiled module where one exists; a compiled module *older than its
  source* (the ``.py`` was edited after the build) is not used: every module then runs
  pure Python, with one warning naming the file, so an edit never silently runs stale
  code. ``bash dev.sh setup`` rebuilds.

``mode()`` says which happened: it is printed by ``zsim --version`` and written into every
run's ``summary["versions"]["zsim_mode"]``.

This module imports only the standard library: ``setup.py`` reads ``MODULES`` from it
before any dependency is installed.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

#: the modules compiled by setup.py (each has a ``.pxd`` of C declarations beside it)
MODULES = (
    "zsim.model.kernel",
    "zsim.model.sink",
    "zsim.model.context",
    "zsim.model.pipe",
    "zsim.model.peer",
    "zsim.model.routing",
    "zsim.model.socket",
    "zsim.model.sockets",
    "zsim.model.appthread",
    "zsim.model.workload",
    "zsim.model.cpu",
    "zsim.ledger",
    "zsim.sampler",
)

#: set to 1 to run the ``.py`` files even where compiled modules are installed
PURE_ENV = "ZSIM_PURE_PYTHON"

_ROOT = Path(__file__).resolve().parent.parent
_reason = ""  # why this process runs pure Python, once select() has run
_selected = False


def source_path(module: str) -> Path:
    return _ROOT.joinpath(*module.split(".")).with_suffix(".py")


def compiled_path(module: str) -> Path | None:
    """The extension module built for ``module``, if there is one."""
    source = source_path(module)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = source.with_suffix(suffix)
        if candidate.exists():
            return candidate
    return None


class _SourceFinder(importlib.abc.MetaPathFinder):
    """Finds the ``.py`` file of a compiled module, ahead of Python's own finders."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MODULES:
            return None
        source = source_path(fullname)
        if not source.exists():  # pragma: no cover - an installation without sources
            return None
        return importlib.util.spec_from_file_location(fullname, source)


def _stale() -> str | None:
    """The first compiled module whose source or declarations changed since the build."""
    for module in MODULES:
        built = compiled_path(module)
        if built is None:
            continue
        limit = built.stat().st_mtime + 2.0  # an installer writes a wheel's files in any order, within moments
        for source in (source_path(module), source_path(module).with_suffix(".pxd")):
            if source.exists() and source.stat().st_mtime > limit:
                return str(source.relative_to(_ROOT))
    return None


def select() -> None:
    """Decide, once per process and before any of ``MODULES`` is imported, which copy runs."""
    global _reason, _selected
    if _selected:
        return
    _selected = True
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        _reason = f"{PURE_ENV}={os.environ[PURE_ENV]}"
    else:
        stale = _stale()
        if stale is None:
            return
        _reason = f"{stale} is newer than its compiled module"
        # one line on stderr, not a Python warning: where it was raised from means nothing here
        print(f"zsim: warning: {_reason}; running pure Python (slower) until it is rebuilt: `bash dev.sh setup` "
              "or `pip install -e .`", file=sys.stderr)
    if any(module in sys.modules for module in MODULES):  # pragma: no cover - select() runs first
        raise RuntimeError(f"zsim.native.select() ran after a compiled module was imported ({_reason})")
    sys.meta_path.insert(0, _SourceFinder())


def is_compiled(module: str) -> bool:
    loaded = sys.modules.get(module) or importlib.import_module(module)
    return isinstance(getattr(loaded, "__loader__", None), importlib.machinery.ExtensionFileLoader)


def mode() -> str:
    """``compiled``, ``pure-python`` or ``mixed`` (some modules compiled: a broken build)."""
    compiled = [is_compiled(module) for module in MODULES]
    return "compiled" if all(compiled) else "pure-python" if not any(compiled) else "mixed"


def describe() -> str:
    """``mode()`` in words, with the reason for pure Python (``zsim --version``)."""
    current = mode()
    if current == "compiled":
        return "compiled"
    if current == "pure-python":
        return f"pure Python ({_reason or 'no compiled modules are installed'})"
    missing = [m for m in MODULES if not is_compiled(m)]  # pragma: no cover - a broken build
    return f"partly compiled ({', '.join(missing)} not compiled: reinstall)"  # pragma: no cover


if __name__ == "zsim.native":  # not when setup.py reads MODULES
    select()  # on import: zsim/__init__.py imports this module before anything else
