"""The machine's cores and the threads that compete for them (``[machine] cores = N``).

Every modelled thread, an application thread running ``[[send]]``/``[[recv]]``/``[[proxy]]``
work or a context's I/O thread running its engines, does its CPU work as *bursts*: a
number of CPU seconds (a call's cost, an engine's per-message work, a busy service time).
A sleeping or blocked thread has no burst and uses no core.

The kernel's scheduler is modelled as processor sharing (the fluid limit of time-slicing):
while ``k`` threads have a burst on ``N`` cores, each progresses at rate ``min(1, N / k)``
CPU seconds per second. Time-slicing is not free: a thread that shares a core progresses
at ``timeslice / (timeslice + context_switch)`` of its share (one switch per slice). A
thread that becomes runnable after sleeping while its cores are all taken starts its burst
``wakeup`` seconds later (the scheduler's wake-up preemption delay); its wake-up on an idle
machine is already in the profile's measured latencies. With affinity (``[[process]]
affinity``) the shares are max-min fair: the water-filling allocation in which no thread
can get more without a thread with an equal or smaller share getting less, each thread
using only its allowed cores and at most one at a time.

A ``Thread`` runs one burst at a time; work submitted while it is busy waits its turn in
order (an I/O thread serves its engines one event at a time, ``io_thread_t``'s poller
loop). An I/O thread that was idle pays ``io_wake_s`` of CPU to wake for an event (the
poller's return, the syscalls, the mailbox: about 25 us each on the calibration machine,
where the per-message engine cost measured at full speed is 0.5 us); one kept busy by
events back to back does not. The event's effects happen when the thread gets to it, the
cost is burnt after, so an idle machine's latencies (measured end to end into the profile)
are unchanged. Each thread keeps what it used (``cpu_s``) and how long it was runnable without a
core (``waited_s``: the burst's length beyond its CPU work, plus wake-up delays).

A program that spins the end of its waits (a workload's ``wait_spin_s`` > 0: an interval
between sends, a service time that is not CPU, a scheduled send's due time) sleeps, then
spins its last ``wait_spin_s`` on the clock, as the validation harness's ``wait_until`` does
(0.5 ms: a sleep closer to the deadline would overshoot it). The spin is a burst of CPU as
long as itself (``spin_cpu_s`` counts it): on a free core it ends exactly at the deadline;
on a shared one it takes longer, because a thread checks its clock only while it runs, and a
spin much shorter than a time slice (3.5 ms measured) is done within one of its slices. (A
spin cut by the end of a slice would end at once when its thread runs again, its deadline
being past: the model then overstates the delay by at most the spin.) With ``wait_spin_s =
0``, the default, the program only sleeps (``time.sleep``) and its waits use no core.

``cores = 0`` builds no ``Machine`` at all: every application thread then has a core of its
own (``OwnCore``, a ``Core`` like ``Thread``) and the model is exactly the one without this
module.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from .kernel import FastTimer

if TYPE_CHECKING:  # pragma: no cover
    from .kernel import Environment
    from .params import SchedulerParams

#: A burst with less CPU work than this left is complete with one that ends now (seconds
#: of CPU: rounding only). What completes a burst is its end time (``Thread.end_at``), not
#: this: at t >= 2^15 s a double's step (7.3e-12 s) is larger than it, so a burst's end
#: can round to before the point where its CPU work, charged in steps, is below it.
DONE_S = 1e-12
INFINITY = float("inf")
#: Above this many distinct affinity sets among the runnable threads, shares are estimated
#: per thread (cores it may use / runnable threads that may use one of them) instead of
#: water-filled over every union of the sets (2^n of them).
MAX_EXACT_SETS = 10

Task = Callable[[], float]


def SPIN() -> float:  # noqa: N802 - a marker: the burst is a precise wait's spin, not a task
    return 0.0


def _owned(owner: Any, timer: Any, fn: Callable[[], Any] | None) -> bool:
    """Whether a burst's follow-up (its timer or function) is ``owner``'s (a workload's)."""
    return (timer is not None and timer is owner.timer) or (fn is not None and getattr(fn, "__self__", None) is owner)


def _arm(timer: Any, delay: float) -> None:
    """``timer.arm(delay)``: a workload's ``FastTimer`` by a C call (compiled), any other timer
    by its method."""
    if type(timer) is FastTimer:
        fast: FastTimer = timer
        fast.arm(delay)
    else:
        timer.arm(delay)


class Core:
    """Where an application thread's CPU work runs (``AppThread.cpu``): the machine's cores
    (``Thread``) or a core of its own (``OwnCore``). One interface, so the calls of an
    application thread never ask which."""

    __slots__ = ()

    def burst(self, cpu: float, timer: FastTimer, wait: float) -> None:
        """Burn ``cpu`` seconds of CPU, then arm ``timer`` ``wait`` seconds later."""
        raise NotImplementedError

    def burst_until(self, cpu: float, timer: FastTimer, due: float, jitter: Any, then: Callable[[], Any]) -> None:
        """Burn ``cpu`` seconds, then sleep until ``due`` (waking ``jitter`` late, a
        ``Sampler`` or None), or go on at once if that is past."""
        raise NotImplementedError

    def sleep_until(self, timer: FastTimer, due: float) -> None:
        """After ``burst_until``'s burst: a precise wait until ``due``, then ``timer``."""
        raise NotImplementedError

    def abandon(self, owner: Any) -> None:
        """``owner`` (a workload) stopped: nothing of its work follows."""
        raise NotImplementedError


class OwnCore(Core):
    """A core of its own (``[machine] cores = 0``: the model without contention): a burst
    of CPU simply takes its length, and what follows it is known at once."""

    __slots__ = ("clock",)

    def __init__(self, clock: Any) -> None:
        self.clock = clock

    def burst(self, cpu: float, timer: FastTimer, wait: float) -> None:
        timer.arm(cpu + wait)

    def burst_until(self, cpu: float, timer: FastTimer, due: float, jitter: Any, then: Callable[[], Any]) -> None:
        # the end of the burst is known now: no call of ``then`` is needed
        ready = self.clock.now + cpu
        if due > ready:
            if jitter is not None:
                due += jitter.next_float()  # the thread sleeps until then, and wakes late
            timer.arm_at(due)
        else:
            timer.arm_at(ready)  # behind schedule: the next send goes back to back

    def sleep_until(self, timer: FastTimer, due: float) -> None:
        timer.arm_at(due)

    def abandon(self, owner: Any) -> None:
        """Nothing is queued on a core of its own: its timers are the owner's to cancel."""


class Thread(Core):
    """One OS thread: its bursts, its queue of work, its statistics."""

    __slots__ = ("machine", "name", "kind", "process", "affinity", "restricted", "index", "remaining", "work", "rate",
                 "started_at", "end_at", "then_timer", "then_wait", "then_fn", "queue", "busy", "last_end", "wake_timer",
                 "pending", "cpu_s", "waited_s", "wake_waits", "bursts", "in_run", "woke", "asleep",
                 "spin_cpu_s", "spinning", "wait_spin_s")

    def __init__(self, machine: Machine, name: str, kind: str, process: str, affinity: frozenset[int], index: int) -> None:
        self.machine = machine
        self.name = name
        self.kind = kind  # "app" | "io"
        self.process = process
        self.affinity = affinity
        self.restricted = len(affinity) < machine.cores
        self.index = index
        self.remaining = 0.0
        self.work = 0.0
        self.rate = 1.0
        self.started_at = 0.0
        self.end_at = 0.0  # when the running burst ends at its current rate (a time, not a delay)
        # what follows the burst: arm ``then_timer`` after ``then_wait``, or call ``then_fn``
        self.then_timer: Any = None
        self.then_wait = 0.0
        self.then_fn: Callable[[], Any] | None = None
        self.queue: deque[tuple[float, Any, float, Callable[[], Any] | None, Task | None]] = deque()
        self.busy = False  # a burst is running or about to (waking)
        self.last_end = -1.0  # when the last burst ended: a burst starting then is no wake-up
        self.wake_timer = machine.env.timer(self._woken)
        self.pending: tuple[float, Any, float, Callable[[], Any] | None, Task | None] | None = None
        self.cpu_s = 0.0
        self.waited_s = 0.0
        self.wake_waits = 0
        self.bursts = 0
        self.in_run = False
        self.woke = False  # the burst about to start follows an idle spell
        # precise waits still asleep, each due to spin at its own time (several workloads
        # of one socket share the thread, so several can sleep at once)
        self.asleep: list[tuple[float, Any, float, Callable[[], Any] | None, Task | None]] = []
        self.spinning = False  # the running burst is a spin
        self.spin_cpu_s = 0.0  # of cpu_s, what spins used
        #: the program's precise waits spin their last this many seconds (its workloads'
        #: ``wait_spin_s``; 0: they only sleep)
        self.wait_spin_s = 0.0

    # -- application threads: a burst, then a sleep ------------------------------------------

    def burst(self, cpu: float, timer: FastTimer, wait: float) -> None:
        self.run(cpu, timer, wait)

    def burst_until(self, cpu: float, timer: FastTimer, due: float, jitter: Any, then: Callable[[], Any]) -> None:
        # sharing cores, the burst's end is known only when it ends: ``then`` follows it and
        # calls ``sleep_until``
        self.run_then(cpu, then)

    def sleep_until(self, timer: FastTimer, due: float) -> None:
        self.wait_until(timer, due)

    def run(self, cpu: float, timer: Any, wait: float = 0.0) -> None:
        """Burn ``cpu`` seconds of CPU, then arm ``timer`` ``wait`` seconds later."""
        machine = self.machine
        if self.busy or machine.wakeup_s > 0:
            self._enqueue((cpu, timer, wait, None, None))
            return
        # _enqueue and _begin for a free thread and no wake-up delay, without the work item
        self.busy = True
        self.woke = False
        self.spinning = False
        self.then_timer = timer
        self.then_wait = wait
        self.then_fn = None
        if cpu > 0:
            machine.start(self, cpu)
        else:
            self.finished()

    def run_then(self, cpu: float, fn: Callable[[], Any]) -> None:
        """Burn ``cpu`` seconds of CPU, then call ``fn()``."""
        machine = self.machine
        if self.busy or machine.wakeup_s > 0:
            self._enqueue((cpu, None, 0.0, fn, None))
            return
        # as run()
        self.busy = True
        self.woke = False
        self.spinning = False
        self.then_timer = None
        self.then_wait = 0.0
        self.then_fn = fn
        if cpu > 0:
            machine.start(self, cpu)
        else:
            self.finished()

    def wait_until(self, timer: Any, until: float) -> None:
        """A precise wait of the application until ``until``, then ``timer`` fires (called
        while the thread is finishing a burst: the spin, if due at once, follows it)."""
        self.wait(timer, until - self.machine.clock.now)

    def wait(self, timer: Any, wait: float) -> None:
        """A precise wait of ``wait`` seconds, then ``timer`` fires: a sleep, then its spin."""
        spin = self.wait_spin_s
        if wait <= 0.0 or spin <= 0.0:
            _arm(timer, wait if wait > 0.0 else 0.0)
            return
        if spin > wait:
            spin = wait
        item = (spin, timer, 0.0, None, SPIN)
        if wait > spin:
            self.asleep.append(item)
            self.machine.env.call_later(wait - spin, partial(self._spin_due, item))
        else:
            self.queue.appendleft(item)  # straight on from the call: no sleep, no wake-up

    def _spin_due(self, item: tuple[float, Any, float, Callable[[], Any] | None, Task | None]) -> None:
        for index, asleep in enumerate(self.asleep):
            if asleep is item:  # not abandoned meanwhile
                del self.asleep[index]
                self._enqueue(item)
                return

    # -- I/O threads: tasks whose effects happen when the thread gets to them ----------------

    def submit(self, task: Task) -> None:
        """Run ``task()`` when the thread is free; it does its effects and returns the CPU
        seconds they cost, which the thread then burns before its next task."""
        self._enqueue((0.0, None, 0.0, None, task))

    def abandon(self, owner: Any) -> None:
        """``owner`` (a workload) stopped: its running burst still uses the CPU it needs,
        but nothing follows it, and its queued work goes. Other workloads sharing the
        thread (several on one socket) keep theirs."""

        if _owned(owner, self.then_timer, self.then_fn):
            self.then_timer = self.then_fn = None
        if self.asleep:
            self.asleep = [item for item in self.asleep if not _owned(owner, item[1], None)]
        if self.queue:
            self.queue = deque([item for item in self.queue if not _owned(owner, item[1], item[3])])
        pending = self.pending
        if pending is not None and _owned(owner, pending[1], pending[3]):
            self.pending = None
            self.wake_timer.cancel()
            if self.queue:
                self.pending = self.queue.popleft()
                self.wake_timer.arm(self.machine.wakeup_s)
            else:
                self.busy = False

    # -- mechanics -----------------------------------------------------------------------------

    def _enqueue(self, item: tuple[float, Any, float, Callable[[], Any] | None, Task | None]) -> None:
        if self.busy:
            self.queue.append(item)
            return
        self.busy = True
        machine = self.machine
        now = machine.clock.now
        self.woke = now > self.last_end
        if self.woke and machine.wakeup_s > 0 and machine.contended(self):
            # woken while its cores are taken: it waits for the scheduler to preempt one
            self.pending = item
            self.waited_s += machine.wakeup_s
            self.wake_waits += 1
            self.wake_timer.arm(machine.wakeup_s)
            return
        self._begin(item)

    def _woken(self) -> None:
        item = self.pending
        self.pending = None
        if item is not None:
            self._begin(item)

    def _begin(self, item: tuple[float, Any, float, Callable[[], Any] | None, Task | None]) -> None:
        cpu, timer, wait, fn, task = item
        self.spinning = task is SPIN
        if task is not None and not self.spinning:
            cpu = task()
            if self.woke:
                cpu += self.machine.io_wake_s
        self.woke = False
        self.then_timer, self.then_wait, self.then_fn = timer, wait, fn
        if cpu > 0:
            self.machine.start(self, cpu)
        else:
            self.finished()

    def finished(self) -> None:
        """The burst is done: what follows it, then the next queued work."""
        self.last_end = self.machine.clock.now
        timer, fn = self.then_timer, self.then_fn
        self.then_timer = self.then_fn = None
        if self.spinning:
            self.spin_cpu_s += self.work
            self.spinning = False
        if timer is not None:
            if self.wait_spin_s <= 0.0:  # wait(), for a program that only sleeps
                wait = self.then_wait
                _arm(timer, wait if wait > 0.0 else 0.0)
            else:
                self.wait(timer, self.then_wait)
        elif fn is not None:
            fn()
        if self.queue:
            self._begin(self.queue.popleft())
        else:
            self.busy = False


class Machine:
    """``N`` cores shared by the threads of every process of the scenario."""

    def __init__(self, env: Environment, params: SchedulerParams, host: str = "") -> None:
        self.env = env
        self.host = host  # the [[host]] these cores belong to ("" the default host)
        self.clock = env.clock  # the time as a C double: see kernel.Clock
        self.cores = params.cores
        self.all_cores = frozenset(range(params.cores))
        self.params = params
        self.wakeup_s = params.wakeup_s
        self.io_wake_s = params.io_wake_s
        slice_s, switch_s = params.timeslice_s, params.context_switch_s
        #: the share of a contended core that is the thread's own work (one switch a slice)
        self.efficiency = slice_s / (slice_s + switch_s) if slice_s > 0 else 1.0
        self.threads: list[Thread] = []
        self.running: list[Thread] = []
        self.updated_at = 0.0
        # fires at the earliest end of a running burst; ``armed`` false: withdrawn
        self.timer = env.fast_timer(self._complete)
        self.armed = False
        self.any_restricted = False
        self.max_runnable = 0

    def thread(self, name: str, kind: str, process: str, affinity: Iterable[int] | None = None) -> Thread:
        cores = self.all_cores if affinity is None else frozenset(affinity) & self.all_cores
        thread = Thread(self, name, kind, process, cores or self.all_cores, len(self.threads))
        self.any_restricted = self.any_restricted or thread.restricted
        self.threads.append(thread)
        return thread

    # -- processor sharing -----------------------------------------------------------------

    def contended(self, thread: Thread) -> bool:
        """Would ``thread`` find every core it may use taken?"""
        if not self.any_restricted:
            return len(self.running) >= self.cores
        cores = thread.affinity
        using = 0
        for other in self.running:
            if other.affinity & cores:
                using += 1
        return using >= len(cores)

    def start(self, thread: Thread, cpu: float) -> None:
        now = self.clock.now
        running = self.running
        # _advance: charge the time since the last change to the bursts already running
        elapsed = now - self.updated_at
        if elapsed > 0:
            for other in running:
                other.remaining -= other.rate * elapsed
        self.updated_at = now
        thread.remaining = thread.work = cpu
        thread.started_at = now
        thread.bursts += 1
        running.append(thread)
        if len(running) > self.max_runnable:
            self.max_runnable = len(running)
        if len(running) == 1:
            # alone on the machine (_reschedule's free-core case): it ends when its work is done
            thread.rate = 1.0
            thread.end_at = now + cpu
            self.armed = True
            self.timer.arm_at(thread.end_at)
            return
        self._reschedule()

    def _advance(self) -> None:
        """Charge the time since the last change to every running burst."""
        now = self.clock.now
        elapsed = now - self.updated_at
        if elapsed > 0:
            for thread in self.running:
                thread.remaining -= thread.rate * elapsed
        self.updated_at = now

    def _reschedule(self) -> None:
        """Each running burst's end time at its new rate; the timer fires at the first.

        The end is a time, kept as the double the timer is armed at: when it fires,
        ``clock.now`` is that double and the burst is done (``_complete``), however little
        of its CPU work the steps of a large clock could charge. Armed as a delay, a burst
        ending less than half a step of the clock away (7.3e-12 s at 2^15 s, 7.5e-9 s at
        10^8 s) fired at the same instant with its work still above ``DONE_S``, was armed
        again and fired again, for ever.
        """
        running = self.running
        if not running:
            self.armed = False  # the timer's pending firing, if any, is ignored
            return
        now = self.clock.now
        soonest = INFINITY
        if len(running) <= self.cores and not self.any_restricted:
            # a core each: every burst runs at rate 1 (``_share``), so it ends when its
            # work left is done (``remaining / 1.0`` is ``remaining``)
            for thread in running:
                thread.rate = 1.0
                end = now + thread.remaining
                thread.end_at = end
                if end < soonest:
                    soonest = end
        else:
            self._share()
            for thread in running:
                end = now + thread.remaining / thread.rate
                thread.end_at = end
                if end < soonest:
                    soonest = end
        self.armed = True
        self.timer.arm_at(soonest)

    def _complete(self, event: Any = None) -> None:
        if not self.armed or (event is not None and event is not self.timer._event):
            return  # withdrawn, or re-armed since
        self.armed = False
        now = self.clock.now
        running = self.running
        if len(running) == 1:
            # one burst running (the common case on a machine with a free core): the
            # timer was armed at its end; _advance, for it alone
            thread = running[0]
            elapsed = now - self.updated_at
            if elapsed > 0:
                thread.remaining -= thread.rate * elapsed
            self.updated_at = now
            if thread.end_at <= now or thread.remaining <= DONE_S * thread.rate + DONE_S:
                running.clear()
                thread.cpu_s += thread.work
                thread.waited_s += max(0.0, now - thread.started_at - thread.work)
                thread.finished()
                return
        else:
            self._advance()
        done = []
        still = []
        for thread in running:
            # its end time has come (the timer was armed at the earliest), or what is left
            # of its work is rounding (a burst ending a hair after this one ends with it)
            if thread.end_at <= now or thread.remaining <= DONE_S * thread.rate + DONE_S:
                done.append(thread)
            else:
                still.append(thread)
        if not done:  # pragma: no cover - the timer fires at the earliest end: never
            self._reschedule()
            return
        self.running = still
        for thread in done:
            thread.cpu_s += thread.work
            thread.waited_s += max(0.0, now - thread.started_at - thread.work)
        self._reschedule()
        for thread in done:
            thread.finished()

    def _share(self) -> None:
        running = self.running
        cores = self.cores
        if not self.any_restricted:
            count = len(running)
            rate = cores / count * self.efficiency if count > cores else 1.0
            for thread in running:
                thread.rate = rate
            return
        for thread, share in fair_shares(running, self.all_cores).items():
            thread.rate = share * self.efficiency if share < 1.0 else 1.0

    # -- end of run --------------------------------------------------------------------------

    def finish(self) -> None:
        """Charge the bursts still running at the end of the run to their threads."""
        self._advance()
        now = self.clock.now
        for thread in self.running:
            done = thread.work - max(0.0, thread.remaining)
            thread.cpu_s += done
            if thread.spinning:
                thread.spin_cpu_s += done
            thread.waited_s += max(0.0, now - thread.started_at - done)
            thread.work = thread.remaining = max(0.0, thread.remaining)
            thread.started_at = now

    def report(self) -> dict[str, Any]:
        """``summary["machine"]``: the cores and, per thread, what it used and waited."""
        threads = {}
        for thread in self.threads:
            threads[thread.name] = {
                "kind": thread.kind,
                "process": thread.process,
                "cores": sorted(thread.affinity) if thread.restricted else None,
                "cpu_s": thread.cpu_s,
                "spin_cpu_s": thread.spin_cpu_s,
                "wait_spin_s": thread.wait_spin_s,
                "waited_s": thread.waited_s,
                "bursts": thread.bursts,
                "wake_waits": thread.wake_waits,
            }
        return {
            "cores": self.cores,
            "context_switch_s": self.params.context_switch_s,
            "wakeup_s": self.params.wakeup_s,
            "timeslice_s": self.params.timeslice_s,
            "io_wake_s": self.params.io_wake_s,
            "max_runnable": self.max_runnable,
            "cpu_s": sum(thread.cpu_s for thread in self.threads),
            "threads": threads,
        }


def fair_shares(threads: list[Thread], cores: frozenset[int]) -> dict[Thread, float]:
    """Max-min fair CPU shares (each at most 1) of ``threads``, each confined to its
    affinity, over ``cores``: water-filling. The union of affinity sets that saturates
    first (fewest cores per thread confined to it) fixes its threads' share; its cores
    are then full, and the rest is shared among the others the same way."""
    shares: dict[Thread, float] = {}
    allowed = {thread: thread.affinity & cores for thread in threads}
    active = list(threads)
    free = set(cores)
    while active:
        groups: dict[frozenset[int], int] = {}
        for thread in active:
            key = allowed[thread]
            groups[key] = groups.get(key, 0) + 1
        sets = list(groups)
        if len(sets) > MAX_EXACT_SETS:
            for thread in active:
                mine = allowed[thread]
                users = sum(1 for other in active if allowed[other] & mine)
                shares[thread] = min(1.0, len(mine) / users)
            return shares
        best = float("inf")
        best_union: frozenset[int] = frozenset()
        for mask in range(1, 1 << len(sets)):
            union = frozenset().union(*(sets[i] for i in range(len(sets)) if mask >> i & 1))
            confined = sum(count for key, count in groups.items() if key <= union)
            level = len(union) / confined
            if level < best:
                best, best_union = level, union
        if best >= 1.0:
            for thread in active:
                shares[thread] = 1.0
            return shares
        rest = []
        for thread in active:
            if allowed[thread] <= best_union:
                shares[thread] = best
            else:
                allowed[thread] = allowed[thread] - best_union
                rest.append(thread)
        free -= best_union
        active = rest
    return shares
