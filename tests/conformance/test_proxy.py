"""libzmq tests/test_proxy.cpp: an asynchronous client/server broker (zguide's asyncsrv)
through ``zmq_proxy``. Three DEALER clients with 10-byte routing ids connect over tcp to
a ROUTER frontend; ``zmq_proxy`` joins it to a DEALER backend bound on inproc; five
DEALER workers receive [routing id, request] and send 0 to 4 replies [routing id,
request], each after 1-10 ms. The replies must come back, single-frame, to the client
that sent the request. Clients and workers are apps (they read and write envelopes); the
proxy is a ``[[proxy]]``. The control PUB/SUB that stops and ends the threads is the
apps' own schedule here."""

from __future__ import annotations

from typing import Any

import zsim
from conformance.ported import endpoint, ports, run, scenario

CONTENT_SIZE = 13  # test_proxy.cpp:9: "request #NNN" and its NUL
CLIENTS, WORKERS = 3, 5  # test_proxy.cpp:13-14
#: test_proxy.cpp:75: each client's ZMQ_ROUTING_ID, "%04X-%04X" and its NUL: 10 bytes
ROUTING_IDS = ("1A2B-3C4D~", "5E6F-7081~", "92A3-B4C5~")


def broker(stop_s: float) -> dict[str, Any]:
    """What the two C tests run and observe (test_proxy.cpp:293 / test_proxy_steerable.cpp:
    360): clients send a request every 200 ms (20 polls of 10 ms, l.93) until the main
    thread says STOP at ``stop_s``; workers reply until then; everything ends 500 ms
    later. Returns what each thread saw: ``client_sends`` (client, ok), ``client_got``
    (client, Received), ``worker_got`` (Received), ``worker_sends`` (ok), and ``result``."""
    front = endpoint("tcp", "proxy_frontend")
    back = endpoint("inproc", "backend")
    sockets = [{"name": "frontend", "type": "ROUTER", "process": "server", "bind": front, "options": {"linger": 0}},
               {"name": "backend", "type": "DEALER", "process": "server", "bind": back, "options": {"linger": 0}}]
    sockets += [{"name": f"worker{w}", "type": "DEALER", "process": "server", "connect": back, "options": {"linger": 0}}
                for w in range(WORKERS)]
    sockets += [{"name": f"client{c}", "type": "DEALER", "process": f"client{c}", "connect": front,
                 "options": {"linger": 0, "routing_id": ROUTING_IDS[c]}} for c in range(CLIENTS)]
    raw = scenario(*sockets, proxies=[{"frontend": "frontend", "backend": "backend"}],
                   processes=[{"name": "server"}, *({"name": f"client{c}"} for c in range(CLIENTS))],
                   until_s=stop_s + 0.5)
    seen: dict[str, list] = {"client_sends": [], "client_got": [], "worker_got": [], "worker_sends": []}

    def app(app: zsim.App) -> None:
        env, rng = app.env, app.stream("workers")

        def client_sends(c: int) -> Any:
            sock = app.socket(f"client{c}")
            while True:
                yield env.timeout(0.2)  # 20 polls of 10 ms
                if env.now >= stop_s:
                    return
                try:
                    yield sock.send(CONTENT_SIZE)
                    seen["client_sends"].append((f"client{c}", True))
                except (zsim.Again, zsim.HostUnreachable, zsim.SocketClosed):
                    seen["client_sends"].append((f"client{c}", False))

        def client_reads(c: int) -> Any:
            sock = app.socket(f"client{c}")
            while True:
                seen["client_got"].append((f"client{c}", (yield sock.recv())))

        def worker(w: int) -> Any:
            sock = app.socket(f"worker{w}")
            while True:
                request = yield sock.recv()
                seen["worker_got"].append(request)
                if env.now >= stop_s:
                    continue
                for _ in range(int(rng.integers(0, 5))):  # rand () % 5 replies
                    yield env.timeout(int(rng.integers(1, 11)) / 1000)  # msleep (rand () % 10 + 1)
                    try:
                        yield sock.send(like=request)  # [routing id, content]
                        seen["worker_sends"].append(True)
                    except (zsim.Again, zsim.HostUnreachable, zsim.SocketClosed):
                        seen["worker_sends"].append(False)

        for c in range(CLIENTS):
            app.process(client_sends(c))
            app.process(client_reads(c))
        for w in range(WORKERS):
            app.process(worker(w))

    seen["result"] = run(raw, app)
    return seen


def replies_routed_back(seen: dict[str, Any]) -> list[tuple[str, str]]:
    """(client that received a reply, client that sent the request it answers)."""
    frame = seen["result"].messages_frame()
    origin = dict(zip(frame.msg_id, frame.origin, strict=True))
    got = frame[(frame.state == "delivered") & frame.socket.str.startswith("client")]
    return [(str(r.socket), str(origin[r.cause_id])) for r in got.itertuples()]


STOP_S = 0.5  # test_proxy.cpp:314: msleep (500), then STOP


@ports("test_proxy.cpp:100", "each reply a client receives is 13 bytes", "every reply 13 bytes", ("tcp",))
def test_proxy_client_receives_13_bytes(transport):
    seen = broker(STOP_S)
    assert seen["client_got"] and all(got.size == CONTENT_SIZE for _, got in seen["client_got"])


@ports("test_proxy.cpp:106", "each reply starts with \"request #\": it answers a request, and comes back to the "
       "client that sent it", "every reply answers a request of the client that gets it", ("tcp",))
def test_proxy_reply_routed_to_its_client(transport):
    routed = replies_routed_back(broker(STOP_S))
    assert routed and all(receiver == sender for receiver, sender in routed)


@ports("test_proxy.cpp:109", "RCVMORE is false after the reply: one frame reaches the client (the proxy and the "
       "ROUTER stripped the routing id)", "no envelope, no delimiter at the client", ("tcp",))
def test_proxy_reply_is_one_frame(transport):
    seen = broker(STOP_S)
    assert seen["client_got"] and all((got.envelope, got.delimiter) == ((), False) for _, got in seen["client_got"])


@ports("test_proxy.cpp:141", "every client send returns 13 (never fails)", "all sent", ("tcp",))
def test_proxy_client_sends_succeed(transport):
    sends = broker(STOP_S)["client_sends"]
    assert len(sends) == CLIENTS * 2 and all(ok for _, ok in sends)  # at 0.2 s and 0.4 s


@ports("test_proxy.cpp:257", "a worker receives the client's 10-byte routing id, then the 13-byte request "
       "(l.257-259)", "envelope = (the client's routing id,), 13 bytes", ("tcp",))
def test_proxy_worker_receives_routing_id_then_request(transport):
    got = broker(STOP_S)["worker_got"]
    assert len(got) == CLIENTS * 2
    assert all(len(r.envelope) == 1 and r.envelope[0] in ROUTING_IDS and r.size == CONTENT_SIZE for r in got)
    assert all(len(routing_id.encode()) == 10 for routing_id in ROUTING_IDS)


@ports("test_proxy.cpp:279", "a worker's reply frames send: routing id (10) and content (13) (l.279-281)",
       "every reply sent", ("tcp",))
def test_proxy_worker_replies_sent(transport):
    seen = broker(STOP_S)
    assert seen["worker_sends"] and all(seen["worker_sends"])
    assert len(seen["client_got"]) == len(seen["worker_sends"])  # and every one arrives
