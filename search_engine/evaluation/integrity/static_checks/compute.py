"""Torch compute outside the candidate's kernels (the allow-list of allocation / views /
metadata, nn modules kept for their parameters, dtype casts) and precision downcasts."""

from __future__ import annotations

import ast

from search_engine.evaluation.integrity.static_checks.context import (
    StaticContext, _binding_key, _const_attr_name, _describe, _dotted, _dunder, _flag, _host_nodes,
    _is_self, _outermost_chain, _plain_container,
)
from search_engine.evaluation.integrity.static_checks.policy import (
    DYNAMIC_ATTR_BUILTINS, EXPAND_METHODS, LOW_PRECISION_METHODS, LOW_PRECISION_NAMES,
    METADATA_ATTRS, MODULE_MACHINERY, OVERRIDE_NAMES, TORCH_NON_TENSOR_CALLS,
    forbidden_tensor_names, tensor_names, torch_dtype_names,
)
from search_engine.evaluation.integrity.static_checks.verdicts import path_verdict
from search_engine.evaluation.result import IntegrityFlag


def check_torch_compute(ctx: StaticContext) -> list[IntegrityFlag]:
    """Outside kernels: torch/F functions and Tensor methods beyond allocation and views,
    `@`, and nn compute modules called (kept for their parameters only)."""
    flags = []
    facts = ctx.facts
    for node in _host_nodes(ctx):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.MatMult):
            flags.append(_flag("static.torch_compute", node,
                               f"{_describe(node)}: the @ operator is a torch matmul outside "
                               "the candidate's kernels"))
            continue
        if facts.in_init(node):
            continue
        if isinstance(node, ast.Attribute) and _outermost_chain(node, facts.parents):
            path = facts.resolve(node)
            if path:
                verdict = path_verdict(path)
                if verdict and verdict[0] == "static.torch_compute":
                    flags.append(_flag(verdict[0], node, f"{_describe(node)}: {verdict[1]}"))
        if isinstance(node, ast.Call) and _dotted(node.func) in DYNAMIC_ATTR_BUILTINS \
                and node.args and _const_attr_name(node):
            base = facts.resolve(node.args[0])
            if base:
                verdict = path_verdict(f"{base}.{_const_attr_name(node)}")
                if verdict and verdict[0] == "static.torch_compute":
                    flags.append(_flag(verdict[0], node, f"{_describe(node)}: {verdict[1]}"))
            else:
                flag = _tensor_attribute_flag(ctx, node, node.args[0], _const_attr_name(node))
                if flag:
                    flags.append(flag)
        if isinstance(node, ast.Attribute) and not facts.resolve(node.value):
            flag = _tensor_attribute_flag(ctx, node, node.value, node.attr)
            if flag:
                flags.append(flag)
    # nn modules called, constructed or handed around: modules.check_torch_modules
    return flags


def _receiver_exempt(ctx: StaticContext, receiver: ast.AST, name: str) -> bool:
    """Receivers that are not torch tensors: the candidate's own objects, plain containers."""
    facts = ctx.facts
    method = facts.method_of(receiver) if isinstance(receiver, ast.Name) else None
    if method is not None and method[1] == receiver.id:
        # a method's own receiver: only what its class defines, assigns or registers (any
        # other name spelled `self` is an ordinary value, a tensor perhaps)
        cls = method[0]
        return name in facts.class_attrs(cls) or (facts.is_module_class(cls)
                                                  and name in MODULE_MACHINERY)
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) \
            and receiver.func.id == "super":
        return name in MODULE_MACHINERY or name not in tensor_names()
    if isinstance(receiver, ast.Name) and receiver.id in facts.classes:
        return name in facts.classes[receiver.id]
    key = _binding_key(receiver)
    if key and key in facts.instances:
        return name in facts.classes.get(facts.instances[key], set())
    if key and key in facts.non_tensor:
        return True
    if _plain_container(receiver) and not isinstance(receiver, ast.Call):
        return True
    if isinstance(receiver, ast.Attribute) and receiver.attr in {"device", "dtype", "shape",
                                                                  "layout"}:
        return True  # x.device.type, x.shape.index(...)
    if isinstance(receiver, ast.Call) \
            and ctx.facts.resolve(receiver.func) in TORCH_NON_TENSOR_CALLS:
        return True  # torch.device('cuda').type, torch.finfo(x.dtype).max
    # anything else a torch call answers may be a tensor: nn.Parameter(x), torch.Tensor(x),
    # the allocators (their methods are judged as a tensor's)
    return False


def _tensor_attribute_flag(ctx: StaticContext, node: ast.AST, receiver: ast.AST,
                           name: str) -> IntegrityFlag | None:
    facts = ctx.facts
    if _dunder(name) or name in OVERRIDE_NAMES:
        return None  # check_forbidden_attributes / check_torch_override
    parent = facts.parents.get(id(node))
    if name in EXPAND_METHODS:
        # t.expand(shape).stride(): only the broadcast strides are read
        grand = facts.parents.get(id(parent)) if isinstance(parent, ast.Call) else None
        if isinstance(grand, ast.Attribute) and grand.value is parent \
                and grand.attr in METADATA_ATTRS:
            return None
        if _receiver_exempt(ctx, receiver, name):
            return None
        return _flag("static.torch_compute", node,
                     f"{_describe(parent if isinstance(parent, ast.Call) else node)}: .{name}() "
                     "is allowed only to read a broadcast's strides (t.expand(s).stride())")
    if name in {"float", "double", "to"} and isinstance(parent, ast.Call) \
            and parent.func is node and not _is_self(receiver):
        return _cast_flag(ctx, parent, name)
    if name not in forbidden_tensor_names() or _receiver_exempt(ctx, receiver, name):
        return None
    shown = _describe(parent if isinstance(parent, ast.Call) and parent.func is node else node)
    if name in {"numpy", "tolist", "item"}:
        why = "copies the tensor to the host (Python/numpy computes outside the kernel)"
    elif name.startswith("_"):
        why = "a private Tensor method"
    else:
        why = "a torch Tensor method doing work outside the candidate's kernels (allowed: " \
              "allocation, views, metadata)"
    return _flag("static.torch_compute", node, f"{shown}: .{name} is {why}")


def _cast_flag(ctx: StaticContext, call: ast.Call, name: str) -> IntegrityFlag | None:
    """Under the strict policy a cast may not change the dtype (a device move is fine)."""
    if ctx.precision_policy != "strict":
        return None
    problem = f"torch.{ctx.problem_dtype}"
    if name == "float":
        target = "torch.float32"
    elif name == "double":
        target = "torch.float64"
    else:
        dtype_args = [a for a in call.args if _looks_like_dtype(ctx, a)]
        dtype_args += [k.value for k in call.keywords if k.arg == "dtype"]
        if not dtype_args:
            return None
        arg = dtype_args[0]
        if isinstance(arg, ast.Attribute) and arg.attr == "dtype":
            return None  # .to(x.dtype): back to a tensor's own dtype
        target = ctx.facts.resolve(arg) or _describe(arg)
    if target == problem or target.split(".")[-1] in LOW_PRECISION_NAMES \
            or (ctx.problem_dtype == "float32" and target == "torch.float"):
        return None  # unchanged, or judged by check_precision_downcast
    return _flag("static.torch_compute", call,
                 f"{_describe(call)}: a dtype change to {target} outside a kernel in a "
                 f"{ctx.problem_dtype} problem under the strict policy")


def _looks_like_dtype(ctx: StaticContext, node: ast.AST) -> bool:
    path = ctx.facts.resolve(node)
    if path:
        return path in torch_dtype_names()
    return isinstance(node, ast.Attribute) and node.attr == "dtype"


def check_precision_downcast(ctx: StaticContext) -> list[IntegrityFlag]:
    """Lower precision than the policy allows in an fp32 problem (fp16/bf16/fp8 casts)."""
    if ctx.problem_dtype != "float32" or ctx.precision_policy == "bf16":
        return []
    flags = []
    for node in ast.walk(ctx.tree):
        hit = None
        if isinstance(node, ast.Attribute) and node.attr in LOW_PRECISION_NAMES:
            hit = _dotted(node) or node.attr
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in LOW_PRECISION_METHODS:
            hit = f".{node.func.attr}()"
        elif isinstance(node, ast.Constant) and node.value in {"fp16", "bf16", "float16",
                                                                 "bfloat16"}:
            hit = repr(node.value)
        if hit:
            flags.append(_flag("static.precision_downcast", node,
                               f"uses {hit} in an fp32 problem under the "
                               f"{ctx.precision_policy!r} precision policy"))
    return flags
