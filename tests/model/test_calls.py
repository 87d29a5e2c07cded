"""The application's blocking calls, written once (``zsim.model.appthread``): every
blocking send, recv and poll of ``[[send]]``, ``[[recv]]``, a stage's ``forward_to``, a
``[[proxy]]`` and an ``[[app]]`` honours SNDTIMEO/RCVTIMEO as ``socket_base_t::send``/
``recv`` do (EAGAIN when it expires, counted as ``send_again``/``recv_again``, the blocked
time in ``blocked_s``), and a REQ/REP out of turn gets EFSM.

Before the layer existed, a REQ's wait for its reply and a stage's blocked forward ignored
their timeouts (issue 40, finding 2): these tests fail on b623754.
"""

from __future__ import annotations

import pytest

import zsim
from support import run, scenario


def _req_to_silent_rep(on_timeout: str | None) -> dict:
    send = {"socket": "req", "count": 3, "size_bytes": 10}
    if on_timeout is not None:
        send["on_timeout"] = on_timeout
    # the REP is bound and connected, but no thread ever reads it: no reply comes
    return scenario(
        {"name": "rep", "type": "REP", "bind": "inproc://r"},
        {"name": "req", "type": "REQ", "connect": "inproc://r", "options": {"rcvtimeo": 100}},
        sends=[send], until_s=1.05)


def test_req_reply_wait_times_out_every_rcvtimeo_and_retries():
    """pyzmq: ``req.send(); req.recv()`` with RCVTIMEO 100 raises Again after 100 ms; a
    loop that retries the recv gets Again every 100 ms: 10 times in 1.05 s."""
    summary = run(_req_to_silent_rep(None))
    assert summary["sockets"]["req"]["recv_again"] == 10
    sender = summary["senders"]["send.req"]
    assert sender["reply_timeouts"] == 10
    assert sender["sent"] == 1  # a REQ cannot send again before its reply


def test_req_reply_timeout_stop_ends_the_sender_at_the_timeout():
    summary = run(_req_to_silent_rep("stop"))
    sender = summary["senders"]["send.req"]
    assert summary["sockets"]["req"]["recv_again"] == 1
    assert sender["reply_timeouts"] == 1
    assert sender["finished_at_s"] == pytest.approx(0.1)


def test_on_timeout_on_a_sender_that_waits_for_no_reply_is_refused():
    raw = scenario({"name": "pull", "type": "PULL", "bind": "inproc://p"},
                   {"name": "push", "type": "PUSH", "connect": "inproc://p"},
                   sends=[{"socket": "push", "count": 1, "on_timeout": "stop"}])
    with pytest.raises(zsim.ScenarioError, match=r"send\[push\].on_timeout: says what a REQ does"):
        zsim.run(raw, 1)


def _stage(sndtimeo: int) -> dict:
    """source PUSH -> stage PULL, whose [[recv]] forwards each task to a PUSH (SNDHWM 1)
    into a PULL that nobody reads (inproc: the pipe holds SNDHWM + RCVHWM = 2)."""
    return scenario(
        {"name": "source", "type": "PUSH", "bind": "inproc://tasks"},
        {"name": "stage", "type": "PULL", "connect": "inproc://tasks"},
        {"name": "out", "type": "PUSH", "bind": "inproc://results", "options": {"sndhwm": 1, "sndtimeo": sndtimeo}},
        {"name": "stalled", "type": "PULL", "connect": "inproc://results", "options": {"rcvhwm": 1}},
        sends=[{"socket": "source", "count": 10, "size_bytes": 10}],
        recvs=[{"socket": "stage", "forward_to": "out"}],
        until_s=1.0)


def test_stage_forward_honours_sndtimeo():
    """A worker loop ``result = work(pull.recv()); push.send(result)`` with SNDTIMEO 50
    into a stalled PULL: two results fit, each later send returns Again after 50 ms."""
    summary = run(_stage(50))
    out = summary["sockets"]["out"]
    assert out["sent"] == 2
    assert out["send_again"] == 8
    assert out["blocked_s"] == pytest.approx(8 * 0.050)
    assert summary["receivers"]["recv.stage"]["received"] == 10


def test_stage_forward_without_timeout_blocks_until_the_horizon():
    summary = run(_stage(-1))
    out = summary["sockets"]["out"]
    assert (out["sent"], out["send_again"]) == (2, 0)
    assert summary["receivers"]["recv.stage"]["received"] == 3  # blocked on the third result
    assert out["blocked_s"] == pytest.approx(1.0)


def test_proxy_ends_when_its_send_times_out():
    """``zmq_proxy``'s send is blocking: when the backend's SNDTIMEO expires it returns -1
    (src/proxy.cpp ``forward``), the message it held is closed: the proxy is over."""
    raw = scenario(
        {"name": "source", "type": "PUSH", "bind": "inproc://in"},
        {"name": "front", "type": "PULL", "connect": "inproc://in"},
        {"name": "back", "type": "PUSH", "bind": "inproc://out", "options": {"sndhwm": 1, "sndtimeo": 50}},
        {"name": "sink", "type": "PULL", "connect": "inproc://out", "options": {"rcvhwm": 1}},
        sends=[{"socket": "source", "count": 5, "size_bytes": 10}],
        proxies=[{"frontend": "front", "backend": "back"}],
        until_s=1.0)
    result = zsim.run(raw, 1)
    summary = result.summary
    (proxy,) = summary["proxies"].values()
    assert proxy["failed"] == "EAGAIN"
    assert proxy["failed_at_s"] == pytest.approx(0.050)
    assert proxy["forwarded"] == 3  # two fit the sink's pipe, the third's send failed
    assert summary["sockets"]["back"]["send_again"] == 1
    assert summary["ledger"]["dropped_by_rule"] == {"send_failed": 1}
