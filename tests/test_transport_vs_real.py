"""tcp and ipc: the simulator against real pyzmq measured in the same test run.

Exact where libzmq is exact (HWM-bound capacities, who drops, which messages a
termination loses), statistical where the kernel and the scheduler make the real system
noisy (kernel-bound capacities, the slow joiner). Real sockets use loopback and ipc
paths in a temporary directory; every wait is bounded.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

import pytest

import zsim
from zsim.calibration import stalled_push_scenario
from zsim.profile import load as load_profile

zmq = pytest.importorskip("zmq")

pytestmark = pytest.mark.real
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def ipc_dir():
    path = tempfile.mkdtemp(prefix="zsim-test-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def bind(sock, transport: str, ipc_dir: str, name: str) -> str:
    if transport == "tcp":
        sock.bind("tcp://127.0.0.1:0")
        return sock.getsockopt_string(zmq.LAST_ENDPOINT)
    endpoint = f"ipc://{ipc_dir}/{name}"
    sock.bind(endpoint)
    return endpoint


# ----------------------------------------------------------------------------------------
# capacity of a stalled PUSH -> PULL


def real_stalled_push(transport: str, size: int, sndhwm: int, rcvhwm: int, ipc_dir: str) -> int:
    """The calibration protocol: warm-up message read, then blocking sends (SNDTIMEO
    300 ms) to a PULL that never reads again, until the first Again."""
    receiver_ctx, sender_ctx = zmq.Context(), zmq.Context()
    try:
        pull = receiver_ctx.socket(zmq.PULL)
        pull.linger = 0
        pull.rcvhwm = rcvhwm
        pull.rcvtimeo = 3000
        endpoint = bind(pull, transport, ipc_dir, f"stall-{size}-{sndhwm}-{rcvhwm}")
        push = sender_ctx.socket(zmq.PUSH)
        push.linger = 0
        push.sndhwm = sndhwm
        push.sndtimeo = 3000
        push.connect(endpoint)
        push.send(b"warm-up")
        pull.recv()
        push.sndtimeo = 300
        payload = b"x" * size
        accepted = 0
        deadline = time.perf_counter() + 20
        try:
            while time.perf_counter() < deadline:
                push.send(payload)
                accepted += 1
        except zmq.Again:
            pass
        return accepted
    finally:
        sender_ctx.destroy(linger=0)
        receiver_ctx.destroy(linger=0)


def sim_stalled_push(transport: str, size: int, sndhwm: int, rcvhwm: int) -> int:
    summary = zsim.run(stalled_push_scenario(transport, size, sndhwm, rcvhwm), seed=1).summary
    return summary["senders"]["fill"]["sent"]


# (transport, size, sndhwm, rcvhwm, relative tolerance); tolerance 0 = exact.
# HWM-bound cells (large messages on ipc) are exact; kernel-bound cells carry the
# kernel's run-to-run spread (calibration runs: ipc 1 kB 69-74, tcp 100 kB 49-74).
CAPACITY_CASES = [
    ("ipc", 100_000, 10, 10, 0.0),
    ("ipc", 100_000, 5, 5, 0.0),
    ("ipc", 100_000, 20, 7, 0.0),
    ("ipc", 1_000_000, 50, 50, 0.0),
    ("ipc", 10_000, 10, 10, 0.25),
    ("ipc", 1_000, 10, 10, 0.30),
    ("ipc", 3_000, 30, 30, 0.40),
    ("tcp", 10_000, 10, 10, 0.25),
    ("tcp", 30_000, 20, 20, 0.35),
    ("tcp", 1_000_000, 10, 10, 0.35),
    ("tcp", 1_000, 5, 5, 0.35),
]


@pytest.mark.parametrize("transport,size,sndhwm,rcvhwm,tolerance", CAPACITY_CASES)
def test_stalled_push_capacity_matches_real(transport, size, sndhwm, rcvhwm, tolerance, ipc_dir):
    if tolerance == 0:
        real = real_stalled_push(transport, size, sndhwm, rcvhwm, ipc_dir)
    else:
        # kernel-bound: compare with the median of three real runs, as the profile is the
        # median of five (one ipc 1 kB run gave 114 where the calibration saw 69-74)
        real = int(statistics.median(real_stalled_push(transport, size, sndhwm, rcvhwm, ipc_dir) for _ in range(3)))
    sim = sim_stalled_push(transport, size, sndhwm, rcvhwm)
    lwm = (sndhwm + 1) // 2
    if tolerance == 0:
        # Exact up to the real engine's timing: the writer learns of reads in steps of
        # LWM, so a run can stop one step early or late.
        assert abs(sim - real) <= lwm, (sim, real)
    else:
        assert abs(sim - real) <= max(lwm, tolerance * real), (sim, real)


# ----------------------------------------------------------------------------------------
# the zeromq-dev termination report (reference 7.3)


def kamens_scenario(transport: str, rcvhwm: int) -> dict:
    endpoint = "ipc://test-socket" if transport == "ipc" else "tcp://127.0.0.1:5999"
    return {
        "scenario": {"name": f"kamens-{transport}-{rcvhwm}"},
        "process": [{"name": "sender", "exit_after_sends": True}, {"name": "receiver"}],
        "socket": [
            {"name": "push", "type": "PUSH", "process": "sender", "connect": [endpoint]},
            {"name": "pull", "type": "PULL", "process": "receiver", "bind": [endpoint], "options": {"rcvhwm": rcvhwm}},
        ],
        # time.sleep(0.2) / time.sleep(0.4) in the report's script: the OS adds 50-150 us
        "send": [{"socket": "push", "count": 10, "size_bytes": 9, "start_s": 0.001,
                  "interval_s": {"dist": "uniform", "low_s": 0.20005, "high_s": 0.20015}}],
        "recv": [{"socket": "pull", "service_s": {"dist": "uniform", "low_s": 0.40005, "high_s": 0.40015}}],
    }


def real_kamens(transport: str, rcvhwm: int, ipc_dir: str, tag: str) -> list[int]:
    """The report's two programs as two threads with their own contexts."""
    received: list[int] = []
    ready = threading.Event()
    endpoint_box: list[str] = []

    def receiver() -> None:
        ctx = zmq.Context()
        try:
            pull = ctx.socket(zmq.PULL)
            pull.rcvhwm = rcvhwm
            pull.rcvtimeo = 2500
            endpoint_box.append(bind(pull, transport, ipc_dir, f"kamens-{tag}"))
            ready.set()
            for _ in range(10):
                try:
                    received.append(int(pull.recv()))
                except zmq.Again:
                    break
                time.sleep(0.4)
            pull.close(linger=0)
        finally:
            ctx.term()

    def sender() -> None:
        ready.wait(5)
        ctx = zmq.Context()
        push = ctx.socket(zmq.PUSH)
        push.connect(endpoint_box[0])
        for i in range(10):
            push.send(b"%d" % i)
            time.sleep(0.2)
        push.close()
        ctx.term()  # LINGER -1: waits until the engine has written everything

    threads = [threading.Thread(target=receiver), threading.Thread(target=sender)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=15)
    return received


def test_termination_loss_ipc_vs_tcp(ipc_dir):
    configs = [("ipc", 1), ("ipc", 2), ("tcp", 1)]
    real: dict[tuple[str, int], list[list[int]]] = {config: [] for config in configs}
    for rep in range(2):
        threads = []
        for config in configs:
            def go(config=config, rep=rep) -> None:
                real[config].append(real_kamens(config[0], config[1], ipc_dir, f"{config[0]}{config[1]}-{rep}"))

            threads.append(threading.Thread(target=go))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    sim = {config: [zsim.run(kamens_scenario(*config), seed).summary["sockets"]["pull"]["received"] for seed in range(40)] for config in configs}
    # tcp: a FIN is not a hang-up; the engine reads to EOF and nothing is lost
    assert sim[("tcp", 1)] == [10] * 40
    assert all(run == list(range(10)) for run in real[("tcp", 1)])
    # ipc, RCVHWM 1: what is still in the kernel queue at the hang-up is lost. Which
    # messages are there is a race between the two sleeps: the report's "Received 7"
    # (8 and 9 lost) most of the time, sometimes one more or none.
    assert statistics.mode(sim[("ipc", 1)]) == 8
    assert set(sim[("ipc", 1)]) <= {7, 8, 9, 10}
    # ipc, RCVHWM 2: the kernel is almost always empty when the sender exits
    assert statistics.mode(sim[("ipc", 2)]) == 10
    assert set(sim[("ipc", 2)]) <= {9, 10}
    # Real runs: only ever the tail is lost (what sat in the kernel), never a gap, and
    # within the outcomes the simulator gives for the same race.
    expected = {("ipc", 1): {7, 8, 9, 10}, ("ipc", 2): {9, 10}, ("tcp", 1): {10}}
    for config, runs in real.items():
        for run in runs:
            assert run == list(range(len(run))), (config, run)
            assert len(run) in expected[config], (config, run, sorted(sim[config]))


# ----------------------------------------------------------------------------------------
# backpressure: a stalled SUB never drops, the PUB does


def real_pub_to_stalled_sub(sndhwm: int, count: int, ipc_dir: str, timing: dict | None = None) -> list[int]:
    ctx_pub, ctx_sub = zmq.Context(), zmq.Context()
    try:
        pub = ctx_pub.socket(zmq.PUB)
        pub.linger = 0
        pub.sndhwm = sndhwm
        endpoint = bind(pub, "tcp", ipc_dir, "bp")
        sub = ctx_sub.socket(zmq.SUB)
        sub.linger = 0
        sub.rcvhwm = 10
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(endpoint)
        sync = ctx_pub.socket(zmq.XPUB)  # wait until the subscription is applied
        time.sleep(0.3)
        payloads = [i.to_bytes(4, "little") + b"x" * 96 for i in range(count)]
        began = time.perf_counter()
        for payload in payloads:
            pub.send(payload)
        if timing is not None:
            timing["sending_s"] = time.perf_counter() - began
        sync.close()
        time.sleep(1.0)
        got = []
        while sub.poll(300):
            got.append(int.from_bytes(sub.recv()[:4], "little"))
        return got
    finally:
        ctx_pub.destroy(linger=0)
        ctx_sub.destroy(linger=0)


def pub_stall_scenario(sndhwm: int, count: int) -> dict:
    return {
        "scenario": {"name": "pub-to-stalled-sub"},
        "process": [{"name": "p"}, {"name": "s"}],
        "socket": [
            {"name": "pub", "type": "PUB", "process": "p", "bind": ["tcp://*:6000"], "options": {"sndhwm": sndhwm}},
            {"name": "sub", "type": "SUB", "process": "s", "connect": ["tcp://127.0.0.1:6000"], "options": {"rcvhwm": 10, "subscribe": [""]}},
        ],
        "send": [{"socket": "pub", "count": count, "size_bytes": 100, "start_s": 0.3}],
        "recv": [{"socket": "sub", "start_s": 2.0}],
    }


def test_stalled_sub_never_drops_unlimited_pub_delivers_everything(ipc_dir):
    count = 100_000
    real = real_pub_to_stalled_sub(0, count, ipc_dir)
    summary = zsim.run(pub_stall_scenario(0, count), seed=1).summary
    assert real == list(range(count))
    assert summary["ledger"]["delivered"] == count
    assert summary["sockets"]["sub"]["dropped"] == 0


def test_stalled_sub_pub_drops_in_whole_windows(ipc_dir):
    """SNDHWM 10: the PUB learns of its engine's reads once per command-throttle window,
    so it passes about 10 messages per window and drops the rest: at the PUB."""
    count = 100_000
    timing: dict = {}
    real = real_pub_to_stalled_sub(10, count, ipc_dir, timing)
    summary = zsim.run(pub_stall_scenario(10, count), seed=1).summary
    sim = summary["ledger"]["delivered"]
    assert summary["sockets"]["sub"]["dropped"] == 0
    assert summary["ledger"]["dropped_by_rule"] == {"hwm": count - sim}
    assert summary["sockets"]["pub"]["dropped"] == count - sim
    # real: contiguous runs (the drops are whole windows at the PUB, never a SUB gap)
    real_runs = 1 + sum(1 for a, b in zip(real, real[1:]) if b != a + 1)
    assert len(real) / real_runs >= 8
    # How many get through depends on how long the send loop runs, and per millisecond
    # of sending on how promptly the I/O thread runs (another busy process on the machine
    # halves it). The model gives one window of SNDHWM per command-throttle interval;
    # the real PUB never does better than that (it does worse only when starved of CPU).
    throttle = load_profile("default").command_throttle_s
    window_rate = 10 / throttle / 1000  # messages per ms
    sim_sending = summary["senders"]["send.pub"]["finished_at_s"] - 0.3
    sim_rate = sim / sim_sending / 1000
    real_rate = len(real) / timing["sending_s"] / 1000
    assert 0.8 * window_rate <= sim_rate <= 1.1 * window_rate, (sim_rate, window_rate)
    assert real_rate <= 1.25 * window_rate, (real_rate, window_rate)
    assert 0.25 * window_rate <= real_rate, (real_rate, window_rate)  # not a model of something else


# ----------------------------------------------------------------------------------------
# the slow joiner


def real_slow_joiner(repeats: int, ipc_dir: str) -> list[int]:
    """PUB publishing every 0.1 ms (busy wait); SUB connects; how many 0.1 ms publishing
    slots passed between connect() and the publication of the first message it got."""
    lost_counts = []
    for rep in range(repeats):
        ctx = zmq.Context()
        try:
            pub = ctx.socket(zmq.PUB)
            pub.linger = 0
            endpoint = bind(pub, "tcp", ipc_dir, f"sj{rep}")
            stop = threading.Event()
            sent_at: list[float] = []

            def publish() -> None:
                seq = 0
                next_t = time.perf_counter()
                while not stop.is_set() and seq < 200_000:
                    now = time.perf_counter()
                    if now >= next_t:
                        pub.send(seq.to_bytes(4, "little"))
                        sent_at.append(now)
                        seq += 1
                        next_t += 0.0001

            thread = threading.Thread(target=publish)
            thread.start()
            time.sleep(0.05)
            sub = ctx.socket(zmq.SUB)
            sub.linger = 0
            sub.setsockopt(zmq.SUBSCRIBE, b"")
            connected = time.perf_counter()
            sub.connect(endpoint)
            first = int.from_bytes(sub.recv(), "little") if sub.poll(2000) else None
            stop.set()
            thread.join(5)
            if first is not None:
                # in schedule slots (0.1 ms each) rather than messages actually sent: a
                # publisher thread starved of CPU sends fewer, not a shorter join window
                lost_counts.append(max(0, round((sent_at[first] - connected) / 0.0001)))
        finally:
            ctx.destroy(linger=0)
    return lost_counts


def slow_joiner_scenario() -> dict:
    return {
        "scenario": {"name": "slow-joiner", "until_s": 0.2},
        "process": [{"name": "p"}, {"name": "s"}],
        "socket": [
            {"name": "pub", "type": "PUB", "process": "p", "bind": ["tcp://*:5556"]},
            {"name": "sub", "type": "SUB", "process": "s", "connect": ["tcp://127.0.0.1:5556"], "open_at_s": 0.05, "options": {"subscribe": [""]}},
        ],
        "send": [{"socket": "pub", "interval_s": 0.0001, "size_bytes": 4, "duration_s": 0.2}],
        "recv": [{"socket": "sub"}],
    }


def test_slow_joiner_loss_distribution(ipc_dir):
    real = real_slow_joiner(12, ipc_dir)
    sim = []
    for seed in range(40):
        summary = zsim.run(slow_joiner_scenario(), seed).summary
        rules = summary["ledger"]["dropped_by_rule"]
        sim.append(rules.get("not_connected", 0) + rules.get("not_subscribed_yet", 0))
    assert len(real) >= 8
    # Both lose the messages published during handshake + subscription travel + the
    # publisher's throttled command check; the scheduler makes real runs noisy.
    real_median, sim_median = statistics.median(real), statistics.median(sim)
    assert 1 <= sim_median <= 30
    assert abs(sim_median - real_median) <= max(6, real_median), (sorted(sim), sorted(real))
    assert max(sim) <= 30
