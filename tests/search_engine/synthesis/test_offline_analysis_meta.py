"""The offline analysis never runs a problem at full size: the sandboxed probe traces it on
meta tensors, so an official-size problem (a 4096 x 393216 softmax is 6 GiB of fp32; a
large conv's weights and activations more) is analysed under a 1 GiB memory limit, and the
probe reports that it held no real tensor data."""

from __future__ import annotations

from pathlib import Path

import pytest

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline import OfflineSynthesizer
from search_engine.synthesis.offline.analyze import analyze
from search_engine.synthesis.offline.frontend.json_io import CoverageUnknown

ONE_GIB = 1 << 30

SOFTMAX = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)

batch_size = 4096
dim = 393216

def get_inputs():
    return [torch.rand(batch_size, dim)]

def get_init_inputs():
    return []
'''

CONV_GN = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, c_in, c_out, k, groups):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, k)
        self.fc = nn.Linear(16384, 16384)  # 1 GiB of weights, never used by forward
        self.norm = nn.GroupNorm(groups, c_out)

    def forward(self, x):
        return torch.relu(self.norm(self.conv(x)))

def get_inputs():
    return [torch.rand(128, 64, 512, 512).cuda()]  # 8 GiB, on a device the probe lacks

def get_init_inputs():
    return [64, 128, 3, 8]
'''

EAGER = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)

def get_inputs():
    return [torch.ones(4096, 393216, device="cpu")]  # insists on real data: 6 GiB

def get_init_inputs():
    return []
'''


def test_an_official_size_softmax_is_analysed_on_meta_tensors_under_one_gib():
    an = analyze(SOFTMAX, memory_bytes=ONE_GIB)
    assert an.family == "rows"
    assert an.nodes[0].shape == (4096, 393216)
    assert an.materialized_bytes == 0


def test_an_official_size_conv_pipeline_with_huge_weights_is_analysed_under_one_gib():
    synthesizer = OfflineSynthesizer()
    assert synthesizer.check_covered(CONV_GN) == "conv"
    an = synthesizer.analysis(CONV_GN)
    assert an.materialized_bytes == 0
    assert an.nodes[an.output].shape == (128, 128, 510, 510)


def test_a_problem_that_insists_on_real_data_hits_the_sandbox_memory_limit():
    with pytest.raises(CoverageUnknown) as info:
        analyze(EAGER, memory_bytes=ONE_GIB)
    assert isinstance(info.value, NotCoveredError)  # the search stops with the reason
    assert "coverage unknown" in str(info.value) and "memory" in str(info.value)


PARETO_LOSS = (Path(__file__).resolve().parents[3] / "benchmarks" / "kernelbench_like" /
               "official_forms" / "huber_pareto_inputs.py").read_text()

SIZED_BY_VALUE = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)

def get_inputs():
    rows = int(torch.randint(6, 7, ()).item())  # a size read off a value: no meta form
    return [torch.randn(rows, 40)]

def get_init_inputs():
    return []
'''


def test_inputs_drawn_from_distributions_are_analysed_on_meta_tensors_under_one_gib():
    # KernelBench's losses draw 8 GiB of inputs from Pareto(0.01, 1.5): sampling needs only
    # shapes; the distribution's argument checks (which read values) are off on meta
    an = analyze(PARETO_LOSS, memory_bytes=ONE_GIB)
    assert an.family == "reduction" and an.materialized_bytes == 0
    assert an.nodes[0].shape == (32768, 32768)


def test_inputs_sized_by_a_value_are_built_for_real_and_analysed_by_shape():
    an = analyze(SIZED_BY_VALUE, memory_bytes=ONE_GIB)
    assert an.family == "rows" and an.nodes[0].shape == (6, 40)
