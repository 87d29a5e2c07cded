"""Running a search: its designs are the points of a grid sweep, its runs go through the
sweep engines (``serial``, ``local``, ``spark``) in batches, and its rows are written in
the sweep format (``DIR/sweep=<name>/point=<id>/part-*.parquet`` and ``_sweep.json``), so
``zsim report DIR`` and pandas read them and a killed search resumes: the procedure
recomputes every decision from the stored rows and asks only for the runs it lacks.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from .. import expressions, files, trust
from ..errors import EnvironmentFault, ScenarioError, ZsimError
from ..sweep import store
from ..sweep.execute import ENGINES, check_apps, make_engine
from ..sweep.plan import Plan, Task, batches, check_run_timeout, seed_for
from ..textsafe import terminal
from . import spec
from .procedure import Constraint, Monotone, Outcome, Procedure, State

DEFAULT_OUT = "out/searches"


@dataclass
class Part:
    """The search of one condition (the whole search when it has no ``[conditions]``): its
    designs, numbered 0 .. k-1 by its procedure, are ``designs`` in the plan."""

    condition: dict[str, Any]  # condition path -> value; {} without conditions
    designs: list[int]
    procedure: Procedure
    outcome: Outcome | None = None


class Local:
    """One condition's view of the rows (``procedure.Data``), its designs numbered 0 .. k-1."""

    def __init__(self, data: Rows, designs: list[int]) -> None:
        self.data, self.designs = data, designs

    def available(self, design: int) -> int:
        return self.data.available(self.designs[design])

    def values(self, design: int, constraint: int, n: int) -> np.ndarray:
        return self.data.values(self.designs[design], constraint, n)

    def unsteady(self, design: int, constraint: int, n: int) -> np.ndarray:
        return self.data.unsteady(self.designs[design], constraint, n)

    def exact(self, design: int, n: int) -> bool:
        return self.data.exact(self.designs[design], n)


@dataclass
class SearchRun:
    """A finished (or budget-stopped) search: the answer is made from it (``zsim.search.answer``)."""

    search: spec.Search
    plan: Plan
    parts: list[Part]  # one per condition, in grid order (one without conditions)
    data: Rows
    directory: Path
    costs: list[float]
    ran: int  # runs made by this call (the rest were on disk)
    engine: str
    wall_s: float
    rounds: int

    @property
    def procedure(self) -> Procedure:
        """The first (without conditions: the only) condition's procedure."""
        return self.parts[0].procedure

    @property
    def outcome(self) -> Outcome:
        """The first (without conditions: the only) condition's outcome; its ``answer`` is an
        index into ``plan.points`` only without conditions (``Part.designs`` maps it)."""
        outcome = self.parts[0].outcome
        assert outcome is not None
        return outcome


class Rows:
    """The search's rows by design and replication, with each constraint's metric (derived
    metrics computed as ``zsim report`` does) and each run's steady-state flag for it."""

    def __init__(self, plan: Plan, search: spec.Search, results: Any) -> None:
        self.ids = [p.id for p in plan.points]
        self.index = {pid: d for d, pid in enumerate(self.ids)}
        self.search = search
        self.results = results  # zsim.sweep.report.SweepResults: names the derived metrics and sockets
        self.rows: list[dict[int, dict[str, Any]]] = [{} for _ in self.ids]
        self._values: dict[tuple[int, int], np.ndarray] = {}
        self._unsteady: dict[tuple[int, int], np.ndarray] = {}

    def add(self, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            d = self.index.get(row["point"])
            if d is not None:
                self.rows[d][int(row["replication"])] = row
                for j in range(len(self.search.constraints)):
                    self._values.pop((d, j), None)

    def available(self, design: int) -> int:
        have, n = self.rows[design], 0
        while n in have:
            n += 1
        return n

    def frame(self, design: int, n: int) -> Any:
        import pandas as pd

        from ..metrics import add_aliases, add_derived_frame

        frame = pd.DataFrame([self.rows[design][r] for r in range(n)])
        add_aliases(frame)
        add_derived_frame(frame, self.search.derived)
        return frame

    def values(self, design: int, constraint: int, n: int) -> np.ndarray:
        cached = self._values.get((design, constraint))
        if cached is None or len(cached) < n:
            n_all = self.available(design)
            if n_all == 0:  # a design never run (its verdicts implied along a monotone variable): no values
                return np.empty(0)
            frame = self.frame(design, n_all)
            metric = self.search.constraints[constraint].metric
            column = frame[metric].astype(float).to_numpy() if metric in frame.columns else np.full(n_all, np.nan)
            ok = frame["ok"].astype(bool).to_numpy()
            cached = np.where(ok, column, np.nan)
            self._values[(design, constraint)] = cached
        return cached[:n]

    def unsteady(self, design: int, constraint: int, n: int) -> np.ndarray:
        key = (design, constraint)
        cached = self._unsteady.get(key)
        if cached is None or len(cached) < n:
            from ..sweep.report import unsteady

            if n == 0:
                return np.empty(0)

            frame = self.frame(design, n)
            cached, _ = unsteady(self.results, frame, self.search.constraints[constraint].metric)
            self._unsteady[key] = cached
        return cached[:n]

    def exact(self, design: int, n: int) -> bool:
        rows = [self.rows[design].get(r) for r in range(n)]
        return n > 0 and all(row is not None and bool(row.get("ok")) and row.get("seed_independent") == 1 for row in rows)

    def digest(self, design: int) -> str | None:
        row = self.rows[design].get(0)
        return None if row is None else str(row.get("scenario_digest"))


def _costs(search: spec.Search, plan: Plan) -> list[float]:
    expression = expressions.parse(search.cost)
    costs = []
    for point in plan.points:
        value = expression.evaluate(point.overrides.get)
        if value is None or value != value:
            where = ", ".join(f"{k} = {v}" for k, v in point.coords)
            raise ScenarioError("search.cost", f"has no value at the design ({where}) (a division by zero?)")
        costs.append(value)
    return costs


def _coordinate(value: Any) -> Any:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else repr(value)


def make_parts(search: spec.Search, plan: Plan, costs: list[float], budget_runs: int | None = None) -> list[Part]:
    """A procedure per condition, over the designs of that condition. The Bonferroni split
    covers every test of every condition (``family``), so the stated confidence holds for
    all the conditions' answers together."""
    conditions = {c.path for c in search.conditions}
    groups: dict[tuple[tuple[str, Any], ...], list[int]] = {}
    for d, point in enumerate(plan.points):
        groups.setdefault(tuple((k, v) for k, v in point.coords if k in conditions), []).append(d)
    constraints = [Constraint(c.metric, c.sense, c.target, c.indifference, c.bounds) for c in search.constraints]
    monotone = [Monotone(i, v.monotone) for i, v in enumerate(search.variables) if v.monotone]
    parts = []
    for key, designs in groups.items():
        points = [plan.points[d] for d in designs]
        coords = [[_coordinate(v) for k, v in p.coords if k not in conditions] for p in points]
        procedure = Procedure([costs[d] for d in designs], coords, constraints, monotone, confidence=search.confidence,
                              n0=search.initial_replications, budget_runs=search.budget_runs if budget_runs is None else budget_runs,
                              width=search.width, names=[", ".join(f"{path} = {value}" for path, value in p.coords) for p in points],
                              family=len(plan.points) * len(constraints))
        parts.append(Part(dict(key), designs, procedure))
    return parts


def make_procedure(search: spec.Search, plan: Plan, costs: list[float], budget_runs: int | None = None) -> Procedure:
    """The procedure of a search without conditions (its one part)."""
    parts = make_parts(search, plan, costs, budget_runs)
    if len(parts) != 1:
        raise ValueError("a search with conditions has a procedure per condition: make_parts")
    return parts[0].procedure


def _manifest_plan(plan: Plan, replications: int) -> Plan:
    return dataclasses.replace(plan, sweep=dataclasses.replace(plan.sweep, replications=max(1, replications)))


def run_search(source: str | Path | spec.Search, out: str | Path = DEFAULT_OUT, *, engine: str = "serial",
               master: str | None = None, workers: int | None = None, conf: Mapping[str, str] | None = None,
               budget_runs: int | None = None, run_timeout_s: float | None = None,
               allow_apps: bool | trust.AppPermission = False, stream: IO[str] | None = files.STDERR) -> SearchRun:
    """Run the search a file describes into ``out`` (resuming what is there) and return it.

    Raises ``ScenarioError`` for a bad file or argument before anything runs,
    ``EnvironmentFault`` when ``out`` cannot be written, the engine cannot start or runs
    were lost (run the same command again), ``KeyboardInterrupt`` after writing what
    finished."""
    if engine not in ENGINES:
        raise ZsimError(f"unknown engine {engine!r}; one of {', '.join(ENGINES)}")
    if master is not None and engine != "spark":
        raise ZsimError("--master is for --engine spark")
    if budget_runs is not None and (isinstance(budget_runs, bool) or not isinstance(budget_runs, int) or budget_runs < 1):
        raise ScenarioError("--budget-runs", f"must be a whole number >= 1, got {budget_runs!r}")
    try:
        import pandas  # noqa: F401
        import scipy  # noqa: F401
    except ImportError as exc:
        raise EnvironmentFault("zsim search", f"needs {exc.name}: pip install 'zsim[results,stats]'") from None
    search = source if isinstance(source, spec.Search) else spec.load(source)
    say = (lambda text: (stream.write(terminal(text) + "\n"), stream.flush())) if stream is not None else (lambda text: None)
    plan = spec.plan(search)
    costs = _costs(search, plan)
    parts = make_parts(search, plan, costs, budget_runs)
    procedure = parts[0].procedure
    budget = procedure.budget_runs
    timeout = search.sweep.run_timeout_s if run_timeout_s is None else check_run_timeout(run_timeout_s, "--run-timeout")
    apps = check_apps(plan, trust.permission(allow_apps), say)
    files.prepare_output_dir(out, "the output folder (--out)")
    directory = store.sweep_dir(out, search.name)
    files.check_not_link(directory, out, "the output folder (--out)")  # results from elsewhere: no link followed
    per = f" ({len(parts)} conditions, confidence jointly over them)" if search.conditions else ""
    say(f"[{search.name}] {len(plan.points)} designs{per} x {len(search.constraints)} constraints; confidence {search.confidence:g}, "
        f"error per test {procedure.beta:.3g}, first stage {procedure.n0} runs per design, budget {budget:,} runs")
    started = time.perf_counter()
    ran = rounds = 0
    runner: Any = None
    described = engine
    from ..sweep.report import SweepResults

    def warn(text: str) -> None:
        say(f"[{search.name}] warning: {text}")

    with store.locked(directory):
        store.cleanup_tmp(directory, warn)
        done = store.done_keys(directory, warn)
        held = max((r + 1 for (_, r) in done), default=1)
        store.write_manifest(directory, _manifest_plan(plan, held))
        results = SweepResults(directory)
        data = Rows(plan, search, results)
        if len(results.frame):
            data.add(results.frame.to_dict("records"))
            say(f"[{search.name}] {len(results.frame)} runs already in {directory}")
        payload = plan.worker_payload()
        payload["run_timeout_s"] = timeout
        payload["apps"] = apps
        axis_kinds = {path: kind for path, kind in payload["axes"]}
        try:
            while True:
                batch = _next_batch(parts, data, budget)
                if not batch:
                    break
                rounds += 1
                tasks = [Task(plan.points[d].id, r, seed_for(search.seed, "", r, True))
                         for d, target in batch.items() for r in range(data.available(d), target)
                         if (plan.points[d].id, r) not in done]
                _progress(say, search.name, rounds, batch, data, parts, budget)
                if runner is None:
                    runner = make_engine(engine, payload, master=master, workers=workers, conf=conf,
                                         app_name=f"zsim search {search.name}")
                    runner.__enter__()
                    described = runner.describe()
                lost = 0
                for completion in runner.run(batches(tasks, runner.slots)):
                    if completion is None:
                        continue
                    if completion.error is not None or completion.rows is None:
                        lost += len(completion.batch)
                        continue
                    store.write_rows(directory, completion.rows, axis_kinds)
                    data.add(completion.rows)
                    ran += len(completion.rows)
                store.write_manifest(directory, _manifest_plan(plan, max(data.available(d) for d in range(len(plan.points)))))
                if lost:
                    raise EnvironmentFault(str(directory), f"{lost} runs were lost (a worker died or timed out); run the same "
                                                           "command again to do them and go on")
        finally:
            if runner is not None:
                runner.__exit__(*sys.exc_info())
    return SearchRun(search=search, plan=plan, parts=parts, data=data, directory=directory, costs=costs,
                     ran=ran, engine=described, wall_s=time.perf_counter() - started, rounds=rounds)


def _next_batch(parts: list[Part], data: Rows, budget: int) -> dict[int, int]:
    """Every condition's next batch (plan design -> replications wanted), and each part's
    outcome (None while its search goes on). Empty: the search is over.

    With conditions the budget is shared fairly: each round, every condition still open may
    take at most an even share of the runs left (at least a first stage), so a condition too
    close to call cannot starve the others, which need a few rounds of bisection each. The
    share a condition leaves unused stays for later rounds. Recomputed from the rows alone,
    so a resumed search takes the same path."""
    left = budget - sum(data.available(d) for d in range(len(data.ids)))
    views = [Local(data, part.designs) for part in parts]
    if len(parts) == 1:
        batch, _, parts[0].outcome = parts[0].procedure.plan(views[0], max(left, 0))
        return {parts[0].designs[e]: target for e, target in batch.items()}
    still = []
    for i, part in enumerate(parts):
        _, state, outcome = part.procedure.plan(views[i], 0)
        part.outcome = outcome if outcome is not None and outcome.kind != "budget" else None
        if part.outcome is None:
            still.append((state.spent, i))
    wanted: dict[int, int] = {}
    share = left // max(len(still), 1)
    for _, i in sorted(still):  # the conditions with the fewest runs first
        part = parts[i]
        batch, state, outcome = part.procedure.plan(views[i], max(min(max(share, part.procedure.n0), left), 0))
        part.outcome = outcome
        for e, target in batch.items():
            wanted[part.designs[e]] = target
            left -= target - state.available[e]
    return wanted


def _progress(say: Any, name: str, rounds: int, batch: Mapping[int, int], data: Rows, parts: list[Part], budget: int) -> None:
    new = sum(target - data.available(d) for d, target in batch.items())
    spent = sum(data.available(d) for d in range(len(data.ids)))
    states: list[State] = [part.procedure.assess(Local(data, part.designs)) for part in parts] if len(parts) > 1 else []
    if states:
        settled = sum(1 for part in parts if part.outcome is not None and part.outcome.kind != "budget")
        waiting = sum(1 for part in parts if part.outcome is not None and part.outcome.kind == "budget")
        say(f"[{name}] round {rounds}: {len(batch)} designs, {new} runs (spent {spent:,} of {budget:,}); "
            f"{settled} of {len(parts)} conditions settled" + (f", {waiting} without runs left for them" if waiting else ""))
        return
    state = parts[0].procedure.assess(Local(data, parts[0].designs))
    decided = sum(1 for s in state.status if s not in ("open", "untried"))
    say(f"[{name}] round {rounds}: {len(batch)} designs, {new} runs (spent {spent:,} of {budget:,}); "
        f"{decided} of {len(state.status)} designs decided")

