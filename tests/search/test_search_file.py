"""Every bad field of a search file is one line naming it, exit status 2, before any run."""

from __future__ import annotations

import copy
from pathlib import Path

import mm1k_exact
import pytest

from zsim import metrics
from zsim.cli import main
from zsim.errors import ScenarioError
from zsim.search import spec

GOOD = mm1k_exact.search_file(0)


def broken(change) -> dict:  # type: ignore[no-untyped-def]
    raw = copy.deepcopy(GOOD)
    change(raw)
    return raw


CASES = [
    (lambda r: r["search"].update(confidence=1.2), "search.confidence: must be at least 0.5 and below 1"),
    (lambda r: r["search"].update(indifference=0), "search.indifference: must be > 0"),
    (lambda r: r["search"].update(cost="socket.pub.options.rcvhwm * 2"),
     "search.cost: reads 'socket.pub.options.rcvhwm', which is not a variable"),
    (lambda r: r["search"].update(cost="1 +"), "search.cost: not an expression"),
    (lambda r: r["search"].update(budget_runs=0), "search.budget_runs"),
    (lambda r: r["variables"]["socket.pub.options.sndhwm"].update(step=0), "variables.socket.pub.options.sndhwm.step: must be > 0"),
    (lambda r: r["variables"]["socket.pub.options.sndhwm"].update(monotone="down"), "variables.socket.pub.options.sndhwm.monotone"),
    (lambda r: r["variables"].update({"socket.pbu.options.sndhwm": [1, 2]}),
     "variables.socket.pbu.options.sndhwm: no [[socket]] entry named 'pbu'"),
    (lambda r: r["variables"]["socket.pub.options.sndhwm"].update(low=-3), "variables.socket.pub.options.sndhwm = -3"),
    (lambda r: r["constraint"][0].update(metric="drop_fractoin"),
     "constraint[0].metric: unknown metric 'drop_fractoin' (did you mean 'drop_fraction'?)"),
    (lambda r: r["constraint"][0].update(above=0.1), "constraint[0]: needs exactly one of below or above"),
    (lambda r: r["constraint"][0].update(indifference=-1), "constraint[0].indifference: must be > 0"),
    (lambda r: r["constraint"][0].update(range=[1]), "constraint[0].range: must be [least, most]"),
    (lambda r: r["constraint"][0].update(range=[0.5, 0.1]), "constraint[0].range: must be [least, most] with least < most"),
    (lambda r: r["constraint"][0].update(range=[0.5, 0.9]), "constraint[0].range: must contain the target"),
    (lambda r: r["constraint"][0].update(range=["a", 1]), "constraint[0].range"),
    (lambda r: r.update(constraint=[]), "constraint: missing"),
    (lambda r: r.update(derived={"x": "socket.sbu.dropped / 2"}), "derived.x: reads unknown metric 'socket.sbu.dropped'"),
    (lambda r: r.update(conditions=[700]), "conditions: must be a table"),
    (lambda r: r.update(conditions={"send.pub.rate_per_s": {"values": [700], "monotone": "decreasing"}}),
     "conditions.send.pub.rate_per_s.monotone: unknown field"),
    (lambda r: r.update(conditions={"socket.pub.options.sndhwm": [1, 2]}), "conditions.socket.pub.options.sndhwm: is a variable too"),
    (lambda r: r.update(conditions={"send.pbu.rate_per_s": [700]}), "conditions.send.pbu.rate_per_s: "),
    (lambda r: r.update(conditions={"send.pub.rate_per_s": {"values": []}}), "conditions.send.pub.rate_per_s.values: must be a non-empty"),
]


@pytest.mark.parametrize(("change", "message"), CASES)
def test_bad_field_is_one_line_naming_it(change, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ScenarioError) as caught:
        spec.plan(spec.from_dict(broken(change)))
    assert str(caught.value).startswith(message), str(caught.value)


def test_the_command_prints_one_line_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from zsim import tomlw

    raw = broken(lambda r: r["search"].update(confidence=1.2))
    (tmp_path / "s.toml").write_text(tomlw.to_toml(raw))
    assert main(["search", str(tmp_path / "s.toml"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("zsim: search.confidence:") and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()  # nothing ran, nothing was written


def test_a_fraction_has_a_known_range_and_range_overrides_it() -> None:
    # the range lets equal runs decide (zsim.search.feasibility); a loss or drop fraction
    # is 0 to 1 by definition, a latency has no upper bound unless the file gives one
    assert metrics.bounds("socket.sub.loss_fraction") == (0.0, 1.0)
    assert metrics.bounds("socket.w.max_loss_fraction") == (0.0, 1.0)
    assert metrics.bounds("drop_fraction") == (0.0, 1.0)
    assert metrics.bounds("sender.send.push.refused_fraction") == (0.0, 1.0)
    assert metrics.bounds("socket.w.sum_loss_fraction") is None  # a sum over members exceeds 1
    assert metrics.bounds("socket.sub.latency_p99_s") is None
    raw = copy.deepcopy(GOOD)
    assert spec.from_dict(raw).constraints[0].bounds == (0.0, 1.0)
    raw["constraint"][0]["range"] = [0, 0.5]
    assert spec.from_dict(raw).constraints[0].bounds == (0.0, 0.5)
