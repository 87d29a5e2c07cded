"""The guarantee on a problem with a known answer: the M/M/1/K-like loss queue of
tests/mm1k_exact.py, whose exact drop probability is known for every SNDHWM. Searched
many times with different root seeds, the right SNDHWM is chosen at least as often as the
stated confidence promises."""

from __future__ import annotations

import math
from pathlib import Path

import mm1k_exact
import numpy as np
import pytest
from scipy import stats

import zsim
from zsim.search import run_search, spec


def test_exact_blocking_matches_long_runs() -> None:
    # the chain reduces to M/M/1/K when the writer hears of every read
    assert mm1k_exact.blocking(0.8, 5, lwm=1) == pytest.approx(mm1k_exact.closed_form(0.8, 6), rel=1e-9)
    assert mm1k_exact.blocking(0.8, 2) == pytest.approx(mm1k_exact.closed_form(0.8, 3), rel=1e-9)
    for sndhwm in (4, 5):  # the two designs the guarantee problem turns on (summed HWM 5 and 6)
        raw = mm1k_exact.scenario(mm1k_exact.RHO, 300_000)
        raw["socket"][0]["options"]["sndhwm"] = sndhwm
        table = zsim.run(raw, seed=100 + sndhwm).messages
        dropped = (table["state"][np.argsort(table["msg_id"], kind="stable")] == 2).astype(float)
        means = dropped.reshape(50, -1).mean(axis=1)  # batch means: drops come in bursts
        half = stats.t.ppf(0.995, 49) * means.std(ddof=1) / math.sqrt(50)
        assert abs(dropped.mean() - mm1k_exact.blocking(mm1k_exact.RHO, sndhwm + 1)) <= half  # 99 % interval


@pytest.mark.slow
def test_the_right_hwm_is_chosen_as_often_as_promised(tmp_path: Path) -> None:
    confidence, searches = 0.95, 30
    assert mm1k_exact.right_answers() == [5]
    chosen = []
    for seed in range(searches):
        run = run_search(spec.from_dict(mm1k_exact.search_file(seed, confidence)), tmp_path / str(seed), stream=None)
        assert run.outcome.kind == "found"
        chosen.append(dict(run.plan.points[run.outcome.answer].coords)["socket.pub.options.sndhwm"])
    right = sum(h in mm1k_exact.right_answers() for h in chosen)
    # H0: P(right) >= confidence; refused at the 1 % level (a search keeping its promise
    # fails this test with probability below 0.01)
    assert stats.binomtest(right, searches, confidence, alternative="less").pvalue > 0.01, chosen
