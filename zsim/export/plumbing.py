"""The fixed part of every program ``zsim export --pyzmq`` writes: the run's clock, its
end and the counts (``zsim.export`` writes the design-specific part above it).

Kept apart as text so that ``zsim.export`` stays readable; nothing here is imported by
zsim itself (zsim never imports zmq). ``tests/results/test_export.py`` runs it.
"""

from __future__ import annotations

#: Always included. Uses contextlib, os, queue, signal, sys, threading, time, traceback,
#: typing.Any and zmq, and the generated module's SCENARIO, LAST_EVENT_S and BINDERS.
CORE = '''
class Stopped(Exception):
    """The process is leaving (exit, crash or the end of the run) before a socket opened."""


class Run:
    """What the processes of a run share: t = 0, the end, signs of activity, their reports."""

    def __init__(self, mp: Any, seed: int) -> None:
        self.seed = seed
        self.t0 = mp.Value("d", 0.0, lock=False)  # time.monotonic() at t = 0 (one clock for all processes)
        self.ready = mp.Semaphore(0)  # released by each process once it has its zmq.Context
        self.started = mp.Event()  # t = 0 is set
        self.stop = mp.Event()  # the run is over: every process reports its counts and leaves
        self.moved = mp.Value("q", 0, lock=False)  # messages sent or received so far, all processes
        self.busy_until = mp.Value("d", 0.0)  # when the latest planned wait ends (interval, service, pause)
        self.bound = mp.Array("b", max(1, len(BINDERS)), lock=False)  # per BINDERS entry: it has bound
        self.reports = mp.Queue()
        self.got: list[dict[str, Any]] = []

    def now(self) -> float:
        return time.monotonic() - self.t0.value

    def begin(self, processes: int) -> None:
        """Start the clock (t = 0) once every process has made its zmq.Context."""
        for _ in range(processes):
            if not self.ready.acquire(timeout=60):
                sys.exit("a process did not start within 60 s")
        self.t0.value = time.monotonic()
        self.started.set()

    def sleep_until(self, t_s: float, until_s: float | None) -> bool:
        """Wait until t_s; False if the run ends before (at until_s)."""
        if until_s is not None and t_s >= until_s:
            return False
        time.sleep(max(0.0, t_s - self.now()))
        return True

    def wait_for_end(self, until_s: float | None, quiet_s: float) -> None:
        """Until until_s; without a horizon, until no message has moved for quiet_s after the
        timeline's last event (the simulation ends when nothing can move any more)."""
        if until_s is not None:
            time.sleep(max(0.0, until_s - self.now()))
            return
        moved, since = -1, time.monotonic()
        while True:
            time.sleep(0.01)
            now = time.monotonic()
            if self.moved.value != moved:
                moved, since = self.moved.value, now
            elif self.now() >= LAST_EVENT_S and now - since >= quiet_s and now >= self.busy_until.value:
                return

    def _collect(self, timeout_s: float) -> None:
        with contextlib.suppress(queue.Empty):
            self.got.append(self.reports.get(timeout=timeout_s))

    def resume(self, process: str) -> dict[str, int]:
        """What the loops of a crashed process had done (its last report), for its restart."""
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            for report in reversed(self.got):
                if report["process"] == process and report["crashed_s"] is not None:
                    return report["loops"]
            self._collect(0.1)
        return {}

    def finish(self, instances: int) -> dict[str, Any]:
        """Stop every process and merge their reports: per socket its counts (summed over a
        crashed process and its restart), per process how it ended."""
        self.stop.set()
        deadline = time.monotonic() + 10.0
        while len(self.got) < instances and time.monotonic() < deadline:
            self._collect(0.1)
        sockets: dict[str, dict[str, int]] = {}
        processes: dict[str, dict[str, Any]] = {}
        opened_s: dict[str, float] = {}
        latencies: dict[str, list[float]] = {}
        batches: dict[str, dict[str, float]] = {}
        schedules: dict[str, dict[str, Any]] = {}
        errors: list[str] = []
        notes: list[str] = []
        for report in self.got:
            for name, values in report["latencies"].items():
                latencies.setdefault(name, []).extend(values)
            batches.update(report["batches"])
            schedules.update(report["schedules"])  # a restarted process's loop: its second life
            for name, t_s in report["opened_s"].items():
                opened_s[name] = min(t_s, opened_s.get(name, t_s))  # a restarted process opens again
            for name, counts in report["sockets"].items():
                total = sockets.setdefault(name, dict.fromkeys(counts, 0))
                for key, value in counts.items():
                    total[key] += value
            ended = processes.setdefault(report["process"], {})
            for key in ("exit_started_s", "exit_completed_s", "term_blocked", "crashed_s"):
                if report[key] or key not in ended:
                    ended[key] = report[key]
            errors += [f"{report['process']}: {error}" for error in report["errors"]]
            notes += [f"{report['process']}: {note}" for note in report["notes"]]
        if len(self.got) < instances:
            errors.append(f"{instances - len(self.got)} of {instances} processes sent no report")
        schedule = {loop: behind_schedule(entry) for loop, entry in sorted(schedules.items())}
        for loop, entry in schedule.items():
            fraction = entry["rate_fraction"]
            if fraction is not None and fraction < 1.0 - SCHEDULE_NOTE:
                notes.append(f"{loop} fell behind its own schedule: it kept {100 * fraction:.1f} % of its pace "
                             f"({1000 * entry['behind_s']:.1f} ms behind by its last send, the latest send "
                             f"{1000 * entry['most_late_s']:.1f} ms late): late wake-ups and Python between sends on this "
                             "machine; its rates are this machine's (zsim run's senders table: the simulated machine's)")
        return {"scenario": SCENARIO, "seed": self.seed, "elapsed_s": round(self.now(), 3),
                "sockets": dict(sorted(sockets.items())), "latency_ms": {name: percentiles(values) for name, values in
                                                                         sorted(latencies.items())},
                "batches": dict(sorted(batches.items())), "opened_s": dict(sorted(opened_s.items())),
                "schedule": schedule, "processes": processes, "notes": notes, "errors": errors}


#: A paced [[send]] that kept less than 1 - SCHEDULE_NOTE of its pace is said under notes.
SCHEDULE_NOTE = 0.01


def behind_schedule(entry: dict[str, Any]) -> dict[str, Any]:
    """How far a paced [[send]] fell behind its own schedule (Proc.attempt): its attempts,
    behind_s (the lateness its last send had piled up), most_late_s (its latest send), and
    rate_fraction, the share of its pace it kept: the time the schedule planned from the
    first attempt's due time to the last send, over the time it took (None before it sent)."""
    span = entry["last_s"] - entry["first_due_s"]
    behind = entry["behind_s"]
    return {"attempts": entry["attempts"], "behind_s": round(behind, 6), "most_late_s": round(entry["most_late_s"], 6),
            "rate_fraction": round((span - behind) / span, 4) if span > 0 else None}


def percentiles(seconds: list[float]) -> dict[str, float]:
    """count, p50, p99 and max of latencies in seconds, as milliseconds (nearest rank)."""
    ordered = sorted(seconds)

    def rank(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 3)

    return {"count": len(ordered), "p50": rank(0.5), "p99": rank(0.99), "max": round(ordered[-1] * 1000, 3)}


COUNTS = ("sent", "received", "send_again", "send_unroutable", "recv_again")
STAMP_MARK = 0x5A << 56  # "Z" in the top byte of a stamp: a send time, not payload
STAMP_NS = (1 << 56) - 1  # the send time: time.monotonic_ns(), modulo 2 ** 56 ns (833 days)


class Proc:
    """One [[process]]: its zmq.Context, its threads, its sockets' counts, its timeline."""

    def __init__(self, run: Run, name: str, senders: int = 0, resume: dict[str, int] | None = None, io_threads: int = 1,
                 cores: tuple[int, ...] | None = None) -> None:
        self.run = run
        self.name = name
        self.errors: list[str] = []
        self.notes: list[str] = []  # said with the counts; the run went on (not errors)
        if cores is not None:  # pinned before the context's I/O threads start: they inherit it
            usable = sorted(os.sched_getaffinity(0))
            if max(cores) < len(usable):
                os.sched_setaffinity(0, [usable[core] for core in cores])
            else:
                self.notes.append(f"cores {cores}: this machine lets the program use only {len(usable)} CPUs; not pinned")
        self.ctx = zmq.Context(io_threads=io_threads)
        run.ready.release()  # this process is ready ...
        run.started.wait()  # ... and t = 0 comes once every process is
        self.t0 = run.t0.value
        self.stopping = threading.Event()  # the process exits, crashes, or the run is over
        self.run_over = False
        self.lock = threading.Lock()
        self.counts: dict[str, dict[str, int]] = {}
        self.latencies: dict[str, list[float]] = {}  # per socket: seconds from each stamp's send to its receive
        self.batches: dict[str, dict[str, float]] = {}  # per count-bounded [[recv]]: when it had them all
        self.schedules: dict[str, dict[str, Any]] = {}  # per paced [[send]]: how late its attempts came (attempt)
        self.names: dict[zmq.Socket, str] = {}
        self.opened_s: dict[str, float] = {}  # when each socket's opener returned (bound, connected)
        self.loops: dict[str, int] = dict(resume or {})  # attempts done per loop (for a restart)
        self.restarted = resume is not None
        self.senders = senders  # [[send]] loops still going (exit_after_sends)
        self.senders_done = threading.Event()
        if senders == 0:
            self.senders_done.set()
        self.threads: list[threading.Thread] = []
        self.exit_started_s: float | None = None
        self.exit_completed_s: float | None = None
        self.crashed_s: float | None = None

    # -- what the loops use ----------------------------------------------------------

    def now(self) -> float:
        """Seconds since t = 0."""
        return time.monotonic() - self.t0

    def sleep(self, seconds: float) -> bool:
        """Wait; False (at once) when the process is leaving."""
        self._planned(seconds)
        return not self.stopping.wait(seconds)

    def busy(self, seconds: float) -> bool:
        """Compute ``seconds`` of this thread's own CPU time (a busy loop: CPU work, which
        holds this process's GIL); sharing a core, that takes longer in wall time, as in
        the simulator. False when the process is leaving."""
        target = time.thread_time() + seconds
        while True:
            left = target - time.thread_time()
            if left <= 0:
                return not self.stopping.is_set()
            self._planned(left)  # the run is not quiet while this thread still computes
            end = time.monotonic() + min(left, 0.001)
            while time.monotonic() < end:
                pass
            if self.stopping.is_set():
                return False

    def sleep_until(self, t_s: float) -> bool:
        """Wait until t = t_s (at once if it is past); False when the process is leaving."""
        return self.sleep(max(0.0, t_s - self.now()))

    def ms_until(self, t_s: float) -> int:
        """Milliseconds until t_s (for poll timeouts), at least 0."""
        return max(0, int((t_s - self.now()) * 1000))

    def count(self, sock: zmq.Socket, what: str) -> None:
        self.counts[self.names[sock]][what] += 1
        self.run.moved.value += 1

    def stamp(self, message: Any) -> Any:
        """The message (bytes, or a list of frames) with its send time in the last 8 bytes of
        its last frame, when that frame has 8: whoever receives it, or a reply or result that
        carries the stamp on (carry), measures the time since (received)."""
        if isinstance(message, list):
            return [*message[:-1], self.stamp(message[-1])]
        if len(message) < 8:
            return message
        return message[:-8] + (time.monotonic_ns() & STAMP_NS | STAMP_MARK).to_bytes(8, "little")

    def carry(self, message: list[bytes], size: int) -> bytes:
        """size bytes (a reply, a result) that carry on the stamp of the message that caused them."""
        last = message[-1][-8:]
        if size < 8 or len(last) < 8 or int.from_bytes(last, "little") >> 56 != STAMP_MARK >> 56:
            return bytes(size)
        return bytes(size - 8) + last

    def received(self, sock: zmq.Socket, message: list[bytes]) -> None:
        """Count a message received and, if it carries a stamp, the time since that send."""
        self.count(sock, "received")
        value = int.from_bytes(message[-1][-8:], "little") if len(message[-1]) >= 8 else 0
        if value >> 56 == STAMP_MARK >> 56:
            elapsed_ns = (time.monotonic_ns() - (value & STAMP_NS)) & STAMP_NS
            self.latencies.setdefault(self.names[sock], []).append(elapsed_ns / 1e9)

    def attempt(self, loop: str, due_s: float, moves: bool = False) -> None:
        """A paced [[send]]'s attempt, due at t = due_s by its own schedule: how late it comes
        is how far the sender fell behind. moves: a send-then-wait loop (each attempt due an
        interval after the previous send returned), whose late attempt moves every later
        one, so the lateness adds up; else a schedule (due when it was due, whatever came
        before): the lateness now is how far behind it is. As the validation harness's
        workloads measure it (behind_s)."""
        now = self.now()
        late = max(0.0, now - due_s)
        entry = self.schedules.get(loop)
        if entry is None:
            entry = self.schedules[loop] = {"attempts": 0, "first_due_s": due_s, "behind_s": 0.0, "most_late_s": 0.0}
        entry["attempts"] += 1
        entry["behind_s"] = entry["behind_s"] + late if moves else late
        entry["most_late_s"] = max(entry["most_late_s"], late)
        entry["last_s"] = now

    def finished(self, loop: str, since_s: float | None = None) -> None:
        """A count-bounded [[recv]] has every message it waited for: the batch is done
        (batch_s: since since_s, when its batch was sent)."""
        done_s = self.now()
        self.batches[loop] = {"done_s": round(done_s, 6)}
        if since_s is not None:
            self.batches[loop]["batch_s"] = round(done_s - since_s, 6)

    def poll(self, poller: zmq.Poller, until_s: float | None = None) -> dict[zmq.Socket, int] | None:
        """The events of the poller's sockets, waiting at most until t = until_s (zmq_poll
        counts whole milliseconds: the rest is slept); None when the process is leaving."""
        if until_s is None:
            events = dict(poller.poll())
        else:
            self._planned(until_s - self.now())
            events = dict(poller.poll(self.ms_until(until_s)))
            if not events and not self.sleep_until(until_s):
                return None
        return None if self.stopping.is_set() else events

    def attempts(self, loop: str, count: int) -> Any:
        """range(count), resumed where a crashed instance of this process left off."""
        while True:
            done = self.loops.get(loop, 0)
            if done >= count:
                return
            self.loops[loop] = done + 1
            yield done

    def sender_done(self) -> None:
        with self.lock:
            self.senders -= 1
            if self.senders <= 0:
                self.senders_done.set()

    def _planned(self, seconds: float) -> None:
        if seconds > 0:
            until = time.monotonic() + seconds
            busy = self.run.busy_until
            with busy.get_lock():
                if until > busy.value:
                    busy.value = until

    @contextlib.contextmanager
    def open(self, name: str, opener: Any, *args: Any, at_s: float = 0.0, close_at_s: float | None = None,
             after: tuple[str, ...] = ()) -> Any:
        """A socket for the calling thread: made by opener(ctx, *args) at t = at_s (once the
        sockets named in after, due to bind at the same instant, have bound: at most 1 s),
        then, once the loops are done, kept open until close_at_s or until the process
        leaves, and closed with its LINGER (LINGER 0 when the run is over)."""
        self.counts.setdefault(name, dict.fromkeys(COUNTS, 0))  # reported, opened or not
        if not self.sleep_until(at_s):
            raise Stopped()
        deadline = time.monotonic() + 1.0
        while not all(self.run.bound[BINDERS.index(peer)] for peer in after) and time.monotonic() < deadline:
            if self.stopping.wait(0.001):
                raise Stopped()
        sock = opener(self.ctx, *args)
        self.opened_s.setdefault(name, round(self.now(), 6))
        if name in BINDERS:
            self.run.bound[BINDERS.index(name)] = 1
        self.names[sock] = name
        try:
            yield sock
            if close_at_s is None:
                self.stopping.wait()
            else:
                self.sleep_until(close_at_s)
        finally:
            sock.close(linger=0 if self.run_over else None)

    # -- the process's threads and timeline ----------------------------------------------

    def start(self, target: Any, *args: Any) -> None:
        """Run target(self, *args) in a thread of its own."""
        thread = threading.Thread(target=self._thread, args=(target, *args), name=target.__name__, daemon=True)
        self.threads.append(thread)
        thread.start()

    def _thread(self, target: Any, *args: Any) -> None:
        try:
            target(self, *args)
        except (Stopped, zmq.ContextTerminated):
            pass  # the process is leaving
        except Exception:  # noqa: BLE001 - reported with the counts
            self.errors.append(f"{target.__name__}: {traceback.format_exc(limit=4)}")
            traceback.print_exc()

    def live(self, exit_at_s: float | None = None, exit_after_sends: bool = False, crash_at_s: float | None = None) -> None:
        """The process's timeline (exit, crash), then the end of the run: report, leave."""
        if self.restarted:
            crash_at_s = None  # it crashed already
        while True:
            now = self.now()
            if crash_at_s is not None and now >= crash_at_s:
                self.crash()
            if self.exit_started_s is None and (
                (exit_at_s is not None and now >= exit_at_s) or (exit_after_sends and self.senders_done.is_set())
            ):
                self.exit()
            due = [t for t in (crash_at_s, exit_at_s if self.exit_started_s is None else None) if t is not None]
            wait = min([0.01] + [max(0.0, t - self.now()) for t in due])
            if self.run.stop.wait(wait):
                break
        self.run.reports.put(self.report())
        self.shutdown()

    def exit(self) -> None:
        """Close every socket (each with its LINGER) and terminate the context, as a
        program's main() does at its end: zmq_ctx_term waits for lingering messages."""
        self.exit_started_s = self.now()
        self.stopping.set()

        def term() -> None:
            self.ctx.term()
            self.exit_completed_s = self.now()

        threading.Thread(target=term, name="ctx-term", daemon=True).start()

    def crash(self) -> None:
        """The OS process dies (SIGKILL): no LINGER, nothing flushed. Its counts go first."""
        self.crashed_s = self.now()
        self.run.reports.put(self.report())
        self.run.reports.close()
        self.run.reports.join_thread()
        os.kill(os.getpid(), signal.SIGKILL)

    def shutdown(self) -> None:
        """The run is over: every socket closes at once (LINGER 0), the threads end."""
        self.run_over = True
        self.stopping.set()
        if self.exit_started_s is None:
            threading.Thread(target=self.ctx.term, name="ctx-term", daemon=True).start()
        deadline = time.monotonic() + 2.0
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def report(self) -> dict[str, Any]:
        return {
            "process": self.name,
            "sockets": {name: dict(counts) for name, counts in self.counts.items()},
            "opened_s": dict(self.opened_s),
            "latencies": {name: list(values) for name, values in self.latencies.items()},
            "batches": dict(self.batches),
            "schedules": {loop: dict(entry) for loop, entry in self.schedules.items()},
            "loops": dict(self.loops),
            "exit_started_s": None if self.exit_started_s is None else round(self.exit_started_s, 6),
            "exit_completed_s": None if self.exit_completed_s is None else round(self.exit_completed_s, 6),
            "term_blocked": self.exit_started_s is not None and self.exit_completed_s is None,
            "crashed_s": None if self.crashed_s is None else round(self.crashed_s, 6),
            "errors": list(self.errors),
            "notes": list(self.notes),
        }
'''

#: With random distributions: one numpy generator per loop, from the seed and the loop's name.
RNG = '''
    def rng(self, loop: str) -> np.random.Generator:
        """The loop's own random numbers: numpy, from the run's seed and the loop's name."""
        return np.random.default_rng([self.run.seed, zlib.crc32(loop.encode())])
'''

#: With multipart messages of random sizes.
FRAMES = '''

def frames(topic: bytes, size: int, parts: int) -> list[bytes]:
    """A message of parts frames: the topic (if any) as its own first frame, then size bytes
    spread over the other frames."""
    payload = parts - 1 if topic else parts
    base, extra = divmod(size, payload)
    return ([topic] if topic else []) + [bytes(base + (1 if k < extra else 0)) for k in range(payload)]
'''

#: With [[call]]s: a thread's timeline of calls, and the waits that end at the next one.
CALLS = '''

class Calls:
    """The [[call]]s on the sockets of one thread, (t, call) in time order: the thread that
    owns the sockets makes each at its time (a ZeroMQ socket belongs to one thread). Its
    loops wait through it: a sleep, a poll, a blocking send or receive ends at the next
    call's time, the thread makes the calls due and goes on with what it had left (SNDTIMEO
    and RCVTIMEO count from the start of the send or receive, as zmq_send reads them). A
    process that is leaving makes no more calls; one started again (restart_s) makes only
    those from then on: it opens its sockets as its program declares them."""

    def __init__(self, proc: Proc, calls: list[tuple[float, Any]], restart_s: float | None = None) -> None:
        self.proc = proc
        self.calls = [(t_s, call) for t_s, call in calls if not (proc.restarted and restart_s is not None and t_s < restart_s)]
        self.make_due()

    def make_due(self) -> None:
        """Make every call whose time has come."""
        while self.calls and self.calls[0][0] <= self.proc.now() and not self.proc.stopping.is_set():
            _, call = self.calls.pop(0)
            call()

    def next_s(self, until_s: float | None = None) -> float | None:
        """When the next call is due, if before until_s (None: whenever)."""
        if self.calls and (until_s is None or self.calls[0][0] < until_s):
            return self.calls[0][0]
        return None

    def sleep_until(self, t_s: float) -> bool:
        """proc.sleep_until, making the calls due meanwhile; False when the process is leaving."""
        while (next_s := self.next_s(t_s)) is not None:
            if not self.proc.sleep_until(next_s):
                return False
            self.make_due()
        return self.proc.sleep_until(t_s)

    def sleep(self, seconds: float) -> bool:
        return self.sleep_until(self.proc.now() + seconds)

    def busy(self, seconds: float) -> bool:
        """proc.busy, making the calls due as it goes (between slices of 1 ms of CPU time)."""
        target = time.thread_time() + seconds
        while (left := target - time.thread_time()) > 0:
            self.make_due()
            if not self.proc.busy(min(left, 0.001)):
                return False
        return not self.proc.stopping.is_set()

    def poll(self, poller: zmq.Poller, until_s: float | None = None) -> dict[zmq.Socket, int] | None:
        """proc.poll, making the calls due meanwhile: the events, {} at until_s, None when
        the process is leaving."""
        while (next_s := self.next_s(until_s)) is not None:
            events = self.proc.poll(poller, next_s)
            if events is None or events:
                return events
            self.make_due()
        return self.proc.poll(poller, until_s)

    def wait(self, sock: zmq.Socket, event: int, until_s: float | None = None) -> bool:
        """Until sock can receive (zmq.POLLIN) or send (zmq.POLLOUT), making the calls due
        meanwhile; False at until_s or when the process is leaving."""
        poller = zmq.Poller()
        poller.register(sock, event)
        return bool(self.poll(poller, until_s))

    def send(self, sock: zmq.Socket, data: Any) -> None:
        """sock.send(data): blocks while there is no room (up to SNDTIMEO, then zmq.Again),
        making the calls due meanwhile."""
        self._blocking(sock, zmq.POLLOUT, lambda: sock.send(data, zmq.DONTWAIT))

    def send_multipart(self, sock: zmq.Socket, frames: list[Any]) -> None:
        """sock.send_multipart(frames), as send."""
        self._blocking(sock, zmq.POLLOUT, lambda: sock.send_multipart(frames, zmq.DONTWAIT))

    def recv_multipart(self, sock: zmq.Socket) -> list[bytes]:
        """sock.recv_multipart(): blocks until a message comes (up to RCVTIMEO, then
        zmq.Again), making the calls due meanwhile."""
        return self._blocking(sock, zmq.POLLIN, lambda: sock.recv_multipart(zmq.DONTWAIT))

    def _blocking(self, sock: zmq.Socket, event: int, attempt: Any) -> Any:
        timeout_ms = sock.getsockopt(zmq.SNDTIMEO if event == zmq.POLLOUT else zmq.RCVTIMEO)
        end_s = None if timeout_ms < 0 else self.proc.now() + timeout_ms / 1000
        while True:
            try:
                return attempt()
            except zmq.Again:
                if end_s is not None and self.proc.now() >= end_s:
                    raise
            if not self.wait(sock, event, end_s) and self.proc.stopping.is_set():
                raise Stopped()

    def finish(self) -> None:
        """The calls still to come, each at its time (the loops are done; the socket stays
        open until it closes)."""
        while (next_s := self.next_s()) is not None:
            if not self.proc.sleep_until(next_s):
                return
            self.make_due()
'''
