"""Per-entity answers: what each receiver got, what each pipe dropped, what each sender did.

Small exact scenarios (``ideal`` profile: no time costs), so every number is decided by
the model's rules and can be stated exactly.
"""

from __future__ import annotations

import pytest

from support import run, scenario

PUB = {"name": "pub", "type": "PUB", "bind": "inproc://feed", "options": {"sndhwm": 5}}


def _sub(name, rcvhwm=5, topics=("",)):
    return {"name": name, "type": "SUB", "connect": "inproc://feed", "options": {"rcvhwm": rcvhwm, "subscribe": list(topics)}}


def test_a_stalled_and_a_fast_subscriber_get_their_own_loss():
    # 100 messages at once (t = 0.5 s, after the subscriptions); "fast" reads instantly,
    # "stalled" never reads: its inproc pipe holds sndhwm + rcvhwm = 10, the rest drop.
    raw = scenario(PUB, _sub("fast"), _sub("stalled"),
                   sends=[{"socket": "pub", "count": 100, "start_s": 0.5, "interval_s": 0.001}],
                   recvs=[{"socket": "fast"}])
    summary = run(raw)
    fast, stalled = summary["sockets"]["fast"]["inbound"], summary["sockets"]["stalled"]["inbound"]
    # copies meant for each were sent from t = 0.5 s to 0.599 s
    assert fast.pop("offered_window_s") == pytest.approx(0.099) and stalled.pop("offered_window_s") == pytest.approx(0.099)
    assert fast == {"copies": 100, "delivered": 100, "forwarded": 0, "dropped": 0, "discarded": 0, "lost_on_close": 0,
                    "queued_at_end": 0, "loss_fraction": 0.0, "dropped_by": {}}
    assert stalled["copies"] == 100 and stalled["delivered"] == 0
    assert stalled["queued_at_end"] == 10 and stalled["dropped"] == 90
    assert stalled["dropped_by"] == {"pub->stalled: hwm": 90}
    # queued at the end is not delivered: it counts as loss
    assert stalled["loss_fraction"] == 1.0
    # the pooled figure mixes both: 90 dropped of 200 copies
    assert summary["ledger"]["dropped"] == 90 and summary["ledger"]["copies"] == 200
    assert "inbound" not in summary["sockets"]["pub"]


def test_pipe_drops_by_rule_and_destination():
    raw = scenario(PUB, _sub("stalled"), sends=[{"socket": "pub", "count": 30, "start_s": 0.5}])
    pipe = next(p for p in run(raw)["pipes"] if p["name"] == "pub->stalled")
    assert pipe["destination"] == "stalled" and pipe["dropped_by_rule"] == {"hwm": 20} and pipe["dropped"] == 20


def test_a_subscribers_own_filter_is_not_loss():
    # The SUB wants only "A"; the PUB filters at the source, so "B" copies are never made.
    raw = scenario(PUB, _sub("a_only", rcvhwm=100, topics=("A",)),
                   sends=[{"socket": "pub", "count": 40, "start_s": 0.5, "topic": ["A", "B"], "interval_s": 0.001}],
                   recvs=[{"socket": "a_only"}])
    inbound = run(raw)["sockets"]["a_only"]["inbound"]
    assert inbound["copies"] == 20 and inbound["delivered"] == 20 and inbound["loss_fraction"] == 0.0


def test_per_receiver_latency_is_its_own():
    raw = scenario(PUB, _sub("quick", rcvhwm=1000), _sub("slow", rcvhwm=1000),
                   sends=[{"socket": "pub", "count": 50, "start_s": 0.5, "interval_s": 0.01}],
                   recvs=[{"socket": "quick", "service_s": 0.001}, {"socket": "slow", "service_s": 0.02}])
    summary = run(raw)
    quick, slow = summary["sockets"]["quick"]["latency_s"], summary["sockets"]["slow"]["latency_s"]
    # quick: never queued (service 1 ms < 10 ms spacing): latency 0 in the ideal profile
    assert quick["max"] == pytest.approx(0.0, abs=1e-12)
    # slow: 20 ms service for 10 ms spacing; message k waits k * 10 ms: the last 490 ms
    assert slow["max"] == pytest.approx(0.49) and slow["p99_9"] <= slow["max"]
    assert summary["latency_s"]["max"] == pytest.approx(0.49)  # pooled: the slow one's tail


def test_sender_reports_requested_and_achieved_rate_and_blocking():
    push = {"name": "push", "type": "PUSH", "bind": "inproc://p", "options": {"sndhwm": 2}}
    pull = {"name": "pull", "type": "PULL", "connect": "inproc://p", "options": {"rcvhwm": 2}}
    raw = scenario(push, pull, sends=[{"socket": "push", "count": 10, "interval_s": 0.01}], until_s=1.0)
    sender = run(raw)["senders"]["send.push"]
    assert sender["requested_rate_per_s"] == pytest.approx(100.0)
    assert sender["sent"] == 4  # 2 + 2 fit, the 5th blocks for ever
    # blocked from the 5th attempt (t = 0.04 s) to the horizon
    assert sender["blocked_s"] == pytest.approx(0.96)
    assert sender["achieved_rate_per_s"] == pytest.approx(4 / 1.0)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rate_per_s_offers_its_rate_whatever_a_send_costs(seed):
    """Poisson arrivals at 20,000/s for 2 s: the count is Poisson(40,000) (sd 200) when the
    sender keeps its schedule; the send(); sleep() loop of after_send falls far behind."""
    pub = {"name": "pub", "type": "PUB", "bind": "inproc://feed", "options": {"sndhwm": 0}}
    sub = {"name": "sub", "type": "SUB", "connect": "inproc://feed", "options": {"rcvhwm": 0, "subscribe": [""]}}
    counts = {}
    for pacing in ("schedule", "after_send"):
        raw = scenario(pub, sub, sends=[{"socket": "pub", "rate_per_s": 20_000, "duration_s": 2.0, "start_s": 0.1, "pacing": pacing}],
                       recvs=[{"socket": "sub"}], profile="default")
        counts[pacing] = run(raw, seed)["senders"]["send.pub"]
    assert abs(counts["schedule"]["sent"] - 40_000) < 4 * 200  # within 4 sd of the Poisson count
    assert counts["schedule"]["achieved_rate_per_s"] == pytest.approx(20_000, rel=0.02)
    assert counts["after_send"]["sent"] < 0.9 * 40_000  # each call's cost delays the next draw


def test_rate_per_s_defaults_to_schedule_and_interval_s_to_after_send():
    from zsim import load

    base = scenario(PUB, _sub("s"), sends=[{"socket": "pub", "count": 1, "rate_per_s": 10}])
    assert load(base).sends[0].pacing == "schedule"
    base["send"][0] = {"socket": "pub", "count": 1, "interval_s": 0.1}
    assert load(base).sends[0].pacing == "after_send"
    base["send"][0]["pacing"] = "schedule"
    assert load(base).sends[0].pacing == "schedule"


def test_a_scheduled_sender_catches_up_back_to_back_after_blocking():
    push = {"name": "push", "type": "PUSH", "bind": "inproc://w", "options": {"sndhwm": 1}}
    pull = {"name": "pull", "type": "PULL", "connect": "inproc://w", "options": {"rcvhwm": 1}}
    # 100 sends due every 10 ms; the worker stalls 0.3 s once, then reads instantly
    raw = scenario(push, pull, sends=[{"socket": "push", "count": 100, "interval_s": 0.01, "pacing": "schedule"}],
                   recvs=[{"socket": "pull", "pause_every_s": 0.2, "pause_s": 0.3}], until_s=1.2)
    sender = run(raw)["senders"]["send.push"]
    # the 100 attempts are due over 1.0 s; after the stall the backlog goes out back to back,
    # so the schedule ends on time (an after_send loop would end ~0.3 s late)
    assert sender["sent"] == 100 and sender["finished_at_s"] == pytest.approx(1.0, abs=0.011)


def test_occupancy_is_a_time_weighted_level():
    from zsim.model.occupancy import FIELDS, Occupancy

    occ = Occupancy(0.0)
    levels = [(0.0, 2), (1.0, 5), (1.0, 7), (1.0, 5), (3.0, 0)]  # 7 lasts no time: a peak, no area
    for t, value in levels:
        occ.update(t, (value, 100 * value, 0, 0, 1, 3))
    report = occ.report(4.0)
    assert report["kernel_messages"] == {"max": 7, "mean": (2 * 1 + 5 * 2 + 0 * 1) / 4, "at_end": 0}
    assert report["kernel_bytes"] == {"max": 700, "mean": 100 * (2 * 1 + 5 * 2 + 0 * 1) / 4, "at_end": 0}
    assert report["sender_engine_messages"] == {"max": 0, "mean": 0.0, "at_end": 0}
    assert report["receiver_engine_bytes"] == {"max": 3, "mean": 3.0, "at_end": 3}
    assert list(report) == list(FIELDS)


def _stalled_tcp(count=100_000):
    # a PULL nobody reads: the PUSH fills both pipes, both engines and the kernel, then blocks
    return {"scenario": {"name": "stalled", "until_s": 0.5},
            "process": [{"name": "a"}, {"name": "b"}],
            "socket": [{"name": "push", "type": "PUSH", "process": "a", "bind": ["tcp://*:5555"], "options": {"sndhwm": 10}},
                       {"name": "pull", "type": "PULL", "process": "b", "connect": ["tcp://127.0.0.1:5555"],
                        "options": {"rcvhwm": 10}}],
            "send": [{"socket": "push", "count": count, "size_bytes": 1000}]}


def test_link_direction_reports_kernel_and_engine_occupancy():
    from zsim.results import flat_metrics

    summary = run(_stalled_tcp())
    (link,) = summary["links"]
    forward, back = link["directions"]["push->pull"], link["directions"]["pull->push"]
    # nothing flows back on a PUSH->PULL link
    assert all(level == {"max": 0, "mean": 0.0, "at_end": 0} for level in back.values())
    # everything sent is somewhere: the pipes, the two engines, the kernel (the ledger puts
    # a message straddling engine and kernel where its first byte is, the occupancy where
    # its last byte is: the totals agree)
    queued = summary["ledger"]["queued_by_place"]
    held = (forward["kernel_messages"]["at_end"] + forward["sender_engine_messages"]["at_end"]
            + forward["receiver_engine_messages"]["at_end"])
    assert held == queued["kernel"] + queued["engine"] > 1000
    assert summary["ledger"]["sent"] == held + queued["pipe"]
    # nobody reads: the kernel never drains, its fullest is its level at the end
    assert forward["kernel_bytes"]["max"] == forward["kernel_bytes"]["at_end"] == link["max_kernel_bytes"]["push->pull"]
    # the receiving engine holds the decoded messages its full pipe refused (< 8 KB read)
    assert 0 < forward["receiver_engine_bytes"]["at_end"] <= 8192
    # stalled from the first milliseconds on: the time average is close to the final level
    for level in forward.values():
        assert level["max"] >= level["mean"] > 0.9 * level["at_end"]
    row = flat_metrics(summary)
    assert row["link.push->pull.max_kernel_bytes"] == forward["kernel_bytes"]["max"]
    assert row["link.push->pull.mean_kernel_messages"] == forward["kernel_messages"]["mean"]
    assert row["link.pull->push.max_receiver_engine_messages"] == 0


def test_link_occupancy_empties_when_the_reader_keeps_up():
    raw = _stalled_tcp(count=200)
    raw["send"][0]["interval_s"] = 0.001
    raw["recv"] = [{"socket": "pull"}]
    summary = run(raw)
    forward = summary["links"][0]["directions"]["push->pull"]
    assert summary["sockets"]["pull"]["received"] == 200
    assert all(level["at_end"] == 0 for level in forward.values())
    # one 1 KB message at a time crosses; the average is a fraction of one message
    assert forward["kernel_messages"]["max"] >= 1 and forward["kernel_messages"]["mean"] < 1


def test_drop_counts_by_row_are_numpys_unique_rows_in_the_same_order():
    # the per-socket and per-pipe "dropped_by" tables count (socket, pipe, rule) rows on one
    # integer key; pipe -1 is "no pipe": the rows, counts and their order must be np.unique's
    import numpy as np

    from zsim.results import _count_rows

    rng = np.random.default_rng(5)
    dest, pipe, rule = rng.integers(0, 40, 5000), rng.integers(-1, 300, 5000), rng.integers(0, 12, 5000)
    unique, counts = np.unique(np.stack([dest, pipe, rule], axis=1), axis=0, return_counts=True)
    assert _count_rows(dest, pipe, rule) == [(tuple(row), n) for row, n in zip(unique.tolist(), counts.tolist(), strict=True)]
    assert _count_rows(np.array([3, 3, -1]), np.array([0, 0, 7])) == [((-1, 7), 1), ((3, 0), 2)]
