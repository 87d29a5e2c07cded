"""Outages and loss bursts on links (issue 43, items 1-2: ``[[fault]]``; docs/model.md,
"Outages"): TCP's retransmission timer backs off while a link is down and the connection
recovers at its first try after the link is back; a connect's SYNs follow Linux 6.x's
linear-then-exponential schedule; after ``tcp_retries2`` TCP gives up and libzmq makes the
connection again; a scenario without faults is untouched."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import zsim
from zsim import spec
from zsim.errors import ScenarioError
from zsim.model.transport.network import RETRIES2_TIMEOUT_S, SYN_WAITS_S
from zsim.results import flat_metrics
from zsim.runner import run


def routed(fault: dict[str, Any] | None = None, *, send: dict[str, Any] | None = None, until_s: float = 8.0,
           socket_type: tuple[str, str] = ("PUSH", "PULL"), options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Host a behind switch s1, host b behind s2, a 10 Mbit/s WAN between the switches; a PUSH
    on a sends 1 KB at 500 a second to b; ``fault`` on the WAN."""
    raw: dict[str, Any] = {
        "scenario": {"name": "outage", "until_s": until_s},
        "host": [{"name": "a"}, {"name": "b"}],
        "switch": [{"name": "s1"}, {"name": "s2"}],
        "link": [{"hosts": ["a", "s1"], "bandwidth_bps": 100e6}, {"name": "wan", "hosts": ["s1", "s2"], "bandwidth_bps": 10e6},
                 {"hosts": ["s2", "b"], "bandwidth_bps": 100e6}],
        "process": [{"name": "src", "host": "a"}, {"name": "dst", "host": "b"}],
        "socket": [{"name": "tx", "type": socket_type[0], "process": "src", "connect": ["tcp://b:5555"], "options": options or {}},
                   {"name": "rx", "type": socket_type[1], "process": "dst", "bind": ["tcp://*:5555"],
                    "options": {"subscribe": [""]} if socket_type[1] == "SUB" else {}}],
        "send": [send or {"socket": "tx", "rate_per_s": 500, "count": 3000, "size_bytes": 1000, "start_s": 0.5}],
        "recv": [{"socket": "rx"}],
    }
    if fault is not None:
        raw["fault"] = [fault]
    return raw


CUT = {"name": "cut", "kind": "link_down", "link": "wan", "at_s": 2.0, "duration_s": 2.0}


def test_a_connection_recovers_at_its_first_backed_off_try_after_the_link_is_back():
    # the first segment lost at 2.0 s is sent again 200 ms later, then 400, 800 and 1,600 ms
    # after that (srtt + max(200 ms, 4 rttvar), doubled at each timeout): 2.2, 2.6, 3.4 and
    # 5.0 s; the link is back at 4.0 s, so the fourth try gets through, a second after it
    result = run(routed(CUT), seed=1)
    fault = result.summary["faults"]["cut"]
    assert fault["count"] == 1 and fault["down_s"] == 2.0 and fault["links"] == ["wan"]
    assert 1.0 <= fault["recovery_s"] < 1.1
    sender = result.summary["network"]["a-s1"]["a->s1"]
    assert sender["timeouts"] == 4
    wan = result.summary["network"]["wan"]["s1->s2"]
    assert wan["outage_drops"] > 0 and wan["down_s"] == 2.0
    # nothing is lost: TCP kept it; the message sent as the link went down waited for the try
    assert result.summary["sockets"]["rx"]["received"] == 3000
    assert 3.0 < result.summary["latency_s"]["max"] < 3.1
    row = flat_metrics(result.summary, result)
    assert row["fault.cut.recovery_s"] == fault["recovery_s"] and row["network.wan.s1->s2.down_s"] == 2.0


def test_the_try_that_recovers_moves_with_the_outage_by_whole_doublings():
    # a 1 s outage ends between the tries at 1.4 and 3.0 s after it began: recovery 1.4 s
    # after the cut (0.4 s after the repair); a 3.5 s one waits for the try at 6.2 s
    short = run(routed({**CUT, "duration_s": 1.0}), seed=1).summary["faults"]["cut"]
    long = run(routed({**CUT, "duration_s": 3.5}, until_s=12.0), seed=1).summary["faults"]["cut"]
    assert 0.4 <= short["recovery_s"] < 0.5
    assert 2.7 <= long["recovery_s"] < 2.8


def test_a_pub_drops_at_its_hwm_while_the_link_is_down_and_delivers_its_backlog_late():
    # 1,500 x 1 KB at 500 a second, the link down from 2 to 4 s: what was sent before the cut
    # arrives; during it the pipe (SNDHWM 200) and the kernel's buffers fill and the rest is
    # dropped at the PUB's pipe (libzmq's hwm rule), not lost by TCP
    raw = routed(CUT, send={"socket": "tx", "rate_per_s": 500, "count": 1500, "size_bytes": 1000, "start_s": 0.5},
                 until_s=10.0, socket_type=("PUB", "SUB"), options={"sndhwm": 200})
    summary = run(raw, seed=1).summary
    received = summary["sockets"]["rx"]["received"]
    dropped = summary["sockets"]["tx"]["dropped"]
    assert received + dropped == 1500
    assert 750 + 100 < received < 1500 - 300  # before the cut, the pipe (101-200 by its credit), some kernel buffer
    assert summary["ledger"]["lost_on_close"] == 0


def test_a_connect_during_an_outage_gets_through_at_the_first_syn_after_it():
    # SYNs at 2.5, 3.5 (lost: the WAN is down until 4.0) and 4.5 s (tcp_syn_linear_timeouts)
    raw = routed(CUT, send={"socket": "tx", "rate_per_s": 500, "count": 100, "size_bytes": 1000, "start_s": 2.5})
    raw["socket"][0]["open_at_s"] = 2.5
    result = run(raw, seed=1)
    row = flat_metrics(result.summary, result)
    assert row["socket.rx.received"] == 100
    assert 4.5 < row["socket.rx.first_recv_s"] < 4.6


def test_a_connect_whose_syns_all_go_unanswered_fails_and_libzmq_tries_again():
    # the WAN down from 1 to 150 s: SYNs at 2 ... 67 s, ETIMEDOUT at 131 s after the first
    # (SYN_WAITS_S), then the reconnect interval (100-200 ms), a new connect's SYNs at 1 s
    # steps, the one after 150 s gets through
    assert sum(SYN_WAITS_S) == 131.0
    raw = routed({**CUT, "at_s": 1.0, "duration_s": 149.0}, until_s=160.0,
                 send={"socket": "tx", "rate_per_s": 10, "count": 10, "size_bytes": 100, "start_s": 2.0})
    raw["socket"][0]["open_at_s"] = 2.0
    result = run(raw, seed=1)
    row = flat_metrics(result.summary, result)
    assert row["socket.rx.received"] == 10
    # 2 + 131 = 133 s, a reconnect 0.1-0.2 s later, SYNs then 1 s apart: 150.1-150.2 s, or one
    # doubling later if the fifth of them came before 150 (it does not: 133.1 + 5 < 150 ... 7, 11, 19)
    first = row["socket.rx.first_recv_s"]
    assert 150.0 < first < 153.2, first


def test_tcp_gives_up_after_tcp_retries2_and_the_connection_is_made_again():
    # the WAN down from 1 s for 1,000 s: the sender's data goes unacknowledged; after
    # tcp_retries2's 924.6 s the engine errors, what its kernel held is lost, and
    # the connect side tries again at once: its SYNs (925.7, 926.7 ... 992.7 s) all fall in the
    # outage, so that connect fails at 1,056.7 s and the next gets through; the ten messages
    # sent at 1,010 s wait in the new pipe until then
    assert RETRIES2_TIMEOUT_S == pytest.approx(924.6)
    raw = routed({**CUT, "at_s": 1.0, "duration_s": 1000.0}, until_s=1070.0,
                 send={"socket": "tx", "rate_per_s": 10, "count": 20, "size_bytes": 100, "start_s": 0.5})
    raw["send"].append({"socket": "tx", "rate_per_s": 10, "count": 10, "size_bytes": 100, "start_s": 1010.0})
    result = run(raw, seed=1)
    summary = result.summary
    sender = summary["network"]["a-s1"]["a->s1"]
    assert 8 <= sender["timeouts"] <= 16  # doublings to 120 s, then every 120 s until 924.6 s
    row = flat_metrics(summary, result)
    assert 1056.7 < row["socket.rx.last_recv_s"] < 1058.0
    # 7 of the first 20 crossed before the cut; the 13 its kernel held when TCP gave up are lost
    # there (the connection broke: RULE_KERNEL_LOST); the 10 sent after the repair arrive
    assert summary["ledger"]["lost_by_rule"] == {"kernel_lost": 13}
    assert row["socket.rx.received"] == 7 + 10


def test_a_partition_cuts_every_link_with_one_end_inside():
    raw = routed({"name": "rack", "kind": "partition", "hosts": ["a", "s1"], "at_s": 2.0, "duration_s": 2.0})
    summary = run(raw, seed=1).summary
    assert summary["faults"]["rack"]["links"] == ["wan"]
    assert summary["sockets"]["rx"]["received"] == 3000


def test_a_loss_fault_loses_at_its_probability_while_it_lasts():
    raw = routed({"name": "flaky", "kind": "loss", "link": "wan", "loss": 0.2, "at_s": 2.0, "duration_s": 2.0})
    summary = run(raw, seed=1).summary
    wan = summary["network"]["wan"]["s1->s2"]
    assert wan["fault_loss_drops"] > 0 and wan["outage_drops"] == 0
    assert summary["sockets"]["rx"]["received"] == 3000


def test_random_faults_are_drawn_from_the_seed_and_drawn_alike_by_the_harness():
    from zsim.build import stream_factory

    raw = routed({"name": "flaky", "kind": "link_down", "link": "wan", "mtbf_s": 2.0, "mttr_s": 0.3}, until_s=20.0)
    one, again, other = (run(raw, seed=seed).summary["faults"]["flaky"] for seed in (1, 1, 2))
    assert one == again and one["intervals"] != other["intervals"] and one["count"] >= 3
    fault = spec.from_dict(raw).faults[0]
    assert [list(interval) for interval in fault.intervals(stream_factory(1), 20.0)] == one["intervals"]


def test_a_scenario_without_faults_reports_no_fault_fields():
    summary = run(routed(None), seed=1).summary
    assert "faults" not in summary and "down_s" not in summary["network"]["wan"]["s1->s2"]


def test_a_fault_field_is_a_sweep_path():
    raw = spec.with_overrides(routed(CUT), {"fault.cut.duration_s": 3.0, "fault.0.at_s": 1.0})
    fault = spec.from_dict(raw).faults[0]
    assert (fault.at_s, fault.duration_s) == (1.0, 3.0)


@pytest.mark.parametrize("change, field, words", [
    (lambda f: f.update(kind="down"), "fault[cut].kind", "must be one of"),
    (lambda f: f.update(link="wna"), "fault[cut].link", "unknown link 'wna'"),
    (lambda f: f.update(mtbf_s=5.0), "fault[cut]", "choose one"),
    (lambda f: f.pop("duration_s"), "fault[cut].duration_s", "missing"),
    (lambda f: f.update(loss=0.5), "fault[cut].loss", "only a kind = \"loss\" fault"),
    (lambda f: f.update(kind="loss"), "fault[cut].loss", "missing"),
    (lambda f: f.update(kind="partition"), "fault[cut].link", "a partition names the hosts"),
    (lambda f: (f.pop("link"), f.update(kind="partition", hosts=["a", "b", "s1", "s2"])), "fault[cut].hosts", "cuts no link"),
    (lambda f: (f.pop("at_s"), f.pop("duration_s"), f.update(mtbf_s=5.0, mttr_s=1.0)), "fault[cut].mtbf_s", "needs scenario.until_s"),
    (lambda f: (f.pop("link"), f.update(kind="host_crash", host="s1")), "fault[cut].host", "a switch that fails is a partition"),
    (lambda f: f.update(kind="host_crash", host="a"), "fault[cut].link", "a host_crash names its host"),
    (lambda f: f.update(host="a"), "fault[cut].host", "only a host_crash fault names a host"),
])
def test_bad_faults_are_one_line_naming_the_field(change, field, words):
    fault = copy.deepcopy(CUT)
    change(fault)
    raw = routed(fault)
    if "needs scenario.until_s" in words:
        del raw["scenario"]["until_s"]
    with pytest.raises(ScenarioError) as caught:
        spec.from_dict(raw)
    message = str(caught.value)
    assert message.startswith(field) and words in message and "\n" not in message


def test_zsim_validate_refuses_what_it_cannot_cut_in_one_line():
    from validation.harness import check_deployment

    direct = zsim.spec.from_dict({**routed(None), "link": [{"hosts": ["a", "b"], "bandwidth_bps": 10e6}], "switch": [],
                                  "fault": [{"name": "cut", "kind": "link_down", "link": "a-b", "at_s": 1.0, "duration_s": 1.0}]})
    with pytest.raises(ScenarioError) as caught:
        check_deployment(direct)
    assert str(caught.value).startswith("fault[cut]: cuts link 'a-b', which joins two hosts directly")
    lossy = spec.from_dict(routed({"name": "flaky", "kind": "loss", "link": "wan", "loss": 0.2, "at_s": 2.0, "duration_s": 2.0}))
    with pytest.raises(ScenarioError) as caught:
        check_deployment(lossy)
    assert str(caught.value).startswith("fault[flaky].kind: the real harness cannot lose packets at a probability")


def test_explain_names_the_fault_behind_a_loss_episode():
    from zsim.explain import explain
    from zsim.report_run import SeriesRecorder

    raw = routed(CUT, send={"socket": "tx", "rate_per_s": 500, "count": 1500, "size_bytes": 1000, "start_s": 0.5},
                 until_s=10.0, socket_type=("PUB", "SUB"), options={"sndhwm": 200})
    scenario = spec.from_dict(raw)
    recorder = SeriesRecorder()
    result = run(scenario, 1, recorder=recorder)
    text = explain(result, recorder.result, scenario).text()
    assert "Link wan was down from 2 s to 4 s (fault cut: link_down); nothing crossed it until 1.0" in text
    assert ("Nothing noticed it (TCP keeps a connection through an outage; tx had neither ZMTP heartbeats nor TCP keepalive "
            "on), so it kept queueing for rx until its pipe held SNDHWM") in text
    assert "lost 1" in text and "frames on its wire while it was down" in text


def _heartbeats(options: dict[str, Any], sub_options: dict[str, Any] | None = None, cut_s: float = 5.0) -> dict[str, Any]:
    """A PUB on a sends 1 KB at 500 a second for 9 s to a SUB on b; the WAN is down from 2 s
    for ``cut_s``; ``options`` on both sockets (the SUB's own added)."""
    raw = routed({**CUT, "duration_s": cut_s}, send={"socket": "tx", "rate_per_s": 500, "count": 4500, "size_bytes": 1000, "start_s": 0.5},
                 until_s=12.0, socket_type=("PUB", "SUB"), options={"sndhwm": 200, **options})
    raw["socket"][1]["options"].update({**options, **(sub_options or {})})
    return raw


def test_heartbeats_break_a_connection_whose_route_went_silent_and_the_sub_comes_back():
    # PINGs every second from each side; the first unanswered one (the first after 2.0 s)
    # arms a 3 s timeout: the connection breaks 3-4 s into the outage (stream_engine_base_t::
    # timer_event, heartbeat_timeout_timer_id), the PUB's pipe to the SUB terminates with what
    # it held, and the SUB, which connected, tries again: its SYNs are lost until the WAN is
    # back at 7 s, the next one gets through (tcp_syn_linear_timeouts: 1 s apart)
    result = run(_heartbeats({"heartbeat_ivl": 1000, "heartbeat_timeout": 3000}), seed=1)
    fault = result.summary["faults"]["cut"]
    assert 3.0 <= fault["detect_s"] <= 4.05, fault
    assert fault["disconnected_by"] == {"heartbeat timeout": 1}
    row = flat_metrics(result.summary, result)
    # deliveries resume after the repair (a new connection, the subscription sent again)
    assert 7.0 < row["socket.rx.last_recv_s"] and row["socket.rx.received"] > 750 + 2 * 500 * 0.9
    # without heartbeats nothing notices: the connection survives, TCP retransmits after the repair
    silent = run(_heartbeats({}), seed=1).summary["faults"]["cut"]
    assert silent["disconnects"] == 0 and silent["detect_s"] != silent["detect_s"]  # NaN: nothing noticed


def test_a_heartbeat_ttl_breaks_the_peer_that_hears_no_more_pings():
    # only the PUB sends PINGs, each asking the SUB to hear again within 2.5 s: the SUB's ttl
    # timer fires 2.5 s after the last PING that arrived (the one at 2 s or just before)
    raw = _heartbeats({"heartbeat_ivl": 1000, "heartbeat_timeout": 10000, "heartbeat_ttl": 2500}, {"heartbeat_ivl": 0})
    fault = run(raw, seed=1).summary["faults"]["cut"]
    assert fault["disconnected_by"] == {"heartbeat ttl": 1}
    assert 1.5 <= fault["detect_s"] <= 2.55, fault


def test_keepalive_breaks_an_idle_connection_whose_peer_went_silent():
    # the PUB sends 100 messages early and then nothing: the SUB's side is idle; with
    # keepalive (idle 5 s, probes every 1 s, 3 of them) it probes 5 s after it last heard
    # anything, about 0.7 s, then at 6.7 and 7.7 s, into the outage from 2 s: all unanswered,
    # ETIMEDOUT 3 s after the first probe
    raw = routed({**CUT, "duration_s": 100.0}, send={"socket": "tx", "rate_per_s": 500, "count": 100, "size_bytes": 100, "start_s": 0.5},
                 until_s=20.0, socket_type=("PUB", "SUB"))
    raw["socket"][1]["options"].update({"tcp_keepalive": 1, "tcp_keepalive_idle": 5, "tcp_keepalive_intvl": 1, "tcp_keepalive_cnt": 3})
    fault = run(raw, seed=1).summary["faults"]["cut"]
    assert fault["disconnected_by"] == {"keepalive": 1}
    assert 0.7 + 5 + 3 - 2.0 - 0.1 <= fault["detect_s"] <= 0.7 + 5 + 3 - 2.0 + 0.1, fault


@pytest.mark.parametrize("option, value, words", [
    ("heartbeat_ttl", 7_000_000, "must be <= 6,553,599 ms"),
    ("tcp_keepalive", 2, "must be -1 (the OS's default), 0 (off) or 1 (on)"),
    ("tcp_keepalive_idle", 0, "must be -1 (the OS's default) or at least 1"),
    ("heartbeat_ivl", -5, "heartbeat_ivl"),
])
def test_bad_liveness_options_are_one_line(option, value, words):
    raw = routed(CUT, options={option: value})
    with pytest.raises(ScenarioError) as caught:
        spec.from_dict(raw)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def _host_crash(feed_options: dict[str, Any] | None = None, sub_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """A PUB on a feeds a SUB on b (which connects) at 500 a second for 10 s; host a crashes
    at 2 s and is back at 4 s: its PUB starts again, binds again and sends on."""
    raw = routed({"name": "dead", "kind": "host_crash", "host": "a", "at_s": 2.0, "duration_s": 2.0},
                 send={"socket": "tx", "rate_per_s": 500, "duration_s": 10.0, "size_bytes": 100, "start_s": 0.5},
                 until_s=12.0, socket_type=("PUB", "SUB"), options=feed_options or {})
    # the PUB binds on a, the SUB connects to it
    raw["socket"][0].pop("connect")
    raw["socket"][0]["bind"] = ["tcp://*:5555"]
    raw["socket"][1].pop("bind")
    raw["socket"][1]["connect"] = ["tcp://a:5555"]
    raw["socket"][1]["options"].update(sub_options or {})
    return raw


def test_a_sub_whose_publishers_host_died_stops_receiving_unless_something_notices():
    # the classic: the PUB's host dies and comes back; the SUB's connection to the old PUB
    # is half open (its kernel heard no FIN, no RST, and the SUB sends nothing that would
    # meet a reset), so it waits on it forever and gets nothing from the new PUB
    result = run(_host_crash(), seed=1)
    row = flat_metrics(result.summary, result)
    assert row["socket.rx.received"] < 2.0 * 500  # only what came before the crash
    assert row["socket.rx.last_recv_s"] < 2.1
    fault = result.summary["faults"]["dead"]
    assert fault["links"] == ["a-s1"] and fault["disconnects"] == 0
    # with heartbeats on the SUB, its PING goes unanswered: the connection breaks 1-3 s into
    # the outage, it reconnects to the restarted PUB and receives again
    watched = run(_host_crash(sub_options={"heartbeat_ivl": 500, "heartbeat_timeout": 1500}), seed=1)
    row = flat_metrics(watched.summary, watched)
    fault = watched.summary["faults"]["dead"]
    assert fault["disconnected_by"] == {"heartbeat timeout": 1} and 1.5 <= fault["detect_s"] <= 2.0
    assert row["socket.rx.last_recv_s"] > 10.0 and row["socket.rx.received"] > (2.0 - 0.5 + 10.5 - 5.2) * 500


def test_a_sender_to_a_host_that_died_learns_by_a_reset_when_it_is_back():
    # the SUB's host (b) dies from 2 to 4 s; the PUB keeps sending to the old connection:
    # unacknowledged, TCP backs off (2.2, 2.6, 3.4, 5.0 s); the try at 5.0 s reaches the
    # restarted kernel, which answers with a reset: the PUB's side breaks then. The restarted
    # SUB connected anew meanwhile and receives what is sent after
    raw = routed({"name": "dead", "kind": "host_crash", "host": "b", "at_s": 2.0, "duration_s": 2.0},
                 send={"socket": "tx", "rate_per_s": 500, "duration_s": 10.0, "size_bytes": 100, "start_s": 0.5},
                 until_s=12.0, socket_type=("PUB", "SUB"))
    result = run(raw, seed=1)
    fault = result.summary["faults"]["dead"]
    assert fault["disconnected_by"] == {"reset by the restarted host": 1}
    assert 2.9 <= fault["detect_s"] <= 3.1, fault
    row = flat_metrics(result.summary, result)
    assert row["socket.rx.last_recv_s"] > 10.0
