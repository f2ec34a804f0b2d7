"""What a rendered kernel costs an SM, read from an sm_90 compile on this CPU box (no GPU).

    python -m benchmarks.offline_sass [--kernels JSON] --only avg_pool1d,max_pool1d \
        --labels default,row_taps [--inside]

compiles each Triton kernel of the chosen default-kernel renders
(`default_kernels_bench render`) for sm_90 with Triton's own `ptxas` and prints its
registers, spills, SASS instructions, global loads and, for kernels of one output a lane
(pools), instructions per output. A memory-bound kernel whose SASS per output exceeds what
the SM can issue in the time its bytes take is bound by instructions, not bandwidth: an H100
issues 128 lane-instructions a cycle on each of 132 SMs at about 1.75 GHz, so a pool moving
8 bytes an output at 3 TB/s has about 80 an output. `--inside` compiles only the path of a
row block whose windows lie inside the input (`writers/pooling.py`, `ROW_TAPS`): nearly
every block of a long row takes it. Static counts: a rolled loop's body counts once.

Compiled as Triton specializes at run time on a contiguous input: pointers 16-byte aligned,
each tensor's last stride 1, its other strides multiples of 16. Run it without
TRITON_INTERPRET (the interpreter's kernels cannot be compiled).
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

KERNELS = Path("search_engine/synthesis/offline/default_kernels_h200.json")
BATCH = 64  # the value given to a batch size a kernel takes as a constexpr (kh_B)
_SASS_LINE = re.compile(r"^[-\w]+:[-\w]+:[-\w]+:[-\w]+:\d+\t(.*)$")


def only_inside(source: str) -> str:
    """The source with each interior test made true and its edge walk dropped."""
    lines, out, skipping, inside = source.splitlines(), [], None, None
    for n, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if skipping is not None:
            if line.strip() and indent <= skipping:
                skipping = None
            else:
                continue
        following = lines[n + 1] if n + 1 < len(lines) else ""
        if line.lstrip().startswith("if ") and "tmask = tl.full(" in following:
            line, inside = " " * indent + "if True:", indent
        elif line.strip() == "else:" and indent == inside:
            skipping, inside = indent, None
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def _load(source: str, folder: Path, tag: str):
    path = folder / f"kh_sass_{tag}.py"  # Triton reads a kernel's source from its file
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def _signature(fn, launch_kwargs: dict, positional: list[str]) -> tuple[dict, dict, dict]:
    """Types, constants and alignment attributes as the launch would specialize them: a
    literal integer argument by its value (1 a constant, i32 or i64 by size, multiples of
    16 marked so), the last stride of an input 1, other strides 16-aligned, tensors
    16-byte aligned fp32 pointers."""
    signature, constants, attrs = {}, {}, {}
    last_stride = {}
    for name in fn.arg_names:
        if m := re.fullmatch(r"(p\d+)_s(\d+)", name):
            last_stride[m.group(1)] = max(last_stride.get(m.group(1), 0), int(m.group(2)))
    for i, (name, param) in enumerate(zip(fn.arg_names, fn.params)):
        stride = re.fullmatch(r"(p\d+)_s(\d+)", name)
        literal = positional[i] if i < len(positional) else ""
        if param.is_constexpr:
            value = launch_kwargs.get(name, "kh_B")
            signature[name], constants[(i,)] = "constexpr", BATCH if value == "kh_B" else int(value)
        elif re.fullmatch(r"-?\d+", literal):
            value = int(literal)
            if value == 1:
                signature[name], constants[(i,)] = "constexpr", 1
            else:
                signature[name] = "i32" if -2**31 <= value < 2**31 else "i64"
                if value % 16 == 0:
                    attrs[(i,)] = [["tt.divisibility", 16]]
        elif stride and int(stride.group(2)) == last_stride[stride.group(1)]:
            signature[name], constants[(i,)] = "constexpr", 1
        elif re.fullmatch(r"p\d+|\w+_ptr", name):
            signature[name], attrs[(i,)] = "*fp32", [["tt.divisibility", 16]]
        elif stride:
            signature[name], attrs[(i,)] = "i64", [["tt.divisibility", 16]]
        else:  # a size known at run time (a batch, a group count): fits 32 bits
            signature[name] = "i32"
    return signature, constants, attrs


def _arguments(call: str) -> list[str]:
    """A launch's arguments, split at top-level commas."""
    parts, depth, current = [], 0, ""
    for ch in call:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    return [*parts, current.strip()] if current.strip() else parts


def kernel_costs(source: str, folder: Path, tag: str) -> list[dict]:
    """One row per Triton kernel in `source`: its sm_90 SASS counted."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import get_sass

    module = _load(source, folder, tag)
    rows = []
    for name in re.findall(r"@triton\.jit\ndef (\w+)\(", source):
        call = re.search(rf"{name}\[.*?\]\((.*)\)\s*$", source, re.M)
        arguments = _arguments(call.group(1)) if call else []
        kwargs = dict(a.split("=", 1) for a in arguments if re.match(r"\w+=", a))
        positional = [a for a in arguments if not re.match(r"\w+=", a)]
        warps = int(kwargs.pop("num_warps", 4))
        stages = int(kwargs.pop("num_stages", 3))
        fn = getattr(module, name)
        compiled = triton.compile(ASTSource(fn, *_signature(fn, kwargs, positional)),
                                  target=GPUTarget("cuda", 90, 32),
                                  options={"num_warps": warps, "num_stages": stages})
        sass = [m.group(1) for line in get_sass(compiled.asm["cubin"]).splitlines()
                if (m := _SASS_LINE.match(line))]
        ops = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", op.strip()).split()[0]
                                  .split(".")[0].rstrip(";") for op in sass)
        ops.pop("NOP", None)
        row = {"kernel": name, "num_warps": warps, **_resources(compiled.asm["cubin"], folder),
               "instructions": sum(ops.values()), "global_loads": ops.get("LDG", 0),
               "top": dict(ops.most_common(6)), "mma": ops.get("HMMA", 0) + ops.get("HGMMA", 0),
               "async_copies": ops.get("LDGSTS", 0)}
        if "BLOCK" in kwargs and kwargs["BLOCK"].isdigit():
            per_lane = max(int(kwargs["BLOCK"]) / (32 * warps), 1)
            row.update(block=int(kwargs["BLOCK"]),
                       per_output=round(row["instructions"] / per_lane, 1))
        rows.append(row)
    return rows


def _resources(cubin: bytes, folder: Path) -> dict:
    import triton

    path = folder / "kernel.cubin"
    path.write_bytes(cubin)
    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    usage = subprocess.run([str(tool), "-res-usage", str(path)], capture_output=True,
                           text=True, check=True).stdout
    found = dict(re.findall(r"\b(REG|LOCAL|SHARED):(\d+)", usage))
    return {"registers": int(found.get("REG", 0)), "spill_bytes": int(found.get("LOCAL", 0)),
            "shared_bytes": int(found.get("SHARED", 0))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=Path, default=KERNELS)
    parser.add_argument("--only", required=True, help="comma-separated problem names")
    parser.add_argument("--labels", default="default", help="comma-separated kernel labels")
    parser.add_argument("--inside", action="store_true",
                        help="only the path of row blocks whose windows are inside the input")
    args = parser.parse_args(argv)
    data = json.loads(args.kernels.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        for problem in args.only.split(","):
            kernels = data[problem]["kernels"]
            for label in args.labels.split(","):
                if label not in kernels:
                    print(f"{problem} {label}: not rendered", file=sys.stderr)
                    continue
                source = kernels[label]["source"]
                if args.inside:
                    source = only_inside(source)
                for row in kernel_costs(source, Path(tmp), f"{problem}_{label}"):
                    print(json.dumps({"problem": problem, "label": label,
                                      "inside_only": args.inside, **row}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
