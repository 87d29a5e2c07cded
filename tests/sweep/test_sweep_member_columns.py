"""A sweep's rows stay a few hundred columns wide however many members a template has
(issue 27): a template over ``sweep.member_columns`` members is summarised by its
aggregates; every point's row width is estimated before any run and a plan over
``MAX_COLUMNS`` is refused, naming the field that drove it.

Scenarios use the ``ideal`` profile and deterministic intervals: the numbers are the
model's rules, not the machine's.
"""

from __future__ import annotations

import pytest

from zsim.errors import ScenarioError
from zsim.sweep import plan as sweep_plan
from zsim.sweep import run_sweep
from zsim.sweep.store import read_frame


def _base(members: int, small: int = 3) -> dict:
    """A PUB feeding ``members`` SUBs (a template ``s``) and ``small`` more (template ``t``)."""
    return {
        "scenario": {"name": "fanout", "until_s": 0.2, "profile": "ideal"},
        "socket": [
            {"name": "pub", "type": "PUB", "bind": "inproc://feed", "options": {"sndhwm": 5}},
            {"name": "s{i}", "type": "SUB", "count": members, "connect": "inproc://feed", "options": {"rcvhwm": 5, "subscribe": [""]}},
            {"name": "t{i}", "type": "SUB", "count": small, "connect": "inproc://feed", "options": {"rcvhwm": 5, "subscribe": [""]}},
        ],
        "send": [{"socket": "pub", "count": 4, "start_s": 0.05, "interval_s": 0.001}],
        "recv": [{"socket": "s"}, {"socket": "t"}],
    }


def _sweep(members: int, **head) -> dict:
    return {"sweep": {"name": "wide", "seed": 1, **head}, "base": _base(members),
            "axes": {"socket.pub.options.sndhwm": [5, 10]}}


def _columns(frame, prefix: str) -> list[str]:
    return [c for c in frame.columns if c.startswith(prefix)]


def test_a_big_template_is_summarised_and_a_small_one_kept(tmp_path):
    outcome = run_sweep(_sweep(40), tmp_path, engine="local", workers=1, stream=None)
    frame = read_frame(outcome.directory)
    assert len(frame) == 2 and frame["ok"].all()
    # 40 members > 32: no member's own columns, no pipe or thread of theirs
    assert _columns(frame, "socket.s1.") == [] and _columns(frame, "socket.s39.") == []
    assert not [c for c in frame.columns if "->s1." in c or "->s1 " in c or c.startswith("sender.recv.s")]
    # ... but the aggregates over them, which say what each got
    assert (frame["socket.s.members"] == 40).all()
    assert (frame["socket.s.sum_delivered"] == 160).all() and (frame["socket.s.min_delivered"] == 4).all()
    # 3 members: their own columns stay
    assert (frame["socket.t2.delivered"] == 4).all() and (frame["socket.t.sum_delivered"] == 12).all()
    assert len(frame.columns) < 1000


def test_member_columns_keeps_members_on_request(tmp_path):
    outcome = run_sweep(_sweep(40, member_columns=40), tmp_path, engine="local", workers=1, stream=None)
    frame = read_frame(outcome.directory)
    assert (frame["socket.s39.delivered"] == 4).all()
    assert (frame["pipe.pub->s39.dropped"] == 0).all()


def test_member_columns_zero_keeps_aggregates_only(tmp_path):
    outcome = run_sweep(_sweep(40, member_columns=0), tmp_path, engine="local", workers=1, stream=None)
    frame = read_frame(outcome.directory)
    assert _columns(frame, "socket.t1.") == [] and (frame["socket.t.sum_delivered"] == 12).all()


def test_five_thousand_members_plan_a_narrow_row():
    # the case of the issue: a 5,000-member template made ~170,000 columns
    plan = sweep_plan.expand(sweep_plan.from_dict(_sweep(5000)))
    columns, _driver = sweep_plan.row_columns(plan.scenario(plan.points[0].id))
    assert columns < 1000


def test_a_plan_whose_rows_would_be_too_wide_is_refused_before_any_run():
    with pytest.raises(ScenarioError) as caught:
        sweep_plan.expand(sweep_plan.from_dict(_sweep(5000, member_columns=5000)))
    assert caught.value.path == "sweep.member_columns"
    assert "columns, more than the limit of 50,000" in caught.value.reason
    assert "socket.pub.options.sndhwm = 5" in caught.value.reason


def test_many_plain_sockets_are_refused_naming_the_section(monkeypatch):
    monkeypatch.setattr(sweep_plan, "MAX_COLUMNS", 2_000)
    raw = _sweep(1)
    raw["base"]["socket"] += [{"name": f"x{n}", "type": "SUB", "connect": "inproc://feed",
                               "options": {"subscribe": [""]}} for n in range(60)]
    with pytest.raises(ScenarioError) as caught:
        sweep_plan.expand(sweep_plan.from_dict(raw))
    assert caught.value.path == "socket" and "write them as a template" in caught.value.reason


@pytest.mark.parametrize("value", [-1, 10_001, "all", 2.5, True])
def test_member_columns_must_be_a_count(value):
    with pytest.raises(ScenarioError) as caught:
        sweep_plan.from_dict(_sweep(3, member_columns=value))
    assert caught.value.path == "sweep.member_columns"
