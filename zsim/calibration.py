"""Fitting the kernel part of a profile by simulation (no zmq here).

``validation/calibrate/kernel.py`` measures, with real pyzmq, how many messages a PUSH hands
over to a PULL that never reads before its blocking send times out (``accepted``), per
message size and HWM. Everything on that path except the kernel is exact in the model
(pipes, LWM reporting, engine batches, the held message), so the kernel's effective
capacity is the one unknown: ``fit_kernel`` finds, for each measured cell, the capacity
in bytes for which the simulated protocol accepts the measured count. Where the count
does not depend on the kernel (large messages: HWM-bound), the capacity is kept at the
fitted value of the next smaller size, the best physical guess the data allows.

The measurement protocol is reproduced exactly, warm-up message included: the PULL reads
one message first, which leaves both pipes one unreported read behind (the reason ipc
with HWM 10/10 accepts 19, not 20).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .constants import frame_wire_bytes
from .profile import MIN_KERNEL_BYTES, KernelModel, KernelTable, Profile, from_dict

SNDTIMEO_MS = 300


def stalled_push_scenario(transport: str, size: int, sndhwm: int, rcvhwm: int, buffers: int | None = None,
                          profile: str = "default") -> dict[str, Any]:
    """The calibration protocol as a scenario: warm-up, then fill until SNDTIMEO expires."""
    endpoint = "tcp://127.0.0.1:5555" if transport == "tcp" else f"{transport}://calibration"
    extra = {} if buffers is None else {"sndbuf": buffers, "rcvbuf": buffers}
    return {
        "scenario": {"name": f"stalled-push-{transport}-{size}B-{sndhwm}-{rcvhwm}", "profile": profile},
        "socket": [
            {"name": "push", "type": "PUSH", "connect": [endpoint], "open_at_s": 0.001,
             "options": {"sndhwm": sndhwm, "sndtimeo": SNDTIMEO_MS, **extra}},
            {"name": "pull", "type": "PULL", "bind": [endpoint], "options": {"rcvhwm": rcvhwm, **extra}},
        ],
        "send": [
            {"name": "warmup", "socket": "push", "count": 1, "size_bytes": 7, "start_s": 0.01},
            {"name": "fill", "socket": "push", "count": 100_000_000, "size_bytes": size, "start_s": 0.05, "on_again": "stop"},
        ],
        "recv": [{"socket": "pull", "count": 1}],
    }


def simulate_accepted(profile: Profile, transport: str, size: int, sndhwm: int, rcvhwm: int, buffers: int | None = None,
                      seed: int = 1) -> int:
    from .runner import run
    from .spec import from_dict as scenario_from_dict

    scenario = scenario_from_dict(stalled_push_scenario(transport, size, sndhwm, rcvhwm, buffers))
    return int(run(scenario, seed, profile=profile).summary["senders"]["fill"]["sent"])


def _with_constant_kernel(profile: Profile, transport: str, capacity: int, explicit: bool) -> Profile:
    tp = profile.transport(transport)
    table = KernelTable((1,), (int(capacity),))
    if explicit:
        tp = replace(tp, kernel_explicit=table)
    else:
        tp = replace(tp, kernel=KernelModel(((1, table),)))
    transports = dict(profile.transports)
    transports[transport] = tp
    return replace(profile, transports=transports)


def fit_capacity(accepted_of: Callable[[int], int], target: int, wire: int, start: int, prior: int | None = None,
                 tolerance: int = 0) -> tuple[int, int]:
    """Kernel capacity (bytes) whose simulated count matches ``target``; (capacity, count).

    Kernel-bound cells (small messages): secant iterations on accepted(capacity), which is
    close to linear. HWM-bound cells (the count does not move with the kernel): the largest
    capacity up to ``prior`` (the next smaller size's fit) that still gives the count.
    """
    low = MIN_KERNEL_BYTES
    cache: dict[int, int] = {}

    def a(capacity: int) -> int:
        capacity = max(low, int(capacity))
        if capacity not in cache:
            cache[capacity] = accepted_of(capacity)
        return cache[capacity]

    def close(count: int) -> bool:
        return abs(count - target) <= tolerance

    if prior is not None and prior > low and close(a(prior)):
        return prior, a(prior)
    if a(low) >= target:
        # HWM-bound: any capacity up to the one where the count starts to grow fits.
        if prior is None or prior <= low:
            return low, a(low)
        lo, hi = low, prior
        for _ in range(14):
            if hi / lo < 1.05:
                break
            mid = int(math.sqrt(lo * hi))
            if a(mid) <= target:
                lo = mid
            else:
                hi = mid
        return lo, a(lo)
    x0 = max(low, start)
    y0 = a(x0)
    if close(y0):
        return x0, y0
    # second point: assume accepted ~ capacity / wire
    x1 = max(low, int(x0 + (target - y0) * wire))
    if x1 == x0:
        x1 = int(x0 * (1.5 if target > y0 else 0.67))
    y1 = a(x1)
    best = min(((x0, y0), (x1, y1)), key=lambda p: abs(p[1] - target))
    for _ in range(10):
        if close(y1):
            return x1, y1
        if y1 == y0:
            x2 = int(x1 * (2.0 if target > y1 else 0.5))
        else:
            x2 = int(x1 + (target - y1) * (x1 - x0) / (y1 - y0))
        x2 = max(low, x2)
        if x2 == x1:
            break
        x0, y0 = x1, y1
        x1, y1 = x2, a(x2)
        if abs(y1 - target) < abs(best[1] - target):
            best = (x1, y1)
    return best


def fit_kernel(profile_raw: dict[str, Any], progress: Callable[[str], None] = lambda _msg: None) -> dict[str, Any]:
    """Return a copy of a raw profile whose kernel tables carry fitted ``capacity_bytes``."""
    raw = copy.deepcopy(profile_raw)
    base = from_dict(raw)
    for transport in ("tcp", "ipc"):
        section = raw.get(transport, {})
        kernel = section.get("kernel")
        if not isinstance(kernel, dict):
            continue
        tables: list[tuple[str, dict[str, Any], int, int, int | None]] = [("kernel", kernel, 10, 10, None)]
        for key, value in kernel.items():
            if isinstance(value, dict) and key.startswith("hwm_"):
                _, snd, rcv = key.split("_")
                tables.append((key, value, int(snd), int(rcv), None))
            elif isinstance(value, dict) and key.startswith("sndbuf_rcvbuf_") and transport == "tcp":
                tables.append((key, value, 10, 10, int(key.rsplit("_", 1)[1])))
        for key, table, sndhwm, rcvhwm, buffers in tables:
            sizes = [int(s) for s in table["payload_bytes"]]
            accepted = [int(a) for a in table["accepted"]]
            capacities: list[int] = []
            fitted_counts: list[int] = []
            previous: int | None = None
            for size, target in zip(sizes, accepted, strict=True):
                wire = frame_wire_bytes(size)

                def accepted_of(capacity: int, size: int = size, transport: str = transport, buffers: Any = buffers,
                                sndhwm: int = sndhwm, rcvhwm: int = rcvhwm) -> int:
                    profile = _with_constant_kernel(base, transport, capacity, explicit=buffers is not None)
                    return simulate_accepted(profile, transport, size, sndhwm, rcvhwm, buffers)

                start = max(MIN_KERNEL_BYTES, (target - sndhwm - rcvhwm) * wire)
                # counts move in steps of the sender's LWM once the pipe is the limit
                tolerance = max(0, (sndhwm + 1) // 2 - 1) if target < 4 * (sndhwm + rcvhwm) else max(1, target // 500)
                capacity, count = fit_capacity(accepted_of, target, wire, start, prior=previous, tolerance=tolerance)
                capacities.append(int(capacity))
                fitted_counts.append(int(count))
                previous = capacity
                progress(f"  {transport} {key} {size} B: measured {target}, kernel {capacity} B -> simulated {count}")
            table["capacity_bytes"] = capacities
            table["fitted_accepted"] = fitted_counts
    return raw
