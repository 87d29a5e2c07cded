"""Scenario validation: every mistake is one clear line naming the field and the reason."""

from __future__ import annotations

import copy

import pytest

from zsim import spec
from zsim.errors import ScenarioError, UnsupportedOption

BASE = {
    "scenario": {"name": "t"},
    "socket": [
        {"name": "pub", "type": "PUB", "bind": ["tcp://*:5555"], "options": {"sndhwm": 10}},
        {"name": "sub", "type": "SUB", "connect": ["tcp://127.0.0.1:5555"], "options": {"subscribe": [""]}},
    ],
    "send": [{"socket": "pub", "count": 10}],
    "recv": [{"socket": "sub"}],
}


def broken(mutate) -> dict:
    raw = copy.deepcopy(BASE)
    mutate(raw)
    return raw


def error_of(raw) -> str:
    with pytest.raises(ScenarioError) as info:
        spec.from_dict(raw)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_valid_scenario_loads_with_libzmq_defaults():
    scenario = spec.from_dict(BASE)
    sub = scenario.socket("sub")
    assert sub.options.rcvhwm == 1000 and sub.options.linger == -1 and sub.options.sndtimeo == -1
    assert sub.options.reconnect_ivl == 100 and not sub.options.immediate
    assert scenario.socket("pub").options.sndhwm == 10
    assert [p.name for p in scenario.processes] == ["main"]
    assert scenario.sends[0].name == "send.pub"


def test_hwm_sets_both_like_pyzmq_property():
    raw = broken(lambda r: r["socket"][1].__setitem__("options", {"hwm": 7, "subscribe": [""]}))
    options = spec.from_dict(raw).socket("sub").options
    assert (options.sndhwm, options.rcvhwm) == (7, 7)


@pytest.mark.parametrize(
    "mutate,expected",
    [
        (lambda r: r["socket"][0].__setitem__("type", "PUBLISHER"), "socket[pub].type: unknown socket type 'PUBLISHER'"),
        (lambda r: r["socket"][0]["options"].__setitem__("sndhwm", -5), "socket[pub].options.sndhwm: must be >= 0, got -5"),
        (lambda r: r["socket"][0]["options"].__setitem__("handshake_ivl", 10),
         "socket[pub].options.handshake_ivl: is a ZeroMQ option that zsim does not model"),
        (lambda r: r["socket"][0]["options"].__setitem__("sndhmw", 10),
         "socket[pub].options.sndhmw: unknown socket option (did you mean 'sndhwm'?)"),
        (lambda r: r["socket"][0]["options"].__setitem__("HWM", 10), "socket[pub].options.HWM: option names are pyzmq's lowercase names"),
        (lambda r: r["socket"][0]["options"].__setitem__("xpub_manual_last_value", True),
         "socket[pub].options.xpub_manual_last_value: is in libzmq 4.3.5's draft API (a release build takes it anyway); zsim does "
         "not model it"),
        (lambda r: r["socket"][0]["options"].__setitem__("router_notify", 3),
         "socket[pub].options.router_notify: is in libzmq 4.3.5's draft API (a release build, as in pyzmq's wheels, refuses it "
         "with EINVAL); zsim does not model it"),
        (lambda r: r["socket"][0]["options"].__setitem__("xpub_manual", True),
         "socket[pub].options.xpub_manual: applies to XPUB sockets only, this is a PUB"),
        (lambda r: r["socket"][0]["options"].__setitem__("invert_matching", "yes"),
         "socket[pub].options.invert_matching: must be true or false, got 'yes'"),
        (lambda r: r["socket"][1]["options"].__setitem__("req_relaxed", True),
         "socket[sub].options.req_relaxed: applies to REQ sockets only, this is a SUB"),
        (lambda r: r["socket"][1]["options"].__setitem__("probe_router", True),
         "socket[sub].options.probe_router: applies to DEALER and REQ and ROUTER sockets only, this is a SUB"),
        (lambda r: r["socket"][1]["options"].__setitem__("connect_routing_id", "x"),
         "socket[sub].options.connect_routing_id: applies to ROUTER sockets only, this is a SUB"),
        (lambda r: r["socket"][1].__setitem__("connect", ["tcp://127.0.0.1:6000"]),
         "socket[sub].connect[0]: nobody binds tcp://127.0.0.1:6000"),
        (lambda r: r["socket"][1].__setitem__("bind", ["tcp://*:5555"]) or r["socket"][1].pop("connect"),
         "socket[sub].bind[0]: tcp://*:5555 is already bound by socket 'pub' (EADDRINUSE)"),
        (lambda r: r["socket"][0].__setitem__("process", "ghost"), "socket[pub].process: unknown process 'ghost'"),
        (lambda r: r["socket"][1].__setitem__("name", "pub"), "socket[pub].name: duplicate socket name 'pub'"),
        (lambda r: r["send"][0].__setitem__("socket", "sub"), "send[sub].socket: a SUB socket cannot send application messages"),
        (lambda r: r["recv"][0].__setitem__("socket", "pub"), "recv[pub].socket: a PUB socket cannot receive"),
        (lambda r: r["send"][0].__setitem__("interval_s", {"dist": "exponential", "mean_ms": 1}),
         "send[pub].interval_s.mean_ms: not a parameter of a exponential distribution"),
        (lambda r: r["send"][0].__setitem__("interval_s", {"dist": "poisson", "mean_s": 1}),
         "send[pub].interval_s.dist: unknown distribution 'poisson'"),
        (lambda r: r["send"][0].__setitem__("size_bytes", {"dist": "uniform", "low_s": 1, "high_s": 2}), "use the '_bytes' suffix"),
        (lambda r: r["send"][0].pop("count"), "send[pub]: needs count or duration_s"),
        (lambda r: r["send"][0].__setitem__("on_again", "retry"), "send[pub].on_again: must be 'skip' or 'stop'"),
        (lambda r: r["socket"][0].__setitem__("bind", ["udp://*:1"]), "socket[pub].bind[0]: transport 'udp' is not modelled"),
        (lambda r: r["socket"][0].__setitem__("bind", ["tcp://*:*"]), "needs a fixed port number"),
        (lambda r: r["socket"][0].__setitem__("colour", "red"), "socket[pub].colour: unknown field"),
        (lambda r: r["scenario"].__setitem__("until", 5), "scenario.until: unknown field (did you mean 'until_s'?)"),
        (lambda r: r["socket"][0]["options"].__setitem__("conflate", True) or r["socket"][0].__setitem__("type", "XPUB"),
         "socket[pub].options.conflate: has no effect on XPUB"),
        (lambda r: r["socket"][0]["options"].__setitem__("subscribe", ["a"]),
         "socket[pub].options.subscribe: only SUB and XSUB sockets subscribe"),
        (lambda r: r["socket"][0].__setitem__("close_at_s", -1), "socket[pub].close_at_s: must be >= 0"),
    ],
)
def test_bad_input_names_the_field_and_the_reason(mutate, expected):
    assert expected in error_of(broken(mutate))


def test_unmodelled_option_is_its_own_error_type():
    with pytest.raises(UnsupportedOption):
        spec.from_dict(broken(lambda r: r["socket"][0]["options"].__setitem__("handshake_ivl", 100)))


def test_inproc_across_processes_is_rejected():
    raw = {
        "process": [{"name": "a"}, {"name": "b"}],
        "socket": [
            {"name": "x", "type": "PUSH", "process": "a", "bind": ["inproc://q"]},
            {"name": "y", "type": "PULL", "process": "b", "connect": ["inproc://q"]},
        ],
    }
    assert "inproc works only inside one process" in error_of(raw)


def test_toml_syntax_error_has_a_line_number(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[scenario]\nname = "x"\n[[socket]\nname = "a"\n')
    with pytest.raises(ScenarioError) as info:
        spec.load(path)
    assert "TOML syntax error" in str(info.value) and "line 3" in str(info.value)


def test_missing_file():
    with pytest.raises(ScenarioError, match="no such file"):
        spec.load("/nonexistent/scenario.toml")


def test_set_path_selects_entries_by_name_and_socket():
    raw = copy.deepcopy(BASE)
    spec.set_path(raw, "socket.pub.options.sndhwm", 99)
    spec.set_path(raw, "send.pub.rate_per_s", 50)
    spec.set_path(raw, "recv.sub.service_s", {"dist": "exponential", "mean_s": 0.01})
    spec.set_path(raw, "scenario.until_s", 3.0)
    scenario = spec.from_dict(raw)
    assert scenario.socket("pub").options.sndhwm == 99
    assert scenario.sends[0].interval.mean == pytest.approx(0.02)
    assert scenario.recvs[0].service.mean == 0.01
    assert scenario.until_s == 3.0
    with pytest.raises(ScenarioError, match="no \\[\\[socket\\]\\] entry named 'nope'"):
        spec.set_path(raw, "socket.nope.options.sndhwm", 1)
    with pytest.raises(ScenarioError, match="unknown section"):
        spec.set_path(raw, "sockets.pub.options.sndhwm", 1)


def test_digest_is_stable_and_content_based():
    a = spec.from_dict(BASE)
    b = spec.from_dict(copy.deepcopy(BASE))
    assert a.digest == b.digest
    c = spec.from_dict(broken(lambda r: r["socket"][0]["options"].__setitem__("sndhwm", 11)))
    assert c.digest != a.digest
