"""Causal links (issue 30 item 1): a reply carries its request's id, a pipeline stage's
result its task's, and the run's results rebuild request -> reply (``rtt.<socket>``) and
source -> sink (``e2e.<source>-><sink>``) times from them. Exact where the ``ideal``
profile makes every time cost zero: the times are the service times."""

from __future__ import annotations

import numpy as np
import pytest

import zsim
from zsim.metrics import label as metric_label
from zsim.metrics import preference


def req_rep(service_s: float, count: int = 20) -> dict:
    return {
        "scenario": {"name": "rr", "profile": "ideal"},
        "socket": [{"name": "req", "type": "REQ", "connect": ["inproc://rr"]},
                   {"name": "rep", "type": "REP", "bind": ["inproc://rr"]}],
        "send": [{"socket": "req", "count": count, "size_bytes": 10, "start_s": 0.01}],
        "recv": [{"socket": "rep", "service_s": service_s, "reply_size_bytes": 5}],
    }


def pipeline(workers: int, tasks: int, task_s: float) -> dict:
    """A ventilator deals ``tasks`` at once to ``workers`` PULL -> PUSH stages of ``task_s``
    each; a sink collects the results."""
    return {
        "scenario": {"name": "pipe", "profile": "ideal"},
        "process": [{"name": "ventilator"}, {"name": "worker{i+1}", "count": workers}],
        "socket": [{"name": "vent", "type": "PUSH", "process": "ventilator", "bind": ["tcp://127.0.0.1:5557"]},
                   {"name": "sink", "type": "PULL", "process": "ventilator", "bind": ["tcp://127.0.0.1:5558"]},
                   {"name": "w{i+1}_in", "type": "PULL", "process": "worker", "connect": ["tcp://127.0.0.1:5557"]},
                   {"name": "w{i+1}_out", "type": "PUSH", "process": "worker", "connect": ["tcp://127.0.0.1:5558"]}],
        "send": [{"socket": "vent", "count": tasks, "size_bytes": 10, "start_s": 0.01}],
        "recv": [{"socket": "w_in", "forward_to": "w_out", "service_s": task_s},
                 {"socket": "sink", "service_s": 0.0}],
    }


def test_a_req_round_trip_is_the_rep_s_service_time_and_the_same_as_the_sender_s():
    result = zsim.run(req_rep(0.002), 0)
    rtt = result.summary["sockets"]["req"]["rtt_s"]
    assert rtt["count"] == 20
    assert rtt["p50"] == pytest.approx(0.002, abs=1e-12) and rtt["max"] == pytest.approx(0.002, abs=1e-12)
    assert rtt == result.summary["senders"]["send.req"]["rtt_s"]
    row = result.flat()
    assert row["rtt.req.count"] == 20 and row["rtt.req.p99_s"] == pytest.approx(0.002, abs=1e-12)
    assert "rtt_s" not in result.summary["sockets"]["rep"] and not any(k.startswith("e2e.") for k in row)


def test_a_pipeline_s_task_to_result_time_is_exact():
    # 6 tasks dealt round robin to 3 workers of 5 ms: each worker's first result 5 ms after
    # the tasks were sent, its second 10 ms
    result = zsim.run(pipeline(3, 6, 0.005), 0)
    row = result.flat()
    assert row["e2e.vent->sink.count"] == 6
    times = sorted(result.messages_frame().query("socket == 'sink' and state == 'delivered'")["end_s"] - 0.01)
    assert np.allclose(times, [0.005] * 3 + [0.010] * 3)
    assert row["e2e.vent->sink.p50_s"] == pytest.approx(np.percentile([0.005] * 3 + [0.010] * 3, 50))
    assert row["e2e.vent->sink.max_s"] == pytest.approx(0.010)
    # the sink's own latency is the hop from the worker: zero here, where no time costs anything
    assert row["socket.sink.latency_max_s"] == pytest.approx(0.0, abs=1e-12)


def test_the_ledger_links_each_reply_to_its_request():
    frame = zsim.run(req_rep(0.001, count=5), 0).messages_frame()
    requests = frame[frame["socket"] == "rep"]
    replies = frame[frame["socket"] == "req"]
    assert (requests["cause_id"] == -1).all() and len(replies) == 5
    assert list(replies["cause_id"]) == list(requests["msg_id"])
    # a reply is sent after its request: the round trip is the reply's end less the request's send
    joined = replies.merge(requests, left_on="cause_id", right_on="msg_id", suffixes=("", "_request"))
    assert np.allclose(joined["end_s"] - joined["sent_s_request"], 0.001)


def test_round_trips_through_a_broker_and_from_a_router_to_dealer_workers():
    # examples/broker.toml: REQ clients -> ROUTER/DEALER proxy -> REP workers; the round
    # trip is measured at the clients, through the proxy
    row = zsim.run("examples/broker.toml", 0).flat()
    summary_clients = [k for k in row if k.startswith("rtt.") and k.endswith(".count")]
    assert summary_clients == ["rtt.client1.count", "rtt.client2.count"]
    assert row["rtt.client1.count"] == 50 and row["rtt.client1.p50_s"] > 0


def test_names_labels_and_directions():
    assert preference("rtt.router.p99_s") == ("lower", "latency")
    assert preference("e2e.vent->sink.mean_s") == ("lower", "latency")
    assert preference("rtt.router.count")[0] is None
    assert metric_label("rtt.router.p99_s") == "p99 request -> reply at router"
    assert metric_label("e2e.vent->sink.p99_9_s") == "p99.9 end to end vent -> sink"


def test_an_app_broker_s_clients_get_their_round_trips_and_hops_on_the_way_are_no_ends():
    # examples/lru_broker.toml: the broker is [[app]] code passing requests on with
    # send(like=request) (a new message made from it) and replies back the same way; each
    # client's request -> reply is measured through it, and the request's arrival at a
    # worker or the reply's at the broker (hops that caused another message) is no end
    row = zsim.run("examples/lru_broker.toml", 0, allow_apps=True).flat()
    assert sorted(k for k in row if k.endswith(".count") and k.startswith(("rtt.", "e2e."))) == [
        f"rtt.client{n}.count" for n in range(4)]
    assert all(row[f"rtt.client{n}.count"] == 50 for n in range(4))


STAGE_APP = """
def stage(app):
    env = app.env

    def run(inbox, outbox):
        while True:
            task = yield inbox.recv()
            yield env.timeout(0.004)
            yield outbox.send(8, cause=task)  # a result of its own size, made from the task

    app.process(run(app.socket("w_in"), app.socket("w_out")))
"""


def test_an_app_s_own_message_is_linked_by_cause(tmp_path):
    # an [[app]] stage that sends a new message (not like= the task) names what it was made
    # from: the sink's task -> result time is then measured through it, exactly 4 ms here
    (tmp_path / "stage.py").write_text(STAGE_APP)
    raw = pipeline(1, 3, 0.0)
    raw["recv"] = [{"socket": "sink", "service_s": 0.0}]
    raw["socket"][2:] = [{"name": "w_in", "type": "PULL", "process": "worker1", "connect": ["tcp://127.0.0.1:5557"]},
                         {"name": "w_out", "type": "PUSH", "process": "worker1", "connect": ["tcp://127.0.0.1:5558"]}]
    raw["process"][1] = {"name": "worker1"}
    raw["app"] = [{"function": "stage.py:stage"}]
    row = zsim.run(zsim.spec.from_dict(raw, base_dir=str(tmp_path)), 0, allow_apps=True).flat()
    assert row["e2e.vent->sink.count"] == 3
    assert row["e2e.vent->sink.p50_s"] == pytest.approx(0.008) and row["e2e.vent->sink.max_s"] == pytest.approx(0.012)


def clients(count: int) -> dict:
    """REQ clients ``c1 .. c<count>`` (a template) to one REP of 2 ms."""
    return {
        "scenario": {"name": "clients", "profile": "ideal"},
        "socket": [{"name": "c{i+1}", "type": "REQ", "count": count, "connect": ["inproc://rr"]},
                   {"name": "rep", "type": "REP", "bind": ["inproc://rr"]}],
        "send": [{"socket": "c{i+1}", "count": 10, "size_bytes": 10, "start_s": 0.01}],
        "recv": [{"socket": "rep", "service_s": 0.002, "reply_size_bytes": 5}],
    }


def test_a_template_s_round_trips_are_aggregated_over_its_members():
    # issue 30: templates first-class: the worst client's p99 is one number a sweep, a
    # compare or a search can name
    row = zsim.run(clients(3), 0).flat()
    members = [row[f"rtt.c{i}.p99_s"] for i in (1, 2, 3)]
    assert row["rtt.c.max_p99_s"] == max(members) and row["rtt.c.min_p99_s"] == min(members)
    assert row["rtt.c.sum_count"] == 30 and row["rtt.c.mean_count"] == 10
    assert max(members) > min(members)  # three clients queue at one REP: not all alike
    assert metric_label("rtt.c.max_p99_s") == "largest over the members: p99 request -> reply at c"
    assert preference("rtt.c.max_p99_s") == ("lower", "latency") and preference("rtt.c.sum_count")[0] is None


def test_end_to_end_times_are_aggregated_by_template_at_either_end():
    from zsim.metrics import _causal_aggregates

    row = {"e2e.p1->sink.p99_s": 0.004, "e2e.p2->sink.p99_s": 0.006, "e2e.p1->sink.count": 5, "e2e.p2->sink.count": 7,
           "e2e.vent->sink.p99_s": 0.1, "rtt.x.p99_s": 0.3}
    before = set(row)
    _causal_aggregates(row, {"socket": {"p": {"members": ["p1", "p2"]}}})
    assert row["e2e.p->sink.max_p99_s"] == 0.006 and row["e2e.p->sink.mean_p99_s"] == pytest.approx(0.005)
    assert row["e2e.p->sink.sum_count"] == 12
    # pairs without a template end, and sockets outside a template, get no aggregate
    assert {k.rsplit(".", 1)[0] for k in set(row) - before} == {"e2e.p->sink"}


@pytest.mark.parametrize("metric", ["rtt.c2.p99_s", "rtt.c.max_p99_s", "rtt.c17.count", "rtt.rep.mean_s"])
def test_a_sweep_or_search_may_name_causal_metrics(tmp_path, metric):
    # these were refused as unknown: a sweep could not chart, nor a search constrain, a p99
    # round trip
    from zsim import metrics

    known = metrics.known_metrics(clients(3))
    assert known is not None and metric in known


@pytest.mark.parametrize("metric", ["rtt.nosuch.p99_s", "rtt.c.p99", "rtt.c.max_p97_s", "e2e.c1.p99_s", "e2e.c1->zz.p99_s",
                                    "rtt.c1.max_p99_s"])
def test_unknown_causal_metrics_are_still_refused(metric):
    from zsim import metrics

    known = metrics.known_metrics(clients(3))
    assert known is not None and metric not in known


def two_stages(until_s: float) -> dict:
    """vent -> stage 1 (2 ms) -> stage 2 (4 ms) -> sink, a task every 5 ms from 10 ms."""
    return {
        "scenario": {"name": "two-stages", "profile": "ideal", "until_s": until_s},
        "socket": [{"name": "vent", "type": "PUSH", "bind": ["inproc://a"]},
                   {"name": "s1_in", "type": "PULL", "connect": ["inproc://a"]},
                   {"name": "s1_out", "type": "PUSH", "bind": ["inproc://b"]},
                   {"name": "s2_in", "type": "PULL", "connect": ["inproc://b"]},
                   {"name": "s2_out", "type": "PUSH", "bind": ["inproc://c"]},
                   {"name": "sink", "type": "PULL", "connect": ["inproc://c"]}],
        "send": [{"socket": "vent", "count": 4, "size_bytes": 10, "start_s": 0.01, "interval_s": 0.005}],
        "recv": [{"socket": "s1_in", "forward_to": "s1_out", "service_s": 0.002},
                 {"socket": "s2_in", "forward_to": "s2_out", "service_s": 0.004},
                 {"socket": "sink", "service_s": 0.0}],
    }


def test_a_task_still_in_a_stage_at_the_end_is_in_flight_not_an_end_to_end_time():
    # issue 41, finding 6: "end to end ... over 1" lines for what was still being worked on.
    # The fourth task reaches stage 2 at 27 ms and would leave it at 31 ms: at 27.5 ms it is
    # on its way, not a task whose end is stage 2
    from zsim.cli import format_summary

    result = zsim.run(two_stages(0.0275), 0)
    sockets = result.summary["sockets"]
    assert "e2e_s" not in sockets["s2_in"] and sockets["sink"]["e2e_s"]["vent"]["count"] == 3
    assert sockets["vent"]["chains_at_end"] == {"in_flight": 1}
    row = result.flat()
    assert sorted(k for k in row if k.startswith("e2e.") and k.endswith(".count")) == ["e2e.vent->sink.count"]
    text = format_summary(result.summary)
    [line] = [line for line in text.splitlines() if line.startswith("end to end")]
    assert line.startswith("end to end vent -> sink (sent at vent, what it caused arriving at sink): ")
    assert line.endswith(" over 3 that arrived; 1 sent at vent still on the way at the end")
    # when every task has come through, nothing is in flight and the line says nothing more
    done = zsim.run(two_stages(0.1), 0)
    assert done.summary["sockets"]["vent"]["chains_at_end"] == {"in_flight": 0}
    [line] = [line for line in format_summary(done.summary).splitlines() if line.startswith("end to end")]
    assert line.endswith(" over 4 that arrived")


def test_requests_in_flight_at_the_end_are_counted_apart_from_the_round_trips():
    # a REQ whose 21st request is at the REP (2 ms each, lockstep) when the run ends
    from zsim.report_run import headline

    raw = req_rep(0.002, count=40)
    raw["scenario"]["until_s"] = 0.01 + 20 * 0.002 + 0.001
    result = zsim.run(raw, 0)
    req = result.summary["sockets"]["req"]
    assert req["rtt_s"]["count"] == 20 and req["chains_at_end"] == {"in_flight": 1}
    scen = zsim.spec.from_dict(raw)
    [rtt_line] = [line for line in headline(result.summary, scen) if line.startswith("Request -> reply")]
    assert rtt_line.endswith(" over 20 answered; 1 more still in flight when the run ended (not in these times).")
