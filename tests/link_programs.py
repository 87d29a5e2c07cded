"""Real pyzmq programs the link tests run inside network namespaces, and how they report."""

from __future__ import annotations

import json
import subprocess
from typing import Any

#: a PULL that binds, says "ready", and reports the seconds from its first message to its
#: last; with a third argument it takes that many seconds a message, by deadline (no drift
#: under load)
PULL = r"""
import sys, time, json, zmq
endpoint, count = sys.argv[1], int(sys.argv[2])
pace = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
ctx = zmq.Context(); pull = ctx.socket(zmq.PULL); pull.bind(endpoint); print("ready", flush=True)
pull.recv(); first = time.perf_counter()
for i in range(1, count):
    if pace > 0:
        while time.perf_counter() < first + i * pace: time.sleep(0.0002)
    pull.recv()
print(json.dumps({"seconds": time.perf_counter() - first}), flush=True)
"""

#: a PUSH that sends ``count`` messages of ``size`` bytes back to back, then closes
PUSH = r"""
import sys, zmq
endpoint, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ctx = zmq.Context(); push = ctx.socket(zmq.PUSH); push.connect(endpoint)
body = b"x" * size
for _ in range(count): push.send(body)
push.close(); ctx.term()
"""

#: a SUB that says "ready" and counts messages until none came for ``quiet`` seconds
#: after the first (twenty times that before it)
SUB = r"""
import sys, json, zmq
endpoint, quiet = sys.argv[1], float(sys.argv[2])
ctx = zmq.Context(); sub = ctx.socket(zmq.SUB); sub.setsockopt(zmq.SUBSCRIBE, b""); sub.connect(endpoint)
print("ready", flush=True)
got = 0; sub.RCVTIMEO = int(quiet * 1000) * 20
while True:
    try: sub.recv()
    except zmq.Again: break
    got += 1; sub.RCVTIMEO = int(quiet * 1000)
print(json.dumps({"received": got}), flush=True)
"""

#: a PUB that waits for ``subs`` handshakes, then sends ``size``-byte messages at ``rate``
#: a second for ``seconds`` by deadline (busy-waiting: the rate holds whatever the load),
#: and reports how long sending took
PUB = r"""
import sys, time, json, zmq
endpoint, rate, seconds, size, subs = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
ctx = zmq.Context(); pub = ctx.socket(zmq.PUB); pub.bind(endpoint)
mon = pub.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
for _ in range(subs): mon.recv_multipart()
time.sleep(0.3)  # the subscriptions arrive after the handshake
body = b"x" * size; start = time.perf_counter(); count = int(rate * seconds)
for i in range(count):
    while time.perf_counter() < start + i / rate: pass
    pub.send(body)
print(json.dumps({"sent": count, "seconds": time.perf_counter() - start}), flush=True)
time.sleep(1.5); mon.close(); pub.close(linger=0); ctx.term()  # by now the subscribers had a quiet half second
"""

#: a REP that answers ``count`` requests with two bytes
REP = r"""
import sys, zmq
endpoint, count = sys.argv[1], int(sys.argv[2])
ctx = zmq.Context(); rep = ctx.socket(zmq.REP); rep.bind(endpoint); print("ready", flush=True)
for _ in range(count): rep.recv(); rep.send(b"ok")
"""

#: a REQ that sends ``count`` requests, alternately of ``size`` bytes and of ``small``
#: bytes, and reports the round trips of each kind (taken in turn, so both see the same load)
REQ = r"""
import sys, time, json, zmq
endpoint, count, size, small = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ctx = zmq.Context(); req = ctx.socket(zmq.REQ); req.connect(endpoint)
bodies = (b"x" * size, b"x" * small); rtts = ([], [])
for i in range(count):
    start = time.perf_counter(); req.send(bodies[i % 2]); req.recv(); rtts[i % 2].append(time.perf_counter() - start)
print(json.dumps({"rtts": rtts[0], "small_rtts": rtts[1]}), flush=True)
"""


def result(proc: subprocess.Popen[str], timeout: float = 90.0) -> dict[str, Any]:
    """The last line a program printed, as JSON, after it exited 0."""
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def started(proc: subprocess.Popen[str]) -> subprocess.Popen[str]:
    """``proc`` once it said it is ready."""
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line == "ready", line
    return proc


#: a PUSH that connects, waits ``delay`` seconds, then sends ``size``-byte messages as fast as
#: it can for ``seconds`` (a bulk feed), reports how many, and closes without lingering
BULK = r"""
import sys, time, json, zmq
endpoint, delay, seconds, size = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
ctx = zmq.Context(); push = ctx.socket(zmq.PUSH); push.connect(endpoint)
time.sleep(delay)
body = b"x" * size; sent = 0; end = time.perf_counter() + seconds
while time.perf_counter() < end:
    push.send(body); sent += 1
print(json.dumps({"sent": sent}), flush=True)
push.close(linger=0); ctx.term()
"""

#: a PULL that binds, says "ready", and reads until nothing came for 1.5 s after the first
#: message (20 s before it); reports how many it read
SINK = r"""
import sys, json, zmq
endpoint = sys.argv[1]
ctx = zmq.Context(); pull = ctx.socket(zmq.PULL); pull.bind(endpoint); print("ready", flush=True)
got = 0; pull.RCVTIMEO = 20000
while True:
    try: pull.recv()
    except zmq.Again: break
    got += 1; pull.RCVTIMEO = 1500
print(json.dumps({"received": got}), flush=True)
"""

#: a REP that answers ``count`` requests with ``size`` bytes each
REP_SIZED = r"""
import sys, zmq
endpoint, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ctx = zmq.Context(); rep = ctx.socket(zmq.REP); rep.bind(endpoint); print("ready", flush=True)
body = b"y" * size
for _ in range(count): rep.recv(); rep.send(body)
"""

#: a REQ that, on a schedule from its start, sends ``idle`` requests of ``size`` bytes every
#: ``interval`` seconds from ``idle_at``, then ``count`` more from ``busy_at`` (each when its
#: deadline comes, or at once when the reply before it was later: a REQ waits for its reply),
#: and reports the round trips of each group
REQ_SCHEDULE = r"""
import sys, time, json, zmq
endpoint, size, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
idle, idle_at, count, busy_at = int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
ctx = zmq.Context(); req = ctx.socket(zmq.REQ); req.connect(endpoint)
body = b"r" * size; start = time.perf_counter(); groups = []
for n, at in ((idle, idle_at), (count, busy_at)):
    rtts = []
    for i in range(n):
        while time.perf_counter() < start + at + i * interval: time.sleep(0.0002)
        t = time.perf_counter(); req.send(body); req.recv(); rtts.append(time.perf_counter() - t)
    groups.append(rtts)
print(json.dumps({"idle": groups[0], "busy": groups[1]}), flush=True)
"""
