"""One run of a sweep again, from its results folder: ``zsim explain --sweep DIR --worst
METRIC`` finds the run whose METRIC is worst (in the direction the metric prefers, as
``zsim compare`` decides it) among the finished runs, rebuilds its scenario from the
manifest the sweep wrote (the base scenario with ``[set]`` applied, the point's changes)
and gives it with its seed, so the run can be explained episode by episode. The same
seed and scenario give the same run (docs/sweeps.md, Seeds).

A results folder is data: the manifest gives the run's scenario, but not where its app
code may come from. The folder of the rebuilt scenario (where its relative paths start)
is the one of the sweep or scenario file the user names with the results
(``base_dir``), else the one the manifest recorded, which ``zsim explain`` then trusts for
nothing but data (it allows app code only from folders named on the command line)."""

from __future__ import annotations

import difflib
import math
import numbers
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import spec as scenario_spec
from ..errors import ScenarioError, ZsimError
from . import store


@dataclass(frozen=True)
class Chosen:
    """The run a question picked, and what is needed to run it again."""

    sweep: str
    point: str
    replication: int
    seed: int
    metric: str
    value: float
    direction: str  # "highest" or "lowest": which end was worst
    runs: int  # finished runs with a value, among which it was chosen
    coords: dict[str, Any]
    code: str | None  # zsim_code of the row (the model that produced it)
    scenario: scenario_spec.Scenario

    def describe(self) -> str:
        where = ", ".join(f"{path} = {value}" for path, value in self.coords.items()) or "the base scenario"
        return (f"the worst run for {self.metric} ({self.direction} of {self.runs:,} finished runs) in sweep {self.sweep!r}: "
                f"{where}, replication {self.replication}, seed {self.seed}: {self.metric} = {self.value:.6g}")


def _directory(out: str | Path, name: str | None) -> Path:
    found = store.sweep_dirs(out)
    if name is not None:
        chosen = [d for d in found if d.name == f"sweep={name}"]
        if not chosen:
            names = ", ".join(d.name.split("=", 1)[1] for d in found)
            raise ScenarioError("--sweep-name", f"no sweep {name!r} in {out} (there: {names})")
        return chosen[0]
    if len(found) > 1:
        names = ", ".join(d.name.split("=", 1)[1] for d in found)
        raise ScenarioError("--sweep", f"{out} holds {len(found)} sweeps ({names}); name one with --sweep-name")
    return found[0]


def worst_run(out: str | Path, metric: str, prefers: str | None, name: str | None = None, base_dir: str | None = None) -> Chosen:
    """The finished run of the sweep in ``out`` whose ``metric`` is worst: the highest when
    ``prefers`` is ``lower`` or None, the lowest when it is ``higher``; its scenario's
    relative paths start at ``base_dir`` (default: the folder the manifest recorded). Bad
    input (no such sweep or metric, no finished run, a manifest from before runs could be
    rebuilt) is one ``ScenarioError`` line."""
    directory = _directory(out, name)
    manifest = store.read_manifest(directory)
    if manifest is None:
        raise ScenarioError("--sweep", f"{directory}: no {store.MANIFEST} (the plan zsim sweep writes); run the sweep again")
    frame = store.read_frame(directory)
    if metric not in frame.columns:
        columns = [c for c in frame.columns if c not in ("sweep", "point", "replication", "seed", "ok", "error")]
        close = difflib.get_close_matches(metric, columns, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else "zsim report lists the metrics"
        raise ScenarioError("--worst", f"{metric!r} is not a metric of the rows of sweep {manifest['name']!r}; {hint}")
    rows = frame[frame["ok"].astype(bool)] if "ok" in frame.columns else frame
    try:
        values = rows[metric].astype(float)
    except (TypeError, ValueError):
        raise ScenarioError("--worst", f"{metric!r} holds values that are not numbers in the rows of sweep {manifest['name']!r}; "
                                       "name a metric") from None
    rows = rows[values.map(math.isfinite)]
    if rows.empty:
        raise ScenarioError("--worst", f"no finished run of sweep {manifest['name']!r} has a value of {metric}")
    highest = prefers != "higher"  # lower is better, or no direction: the highest stands out
    index = rows[metric].astype(float).idxmax() if highest else rows[metric].astype(float).idxmin()
    row = rows.loc[index]
    points = {p["id"]: p for p in manifest["points"]}
    point = points.get(str(row["point"]))
    folder = base_dir if base_dir is not None else manifest.get("base_dir")
    if point is None or "overrides" not in point or folder is None or "base_scenario" not in manifest:
        raise ScenarioError("--sweep", f"{directory}: its {store.MANIFEST} was written by an older zsim and cannot rebuild a run; "
                                       "run the sweep again (finished runs are kept)")
    try:
        raw = scenario_spec.with_overrides(manifest["base_scenario"], point["overrides"])
        scenario = scenario_spec.from_dict(raw, base_dir=folder, source=manifest.get("base_source") or "<sweep>")
    except ScenarioError as exc:
        raise ZsimError(f"{directory}: the point {row['point']} no longer makes a valid scenario ({exc})") from None
    raw_seed = row.get("seed")  # a numpy number from a crafted file can be anything: NaN, negative, a fraction
    seed = float(raw_seed) if isinstance(raw_seed, numbers.Real) and not isinstance(raw_seed, bool) else math.nan
    if not (math.isfinite(seed) and 0 <= seed < 2**64 and seed == int(seed)):
        raise ScenarioError("--sweep", f"{directory}: the row of point {row['point']} replication {row['replication']} has no seed "
                                       "(not a row zsim sweep wrote); it cannot be run again")
    return Chosen(sweep=str(manifest["name"]), point=str(row["point"]), replication=int(row["replication"]), seed=int(raw_seed),
                  metric=metric, value=float(row[metric]), direction="highest" if highest else "lowest", runs=len(rows),
                  coords=dict(point.get("coords") or {}), code=str(row["zsim_code"]) if "zsim_code" in row else None,
                  scenario=scenario)
