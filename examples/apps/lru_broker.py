"""The zguide's load-balancing broker (chapter 3, "lbbroker"), as SimPy code on zsim sockets.

Clients (REQ) send requests to the broker's frontend ROUTER; workers (REQ) announce
themselves with READY on the backend ROUTER and then get one request at a time. The
broker keeps a queue of idle workers, polls the backend always and the frontend only while
a worker is idle, and routes each reply back to its client by the envelope. Run it with
``zsim run --allow-apps examples/lru_broker.toml`` (zsim runs a scenario's code only when
asked: docs/safety.md); the scenario file declares the sockets, this file the logic the
scenario format cannot express. See docs/api.md.
"""

from __future__ import annotations

from collections import deque

CLIENTS = 4
WORKERS = 2
REQUESTS_PER_CLIENT = 50


def broker(app):
    front, back = app.socket("frontend"), app.socket("backend")
    env = app.env

    def loop():
        idle = deque()  # worker routing ids, least recently used first
        while True:
            polls = [back.poll()] + ([front.poll()] if idle else [])
            yield env.any_of(polls)
            if back.readable():
                msg = yield back.recv()
                worker, route = msg.envelope[0], msg.envelope[1:]
                idle.append(worker)
                if route:  # a reply (not READY): back to the client it names
                    yield front.send(like=msg, envelope=route)
            if idle and front.readable():
                request = yield front.recv()
                yield back.send(like=request, envelope=(idle.popleft(),) + request.envelope)

    app.process(loop())


def workers(app):
    env = app.env
    rng = app.stream("service")

    def worker(sock):
        yield sock.send(5)  # READY
        while True:
            request = yield sock.recv()
            yield env.timeout(rng.exponential(0.002))  # the work: 2 ms on average
            yield sock.send(like=request, size=200)  # the reply, to the client in the envelope

    for i in range(WORKERS):
        app.process(worker(app.socket(f"worker{i}")))


def clients(app):
    env = app.env

    def client(sock):
        for _ in range(REQUESTS_PER_CLIENT):
            yield sock.send(100)
            yield sock.recv()
            yield env.timeout(0.001)

    for i in range(CLIENTS):
        app.process(client(app.socket(f"client{i}")))
