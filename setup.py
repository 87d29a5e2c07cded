"""Builds zsim's compiled hot path; everything else is in pyproject.toml.

The modules listed in ``zsim/native.py`` (``MODULES``) are compiled by Cython in its
pure-Python mode (C declarations in the ``.pxd`` beside each ``.py``) with the system C
compiler. If that cannot happen (no Cython, no compiler, a compile error) the install
still succeeds, zsim runs the same ``.py`` files uncompiled, and this prints ONE warning.
``zsim --version`` says which mode an installation runs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def compiled_modules() -> tuple[str, ...]:
    namespace: dict = {"__file__": str(ROOT / "zsim" / "native.py"), "__name__": "zsim_native"}
    code = (ROOT / "zsim" / "native.py").read_text()
    exec(compile(code, "zsim/native.py", "exec"), namespace)  # stdlib only, by design
    return namespace["MODULES"]


WARNING = ("WARNING: zsim's compiled core was not built ({reason}); zsim will run as pure Python, same results, "
           "about 3x slower. Install Cython >= 3 and a C compiler (Debian: gcc, python3-dev), then reinstall.")


def warn(reason: str) -> None:
    print("\n" + WARNING.format(reason=reason) + "\n", file=sys.stderr, flush=True)
    # An editable install keeps its compiled modules beside the sources: remove those of an
    # earlier build, or they would run beside this build's pure-Python modules.
    from importlib.machinery import EXTENSION_SUFFIXES

    for name in compiled_modules():
        source = ROOT.joinpath(*name.split(".")).with_suffix(".py")
        for suffix in EXTENSION_SUFFIXES:
            source.with_suffix(suffix).unlink(missing_ok=True)


class OptionalBuildExt(build_ext):
    """build_ext that turns any failure into the one warning (the extensions are optional)."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 - any failure means: no compiled core
            warn(f"{type(exc).__name__}: {exc}".strip().splitlines()[0])

    def build_extension(self, ext) -> None:  # type: ignore[no-untyped-def]
        # one module failing would leave a mixed installation: fail them all instead
        super().build_extension(ext)


def extensions() -> list:
    if os.environ.get("ZSIM_PURE_PYTHON", "") not in ("", "0"):
        warn("ZSIM_PURE_PYTHON is set")
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        warn("Cython is not installed")
        return []
    from setuptools import Extension

    modules = compiled_modules()
    exts = [Extension(name, [str(Path(*name.split(".")).with_suffix(".py"))],
                      # no fused multiply-add: C must round every operation as Python does
                      extra_compile_args=["-O2", "-ffp-contract=off"]) for name in modules]
    try:
        return cythonize(exts, language_level=3, quiet=True,
                         # the .pxd files are the only C declarations: the .py annotations are for mypy
                         compiler_directives={"binding": False, "annotation_typing": False})
    except Exception as exc:  # noqa: BLE001 - a Cython error: install uncompiled
        warn(f"Cython failed: {exc}")
        return []


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
