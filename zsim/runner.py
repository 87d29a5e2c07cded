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
import re
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, Any, Protocol

from . import app as app_module
from . import limits as limits_module
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


def _app_table(codes: Sequence[AppCode], extra: Sequence[AppFunction | str]) -> dict[str, tuple[str, str | None]]:
    """App name -> (function name, file) of a run's apps, for the sandbox's messages."""
    table: dict[str, tuple[str, str | None]] = {code.app: (code.function, code.file) for code in codes}
    for index, function in enumerate(extra):
        if callable(function):
            name = getattr(function, "__name__", None) or f"app{index}"
            filename = getattr(getattr(function, "__code__", None), "co_filename", None)
            table.setdefault(name, (name, str(Path(filename).resolve()) if filename else None))
        else:
            name = str(function).rsplit(":", 1)[-1]
            table.setdefault(name, (name, None))
    return table


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


# -- where app code runs ----------------------------------------------------------------------

#: The watchdog looks every this many seconds; it acts on the wall-clock limit after this
#: much more (the run's own monitor names a model that keeps going; the watchdog is for
#: code that keeps the thread), and again every second if the code swallowed its exception.
WATCHDOG_POLL_S = 0.05
WATCHDOG_GRACE_S = 1.0
WATCHDOG_REPEAT_S = 1.0
#: After this many raises that the code caught and went on, the watchdog calls
#: ``zsim.limits.LAST_RESORT`` (if set) with the run's one line.
WATCHDOG_LAST_RESORT_AFTER = 3
#: The signal that interrupts a blocking call in the main thread (when no one else handles it).
WATCHDOG_SIGNAL = getattr(signal, "SIGUSR2", signal.SIGTERM)


def _async_raise(thread: int, exc: type[BaseException] | None) -> None:
    """Raise ``exc`` in ``thread`` at its next Python instruction (``PyThreadState_SetAsyncExc``);
    None withdraws one not yet raised."""
    import ctypes

    target = ctypes.py_object(exc) if exc is not None else ctypes.c_void_p(0)
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread), target)


def _watchdog_alarm(signum: int, frame: Any) -> None:
    raise app_module.WatchdogTimeout()


class Watchdog:
    """Stops a run whose thread does not come back to the event loop (issue 27).

    The run's monitor (``Guard``) checks the limits between events; code that loops without
    yielding (``while True: pass`` in an app, ``sock.send()`` called in a loop without
    ``yield``) never returns to it. This thread looks every ``WATCHDOG_POLL_S``: past the
    wall-clock limit (plus ``WATCHDOG_GRACE_S``), or over the message or event limit while
    the loop has processed no event since its last look, it raises ``WatchdogTimeout`` in
    the run's thread (``PyThreadState_SetAsyncExc``: at the next Python instruction, so a
    pure-Python loop is stopped; a C call that blocks, ``time.sleep(1e9)``, only when it
    returns), and again every ``WATCHDOG_REPEAT_S`` if the code caught it and went on. In
    the main thread, when no one else handles ``SIGUSR2``, it sends ``SIGUSR2`` instead, whose
    handler (installed for the run) raises it: that also ends a blocking call."""

    def __init__(self, model: Model, limits: RunLimits, describe: Callable[[], str] | None = None) -> None:
        self.model = model
        self.limits = limits
        self.describe = describe  # the run's one line, for LAST_RESORT
        self.thread = threading.get_ident()
        self.started = time.perf_counter()
        self.lock = threading.Lock()
        self.armed = True
        self.fired: tuple[str, str] | None = None
        self.stopped = threading.Event()
        self.watcher = threading.Thread(target=self._watch, name="zsim-watchdog", daemon=True)
        self.alarm = False  # raise by a signal (our handler) rather than asynchronously

    def __enter__(self) -> Watchdog:
        if (threading.current_thread() is threading.main_thread() and hasattr(signal, "pthread_kill")
                and signal.getsignal(WATCHDOG_SIGNAL) in (signal.SIG_DFL, None)):
            signal.signal(WATCHDOG_SIGNAL, _watchdog_alarm)
            self.alarm = True
        self.watcher.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stopped.set()
        with self.lock:
            self.armed = False
            if self.fired is not None and not self.alarm:
                _async_raise(self.thread, None)  # one raised but not yet delivered goes no further
        if self.alarm:  # no signal can come now: it is sent only while armed
            signal.signal(WATCHDOG_SIGNAL, signal.SIG_DFL)
        self.watcher.join(timeout=5.0)

    def _copies(self) -> int:
        model = self.model
        return int(max(model.world.next_message_id, model.ledger.n_records))

    def _check(self, stuck: bool) -> tuple[str, str] | None:
        limits = self.limits
        elapsed = time.perf_counter() - self.started
        if limits.max_wall_s is not None and elapsed > limits.max_wall_s + WATCHDOG_GRACE_S:
            return "max_wall_s", f"the run took {elapsed:.1f} s of wall-clock time (limit {limits.max_wall_s:g} s)"
        if not stuck:
            return None
        if limits.max_messages is not None and self._copies() > limits.max_messages:
            return "max_messages", f"the run created {_count(self._copies())} message copies (limit {_count(limits.max_messages)})"
        pending = len(self.model.env._queue)
        if limits.max_events is not None and pending > limits.max_events:
            return "max_events", f"{_count(pending)} events are pending (limit {_count(limits.max_events)} events)"
        return None

    def _watch(self) -> None:
        env = self.model.env
        last = -1
        fires = 0
        while not self.stopped.wait(WATCHDOG_POLL_S):
            done = env.events_processed
            found = self._check(stuck=done == last)
            last = done
            if found is None:
                continue
            with self.lock:
                if not self.armed:
                    return
                self.fired = found
                if self.alarm:
                    signal.pthread_kill(self.thread, WATCHDOG_SIGNAL)
                else:
                    _async_raise(self.thread, app_module.WatchdogTimeout)
            fires += 1
            if self.stopped.wait(WATCHDOG_REPEAT_S):
                return
            last_resort = limits_module.LAST_RESORT
            if fires >= WATCHDOG_LAST_RESORT_AFTER and last_resort is not None and self.describe is not None:
                with self.lock:
                    if self.armed:
                        last_resort(self.describe() + " (the code caught every interruption and went on: zsim ended the process)")


class Sandbox:
    """Where a run's app code runs (``run`` enters it when the run has apps): a watchdog
    stops code that keeps the thread; ``env.run``/``env.step`` from inside the model are
    refused (zsim runs the loop); an exception that escapes the event loop from app code
    (a process an app started with ``env.process`` itself, a yield of something that is not
    an event there, ``SystemExit`` and other ``BaseException``) ends the run with one line
    naming the app, its function and the reason (``AppFailed``, exit 2)."""

    def __init__(self, model: Model, limits: RunLimits, apps: Mapping[str, tuple[str, str | None]]) -> None:
        self.model = model
        self.limits = limits
        #: app name -> (its function's name, its file)
        self.apps = dict(apps)
        self.watchdog = Watchdog(model, limits, self._describe_stuck)

    def __enter__(self) -> Sandbox:
        env = self.model.env
        env.run = self._refuse("run")  # type: ignore[method-assign]
        env.step = self._refuse("step")  # type: ignore[method-assign]
        self.watchdog.__enter__()
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        try:
            self.watchdog.__exit__(kind, exc, tb)
        except app_module.WatchdogTimeout as late:  # delivered while the watchdog stopped
            exc = late
        env = self.model.env
        for method in ("run", "step"):
            env.__dict__.pop(method, None)
        if exc is None:
            return
        if isinstance(exc, app_module.WatchdogTimeout):
            raise self._stopped(exc) from None
        if isinstance(exc, (ZsimError, KeyboardInterrupt, MemoryError)):
            return
        app = self._blame(exc)
        if app is None:
            return  # not the apps' code: zsim's own (a bug, reported as one)
        name, frame = app
        function = self.apps.get(name, (None, None))[0] if name is not None else None
        label = f"app[{name}]" if name is not None else "app code"
        parts = ([f"at {app_module._where(frame)}"] if frame is not None else []) + ([f"app function {function}"] if function else [])
        where = f" ({', '.join(parts)})" if parts else ""
        raise app_module.AppFailed(label, f"{self._reason(exc)}{where}") from exc

    # -- who and why ---------------------------------------------------------------------

    def _reason(self, exc: BaseException) -> str:
        text = str(exc)
        if isinstance(exc, RuntimeError) and "Invalid yield value" in text:
            value = text.rsplit("Invalid yield value", 1)[1].strip()
            return (f"yielded {value}, which is not a SimPy event: yield a socket call (sock.recv()), env.timeout(...), "
                    "env.any_of(...) or another event")
        return app_module.reason_of(exc)

    def _app_of_file(self, filename: str) -> str | None:
        try:
            real = str(Path(filename).resolve())
        except (OSError, ValueError):
            return None
        return next((name for name, (_, file) in self.apps.items() if file is not None and file == real), None)

    def _blame(self, exc: BaseException) -> tuple[str | None, traceback.FrameSummary | None] | None:
        """The app whose code raised ``exc`` and the frame, or None if no app's code did."""
        frame = app_module.user_frame_of(exc)
        if frame is None and isinstance(exc, RuntimeError) and "Invalid yield value" in str(exc):
            found = re.search(r'File "(.+?)", line (\d+), in (\S+)', str(exc))
            if found:
                frame = traceback.FrameSummary(found.group(1), int(found.group(2)), found.group(3))
        if frame is None:
            if isinstance(exc, Exception):
                return None
            return (None, None)  # SystemExit and the like out of the loop: app code, not zsim's
        return self._app_of_file(frame.filename), frame

    def _caller(self) -> tuple[str | None, traceback.FrameSummary | None]:
        name = app_module.running_app()
        for frame in reversed(traceback.extract_stack()):
            if not app_module.is_library(frame.filename):
                return name or self._app_of_file(frame.filename), frame
        return name, None

    def _refuse(self, method: str) -> Any:
        def refused(*args: Any, **kwargs: Any) -> Any:
            name, frame = self._caller()
            function = self.apps.get(name, (None, None))[0] if name is not None else None
            parts = ([f"at {app_module._where(frame)}"] if frame is not None else []) + ([f"app function {function}"] if function else [])
            where = f" ({', '.join(parts)})" if parts else ""
            raise app_module.AppFailed(f"app[{name}]" if name else "app code",
                                       f"called env.{method}(...) from inside the model{where}: zsim runs the event loop; an app "
                                       "waits with yield (a socket call, env.timeout(...), env.any_of(...))")

        return refused

    def _describe_stuck(self) -> str:
        """The one line for a run whose thread is still stuck (from the watchdog's thread)."""
        frame = None
        current = sys._current_frames().get(self.watchdog.thread)
        if current is not None:
            frame = next((f for f in reversed(traceback.extract_stack(current)) if not app_module.is_library(f.filename)), None)
        return str(self._limit(app_module.running_app(self.watchdog.thread), frame))

    def _stopped(self, exc: BaseException) -> LimitExceeded:
        chain = app_module.causes(exc)
        name = next((getattr(each, "app", None) for each in chain if getattr(each, "app", None)), None)
        return self._limit(name, app_module.user_frame_of(exc))

    def _limit(self, name: str | None, frame: traceback.FrameSummary | None) -> LimitExceeded:
        elapsed = time.perf_counter() - self.watchdog.started
        fired = self.watchdog.fired or ("max_wall_s", f"the run took {elapsed:.1f} s of wall-clock time")
        key, what = fired
        if name is None and frame is not None:
            name = self._app_of_file(frame.filename)
        function = self.apps.get(name, (None, None))[0] if name is not None else None
        who = f"app[{name}]" if name else "app code"
        parts = ([f"at {app_module._where(frame)}"] if frame is not None else []) + ([f"app function {function}"] if function else [])
        where = f" ({', '.join(parts)})" if parts else ""
        flag = "--" + key.replace("_", "-")
        return LimitExceeded(
            f"limits.{key}",
            f"{what} at simulated time {self.model.env.now:.6g} s: {who} kept the run's thread without giving the event loop "
            f"control back{where}; an app's loop must yield (a socket call, env.timeout(...)). Fix the app, or raise the limit "
            f"({flag} N on the command line, [limits] {key} = N in the scenario, 0 for none)",
        )


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
    for machine in model.machines.values():
        machine.finish()
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
        extra = [apps] if callable(apps) or isinstance(apps, str) else list(apps)
        if codes or extra:  # app code runs: in the sandbox (watchdog, one line for whatever it does)
            with Sandbox(model, run_limits, _app_table(codes, extra)):
                start_apps(model, apps, codes)
                simulate(model, run_limits, progress, recorder)
        else:
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
