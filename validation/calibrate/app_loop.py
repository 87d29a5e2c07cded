"""The validation harness's own application loop, beyond a bare pyzmq loop: not the
machine's (no profile holds it) but the harness's, written to
``validation/harness-program.toml`` (``python -m validation.calibrate --harness-program``).
"""

from __future__ import annotations

import platform
import statistics
import time

import zmq

from zsim.errors import EnvironmentFault
from zsim.tomlw import to_toml

from .common import _contexts, _cpu_model, _round, _socket, _summary, _time_recv_loop, _time_send_loop


def measure_app_loop(quick: bool) -> dict:
    """``send_loop_s`` and ``recv_loop_s``: the validation harness's own application loop per
    attempt, beyond the ZeroMQ call: not the machine's (no profile holds it) but the
    harness's, declared in ``validation/harness-program.toml``
    (``validation.harness_program``). The harness itself runs (``run_real``, its own child
    process, as in ``zsim validate``): a PUB with no subscriber sends back to back (every
    send drops in ``dist_t``, the cheapest call), and a PULL drains messages a PUSH of the
    same process queued before it started. What an attempt takes there, less the same call
    with the same 64-byte message timed in a bare loop here (a PUB without subscriber; a
    ``recv()`` of a queued message), is the loop's work: building the frames, the generator
    and its scheduler, the statistics. (The size matters: a message over 33 bytes is
    allocated, a shorter one is not.)"""
    from validation.harness import run_real

    count = 20_000 if quick else 100_000
    size = 64  # carries the full header: the receiver records a latency, as most runs do
    # one after the other, so that no two of the process's threads share the GIL: the PUSH
    # fills, the PULL drains, then the PUB drops (at most 10 us a message each)
    fill_start = 0.2
    recv_start = fill_start + count * 10e-6 + 0.3
    send_start = recv_start + count * 10e-6 + 0.3
    raw = {
        "scenario": {"name": "app-loop", "profile": "ideal"},
        "process": [{"name": "a"}],
        "socket": [
            {"name": "pub", "type": "PUB", "process": "a", "bind": ["inproc://loop-pub"]},
            {"name": "push", "type": "PUSH", "process": "a", "bind": ["inproc://loop-pull"],
             "options": {"sndhwm": 0}},
            {"name": "pull", "type": "PULL", "process": "a", "connect": ["inproc://loop-pull"],
             "options": {"rcvhwm": 0}},
        ],
        "send": [
            {"socket": "pub", "name": "drops", "count": count, "size_bytes": size, "start_s": send_start},
            {"socket": "push", "name": "fill", "count": count, "size_bytes": size, "start_s": fill_start},
        ],
        "recv": [{"socket": "pull", "count": count, "start_s": recv_start}],
    }
    payload = b"x" * size
    bare_sends, bare_recvs = [], []
    with _contexts(1) as (ctx,):
        for index in range(3 if quick else 5):
            pub = _socket(ctx, zmq.PUB)
            pub.bind(f"inproc://loop-bare-pub-{index}")
            bare_sends.append(_time_send_loop(pub, count, payload))
            pub.close()
            pull = _socket(ctx, zmq.PULL, rcvhwm=0)
            pull.bind(f"inproc://loop-bare-pull-{index}")
            push = _socket(ctx, zmq.PUSH, sndhwm=0)
            push.connect(f"inproc://loop-bare-pull-{index}")
            for _ in range(count):
                push.send(payload)
            bare_recvs.append(_time_recv_loop(pull, count))
            push.close()
            pull.close()
    bare_send_s, bare_recv_s = statistics.median(bare_sends), statistics.median(bare_recvs)
    sends, recvs = [], []
    for seed in range(2 if quick else 3):
        summary = run_real(raw, seed, timeout_s=60 + count * 1e-4)
        finished = summary["senders"]["drops"].get("finished_at_s")
        pulled = summary["sockets"]["pull"]
        first_recv, last_recv = pulled.get("first_recv_s"), pulled.get("last_recv_s")
        if finished is not None and (last_recv or 0.0) < send_start:  # else they overlapped
            sends.append((finished - send_start) / count)
        if pulled["received"] == count and first_recv is not None and last_recv is not None:
            recvs.append((last_recv - first_recv) / (count - 1))
    if not sends or not recvs:
        # never a figure that looks measured (max(0.0, nan) would be 0.0)
        raise EnvironmentFault("calibrate: harness loop." + ("send_cpu_s" if not sends else "recv_cpu_s"),
                               "no harness run measured it (the phases overlapped or messages went missing: "
                               "the machine was too busy); run calibrate again on a quieter machine")
    send_attempt, recv_message = statistics.median(sends), statistics.median(recvs)
    return {
        "send_loop_s": max(0.0, send_attempt - bare_send_s),
        "recv_loop_s": max(0.0, recv_message - bare_recv_s),
        "send_attempt_s": _summary(sends),
        "recv_message_s": _summary(recvs),
        "bare_send_s": bare_send_s,
        "bare_recv_s": bare_recv_s,
        "count_per_run": count,
        "size_bytes": size,
        "method": ("validation harness, one process: a PUB without subscriber sending back to back "
                   "(finished_at - start) / count, and a PULL draining messages already queued "
                   "(last_recv - first_recv) / (count - 1); less the bare call of the same kind"),
    }


def harness_program_toml(loop: dict) -> str:
    """``validation/harness-program.toml`` from ``measure_app_loop``'s result."""
    head = ("# The validation harness's own loop, beyond a bare pyzmq loop (validation/harness_program.py),\n"
            "# written by python -m validation.calibrate --harness-program (measure_app_loop):\n"
            f"# {loop['method']}.\n\n")
    return head + to_toml({
        "machine": {"measured_on": time.strftime("%Y-%m-%d"), "machine": _cpu_model(), "python": platform.python_version(),
                    "pyzmq": zmq.__version__},
        "loop": {"send_cpu_s": _round(loop["send_loop_s"]), "recv_cpu_s": _round(loop["recv_loop_s"])},
    })
