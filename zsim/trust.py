"""What a scenario may execute: the explicit opt-in for the Python code ``[[app]]`` names.

A scenario or sweep file is data that travels (mailed, checked out, copied back from a
cluster). ``[[app]] function = "apps/x.py:f"`` (or ``"package.module:f"``) asks zsim to run
Python code, which can do anything the user can. So zsim runs it only when the user says
so:

* the command line: ``--allow-apps`` (app files in the scenario's own folder, and
  installed modules), ``--allow-apps-from DIR`` (app files under DIR too), or the
  environment variable ``ZSIM_ALLOW_APPS=1`` (batch jobs; the same as ``--allow-apps``);
* Python: ``zsim.run(..., allow_apps=True)`` (or an ``AppPermission``); the functions a
  caller passes itself (``zsim.run(..., apps=[f])``) are its own code and always run.

Without it, a scenario that names code is refused before anything runs: one line naming
the field and the flag (``ScenarioError``, exit 2). With it, an app file must resolve
(``..`` and symlinks followed) inside the scenario's folder or a folder
``--allow-apps-from`` names; the command line prints one line per file before the run.

``check`` resolves and hashes every app a scenario names without executing anything; the
runner loads exactly the bytes it hashed. A sweep's or a comparison's workers (a pool
process, a Spark executor) get the driver's list of allowed code (``to_payload``): they
run a file only if the driver allowed that path with that SHA-256, and nothing else.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ScenarioError
from .textsafe import one_line

if TYPE_CHECKING:  # pragma: no cover
    from .spec import Scenario

#: The environment variable that allows app code for batch use (``1``, ``true``, ``yes``).
ENV_VAR = "ZSIM_ALLOW_APPS"
_ON = ("1", "true", "yes", "on")
_OFF = ("", "0", "false", "no", "off")
#: The refusal's advice on the command line and in Python.
HOW_CLI = f"--allow-apps (or {ENV_VAR}=1)"
HOW_API = "allow_apps=True"
#: Largest app file zsim reads (the shipped example is 3 KB).
MAX_APP_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class AppPermission:
    """What code named by a scenario may run.

    ``allowed``: files in the scenario's own folder and installed modules; ``folders``:
    further folders (absolute, symlinks resolved) files may come from; ``granted``: on a
    worker, exactly these ``(key, sha256)`` pairs the driver allowed and nothing else
    (None: not a worker). ``how`` is what a refusal tells the user to do; ``because`` what
    the announcement says allowed it.
    """

    allowed: bool = False
    folders: tuple[str, ...] = ()
    granted: tuple[tuple[str, str], ...] | None = None
    how: str = HOW_API
    because: str = HOW_API

    @property
    def any(self) -> bool:
        return self.allowed or bool(self.folders) or bool(self.granted)

    def to_payload(self, codes: Iterable[AppCode]) -> dict[str, Any]:
        """What a sweep's workers get: the code the driver checked and allowed, by key and hash."""
        return {"granted": sorted({(code.key, code.sha256 or "") for code in codes}), "how": self.how}

    @classmethod
    def from_payload(cls, data: Any) -> AppPermission:
        """A worker's permission: exactly what the driver granted (nothing if it sent nothing)."""
        if not isinstance(data, Mapping):
            return cls(granted=(), how="the driver's --allow-apps (this worker was given no permission to run app code)")
        granted = tuple((str(key), str(digest)) for key, digest in data.get("granted", ()))
        return cls(granted=granted, how=str(data.get("how", HOW_CLI)))


def permission(value: bool | AppPermission | None) -> AppPermission:
    """``zsim.run``'s ``allow_apps`` argument as an ``AppPermission``."""
    if isinstance(value, AppPermission):
        return value
    if value is None or value is False:
        return AppPermission()
    if value is True:
        return AppPermission(allowed=True)
    raise ScenarioError("allow_apps", f"must be True, False or a zsim.AppPermission, got {value!r}")


def env_allows(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``ZSIM_ALLOW_APPS`` is set to a true value; any other value is refused."""
    value = (environ if environ is not None else os.environ).get(ENV_VAR)
    if value is None:
        return False
    text = value.strip().lower()
    if text in _ON:
        return True
    if text in _OFF:
        return False
    raise ScenarioError(ENV_VAR, f"must be 1 (run the code scenarios name) or 0, got {value!r}")


def from_command_line(allow: bool, folders: Sequence[str] | None, environ: Mapping[str, str] | None = None) -> AppPermission:
    """The permission ``--allow-apps``, ``--allow-apps-from DIR`` and ``ZSIM_ALLOW_APPS`` give."""
    resolved = []
    for folder in folders or ():
        path = Path(folder)
        if not path.is_dir():
            raise ScenarioError(f"--allow-apps-from {folder}", "is not a folder")
        resolved.append(str(path.resolve()))
    from_env = env_allows(environ)
    because = "--allow-apps" if allow else (f"{ENV_VAR}=1" if from_env else HOW_CLI)
    return AppPermission(allowed=allow or from_env, folders=tuple(resolved), how=HOW_CLI, because=because)


@dataclass(frozen=True)
class AppCode:
    """One ``[[app]]`` checked: the file or module it runs and the function in it."""

    app: str
    field: str  # the field path: ``app[broker].function``
    reference: str  # as written in the scenario
    function: str  # the function's name in the file or module
    file: str | None = None  # the file, absolute, symlinks resolved
    module: str | None = None  # or the module
    sha256: str | None = None  # of the file's bytes, as checked
    because: str = HOW_API  # what allowed it

    @property
    def key(self) -> str:
        return f"file:{self.file}" if self.file is not None else f"module:{self.module}"


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_app_file(path: str | Path, field: str) -> bytes:
    """The bytes of an app file (a regular file of sane size), read once."""
    from . import files

    try:
        return files.read_bytes(path, "Python file", MAX_APP_BYTES)
    except ScenarioError as exc:
        raise ScenarioError(field, exc.reason if exc.path == str(path) else str(exc)) from None


def check(scenario: Scenario, allow: AppPermission) -> list[AppCode]:
    """Every ``[[app]]`` of ``scenario`` resolved and checked against ``allow``, nothing
    executed; a ``ScenarioError`` naming the field for the first one not allowed."""
    codes = []
    for app in scenario.apps:
        codes.append(check_one(app.name, app.function, scenario.base_dir, allow))
    return codes


def check_one(name: str, reference: str, base_dir: str | None, allow: AppPermission) -> AppCode:
    field = f"app[{name}].function"
    target, _, function = reference.rpartition(":")
    is_file = target.endswith(".py")
    what = f"runs Python code from {target!r}" if is_file else f"imports the Python module {target!r}"
    if allow.granted is not None:
        return _check_granted(name, field, reference, target, function, base_dir, allow)
    if not allow.any:
        raise ScenarioError(field, f"{what}; zsim runs a scenario's code only with {allow.how}")
    if not is_file:
        if not allow.allowed:
            raise ScenarioError(field, f"{what}; --allow-apps-from allows files in its folders only, a module needs "
                                       f"{allow.how}")
        return AppCode(name, field, reference, function, module=target, because=allow.because)
    base = Path(base_dir if base_dir is not None else ".").resolve()
    written = Path(target)
    candidate = written if written.is_absolute() else base / written
    resolved = candidate.resolve()
    roots = ([(base, allow.because)] if allow.allowed else []) + [(Path(f), f"--allow-apps-from {f}") for f in allow.folders]
    because = next((reason for root, reason in roots if _inside(resolved, root)), None)
    if because is None:
        where = "an absolute path" if written.is_absolute() else f"{str(resolved)!r}"
        folders = " or ".join(repr(str(root)) for root, _ in roots)
        raise ScenarioError(field, f"{target!r} is {where}, outside {folders}: zsim runs app files from the scenario's folder "
                                   "only (--allow-apps-from DIR allows another folder)")
    if not resolved.is_file():
        raise ScenarioError(field, f"no file {str(candidate)!r}")
    data = read_app_file(resolved, field)
    return AppCode(name, field, reference, function, file=str(resolved), sha256=_digest(data), because=because)


def _check_granted(name: str, field: str, reference: str, target: str, function: str, base_dir: str | None,
                   allow: AppPermission) -> AppCode:
    """On a worker: the code must be what the driver allowed, byte for byte."""
    granted = dict(allow.granted or ())
    if target.endswith(".py"):
        written = Path(target)
        resolved = (written if written.is_absolute() else Path(base_dir if base_dir is not None else ".") / written).resolve()
        key = f"file:{resolved}"
        if key not in granted:
            raise ScenarioError(field, f"runs Python code from {target!r}, which the driver did not allow: a worker runs only the "
                                       f"code the command that started it allowed ({allow.how})")
        if not resolved.is_file():
            raise ScenarioError(field, f"no file {str(resolved)!r} on this worker")
        digest = _digest(read_app_file(resolved, field))
        if digest != granted[key]:
            raise ScenarioError(field, f"{str(resolved)!r} on this worker differs from the file the driver allowed "
                                       f"(SHA-256 {digest[:12]}, allowed {granted[key][:12]}): not run")
        return AppCode(name, field, reference, function, file=str(resolved), sha256=digest, because="the driver")
    if f"module:{target}" not in granted:
        raise ScenarioError(field, f"imports the Python module {target!r}, which the driver did not allow: a worker runs only "
                                   f"the code the command that started it allowed ({allow.how})")
    return AppCode(name, field, reference, function, module=target, because="the driver")


def announcements(codes: Sequence[AppCode]) -> list[str]:
    """One line per file (or module) that will execute, for stderr before the run."""
    by_target: dict[tuple[str, str], list[str]] = {}
    for code in codes:
        target = (f"running app code from {code.file}" if code.file is not None else f"importing app module {code.module}",
                  code.because)
        if code.function not in by_target.setdefault(target, []):
            by_target[target].append(code.function)
    lines = []
    for (what, because), functions in by_target.items():
        label = "function" if len(functions) == 1 else "functions"
        lines.append(one_line(f"zsim: {what} ({label} {', '.join(functions)}), as {because} allows"))
    return lines


def check_scenarios(scenarios: Iterable[tuple[str, Scenario]], allow: AppPermission) -> list[AppCode]:
    """``check`` over several scenarios (a sweep's points, a comparison's designs); an error
    is prefixed with the label of the scenario it came from (``''``: none)."""
    codes: dict[tuple[str, str, str], AppCode] = {}
    for label, scenario in scenarios:
        try:
            found = check(scenario, allow)
        except ScenarioError as exc:
            if not label:
                raise
            raise ScenarioError(f"{label}: {exc.path}", exc.reason) from None
        for code in found:
            codes.setdefault((code.app, code.key, code.function), code)
    return list(codes.values())
