"""Plain pyzmq programs next to the same design in the model, with the default profile.

The programs (tests/plain_programs.py, each an OS process of its own where the design has
separate processes) are what a designer writes: a bare ``for`` loop around ``send``, a
``time.sleep`` for every wait, a busy service as a loop on ``time.thread_time``. The model
runs the same design as a scenario dict with the plain-program defaults (``loop_cpu_s`` 0,
``wait_spin_s`` 0). Compared are the mechanisms the validation harness's habits (its
Python loop around each call, its spinning waits) used to distort:

1. a PUB's burst into a SUB that does not read yet (tcp and ipc, HWM x message size), and
   a blocking PUSH into a PULL that does not read (the control: its count does not depend
   on how fast the loop runs);
2. a ventilator dealing tasks to 8 worker processes on 2 pinned CPUs, the work a sleep
   (needs no core) or a busy loop (needs one);
3. a PUB at a fixed rate over tcp to three bare SUB loops and one slow one.

Each test asserts only what machine load cannot change (counts, order, what libzmq makes
exact), or measures the load in the same run and accounts for it: the model is run with
the real program's own achieved schedule (the burst's duration, the publisher's send
times, the slow subscriber's cycle), and the run-queue waits of the real threads (``/proc/<pid>/task/*/schedstat``)
bound what the load took. Tolerances come from the spread of real runs on the 2-core
machine the profile was measured on, while other users kept it busy.

``ZSIM_PLAIN_TEST_HABITS=harness`` runs every model with the validation harness's old
habits on every workload (``loop_cpu_s`` 1.4 us, ``wait_spin_s`` 0.5 ms): the cases those
got wrong for plain programs then fail (the way to check that the tests can fail).
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import json
import math
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import zsim
import zsim.profile
from validation.calibrate import MAX_COMMAND_DELAY_TICKS
from validation.calibrate.common import tsc_hz
from zsim.results import flat_metrics

zmq = pytest.importorskip("zmq")

pytestmark = [pytest.mark.real, pytest.mark.timeout(120)]

PLAIN = Path(__file__).resolve().parents[1] / "plain_programs.py"
from plain_programs import END, FIRST  # noqa: E402  (pyzmq first: the programs import it)

#: the validation harness's habits, for checking that the tests fail with them (see above)
HABITS: dict[str, float] = (
    {"loop_cpu_s": 1.4e-6, "wait_spin_s": 0.0005} if os.environ.get("ZSIM_PLAIN_TEST_HABITS") == "harness" else {}
)
#: where to append what each real run measured, one JSON object a line (for the tables in
#: the commit message; nothing reads it back)
REPORT = os.environ.get("ZSIM_PLAIN_TEST_REPORT")


def report(case: str, **fields: Any) -> None:
    if REPORT:
        with open(REPORT, "a") as handle:
            handle.write(json.dumps({"case": case, "habits": bool(HABITS), **fields}) + "\n")


def workload(**fields: Any) -> dict[str, Any]:
    """A [[send]] or [[recv]] of the program (plain: nothing added)."""
    return {**fields, **HABITS}


def simulate(raw: dict[str, Any], seed: int = 1) -> zsim.RunResult:
    return zsim.run(raw, seed)


# ----------------------------------------------------------------------------------------
# the programs as processes, and what the kernel says about their threads


class Program:
    """``python tests/plain_programs.py <name> <json args>``: one JSON line per message on
    stdout, one line per command on stdin. ``kill()`` in a finally."""

    def __init__(self, name: str, **args: Any) -> None:
        self.name = name
        self.proc = subprocess.Popen([sys.executable, str(PLAIN), name, json.dumps(args)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.pid = self.proc.pid
        self._buffer = b""

    def has_line(self, timeout: float = 0.0) -> bool:
        if b"\n" in self._buffer:
            return True
        assert self.proc.stdout is not None
        return bool(select.select([self.proc.stdout], [], [], timeout)[0])

    def read(self, timeout: float = 30.0) -> dict[str, Any]:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise AssertionError(f"plain program {self.name} said nothing for {timeout} s")
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            if not chunk:
                raise AssertionError(f"plain program {self.name} ended (exit status {self.proc.wait()})")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def send(self, line: str = "go") -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


def kill_all(programs: list[Program]) -> None:
    for program in programs:
        program.kill()


def schedstat(pids: list[int], self_too: bool = False, prefix: str | None = None) -> dict[tuple[str, str], tuple[float, float]]:
    """Per thread of the processes ``pids`` (and of this one): (seconds on a CPU, seconds
    runnable without one) so far, from ``/proc/<pid>/task/<tid>/schedstat``; only threads
    whose name starts with ``prefix``, if given."""
    stats: dict[tuple[str, str], tuple[float, float]] = {}
    for pid in [*map(str, pids), *(["self"] if self_too else [])]:
        for task in glob.glob(f"/proc/{pid}/task/*"):
            try:
                if prefix is not None:
                    with open(f"{task}/comm") as handle:
                        if not handle.read().startswith(prefix):
                            continue
                with open(f"{task}/schedstat") as handle:
                    run_ns, wait_ns = handle.read().split()[:2]
            except (OSError, ValueError):
                continue
            stats[(pid, os.path.basename(task))] = (int(run_ns) / 1e9, int(wait_ns) / 1e9)
    return stats


def used(before: dict, after: dict, which: int, pid: int | str | None = None, tid: int | str | None = None) -> float:
    """CPU (``which`` = 0) or run-queue wait (1) between two ``schedstat`` samples, over the
    threads in both (of process ``pid`` / thread ``tid`` only, if given)."""
    return sum(after[key][which] - before[key][which] for key in after.keys() & before.keys()
               if (pid is None or key[0] == str(pid)) and (tid is None or key[1] == str(tid)))


class SleepProbe:
    """How late ``time.sleep`` returns on this machine right now: a thread of this process
    sleeps each of ``waits_s`` in turn until stopped (a few % of a core). Load makes every
    sleep of the plain programs later than the profile's quiet-machine lateness, without
    any run-queue wait to show for it (a VM's timer, the host)."""

    def __init__(self, waits_s: tuple[float, ...]) -> None:
        self.waits_s = waits_s
        self.samples: dict[float, list[float]] = {wait: [] for wait in waits_s}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        clock = time.perf_counter
        while not self._stop.is_set():
            for wait in self.waits_s:
                start = clock()
                time.sleep(wait)
                self.samples[wait].append(clock() - start - wait)

    def __enter__(self) -> SleepProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def mean_late_s(self) -> dict[float, float]:
        return {wait: sum(values) / len(values) for wait, values in self.samples.items() if values}


def profile_late_s(wait_s: float) -> float:
    """The mean lateness the model draws for a sleep of ``wait_s`` (the profile's table for
    the nearest length)."""
    profile = zsim.profile.load("default")
    _, table = min(profile.sleep_late, key=lambda row: abs(math.log(row[0] / wait_s)))
    return table.expected()


@pytest.fixture
def ipc_dir():
    path = tempfile.mkdtemp(prefix="zsim-plain-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def two_cpus() -> list[int]:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip(f"needs 2 CPUs, this process may use {cpus}")
    return cpus[:2]


# ----------------------------------------------------------------------------------------
# 1. a burst into a SUB that does not read yet


#: messages in a burst
BURST = 20_000


@dataclass
class Burst:
    received: int
    first_arrived: bool
    wall_s: float
    cpu_s: float
    sender_waited_s: float
    waited_s: float  # every thread of both processes (sender, both I/O threads, ...)


def real_burst(transport: str, hwm: int, size: int, count: int, ipc_dir: str) -> Burst:
    """This process is the publisher: PUB (SNDHWM ``hwm``) bound, the SUB (RCVHWM ``hwm``)
    a process of its own that connects, subscribes and reads nothing. After 0.3 s (the
    subscription is long in place) the loop ``for ...: pub.send(payload, zmq.DONTWAIT)``
    sends ``count`` messages back to back, the first one marked; 0.3 s later the SUB
    reads everything up to the end marker, which the PUB then sends every 20 ms."""
    ctx = zmq.Context()
    programs: list[Program] = []
    try:
        pub = ctx.socket(zmq.PUB)
        pub.linger = 0
        pub.sndhwm = hwm
        if transport == "tcp":
            pub.bind("tcp://127.0.0.1:0")
        else:
            pub.bind(f"ipc://{ipc_dir}/burst-{hwm}-{size}")
        endpoint = pub.getsockopt_string(zmq.LAST_ENDPOINT)
        sub = Program("sub", endpoint=endpoint, rcvhwm=hwm)
        programs.append(sub)
        sub.read()
        time.sleep(0.3)
        payload = b"x" * size
        first = FIRST + payload[len(FIRST):]
        me = threading.get_native_id()
        before = schedstat([sub.pid], self_too=True)
        cpu0, start = time.thread_time(), time.perf_counter()
        pub.send(first, zmq.DONTWAIT)
        for _ in range(count - 1):
            pub.send(payload, zmq.DONTWAIT)
        wall, cpu = time.perf_counter() - start, time.thread_time() - cpu0
        after = schedstat([sub.pid], self_too=True)
        time.sleep(0.3)
        sub.send("read")
        while not sub.has_line(0.02):
            pub.send(END, zmq.DONTWAIT)
        result = sub.read()
        sub.send("quit")
        return Burst(result["received"], result["first_was_first"], wall, cpu, used(before, after, 1, tid=me),
                     used(before, after, 1))
    finally:
        kill_all(programs)
        ctx.destroy(linger=0)


def burst_scenario(transport: str, hwm: int, size: int, count: int, paced_s: float | None = None) -> dict[str, Any]:
    """The same design; ``paced_s``: the burst spread evenly over that long (the real
    program's achieved schedule) instead of as fast as the model's loop goes. This stand-in
    is a bound, not the real program: the real loop is on its CPU the whole burst, the
    stand-in sleeps between its sends and leaves its core to the I/O threads, so the
    engines run without contention and the most windows the burst's duration holds pass
    (a stand-in that spins, wait_spin_s, gives 13 windows where real bursts of 19 ms
    passed 14)."""
    endpoint = "tcp://127.0.0.1:7000" if transport == "tcp" else "ipc://burst"
    send = workload(socket="pub", count=count, size_bytes=size, dontwait=True, start_s=0.5)
    if paced_s is not None:
        send.update(interval_s=paced_s / count, pacing="schedule")
    return {
        "scenario": {"name": f"burst-{transport}-{hwm}-{size}", "profile": "default"},
        "process": [{"name": "publisher"}, {"name": "subscriber"}],
        "socket": [
            {"name": "pub", "type": "PUB", "process": "publisher", "bind": [endpoint], "options": {"sndhwm": hwm}},
            {"name": "sub", "type": "SUB", "process": "subscriber", "connect": [endpoint], "open_at_s": 0.05,
             "options": {"rcvhwm": hwm, "subscribe": [""]}},
        ],
        "send": [send],
        "recv": [workload(socket="sub", start_s=3.0)],
    }


@functools.cache
def this_machine() -> zsim.profile.Profile:
    """The shipped profile with this machine's command throttle. libzmq looks at a socket's
    command pipe at most once per ``max_command_delay``, 3,000,000 TSC ticks: 1.30 ms on
    the calibration machine (a 2.3 GHz Xeon), 1.16 ms on a 2.6 GHz EPYC. A burst into a SUB
    that does not read gets one window of credit per look, so on another CPU the real count
    follows that CPU's clock (2026-11-27, an EPYC: 110-2,100 where the Xeon's throttle
    predicts 100-2,000). The burst cells compare with the model of the machine they run on
    (the TSC rate as ``zsim calibrate`` reads it); every other number is the shipped one."""
    hz, source = tsc_hz()
    if source.startswith("fallback"):
        pytest.skip(f"this machine's TSC rate is unknown ({source}): its command throttle cannot be told")
    return dataclasses.replace(zsim.profile.load("default"), command_throttle_s=MAX_COMMAND_DELAY_TICKS / hz)


def sim_burst(transport: str, hwm: int, size: int, count: int, paced_s: float | None = None) -> tuple[int, float]:
    """(messages the SUB received, how long the burst took) in the model of this machine."""
    summary = zsim.run(burst_scenario(transport, hwm, size, count, paced_s), 1, profile=this_machine()).summary
    return summary["sockets"]["sub"]["received"], summary["senders"]["send.pub"]["finished_at_s"] - 0.5


def _xfail(reason: str, strict: bool = True) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=strict, reason=reason)


#: tcp: the kernel capacity of the profile comes from the calibration's long fills
TCP_AUTOTUNE = ("model gap, tcp kernel capacity: the profile's is fitted on fills that last seconds, over which "
                "autotuning grows the buffers (4.26 MB: 355,000 messages of 10 B); a burst of 10-40 ms into a "
                "fresh connection finds them small: 3,500-13,600 of 20,000 pass for real (15,000 of 50,000), "
                "17,000-20,000 in the model. Not strict: on a machine running 2-3x slower than its profile "
                "(2026-11-26) the burst lasted long enough for autotuning to catch up and the count agreed")
#: ipc: the kernel charges each write's skb truesize, so how many messages the unix socket
#: holds follows how many each engine write carries, which follows the engines' timing
IPC_WRITES = ("model gap, ipc kernel charged per write: 2,000-3,000 of 10 B messages pass for real on a quiet "
              "or moderately loaded machine, 4,000-4,500 in the model on every schedule (the model's engine writes "
              "carry more messages each). Not strict: on a heavily loaded machine (2026-11-26, two compilations "
              "beside the suite) the real engines ran less often, each write carried more messages, and the real "
              "count rose into the model's band")

#: (transport, HWM, size, kind, LWM steps, burst length). kind "hwm": the count does not
#: depend on how fast the loop ran (the pipes and the kernel are full before the burst
#: ends) and is exact up to ``steps`` LWM steps of the kernel's run-to-run spread;
#: "window": the count grows with the burst's duration (one window of credit per
#: command-throttle interval) and is bounded by the model run on the real burst's own
#: schedule; "ipc": small messages in the unix socket, whose count follows how many
#: messages each engine write carried, which the load decides (ipc HWM 10 1 KB: 65 on a
#: quiet machine, 50-115 on a loaded one, 65 in the model): only the byte budget bounds it;
#: "gap": a known model gap (xfail): the claim of "hwm", whatever the load (the load only
#: lowers the real count, and the model is the one above).
BURST_CELLS = [
    ("tcp", 10, 10, "window", 0, BURST),
    ("tcp", 10, 1000, "window", 0, BURST),
    ("tcp", 10, 10000, "window", 0, BURST),
    ("tcp", 100, 10, "window", 0, BURST),
    ("tcp", 100, 1000, "window", 0, BURST),
    ("tcp", 100, 10000, "hwm", 1, BURST),
    pytest.param("tcp", 1000, 10, "gap", 2, BURST, marks=_xfail(TCP_AUTOTUNE, strict=False)),
    ("tcp", 1000, 1000, "hwm", 3, BURST),
    ("tcp", 1000, 10000, "hwm", 1, BURST),
    ("ipc", 10, 10, "window", 0, BURST),
    ("ipc", 10, 1000, "ipc", 0, BURST),
    ("ipc", 10, 10000, "hwm", 0, BURST),
    ("ipc", 100, 10, "ipc", 0, BURST),
    ("ipc", 100, 1000, "hwm", 1, BURST),
    ("ipc", 100, 10000, "hwm", 0, BURST),
    pytest.param("ipc", 1000, 10, "gap", 1, BURST, marks=_xfail(IPC_WRITES, strict=False)),
    ("ipc", 1000, 1000, "hwm", 0, BURST),
    ("ipc", 1000, 10000, "window", 0, BURST),
]


def unix_socket_bound(hwm: int, size: int) -> int:
    """Most messages a PUB -> SUB over ipc can hold, whatever the timing: both pipes, a
    full 8 KB batch in each engine, and the unix socket's send budget
    (``net.core.wmem_default``, plus the one skb of up to half of it the kernel lets
    through beyond it) filled with payload only."""
    try:
        with open("/proc/sys/net/core/wmem_default") as handle:
            budget = int(handle.read())
    except (OSError, ValueError):
        budget = 212_992
    return 2 * hwm + 2 * (8192 // size + 1) + (budget + budget // 2) // size + 2


#: the share of the model's windows a real burst gets at least (on its schedule less the
#: time its threads waited for a CPU): real runs on a busy machine gave 0.61 and above
WINDOW_SHARE = 0.5
#: how much faster than the model's a real burst may go: the profile's call costs were
#: measured on a quiet machine; load only makes the real loop slower
COST_MARGIN = 1.25


#: real bursts of a "window" or "hwm" cell tried until one ran undisturbed (its threads
#: waited for a CPU less, in all, than ``UNDISTURBED_SHARE`` of the burst's length); the least
#: disturbed is compared
BURST_ATTEMPTS = 3
#: a "window" burst whose threads waited less than it lasted is undisturbed; an "hwm" burst's
#: I/O threads must also have had the CPU for most of it to fill the pipes downstream (once,
#: under a CI run's own load, an ipc HWM 1000 burst of 10.8 ms whose threads waited 9.3 ms
#: delivered 1,500 of the 2,000 the pipes hold)
UNDISTURBED_SHARE = {"window": 1.0, "hwm": 0.5}


@pytest.mark.parametrize("transport,hwm,size,kind,steps,count", BURST_CELLS)
def test_burst_into_sub_that_does_not_read(transport, hwm, size, kind, steps, count, ipc_dir):
    runs = []
    for _ in range(BURST_ATTEMPTS if kind in UNDISTURBED_SHARE else 1):
        runs.append(real_burst(transport, hwm, size, count, ipc_dir))
        if runs[-1].waited_s <= UNDISTURBED_SHARE.get(kind, 1.0) * runs[-1].wall_s:
            break
    real = min(runs, key=lambda run: run.waited_s / run.wall_s)
    lwm = (hwm + 1) // 2
    paced, _ = sim_burst(transport, hwm, size, count, paced_s=real.wall_s)
    plain, plain_s = sim_burst(transport, hwm, size, count)
    idle_s = real.wall_s - real.waited_s
    paced_idle = sim_burst(transport, hwm, size, count, paced_s=idle_s)[0] if idle_s > 0 else hwm
    detail = (f"{transport} HWM {hwm} {size} B: real {real.received} of {count} in a burst of {real.wall_s * 1e3:.1f} ms "
              f"({real.cpu_s * 1e3:.1f} ms CPU; its threads waited {real.waited_s * 1e3:.1f} ms for a CPU, the sender "
              f"{real.sender_waited_s * 1e3:.1f}); model {paced} on that schedule, {paced_idle} on it less the waits, "
              f"{plain} at its own pace ({plain_s * 1e3:.1f} ms); {len(runs)} real run(s): {[r.received for r in runs]}")
    report("burst", transport=transport, hwm=hwm, size=size, count=count, real=real.received, wall_s=real.wall_s, cpu_s=real.cpu_s,
           waited_s=real.waited_s, sender_waited_s=real.sender_waited_s, paced=paced, paced_idle=paced_idle, plain=plain,
           plain_s=plain_s, attempts=[(r.received, r.wall_s, r.waited_s) for r in runs])
    # What no load changes: the subscription made before the burst was applied at its first
    # send, the first window (SNDHWM messages) always passes, and a SUB never drops.
    for run in runs:
        assert run.first_arrived, detail
        assert min(count, hwm) <= run.received <= count, detail
    if kind == "gap":
        assert abs(real.received - paced) <= steps * lwm, detail
    elif kind == "hwm":
        # Pipes and kernel full long before the burst ends: the count is the same however
        # fast the loop went (in the model too), and the PUB learns of its engine's reads
        # in LWM steps, so the kernel's spread shows only as whole steps. Unless the I/O
        # threads got no CPU while it lasted: then the downstream did not fill, as in the
        # model on the real schedule less the time the threads waited.
        assert plain == paced, detail
        assert min(paced, paced_idle) - steps * lwm <= real.received <= paced + steps * lwm, detail
    elif kind == "window":
        # One window of credit per command-throttle interval: never more windows than the
        # real burst's duration holds (the model on the real schedule has no gaps), and,
        # with the time its threads waited for a CPU taken off, at least a share of them.
        # The real throttle clock's phase at the burst's start is unknown (the model's starts
        # with the burst): a burst of d spans up to one look more than the model's d does,
        # as many as the model's d + one throttle interval (2026-11-27: 210 where the model
        # on the schedule said 200, in 1 of 5 suites; over d + T the model gives one window more).
        paced_late = sim_burst(transport, hwm, size, count, paced_s=real.wall_s + this_machine().command_throttle_s)[0]
        assert real.received <= paced_late + lwm, detail
        assert real.received >= WINDOW_SHARE * paced_idle - lwm, detail
    else:
        bound = unix_socket_bound(hwm, size)
        assert real.received <= bound and paced <= bound, (bound, detail)
    if plain <= 0.1 * count:
        # Most sends are dropped: the burst's length is the loop's cost per send. The
        # model's (the machine's send cost, nothing around it) is not above what the real
        # bare loop used, busy machine or not.
        assert plain_s <= COST_MARGIN * real.cpu_s, detail


# the control: a blocking PUSH fills a PULL that does not read


def real_stalled_push(transport: str, hwm: int, size: int, ipc_dir: str) -> int:
    """The PULL (RCVHWM ``hwm``) a process of its own that reads one warm-up message and
    then nothing; here ``while True: push.send(payload)`` with SNDTIMEO 300 ms until Again."""
    ctx = zmq.Context()
    programs: list[Program] = []
    try:
        endpoint = "tcp://127.0.0.1:0" if transport == "tcp" else f"ipc://{ipc_dir}/stall-{hwm}-{size}"
        pull = Program("pull", endpoint=endpoint, rcvhwm=hwm)
        programs.append(pull)
        endpoint = pull.read()["endpoint"]
        push = ctx.socket(zmq.PUSH)
        push.linger = 0
        push.sndhwm = hwm
        push.sndtimeo = 3000
        push.connect(endpoint)
        push.send(b"warm-up")
        pull.read()
        push.sndtimeo = 300
        payload = b"x" * size
        accepted = 0
        try:
            while accepted < 10_000_000:
                push.send(payload)
                accepted += 1
        except zmq.Again:
            pass
        pull.send("quit")
        return accepted
    finally:
        kill_all(programs)
        ctx.destroy(linger=0)


def stalled_push_scenario(transport: str, hwm: int, size: int) -> dict[str, Any]:
    endpoint = "tcp://127.0.0.1:7200" if transport == "tcp" else "ipc://stall"
    return {
        "scenario": {"name": f"stalled-push-{transport}-{hwm}-{size}", "profile": "default"},
        "process": [{"name": "sender"}, {"name": "receiver"}],
        "socket": [
            {"name": "push", "type": "PUSH", "process": "sender", "connect": [endpoint], "open_at_s": 0.001,
             "options": {"sndhwm": hwm, "sndtimeo": 300}},
            {"name": "pull", "type": "PULL", "process": "receiver", "bind": [endpoint], "options": {"rcvhwm": hwm}},
        ],
        "send": [workload(name="warmup", socket="push", count=1, size_bytes=7, start_s=0.01),
                 workload(name="fill", socket="push", count=10_000_000, size_bytes=size, start_s=0.05, on_again="stop")],
        "recv": [workload(socket="pull", count=1)],
    }


#: (transport, HWM, size, LWM steps of the kernel's spread). tcp with 10 KB messages: the
#: receiver's kernel buffer autotunes (tcp_rmem up to 32 MB here) while the PULL's I/O thread
#: copies; how far it grows before the pipe fills depends on the schedule, so a real run
#: holds 1999 or 2499 (one LWM of 500 x 10 KB more) at HWM 1000; CI saw both on one machine
STALLED_PUSH_CELLS = [("ipc", 10, 10000, 0), ("ipc", 100, 10000, 0), ("ipc", 1000, 1000, 0), ("tcp", 1000, 10000, 1),
                      ("tcp", 10, 10000, 2)]


@pytest.mark.parametrize("transport,hwm,size,steps", STALLED_PUSH_CELLS)
def test_blocking_push_into_pull_that_does_not_read(transport, hwm, size, steps, ipc_dir):
    """A blocked send waits, so the count does not depend on how fast the loop goes: the
    same with a bare loop and with the harness's (the control for the bursts above)."""
    real = real_stalled_push(transport, hwm, size, ipc_dir)
    sim = simulate(stalled_push_scenario(transport, hwm, size)).summary["senders"]["fill"]["sent"]
    lwm = (hwm + 1) // 2
    report("stalled_push", transport=transport, hwm=hwm, size=size, real=real, sim=sim)
    # the writer blocks when (written, warm-up included) - (reads reported, in LWM steps)
    # reaches SNDHWM: every count is SNDHWM - 1 modulo LWM
    assert real % lwm == (hwm - 1) % lwm, (real, lwm)
    assert abs(real - sim) <= steps * lwm, (transport, hwm, size, real, sim)


# ----------------------------------------------------------------------------------------
# 2. sleeping workers and busy workers on two cores


WORKERS = 8
TASKS = 160  # 20 a worker
TASK_S = 0.001
BATCHES = 3


def batch_scenario(busy: bool) -> dict[str, Any]:
    return {
        "scenario": {"name": f"workers-{'busy' if busy else 'sleeping'}", "profile": "default"},
        "machine": {"cores": 2},
        "process": [{"name": "ventilator"}, {"name": "worker{i+1}", "count": WORKERS}],
        "socket": [
            {"name": "vent", "type": "PUSH", "process": "ventilator",
             "connect": [f"tcp://127.0.0.1:{5600 + i}" for i in range(WORKERS)]},
            {"name": "sink", "type": "PULL", "process": "ventilator", "bind": "tcp://127.0.0.1:5558"},
            {"name": "w{i+1}_in", "type": "PULL", "process": "worker", "bind": "tcp://127.0.0.1:{5600+i}"},
            {"name": "w{i+1}_out", "type": "PUSH", "process": "worker", "connect": "tcp://127.0.0.1:5558"},
        ],
        "send": [workload(socket="vent", count=TASKS, size_bytes=len(f"sleep {TASK_S}"), start_s=0.3)],
        "recv": [workload(socket="sink", count=TASKS),
                 workload(socket="w_in", forward_to="w_out", reply_size_bytes=4, service_s=TASK_S, busy=busy)],
    }


def sim_batches(busy: bool) -> list[float]:
    """Batch time (first task sent to last result received) in the model, three seeds."""
    times = []
    for seed in range(3):
        result = simulate(batch_scenario(busy), seed)
        times.append(flat_metrics(result.summary, result)["socket.sink.last_recv_s"] - 0.3)
    return times


@dataclass
class Batch:
    batch_s: float
    cpu_s: float  # every thread of the ten processes
    disturbance_s: float  # the ventilator's run-queue wait, the most any worker waited, its sleeps' extra lateness


@pytest.mark.timeout(180)
def test_sleeping_workers_need_no_core_busy_workers_share_two(ventilator_and_workers):
    vent, worker_pids = ventilator_and_workers
    pids = [vent.pid, *worker_pids]
    real: dict[bool, list[Batch]] = {False: [], True: []}
    for _ in range(BATCHES):
        for busy in (False, True):
            with SleepProbe((TASK_S,)) as probe:
                before = schedstat(pids)
                vent.send(f"{TASKS} {'busy' if busy else 'sleep'} {TASK_S}")
                batch_s = vent.read(60)["batch_s"]
                after = schedstat(pids)
            # a worker's chain of tasks is later by what its threads and the ventilator's
            # waited for a CPU, and by how much later than the profile's its sleeps woke
            extra_late_s = max(0.0, probe.mean_late_s().get(TASK_S, 0.0) - profile_late_s(TASK_S))
            disturbance = (used(before, after, 1, vent.pid) + max(used(before, after, 1, pid) for pid in worker_pids)
                           + (0.0 if busy else TASKS / WORKERS * extra_late_s))
            real[busy].append(Batch(batch_s, used(before, after, 0), disturbance))
    sim = {busy: sim_batches(busy) for busy in (False, True)}
    for busy in (False, True):
        report("workers", busy=busy, real_s=[b.batch_s for b in real[busy]], cpu_s=[b.cpu_s for b in real[busy]],
               disturbance_s=[b.disturbance_s for b in real[busy]], sim_s=sim[busy])
    detail = {("busy" if busy else "sleeping"): {"model_ms": [round(t * 1e3, 1) for t in sim[busy]],
                                                  "real_ms": [round(b.batch_s * 1e3, 1) for b in real[busy]],
                                                  "cpu_ms": [round(b.cpu_s * 1e3, 1) for b in real[busy]],
                                                  "waited_ms": [round(b.disturbance_s * 1e3, 1) for b in real[busy]]}
              for busy in (False, True)}
    # Sleeping workers: eight sleeps at once, 20 tasks each, every sleep late by what the
    # machine's time.sleep is late. Load cannot make them faster; it can make them later,
    # by at most what the ventilator and the slowest worker waited for a CPU and what
    # their sleeps woke later than the profile says.
    low, high = min(sim[False]), max(sim[False])
    for batch in real[False]:
        assert 0.85 * low <= batch.batch_s <= 1.15 * high + batch.disturbance_s, detail
    # Busy workers: 160 ms of CPU on two cores. What other processes took of those cores
    # during the batch (the cores never idle while eight workers are runnable) is
    # 2 x batch - the batch's own CPU; without it the batch takes its CPU over two cores.
    low, high = min(sim[True]), max(sim[True])
    for batch in real[True]:
        others_s = max(0.0, 2 * batch.batch_s - batch.cpu_s)
        assert 0.85 * low <= batch.batch_s <= 1.15 * high + others_s / 2, detail


@pytest.fixture
def ventilator_and_workers():
    cpus = two_cpus()
    programs: list[Program] = []
    try:
        vent = Program("ventilator", cpus=cpus)
        programs.append(vent)
        sink = vent.read()["sink"]
        workers = [Program("worker", sink=sink, cpus=cpus) for _ in range(WORKERS)]
        programs += workers
        vent.send(json.dumps([worker.read()["endpoint"] for worker in workers]))
        vent.read()
        time.sleep(0.3)  # every connection's handshake done
        yield vent, [worker.pid for worker in workers]
    finally:
        kill_all(programs)


# ----------------------------------------------------------------------------------------
# 3. a fan-out with one slow subscriber


FANOUT_INTERVAL_S = 0.00025  # send(); time.sleep(0.00025)
FANOUT_S = 2.0
FANOUT_SIZE = 10_000
FANOUT_HWM = 100
#: SO_SNDBUF / SO_RCVBUF of every socket: with fixed buffers the kernel holds a steady
#: ~20 of these messages (autotuned, 250-650 from run to run)
FANOUT_BUFFERS = 65_536
SLOW_S = 0.0005  # the slow subscriber's time.sleep per message
SERVICES = [0.0, 0.0, 0.0, SLOW_S]
FANOUT_RUNS = 2


@dataclass
class Fanout:
    sent: int
    wall_s: float
    intervals: list[float]
    received: list[int]
    first_arrived: list[bool]
    sender_waited_s: float  # the publisher's sending thread
    subscriber_waited_s: list[float] = field(default_factory=list)  # every thread of each subscriber
    slow_waited_s: float = 0.0  # the slow subscriber's reading thread
    late_s: dict[float, float] = field(default_factory=dict)  # mean lateness of time.sleep meanwhile, per length
    cpu_per_message_s: list[float] = field(default_factory=list)  # each subscriber's reading thread
    # the slow subscriber while the publisher sent (after it, with the CPUs freed, it drains
    # faster; what it gets was decided by then): its mean cycle, one recv() return to the next,
    slow_cycle_s: float = 0.0
    slow_sleep_late_s: float = 0.0  # how late its sleeps woke, on average
    slow_outside_s: float = 0.0  # and the part of the cycle outside them (recv(), its loop, waits for a CPU there)


def real_fanout() -> Fanout:
    programs: list[Program] = []
    try:
        pub = Program("fanout_pub", sndhwm=FANOUT_HWM, size=FANOUT_SIZE, interval_s=FANOUT_INTERVAL_S, poisson=False,
                      duration_s=FANOUT_S, seed=1, buffers=FANOUT_BUFFERS)
        programs.append(pub)
        endpoint = pub.read()["endpoint"]
        subs = [Program("fanout_sub", endpoint=endpoint, rcvhwm=FANOUT_HWM, service_s=s, buffers=FANOUT_BUFFERS)
                for s in SERVICES]
        programs += subs
        for sub in subs:
            sub.read()
        time.sleep(0.5)  # the subscriptions are in place
        pids = [pub.pid, *(sub.pid for sub in subs)]
        with SleepProbe((FANOUT_INTERVAL_S, SLOW_S)) as probe:
            before = schedstat(pids)
            pub.send("go")
            sent = pub.read(FANOUT_S + 30)
            after = schedstat(pids)
        results = [sub.read(60) for sub in subs]
        pub.send("stop")
        kill_all(programs)
        times = sent["times"]
        wall = sent["stop"] - sent["start"]
        intervals = [b - a for a, b in zip(times, times[1:], strict=False)] + [wall - times[-1]]
        slow = results[-1]
        assert len(slow["recv_at"]) > 2, f"the slow subscriber read {len(slow['recv_at'])} messages: no cycle to measure"
        within = max(1, sum(1 for t in slow["recv_at"] if t <= sent["stop"]) - 1)  # full cycles before the last send
        cycle = (slow["recv_at"][within] - slow["recv_at"][0]) / within
        asleep = sum(slow["slept"][:within]) / within
        return Fanout(sent["sent"], wall, intervals, [r["received"] for r in results], [r["first_was_first"] for r in results],
                      used(before, after, 1, pub.pid, pub.pid), [used(before, after, 1, sub.pid) for sub in subs],
                      used(before, after, 1, subs[-1].pid, subs[-1].pid), probe.mean_late_s(),
                      [r["cpu_per_message_s"] for r in results], cycle, asleep - SLOW_S, cycle - asleep)
    finally:
        kill_all(programs)


def fanout_scenario(intervals: list[float] | None = None, slow: dict[str, float] | None = None) -> dict[str, Any]:
    """The same design; with ``intervals`` (the real publisher's own, drawn in turn) the
    publisher keeps the real one's achieved rate instead of its plain loop's, and with
    ``slow`` (``service_s`` and ``loop_cpu_s``) the slow subscriber keeps the real one's cycle."""
    buffers = {"sndbuf": FANOUT_BUFFERS, "rcvbuf": FANOUT_BUFFERS}
    send = workload(socket="pub", size_bytes=FANOUT_SIZE, start_s=0.5)
    if intervals is None:
        send.update(duration_s=FANOUT_S, interval_s=FANOUT_INTERVAL_S)
    else:
        send.update(count=len(intervals), interval_s={"dist": "empirical", "values_s": intervals}, pacing="schedule")
    services = [{"service_s": s} if s else {} for s in SERVICES]
    if slow is not None:
        services[-1] = slow
    return {
        "scenario": {"name": "fanout-slow-subscriber", "profile": "default"},
        "process": [{"name": "publisher"}, *({"name": f"subscriber{i}"} for i in range(len(SERVICES)))],
        "socket": [{"name": "pub", "type": "PUB", "process": "publisher", "bind": "tcp://127.0.0.1:7100",
                    "options": {"sndhwm": FANOUT_HWM, **buffers}}]
        + [{"name": f"sub{i}", "type": "SUB", "process": f"subscriber{i}", "connect": "tcp://127.0.0.1:7100", "open_at_s": 0.05,
            "options": {"rcvhwm": FANOUT_HWM, "subscribe": [""], **buffers}} for i in range(len(SERVICES))],
        "send": [send],
        "recv": [workload(socket=f"sub{i}", **service) for i, service in enumerate(services)],
    }


@dataclass
class FanoutModel:
    sent: int
    received: list[int]
    recv_cpu_s: float  # what the model charged the slow subscriber's reading thread per message


def sim_fanout(intervals: list[float] | None = None, slow: dict[str, float] | None = None) -> FanoutModel:
    summary = simulate(fanout_scenario(intervals, slow)).summary
    thread = summary["machine"]["threads"][f"recv.sub{len(SERVICES) - 1}"]
    return FanoutModel(summary["sockets"]["pub"]["sent"], [summary["sockets"][f"sub{i}"]["received"] for i in range(len(SERVICES))],
                       thread["cpu_s"] / max(1, thread["bursts"]))


#: relative tolerances, from real runs: the publisher sent 1 % below to 4.5 % above the
#: model's count (above when the machine was quiet), the slow subscriber up to 1.6 % above
#: the model's on the same schedule. On the slow subscriber's own cycle too, 2026-11-27: 0 to
#: +23 messages from the model on a quiet machine (10 runs), -100 to +21 with four busy
#: loops beside the test (8 runs)
SENT_TOLERANCE = 0.06
SLOW_TOLERANCE = 0.04


@pytest.mark.timeout(180)
def test_fanout_with_one_slow_subscriber():
    plain = sim_fanout()
    cycle_s = FANOUT_S / plain.sent  # the model's send(); sleep() cycle
    for _ in range(FANOUT_RUNS):
        real = real_fanout()
        paced = sim_fanout(real.intervals)
        # The slow subscriber's cycle as the real one ran it: its sleeps as late as they
        # woke, its loop as long as it took outside them (a recv() of 10 kB, the loop, any
        # wait for a CPU: 15-30 us on a loaded day, ~1 us in the plain model).
        slow_loop = {"service_s": max(0.0, SLOW_S + real.slow_sleep_late_s - profile_late_s(SLOW_S)),
                     "loop_cpu_s": max(0.0, real.slow_outside_s - paced.recv_cpu_s)}
        both = sim_fanout(real.intervals, slow_loop)
        rate = real.sent / real.wall_s
        # how much later than the profile's every sleep was meanwhile (load: 0 on a quiet machine)
        extra_s = {wait: max(0.0, late - profile_late_s(wait)) for wait, late in real.late_s.items()}
        detail = (f"real: sent {real.sent} in {real.wall_s:.3f} s (the sender waited {real.sender_waited_s * 1e3:.1f} ms "
                  f"for a CPU), received {real.received} (the subscribers' threads waited "
                  f"{[round(w * 1e3, 1) for w in real.subscriber_waited_s]} ms); time.sleep meanwhile late by "
                  f"{ {w * 1e3: round(v * 1e6) for w, v in real.late_s.items()} } us (ms: us), the slow subscriber's "
                  f"cycle {real.slow_cycle_s * 1e6:.1f} us (its sleeps {real.slow_sleep_late_s * 1e6:.0f} us late, "
                  f"{real.slow_outside_s * 1e6:.1f} us outside them; its loop's CPU {real.cpu_per_message_s[-1] * 1e6:.1f} us "
                  f"a message); model: sent {plain.sent}, received {plain.received}; on the real publisher's schedule "
                  f"{paced.sent}, {paced.received}; and the slow subscriber's cycle {both.received[-1]}")
        report("fanout", real_sent=real.sent, wall_s=real.wall_s, real_received=real.received,
               sender_waited_s=real.sender_waited_s, subscriber_waited_s=real.subscriber_waited_s,
               slow_waited_s=real.slow_waited_s, late_s=real.late_s, plain_sent=plain.sent, plain_received=plain.received,
               paced_sent=paced.sent, paced_received=paced.received, cpu_per_message_s=real.cpu_per_message_s,
               slow_cycle_s=real.slow_cycle_s, slow_outside_s=real.slow_outside_s, slow_sleep_late_s=real.slow_sleep_late_s,
               both_received=both.received)
        # What no load changes: every subscription was in place at the first send, and a
        # PUB drops only for a subscriber whose pipe is full. The bare loops keep up (in the
        # model they get every message); for real, one whose threads were kept from a CPU
        # can miss what was sent meanwhile, no more.
        assert all(real.first_arrived), detail
        assert paced.sent == real.sent and paced.received[:-1] == [real.sent] * (len(SERVICES) - 1), detail
        assert plain.received[:-1] == [plain.sent] * (len(SERVICES) - 1), detail
        for got, waited in zip(real.received[:-1], real.subscriber_waited_s[:-1], strict=True):
            assert real.sent - rate * waited <= got <= real.sent, detail
        # The publisher's plain loop: send(); time.sleep(interval), each sleep late by the
        # machine's time.sleep, each send waking the I/O thread. Load makes each cycle
        # longer by what the sending thread waited for a CPU and by how much later than
        # the profile's the sleeps woke meanwhile, no more.
        slowed_cycle_s = cycle_s + real.sender_waited_s / real.sent + extra_s[FANOUT_INTERVAL_S]
        low = (1 - SENT_TOLERANCE) * plain.sent * cycle_s / slowed_cycle_s
        assert low <= real.sent <= (1 + SENT_TOLERANCE) * plain.sent, detail
        # The slow subscriber. Its plain loop on the real publisher's schedule bounds it from
        # above: load only makes the loop slower. On the real loop's own cycle as well (while
        # the publisher sent), what is left is what the model decides: the messages its pipes
        # and kernel buffers hold when the publisher stops (SNDHWM + RCVHWM + what 64 kB of
        # socket buffers take), the rest dropped at the PUB. The count moves in steps of the
        # pipes' low-water mark (a PUB pipe takes messages again once its reader has reported
        # taking LWM = 50), so a quiet machine ends up to a step above or below the model.
        # Load can only leave the pipes part empty at the stop (I/O threads kept from a CPU
        # fall behind): by up to 100 messages with four busy loops beside the test, and a step.
        slow, held = real.received[-1], both.received[-1]
        assert slow <= (1 + SLOW_TOLERANCE) * paced.received[-1], detail
        assert held - FANOUT_HWM - FANOUT_HWM // 2 <= slow <= held + FANOUT_HWM // 2, detail
