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
    "xpub_verbose": False,
    "xpub_verboser": False,
    "xpub_manual": False,
    "invert_matching": False,
    "router_handover": False,
    "probe_router": False,
    "connect_routing_id": None,
    "req_relaxed": False,
    "req_correlate": False,
    "heartbeat_ivl": 0,
    "heartbeat_timeout": -1,
    "heartbeat_ttl": 0,
    "tcp_keepalive": -1,
    "tcp_keepalive_idle": -1,
    "tcp_keepalive_intvl": -1,
    "tcp_keepalive_cnt": -1,
}

#: Options that exist in ZeroMQ and that users sometimes set, which zsim does not model.
#: Naming one gives a clear "not modelled" error instead of "unknown option".
KNOWN_UNMODELLED_OPTIONS = frozenset(
    {
        "affinity",
        "backlog",
        "connect_timeout",
        "handshake_ivl",
        "ipv6",
        "maxmsgsize",
        "multicast_hops",
        "rate",
        "recovery_ivl",
        "tcp_maxrt",
        "tos",
        "unsubscribe",
        "xpub_welcome_msg",
        "zap_domain",
        "plain_server",
        "curve_server",
        "stream_notify",
    }
)

#: Options of libzmq 4.3.5's draft API (``zmq.h``, ``#ifdef ZMQ_BUILD_DRAFT_API``), which zsim
#: does not model. A release build (pyzmq's wheels) refuses most with EINVAL; it takes those
#: its source handles without an ``#ifdef`` (``DRAFT_OPTIONS_TAKEN``: ``xpub_t::xsetsockopt``'s
#: XPUB_MANUAL_LAST_VALUE and ONLY_FIRST_SUBSCRIBE, and a few of ``options_t``'s), measured on
#: pyzmq 27.3.0 with libzmq 4.3.5.
DRAFT_OPTIONS = frozenset(
    {
        "zap_enforce_domain",
        "loopback_fastpath",
        "metadata",
        "multicast_loop",
        "router_notify",
        "xpub_manual_last_value",
        "socks_username",
        "socks_password",
        "in_batch_size",
        "out_batch_size",
        "only_first_subscribe",
        "reconnect_stop",
        "hello_msg",
        "disconnect_msg",
        "priority",
        "busy_poll",
        "hiccup_msg",
        "xsub_verbose_unsubscribe",
        "topics_count",
    }
)
DRAFT_OPTIONS_TAKEN = frozenset(
    {"zap_enforce_domain", "loopback_fastpath", "metadata", "multicast_loop", "xpub_manual_last_value", "socks_username",
     "socks_password", "only_first_subscribe", "reconnect_stop"}
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
