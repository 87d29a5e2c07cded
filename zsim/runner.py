"""Run one scenario with one seed: build, simulate, account for every message, summarise.

``run`` returns a ``RunResult`` and raises on bad input (``ScenarioError``), on a work
limit reached (``LimitExceeded``, see ``zsim.limits``) or on a model fault
(``ConservationError``); ``run_safe`` never raises and records the fault instead, for
sweeps where one failed run must not stop the others.

``run(..., recorder=...)`` also records levels over time for a run report (pipe depths,
link directions' kernel and engine occupancy; ``zsim.report_run.series``): opt-in, the
model runs the same events either way, and without a recorder nothing is recorded.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, Any, Protocol

from . import app as app_module
from . import profile as profile_module
from . import spec, trust
from .app import AppFunction
from .build import Model, build
from .errors import LimitExceeded, ScenarioError, ZsimError
from .limits import DEFAULT as DEFAULT_LIMITS
from .limits import RunLimits
from .profile import Profile
from .results import RunResult, summarise
from .textsafe import one_line
from .trust import AppCode, AppPermission


def _scenario(scenario: spec.Scenario | Mapping[str, Any] | str | Path) -> spec.Scenario:
    if isinstance(scenario, spec.Scenario):
        return scenario
    return spec.load(scenario)  # type: ignore[arg-type]


class Recorder(Protocol):
    """Records levels over time while a run goes on (``zsim.report_run.SeriesRecorder``)."""

    def recording(self) -> AbstractContextManager[None]:
        """Entered around building and simulating the model."""
        ...

    def attach(self, model: Model) -> None: ...

    def poll(self) -> None:
        """Called by the run's monitor every ``monitor_every`` events."""
        ...

    def finish(self, now: float) -> None: ...


def _count(value: float) -> str:
    return f"{value:,.0f}" if value < 1e9 else f"{value:.3g}"


class Guard:
    """The event loop's monitor: work limits, the zero-time loop detector and progress.

    Called by ``Environment.run`` every ``monitor_every`` events. Raises ``LimitExceeded``
    with the limit's name and what drove the work (the workload that did the most, and the
    field of the scenario that made it do so).
    """

    def __init__(self, model: Model, limits: RunLimits, progress: IO[str] | None = None,
                 recorder: Recorder | None = None) -> None:
        self.model = model
        self.recorder = recorder
        self.limits = limits
        self.progress = progress
        self.started = time.perf_counter()
        self.shown = False
        self.last_shown = -1e9
        self.instant = -1.0
        self.instant_events = 0
        self.instant_counts: dict[str, int] | None = None  # what each workload had done when the instant outlasted a check
        self.specs = {send.name: send for send in model.scenario.sends}

    # -- what each workload has done ------------------------------------------------------

    def _counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for sender in self.model.senders:
            counts[spec.workload_label("send", sender.name)] = sender.attempts
        for receiver in self.model.receivers:
            counts[spec.workload_label("recv", receiver.name)] = receiver.received
        for proxy in self.model.proxies:
            counts[f"proxy[{proxy.name}]"] = proxy.forwarded
        for process in self.model.world.processes:
            for workload in process.workloads:
                if isinstance(workload, app_module.AppSocket):
                    label = f"app[{workload.app_name}]"
                    counts[label] = counts.get(label, 0) + workload.calls
        return counts

    def copies(self) -> int:
        model = self.model
        return max(model.world.next_message_id, model.ledger.n_records)

    def _sender_fields(self, sender: Any) -> dict[str, Any]:
        """The fields of a ``[[send]]`` table that set how many messages it sends."""
        spec_ = self.specs.get(sender.name)
        tables: list[dict[str, Any]] = self.model.scenario.raw.get("send", [])
        raw = next((t for t in tables if spec_ is not None and _matches(t, spec_)), {})
        fields: dict[str, Any] = {key: raw[key] for key in ("count", "rate_per_s", "interval_s", "duration_s") if key in raw}
        if "rate_per_s" not in fields and "interval_s" not in fields:
            fields["interval_s"] = 0
        return fields

    def _sender_cause(self, sender: Any) -> str:
        return ", ".join(f"{key} = {value!r}" for key, value in self._sender_fields(sender).items())

    def _top(self) -> str:
        counts = self._counts()
        if not counts:
            return ""
        label, done = max(counts.items(), key=lambda item: item[1])
        sender = next((s for s in self.model.senders if spec.workload_label("send", s.name) == label), None)
        cause = self._sender_cause(sender) if sender is not None else ""
        return f"; most of it came from {label}{' (' + cause + ')' if cause else ''}, {_count(done)} messages"

    def _where(self) -> str:
        until = self.model.scenario.until_s
        horizon = f" of {until:g} s" if until is not None else ""
        return f"at simulated time {self.model.env.now:.6g} s{horizon}"

    def _exceeded(self, key: str, what: str) -> LimitExceeded:
        flag = "--" + key.replace("_", "-")
        return LimitExceeded(
            f"limits.{key}",
            f"{what} {self._where()}{self._top()}. Fix the scenario, or raise the limit ({flag} N on the command line, "
            f"[limits] {key} = N in the scenario, 0 for none)",
        )

    # -- the check --------------------------------------------------------------------------

    def __call__(self) -> None:
        env = self.model.env
        limits = self.limits
        if self.recorder is not None:
            self.recorder.poll()
        events = env.events_processed
        if limits.max_events is not None and events >= limits.max_events:
            raise self._exceeded("max_events", f"the run processed {_count(events)} events (limit {_count(limits.max_events)})")
        if limits.max_messages is not None:
            copies = self.copies()
            if copies > limits.max_messages:
                limit = _count(limits.max_messages)
                raise self._exceeded("max_messages", f"the run created {_count(copies)} message copies (limit {limit})")
        wall = time.perf_counter() - self.started
        if limits.max_wall_s is not None and wall > limits.max_wall_s:
            raise self._exceeded("max_wall_s", f"the run took {wall:.0f} s of wall-clock time (limit {limits.max_wall_s:g} s)")
        now = env.now
        if now != self.instant:
            self.instant = now
            self.instant_events = events
            self.instant_counts = None
        elif self.instant_counts is None:
            # the instant outlasted a check: note what each workload has done, so that a
            # loop that never advances time can be named by what moved since. Not at every
            # new instant: that walked every workload (a third of a millisecond at 1,000
            # subscribers) every 16,384 events of every run.
            self.instant_counts = self._counts()
        elif limits.max_events_at_one_time is not None and events - self.instant_events >= limits.max_events_at_one_time:
            self._zero_time_loop(events - self.instant_events)
        if self.progress is not None and wall >= PROGRESS_AFTER_S and wall - self.last_shown >= 1.0:
            self.last_shown = wall
            self.shown = True
            until = self.model.scenario.until_s
            of = f" of {until:g}" if until is not None else ""
            self.progress.write(
                f"\r\033[K[{one_line(self.model.scenario.name)}] simulated {now:.4g}{of} s  {_count(events)} events "
                f"({events / wall:,.0f}/s)  {_count(self.copies())} messages  {wall:.0f} s"
            )
            self.progress.flush()

    def _zero_time_loop(self, events: int) -> None:
        """Many events at one instant: name the workload that keeps going, if it never stops."""
        counts = self._counts()
        before = self.instant_counts or {}
        moved = {label: n - before.get(label, 0) for label, n in counts.items() if n > before.get(label, 0)}
        senders = {spec.workload_label("send", s.name): s for s in self.model.senders}
        endless = [label for label in moved if label in senders and senders[label].count is None]
        if endless:
            label = max(endless, key=lambda item: moved[item])
            sender = senders[label]
            key = "rate_per_s" if "rate_per_s" in self._sender_fields(sender) else "interval_s"
            raise LimitExceeded(
                f"{label}.{key}",
                f"{self._sender_fields(sender)[key]!r} with profile {self.model.profile.name!r} never advances simulated time: "
                f"{_count(moved[label])} sends at t = {self.model.env.now:.6g} s and no end in sight (give a send interval or a call cost "
                "> 0)",
            )
        apps = [label for label in moved if label.startswith("app[")]
        if apps:
            label = max(apps, key=lambda item: moved[item])
            raise LimitExceeded(
                label,
                f"made {_count(moved[label])} socket calls at t = {self.model.env.now:.6g} s without simulated time passing and no "
                "end in sight: its loop needs a yield env.timeout(...) (or a profile whose calls cost time, not "
                f"{self.model.profile.name!r})",
            )
        if moved and all(label not in senders for label in moved):
            label = max(moved, key=lambda item: moved[item])
            raise LimitExceeded(
                label,
                f"passes messages round a loop at zero simulated time ({_count(moved[label])} at t = {self.model.env.now:.6g} s) "
                "and never stops: a forward_to/proxy cycle needs a service time or call cost > 0",
            )
        if not moved:
            apps = [f"app[{name}]" for name in self.model.app_names]
            if apps:
                raise LimitExceeded(
                    "limits.max_events_at_one_time",
                    f"{_count(events)} events at t = {self.model.env.now:.6g} s and no workload made progress: an app loop that "
                    f"waits on env.timeout(0) or polls without waiting does this ({', '.join(apps)}); wait for a socket "
                    "(yield sock.poll()) or for a time > 0",
                )
            raise LimitExceeded(
                "limits.max_events_at_one_time",
                f"{_count(events)} events at t = {self.model.env.now:.6g} s and no workload made progress: "
                "the model is stuck in a zero-time loop (please report this as a bug in zsim)",
            )
        # Senders with a finite count at zero time: they end; the other limits bound them.
        self.instant_events += events

    def finish(self) -> None:
        if self.shown and self.progress is not None:
            self.progress.write("\r\033[K")
            self.progress.flush()


def _matches(table: Any, send: spec.SendSpec) -> bool:
    if not isinstance(table, dict):
        return False
    if "name" in table:
        return bool(table["name"] == send.name)
    return bool(table.get("socket") == send.socket)


#: Wall-clock seconds after which a run shows its progress (on a terminal only).
PROGRESS_AFTER_S = 2.0


def effective_limits(scenario: spec.Scenario, limits: RunLimits | Mapping[str, Any] | None) -> RunLimits:
    """Defaults, then the scenario's ``[limits]``, then ``limits`` (a ``RunLimits`` replaces all)."""
    if isinstance(limits, RunLimits):
        return limits
    base = DEFAULT_LIMITS.merged(scenario.raw.get("limits", {}), "limits")
    return base.merged(limits or {}, "limits")


def start_apps(model: Model, extra: Sequence[AppFunction | str] | AppFunction = (), codes: Sequence[AppCode] | None = None) -> None:
    """Start the scenario's ``[[app]]`` functions, then ``extra`` ones (``zsim.app``).

    ``codes``: the scenario's apps as ``zsim.trust.check`` allowed them; None checks them
    here with no permission, so a scenario that names code is refused. ``extra`` is the
    caller's own code and runs as given."""
    scen = model.scenario
    if codes is None:
        codes = trust.check(scen, trust.AppPermission())
    names = {app.name for app in scen.apps}
    for code in codes:
        app_module.start(model, code.app, app_module.load(code))
    functions = [extra] if callable(extra) or isinstance(extra, str) else list(extra)
    for index, function in enumerate(functions):
        name = getattr(function, "__name__", None) if callable(function) else str(function).rsplit(":", 1)[-1]
        label = name or f"app{index}"
        if label in names:
            raise ScenarioError(f"apps[{index}]", f"another app is named {label!r} (give each function its own name)")
        names.add(label)
        app_module.start(model, label, app_module.resolve(function, scen.base_dir, f"apps[{index}]"))


def simulate(model: Model, limits: RunLimits | None = None, progress: IO[str] | None = None,
             recorder: Recorder | None = None) -> None:
    """Run the event loop to the horizon (or until nothing can move) and close the books.

    ``limits`` bound the work (``zsim.limits``; default: the scenario's); ``progress``, a
    terminal stream, shows simulated time and events/s for runs longer than a few seconds;
    ``recorder`` (attached to ``model``) is polled by the monitor and finished at the end.
    """
    if limits is None:
        limits = effective_limits(model.scenario, None)
    guard = Guard(model, limits, progress, recorder)
    model.env.monitor = guard
    # A limit below the usual check interval is checked as soon as it can be reached.
    model.env.monitor_every = max(1, min(16384, limits.max_events or 16384, limits.max_messages or 16384))
    try:
        model.env.run_through(model.scenario.until_s)
    finally:
        model.env.monitor = None
        guard.finish()
    now = model.env.now
    if model.machine is not None:
        model.machine.finish()
    if recorder is not None:
        recorder.finish(now)
    ledger = model.ledger
    for msg, socket_index, pipe_index, where in model.world.unfinished():
        ledger.queued(msg, socket_index, pipe_index, where, now)


def run(
    scenario: spec.Scenario | Mapping[str, Any] | str | Path,
    seed: int | None = None,
    *,
    profile: Profile | str | None = None,
    trace: bool = False,
    limits: RunLimits | Mapping[str, Any] | None = None,
    progress: IO[str] | None = None,
    apps: Sequence[AppFunction | str] | AppFunction = (),
    recorder: Recorder | None = None,
    allow_apps: bool | AppPermission = False,
) -> RunResult:
    """Simulate ``scenario`` with ``seed`` (default: the scenario's seed, else 0).

    ``limits``: a ``RunLimits`` (used as is) or a mapping of limit overrides
    (``{"max_wall_s": 60}``, 0 = no limit) applied on top of the scenario's ``[limits]``.
    ``apps``: SimPy code to run on the scenario's sockets (``zsim.app``), after the
    scenario's own ``[[app]]`` tables: functions taking an ``App``, or ``"module:function"``.
    ``profile``: a ``Profile``, or a profile's name or file as in ``scenario.profile``.
    ``recorder``: records levels over time while the run goes on (``zsim.report_run``).
    ``allow_apps``: run the Python code the scenario's own ``[[app]]`` tables name (True:
    files in the scenario's folder and installed modules; a ``zsim.AppPermission`` for
    more); without it such a scenario raises ``ScenarioError`` before anything runs
    (``zsim.trust``). The functions in ``apps`` are the caller's own and always run.
    """
    started = time.perf_counter()
    scen = _scenario(scenario)
    codes = trust.check(scen, trust.permission(allow_apps))
    if seed is None:
        seed = scen.seed if scen.seed is not None else 0
    if seed < 0:
        raise ScenarioError("seed", f"must be >= 0, got {seed}")
    run_limits = effective_limits(scen, limits)
    if isinstance(profile, str):
        profile = profile_module.load(profile, scen.base_dir)
    with recorder.recording() if recorder is not None else contextlib.nullcontext():
        model = build(scen, seed, profile=profile, trace_depth=trace or recorder is not None)
        if recorder is not None:
            recorder.attach(model)
        start_apps(model, apps, codes)
        simulate(model, run_limits, progress, recorder)
    wall = time.perf_counter() - started
    return summarise(model, wall)


def run_safe(
    scenario: spec.Scenario | Mapping[str, Any] | str | Path,
    seed: int | None = None,
    *,
    profile: Profile | str | None = None,
    limits: RunLimits | Mapping[str, Any] | None = None,
    apps: Sequence[AppFunction | str] | AppFunction = (),
    allow_apps: bool | AppPermission = False,
) -> dict[str, Any]:
    """Like ``run(...).summary`` but never raises: a failure becomes a record with ``error``."""
    started = time.perf_counter()
    try:
        return dict(run(scenario, seed, profile=profile, limits=limits, apps=apps, allow_apps=allow_apps).summary)
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
