"""Running a batch of sweep runs inside a worker (a Spark Python worker, a pool process or
the driver itself): the one piece of code every engine executes, so every engine produces
the same rows.

A worker gets the plan's payload once (a Spark broadcast, a pool initializer) and keeps
the validated scenario of each point it has seen, so a batch of replications of one point
parses its scenario once. A point is the base scenario with its overrides, or (``zsim
compare``, designs from different files) a whole scenario of its own with its folder. A
run never raises out of here: a model fault, a timeout or an unexpected exception becomes
a row with ``ok = False`` and the error text.

Time limit. Every run gets the payload's ``run_timeout_s`` (the sweep's, default 600 s;
None = no limit) twice: as the runner's ``max_wall_s`` work limit (on top of the
scenario's own ``[limits]``), and as a ``SIGALRM`` timer that interrupts the run wherever
it is (``RunTimeout``), in case the runner does not get to check its clock.
"""

from __future__ import annotations

import copy
import dataclasses
import signal
import threading
import time
import traceback
from collections.abc import Iterable, Mapping
from typing import Any

from .. import __version__
from .. import spec as scenario_spec
from ..errors import ZsimError
from ..limits import DEFAULT as DEFAULT_LIMITS
from ..limits import RunLimits
from ..metrics import FLOAT_SUFFIXES, drop_member_columns, flat_metrics, template_members
from ..runner import run
from ..trust import AppPermission
from .plan import DEFAULT_MEMBER_COLUMNS, column_value

#: payload digest -> {point id: Scenario}; survives between batches in a reused worker.
_SCENARIOS: dict[str, dict[str, scenario_spec.Scenario]] = {}
#: Error texts are cut to this many characters (a row is not a log file).
MAX_ERROR_CHARS = 4000


_CODE: str | None = None
#: Parts of the zsim package that cannot change a run's result.
_NOT_MODEL = ("sweep", "plotting.py", "cli.py", "__main__.py", "demo.py")


def code_fingerprint() -> str:
    """A short hash of the zsim source and profiles that decide a run's result.

    Stored with every row, so a resumed sweep can tell rows computed by other zsim code
    (an upgrade, a local edit) from its own.
    """
    global _CODE
    if _CODE is None:
        import hashlib
        from pathlib import Path

        root = Path(__file__).resolve().parents[1]
        digest = hashlib.sha256()
        for path in sorted(list(root.rglob("*.py")) + list(root.rglob("profiles/*.toml"))):
            relative = path.relative_to(root).as_posix()
            if relative.split("/")[0] in _NOT_MODEL or "__pycache__" in relative:
                continue
            digest.update(relative.encode() + b"\0" + path.read_bytes() + b"\0")
        _CODE = digest.hexdigest()[:12]
    return _CODE


class RunTimeout(Exception):
    """A run took longer than the sweep's ``run_timeout_s``."""


def _scenario(payload: Mapping[str, Any], point_id: str) -> scenario_spec.Scenario:
    cache = _SCENARIOS.get(payload["digest"])
    if cache is None:
        _SCENARIOS.clear()  # a new sweep: forget the previous one's scenarios
        cache = _SCENARIOS[payload["digest"]] = {}
    scenario = cache.get(point_id)
    if scenario is None:
        point = payload["points"][point_id]
        if "scenario" in point:  # a design of ``zsim compare``: a whole scenario, from its own file and folder
            scenario = scenario_spec.from_dict(copy.deepcopy(point["scenario"]), base_dir=point["base_dir"], source=point["source"])
        else:
            raw = scenario_spec.with_overrides(payload["base"], point["overrides"])
            scenario = scenario_spec.from_dict(raw, base_dir=payload["base_dir"], source=payload["source"])
        cache[point_id] = scenario
    return scenario


def _alarm(signum: int, frame: Any) -> None:
    raise RunTimeout("run exceeded run_timeout_s")


def run_limits(scenario: scenario_spec.Scenario, timeout: float | None) -> RunLimits:
    """The work limits of one sweep run: the defaults, the scenario's ``[limits]``, and the
    sweep's time limit (``timeout`` seconds; None = no limit) as ``max_wall_s``."""
    limits = DEFAULT_LIMITS
    raw = getattr(scenario, "raw", None)
    table = raw.get("limits") if isinstance(raw, Mapping) else None
    if isinstance(table, Mapping):
        limits = limits.merged(table, "limits")
    return dataclasses.replace(limits, max_wall_s=timeout)


def _run(scenario: scenario_spec.Scenario, seed: int, limits: RunLimits,
         allow: AppPermission | None = None) -> tuple[dict[str, Any], Any]:
    """``zsim.runner.run_safe`` that keeps the ``RunResult`` (its message table gives the
    per-socket delivery times): (summary, result), or (a failure record, None). ``allow``:
    the code the driver allowed (``AppPermission.from_payload``; None: none)."""
    started = time.perf_counter()
    try:
        result = run(scenario, seed, limits=limits, allow_apps=allow if allow is not None else AppPermission.from_payload(None))
        return dict(result.summary), result
    except ZsimError as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "seed": seed, "wall_s": time.perf_counter() - started}, None
    except Exception as exc:  # noqa: BLE001 - a sweep records every fault
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=8), "seed": seed,
                "wall_s": time.perf_counter() - started}, None


def _metrics(summary: Mapping[str, Any], result: Any = None, scenario: Any = None,
             member_columns: int = DEFAULT_MEMBER_COLUMNS) -> dict[str, Any]:
    row: dict[str, Any] = {}
    flat = flat_metrics(dict(summary), result, scenario)
    templates = summary.get("templates") or (template_members(scenario) if getattr(scenario, "templates", None) else None)
    if templates:
        drop_member_columns(flat, templates, member_columns, summary)
    for key, value in flat.items():
        if isinstance(value, bool):
            row[key] = value
        elif isinstance(value, (int, float)):
            row[key] = float(value) if key.endswith(FLOAT_SUFFIXES) else value  # zsim.metrics.FLOAT_SUFFIXES
        else:
            row[key] = value
    return row


def run_task(payload: Mapping[str, Any], point_id: str, replication: int, seed: int) -> dict[str, Any]:
    """One run as one row: point, replication, seed, ok, error, axis values, metrics."""
    point = payload["points"][point_id]
    row: dict[str, Any] = {"point": point_id, "replication": int(replication), "seed": int(seed)}
    coords = dict((k, v) for k, v in point["coords"])
    for path, kind in payload["axes"]:
        row[path] = column_value(coords[path], kind)
    started = time.perf_counter()
    raw_timeout = payload.get("run_timeout_s")
    timeout = float(raw_timeout) if raw_timeout else None
    use_alarm = timeout is not None and threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    previous = None
    scenario: scenario_spec.Scenario | None = None
    result = None
    try:
        scenario = _scenario(payload, point_id)
        limits = run_limits(scenario, timeout)
        if use_alarm:
            assert timeout is not None
            previous = signal.signal(signal.SIGALRM, _alarm)
            signal.setitimer(signal.ITIMER_REAL, timeout)
        summary, result = _run(scenario, seed, limits, AppPermission.from_payload(payload.get("apps")))
    except Exception as exc:  # noqa: BLE001 - building the scenario failed; record it
        summary = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
    ok = bool(summary.get("ok", True)) and "ledger" in summary
    row["ok"] = ok
    if ok:
        row["error"] = None
        try:
            row.update(_metrics(summary, result, scenario, int(payload.get("member_columns", DEFAULT_MEMBER_COLUMNS))))
        except Exception as exc:  # noqa: BLE001 - a summary we cannot flatten is a failed run
            row["ok"] = False
            row["error"] = f"{type(exc).__name__} while flattening the summary: {exc}"
        row["scenario_digest"] = summary.get("scenario_digest")
    else:
        error = str(summary.get("error", "unknown error"))
        if summary.get("traceback"):
            error += "\n" + str(summary["traceback"])
        row["error"] = error[:MAX_ERROR_CHARS]
    row["wall_s"] = time.perf_counter() - started
    row["zsim_version"] = __version__
    row["zsim_code"] = code_fingerprint()
    return row


def run_batch(payload: Mapping[str, Any], tasks: Iterable[tuple[str, int, int]]) -> list[dict[str, Any]]:
    """Run every ``(point id, replication, seed)`` of a batch, in order."""
    return [run_task(payload, point_id, replication, seed) for point_id, replication, seed in tasks]
