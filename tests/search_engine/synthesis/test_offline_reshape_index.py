"""A reshape's source index is computed group by group (the smallest runs of dims with
the same element count on both sides), so a kept dim reads its own index and no index is
rebuilt through the whole flat offset; every mapping must still be torch's."""

from __future__ import annotations

import itertools
import random

import pytest
import torch

from search_engine.synthesis.offline.writers.staged_expr import reshape_index

NAMES = "abcdefgh"


def _mapped(shape, src_shape):
    """For every element of `shape`, the source index reshape_index gives (evaluated)."""
    names = [NAMES[d] if s != 1 else "0" for d, s in enumerate(shape)]
    exprs = reshape_index(tuple(names), tuple(shape), tuple(src_shape))
    for position in itertools.product(*(range(s) for s in shape)):
        scope = {NAMES[d]: v for d, v in enumerate(position)}
        yield position, tuple(eval(e, {}, scope) for e in exprs)  # noqa: S307 (our text)


CASES = [((2, 3, 4), (6, 4)), ((6, 4), (2, 3, 4)), ((4, 6), (2, 3, 4)), ((2, 12), (4, 6)),
         ((3, 1, 8), (3, 2, 4)), ((1, 24), (2, 3, 4)), ((2, 3, 4), (24,)), ((24,), (4, 1, 6)),
         ((5, 4, 3, 2), (5, 2, 12)), ((5, 2, 12), (5, 4, 3, 2)), ((2, 2), (2, 2))]


@pytest.mark.parametrize("shape,src_shape", CASES)
def test_every_element_reads_torchs_source_element(shape, src_shape):
    source = torch.arange(int(torch.tensor(src_shape).prod())).reshape(src_shape)
    viewed = source.reshape(shape)
    for position, src_position in _mapped(shape, src_shape):
        assert source[src_position] == viewed[position]


def test_random_reshapes_match_torch():
    rng = random.Random(0)
    for _ in range(40):
        factors = [rng.choice([1, 2, 3, 4]) for _ in range(rng.randint(1, 5))]
        shape = _split(factors, rng)
        src_shape = _split(factors, rng)
        test_every_element_reads_torchs_source_element(shape, src_shape)


def _split(factors, rng):
    """A shape whose sizes multiply to the same count (factors grouped at random)."""
    shape, current = [], 1
    for f in factors:
        current *= f
        if rng.random() < 0.5:
            shape.append(current)
            current = 1
    return tuple(shape + [current])


def test_a_kept_dim_reads_its_own_index():
    # a group norm's view: batch kept, channels x spatial regrouped
    idx = reshape_index(("i0", "i1", "i2", "i3"), (112, 64, 512, 512), (112, 8, 2097152))
    assert idx[0] == "i0" and "i0" not in idx[1] + idx[2]
    assert reshape_index(("b", "c"), (4, 6), (4, 1, 6)) == ("b", "0", "c")


def test_a_view_and_its_inverse_read_the_input_at_its_own_index(tmp_path):
    # a GroupNorm reshapes x to (N, G, rest), normalises, and reshapes back: the normalise
    # kernel loads x at (i0, i1, i2, i3) itself, not through the flat offset twice
    from search_engine.synthesis.offline.spaces import staged

    from .conftest import run_candidate
    from .test_offline_staged import local_analysis, problem

    # (groups of 10240 elements: too long for a row group, so a normalise kernel of its own)
    source = problem("self.norm = nn.GroupNorm(2, 4)", "self.norm(x)",
                     "torch.randn(2, 4, 64, 80)")
    an = local_analysis(source)
    candidate = staged.render(source, an, staged.default_params(an, "interpreter", "strict"))
    normalise = candidate[candidate.index("def kh_stage2_add"):]
    assert "tl.load(p0 + (i0) * p0_s0 + (i1) * p0_s1 + (i2) * p0_s2 + (i3) * p0_s3," in normalise
    expected, got, _ = run_candidate(source, candidate, tmp_path)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
