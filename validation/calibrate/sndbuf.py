"""``[tcp] sndbuf_per_segment_bytes``: what this kernel charges an autotuned TCP send buffer
per segment of the window (``zsim.model.transport.network``, "Buffers" in docs/model.md).

Linux sizes a send buffer nobody fixed with ``tcp_sndbuf_expand`` (``net/ipv4/tcp_input.c``)::

    per_mss = roundup_pow_of_two(max(mss_clamp, mss_cache) + MAX_TCP_HEADER
                                 + SKB_DATA_ALIGN(sizeof(struct skb_shared_info)))
              + SKB_DATA_ALIGN(sizeof(struct sk_buff))
    sk_sndbuf = max(sk_sndbuf, factor x max(TCP_INIT_CWND, cwnd, reordering + 1) x per_mss)

``factor`` is 2, or the congestion control's ``sndbuf_expand`` hook (BBR's gives 3; CUBIC and
Reno have none). ``MAX_TCP_HEADER`` and the two structures' sizes depend on the kernel's
configuration: 2,048 + 256 = 2,304 bytes for a 1,460-byte MSS on a minimal config,
4,096 + 256 = 4,352 on distributions' kernels. It runs when a connection is established
(``tcp_init_transfer`` -> ``tcp_init_buffer_space``), so ``SO_SNDBUF`` read right after
``connect()`` returns is ``max(tcp_wmem[1], factor x segments x per_mss)``, ``sk_sndbuf`` itself
(``sk_getsockopt`` does not halve it).

The measurement, without root and in well under a millisecond: a loopback connection whose
connecting socket, before ``connect()``, asks for Reno (``TCP_CONGESTION``; Reno is always
allowed, ``TCP_CONG_NON_RESTRICTED``, and its factor is CUBIC's, 2, which the model and the
validation's links use, where the machine's default may be BBR's 3) and clamps its MSS at
1,460 bytes (``TCP_MAXSEG``: a 1,500-byte MTU less IPv4 and TCP headers, the MSS option a SYN
carries on Ethernet; the kernel then sends 1,448-byte segments with timestamps, as over a
``[[link]]``); the window's segments come from ``TCP_INFO`` (``tcpi_snd_cwnd``,
``tcpi_reordering``: 10 and 3 unless a route says ``initcwnd``). On the machine that ships
the default profile (Linux 6.18, BBR its default): ``SO_SNDBUF`` = 46,080 = 2 x 10 x 2,304
with Reno or CUBIC, 69,120 = 3 x 10 x 2,304 with BBR, and 87,040 = 2 x 10 x 4,352 once the
clamp passes 1,500 bytes (the power of two doubles), measured 2026-12-07. Over a real
link (a veth pair shaped by tbf to 20 Mbit/s, CUBIC, a PUB offering 40 Mbit/s: the case of
tests/validation/test_links.py) ``ss -tmi`` on the sender showed the same charge as the window
grew: ``tb`` 525,312 = 2 x 114 segments x 2,304 at its largest ``cwnd`` of 114.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from zsim.errors import EnvironmentFault

#: a 1,500-byte MTU less the IPv4 and TCP headers (no options): the MSS a SYN advertises on Ethernet
LINK_MSS_CLAMP = 1460
#: ``TCP_INIT_CWND`` (``include/net/tcp.h``)
TCP_INIT_CWND = 10
#: no ``sndbuf_expand`` hook: ``tcp_sndbuf_expand``'s own factor ("Cubic needs 1.7 factor, rounded to 2")
RENO_FACTOR = 2
#: ``struct tcp_info`` (``include/uapi/linux/tcp.h``): eight one-byte fields, then 32-bit ones;
#: ``tcpi_snd_cwnd`` and ``tcpi_reordering`` are the 19th and 21st of those
_TCP_INFO_HEAD = struct.Struct("8B21I")
_SND_CWND, _REORDERING = 8 + 18, 8 + 20
TCP_WMEM = "/proc/sys/net/ipv4/tcp_wmem"


def tcp_wmem_default() -> int:
    """``net.ipv4.tcp_wmem``'s middle value: a new socket's ``sk_sndbuf``."""
    try:
        with open(TCP_WMEM) as file:
            return int(file.read().split()[1])
    except (OSError, ValueError, IndexError) as exc:
        raise EnvironmentFault(TCP_WMEM, f"cannot read the default send buffer: {exc}") from None


def measure_sndbuf_per_segment() -> dict[str, Any]:
    """``tcp_sndbuf_expand``'s ``per_mss`` on this kernel, and what it was derived from.

    ``EnvironmentFault`` (one line) if a socket call fails, or if what Linux set cannot be
    ``tcp_sndbuf_expand``'s (``tcp_wmem[1]`` at least as large hides it, or it is not a
    whole multiple of the segments)."""
    wmem_default = tcp_wmem_default()
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener, \
                socket.socket(socket.AF_INET, socket.SOCK_STREAM) as client:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"reno")
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, LINK_MSS_CLAMP)
            client.connect(listener.getsockname())
            sndbuf = client.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
            mss = client.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG)
            info = _TCP_INFO_HEAD.unpack(client.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_HEAD.size))
            accepted, _ = listener.accept()
            accepted.close()
    except OSError as exc:
        raise EnvironmentFault("calibrate [tcp] sndbuf_per_segment_bytes", f"a loopback connection failed: {exc}") from None
    segments = max(TCP_INIT_CWND, info[_SND_CWND], info[_REORDERING] + 1)
    where = "calibrate [tcp] sndbuf_per_segment_bytes"
    if sndbuf <= wmem_default:
        raise EnvironmentFault(where, f"SO_SNDBUF after connect is {sndbuf:,} bytes, not above tcp_wmem's default "
                                      f"{wmem_default:,}: the autotuned size is hidden (lower tcp_wmem's middle value)")
    if sndbuf % (RENO_FACTOR * segments):
        raise EnvironmentFault(where, f"SO_SNDBUF after connect is {sndbuf:,} bytes, not {RENO_FACTOR} x {segments} "
                                      "segments of whole bytes: not tcp_sndbuf_expand's")
    return {"sndbuf_per_segment_bytes": sndbuf // (RENO_FACTOR * segments), "so_sndbuf": sndbuf, "segments": segments,
            "mss": mss, "tcp_wmem_default": wmem_default}
