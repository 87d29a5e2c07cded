"""Hypothesis strategies for random topologies (every socket family, transport, close,
crash and restart; proxies), shared by the conservation invariants
(tests/model/test_conservation.py) and the export round trips (tests/results/test_export.py)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

PATTERNS = {
    # (sender type, receiver type, receiver reads with reply?)
    "pubsub": ("PUB", "SUB"),
    "xpubsub": ("XPUB", "SUB"),
    "pushpull": ("PUSH", "PULL"),
    "reqrep": ("REQ", "REP"),
    "dealerrouter": ("DEALER", "ROUTER"),
    "dealerrep": ("DEALER", "REP"),
    "pair": ("PAIR", "PAIR"),
}


@st.composite
def topologies(draw) -> dict[str, Any]:
    pattern = draw(st.sampled_from(sorted(PATTERNS)))
    sender_type, receiver_type = PATTERNS[pattern]
    transport = draw(st.sampled_from(["inproc", "ipc", "tcp"]))
    n_receivers = 1 if pattern == "pair" else draw(st.integers(1, 3))
    sender_binds = draw(st.booleans()) or n_receivers > 1
    hwm = st.integers(0, 12)
    linger = st.sampled_from([-1, 0, 5, 50])
    process = "main" if transport == "inproc" else None
    endpoint = {"inproc": "inproc://e", "ipc": "ipc://e", "tcp": "tcp://127.0.0.1:7000"}[transport]
    sender = {
        "name": "s",
        "type": sender_type,
        "options": {"sndhwm": draw(hwm), "rcvhwm": draw(hwm), "linger": draw(linger)},
        "open_at_s": draw(st.sampled_from([0.0, 0.01])),
        "process": process or "ps",
    }
    if draw(st.booleans()):
        sender["close_at_s"] = sender["open_at_s"] + draw(st.floats(0.01, 0.5))
    if sender_binds:
        sender["bind"] = [endpoint]
    else:
        sender["connect"] = [endpoint]
    sockets = [sender]
    recvs = []
    for index in range(n_receivers):
        options: dict[str, Any] = {"rcvhwm": draw(hwm), "sndhwm": draw(hwm), "linger": draw(linger)}
        if receiver_type == "SUB":
            options["subscribe"] = [draw(st.sampled_from(["", "a", "b"]))]
        receiver = {
            "name": f"r{index}",
            "type": receiver_type,
            "options": options,
            "open_at_s": draw(st.sampled_from([0.0, 0.02, 0.1])),
            "process": process or f"pr{index}",
        }
        if sender_binds:
            receiver["connect"] = [endpoint]
        else:
            receiver["bind"] = [endpoint]
        if draw(st.booleans()):
            receiver["close_at_s"] = receiver["open_at_s"] + draw(st.floats(0.01, 0.5))
        sockets.append(receiver)
        if draw(st.integers(0, 3)) > 0:
            service = draw(st.sampled_from([0.0, 0.001, {"dist": "exponential", "mean_s": 0.003}]))
            recv: dict[str, Any] = {"socket": receiver["name"], "service_s": service}
            if receiver_type == "ROUTER":
                recv["reply"] = draw(st.booleans())
            if draw(st.booleans()):
                recv["pause_every_s"] = {"dist": "exponential", "mean_s": 0.05}
                recv["pause_s"] = 0.02
            recvs.append(recv)
    send: dict[str, Any] = {
        "socket": "s",
        "count": draw(st.integers(1, 150)),
        "interval_s": draw(st.sampled_from([0.0, 0.0005, {"dist": "exponential", "mean_s": 0.002}])),
        "size_bytes": draw(st.sampled_from([10, 300, 20000, {"dist": "uniform", "low_bytes": 1, "high_bytes": 9000}])),
        "dontwait": draw(st.booleans()),
        "start_s": 0.03,
    }
    if sender_type in ("PUB", "XPUB"):
        send["topic"] = ["a", "b", "c"]
    if sender_type == "PUSH" and draw(st.booleans()):
        sender["options"]["conflate"] = True
    if sender_type in ("REQ",):
        send["dontwait"] = False
    raw: dict[str, Any] = {
        "scenario": {"name": f"random-{pattern}-{transport}", "profile": draw(st.sampled_from(["default", "ideal"])), "until_s": 2.0},
        "socket": sockets,
        "send": [send],
        "recv": recvs,
    }
    processes = sorted({s["process"] for s in sockets})
    raw["process"] = [{"name": name} for name in processes]
    if process is None and draw(st.booleans()):
        raw["process"][processes.index("ps")]["exit_after_sends"] = True
    if process is None and draw(st.booleans()):
        victim = draw(st.sampled_from(processes))
        entry = raw["process"][processes.index(victim)]
        entry["crash_at_s"] = draw(st.floats(0.04, 0.3))
        if draw(st.booleans()):
            entry["restart_at_s"] = entry["crash_at_s"] + 0.2
    return raw


@st.composite
def proxied(draw) -> dict[str, Any]:
    """PUB -> XSUB | proxy | XPUB -> SUBs, or REQ/DEALER -> ROUTER | proxy | DEALER -> REPs."""
    kind = draw(st.sampled_from(["pubsub", "broker"]))
    transport = draw(st.sampled_from(["inproc", "ipc", "tcp"]))
    one = transport == "inproc"
    hwm = st.integers(0, 8)

    def ep(name: str, port: int) -> str:
        return {"inproc": f"inproc://{name}", "ipc": f"ipc://{name}", "tcp": f"tcp://127.0.0.1:{port}"}[transport]

    front, back = ep("front", 7100), ep("back", 7101)
    opts = lambda: {"sndhwm": draw(hwm), "rcvhwm": draw(hwm)}  # noqa: E731
    if kind == "pubsub":
        types = ("XSUB", "XPUB", "PUB", "SUB")
    else:
        types = ("ROUTER", "DEALER", draw(st.sampled_from(["REQ", "DEALER"])), "REP")
    sockets = [
        {"name": "front", "type": types[0], "bind": [front], "options": opts(), "process": "main" if one else "broker"},
        {"name": "back", "type": types[1], "bind": [back], "options": opts(), "process": "main" if one else "broker"},
    ]
    sends, recvs = [], []
    for i in range(draw(st.integers(1, 2))):
        sockets.append({"name": f"c{i}", "type": types[2], "connect": [front], "options": opts(), "process": "main" if one else f"c{i}",
                        "open_at_s": draw(st.sampled_from([0.0, 0.05]))})
        send = {"socket": f"c{i}", "count": draw(st.integers(1, 60)), "interval_s": draw(st.sampled_from([0.0, 0.001])), "start_s": 0.02,
                "size_bytes": draw(st.sampled_from([10, 5000]))}
        if kind == "pubsub":
            send["topic"] = ["a", "b"]
        sends.append(send)
    for i in range(draw(st.integers(1, 2))):
        options = opts()
        if kind == "pubsub":
            options["subscribe"] = [draw(st.sampled_from(["", "a"]))]
        sockets.append({"name": f"w{i}", "type": types[3], "connect": [back], "options": options, "process": "main" if one else f"w{i}",
                        "open_at_s": draw(st.sampled_from([0.0, 0.03]))})
        if draw(st.integers(0, 4)) > 0:
            recvs.append({"socket": f"w{i}", "service_s": draw(st.sampled_from([0.0, 0.002]))})
    processes = sorted({s["process"] for s in sockets})
    raw = {
        "scenario": {"name": f"proxy-{kind}-{transport}", "profile": draw(st.sampled_from(["default", "ideal"])), "until_s": 1.5},
        "process": [{"name": p} for p in processes],
        "socket": sockets,
        "proxy": [{"frontend": "front", "backend": "back"}],
        "send": sends,
        "recv": recvs,
    }
    if not one and draw(st.booleans()):
        victim = draw(st.sampled_from([p for p in processes if p != "broker"]))
        raw["process"][processes.index(victim)]["crash_at_s"] = draw(st.floats(0.05, 0.5))
    return raw
