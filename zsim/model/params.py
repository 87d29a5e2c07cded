"""Timing and buffer parameters the model needs, already resolved from a profile.

``build`` turns a calibration profile (``zsim.profile``) into these plain objects; the
model never reads files. Distributions are ``zsim.distributions.Distribution`` values that
each connection samples with its own random stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..distributions import Distribution

#: kernel_capacity(wire_bytes_of_message, sndbuf_option, rcvbuf_option) -> bytes in flight
CapacityFn = Callable[[int, int, int], int]


def _zero() -> Distribution:
    return Distribution.constant(0.0)


def _unbounded(_wire: int, _sndbuf: int, _rcvbuf: int) -> int:
    return 1 << 40


@dataclass
class TransportParams:
    """One transport (tcp or ipc; inproc uses only the API costs)."""

    handshake: Distribution = field(default_factory=_zero)  # connect() -> both engines ready
    hop_latency: Distribution = field(default_factory=_zero)  # engine write -> peer engine POLLIN
    engine_s_per_msg: float = 0.0
    engine_s_per_byte: float = 0.0
    io_wakeup_s: float = 0.0  # I/O thread reaction to a command
    kernel_capacity: CapacityFn = _unbounded
    hup_loses_kernel_data: bool = False  # ipc: EPOLLHUP on a stopped engine (section 7.3)


@dataclass
class ModelParams:
    send_call_s: float = 0.0
    recv_call_s: float = 0.0
    command_throttle_s: float = 0.0
    transports: dict[str, TransportParams] = field(default_factory=dict)
    profile_name: str = "ideal"

    def transport(self, name: str) -> TransportParams:
        params = self.transports.get(name)
        if params is None:
            params = TransportParams(hup_loses_kernel_data=(name == "ipc"))
            self.transports[name] = params
        return params
