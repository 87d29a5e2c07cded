"""Context termination over ipc: the zeromq-dev report (J. Kamens, 2014-02-10, "Effect of
RCVHWM on pull socket at context termination"), the seed document's case.

The report's program: a PULL binds and reads one message, then ``time.sleep(0.4)``, again
and again; a PUSH in another process connects, sends ten messages with ``time.sleep(0.2)``
after each, closes and terminates its context (LINGER -1). Over ipc, with RCVHWM 1, the
reader prints "Received 7" and hangs: 8 and 9 are lost. When the sender's fd closes, the
reader's ipc fd reports EPOLLHUP while its engine is stopped at the full pipe
(``epoll_t::loop`` calls ``in_event``, ``stream_engine_base_t::in_event_internal`` then
removes the fd and sets ``_io_error``); ``restart_input`` passes on what the engine had
already read from the kernel and then calls ``error (connection_error)``: what is still in
the kernel is lost (libzmq #4660; docs/model.md).

Which messages are in the kernel at the hang-up is a race between the two programs'
sleeps. Real runs of the report's program (two processes, ``time.sleep``; pyzmq 27.3.0,
libzmq 4.3.5, this project's 2-core VM, 15 runs per RCVHWM): RCVHWM 1: 0..7 in 14, 0..6
in 1; RCVHWM 2: all ten in 14, 0..8 in 1; RCVHWM 10 and 1000: all ten in every run; tcp:
all ten. The sender sleeps twice for each of the reader's sleeps, so ``time.sleep``'s
lateness (0.1-0.15 ms for sleeps of 0.2-0.4 s, the profile's ``api.sleep_late_s``) keeps
the reader's recv ahead of each even message: at its 4th recv the engine's speculative
read finds only message 5 in the kernel, at its 5th it takes 6 and 7 into its buffer, and
at the hang-up only 8 and 9 are left in the kernel. Workloads sleep by default
(``wait_spin_s = 0``: a plain program). Modelled with waits that end on time (as zsim did
while its defaults were the validation harness's precise waits), the sender stayed ahead
of the reader: the 4th recv's read took 5 and 6 at
once, the 5th read nothing (6 was still in the engine's buffer), 7 stayed in the kernel
with 8 and 9, and the model gave 0..6 (and 0..8 with RCVHWM 2) where the program gets
0..7 (and all ten).
"""

from __future__ import annotations

import collections
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

import zsim
from zsim.ledger import DELIVERED
from zsim.model.fates import RULE_ENGINE_HUP

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "validation" / "scenarios"

#: the most common real outcome of the report's program over ipc, per RCVHWM (messages
#: 0..n-1 received; see the module docstring for the measured distributions)
MOST_COMMON_REAL = {1: 8, 2: 10, 10: 10, 1000: 10}


def seed_case(transport: str, rcvhwm: int) -> dict:
    """The report's program as a scenario: the PULL binds first, the PUSH connects and
    sends at once (its first message waits for the handshake), both only sleep (the
    default)."""
    endpoint = "ipc://test-socket" if transport == "ipc" else "tcp://127.0.0.1:5604"
    return {
        "scenario": {"name": f"kamens-{transport}-{rcvhwm}", "until_s": 5.0},
        "process": [{"name": "receiver"}, {"name": "sender", "exit_after_sends": True}],
        "socket": [
            {"name": "pull", "type": "PULL", "process": "receiver", "bind": [endpoint], "options": {"rcvhwm": rcvhwm}},
            {"name": "push", "type": "PUSH", "process": "sender", "connect": [endpoint], "open_at_s": 0.05},
        ],
        "send": [{"socket": "push", "count": 10, "interval_s": 0.2, "size_bytes": 1, "start_s": 0.05}],
        "recv": [{"socket": "pull", "service_s": 0.4}],
    }


def delivered(result) -> list[int]:
    """Indices of the messages the PULL received (one sender: ids are send order)."""
    table = result.messages
    return sorted(int(i) for i in table["msg_id"][table["state"] == DELIVERED])


@pytest.mark.parametrize("rcvhwm", sorted(MOST_COMMON_REAL))
def test_the_seed_case_over_ipc_gives_the_most_common_real_outcome(rcvhwm):
    expected = MOST_COMMON_REAL[rcvhwm]
    result = zsim.run(seed_case("ipc", rcvhwm), 0)
    assert delivered(result) == list(range(expected))
    table = result.messages
    lost = sorted(int(i) for i, state in zip(table["msg_id"], table["state"], strict=True) if state != DELIVERED)
    assert lost == list(range(expected, 10))
    # the tail was in the reader's kernel queue when its stopped engine saw EPOLLHUP
    assert all(int(rule) == RULE_ENGINE_HUP for rule, state in zip(table["rule"], table["state"], strict=True)
               if state != DELIVERED)
    assert result.summary["sockets"]["push"]["sent"] == 10
    assert not result.summary["processes"]["sender"]["term_blocked"]  # LINGER -1 waits for the engine only
    # and it is the model's most common outcome too, not one draw's
    outcomes = collections.Counter(len(delivered(zsim.run(seed_case("ipc", rcvhwm), seed))) for seed in range(20))
    assert outcomes.most_common(1)[0][0] == expected, outcomes


def test_the_seed_case_over_tcp_loses_nothing():
    # a FIN is not a hang-up: the engine resumes later and reads to EOF
    for rcvhwm in (1, 2):
        for seed in range(5):
            assert delivered(zsim.run(seed_case("tcp", rcvhwm), seed)) == list(range(10))


def test_the_catalogue_scenarios_give_the_most_common_real_outcome():
    ipc = zsim.run(CATALOGUE / "termination_rcvhwm_ipc.toml", 0)
    assert delivered(ipc) == list(range(8))
    outcomes = collections.Counter(len(delivered(zsim.run(CATALOGUE / "termination_rcvhwm_ipc.toml", seed)))
                                   for seed in range(8))
    assert outcomes.most_common(1)[0][0] == 8, outcomes
    for seed in range(4):
        assert delivered(zsim.run(CATALOGUE / "termination_rcvhwm_tcp.toml", seed)) == list(range(10))


def test_waits_that_end_on_time_lose_one_message_more():
    # the same program with waits that spin their end (on time, as the harness's used to):
    # the sender stays ahead of the reader, and 7 is in the kernel at the hang-up too
    raw = seed_case("ipc", 1)
    for key in ("send", "recv"):
        for table in raw[key]:
            table["wait_spin_s"] = 0.0005
    assert delivered(zsim.run(raw, 0)) == list(range(7))


# ----------------------------------------------------------------------------------------
# the report's program on real pyzmq

SENDER = r"""
import sys, time, zmq
ctx = zmq.Context()
sock = ctx.socket(zmq.PUSH)
sock.connect(sys.argv[1])
for i in range(10):
    sock.send(b"%d" % i)
    time.sleep(0.2)
sock.close()
ctx.term()
"""


def real_seed_program(transport: str, rcvhwm: int, directory: str, tag: str) -> list[int]:
    """The report's program: this thread binds the PULL and reads with ``time.sleep(0.4)``
    between recvs; the PUSH is another process started after the bind, as the report's
    ``multiprocessing.Process``. The reader stops 1.5 s after the last message it got once
    the sender has exited (the report's reader hangs there)."""
    zmq = pytest.importorskip("zmq")
    import time

    ctx = zmq.Context()
    try:
        pull = ctx.socket(zmq.PULL)
        pull.rcvhwm = rcvhwm
        pull.rcvtimeo = 1500
        if transport == "tcp":
            pull.bind("tcp://127.0.0.1:0")
            endpoint = pull.getsockopt_string(zmq.LAST_ENDPOINT)
        else:
            endpoint = f"ipc://{directory}/{tag}"
            pull.bind(endpoint)
        sender = subprocess.Popen([sys.executable, "-c", SENDER, endpoint])
        received: list[int] = []
        try:
            while len(received) < 10:
                try:
                    received.append(int(pull.recv()))
                except zmq.Again:
                    if sender.poll() is not None:
                        break
                    continue
                time.sleep(0.4)
        finally:
            sender.wait(timeout=10)
        pull.close(linger=0)
        return received
    finally:
        ctx.term()


@pytest.mark.real
@pytest.mark.timeout(180)
def test_the_seed_program_on_real_pyzmq():
    runs = {("ipc", 1): 5, ("ipc", 2): 5, ("ipc", 10): 2, ("ipc", 1000): 2, ("tcp", 1): 2}
    directory = tempfile.mkdtemp(prefix="zsim-term-")
    real: dict[tuple[str, int], list[list[int]]] = {config: [] for config in runs}
    try:
        def go(config: tuple[str, int]) -> None:
            for rep in range(runs[config]):
                real[config].append(real_seed_program(config[0], config[1], directory, f"{config[0]}{config[1]}-{rep}"))

        threads = [threading.Thread(target=go, args=(config,)) for config in runs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=170)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    assert all(len(real[config]) == count for config, count in runs.items()), real
    for config, outcomes in real.items():
        model = delivered(zsim.run(seed_case(*config), 0))
        for got in outcomes:
            # What load cannot change: only a tail is ever lost, never a gap (the pipe and
            # the engine pass messages on in order, the kernel holds the rest); over tcp, or
            # with an RCVHWM the ten never fill (the engine never stops, so the hang-up finds
            # it reading and it reads to the end), nothing is lost; and the first message,
            # the pipe's RCVHWM and the one the stopped engine holds always arrive.
            assert got == list(range(len(got))), (config, got)
            if config[0] == "tcp" or config[1] >= 10:
                assert len(got) == 10, (config, got)
            assert len(got) >= min(10, 1 + config[1] + 1), (config, got)
        # Which messages the kernel still holds at the hang-up is a race at the scale of
        # the sleeps' lateness (tenths of a millisecond): a thread delayed by a busy machine
        # for a millisecond moves a run to another outcome (7, 9 or 10 with RCVHWM 1), so
        # how often each outcome comes depends on the load and the mode is not asserted.
        # The model's outcome is the undisturbed race's: it is among the real ones.
        lengths = sorted({len(got) for got in outcomes})
        assert len(model) in lengths, (config, lengths, len(model))
