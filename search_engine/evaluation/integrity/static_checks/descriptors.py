"""Tensor descriptors (Hopper TMA) are public Triton API: a candidate may describe its own
tensors and load tiles through them.

Allowed: `from triton.tools.tensor_descriptor import TensorDescriptor`,
`TensorDescriptor.from_tensor(t, block_shape)` on the host (shape and strides come from the
tensor, so the copy engine stays inside it), `triton.set_allocator` (the scratch that
device-side descriptors need) and, in kernels, `tl.make_tensor_descriptor` and a
descriptor's `load` / `store` / ... (triton.language, checked with the kernel bodies).

Refused, because that is what a descriptor could be abused for: a host descriptor built from
a raw base, shape and strides (`TensorDescriptor(base, shape, ...)`) or one whose base,
shape or strides are rewritten afterwards: either lets the copy engine read or write memory
outside the tensor it claims to describe (stale outputs of an earlier call, other buffers).
"""

from __future__ import annotations

import ast

from search_engine.evaluation.integrity.static_checks.context import StaticContext, _flag
from search_engine.evaluation.result import IntegrityFlag

DESCRIPTOR_MODULE = "triton.tools.tensor_descriptor"
DESCRIPTOR_CLASS = f"{DESCRIPTOR_MODULE}.TensorDescriptor"
# Names a candidate may import from the descriptor module, and host paths it may use.
DESCRIPTOR_IMPORTS = {DESCRIPTOR_MODULE: {"TensorDescriptor"}}
DESCRIPTOR_HOST_NAMES = {f"{DESCRIPTOR_CLASS}.from_tensor", "triton.set_allocator"}
# A descriptor's fields that say which memory it covers.
DESCRIPTOR_FIELDS = {"base", "shape", "strides", "block_shape"}


def descriptor_import_allowed(module: str, names: list[str]) -> bool:
    """`from triton.tools.tensor_descriptor import TensorDescriptor` (and only that)."""
    allowed = DESCRIPTOR_IMPORTS.get(module)
    return bool(allowed) and bool(names) and all(n in allowed for n in names)


def check_tensor_descriptors(ctx: StaticContext) -> list[IntegrityFlag]:
    flags = []
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Call) and ctx.facts.resolve(node.func) == DESCRIPTOR_CLASS:
            flags.append(_flag(
                "static.forbidden_attribute", node,
                "builds a TensorDescriptor from a raw base, shape and strides: use "
                "TensorDescriptor.from_tensor(tensor, block_shape), whose bounds are the "
                "tensor's own"))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)) \
                and node.attr in DESCRIPTOR_FIELDS and not _is_self(node.value):
            flags.append(_flag(
                "static.forbidden_attribute", node,
                f"rewrites a tensor descriptor's .{node.attr}: its bounds must stay the "
                "described tensor's"))
    return flags


def _is_self(value: ast.AST) -> bool:
    """`self.shape = ...` sets a module's own field, never a descriptor's."""
    return isinstance(value, ast.Name) and value.id == "self"
