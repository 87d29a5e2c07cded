"""The compiled hot path and its pure-Python twin give the same ledgers (``zsim.native``).

This process runs whichever mode is installed (``tests/model/test_fingerprints.py`` checks it
against the pinned fingerprints); here a child process runs every pinned scenario in the
other mode. With no compiled modules built there is no other mode: the test is skipped,
unless ``ZSIM_REQUIRE_COMPILED=1`` (CI sets it: its install must have compiled them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import zsim
from zsim import native

ROOT = Path(__file__).resolve().parents[2]
PINNED = json.loads((ROOT / "tests" / "fingerprints.json").read_text())


def _child(code: str, pure: bool) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop(native.PURE_ENV, None)
    if pure:
        env[native.PURE_ENV] = "1"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)


def test_this_process_runs_the_mode_it_reports():
    mode = native.mode()
    if os.environ.get("ZSIM_REQUIRE_COMPILED") == "1":
        assert mode == "compiled", f"ZSIM_REQUIRE_COMPILED=1 but zsim runs {native.describe()}"
    assert mode in ("compiled", "pure-python")
    expected = (".so", ".pyd") if mode == "compiled" else (".py",)
    for module in native.MODULES:
        assert sys.modules[module].__file__.endswith(expected), module


def test_zsim_pure_python_imports_the_py_files_and_says_so():
    code = ("import sys, zsim; from zsim import native; "
            "print(native.mode(), all(sys.modules[m].__file__.endswith('.py') for m in native.MODULES))")
    out = _child(code, pure=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["pure-python", "True"]
    assert out.stderr == ""  # chosen on purpose: no warning
    version = subprocess.run([sys.executable, "-m", "zsim", "--version"], capture_output=True, text=True, cwd=ROOT,
                             env={**os.environ, native.PURE_ENV: "1", "PYTHONPATH": str(ROOT)})
    assert version.stdout.strip() == f"zsim {zsim.__version__}, pure Python ({native.PURE_ENV}=1)"


def test_a_source_newer_than_its_compiled_module_is_not_run(tmp_path, monkeypatch):
    module = native.MODULES[0]
    source = tmp_path.joinpath(*module.split(".")).with_suffix(".py")
    source.parent.mkdir(parents=True)
    source.write_text("")
    built = source.with_suffix(native.importlib.machinery.EXTENSION_SUFFIXES[0])
    built.write_text("")
    monkeypatch.setattr(native, "_ROOT", tmp_path)
    os.utime(built, (1_000_000, 1_000_000))
    os.utime(source, (1_000_001, 1_000_001))  # within the installer's tolerance
    assert native._stale() is None
    os.utime(source, (1_000_010, 1_000_010))  # edited after the build
    assert native._stale() == str(source.relative_to(tmp_path))
    source.with_suffix(".pxd").write_text("")
    os.utime(source, (1_000_000, 1_000_000))
    assert native._stale() == str(source.with_suffix(".pxd").relative_to(tmp_path))  # a changed declaration too


@pytest.mark.slow  # every pinned scenario again in pure Python: bash dev.sh test runs it, test-quick leaves it out
def test_the_other_mode_gives_the_pinned_fingerprints():
    """Every pinned scenario, in the mode this process does not run: bit-identical ledgers."""
    if native.mode() != "compiled":
        if os.environ.get("ZSIM_REQUIRE_COMPILED") == "1":
            pytest.fail(f"ZSIM_REQUIRE_COMPILED=1 but zsim runs {native.describe()}")
        pytest.skip(f"zsim runs {native.describe()}: no compiled mode to compare with (build: pip install -e .)")
    code = ("import json, sys; sys.path.insert(0, 'tests'); from zsim import native; from fingerprint import cases, fingerprint, key; "
            "print(json.dumps({'mode': native.mode(), 'prints': {key(p, s): fingerprint(p, s) for p, s in cases()}}))")
    out = _child(code, pure=True)
    assert out.returncode == 0, out.stderr[-2000:]
    data = json.loads(out.stdout)
    assert data["mode"] == "pure-python"
    assert data["prints"] == PINNED
