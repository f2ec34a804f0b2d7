"""A problem's inputs at another batch size: drawn again through the module's batch global
when get_inputs() reads one, else the batch tensors cut or repeated (values stay in the
problem's own domain: class indices, probabilities)."""

from __future__ import annotations

import types

import pytest
import torch

from search_engine.batch_shapes import batch_positions, inputs_at_batch, second_batch


def module_with(body: str) -> types.ModuleType:
    module = types.ModuleType("problem")
    exec("import torch\n" + body, module.__dict__)
    return module


def test_a_batch_global_is_changed_drawn_again_and_restored():
    module = module_with("batch_size = 8\ndim = 5\n"
                         "def get_inputs():\n"
                         "    return [torch.randn(batch_size, dim), "
                         "torch.randint(0, dim, (batch_size,)), 3]\n")
    official = module.get_inputs()
    inputs, how = inputs_at_batch(module, official, 4, draw=module.get_inputs)
    assert [tuple(x.shape) for x in inputs[:2]] == [(4, 5), (4,)] and inputs[2] == 3
    assert how == "get_inputs() with batch_size = 4" and module.batch_size == 8


def test_without_a_global_the_batch_tensors_are_cut_or_repeated():
    module = module_with("def get_inputs():\n    return [torch.rand(6, 3), torch.rand(3)]\n")
    official = module.get_inputs()
    assert batch_positions(official) == [0]  # the (3,) weight-like input is not the batch
    half, how = inputs_at_batch(module, official, 3, draw=module.get_inputs)
    assert tuple(half[0].shape) == (3, 3) and torch.equal(half[0], official[0][:3])
    assert half[1] is official[1] and "resized" in how
    more, _ = inputs_at_batch(module, official, 14)
    assert tuple(more[0].shape) == (14, 3) and torch.equal(more[0][6:12], official[0])


def test_a_global_that_is_not_the_batch_is_not_taken_for_it():
    module = module_with("N = 6\ndef get_inputs():\n    return [torch.rand(6, N)]\n")
    inputs, how = inputs_at_batch(module, module.get_inputs(), 3, draw=module.get_inputs)
    assert tuple(inputs[0].shape) == (3, 6) and "resized" in how and module.N == 6


def test_inputs_without_a_batch_are_refused_and_batch_one_doubles():
    with pytest.raises(ValueError, match="no leading"):
        inputs_at_batch(None, [torch.tensor(1.0), 2], 3)
    assert second_batch(16) == 8 and second_batch(1) == 2


def test_the_second_batch_stays_under_the_byte_limit():
    assert second_batch(64, input_bytes=64 << 20, limit_bytes=4 << 20) == 4  # 1 MiB a row
    assert second_batch(1, input_bytes=8 << 20, limit_bytes=4 << 20) is None
