"""One check per kind of field for every file zsim reads (issue 30: spec.py took 2.0 as an
integer where sweep/plan.py refused it)."""

from __future__ import annotations

import pytest

from zsim import fields, profile, spec
from zsim.errors import ScenarioError
from zsim.sweep.plan import from_dict as sweep_from_dict


def test_an_integral_float_is_an_integer_in_scenarios_sweeps_and_profiles():
    raw = {"socket": [{"name": "p", "type": "PUSH", "bind": "inproc://a", "options": {"sndhwm": 2.0}},
                      {"name": "q", "type": "PULL", "connect": "inproc://a"}]}
    assert spec.from_dict(raw).sockets[0].options.sndhwm == 2
    plan = sweep_from_dict({"sweep": {"name": "s", "replications": 2.0}, "base": raw, "axes": {"socket.p.options.sndhwm": [1, 2]}})
    assert plan.replications == 2
    assert fields.integer(3.0, "x") == 3


@pytest.mark.parametrize("value", [2.5, True, "2", None])
def test_everything_else_is_refused_in_the_same_words(value):
    raw = {"socket": [{"name": "p", "type": "PUSH", "bind": "inproc://a", "options": {"sndhwm": value}},
                      {"name": "q", "type": "PULL", "connect": "inproc://a"}]}
    with pytest.raises(ScenarioError) as in_spec:
        spec.from_dict(raw)
    with pytest.raises(ScenarioError) as in_sweep:
        sweep_from_dict({"sweep": {"name": "s", "replications": value}, "base": {**raw, "socket": [
            {**raw["socket"][0], "options": {}}, raw["socket"][1]]}, "axes": {"socket.p.options.sndhwm": [1, 2]}})
    with pytest.raises(ScenarioError) as in_profile:
        profile.from_dict({"scheduler": {"cores": value}}, "p.toml")
    for error in (in_spec, in_sweep):
        assert str(error.value).endswith(f"must be an integer, got {value!r}"), str(error.value)
    # the same words, but a profile file may be any TOML file on the machine: what was
    # found, never the value read (issue 39)
    assert str(in_profile.value) == f"scheduler.cores: must be an integer, got {fields.kind_of(value)}"
    assert repr(value) not in str(in_profile.value) or value is None


def test_bounds_read_the_same():
    with pytest.raises(ScenarioError, match=r"^x: must be at most 10, got 11$"):
        fields.integer(11, "x", 0, 10)
    with pytest.raises(ScenarioError, match=r"^x: must be >= 0, got -1$"):
        fields.integer(-1, "x", 0)
