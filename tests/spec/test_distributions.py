"""Samplers: blocks that grow from small draw exactly what one large block would."""

from __future__ import annotations

import numpy as np
import pytest

from zsim.distributions import parse_distribution


@pytest.mark.parametrize("raw", [{"dist": "exponential", "mean_s": 0.002}, {"dist": "uniform", "low_s": 0.001, "high_s": 0.003},
                                 {"dist": "lognormal", "mean_s": 0.002, "sigma": 0.5},
                                 {"dist": "empirical", "values_s": [0.001, 0.002, 0.01]}])
def test_growing_blocks_draw_the_same_values_as_one_block(raw):
    dist = parse_distribution(raw, "x", "s")
    sampler = dist.sampler(np.random.default_rng(7))
    whole = sampler._draw(np.random.default_rng(7), 10_000)  # 16 + 32 + ... + 4096 + 4096 + ...: the same values
    assert [sampler.next() for _ in range(10_000)] == whole.tolist()


def test_an_integer_sampler_rounds_each_value_to_the_nearest_whole_number():
    dist = parse_distribution({"dist": "uniform", "low_bytes": 10, "high_bytes": 20}, "size", "bytes")
    sampler = dist.sampler(np.random.default_rng(3), integer=True)
    whole = sampler._draw(np.random.default_rng(3), 1_000)
    values = [sampler.next() for _ in range(1_000)]
    assert all(type(v) is int for v in values)
    assert values == np.rint(whole).astype(np.int64).tolist()


def test_a_sampler_that_draws_little_holds_little():
    dist = parse_distribution({"dist": "exponential", "mean_s": 1.0}, "x", "s")
    sampler = dist.sampler(np.random.default_rng(1))
    sampler.next()
    assert sampler.held == 16
    for _ in range(16 + 32 + 64):
        sampler.next()
    assert sampler.held == 128


