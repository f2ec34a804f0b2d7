"""Tensor descriptors (TMA) are public Triton API and pass the static checks; a descriptor
that could read or write outside the tensor it describes is still refused."""

from __future__ import annotations

from search_engine.evaluation.integrity.static_checks import run_static_checks

HEADER = '''
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def copy_kernel(x_desc, y_desc, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    tile = x_desc.load([pid * BLOCK, 0])
    y_desc.store([pid * BLOCK, 0], tile * 2.0)


@triton.jit
def device_desc_kernel(x_ptr, y_ptr, M, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1],
                                       block_shape=[BLOCK, BLOCK])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1],
                                       block_shape=[BLOCK, BLOCK])
    y_desc.store([pid * BLOCK, 0], x_desc.load([pid * BLOCK, 0]) * 2.0)


def _alloc(size, alignment, stream):
    return torch.empty(size, device="cuda", dtype=torch.int8)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
'''


def _hacks(body: str) -> list[str]:
    flags = run_static_checks(HEADER + body, "float32", "strict")
    return [f"{f.check}: {f.evidence}" for f in flags if f.severity != "warning"]


def test_host_descriptors_from_tensors_pass():
    assert _hacks('''        x_desc = TensorDescriptor.from_tensor(x, [32, 32])
        y_desc = TensorDescriptor.from_tensor(y, [32, 32])
        copy_kernel[(x.shape[0] // 32,)](x_desc, y_desc, BLOCK=32)
        return y
''') == []


def test_device_descriptors_with_an_allocator_pass():
    assert _hacks('''        triton.set_allocator(_alloc)
        device_desc_kernel[(x.shape[0] // 32,)](x, y, x.shape[0], x.shape[1], BLOCK=32)
        return y
''') == []


def test_a_descriptor_built_from_a_raw_shape_is_refused():
    hacks = _hacks('''        x_desc = TensorDescriptor(x, [1 << 20, 32], [32, 1], [32, 32])
        y_desc = TensorDescriptor.from_tensor(y, [32, 32])
        copy_kernel[(x.shape[0] // 32,)](x_desc, y_desc, BLOCK=32)
        return y
''')
    assert any("raw base, shape and strides" in h for h in hacks), hacks


def test_rewriting_a_descriptors_bounds_is_refused():
    hacks = _hacks('''        x_desc = TensorDescriptor.from_tensor(x, [32, 32])
        x_desc.shape = [1 << 20, 32]
        y_desc = TensorDescriptor.from_tensor(y, [32, 32])
        copy_kernel[(x.shape[0] // 32,)](x_desc, y_desc, BLOCK=32)
        return y
''')
    assert any("rewrites a tensor descriptor's .shape" in h for h in hacks), hacks


def test_other_triton_tools_stay_forbidden():
    hacks = _hacks('''        from triton.tools import disasm
        x_desc = TensorDescriptor.from_tensor(x, [32, 32])
        y_desc = TensorDescriptor.from_tensor(y, [32, 32])
        copy_kernel[(x.shape[0] // 32,)](x_desc, y_desc, BLOCK=32)
        return y
''')
    assert any(h.startswith("static.forbidden_import") for h in hacks), hacks
