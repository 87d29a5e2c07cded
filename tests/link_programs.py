"""Real pyzmq programs the link tests run inside network namespaces, and how they report."""

from __future__ import annotations

import json
import subprocess
from typing import Any

#: a PULL that binds, says "ready", and reports the seconds from its first message to its last
PULL = r"""
import sys, time, json, zmq
endpoint, count = sys.argv[1], int(sys.argv[2])
ctx = zmq.Context(); pull = ctx.socket(zmq.PULL); pull.bind(endpoint); print("ready", flush=True)
pull.recv(); first = time.perf_counter()
for _ in range(count - 1): pull.recv()
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


def result(proc: subprocess.Popen[str], timeout: float = 90.0) -> dict[str, Any]:
    """The last line a program printed, as JSON, after it exited 0."""
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def started(proc: subprocess.Popen[str]) -> subprocess.Popen[str]:
    """``proc`` once it said it is ready."""
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc
