"""Plain pyzmq programs for tests/validation/test_plain_programs.py, each run as an OS process of its own:

    python tests/plain_programs.py <program> <json arguments>

Written as a designer writes them, not as the validation harness runs scenarios: a bare
``for`` loop around ``sock.send``/``sock.recv``, ``time.sleep`` for every wait, a busy
service as a loop on ``time.thread_time``. What the test needs to know (endpoints, counts,
when a phase ended) goes to the parent as one JSON object per line on stdout; the parent
says when to go on with one line on stdin. Nothing here imports zsim or the harness.

Programs:

* ``sub``: a SUB that connects and does not read until told to, then reads until the
  publisher's end marker (the burst of test 1).
* ``pull``: a PULL that reads one warm-up message and then nothing (the PUSH control).
* ``worker``: a PULL -> work -> PUSH task worker (zguide taskwork); the task says its
  work: ``time.sleep(x)`` or a busy loop of ``x`` seconds of its own CPU time.
* ``ventilator``: deals tasks on a PUSH to the workers and collects the results on a PULL
  (zguide taskvent and tasksink in one process), and times each batch.
* ``fanout_pub``: a PUB that sends for a while at a fixed or Poisson rate with
  ``time.sleep`` between sends.
* ``fanout_sub``: a SUB that reads (with a sleep per message if slow) until the end marker.
"""

from __future__ import annotations

import json
import os
import random
import select
import sys
import time

import zmq

END = b"END"
FIRST = b"FIRST"


def say(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def wait_line() -> str:
    line = sys.stdin.readline()
    if not line:  # the parent went away
        os._exit(3)
    return line.strip()


def pin(cpus: list[int] | None) -> None:
    if cpus:
        os.sched_setaffinity(0, set(cpus))


def sub(endpoint: str, rcvhwm: int) -> None:
    """Connect, subscribe to everything, say so; read nothing until the parent says ``read``;
    then read until the end marker: how many arrived, and whether the burst's first
    message (``FIRST``) was among them (the subscription was in place when it was sent)."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.SUB)
    sock.linger = 0
    sock.rcvhwm = rcvhwm
    sock.setsockopt(zmq.SUBSCRIBE, b"")
    sock.connect(endpoint)
    say(connected=True)
    wait_line()
    count = 0
    first = None
    while True:
        msg = sock.recv()
        if msg == END:
            break
        if first is None:
            first = msg.startswith(FIRST)
        count += 1
    say(received=count, first_was_first=bool(first))
    wait_line()
    sock.close()
    ctx.term()


def pull(endpoint: str, rcvhwm: int) -> None:
    """Bind, read the warm-up message, then read nothing until the parent says ``quit``."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.PULL)
    sock.linger = 0
    sock.rcvhwm = rcvhwm
    sock.bind(endpoint)
    say(endpoint=sock.getsockopt_string(zmq.LAST_ENDPOINT))
    sock.recv()
    say(warmed_up=True)
    wait_line()
    sock.close()
    ctx.term()


def worker(sink: str, cpus: list[int] | None) -> None:
    """zguide taskwork: PULL a task, do it, PUSH a result to the sink, for ever (the parent
    kills it). A task says its work, as the guide's says its milliseconds: ``sleep <s>`` is
    ``time.sleep(s)``, ``busy <s>`` a loop until this thread has used ``s`` of CPU."""
    pin(cpus)
    ctx = zmq.Context()
    receiver = ctx.socket(zmq.PULL)
    receiver.bind("tcp://127.0.0.1:0")
    sender = ctx.socket(zmq.PUSH)
    sender.connect(sink)
    say(endpoint=receiver.getsockopt_string(zmq.LAST_ENDPOINT))
    thread_time = time.thread_time
    while True:
        task = receiver.recv()
        kind, seconds = task.split()
        if kind == b"busy":
            end = thread_time() + float(seconds)
            while thread_time() < end:
                pass
        else:
            time.sleep(float(seconds))
        sender.send(b"done")


def ventilator(cpus: list[int] | None) -> None:
    """zguide taskvent + tasksink: bind the sink, connect the task PUSH to every worker (a
    connecting PUSH has all its pipes at once, so the deal is round robin from the first
    task). Then, per line ``<count> <task>`` from the parent: send the tasks back to back,
    collect every result, say how long the batch took (first send to last result)."""
    pin(cpus)
    ctx = zmq.Context()
    sink = ctx.socket(zmq.PULL)
    sink.bind("tcp://127.0.0.1:0")
    say(sink=sink.getsockopt_string(zmq.LAST_ENDPOINT))
    vent = ctx.socket(zmq.PUSH)
    for endpoint in json.loads(wait_line()):
        vent.connect(endpoint)
    say(connected=True)
    while True:
        count, task = wait_line().split(" ", 1)
        payload = task.encode()
        start = time.perf_counter()
        for _ in range(int(count)):
            vent.send(payload)
        for _ in range(int(count)):
            sink.recv()
        say(batch_s=time.perf_counter() - start)


def fanout_pub(sndhwm: int, size: int, interval_s: float, poisson: bool, duration_s: float, seed: int, buffers: int) -> None:
    """Bind, wait for ``go``, then for ``duration_s``: ``send(msg); time.sleep(interval)``
    (a fixed interval, or an exponential one with that mean). Says how many it sent and when
    each send happened (to rebuild its achieved schedule), then sends the end marker every
    20 ms until told to stop."""
    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    pub.linger = 0
    pub.sndhwm = sndhwm
    pub.sndbuf = pub.rcvbuf = buffers
    pub.bind("tcp://127.0.0.1:0")
    say(endpoint=pub.getsockopt_string(zmq.LAST_ENDPOINT))
    wait_line()
    rng = random.Random(seed)
    payload = b"x" * size
    clock = time.perf_counter
    times = []
    first = FIRST + payload[len(FIRST):]
    start = clock()
    end = start + duration_s
    now = start
    while now < end:
        pub.send(payload if times else first)
        times.append(now)
        time.sleep(rng.expovariate(1.0 / interval_s) if poisson else interval_s)
        now = clock()
    stop = clock()
    say(sent=len(times), start=start, stop=stop, times=[round(t - start, 7) for t in times])
    # the end marker, until every subscriber has read up to it
    while not select.select([sys.stdin], [], [], 0.02)[0]:
        pub.send(END)
    wait_line()
    pub.close()
    ctx.term()


def fanout_sub(endpoint: str, rcvhwm: int, service_s: float, buffers: int) -> None:
    """Connect, subscribe, say so; read until the end marker, sleeping ``service_s`` after
    each message (0: a bare loop). Says how many it received."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.SUB)
    sock.linger = 0
    sock.rcvhwm = rcvhwm
    sock.sndbuf = sock.rcvbuf = buffers
    sock.setsockopt(zmq.SUBSCRIBE, b"")
    sock.connect(endpoint)
    say(connected=True)
    count = 0
    first = None
    cpu = 0.0  # CPU time of this thread from the first message on
    clock = time.perf_counter
    recv_at: list[float] = []  # when each recv() returned (this clock is the publisher's too)
    slept: list[float] = []  # how long each sleep took (a clock read on each side: ~0.1 us against 0.5 ms)
    while True:
        msg = sock.recv()
        if msg == END:
            break
        recv_at.append(clock())
        if first is None:
            first = msg.startswith(FIRST)
            cpu = -time.thread_time()
        count += 1
        if service_s > 0:
            began = clock()
            time.sleep(service_s)
            slept.append(clock() - began)
    cpu += time.thread_time()
    say(received=count, first_was_first=bool(first), cpu_per_message_s=cpu / count if count else 0.0,
        recv_at=[round(t, 7) for t in recv_at] if service_s > 0 else [], slept=[round(t, 7) for t in slept])
    wait_line()
    sock.close()
    ctx.term()


PROGRAMS = {"sub": sub, "pull": pull, "worker": worker, "ventilator": ventilator,
            "fanout_pub": fanout_pub, "fanout_sub": fanout_sub}

if __name__ == "__main__":
    PROGRAMS[sys.argv[1]](**json.loads(sys.argv[2]))
