"""Sockets scripted in SimPy (zsim.app): calls return events, block and fail like pyzmq's,
and every message goes through the ledger. The ``ideal`` profile costs no time, so every
instant below is decided by the model alone."""

from __future__ import annotations

from pathlib import Path

import pytest

import zsim
from support import scenario

ROOT = Path(__file__).resolve().parents[2]


def push_pull(sndhwm=1000, rcvhwm=1000, **push_options):
    push = {"name": "push", "type": "PUSH", "bind": "inproc://p", "options": {"sndhwm": sndhwm, **push_options}}
    pull = {"name": "pull", "type": "PULL", "connect": "inproc://p", "options": {"rcvhwm": rcvhwm}}
    return scenario(push, pull)


def test_send_and_recv_are_events_with_exact_times():
    seen = []

    def app(app):
        env, push, pull = app.env, app.socket("push"), app.socket("pull")

        def sender():
            for i in range(3):
                yield push.send(10 + i)
                yield env.timeout(0.001)

        def receiver():
            for _ in range(3):
                msg = yield pull.recv()
                seen.append((round(env.now, 9), msg.size, msg.sent_at))

        app.process(sender())
        app.process(receiver())

    summary = zsim.run(push_pull(), 0, apps=[app]).summary
    assert seen == [(0.0, 10, 0.0), (0.001, 11, 0.001), (0.002, 12, 0.002)]
    assert summary["ledger"]["delivered"] == 3 and summary["ledger"]["sent"] == 3
    assert summary["sockets"]["push"]["sent"] == 3 and summary["sockets"]["pull"]["received"] == 3


def test_recv_dontwait_on_an_empty_socket_raises_again():
    caught = []

    def app(app):
        pull = app.socket("pull")

        def receiver():
            try:
                yield pull.recv(dontwait=True)
            except zsim.Again as exc:
                caught.append(str(exc))

        app.process(receiver())

    summary = zsim.run(push_pull(), 0, apps=[app]).summary
    assert caught == ["recv on 'pull' would block"]
    assert summary["sockets"]["pull"]["recv_again"] == 1


def test_a_full_pipe_blocks_send_until_the_reader_makes_room():
    # inproc: SNDHWM 1 + RCVHWM 1 = 2 messages fit; the third send blocks until the reader
    # has read LWM messages (libzmq's activate_write)
    times = []

    def app(app):
        env, push, pull = app.env, app.socket("push"), app.socket("pull")

        def sender():
            for _ in range(3):
                yield push.send(1)
                times.append(round(env.now, 9))

        def reader():
            yield env.timeout(1.0)
            while True:
                yield pull.recv()

        app.process(sender())
        app.process(reader())

    summary = zsim.run(push_pull(sndhwm=1, rcvhwm=1), 0, apps=[app]).summary
    assert times == [0.0, 0.0, 1.0]
    assert summary["sockets"]["push"]["blocked_count"] == 1
    assert summary["sockets"]["push"]["blocked_s"] == pytest.approx(1.0)


def test_sndtimeo_ends_a_blocked_send_with_again():
    outcome = []

    def app(app):
        env, push = app.env, app.socket("push")

        def sender():
            yield push.send(1)
            yield push.send(1)
            try:
                yield push.send(1)
            except zsim.Again:
                outcome.append(round(env.now, 9))

        app.process(sender())

    zsim.run(push_pull(sndhwm=1, rcvhwm=1, sndtimeo=100), 0, apps=[app])
    assert outcome == [0.1]


def test_req_out_of_turn_is_efsm():
    raw = scenario({"name": "req", "type": "REQ", "bind": "inproc://r"}, {"name": "rep", "type": "REP", "connect": "inproc://r"})
    errors = []

    def app(app):
        req, rep = app.socket("req"), app.socket("rep")

        def client():
            try:
                yield req.recv()
            except zsim.StateError as exc:
                errors.append(str(exc))
            yield req.send(1)
            try:
                yield req.send(1)
            except zsim.StateError as exc:
                errors.append(str(exc))
            try:
                yield rep.send(1)
            except zsim.StateError as exc:
                errors.append(str(exc))

        app.process(client())

    zsim.run(raw, 0, apps=[app])
    assert [e.split(":")[0] for e in errors] == ["REQ socket 'req'", "REQ socket 'req'", "REP socket 'rep'"]


def test_a_rep_answers_an_app_dealer_only_when_it_sends_the_delimiter():
    # rep_t::xrecv skips [body] (rule no_delimiter) and answers [b"", body]; the reply
    # comes back with the delimiter, and like= carries it on.
    raw = scenario({"name": "rep", "type": "REP", "bind": "inproc://r"}, {"name": "d", "type": "DEALER", "connect": "inproc://r"})
    seen = []

    def app(app):
        rep, dealer = app.socket("rep"), app.socket("d")

        def client():
            bare = yield dealer.send(1)
            framed = yield dealer.send(2, delimiter=True)
            reply = yield dealer.recv()
            seen.append(("reply", reply.envelope, reply.delimiter))
            again = yield dealer.send(like=reply)
            seen.append(("sent", bare, framed, again))

        def worker():
            while True:
                request = yield rep.recv()
                seen.append(("request", request.id, request.size, request.delimiter))
                yield rep.send(5)

        app.process(client())
        app.process(worker())

    summary = zsim.run(raw, 0, apps=[app]).summary
    # the REP application sees the body only (rep_t::xrecv keeps the delimiter for the reply)
    assert seen == [("request", 1, 2, False), ("reply", (), True), ("request", 3, 5, False), ("sent", 0, 1, 3)]
    assert summary["ledger"]["discarded_by_rule"] == {"no_delimiter": 1}
    assert (summary["sockets"]["rep"]["received"], summary["sockets"]["rep"]["discarded"]) == (2, 1)


def test_a_rep_application_sees_the_body_only_and_its_reply_goes_back_under_the_envelope():
    """libzmq's test_spec_rep.cpp:88-90: rep_t::xrecv copies the routing ids and the
    delimiter to the reply pipe and hands the application only the body; rep_t::xsend
    puts them back in front of the reply. Over tcp the reply is as long on the wire as a
    [[recv]] reply = true REP's: 10 bytes of body + 2 + two 7-byte routing-id frames."""
    raw = scenario({"name": "rep", "type": "REP", "bind": "tcp://127.0.0.1:5600"},
                   {"name": "d", "type": "DEALER", "connect": "tcp://127.0.0.1:5600"}, until_s=1.0)
    seen = []

    def app(app):
        rep, dealer = app.socket("rep"), app.socket("d")

        def client():
            yield app.env.timeout(0.01)
            yield dealer.send(10, envelope=("X", "Y"), delimiter=True)
            reply = yield dealer.recv()
            seen.append(("reply", reply.envelope, reply.delimiter, reply.size))

        def worker():
            request = yield rep.recv()
            seen.append(("request", request.envelope, request.delimiter, request.size))
            yield rep.send(like=request)

        app.process(client())
        app.process(worker())

    summary = zsim.run(raw, 0, apps=[app]).summary
    assert seen == [("request", (), False, 10), ("reply", ("X", "Y"), True, 10)]
    assert summary["links"][0]["max_kernel_bytes"] == {"d->rep": 26, "rep->d": 26}


def test_a_call_waiting_when_its_process_exits_gets_socket_closed():
    push = {"name": "push", "type": "PUSH", "process": "a", "bind": "tcp://*:5555"}
    pull = {"name": "pull", "type": "PULL", "process": "b", "connect": "tcp://127.0.0.1:5555"}
    raw = scenario(push, pull, processes=[{"name": "a"}, {"name": "b", "exit_at_s": 0.5}])
    caught = []

    def app(app):
        pull = app.socket("pull")

        def receiver():
            try:
                yield pull.recv()
            except zsim.SocketClosed:
                caught.append(round(app.env.now, 9))

        app.process(receiver())

    zsim.run(raw, 0, apps=[app])
    assert caught == [0.5]


def test_an_exception_in_app_code_is_one_line_naming_the_app_and_the_line():
    def faulty(app):
        def body():
            yield app.env.timeout(0.1)
            return 1 / 0

        app.process(body())

    with pytest.raises(zsim.ScenarioError) as info:
        zsim.run(push_pull(), 0, apps=[faulty])
    message = str(info.value)
    assert message.startswith("app[faulty]: ZeroDivisionError: division by zero (at test_app.py:")
    assert "\n" not in message


def test_app_table_errors_name_the_field(tmp_path):
    raw = push_pull()
    raw["app"] = [{"function": "no_colon_here"}]
    with pytest.raises(zsim.ScenarioError, match=r"^app\[0\]\.function: must be 'module:function'"):
        zsim.run(raw, 0)
    raw["app"] = [{"function": "missing.py:main"}]
    with pytest.raises(zsim.ScenarioError, match=r"^app\[main\]\.function: no file"):
        zsim.run(raw, 0, allow_apps=True)
    raw["app"] = [{"function": "json:no_such_function"}]
    with pytest.raises(zsim.ScenarioError, match=r"^app\[no_such_function\]\.function: 'json' has no function"):
        zsim.run(raw, 0, allow_apps=True)


def test_the_lru_broker_example_answers_every_request():
    summary = zsim.run(ROOT / "examples" / "lru_broker.toml", 0, allow_apps=True).summary
    sockets = summary["sockets"]
    assert [sockets[f"client{i}"]["received"] for i in range(4)] == [50, 50, 50, 50]
    # every request went to a worker, and each worker announced itself once (READY)
    assert sockets["worker0"]["received"] + sockets["worker1"]["received"] == 200
    assert sockets["backend"]["received"] == 200 + 2
    assert summary["ledger"]["dropped"] == 0 and summary["ledger"]["queued_at_end"] == 0


def test_an_app_looping_at_zero_time_is_stopped_and_named():
    def spinner(app):
        pull = app.socket("pull")

        def body():
            while True:
                try:
                    yield pull.recv(dontwait=True)
                except zsim.Again:
                    pass

        app.process(body())

    with pytest.raises(zsim.ScenarioError, match=r"^app\[spinner\]: made .* socket calls at t = 0 s without simulated time"):
        zsim.run(push_pull(), 0, apps=[spinner], limits={"max_events_at_one_time": 20_000})


def test_a_call_the_socket_type_lacks_is_not_supported():
    caught = []

    def app(app):
        pull = app.socket("pull")

        def body():
            try:
                yield pull.send(1)
            except zsim.NotSupported as exc:
                caught.append(str(exc))

        app.process(body())

    zsim.run(push_pull(), 0, apps=app)  # a single function is accepted too
    assert caught == ["a PULL socket ('pull') cannot send (ENOTSUP)"]


def test_a_call_before_the_socket_opens_says_so():
    raw = push_pull()
    raw["socket"][0]["open_at_s"] = 1.0
    caught = []

    def app(app):
        def body():
            try:
                yield app.socket("push").send(1)
            except zsim.SocketClosed as exc:
                caught.append(str(exc))

        app.process(body())

    zsim.run(raw, 0, apps=[app])
    assert caught == ["socket 'push' is not open yet (it opens at open_at_s = 1 s)"]


def test_an_app_that_returns_something_else_is_told_what_to_return():
    def returns_a_number(app):
        return 42

    with pytest.raises(zsim.ScenarioError, match=r"^app\[returns_a_number\]: the function returned 42"):
        zsim.run(push_pull(), 0, apps=[returns_a_number])


def test_an_app_waiting_on_zero_timeouts_is_named_not_blamed_on_zsim():
    def idler(app):
        def body():
            while True:
                yield app.env.timeout(0)

        app.process(body())

    with pytest.raises(zsim.LimitExceeded, match=r"an app loop that waits on env.timeout\(0\).*app\[idler\]"):
        zsim.run(push_pull(), 0, apps=[idler], limits={"max_events_at_one_time": 20_000})


def test_profile_by_name_and_run_safe_take_apps():
    def app(app):
        def body():
            yield app.socket("push").send(1)

        app.process(body())

    raw = push_pull()
    raw["scenario"].pop("profile")
    assert zsim.run(raw, 0, profile="ideal", apps=[app]).summary["profile"] == "ideal"
    assert zsim.run_safe(raw, 0, profile="ideal", apps=[app])["ledger"]["sent"] == 1


def test_an_apps_calls_cost_what_its_hosts_machine_charges(tmp_path):
    # the same app on a host whose profile makes a send call 20x as dear: its sends take longer
    from zsim.profile import PROFILE_DIR

    text = (PROFILE_DIR / "default.toml").read_text()
    (tmp_path / "board.toml").write_text(text.replace("send_call_s = 1.86435e-06", "send_call_s = 3.7287e-05", 1))
    done = {}

    def app(app):
        env, push = app.env, app.socket("push")

        def sender():
            for _ in range(100):
                yield push.send(10)
            done[app.socket("push")._sock.process.host or "default"] = env.now

        app.process(sender())

    def on_host(profile):
        raw = push_pull(sndhwm=0, rcvhwm=0)
        raw["scenario"].pop("profile", None)
        raw["host"] = [{"name": "a", **({"profile": profile} if profile else {})}]
        for process in raw.get("process", []):
            process["host"] = "a"
        if "process" not in raw:
            raw["process"] = [{"name": "p", "host": "a"}]
            for sock in raw["socket"]:
                sock["process"] = "p"
        return zsim.spec.from_dict(raw, base_dir=str(tmp_path))

    zsim.run(on_host(None), 0, apps=[app])
    plain = done.pop("a")
    zsim.run(on_host("board.toml"), 0, apps=[app])
    assert done["a"] > 10 * plain > 0


def test_a_message_passed_on_like_the_received_keeps_its_size_and_topic():
    """``send(like=received)`` copies a message: a topic frame is not counted into its
    payload again at every hop (the size grew by the topic's length per hop before)."""
    sizes = []
    raw = scenario({"name": "a", "type": "PUSH", "bind": "inproc://a"},
                   {"name": "b", "type": "PULL", "connect": "inproc://a"},
                   {"name": "c", "type": "PUSH", "bind": "inproc://c"},
                   {"name": "d", "type": "PULL", "connect": "inproc://c"})

    def app(app):
        a, b, c, d = (app.socket(n) for n in "abcd")

        def relay():
            yield a.send(10, topic="AB")
            first = yield b.recv()
            yield c.send(like=first)
            second = yield d.recv()
            sizes.extend([(first.size, first.topic), (second.size, second.topic)])

        app.process(relay())

    zsim.run(raw, 0, apps=[app])
    assert sizes == [(12, "AB"), (12, "AB")]
