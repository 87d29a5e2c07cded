"""zsim.stats: the quantiles and bounds every report, compare and validation verdict uses,
against scipy where it is installed and against the closed forms and tables without it."""

from __future__ import annotations

import builtins
import math

import pytest

from zsim import stats


@pytest.fixture
def no_scipy(monkeypatch):
    real_import = builtins.__import__

    def refuse(name, *args, **kwargs):
        if name.startswith("scipy"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", refuse)


def test_t_quantiles():
    assert stats.t975(1) == pytest.approx(12.706, abs=1e-3)
    assert stats.t975(19) == pytest.approx(2.093, abs=1e-3)
    assert stats.t975(200) == pytest.approx(1.972, abs=1e-3)
    assert math.isnan(stats.t975(0))
    assert stats.mean_half_width(4, 2.0) == pytest.approx(3.182 * 2.0 / 2.0, abs=1e-3)
    assert math.isnan(stats.mean_half_width(1, 2.0))


def test_t_quantiles_without_scipy(no_scipy):
    assert stats.t975(4) == pytest.approx(2.776, abs=1e-3)
    assert stats.t975(60) == pytest.approx(2.000, abs=2e-3)


def test_zero_of_n_is_the_rule_of_three_exactly():
    # 0 of n: 1 - 0.05^(1/n), about 3/n for large n, never 0
    assert stats.zero_upper(1) == pytest.approx(0.95)
    assert stats.zero_upper(4) == pytest.approx(1 - 0.05 ** 0.25)
    assert stats.zero_upper(40_000) == pytest.approx(3 / 40_000, rel=0.002)
    assert stats.zero_upper(1e12) > 0
    assert stats.zero_upper(0) == 1.0
    scipy_stats = pytest.importorskip("scipy.stats")
    assert stats.zero_upper(40_000) == pytest.approx(float(scipy_stats.beta.ppf(0.95, 1, 40_000)), rel=1e-9)


@pytest.mark.parametrize("k, n", [(1, 10), (3, 100), (50, 100), (9, 10)])
def test_proportion_upper_is_clopper_pearson_and_wilson_without_scipy(k, n, monkeypatch):
    scipy_stats = pytest.importorskip("scipy.stats")
    exact = float(scipy_stats.beta.ppf(0.95, k + 1, n - k))
    assert stats.proportion_upper(k, n) == pytest.approx(exact, rel=1e-9)
    assert k / n < exact < 1
    real_import = builtins.__import__
    monkeypatch.setattr(builtins, "__import__",
                        lambda name, *a, **kw: (_ for _ in ()).throw(ImportError(name)) if name.startswith("scipy")
                        else real_import(name, *a, **kw))
    assert stats.proportion_upper(k, n) == pytest.approx(exact, rel=0.12)  # Wilson's score bound
    assert stats.proportion_upper(n, n) == 1.0 and stats.proportion_upper(0, n) == stats.zero_upper(n)
