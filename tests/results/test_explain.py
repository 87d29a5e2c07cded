"""``zsim explain``: each loss episode and stall in one paragraph, every statement read off
the run (ledger, counters, recorded levels)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from support import scenario
from zsim import spec
from zsim.cli import main
from zsim.explain import Explanation, explain
from zsim.ledger import DROPPED
from zsim.report_run import SeriesRecorder
from zsim.runner import run

ROOT = Path(__file__).resolve().parents[2]


def _explain(source: Path | dict, seed: int = 0) -> tuple[Explanation, object]:
    scen = spec.load(source) if isinstance(source, Path) else spec.from_dict(source)
    recorder = SeriesRecorder()
    result = run(scen, seed, recorder=recorder)
    return explain(result, recorder.result, scen), result


def test_a_drop_below_the_hwm_is_the_writers_stale_view_and_names_the_slow_reader():
    story, result = _explain(ROOT / "examples" / "pub_sub_inproc.toml")
    assert len(story.episodes) == 1
    episode = story.episodes[0]
    table = result.messages  # type: ignore[attr-defined]
    when = table["time"][table["state"] == DROPPED]
    assert (episode.start_s, episode.end_s, episode.copies) == (when.min(), when.max(), 989)
    assert (episode.where, episode.rule, episode.socket) == ("pub->sub", "hwm", "pub")
    text = episode.paragraph(1)
    assert text.startswith("Loss episode 1: from 40 ms to 2.01 s, 989 copies dropped at pub->sub (rule hwm).")
    assert "The reader, SUB sub, is too slow for what it is offered" in text and "offered utilisation 2.00" in text
    # the pipe (HWM 10 + 10) never held more than 16: the writer's count lagged (LWM 10)
    assert "pipe pub->sub never held more than 16 messages during the episode, below its HWM of 20" in text
    assert "stale view" in text and "every LWM = 10 reads" in text
    assert story.stalls == []


def test_a_pipe_that_really_filled_is_called_full():
    raw = scenario({"name": "pub", "type": "PUB", "bind": "inproc://x", "options": {"sndhwm": 5}},
                   {"name": "sub", "type": "SUB", "connect": "inproc://x", "options": {"rcvhwm": 5, "subscribe": [""]}},
                   sends=[{"socket": "pub", "count": 50, "interval_s": 0.001}],
                   recvs=[{"socket": "sub", "start_s": 10.0}], until_s=1.0)
    story, _ = _explain(raw)
    (episode,) = story.episodes
    assert episode.copies == 40  # 50 sent, 10 (HWM 5 + 5) fit: nobody read
    text = episode.paragraph(1)
    assert "PUB pub's pipe pub->sub was full: it held up to 10 messages, its HWM is 10" in text
    assert "recv[sub] had not started reading yet: it starts at 10 s (start_s)." in text


def test_the_slow_joiner_is_named_with_when_it_opened_and_first_got_a_copy():
    # the example's publisher, sending every 50 us: some of its copies fall between the
    # XSUB's pipe and its subscription (at 1 ms, one copy does in some runs, none in others)
    raw = spec.load(ROOT / "examples" / "xpub_xsub_proxy.toml").raw
    raw = {**raw, "send": [{**raw["send"][0], "interval_s": 0.00005}]}
    story, result = _explain(raw)
    joiners = [e for e in story.episodes if e.rule == "not_subscribed_yet"]
    assert joiners
    first = joiners[0]
    reader = result.summary["pipes"][result.pipe_names.index(first.where)]["destination"]  # type: ignore[attr-defined]
    text = first.paragraph(1)
    assert f"The reader, {reader}, wanted them, but its subscription had not reached" in text and "slow joiner" in text
    assert "got its first copy at" in text


def test_unroutable_names_the_peer_nobody_is_called():
    raw = scenario({"name": "router", "type": "ROUTER", "bind": "inproc://r"},
                   {"name": "dealer", "type": "DEALER", "connect": "inproc://r"},
                   sends=[{"socket": "router", "count": 40, "interval_s": 0.001, "to": ["dealer", "ghost"]}],
                   recvs=[{"socket": "dealer"}])
    story, _ = _explain(raw, 1)
    (episode,) = story.episodes
    assert (episode.where, episode.rule, episode.copies) == ("router (no pipe)", "unroutable", 20)
    assert "The [[send]] addresses 'ghost', which no socket of the scenario is called." in episode.paragraph(1)


def test_a_dealer_talking_to_a_rep_is_told_it_sends_no_delimiter():
    raw = scenario({"name": "rep", "type": "REP", "bind": "inproc://r"},
                   {"name": "dealer", "type": "DEALER", "connect": "inproc://r"},
                   sends=[{"socket": "dealer", "count": 12, "start_s": 0.01}],
                   recvs=[{"socket": "rep"}])
    story, _ = _explain(raw)
    (episode,) = story.episodes
    assert (episode.where, episode.rule, episode.state, episode.copies) == ("dealer->rep", "no_delimiter", "discarded", 12)
    assert "Rule no_delimiter: a REP (or a REQ waiting for its reply) throws away a message with no empty delimiter" in (
        episode.paragraph(1))


def test_drops_in_two_bursts_are_two_episodes():
    raw = scenario({"name": "pub", "type": "PUB", "bind": "inproc://x", "options": {"sndhwm": 2}},
                   {"name": "sub", "type": "SUB", "connect": "inproc://x", "options": {"rcvhwm": 2, "subscribe": [""]}},
                   sends=[{"socket": "pub", "name": "early", "count": 30, "interval_s": 0.0001, "start_s": 0.1},
                          {"socket": "pub", "name": "late", "count": 30, "interval_s": 0.0001, "start_s": 2.0}],
                   recvs=[{"socket": "sub", "service_s": 0.001}], until_s=3.0)
    story, result = _explain(raw)
    assert len(story.episodes) == 2
    early, late = story.episodes
    assert early.end_s < 0.2 and late.start_s >= 2.0
    assert early.copies + late.copies == result.summary["ledger"]["dropped"]  # type: ignore[attr-defined]


def test_a_blocked_sender_names_its_full_pipes_and_the_reader_that_had_not_started():
    story, result = _explain(ROOT / "examples" / "push_pull_tcp.toml")
    assert story.episodes == []
    (stall,) = story.stalls
    blocked = result.summary["senders"]["send.push"]["blocked_s"]  # type: ignore[attr-defined]
    assert stall.startswith(f"send[push] on PUSH push was blocked in send for {blocked * 1000:.3g} ms of its")
    assert "Its pipe push->stalled (tcp send) reached 96 of SNDHWM 100" in stall
    assert "the kernel of push->stalled held up to 2,749 messages" in stall
    assert "recv[stalled] had not started reading yet: it starts at 4 s (start_s)." in stall


def test_req_lockstep_gives_its_round_trips():
    story, result = _explain(ROOT / "examples" / "req_rep.toml")
    (stall,) = story.stalls
    rtt = result.summary["senders"]["send.req"]["rtt_s"]  # type: ignore[attr-defined]
    assert stall.startswith("send[req] on REQ req works in lockstep")
    assert f"{rtt['count']:,} round trips" in stall and f"about {1 / rtt['mean']:,.0f}/s here" in stall


def test_a_crash_is_named_as_the_cause_of_the_copies_it_took():
    raw = {
        "scenario": {"name": "crash", "until_s": 3.0},
        "process": [{"name": "a"}, {"name": "b", "crash_at_s": 1.0}],
        "socket": [
            {"name": "push", "type": "PUSH", "process": "a", "bind": ["tcp://*:5803"], "options": {"sndhwm": 20, "sndtimeo": 0}},
            {"name": "pull", "type": "PULL", "process": "b", "connect": ["tcp://127.0.0.1:5803"], "options": {"rcvhwm": 20}},
        ],
        "send": [{"socket": "push", "count": 50, "size_bytes": 200_000, "start_s": 0.05, "interval_s": 0.01}],
    }
    story, result = _explain(raw, 1)
    assert story.episodes
    assert sum(e.copies for e in story.episodes) == sum(
        result.summary["ledger"][k] for k in ("dropped", "lost_on_close", "discarded"))  # type: ignore[attr-defined]
    assert any("Process b crashed at 1 s." in e.paragraph(1) for e in story.episodes)


def test_cli_explain_prints_paragraphs_or_json(capsys, tmp_path):
    example = ROOT / "examples" / "pub_sub_inproc.toml"
    assert main(["explain", str(example)]) == 0
    out = capsys.readouterr().out
    # the page's answer first (issue 41: one loss, the receivers table's), then the episodes
    assert out.startswith("zsim explain: pub-sub-inproc, seed 0\n\nsub did not get 49.45 % of the copies meant for it (989 of "
                          "2,000): 989 dropped at ")
    assert "\n\nLoss episode 1: from 40 ms to 2.01 s, 989 copies dropped" in out
    assert main(["explain", str(example), "--json", "--seed", "2"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["seed"] == 2 and data["episodes"][0]["where"] == "pub->sub" and data["episodes"][0]["paragraph"].startswith(
        "Loss episode 1:")
    bad = tmp_path / "bad.toml"
    bad.write_text('[[socket]]\nname = "a"\ntype = "PUB"\nbind = ["tcp://*:1"]\noptions = { sndhwm = -5 }\n')
    proc = subprocess.run([sys.executable, "-m", "zsim", "explain", str(bad)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2 and proc.stderr.strip() == "zsim: socket[a].options.sndhwm: must be >= 0, got -5"


def test_same_seed_same_explanation():
    first, _ = _explain(ROOT / "examples" / "pub_sub_inproc.toml", 3)
    second, _ = _explain(ROOT / "examples" / "pub_sub_inproc.toml", 3)
    assert first.text() == second.text()


@pytest.mark.slow
def test_the_fanout_names_the_slow_subscriber_its_utilisation_and_the_xpub_pipe():
    story, result = _explain(ROOT / "experiments" / "market_data" / "fanout.toml")
    assert [e.where for e in story.episodes] == ["xpub->slow (tcp send)"] * 2
    assert sum(e.copies for e in story.episodes) == 20_251
    for episode in story.episodes:
        text = episode.paragraph(1)
        assert "The reader, SUB slow, is too slow for what it is offered" in text and "offered utilisation 3.28" in text
        assert "XPUB xpub's pipe xpub->slow (tcp send) never held more than" in text and "below its SNDHWM of 1,000" in text
        assert "slow's own pipe from its engine (xpub->slow (tcp recv)) held up to" in text
        assert "The kernel buffers of xpub->slow held up to" in text
    inbound = result.summary["sockets"]["slow"]["inbound"]  # type: ignore[attr-defined]
    assert inbound["dropped"] == 20_251 and np.isclose(inbound["loss_fraction"], 0.679, atol=0.001)


def test_repeated_episodes_at_one_pipe_say_only_what_differs():
    """A reader that pauses for GC makes the same episode at every pause: the first gets the
    whole chain, each later one at the same pipe and rule only its statements that differ."""
    feed = {
        "scenario": {"name": "feed"},
        "socket": [
            {"name": "pub", "type": "PUB", "bind": "tcp://127.0.0.1:5556", "options": {"sndhwm": 100}},
            {"name": "slow", "type": "SUB", "connect": "tcp://127.0.0.1:5556", "options": {"subscribe": "", "rcvhwm": 100}},
        ],
        "send": [{"socket": "pub", "rate_per_s": 2000, "size_bytes": 8000, "start_s": 0.1, "duration_s": 5.0}],
        "recv": [{"socket": "slow", "service_s": 100e-6, "pause_every_s": 1.0, "pause_s": 0.3}],
    }
    story, _ = _explain(feed, 1)
    assert len(story.episodes) >= 3 and len({(e.where, e.rule) for e in story.episodes}) == 1
    paragraphs = story.paragraphs()
    assert paragraphs[0] == story.episodes[0].paragraph(1)
    first = story.episodes[0]
    for number, (episode, text) in enumerate(zip(story.episodes[1:], paragraphs[1:], strict=True), 2):
        head = episode.paragraph(number)[: len(text.split(". ")[0])]
        assert text.startswith(head)
        different = [c for c in episode.causes if c not in first.causes]
        assert len(different) < len(episode.causes)  # the same place, mostly the same causes
        if different:
            assert "As episode 1, except: " + " ".join(different) in text
        else:
            assert text.endswith("The same causes as episode 1.")
        assert len(text) < len(episode.paragraph(number)) / 2
    assert story.text().count("stale view") == 1 + sum("stale view" in p for p in paragraphs[1:])


def test_episodes_at_the_same_place_of_template_members_fold_into_one_paragraph():
    # issue 30: identical episodes on identical subscribers were one paragraph each; six
    # members of a template that pause together drop at their own pipes at the same times,
    # and a subscriber outside the template keeps its own paragraph
    pausing = {"pause_every_s": 0.05, "pause_s": 0.02}
    raw = scenario({"name": "pub", "type": "PUB", "bind": "inproc://feed", "options": {"sndhwm": 5}},
                   {"name": "s{i}", "type": "SUB", "count": 6, "connect": "inproc://feed", "options": {"subscribe": [""], "rcvhwm": 5}},
                   {"name": "own", "type": "SUB", "connect": "inproc://feed", "options": {"subscribe": [""], "rcvhwm": 5}},
                   sends=[{"socket": "pub", "interval_s": 0.0005, "start_s": 0.01, "size_bytes": 10}],
                   recvs=[{"socket": "s", **pausing}, {"socket": "own", **pausing}], until_s=0.12)
    story, _ = _explain(raw)
    places = {e.where for e in story.episodes}
    assert places == {f"pub->s{i}" for i in range(6)} | {"pub->own"}, places
    paragraphs = story.paragraphs()
    folded = [p for p in paragraphs if "more members of the same template" in p]
    assert folded and all("of 5 more members of the same template (s1, s2, s3, ... s5)" in p for p in folded), folded
    assert all("pub->s0" in p for p in folded)
    assert sum("pub->own" in p for p in paragraphs) == sum(e.where == "pub->own" for e in story.episodes)
    assert len(paragraphs) == len(story.episodes) - 5 * len(folded)
    assert len(story.to_dict()["episodes"]) == len(story.episodes)  # the JSON keeps every episode


def test_an_episode_over_a_network_link_names_the_link_and_what_it_carried():
    # issue 29: explain named the kernel buffers and the reader ("fast enough") of a loss
    # a 20 Mbit/s link made, and not the link
    story, result = _explain(ROOT / "examples" / "two_hosts.toml")
    episode = story.episodes[0]
    text = episode.paragraph(1)
    connection = episode.where.split(" ")[0]  # the first loss's subscriber: both sit behind the link
    carried = result.summary["network"]["wan"]["dc->branch"]  # type: ignore[attr-defined]
    assert carried["active_utilisation"] >= 0.95 and connection in carried["connections"]
    # two subscribers offered 25 Mbit/s each: what the writers offered the link comes first (issue 41)
    assert (f"The connection {connection} crosses link wan (dc->branch: 20 Mbit/s, 10 ms one way). The 20 Mbit/s link wan was "
            f"offered {carried['offered_bps'] / 1e6:.3g} Mbit/s dc->branch by the writers of the connections crossing it "
            f"({carried['offered_utilisation']:.3g}x its capacity: link_oversubscribed). Over the whole run that "
            f"direction was busy {100 * carried['active_utilisation']:.0f} % of the time it carried traffic") in text
    assert "the link ran at its capacity, so it, not the reader, set how fast copies left the sender's buffers." in text
    # the same design on one host's loopback: the link made the loss (fewer drops), and no link is named
    raw = spec.load(ROOT / "examples" / "two_hosts.toml").raw
    loopback = {k: v for k, v in raw.items() if k not in ("host", "link")}
    loopback["process"] = [{k: v for k, v in p.items() if k != "host"} for p in raw["process"]]
    loopback["socket"] = [{**s, "connect": [c.replace("tcp://dc:", "tcp://127.0.0.1:") for c in s.get("connect", [])]}
                          for s in raw["socket"]]
    story, local = _explain(loopback)
    assert local.summary["ledger"]["dropped"] < result.summary["ledger"]["dropped"]  # type: ignore[attr-defined]
    assert not any("crosses link" in e.paragraph(1) for e in story.episodes)


def test_a_member_that_lost_again_is_counted_as_an_episode_not_as_another_member():
    # examples/two_hosts.toml: two subscribers lose in several episodes each (ten with send
    # buffers of 4,352 B a segment, eight with the measured 2,304 B); explain said "9 more
    # members of the same template (sub2, sub2, sub1, ... sub2)" of a template of two
    story, _ = _explain(ROOT / "examples" / "two_hosts.toml")
    (first, *_) = story.paragraphs()
    assert "more members" not in first and len(story.episodes) > 2 * 2
    assert {e.where for e in story.episodes} == {"pub->sub1 (tcp send)", "pub->sub2 (tcp send)"}
    # the members in the order they first lost (which subscriber the link favours is not fixed)
    members = ", ".join(dict.fromkeys(e.where.split(" ")[0].split("->")[1] for e in story.episodes))
    assert sorted(members.split(", ")) == ["sub1", "sub2"]
    assert (f"The same happened {len(story.episodes) - 1} more times at the same place, at 2 members of the same template "
            f"({members}): ") in first


# -- when a reader paused ----------------------------------------------------------------------


def test_a_pausing_reader_records_when_and_explain_says_where_an_episode_fell():
    from zsim.explain import _pauses
    from zsim.model.workload import MAX_PAUSE_RECORDS

    raw = {
        "scenario": {"name": "pauses", "until_s": 20.0},
        "process": [{"name": "a"}, {"name": "b"}],
        "socket": [{"name": "pub", "type": "PUB", "process": "a", "bind": "inproc://p"},
                   {"name": "sub", "type": "SUB", "process": "a", "connect": "inproc://p", "options": {"subscribe": [""]}}],
        "send": [{"socket": "pub", "rate_per_s": 2000}],
        "recv": [{"socket": "sub", "pause_every_s": 0.01, "pause_s": 0.001}],
    }
    receiver = run(raw, 0).summary["receivers"]["recv.sub"]
    # more than a thousand pauses in 20 s: the first 200 recorded, in order, each as long as asked
    assert receiver["pause_count"] > MAX_PAUSE_RECORDS == len(receiver["pauses"])
    starts = [a for a, _ in receiver["pauses"]]
    assert starts == sorted(starts) and all(0.001 <= b - a < 0.002 for a, b in receiver["pauses"])
    assert receiver["paused_s"] >= receiver["pause_count"] * 0.001
    asked = "recv[sub] pauses for 1 ms about every 10 ms"
    record = {"pause_count": 3, "pauses": [[1.0, 1.5], [3.0, 3.5], [6.0, 6.5]]}
    assert _pauses(asked, record, 1.2, 1.3) == f"{asked}: it was paused from 1 s to 1.5 s, the episode began 200 ms into it."
    assert _pauses(asked, record, 2.9, 6.2).endswith("100 ms after the episode began, and 1 more time before the episode ended.")
    assert _pauses(asked, record, 4.0, 5.0) == f"{asked}, but it was not paused during the episode; its last pause before ended at 3.5 s."
    capped = {"pause_count": 5000, "pauses": [[1.0, 1.5]]}
    assert _pauses(asked, capped, 9.0, 9.5) == (f"{asked} (5,000 pauses in all; the model records the first 1, all before this "
                                               "episode).")
    assert _pauses(asked, {}, 1.0, 2.0) == f"{asked}."


def test_a_loss_behind_a_switch_names_the_links_in_route_order_and_the_one_that_held_it_back():
    # issue 42: a PUB in a server room feeds two SUBs in a rack behind a switch; the 10 Mbit/s
    # uplink, not the rack's gigabit links, holds the copies back
    raw = {"scenario": {"name": "rack-pub", "until_s": 3.0},
           "host": [{"name": "a"}, {"name": "b"}, {"name": "server"}], "switch": [{"name": "tor"}],
           "link": [{"name": "a-tor", "hosts": ["a", "tor"], "bandwidth_bps": 1e9},
                    {"name": "b-tor", "hosts": ["b", "tor"], "bandwidth_bps": 1e9},
                    {"name": "uplink", "hosts": ["tor", "server"], "bandwidth_bps": 10e6}],
           "process": [{"name": "feed", "host": "server"}, {"name": "ra", "host": "a"}, {"name": "rb", "host": "b"}],
           "socket": [{"name": "pub", "type": "PUB", "process": "feed", "bind": ["tcp://*:5556"]},
                      {"name": "suba", "type": "SUB", "process": "ra", "connect": ["tcp://server:5556"], "options": {"subscribe": [""]}},
                      {"name": "subb", "type": "SUB", "process": "rb", "connect": ["tcp://server:5556"], "options": {"subscribe": [""]}}],
           "send": [{"socket": "pub", "count": 6000, "interval_s": 1 / 3000, "size_bytes": 1024, "start_s": 0.5}],
           "recv": [{"socket": "suba"}, {"socket": "subb"}]}
    story, result = _explain(raw)
    (episode, *_) = [e for e in story.episodes if e.where.startswith("pub->suba")]
    text = episode.paragraph(1)
    # the copies cross the uplink first (server -> tor), then the rack link (tor -> a)
    assert text.index("crosses link uplink (server->tor") < text.index("crosses link a-tor (tor->a")
    uplink = result.summary["network"]["uplink"]["server->tor"]  # type: ignore[attr-defined]
    assert (f"Of the 2 links this connection crosses, uplink (server->tor, 10 Mbit/s) is the one whose queue held its copies "
            f"back: busy {100 * uplink['active_utilisation']:.0f} % of the time it carried traffic") in text
