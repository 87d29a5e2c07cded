"""Kernel (in-flight) capacity: how many messages a PUSH hands to a PULL that never reads,
per payload size and HWM pair (the profile's ``[tcp.kernel]``/``[ipc.kernel]`` ``accepted``;
``zsim.calibration.fit_kernel`` turns it into capacities).
"""

from __future__ import annotations

import re
import subprocess
from typing import Any

import zmq

from .common import Progress, _contexts, _Endpoints, _endpoints, _median_int, _pc, _socket

KERNEL_PAYLOADS = [10, 100, 1000, 10000, 100000, 1000000]


def _tcp_queues(port: int) -> list[dict]:
    """Socket memory of the loopback connection on ``port`` as ``ss -tnm`` reports it (notes only)."""
    try:
        text = subprocess.run(
            ["ss", "-tnmH", "state", "established", f"( sport = :{port} or dport = :{port} )"],
            capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return _parse_ss(text, port)


def _parse_ss(text: str, port: int) -> list[dict]:
    """``ss -tnmH`` output: per socket of the connection its role (the one on ``port`` receives),
    Recv-Q and Send-Q, and the skmem fields r, rb, t, tb, w."""
    rows: list[dict] = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[0].isdigit():
            local = fields[2]
            row = {"role": "receiver" if local.endswith(f":{port}") else "sender",
                   "recv_q": int(fields[0]), "send_q": int(fields[1])}
            rows.append(row)
        elif "skmem:" in line and rows:
            skmem = re.search(r"skmem:\(([^)]*)\)", line)
            if skmem:
                for item in skmem.group(1).split(","):
                    key = re.match(r"[a-z]+", item)
                    if key and key.group(0) in ("r", "rb", "t", "tb", "w"):
                        rows[-1][key.group(0)] = int(item[len(key.group(0)):])
    return rows


def _kernel_accepted(transport: str, size: int, sndhwm: int, rcvhwm: int, buffers: int | None,
                     endpoints: _Endpoints, max_seconds: float,
                     snapshot: list | None = None) -> tuple[int, bool]:
    """Messages a PUSH (blocking send, SNDTIMEO 300 ms) hands over before the first Again.

    The PULL (bound, own context) reads one warm-up message so the connection is fully up,
    then never reads again. Returns (count, truncated); truncated means ``max_seconds`` ran out
    before the first Again, so the count is a lower bound. With a list in ``snapshot`` (tcp
    only) the kernel queues of the connection are appended to it before closing.
    """
    extra = {} if buffers is None else {"sndbuf": buffers, "rcvbuf": buffers}
    truncated = False
    with _contexts(2) as (receiver_ctx, sender_ctx):
        pull = _socket(receiver_ctx, zmq.PULL, rcvhwm=rcvhwm, rcvtimeo=3000, **extra)
        endpoint = endpoints.bind(pull, transport)
        push = _socket(sender_ctx, zmq.PUSH, sndhwm=sndhwm, sndtimeo=3000, **extra)
        push.connect(endpoint)
        push.send(b"warm-up")
        pull.recv()
        push.sndtimeo = 300
        payload = b"x" * size
        send = push.send
        accepted = 0
        deadline = _pc() + max_seconds
        try:
            while True:
                for _ in range(100):
                    send(payload)
                    accepted += 1
                if _pc() > deadline:
                    truncated = True
                    break
        except zmq.Again:
            pass
        if snapshot is not None and transport == "tcp":
            snapshot.append(_tcp_queues(int(endpoint.rsplit(":", 1)[1])))
        push.close()
        pull.close()
    return accepted, truncated


def _accepted_table(runs: list[list[int]]) -> dict[str, Any]:
    """One HWM pair's table from its counts, one list of runs per ``KERNEL_PAYLOADS`` size: the
    median of each cell (what the profile's ``accepted`` holds), and every run."""
    return {"payload_bytes": list(KERNEL_PAYLOADS), "accepted": [_median_int(r) for r in runs], "accepted_runs": runs}


def measure_kernel(transport: str, quick: bool, progress: Progress) -> tuple[dict, dict]:
    """Messages accepted by a PUSH to a PULL that never reads, per payload size and HWM pair.

    Each (configuration, size) cell is repeated up to ``repeats`` times, but no new repetition
    starts once the cell has used ``cell_budget`` seconds (small messages with HWM 1 take about
    85 us per message to fill the ~4 MB of tcp buffers, i.e. ~30 s per run). A run that reaches
    ``run_cap`` seconds stops early and is flagged as truncated (a lower bound).
    """
    repeats = 1 if quick else 5
    run_cap = 4.0 if quick else 60.0
    cell_budget = 0.0 if quick else 40.0
    configs: list[tuple[str | None, int, int, int | None]] = [
        (None, 10, 10, None),
        ("hwm_1_1", 1, 1, None),
        ("hwm_100_100", 100, 100, None),
    ]
    if transport == "tcp":
        configs.append(("sndbuf_rcvbuf_65536", 10, 10, 65536))
    section: dict[str, Any] = {}
    notes: dict[str, Any] = {"max_repeats": repeats, "run_cap_s": run_cap, "cell_budget_s": cell_budget,
                             "truncated": [], "seconds_per_run": {}, "tcp_queues": {}}
    with _endpoints() as endpoints:

        def cell(key: str, size: int, sndhwm: int, rcvhwm: int, buffers: int | None) -> list[int]:
            counts: list[int] = []
            snapshot: list = []
            cell_start = _pc()
            while len(counts) < repeats and (not counts or _pc() - cell_start < cell_budget):
                count, truncated = _kernel_accepted(transport, size, sndhwm, rcvhwm, buffers, endpoints,
                                                    run_cap, snapshot if not counts else None)
                counts.append(count)
                if truncated:
                    notes["truncated"].append([key, size, count])
            notes["seconds_per_run"][f"{key} {size}"] = round((_pc() - cell_start) / len(counts), 3)
            if snapshot and snapshot[0]:
                notes["tcp_queues"][f"{key} {size}"] = snapshot[0]
            return counts

        for key, sndhwm, rcvhwm, buffers in configs:
            name = key or "hwm_10_10"
            table = _accepted_table([cell(name, size, sndhwm, rcvhwm, buffers) for size in KERNEL_PAYLOADS])
            if key is None:
                section.update(table)
            else:
                section[key] = table
            progress(f"  {transport} kernel {name}: {table['accepted']}")
        if transport == "ipc":
            # libzmq applies SNDBUF/RCVBUF only to tcp sockets (tcp_open_socket, tcp listener).
            check = {}
            for size in (10, 1000):
                check[size] = {
                    f"sndbuf_rcvbuf_{buffers or 'default'}": cell(f"ipc_sndbuf_{buffers}", size, 10, 10, buffers)
                    for buffers in (None, 65536, 4096)
                }
            notes["ipc_sndbuf_check"] = check
            progress(f"  ipc SNDBUF/RCVBUF check (HWM 10/10): {check}")
    if notes["truncated"]:
        progress(f"  {transport} kernel: runs stopped at the {run_cap} s cap (lower bounds): {notes['truncated']}")
    return section, notes
