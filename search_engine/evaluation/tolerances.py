"""Precision policies and the one tolerance table every correctness check uses.

Outputs are compared against a float64 reference computed from the same inputs.
A trial passes when BOTH hold:

* relative norm error  ||out - ref|| / ||ref||  <= `rel_norm`
* elementwise          |out - ref| <= atol_rms * rms(ref) + rtol * |ref|   (everywhere)

`atol` is relative to the reference's RMS so scaled inputs (x30, x0.01) get the same test.

| class | when                                              | rel_norm | rtol  | atol_rms |
|-------|---------------------------------------------------|----------|-------|----------|
| fp32  | fp32 problem, policy `strict` (fp32 arithmetic)   | 1e-5     | 1e-3  | 1e-4     |
| tf32  | fp32 problem, policy `tf32` (tl.dot default)      | 2e-3     | 2e-2  | 5e-3     |
| fp16  | fp16 problem, or policy `bf16` on an fp16 problem | 5e-3     | 2e-2  | 1e-2     |
| bf16  | bf16 problem, or fp32 problem under policy `bf16` | 2e-2     | 5e-2  | 5e-2     |

fp32 under `strict` fails Triton's default `tl.dot` (tf32, about 3e-4 relative norm on
a K=4096 GEMM): use `input_precision="ieee"` or choose the `tf32` policy. Any speedup
measured under a policy looser than the problem's own dtype is labelled as such.
"""

from __future__ import annotations

from dataclasses import dataclass

POLICIES = ("strict", "tf32", "bf16")


@dataclass(frozen=True)
class Tolerance:
    precision_class: str
    rel_norm: float
    rtol: float
    atol_rms: float


TOLERANCES: dict[str, Tolerance] = {
    "fp32": Tolerance("fp32", rel_norm=1e-5, rtol=1e-3, atol_rms=1e-4),
    "tf32": Tolerance("tf32", rel_norm=2e-3, rtol=2e-2, atol_rms=5e-3),
    "fp16": Tolerance("fp16", rel_norm=5e-3, rtol=2e-2, atol_rms=1e-2),
    "bf16": Tolerance("bf16", rel_norm=2e-2, rtol=5e-2, atol_rms=5e-2),
}

_LOOSENESS = ["fp32", "tf32", "fp16", "bf16"]
_DTYPE_CLASS = {"float32": "fp32", "float64": "fp32", "float16": "fp16", "bfloat16": "bf16"}
_POLICY_CLASS = {"strict": "fp32", "tf32": "tf32", "bf16": "bf16"}


def check_policy(policy: str) -> str:
    if policy not in POLICIES:
        raise ValueError(f"unknown precision policy {policy!r}; choose one of {', '.join(POLICIES)}")
    return policy


def precision_class(policy: str, dtype: str) -> str:
    """The looser of what the problem's dtype and the policy allow."""
    check_policy(policy)
    by_dtype = _DTYPE_CLASS.get(dtype.replace("torch.", ""), "fp32")
    by_policy = _POLICY_CLASS[policy]
    return max(by_dtype, by_policy, key=_LOOSENESS.index)


def tolerance_for(policy: str, dtype: str) -> Tolerance:
    return TOLERANCES[precision_class(policy, dtype)]


def policy_loosens(policy: str, dtype: str) -> bool:
    """True when the policy allows less precision than the problem's own dtype."""
    by_dtype = _DTYPE_CLASS.get(dtype.replace("torch.", ""), "fp32")
    return precision_class(policy, dtype) != by_dtype
