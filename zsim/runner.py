"""Run one scenario with one seed: build, simulate, account for every message, summarise.

``run`` returns a ``RunResult`` and raises on bad input (``ScenarioError``) or on a model
fault (``ConservationError``); ``run_safe`` never raises and records the fault instead, for
sweeps where one failed run must not stop the others.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import spec
from .build import Model, build
from .errors import ScenarioError, ZsimError
from .limits import RunLimits
from .profile import Profile
from .results import RunResult, summarise


def _scenario(scenario: spec.Scenario | Mapping[str, Any] | str | Path) -> spec.Scenario:
    if isinstance(scenario, spec.Scenario):
        return scenario
    return spec.load(scenario)  # type: ignore[arg-type]


def simulate(model: Model) -> None:
    """Run the event loop to the horizon (or until nothing can move) and close the books."""
    until = model.scenario.until_s
    model.env.run(until=until)
    now = model.env.now
    ledger = model.ledger
    for msg, socket_index, pipe_index, where in model.world.unfinished():
        ledger.queued(msg, socket_index, pipe_index, where, now)


def run(
    scenario: spec.Scenario | Mapping[str, Any] | str | Path,
    seed: int | None = None,
    *,
    profile: Profile | None = None,
    trace: bool = False,
    limits: RunLimits | None = None,
) -> RunResult:
    """Simulate ``scenario`` with ``seed`` (default: the scenario's seed, else 0)."""
    started = time.perf_counter()
    scen = _scenario(scenario)
    if seed is None:
        seed = scen.seed if scen.seed is not None else 0
    if seed < 0:
        raise ScenarioError("seed", f"must be >= 0, got {seed}")
    model = build(scen, seed, profile=profile, trace_depth=trace)
    simulate(model)
    wall = time.perf_counter() - started
    return summarise(model, wall)


def run_safe(
    scenario: spec.Scenario | Mapping[str, Any] | str | Path,
    seed: int | None = None,
    *,
    profile: Profile | None = None,
    limits: RunLimits | None = None,
) -> dict[str, Any]:
    """Like ``run(...).summary`` but never raises: a failure becomes a record with ``error``."""
    started = time.perf_counter()
    try:
        return run(scenario, seed, profile=profile, limits=limits).summary
    except ZsimError as exc:
        kind = type(exc).__name__
        return {"ok": False, "error": f"{kind}: {exc}", "seed": seed, "wall_s": time.perf_counter() - started}
    except Exception as exc:  # noqa: BLE001 - a sweep records every fault
        return {
            "ok": False,
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(limit=8),
            "seed": seed,
            "wall_s": time.perf_counter() - started,
        }
