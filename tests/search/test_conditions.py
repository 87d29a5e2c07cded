"""A search with ``[conditions]`` answers every condition, each from its own designs, with
one confidence for all the answers together (Bonferroni over every condition's tests), a
table of answers, and resumes like the rest."""

from __future__ import annotations

import json
from pathlib import Path

import mm1k_exact
import pandas as pd
import pytest

from zsim import tomlw
from zsim.cli import main
from zsim.search import run_search, spec
from zsim.search.answer import to_json

RATES = {700: 0.7, 800: 0.8}  # rho at 1,000 services per second


def search_file(seed: int) -> dict:  # type: ignore[type-arg]
    raw = mm1k_exact.search_file(seed)
    raw["conditions"] = {"send.pub.rate_per_s": {"values": list(RATES), "label": "rate"}}
    return raw


def test_every_condition_has_its_own_answer_and_the_split_covers_them_all(tmp_path: Path) -> None:
    run = run_search(spec.from_dict(search_file(3)), tmp_path, stream=None)
    answer = to_json(run)
    assert answer["outcome"] == "found" and answer["conditions_found"] == 2
    assert answer["tests_covered"] == 20 and answer["error_per_test"] == pytest.approx(0.05 / 20)
    for c in answer["conditions"]:
        rate = c["condition"]["send.pub.rate_per_s"]
        assert c["answer"]["design"]["send.pub.rate_per_s"] == rate  # chosen among its own designs
        assert c["answer"]["design"]["socket.pub.options.sndhwm"] in mm1k_exact.right_answers(RATES[rate])
        assert all(d["design"]["send.pub.rate_per_s"] == rate for d in c["designs"]) and len(c["designs"]) == 10
    assert answer["runs"] == sum(c["runs"] for c in answer["conditions"])
    again = run_search(spec.from_dict(search_file(3)), tmp_path, stream=None)  # resumes: nothing to run, the same answers
    assert again.ran == 0 and [p.outcome.answer for p in again.parts] == [p.outcome.answer for p in run.parts]


def test_the_budget_is_shared_fairly_over_the_conditions(tmp_path: Path) -> None:
    raw = search_file(3)
    raw["search"]["budget_runs"] = 40  # a first stage at two designs per condition
    run = run_search(spec.from_dict(raw), tmp_path, stream=None)
    answer = to_json(run)
    assert answer["outcome"] == "budget" and [c["runs"] for c in answer["conditions"]] == [20, 20]


def test_the_command_writes_a_table_of_answers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.toml").write_text(tomlw.to_toml(search_file(3)))
    assert main(["search", str(tmp_path / "s.toml"), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "answers: 2 of 2 conditions have one" in printed
    assert "  send.pub.rate_per_s = 700: socket.pub.options.sndhwm = 3 (cost 3); drop_fraction" in printed
    report = tmp_path / "out" / "report" / "mm1k-3"
    table = pd.read_parquet(report / "answers.parquet")
    assert table["send.pub.rate_per_s"].tolist() == [700, 800] and table["outcome"].tolist() == ["found", "found"]
    assert table["socket.pub.options.sndhwm"].tolist() == [3, 5]
    assert pd.read_csv(report / "answers.csv").equals(table)
    assert json.loads((report / "search.json").read_text())["conditions_total"] == 2
