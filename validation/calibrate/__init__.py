"""Measure, with real pyzmq over loopback, the timing and buffer parameters of a zsim profile.

The simulator (``zsim``) never imports ``zmq``; this package is its only link to the machine.
``calibrate()`` runs a fixed set of measurements and returns (and optionally writes as TOML)
the calibration profile that ``zsim/profiles/*.toml`` holds. One module per family of
measurements:

- ``calls``: ``[api]``: cost of one pyzmq ``send``/``recv`` call, a send that drops, the libzmq
  command throttle (``max_command_delay`` = 3,000,000 TSC ticks, ``src/config.hpp``);
- ``wakeups``: the overshoot of ``time.sleep`` (``[api] sleep_late_s``), the lateness of the
  harness's precise wait (``validation.timing.wait_until``, ``[api] timer_jitter_s``) for
  waits of 1, 10 and 100 ms, what a send that wakes a sleeping thread costs
  (``send_wake_cost``), the CPU an idle thread spends on one event;
- ``latencies``: ``[inproc]``, ``[tcp]``, ``[ipc]``: connection set-up delay, subscription
  travel time and one-way latency as distributions;
- ``engine``: for tcp and ipc the I/O-thread (engine) cost per message and per byte;
- ``kernel``: ``[tcp.kernel]``, ``[ipc.kernel]``: how many messages a PUSH can hand to a PULL
  that never reads, per payload size and HWM pair (pipes + engine batches + kernel buffers);
- ``scheduler``: ``[scheduler]``: the cores and what sharing them costs;
- ``app_loop``: the validation harness's own loop (validation/harness-program.toml, not the
  profile);
- ``experiments``: ``run_experiments()``, the validation experiments documented in
  ``validation/calibration-notes.md`` (slow joiner, the ipc termination loss of libzmq issue
  #4660, PUB/SUB drops under backpressure, PUB and DONTWAIT); they are not part of the profile;
- ``common``: what they share (endpoints, child processes, contexts and sockets, the bare
  timing loops, quantiles, summaries, rounding, the machine's description);
- ``cli``: ``calibrate()``, which writes the profile, and the command line.

Every measurement is bounded in time (socket timeouts, poll timeouts, process join timeouts),
uses tcp ports chosen by the kernel (``tcp://127.0.0.1:0`` + ``LAST_ENDPOINT``) and ipc paths in a
``tempfile.mkdtemp()`` directory that is removed afterwards. Work that must happen in a different
OS process (engine throughput, ping-pong, context termination) runs in ``spawn`` children.

Clocks: ``time.perf_counter()`` is ``CLOCK_MONOTONIC`` on Linux, shared by all processes, so
timestamps taken in different processes are compared directly.

Usage::

    python -m validation.calibrate --out zsim/profiles/default.toml [--quick]
    python -m validation.calibrate --experiments results.json [--quick]
"""

from zsim.tomlw import to_toml

from .app_loop import harness_program_toml, measure_app_loop
from .calls import MAX_COMMAND_DELAY_TICKS, measure_api, measure_command_throttle, measure_send_dropped
from .cli import calibrate, main
from .common import EMPIRICAL_POINTS, Progress
from .engine import ENGINE_PAYLOADS, measure_engine
from .experiments import (
    experiment_pub_backpressure,
    experiment_pub_dontwait,
    experiment_slow_joiner,
    experiment_termination,
    run_experiments,
)
from .kernel import KERNEL_PAYLOADS, measure_kernel
from .latencies import measure_latencies
from .scheduler import measure_scheduler
from .wakeups import SLEEP_WAITS_S, measure_send_wake_cost, measure_sleep_late, measure_timer_jitter, measure_wake_cpu

__all__ = [
    "calibrate", "run_experiments", "to_toml", "main",
    "measure_api", "measure_send_dropped", "measure_command_throttle", "measure_app_loop", "harness_program_toml",
    "measure_send_wake_cost", "measure_sleep_late", "measure_timer_jitter", "measure_wake_cpu", "measure_latencies",
    "measure_engine", "measure_kernel", "measure_scheduler", "experiment_slow_joiner", "experiment_termination",
    "experiment_pub_backpressure", "experiment_pub_dontwait",
    "MAX_COMMAND_DELAY_TICKS", "KERNEL_PAYLOADS", "ENGINE_PAYLOADS", "EMPIRICAL_POINTS", "SLEEP_WAITS_S", "Progress",
]
