"""The elementwise family: one fused 1-D kernel over the output; every operand is loaded
once, the whole pointwise DAG runs in registers, one store."""

from __future__ import annotations

from search_engine.synthesis.offline.frontend.ir import LEAVES, Analysis
from search_engine.synthesis.offline.plan.kernel_plan import ELEMENTWISE_KERNEL
from search_engine.synthesis.offline.writers import codegen
from search_engine.synthesis.offline.writers.codegen import (
    Kernel, an_extra_leaves, leaf_kind, operand, pointwise, unravel, varying_dims,
)


def elementwise_kernel(an: Analysis, ids: list[int], out_id: int, shape, name: str,
                       args: list[str], launch_prefix: list[str], out_var: str,
                       params: dict) -> tuple[Kernel, list[str]]:
    """A fused 1-D kernel computing node `out_id` over `shape`; returns kernel and launch."""
    k = Kernel(name)
    nodes = an.nodes
    leaves = [i for i in ids if nodes[i].op in LEAVES or i in an_extra_leaves(an)]
    k.params.append("out_ptr")
    call = [out_var]
    rank = len(shape)
    for i in leaves:
        k.params.append(f"in{i}_ptr")
        call.append(f"kh_t{i}")
    k.params.append("n_elements")
    call.append(f"{out_var}.numel()")
    needs = set()
    for i in leaves:
        if leaf_kind(nodes[i].shape, shape) == "bcast":
            for d in varying_dims(nodes[i].shape, shape):
                needs.add(d)
                k.params.append(f"s{i}_{d}")
                call.append(f"kh_st{i}[{d}]")
    for d in range(rank):
        k.params.append(f"D{d}: tl.constexpr")
        call.append(f"{out_var}.shape[{d}]" if rank else "1")
    k.params.append("BLOCK: tl.constexpr")
    body = k.body
    body.append("pid = tl.program_id(0)")
    body.append("offs = pid * BLOCK + tl.arange(0, BLOCK)")
    body.append("mask = offs < n_elements")
    if needs:
        body.extend(unravel("offs", [f"D{d}" for d in range(rank)], "c"))
    names: dict[int, str] = {}
    for i in ids:
        node = nodes[i]
        if i in leaves:
            kind = leaf_kind(node.shape, shape)
            if kind == "full":
                body.append(f"v{i} = tl.load(in{i}_ptr + offs, mask=mask, other=0.0)"
                            ".to(tl.float32)")
            elif kind == "scalar":
                body.append(f"v{i} = tl.load(in{i}_ptr).to(tl.float32)")
            else:
                off = " + ".join(f"c{d} * s{i}_{d}" for d in varying_dims(node.shape, shape))
                body.append(f"v{i} = tl.load(in{i}_ptr + {off}, mask=mask, other=0.0)"
                            ".to(tl.float32)")
        else:
            body.append(f"v{i} = " + pointwise(node, [operand(a, names) for a in node.operands]))
        names[i] = f"v{i}"
    body.append(f"tl.store(out_ptr + offs, v{out_id}.to(out_ptr.dtype.element_ty), mask=mask)")
    launch = list(launch_prefix)
    for i in leaves:
        if leaf_kind(nodes[i].shape, shape) == "bcast":
            launch.append(f"kh_st{i} = kh_t{i}.expand({out_var}.shape).stride()")
    block = params["BLOCK"]
    launch.append(f"kh_grid = (triton.cdiv({out_var}.numel(), {block}),)")
    launch.append(f"{name}[kh_grid](" + ", ".join(call) + f", BLOCK={block}, "
                  f"num_warps={params['num_warps']})")
    return k, launch



def render(an: Analysis, params):
    ids = sorted(an.nodes)
    shape = tuple(an.nodes[an.output].shape)
    prefix = codegen.leaf_prefix(an, ids, shape)
    prefix.append(f"kh_out = torch.empty({shape!r}, device={codegen.device_expr(an)}, "
                  f"dtype={an.output_dtype})")
    kernel, launch = elementwise_kernel(an, ids, an.output, shape,
                                                ELEMENTWISE_KERNEL, codegen.args_of(an), prefix,
                                                "kh_out", params)
    return [kernel], launch + ["return kh_out"]
