"""pyzmq-compatible names and libzmq 4.3.5 defaults.

Option names are the ones pyzmq uses (``sock.sndhwm``; socket types are in ``zsim.socket_types``),
option values use pyzmq's units (milliseconds for ``linger``, ``sndtimeo``,
``reconnect_ivl``; bytes for ``sndbuf``). Defaults are libzmq 4.3.5's
(``options_t::options_t`` in libzmq's ``src/options.cpp``, ``socket_base_t::socket_base_t``
in ``src/socket_base.cpp``).
"""

from __future__ import annotations

TRANSPORTS = ("inproc", "ipc", "tcp")

#: Defaults of every option zsim models (libzmq 4.3.5, context BLOCKY=true so LINGER=-1).
OPTION_DEFAULTS: dict[str, object] = {
    "sndhwm": 1000,
    "rcvhwm": 1000,
    "linger": -1,
    "sndtimeo": -1,
    "rcvtimeo": -1,
    "subscribe": (),
    "immediate": False,
    "conflate": False,
    "router_mandatory": False,
    "xpub_nodrop": False,
    "sndbuf": -1,
    "rcvbuf": -1,
    "reconnect_ivl": 100,
    "reconnect_ivl_max": 0,
    "routing_id": None,
}

#: Options that exist in ZeroMQ and that users sometimes set, which zsim does not model.
#: Naming one gives a clear "not modelled" error instead of "unknown option".
KNOWN_UNMODELLED_OPTIONS = frozenset(
    {
        "affinity",
        "backlog",
        "connect_timeout",
        "handshake_ivl",
        "heartbeat_ivl",
        "heartbeat_timeout",
        "heartbeat_ttl",
        "ipv6",
        "maxmsgsize",
        "multicast_hops",
        "probe_router",
        "rate",
        "recovery_ivl",
        "req_correlate",
        "req_relaxed",
        "router_handover",
        "tcp_keepalive",
        "tcp_keepalive_cnt",
        "tcp_keepalive_idle",
        "tcp_keepalive_intvl",
        "tcp_maxrt",
        "tos",
        "unsubscribe",
        "xpub_manual",
        "xpub_verbose",
        "xpub_verboser",
        "xpub_welcome_msg",
        "zap_domain",
        "plain_server",
        "curve_server",
        "stream_notify",
        "invert_matching",
        "in_batch_size",
        "out_batch_size",
    }
)

#: libzmq internal constants (``src/config.hpp``, ``options_t``).
IN_BATCH_SIZE = 8192
OUT_BATCH_SIZE = 8192
INBOUND_POLL_RATE = 100
#: ZMTP v2/v3 frame header: 1 flags byte + 1 size byte up to 255 bytes, else 1 + 8.
SHORT_FRAME_HEADER = 2
LONG_FRAME_HEADER = 9
SHORT_FRAME_MAX = 255


def frame_wire_bytes(payload: int) -> int:
    """Bytes one frame of ``payload`` bytes occupies on a ZMTP stream (``v2_encoder_t``)."""
    return payload + (SHORT_FRAME_HEADER if payload <= SHORT_FRAME_MAX else LONG_FRAME_HEADER)


def compute_lwm(hwm: int) -> int:
    """Low-water mark of a pipe direction: ``pipe_t::compute_lwm`` in libzmq >= 4.2.

    ``(hwm + 1) // 2``; an unlimited pipe (hwm <= 0) never reports progress.
    """
    if hwm <= 0:
        return 0
    return (hwm + 1) // 2
