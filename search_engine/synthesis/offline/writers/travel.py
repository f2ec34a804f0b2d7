"""Kernels that travel: a generated module takes any batch size, not only the problem's own.

The families write their sizes as literals for the traced shape (block sizes, grids and
loop bounds chosen for it: the specialised fast path). To learn which of those literals
follow the batch, the probe traces the problem again at two other batch sizes
(`batch_shapes.traced_batches`) and the family renders the same parameters at each. When the
renders differ only in integer literals inside `forward()` (the kernels themselves are
identical, so nothing compiled depends on the batch) and every differing literal is an
affine function of the batch size, those literals become expressions of `kh_B`, the
leading size of the call's first batch input, read at run time; the shape check then
accepts any batch size. Anything else — a kernel that changes with the batch (a block sized
to a row that spans the batch, a reduction over it), a family that picks another structure,
a problem traced only at its own batch — keeps the module at the shape it was generated for,
and its check says so plainly (`codegen.shape_contract`).
"""

from __future__ import annotations

import ast
import io
import tokenize
from typing import Callable

from search_engine.synthesis.offline.frontend.ir import Analysis
from search_engine.synthesis.offline.writers import codegen

BATCH_NAME = "kh_B"


def render(render_one: Callable[[Analysis], str], an: Analysis,
           prepare: Callable[[Analysis], Analysis]) -> str:
    """The candidate for `an`, taking any batch size when the renders at the probe's other
    batch sizes show its sizes follow the batch; fixed at `an`'s shapes otherwise."""
    base = render_one(an)
    merged = _traveling(base, render_one, an, prepare)
    return merged if merged is not None else base


def takes_any_batch(source: str) -> bool:
    """Whether a generated candidate says it takes any batch size."""
    return "KH_ANY_BATCH = True" in source


def shape_note(source: str, an: Analysis) -> str:
    """The candidate's shapes in one line, for its notes (and so the tree and its page)."""
    shapes = ", ".join(f"{name} {shape}" for name, shape in
                       codegen.shape_inputs(an, codegen.args_of(an)))
    if takes_any_batch(source):
        return f"takes any batch size (generated for {shapes})"
    return f"sizes fixed: verified only at the shape it was generated for ({shapes})"


def _traveling(base: str, render_one, an: Analysis, prepare) -> str | None:
    variants = getattr(an, "batch_variants", None) or {}
    batch_input = _batch_input(an, variants)
    if batch_input is None:
        return None
    index, name = batch_input
    renders = [(_leading(an, index), base)]
    for batch, variant in sorted(variants.items()):
        try:
            prepared = prepare(variant)
            if prepared.family != an.family:
                return None
            renders.append((batch, render_one(prepared)))
        except Exception:  # noqa: BLE001 - a shape this family cannot take: stays fixed
            return None
    batch_names = {n for i, n in _input_names(an) if _leading_varies(an, variants, i)}
    contract = codegen.shape_contract(an, batch_names)
    renders = [(b, _with_contract(src, contract)) for b, src in renders]
    return _merge(renders, name)


def _input_names(an: Analysis) -> list[tuple[int, str]]:
    args = codegen.args_of(an)
    return [(n.attrs["index"], args[n.attrs["index"]]) for n in an.topo()
            if n.op == "input" and not n.attrs.get("scalar") and len(n.shape) >= 1
            and 0 <= n.attrs.get("index", -1) < len(args)]


def _leading(an: Analysis, index: int) -> int:
    return next(n.shape[0] for n in an.topo()
                if n.op == "input" and n.attrs.get("index") == index)


def _leading_varies(an: Analysis, variants: dict, index: int) -> bool:
    base = _leading(an, index)
    try:
        return all(_leading(v, index) == b != base for b, v in variants.items())
    except StopIteration:
        return False


def _batch_input(an: Analysis, variants: dict) -> tuple[int, str] | None:
    """(index, name) of the first input whose leading dim is the batch in every variant."""
    if len(variants) < 2:
        return None
    return next(((i, name) for i, name in _input_names(an)
                 if _leading_varies(an, variants, i)), None)


def _with_contract(source: str, contract: str) -> str:
    start = source.index(codegen.CONTRACT_START)
    end = source.index(codegen.CONTRACT_END) + len(codegen.CONTRACT_END)
    return source[:start] + contract + source[end:]


def _tokens(source: str) -> list[tokenize.TokenInfo]:
    return [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type not in (tokenize.NL, tokenize.COMMENT)]


def _merge(renders: list[tuple[int, str]], batch_arg: str) -> str | None:
    """The first render with each literal that differs between the renders replaced by its
    affine expression in the batch; None when they differ otherwise, or outside forward()
    and the Triton kernels. A kernel whose body follows the batch gets it as a constexpr
    argument (`kh_B`, recompiled per batch size, the same code at the traced one)."""
    (b0, base), others = renders[0], renders[1:]
    lines = base.splitlines(keepends=True)
    forward_row = next((r for r, line in enumerate(lines, 1)
                        if line.startswith("    def forward(")), None)
    streams = [_tokens(base)] + [_tokens(src) for _, src in others]
    if forward_row is None or len({len(s) for s in streams}) != 1:
        return None
    kernels = _kernels(base)
    edits, batched = [], set()
    for tokens in zip(*streams):
        if len({t.string for t in tokens}) == 1:
            continue
        row = tokens[0].start[0]
        kernel = next((k for k in kernels if k.lineno < row <= k.end_lineno), None)
        if any(t.type != tokenize.NUMBER for t in tokens) or \
                (row <= forward_row and kernel is None):
            return None
        expr = _affine([b0] + [b for b, _ in others], [t.string for t in tokens])
        if expr is None:
            return None
        edits.append((tokens[0].start, tokens[0].end, expr))
        if kernel is not None:
            batched.add(kernel)
    if not edits:
        return None
    for kernel in batched:
        launches = _launches(base, kernel.name)
        if not launches or any(row <= forward_row for row, _ in launches):
            return None
        last = kernel.args.args[-1]
        edits.append(((last.end_lineno, last.end_col_offset),) * 2
                     + (f", {BATCH_NAME}: tl.constexpr",))
        edits += [(end, end, f", {BATCH_NAME}={BATCH_NAME}") for end in launches]
    for (row, col), (end_row, end_col), expr in sorted(edits, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + expr + line[end_col:]
    # the batch is read before anything else in forward(); an empty batch is refused
    lines.insert(forward_row, f"        {BATCH_NAME} = {batch_arg}.shape[0]\n"
                              f"        if {BATCH_NAME} < 1:\n"
                              f"            raise ValueError('ModelNew needs a batch of at "
                              f"least one, got ' + str(tuple({batch_arg}.shape)))\n")
    return "".join(lines)


def _kernels(source: str) -> list[ast.FunctionDef]:
    """The module's @triton.jit functions."""
    return [node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)
            and node.args.args and any("jit" in ast.unparse(d) for d in node.decorator_list)]


def _launches(source: str, kernel: str) -> list[tuple[int, int]]:
    """(row, column) of the closing parenthesis of each `kernel[grid](...)` call."""
    return [(node.end_lineno, node.end_col_offset - 1) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == kernel]


def _affine(batches: list[int], texts: list[str]) -> str | None:
    """`k * kh_B + c` through every (batch, literal) with integer k and c, else None."""
    try:
        values = [int(t, 0) for t in texts]
    except ValueError:
        return None  # a float (1/n of a mean over the batch): not taken at run time
    if batches[1] == batches[0]:
        return None
    k, rest = divmod(values[1] - values[0], batches[1] - batches[0])
    c = values[0] - k * batches[0]
    if rest or k == 0 or any(k * b + c != v for b, v in zip(batches, values)):
        return None
    term = BATCH_NAME if k == 1 else f"{BATCH_NAME} * {k}"
    if c == 0:  # parenthesised: the literal may sit after `%`, `//` or `*`
        return term if k == 1 else f"({term})"
    return f"({term} {'+' if c > 0 else '-'} {abs(c)})"
