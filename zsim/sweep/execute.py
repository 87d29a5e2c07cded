"""Running a sweep: plan it, skip what is already on disk, run the rest on an engine,
write each finished batch, show progress.

``run_sweep`` is what ``zsim sweep`` calls. Whatever the engine (``spark``, ``local``,
``serial``), the rows are the same: a row depends only on its point's scenario and its
seed (``plan``), and every engine runs the same ``worker.run_batch``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .. import expressions, files, metrics, trust
from ..errors import ScenarioError, ZsimError
from ..textsafe import terminal
from . import store
from .plan import (
    DEFAULT_MAX_RUNS,
    MAX_REPLICATIONS,
    Plan,
    Sweep,
    Task,
    batches,
    check_metric,
    check_run_timeout,
    check_size,
    expand,
    parse,
)
from .precision import Target, next_round

ENGINES = ("spark", "local", "serial")
#: Plans of this many points announce themselves before their scenarios are checked
#: (~0.2 ms each); smaller ones are checked before the first line, so a bad one is one line.
PLANNING_NOTE_POINTS = 2000
DEFAULT_OUT = "out/sweeps"


@dataclass
class Outcome:
    """What a call of ``run_sweep`` did."""

    sweep: str
    directory: Path
    engine: str
    points: int
    total_runs: int
    already_done: int = 0
    ran: int = 0
    failed: int = 0
    lost_batches: list[str] = field(default_factory=list)
    not_done: int = 0
    errors: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    engine_start_s: float = 0.0
    interrupted: bool = False
    warnings: list[str] = field(default_factory=list)
    #: ``--precision``: what was reached (met, or NOT met and why), one line per target
    precision: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.not_done == 0 and not self.interrupted


def _duration(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):
        return "?"
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


class Progress:
    """Points done / total, runs, rate and ETA, on one line (rewritten on a terminal)."""

    def __init__(self, name: str, plan: Plan, done: Mapping[tuple[str, int], bool], stream: IO[str] | None,
                 interval_s: float | None = None, counts: Mapping[str, int] | None = None) -> None:
        self.name = name
        self.stream = stream
        # the replications each point is to have: the plan's, or a --precision round's
        self.wanted = dict(counts) if counts is not None else {p.id: plan.sweep.replications for p in plan.points}
        self.total_points = len(self.wanted)
        self.total_runs = sum(self.wanted.values())
        self.per_point: dict[str, int] = {point: 0 for point in self.wanted}
        for (point, replication), _ok in done.items():
            if point in self.per_point and replication < self.wanted[point]:
                self.per_point[point] += 1
        self.runs_done = sum(self.per_point.values())
        self.points_done = sum(1 for point, n in self.per_point.items() if n >= self.wanted[point])
        self.started = time.perf_counter()
        self.ran = 0
        self.failed = 0
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self.interval_s = interval_s if interval_s is not None else (1.0 if self.tty else 15.0)
        self.last_shown = 0.0

    def add(self, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            point = row["point"]
            if point in self.per_point:
                self.per_point[point] += 1
                if self.per_point[point] == self.wanted[point]:
                    self.points_done += 1
            self.runs_done += 1
            self.ran += 1
            if not row.get("ok", False):
                self.failed += 1

    def restart_clock(self) -> None:
        self.started = time.perf_counter()

    def line(self) -> str:
        elapsed = time.perf_counter() - self.started
        rate = self.ran / elapsed if elapsed > 0 else 0.0
        remaining = self.total_runs - self.runs_done
        eta = remaining / rate if rate > 0 else float("nan")
        failed = f" ({self.failed} failed)" if self.failed else ""
        return (f"[{self.name}] points {self.points_done}/{self.total_points}  runs {self.runs_done}/{self.total_runs}{failed}  "
                f"{rate:.1f} runs/s  elapsed {_duration(elapsed)}  ETA {_duration(eta) if remaining else '0s'}")

    def show(self, force: bool = False) -> None:
        if self.stream is None:
            return
        now = time.perf_counter()
        if not force and now - self.last_shown < self.interval_s:
            return
        self.last_shown = now
        if self.tty:
            self.stream.write("\r\033[K" + self.line())
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.stream is None:
            return
        self.show(force=True)
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def check_apps(plan: Plan, allow: trust.AppPermission, say: Callable[[str], Any] | None = None) -> dict[str, Any]:
    """The code the plan's scenarios name (``[[app]]`` of the base scenario, or set by an
    axis), checked against ``allow`` before any run and announced with ``say``: what the
    workers may run (``AppPermission.to_payload``)."""
    if not plan.points:
        return allow.to_payload(())
    ids = [plan.points[0].id] + [p.id for p in plan.points[1:] if any(str(k).startswith("app") for k in p.overrides)]
    codes = trust.check_scenarios(((f"{plan.sweep.base_source} (point {i})" if i != ids[0] else "", plan.scenario(i))
                                   for i in ids), allow)
    if say is not None:
        for line in trust.announcements(codes):
            say(line)
    return allow.to_payload(codes)


def make_engine(name: str, payload: Mapping[str, Any], *, master: str | None = None, workers: int | None = None,
                conf: Mapping[str, str] | None = None, app_name: str = "zsim sweep") -> Any:
    if name == "serial":
        from .local import SerialEngine

        return SerialEngine(payload)
    if name == "local":
        from .local import ProcessEngine

        return ProcessEngine(payload, workers, payload.get("run_timeout_s"))
    if name == "spark":
        from .spark import SparkEngine

        return SparkEngine(payload, master=master, conf=conf, app_name=app_name)
    raise ZsimError(f"unknown engine {name!r}; one of {', '.join(ENGINES)}")


def run_sweep(
    source: str | Path | Sweep | Mapping[str, Any] | Plan,
    out: str | Path = DEFAULT_OUT,
    *,
    engine: str = "spark",
    master: str | None = None,
    workers: int | None = None,
    conf: Mapping[str, str] | None = None,
    retry_failed: bool = False,
    batch_size: int | None = None,
    limit: int | None = None,
    stream: IO[str] | None = files.STDERR,
    progress_interval_s: float | None = None,
    max_runs: int | None = DEFAULT_MAX_RUNS,
    run_timeout_s: float | None = None,
    allow_apps: bool | trust.AppPermission = False,
    precision: Sequence[str] = (),
) -> Outcome:
    """Run a sweep (a file, a parsed ``Sweep``, a dict or a ``Plan``) into ``out``.

    Runs already in ``out`` are skipped, so the same call resumes an interrupted sweep.
    ``limit`` runs at most that many new runs (to try a sweep, or to test resuming).
    ``max_runs`` refuses a plan of more runs (counted before it is expanded; 0 or None: no
    limit; not checked for a ``Plan``, which is expanded already); ``run_timeout_s``
    overrides the sweep's time limit per run (0: none). ``precision``: ``METRIC=HALF_WIDTH``
    targets (``zsim.sweep.precision``): after the planned replications, each point gets more
    until its 95 % interval of every METRIC's mean is that narrow, within ``max_runs`` in
    all (planned and added); ``Outcome.precision`` says what was reached. ``allow_apps``: run the code the
    base scenario's ``[[app]]`` tables name (``zsim.trust``; the workers run only the files
    checked here, by path and SHA-256); without it such a sweep is refused before any run.

    Raises ``ScenarioError`` for a bad sweep or argument (before anything runs),
    ``EnvironmentFault`` when ``out`` cannot be written or the engine cannot start,
    ``ZsimError`` for an unusable engine, ``KeyboardInterrupt`` after writing what finished.
    """
    if engine not in ENGINES:
        raise ZsimError(f"unknown engine {engine!r}; one of {', '.join(ENGINES)}")
    if master is not None and engine != "spark":
        raise ZsimError("--master is for --engine spark")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ScenarioError("--workers", f"must be a whole number >= 1, got {workers!r}")
    if max_runs is not None and (isinstance(max_runs, bool) or not isinstance(max_runs, int) or max_runs < 0):
        raise ScenarioError("--max-runs", f"must be a whole number >= 0 (0: no limit), got {max_runs!r}")
    timeout_override = check_run_timeout(run_timeout_s, "--run-timeout") if run_timeout_s is not None else None
    targets = [Target.parse(text) for text in precision]
    if len({t.metric for t in targets}) < len(targets):
        raise ScenarioError("--precision", "one target per metric (a metric is named twice)")
    say = (lambda text: (stream.write(terminal(text) + "\n"), stream.flush())) if stream is not None else (lambda text: None)
    planning_started = time.perf_counter()
    if isinstance(source, Plan):
        plan = source
    else:
        sweep = parse(source)
        counted = check_size(sweep, max_runs or None)
        if counted.points >= PLANNING_NOTE_POINTS:  # checking them takes a while: say what is coming
            say(f"[{sweep.name}] planning {counted.describe()}; checking {counted.points:,} scenarios ...")
        last = [planning_started]

        def planning(done: int, total: int) -> None:
            now = time.perf_counter()
            if now - last[0] >= 2.0:
                last[0] = now
                say(f"[{sweep.name}] checked {done:,}/{total:,} scenarios ({now - planning_started:.0f} s)")

        plan = expand(sweep, max_runs=None, progress=planning)
    sweep = plan.sweep
    if targets:  # a typo is one line before any run, as in [report]
        known = metrics.known_metrics(plan.base)
        if known is not None:
            known.update(sweep.report.get("derived", {}))
        for target in targets:
            check_metric(target.metric, f"--precision {target.metric}", known)
    timeout = sweep.run_timeout_s if run_timeout_s is None else timeout_override
    apps = check_apps(plan, trust.permission(allow_apps), say)
    # --out must be a folder zsim can write in, found out before any run
    files.prepare_output_dir(out, "the output folder (--out)")
    if engine == "spark":  # no Java is one line now, not a stack trace after the planning
        from .spark import preflight

        preflight(master)
    directory = store.sweep_dir(out, sweep.name)
    # results copied from elsewhere: a link (out of --out, or anywhere) is refused
    files.check_not_link(directory, out, "the output folder (--out)")
    outcome = Outcome(sweep=sweep.name, directory=directory, engine=engine, points=len(plan.points), total_runs=plan.total_runs)

    def warn(text: str) -> None:
        outcome.warnings.append(text)
        say(f"[{sweep.name}] warning: {text}")

    started = time.perf_counter()
    with store.locked(directory):
        store.cleanup_tmp(directory, warn)
        if retry_failed:
            dropped = store.remove_failed(directory, warn)
            if dropped:
                say(f"[{sweep.name}] dropped {dropped} failed runs to run them again")
        done = store.done_keys(directory, warn)
        tasks = plan.tasks()
        # an earlier --precision run's replications beyond the plan stay part of the results
        earlier = store.read_earlier_manifest(directory, warn)
        ids = {point.id for point in plan.points}
        kept = {point: n for point, n in ((earlier or {}).get("point_replications") or {}).items()
                if point in ids and n > sweep.replications} if earlier and earlier.get("replications") == sweep.replications else {}
        planned = {(t.point, t.replication) for t in tasks}
        stale = sum(1 for (point, rep) in done if (point, rep) not in planned and not rep < kept.get(point, 0))
        todo = [t for t in tasks if (t.point, t.replication) not in done]
        del tasks, planned
        outcome.already_done = plan.total_runs - len(todo)
        store.write_manifest(directory, plan, kept)
        merged = f" ({plan.merged} duplicate points merged)" if plan.merged else ""
        limit_text = f"; each run at most {timeout:g} s" if timeout else "; no time limit per run"
        say(f"[{sweep.name}] {len(plan.points)} points x {sweep.replications} replications = {plan.total_runs} runs{merged}; "
            f"{outcome.already_done} already in {directory}, {len(todo)} to run{limit_text}")
        if kept and not targets:
            say(f"[{sweep.name}] note: {sum(kept.values()) - len(kept) * sweep.replications} rows beyond the planned replications "
                f"at {len(kept)} points come from an earlier --precision run; they stay part of the results")
        if stale:
            say(f"[{sweep.name}] note: {stale} rows in {directory} belong to no point of this sweep (an earlier definition); "
                "they stay on disk and zsim report ignores them")
        if done:
            from .worker import code_fingerprint

            others = {code: n for code, n in store.code_versions(directory).items() if code != code_fingerprint()}
            if others:
                say(f"[{sweep.name}] warning: {sum(others.values())} rows in {directory} were computed by other zsim code "
                    f"({', '.join(others)}; this is {code_fingerprint()}); they are kept. For results of one model version "
                    "use a fresh --out")
        if limit is not None:
            todo = todo[: max(0, limit)]
        with contextlib.ExitStack() as engine_scope:
            started_engine: list[Any] = []

            def execute(todo: list[Task], counts: Mapping[str, int] | None = None) -> None:
                """Run ``todo`` on the engine (started on first use), writing each batch's rows;
                ``counts``: the replications each point is to have after it (for the progress line)."""
                if not started_engine:
                    payload = plan.worker_payload()
                    payload["run_timeout_s"] = timeout
                    payload["apps"] = apps
                    if engine == "spark":
                        say(f"[{sweep.name}] starting Spark ({master or 'local[*]'}) ...")
                    engine_started = time.perf_counter()
                    runner = engine_scope.enter_context(
                        make_engine(engine, payload, master=master, workers=workers, conf=conf, app_name=f"zsim sweep {sweep.name}"))
                    outcome.engine_start_s = time.perf_counter() - engine_started
                    outcome.engine = runner.describe()
                    started_engine.append((runner, {path: kind for path, kind in payload["axes"]}))
                runner, axis_kinds = started_engine[0]
                progress = Progress(sweep.name, plan, done, stream, progress_interval_s, counts)
                size = sweep.batch_size if batch_size is None else batch_size
                work = batches(todo, runner.slots, size)
                say(f"[{sweep.name}] engine {runner.describe()}: {len(work)} batches")
                progress.restart_clock()
                try:
                    for completion in runner.run(work):
                        if completion is None:
                            progress.show()
                            continue
                        if completion.error is not None or completion.rows is None:
                            text = f"{type(completion.error).__name__}: {completion.error}".splitlines()[0][:300]
                            outcome.lost_batches.append(text)
                            say(f"\n[{sweep.name}] a batch of {len(completion.batch)} runs was lost ({text}); a re-run will do them")
                            continue
                        store.write_rows(directory, completion.rows, axis_kinds)
                        progress.add(completion.rows)
                        outcome.ran += len(completion.rows)
                        for row in completion.rows:
                            done[(row["point"], row["replication"])] = bool(row.get("ok", False))
                            if not row.get("ok", False):
                                outcome.failed += 1
                                if len(outcome.errors) < 5:
                                    outcome.errors.append(f"{row['point']} replication {row['replication']} seed {row['seed']}: "
                                                          f"{str(row.get('error')).splitlines()[0][:300]}")
                        progress.show()
                except KeyboardInterrupt:
                    outcome.interrupted = True
                    progress.finish()
                    say(f"[{sweep.name}] interrupted: {outcome.ran} runs written this time; the same command resumes")
                    raise
                progress.finish()

            try:
                if todo:
                    execute(todo)
                outcome.not_done = plan.total_runs - outcome.already_done - outcome.ran
                if targets and (limit is not None or outcome.not_done or outcome.lost_batches):
                    outcome.precision.append(f"--precision: not started, {outcome.not_done:,} planned runs are not done; "
                                             "the same command does them, then the rounds")
                elif targets:
                    _to_precision(plan, directory, targets, max_runs, done, execute, outcome, say)
            finally:
                outcome.wall_s = time.perf_counter() - started
    return outcome


def _to_precision(plan: Plan, directory: Path, targets: Sequence[Target], max_runs: int | None,
                  done: Mapping[tuple[str, int], bool], execute: Callable[..., None], outcome: Outcome,
                  say: Callable[[str], Any]) -> None:
    """``--precision``: rounds of replications point by point (``zsim.sweep.precision``)
    until every point meets every target, the next round would pass ``max_runs`` runs in
    all, or a batch is lost. Each round's decision is read from the rows on disk, so the
    same command resumes it: the rounds a killed sweep did are replayed without runs. The
    manifest records each point's count, so ``zsim report`` and later sweeps read them."""
    sweep = plan.sweep
    counts = {point.id: sweep.replications for point in plan.points}
    derived = dict(sweep.report.get("derived", {}))
    # the columns a round reads: the targets' and what the derived metrics are made of
    needed = sorted({t.metric for t in targets} | {name for text in derived.values() for name in expressions.names(text)})
    while True:
        # the manifest bounds what readers take (replication < each point's count)
        store.write_manifest(directory, plan, counts)
        frame = store.read_frame(directory, columns=needed)
        metrics.add_derived_frame(frame, derived)  # as zsim report computes them
        rows = {str(point): group.to_dict("records") for point, group in frame.groupby("point", sort=False)}
        decided = next_round(rows, counts, targets)
        widest = "; ".join(f"{t.text()}: widest +- {decided.widest[t.metric]:.4g}" for t in targets)
        spent = sum(counts.values())
        if not decided.wanted:
            measurable = "every measurable point" if any(decided.unmeasurable.values()) else "every point"
            outcome.precision.append(f"--precision: met at {measurable} ({widest}); {min(counts.values())} to "
                                     f"{max(counts.values())} replications a point, {spent:,} runs")
            break
        wanted = {point: min(n, MAX_REPLICATIONS) for point, n in decided.wanted.items()}
        more = sum(n - counts[point] for point, n in wanted.items())
        if (max_runs and spent + more > max_runs) or all(n <= counts[p] for p, n in wanted.items()):
            outcome.precision.append(f"--precision: NOT met at {len(wanted)} of {len(counts)} points ({widest}): the next "
                                     f"round needs {more:,} more runs, beyond --max-runs {max_runs:,} ({spent:,} runs so far)"
                                     if max_runs and spent + more > max_runs else
                                     f"--precision: NOT met at {len(wanted)} points, at the most replications a point may have")
            break
        added = [plan.task(point, rep) for point, n in wanted.items() for rep in range(counts[point], n)]
        todo = [task for task in added if (task.point, task.replication) not in done]
        outcome.already_done += len(added) - len(todo)  # a resumed sweep replays the rounds it did
        counts.update(wanted)
        outcome.total_runs = sum(counts.values())
        if todo:
            say(f"[{sweep.name}] --precision: {len(wanted)} of {len(counts)} points need more replications ({widest}); "
                f"running {len(todo):,} more")
            execute(todo, counts)
        left = sum(1 for task in todo if (task.point, task.replication) not in done)
        if left or outcome.lost_batches:
            outcome.not_done += left
            outcome.precision.append("--precision: stopped, a batch was lost; the same command goes on")
            break
    for metric, points in ((t.metric, decided.unmeasurable[t.metric]) for t in targets):
        if points:
            outcome.precision.append(f"--precision {metric}: no interval at {len(points)} points (fewer than two runs with a "
                                     f"value, or a relative target on a mean of 0), e.g. {points[0]}")
