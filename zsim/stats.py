"""The statistics zsim's answers rest on, in one place: Student-t intervals of a mean over
replications, and upper bounds for proportions that stay honest when nothing was seen.

Which unit is independent. Replications are: each run draws from its own seed. The copies
of one run are not: a subscriber that pauses loses a burst of copies at one overflow, so
a binomial interval over copies would be far too narrow whenever copies were lost. So a
loss fraction's interval is over runs (Student t on the runs' fractions), clipped to
[0, 1]. When no run lost anything that interval collapses to 0 +- 0, which claims more
than the runs show; the bound then is the exact (Clopper-Pearson) one-sided bound for 0
lost of all the copies the runs offered, ``1 - alpha^(1/n)`` (about ``3 / n``: the rule of
three). It assumes copies are lost independently, so it is the bound for the copies, not
for bursts: zsim says so next to every answer that rests on it (``zsim.sweep.report``).

scipy gives the quantiles when it is installed (``zsim[stats]``); without it, a table of
Student's t (and its Cornish-Fisher expansion beyond 30 degrees of freedom) and the closed
forms do, to three or more significant digits.
"""

from __future__ import annotations

import math

#: Student's t 97.5 % quantiles for 1 .. 30 degrees of freedom (scipy's, rounded).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(df: int) -> float:
    """The 97.5 % quantile of Student's t with ``df`` degrees of freedom (NaN below 1)."""
    if df < 1:
        return math.nan
    try:
        from scipy import stats

        return float(stats.t.ppf(0.975, df))
    except ImportError:
        pass
    if df <= len(_T975):
        return _T975[df - 1]
    return _cornish_fisher(1.959963984540054, df)


def _cornish_fisher(z: float, df: int) -> float:
    """Student's t quantile from the normal one ``z`` (Cornish-Fisher, three terms)."""
    return (z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3))


def mean_half_width(n: int, sd: float) -> float:
    """The half-width of the Student-t 95 % interval of a mean of ``n`` values with standard
    deviation ``sd`` (NaN below two values)."""
    if n < 2:
        return math.nan
    return t975(n - 1) * sd / math.sqrt(n)


def zero_upper(n: float, confidence: float = 0.95) -> float:
    """The one-sided ``confidence`` upper bound of a proportion of which 0 of ``n`` trials
    succeeded: exactly ``1 - (1 - confidence)^(1/n)`` (Clopper-Pearson; about ``3 / n`` at
    95 %, the rule of three). 1 for no trial at all."""
    if n <= 0:
        return 1.0
    return -math.expm1(math.log1p(-confidence) / n)


def runs_to_bound(share: float, confidence: float = 0.95) -> int:
    """How many runs without the event it takes for ``zero_upper`` to fall to ``share``: the
    smallest ``n`` with ``1 - (1 - confidence)^(1/n) <= share`` (59 for 5 % at 95 %)."""
    return math.ceil(math.log1p(-confidence) / math.log1p(-share))


def proportion_upper(k: float, n: float, confidence: float = 0.95) -> float:
    """The one-sided ``confidence`` upper bound (Clopper-Pearson) of a proportion of which
    ``k`` of ``n`` trials succeeded; 1 when ``k >= n``."""
    if n <= 0 or k >= n:
        return 1.0
    if k <= 0:
        return zero_upper(n, confidence)
    try:
        from scipy import stats

        return float(stats.beta.ppf(confidence, k + 1, n - k))
    except ImportError:
        pass
    # Wilson's score bound (one-sided), within a few per cent of Clopper-Pearson's here
    z = {0.95: 1.6448536269514722, 0.975: 1.959963984540054, 0.99: 2.3263478740408408}.get(confidence, 1.6448536269514722)
    p = k / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return min(1.0, (centre + spread) / (1 + z * z / n))


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (NaN below 1): scipy's;
    without scipy, the Cornish-Fisher expansion around the normal quantile (within 1 % from
    5 degrees of freedom at the levels zsim uses)."""
    if df < 1:
        return math.nan
    if p == 0.975:
        return t975(df)
    try:
        from scipy import stats

        return float(stats.t.ppf(p, df))
    except ImportError:
        pass
    import statistics

    return _cornish_fisher(statistics.NormalDist().inv_cdf(p), df)


def t_test_p(mean: float, sd: float, n: int) -> float | None:
    """The two-sided p-value of Student's one-sample t test of ``mean = 0`` over ``n``
    values with standard deviation ``sd``: 0 for a nonzero difference with no spread (the
    same in every replication), 1 for none at all; None below two values or without scipy
    (``zsim[stats]``), whose t distribution it needs."""
    if n < 2:
        return None
    if sd == 0:
        return 1.0 if mean == 0 else 0.0
    try:
        from scipy import stats
    except ImportError:
        return None
    return float(2 * stats.t.sf(abs(mean) / (sd / math.sqrt(n)), n - 1))


def fdr_adjust(p_values: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values): rejecting every hypothesis whose
    q <= alpha keeps the expected share of false findings among the findings at most
    alpha (Benjamini and Hochberg 1995; valid for positively dependent tests, Benjamini
    and Yekutieli 2001: the metrics of one run move together). scipy's
    ``false_discovery_control``; None of it needed for an empty list."""
    if not p_values:
        return []
    from scipy import stats

    return [float(q) for q in stats.false_discovery_control(p_values, method="bh")]
