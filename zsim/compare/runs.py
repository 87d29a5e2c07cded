"""Running the designs of ``zsim compare``: every design over the same seeded
replications, and what each design's runs gave (how many failed, which warnings they raised).

Common random numbers. Replication ``r`` of every design runs with the same seed,
``plan.seed_for(root seed, "", r)`` (the seed a sweep with common random numbers gives
replication ``r`` at every point), and zsim gives every random source its own stream keyed
by its name (``zsim.build``), so the same arrivals and service times meet each design and
a difference between designs is not blurred by different draws.

Runs go through the sweep engines (``zsim.sweep.execute.make_engine``: serial, local
process pool, Spark) and ``zsim.sweep.worker.run_batch``, so every engine gives the same
rows, and the same seed gives the same output.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from .. import metrics, trust
from .. import spec as scenario_spec
from ..errors import EnvironmentFault, ScenarioError
from ..textsafe import terminal
from .designs import Design

#: Runs one comparison may have unless ``--max-runs`` says otherwise.
DEFAULT_MAX_RUNS = 10_000


def seeds(root_seed: int, replications: int) -> list[int]:
    """The seed of each replication, the same for every design (common random numbers)."""
    from ..sweep.plan import seed_for

    return [seed_for(root_seed, "", rep, True) for rep in range(replications)]


def check_apps(designs: Sequence[Design], allow: trust.AppPermission, stream: IO[str] | None = None) -> dict[str, Any]:
    """The code the designs' ``[[app]]`` tables name, checked against ``allow`` before any
    run (``ScenarioError`` naming the design's file and the field if not allowed), each file
    announced on ``stream``: what the workers may run (``AppPermission.to_payload``)."""
    scenarios = ((d.source, scenario_spec.from_dict(copy.deepcopy(dict(d.raw)), base_dir=d.base_dir, source=d.source))
                 for d in designs)
    codes = trust.check_scenarios(scenarios, allow)
    if stream is not None:
        for line in trust.announcements(codes):
            stream.write(line + "\n")
    return allow.to_payload(codes)


def payload(designs: Sequence[Design], run_timeout_s: float | None, apps: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What a sweep worker needs to run any run of the comparison: each design is a point
    ``d<i>`` carrying its whole scenario and folder (``zsim.sweep.worker``); ``apps``, the
    code the workers may run (``check_apps``; None: none)."""
    from ..sweep.plan import _digest

    body: dict[str, Any] = {
        "base": {},
        "base_dir": ".",
        "source": "<compare>",
        "points": {f"d{i}": {"overrides": {}, "coords": [], "scenario": copy.deepcopy(dict(d.raw)), "base_dir": d.base_dir,
                             "source": d.source}
                   for i, d in enumerate(designs)},
        "axes": [],
        "run_timeout_s": run_timeout_s,
    }
    if apps is not None:
        body["apps"] = dict(apps)
    body["digest"] = _digest(body)
    return body


def run_designs(designs: Sequence[Design], replications: int, root_seed: int, *, engine: str = "spark", jobs: int | None = None,
                master: str | None = None, conf: Mapping[str, str] | None = None, run_timeout_s: float | None = None,
                stream: IO[str] | None = None, apps: Mapping[str, Any] | None = None, start: int = 0) -> list[list[dict[str, Any]]]:
    """Every design's rows, ``rows[design][replication - start]`` for replications ``start``
    .. ``replications - 1``, run on ``engine`` (``serial``: in this process; ``local``:
    worker processes; ``spark``). Replication r has the same seed whatever ``start`` is, so
    more replications extend a comparison exactly. A batch an engine loses (a worker
    killed) is run once more; lost again, it is an ``EnvironmentFault``."""
    from ..sweep.execute import ENGINES, make_engine
    from ..sweep.plan import DEFAULT_RUN_TIMEOUT_S, Task, batches

    if engine not in ENGINES:
        raise ScenarioError("--engine", f"must be one of {', '.join(ENGINES)}, got {engine!r}")
    if master is not None and engine != "spark":
        raise ScenarioError("--master", "is for --engine spark")
    if engine == "spark":
        from ..sweep.spark import preflight

        if master is None and jobs is not None:
            master = f"local[{jobs}]"
        preflight(master)
    timeout = DEFAULT_RUN_TIMEOUT_S if run_timeout_s is None else (run_timeout_s or None)
    body = payload(designs, timeout, apps)
    run_seeds = seeds(root_seed, replications)
    todo = [Task(f"d{i}", rep, run_seeds[rep]) for i in range(len(designs)) for rep in range(start, replications)]
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    say = (lambda text: (stream.write(terminal(text)), stream.flush())) if stream is not None else (lambda text: None)
    tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
    started = time.perf_counter()
    runner = make_engine(engine, body, master=master, workers=jobs, conf=conf, app_name="zsim compare")
    with runner:
        which = f"replications {start}..{replications - 1}" if start else f"{replications} replications"
        say(f"[compare] {len(designs)} designs x {which} = {len(todo)} runs on {runner.describe()}\n")
        for attempt in range(2):
            lost: list[Task] = []
            for completion in runner.run(batches(todo, runner.slots)):
                if completion is None:
                    continue
                if completion.error is not None or completion.rows is None:
                    lost.extend(completion.batch)
                    error = f"{type(completion.error).__name__}: {completion.error}".splitlines()[0][:300]
                    say(f"\n[compare] a batch of {len(completion.batch)} runs was lost ({error})" +
                        ("; running it again\n" if attempt == 0 else "\n"))
                    continue
                for row in completion.rows:
                    rows[(row["point"], row["replication"])] = row
                if tty:
                    say(f"\r\033[K[compare] runs {len(rows)}/{len(designs) * (replications - start)}")
            if not lost:
                break
            todo = lost
        else:
            raise EnvironmentFault(f"--engine {engine}", f"{len(todo)} runs were lost twice (a worker died each time); "
                                                         "run again, or with --engine serial to see why")
    if tty:
        say("\n")
    say(f"[compare] {len(rows)} runs in {time.perf_counter() - started:.1f} s\n")
    return [[rows[(f"d{i}", rep)] for rep in range(start, replications)] for i in range(len(designs))]


@dataclass
class DesignResult:
    """What one design's runs gave, before any metric is read: how many ran, which failed
    and why, which warnings they raised."""

    design: Design
    runs: int
    failed: int
    errors: list[str]
    #: warning code -> runs that raised it
    warnings: dict[str, int]
    #: socket -> {flag: runs} (the per-socket questioning warnings)
    socket_flags: dict[str, dict[str, int]]


def as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    return None


def design_result(design: Design, rows: Sequence[Mapping[str, Any]]) -> DesignResult:
    failed = [row for row in rows if not row.get("ok")]
    warnings: dict[str, int] = {}
    flags: dict[str, dict[str, int]] = {}
    for row in rows:
        if not row.get("ok"):
            continue
        for key, value in row.items():
            if key.startswith("warning.") and as_number(value):
                code = key[len("warning."):]
                warnings[code] = warnings.get(code, 0) + 1
            elif key.startswith("socket.") and as_number(value):
                parsed = metrics.parse(key)
                if parsed is None or parsed.entity is None or parsed.stat not in (None, "max"):
                    continue
                # a template's flag: some member warned (its max over the members)
                if parsed.field in metrics.QUESTIONING_FLAGS:
                    counts = flags.setdefault(parsed.entity, {})
                    counts[parsed.field] = counts.get(parsed.field, 0) + 1
    errors = [f"replication {row['replication']} (seed {row['seed']}): {str(row.get('error')).splitlines()[0][:300]}"
              for row in failed]
    return DesignResult(design, len(rows), len(failed), errors, dict(sorted(warnings.items())), flags)
