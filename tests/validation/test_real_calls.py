"""``[[call]]``s on real pyzmq: the harness makes each call in the thread that owns its socket,
at its time (``validation.child.CallTimeline``: a blocked send or receive, a workload's wait
and the idle wait of a socket without a loop all end at the next call), and ``zsim validate``
compares the outcome with the simulation's.

The cases are those whose outcome load cannot change: every call is at least 100 ms from
the sends around it (``support``), so the counts are exact on both sides (tolerance
``exact``) unless a thread of the run stalls for that long. Marked ``real``; about 40 s.
"""

from __future__ import annotations

from typing import Any

import pytest

import zsim
from support import hwm_raised_while_connected, pull_unbinds_and_binds_again, push_disconnects_one_pull, scenario, sub_subscribes_later
from validation.compare import validate
from validation.harness import run_real
from zsim import spec

pytestmark = [pytest.mark.real, pytest.mark.timeout(180)]


def exact(raw: dict[str, Any], expected: dict[str, int]) -> Any:
    """Validate ``raw`` once with every metric of ``expected`` exact: the simulation gives
    ``expected`` and the real run agrees. The validation result."""
    raw["validation"] = {"metrics": dict.fromkeys(expected, "exact")}
    result = validate(spec.from_dict(raw), replications=1, trace_depth=False)
    assert not result.real_errors and not result.sim_errors, (result.real_errors, result.sim_errors)
    assert {m.metric: m.sim[0] for m in result.metrics} == expected
    assert {m.metric: m.real[0] for m in result.metrics} == expected
    assert all(m.verdict == "agrees" for m in result.metrics)
    return result


@pytest.mark.parametrize("transport", ["tcp", "ipc", "inproc"])
def test_a_push_that_disconnects_one_pull_sends_the_rest_to_the_other(transport):
    result = exact(push_disconnects_one_pull(transport), {"sockets.pa.received": 5, "sockets.pb.received": 15,
                                                          "sockets.push.sent": 20})
    # which messages: round robin over both before the disconnect, the second alone after
    indices = result.real_summaries[0]["real"]["indices"]
    assert indices["pa"] == {"before": [[0, 0], [2, 2], [4, 4], [6, 6], [8, 8]]}
    assert indices["pb"] == {"before": [[1, 1], [3, 3], [5, 5], [7, 7], [9, 9]], "after": [[0, 9]]}


def test_a_sub_that_subscribes_to_a_second_topic_receives_it_from_then_on():
    exact(sub_subscribes_later(), {"sockets.sub.received": 15, "sockets.pub.sent": 20})


def test_a_pull_that_unbinds_and_binds_again_gets_what_was_queued_meanwhile():
    # the bind at 0.6 s gets the port the PUSH connects to (the harness maps a [[call]]'s
    # endpoints with the sockets'): the 10 sent while nobody listened arrive after it
    result = exact(pull_unbinds_and_binds_again(), {"sockets.pull.received": 20, "sockets.push.sent": 20})
    assert result.real_summaries[0]["sockets"]["pull"]["last_recv_s"] >= 0.6
    assert len(result.real_summaries[0]["real"]["endpoints"]) == 1


@pytest.mark.parametrize("on", ["push", "pull"])
def test_an_hwm_raised_on_a_connected_inproc_socket_reaches_its_pipe(on):
    # test_sockopt_hwm.cpp:59: 5 + 1 sends before EAGAIN; the PULL has no loop: its call is
    # made by its idle thread
    exact(hwm_raised_while_connected(on), {"sockets.push.sent": 6, "sockets.push.send_again": 1})


def test_a_receive_timeout_counts_from_the_start_of_the_receive_across_calls():
    # RCVTIMEO 100 ms with a call every 50 ms: each call cuts the blocked receive, which goes
    # on with what is left of its 100 ms (restarted at each call, it would never time out).
    # A timeout is never early, so the real count is at most the simulated 10; load can only
    # make it later: at least 5 (a 100 ms timeout stretched to 200 ms)
    raw = scenario({"name": "pull", "type": "PULL", "bind": "inproc://t", "options": {"rcvtimeo": 100}},
                   {"name": "push", "type": "PUSH", "connect": "inproc://t"},
                   recvs=[{"socket": "pull"}], until_s=1.05)
    raw["call"] = [{"socket": "pull", "at_s": round(0.05 * k, 2), "set": {"linger": k}} for k in range(1, 20)]
    assert zsim.run(raw, 0).summary["sockets"]["pull"]["recv_again"] == 10
    real = run_real(spec.from_dict(raw), 0)
    assert real["real"]["errors"] == []
    assert 5 <= real["sockets"]["pull"]["recv_again"] <= 10


def test_a_call_on_a_proxy_socket_is_refused_in_one_line_before_anything_runs():
    # zmq.proxy_steerable holds both sockets in its thread: the harness cannot make calls there
    raw = scenario({"name": "front", "type": "PULL", "bind": "inproc://f"}, {"name": "back", "type": "PUSH", "bind": "inproc://b"},
                   proxies=[{"frontend": "front", "backend": "back"}])
    raw["call"] = [{"socket": "back", "at_s": 0.1, "set": {"sndhwm": 5}}]
    for attempt in (lambda: run_real(spec.from_dict(raw), 0), lambda: validate(spec.from_dict(raw), replications=1)):
        with pytest.raises(zsim.ScenarioError) as caught:
            attempt()
        assert str(caught.value).startswith("call[0] (socket back): the real-pyzmq harness runs a [[proxy]] as zmq.proxy_steerable")
        assert "\n" not in str(caught.value)
