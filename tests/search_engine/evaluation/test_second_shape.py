"""The evaluator checks a candidate at a second batch size as well as the problem's own, and
records where it was verified and timed; a candidate tied to one shape is caught there and
says so in its result (never silently)."""

from __future__ import annotations

from .conftest import candidate

OFFICIAL, HALF = [[32, 256]], [[16, 256]]  # the small softmax: batch_size = 32, dim = 256


def test_a_general_kernel_is_verified_at_two_shapes_and_timed_at_one(clean_softmax_result):
    r = clean_softmax_result
    assert r.status == "correct", r.message
    assert r.verified_shapes == [OFFICIAL, HALF]
    assert r.timed_shapes == [OFFICIAL]
    assert r.shape_specific is False
    assert r.shape_check["status"] == "passed"
    assert r.shape_check["how"] == "get_inputs() with batch_size = 16"  # the module's global
    assert r.to_dict()["verified_shapes"] == [OFFICIAL, HALF]  # in the JSON contract


HARD_CODED = candidate("clean_softmax").replace(
    "return launch(x.contiguous())", "return launch(x.contiguous().view(32, -1))")

REFUSING = candidate("clean_softmax").replace(
    "return launch(x.contiguous())",
    "if tuple(x.shape) != (32, 256):\n"
    "            raise ValueError(f'generated for x of shape (32, 256), got {tuple(x.shape)}')\n"
    "        return launch(x.contiguous())")


def test_a_kernel_hard_coded_to_one_shape_is_caught_at_the_second(run_eval):
    r = run_eval(HARD_CODED)
    assert r.status == "correct", r.message  # right where the problem is defined ...
    assert r.shape_specific is True  # ... and wrong elsewhere, which the result says
    assert r.shape_check["status"] == "wrong" and r.shape_check["input_shapes"] == HALF
    assert r.verified_shapes == [OFFICIAL]
    assert "only at the problem's shape" in r.message
    flag = next(f for f in r.integrity_flags if f.check == "shape.wrong_at_other_shape")
    assert flag.severity == "warning" and "[[16, 256]]" in flag.evidence


def test_a_kernel_that_refuses_other_shapes_is_recorded_as_refusing(run_eval):
    r = run_eval(REFUSING)
    assert r.status == "correct", r.message
    assert r.shape_specific is True and r.shape_check["status"] == "refused"
    assert "generated for x of shape (32, 256)" in r.shape_check["message"]
    assert r.verified_shapes == [OFFICIAL]
    assert not any(f.check == "shape.wrong_at_other_shape" for f in r.integrity_flags)


def test_a_problem_without_a_batch_is_not_checked_and_says_why(run_eval):
    source = ("import torch\nfrom torch import nn\n\nclass Model(nn.Module):\n"
              "    def forward(self, x):\n        return torch.softmax(x, dim=0)\n\n"
              "def get_inputs():\n    return [torch.randn(())]\n\n"
              "def get_init_inputs():\n    return []\n")
    scalar = candidate("clean_softmax").replace("return launch(x.contiguous())",
                                                "return launch(x.reshape(1, 1)).reshape(())")
    r = run_eval(scalar, problem=source)
    assert r.shape_check["status"] == "not_checked", (r.status, r.message, r.shape_check)
    assert "no batch dimension" in r.shape_check["message"]
