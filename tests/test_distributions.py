"""Samplers: blocks that grow from small draw exactly what one large block would."""

from __future__ import annotations

import numpy as np
import pytest

from zsim.distributions import parse_distribution


@pytest.mark.parametrize("raw", [{"dist": "exponential", "mean_s": 0.002}, {"dist": "uniform", "low_s": 0.001, "high_s": 0.003},
                                 {"dist": "lognormal", "mean_s": 0.002, "sigma": 0.5},
                                 {"dist": "empirical", "values_s": [0.001, 0.002, 0.01]}])
def test_growing_blocks_draw_the_same_values_as_full_blocks(raw):
    dist = parse_distribution(raw, "x", "s")
    small = dist.sampler(np.random.default_rng(7))
    full = dist.sampler(np.random.default_rng(7), shared_stream=True)
    assert [small.next() for _ in range(10_000)] == [full.next() for _ in range(10_000)]


def test_a_sampler_that_draws_little_holds_little():
    dist = parse_distribution({"dist": "exponential", "mean_s": 1.0}, "x", "s")
    sampler = dist.sampler(np.random.default_rng(1))
    sampler.next()
    assert sampler.held == 16
    for _ in range(16 + 32 + 64):
        sampler.next()
    assert sampler.held == 128


@pytest.mark.parametrize("raw", [{"dist": "exponential", "mean_s": 0.002}, {"dist": "lognormal", "mean_s": 0.002, "sigma": 0.5},
                                 {"dist": "empirical", "values_s": [0.001, 0.002, 0.01]}])
def test_a_shared_stream_sampler_holds_little_and_leaves_the_stream_where_a_full_block_would(raw):
    # A stream shared with other draws (a tcp connection's handshake and hop latency) gets
    # whole 4096-value blocks, so the other draws come after them; the sampler holds only
    # the part it has used, drawing the block again from the saved state when it needs more.
    dist = parse_distribution(raw, "x", "s")
    reference = np.random.default_rng(11)
    first = dist.sampler(reference, shared_stream=True)._draw(reference, 4096)
    other = reference.random(3)  # what the stream's other user draws after the first block
    second = dist.sampler(reference, shared_stream=True)._draw(reference, 4096)

    rng = np.random.default_rng(11)
    sampler = dist.sampler(rng, shared_stream=True)
    assert sampler.next() == first[0]
    assert sampler.held == 16  # 128 bytes, not 32 KB
    assert rng.random(3).tolist() == other.tolist()  # the stream moved on by a whole block
    values = [sampler.next() for _ in range(4096 + 99)]
    assert values == first[1:].tolist() + second[:100].tolist()
