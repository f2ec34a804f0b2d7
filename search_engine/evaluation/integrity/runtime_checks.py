"""Runtime integrity checks: judge the evidence the sandbox child sent back.

Each check is a small function returning a list of `IntegrityFlag`s with readable evidence.
"""

from __future__ import annotations

from search_engine.evaluation.correctness import rel_norm_distance
from search_engine.evaluation.result import IntegrityFlag


def check_own_kernels_ran(report: dict) -> list[IntegrityFlag]:
    """The launch hook must see the candidate's own Triton kernels in every trial."""
    missing = [t["trial"] for t in report.get("trials", []) if t["own_launches"] == 0]
    if not missing:
        return []
    others = sorted({name for t in report.get("trials", []) for name in t["other_launches"]})
    return [IntegrityFlag(
        "runtime.no_own_kernel_launch",
        f"trials {missing}: forward returned without launching any Triton kernel defined in the "
        "candidate" + (f" (other kernels launched: {others})" if others else ""),
    )]


def check_profiler_kernel_names(report: dict) -> list[IntegrityFlag]:
    """On a GPU the profiler must see device time in kernels with the hooked names."""
    profile = report.get("profile_us")
    own = report.get("own_kernels", [])
    if not profile or not own:
        return []
    seen = any(is_own_kernel(k, report) for k in profile)
    unseen = [] if seen else list(own)
    if not unseen:
        return []
    return [IntegrityFlag(
        "runtime.profiler_kernel_mismatch",
        f"launch hook saw {unseen} but the profiler recorded no device time under those names "
        f"(profiled kernels: {sorted(profile)[:8]})",
    )]


def check_timer_tampering(report: dict) -> list[IntegrityFlag]:
    """Timing primitives replaced while the candidate ran (the static check's runtime twin)."""
    names = report.get("tampered_timers") or []
    if not names:
        return []
    return [IntegrityFlag("runtime.timer_patch",
                          f"the candidate replaced {', '.join(names)} while it ran")]


def check_input_mutation(report: dict) -> list[IntegrityFlag]:
    found = [f"trial {t['trial']}: {m}" for t in report.get("trials", []) for m in t["mutations"]]
    if not found:
        return []
    return [IntegrityFlag("runtime.input_mutation",
                          "the candidate wrote into its inputs: " + "; ".join(found[:5]))]


def check_output_aliasing(report: dict) -> list[IntegrityFlag]:
    found = [f"trial {t['trial']}: {a}" for t in report.get("trials", []) for a in t["aliases"]]
    if not found:
        return []
    return [IntegrityFlag("runtime.output_aliases_input",
                          "outputs must be fresh tensors: " + "; ".join(found[:5]))]


def check_result_reuse(outputs: list[list], references: list[list],
                       tolerance: float) -> list[IntegrityFlag]:
    """A trial's output that matches ANOTHER trial's reference (or repeats another trial's
    output exactly) was computed for different inputs."""
    import torch

    evidence = []
    for i, out in enumerate(outputs):
        for j, ref in enumerate(references):
            if i == j:
                continue
            if rel_norm_distance(out, ref) <= tolerance and rel_norm_distance(out, references[i]) > tolerance:
                evidence.append(f"trial {i} returned the result for trial {j}'s inputs")
                break
        else:
            if all(o.numel() > 1 and float(o.max() - o.min()) == 0.0 for o in out):
                continue  # a constant output is wrong, not reused: check_constant_output
            for j in range(i):
                same = len(out) == len(outputs[j]) and all(
                    a.shape == b.shape and torch.equal(a, b) for a, b in zip(out, outputs[j]))
                if same and rel_norm_distance(references[i], ref) > tolerance:
                    evidence.append(f"trials {j} and {i} returned identical outputs for different inputs")
                    break
    if not evidence:
        return []
    return [IntegrityFlag("runtime.result_reuse", "; ".join(evidence[:5]))]


def check_timed_outputs(report: dict, tolerance: float) -> list[IntegrityFlag]:
    """Outputs produced inside the timed loop must match the same inputs' trial output."""
    bad = [f"input set {c['trial']}: relative difference {c['rel_norm_diff']:.3g}"
           for c in report.get("timed_consistency", []) if not c["rel_norm_diff"] <= tolerance]
    if not bad:
        return []
    return [IntegrityFlag("runtime.result_caching_in_timing",
                          "outputs computed during timing differ from the checked outputs for "
                          "the same inputs: " + "; ".join(bad[:5]))]


def check_constant_output(outputs: list[list], references: list[list]) -> list[IntegrityFlag]:
    for i, (out, ref) in enumerate(zip(outputs, references)):
        for k, (o, r) in enumerate(zip(out, ref)):
            if o.is_floating_point() and o.numel() > 1 and r.numel() > 1 \
                    and float(o.max() - o.min()) == 0.0 and float(r.max() - r.min()) > 0.0:
                return [IntegrityFlag(
                    "runtime.constant_output",
                    f"trial {i} output {k} is the constant {float(o.flatten()[0]):.6g} while the "
                    "reference varies", severity="warning")]
    return []


def check_streams(report: dict) -> list[IntegrityFlag]:
    default = report.get("default_stream")
    if default is None:
        return []
    others = sorted({s for t in report.get("trials", []) for s in t["streams"] if s != default})
    if not others:
        return []
    return [IntegrityFlag(
        "runtime.non_default_stream",
        f"own kernels launched on stream(s) {others}, not the current stream {default}; timing "
        "synchronizes the whole device, so hidden work is still counted", severity="warning")]


def check_wallclock(report: dict, factor: float) -> list[IntegrityFlag]:
    """CUDA events must agree with the host clock around the same repetitions."""
    events = (report.get("timing", {}).get("candidate") or {}).get("median_ms")
    host = report.get("host_median_ms")
    if not events or not host or "interpreter" in report["timing"]["candidate"]["method"]:
        return []
    if host > factor * events and host - events > 1.0:
        return [IntegrityFlag(
            "timing.wallclock_mismatch",
            f"host clock {host:.3f} ms per call vs CUDA events {events:.3f} ms: work is happening "
            "outside the measured interval")]
    return []


def check_roofline(candidate_ms: float | None, floor_ms: float | None,
                   slack: float) -> list[IntegrityFlag]:
    """Faster than bytes/bandwidth or FLOPs/peak allow is impossible, not a win."""
    if not candidate_ms or not floor_ms:
        return []
    if candidate_ms < slack * floor_ms:
        return [IntegrityFlag(
            "roofline.impossible_speedup",
            f"measured {candidate_ms * 1e3:.1f} us but moving the minimum bytes and FLOPs needs at "
            f"least {floor_ms * 1e3:.1f} us on this target: the work was skipped or cached")]
    return []


def coverage_flag(coverage: float | None, threshold: float, method: str) -> list[IntegrityFlag]:
    if coverage is None or coverage >= threshold:
        return []
    return [IntegrityFlag(
        "lazy.low_coverage",
        f"the candidate's own kernels account for {coverage:.0%} of {method}; at least "
        f"{threshold:.0%} is required (the rest ran in torch/library kernels)", severity="warning")]


def check_torch_in_kernel(report: dict) -> list[IntegrityFlag]:
    """Under the interpreter a kernel body is Python: torch compute inside it is not a kernel."""
    ops: dict[str, int] = {}
    for t in report.get("trials", []):
        for name, count in (t.get("torch_in_kernel") or {}).items():
            ops[name] = ops.get(name, 0) + count
    if not ops:
        return []
    listed = ", ".join(f"{k} x{v}" for k, v in sorted(ops.items(), key=lambda kv: -kv[1])[:6])
    return [IntegrityFlag("runtime.torch_in_kernel",
                          f"torch operators ran inside a Triton kernel's body: {listed}")]


def check_ghost_replay(ghost: dict | None) -> list[IntegrityFlag]:
    """Outputs that stay right when every Triton launch does nothing were computed by
    something else (torch by a side path, NumPy, cached state); so was a torch result that
    already equals the answer (a kernel that only copies it out)."""
    if not ghost:
        return []
    if ghost.get("failed"):
        return [IntegrityFlag(
            "runtime.ghost_failed",
            f"the ghost replay (an ordinary-looking call) did not give an answer: "
            f"{ghost.get('note', '')[:300]}; a call that cannot be judged counts against "
            "the candidate")]
    if not ghost.get("passed"):
        if ghost.get("torch_results_matching"):
            return [IntegrityFlag(
                "runtime.torch_computed_result",
                f"with every Triton launch a no-op, {ghost['torch_results_matching']} torch "
                "operator result(s) already equal the reference output: torch computes the "
                "answer and the kernels only move it")]
        return []
    return [IntegrityFlag(
        "runtime.ghost_replay",
        "with every Triton launch replaced by a no-op and fresh memory poisoned, the outputs "
        "for unseen inputs were still correct: the candidate's kernels did not compute them")]


def check_host_compute(report: dict) -> list[IntegrityFlag]:
    """Tensors turned into NumPy arrays or Python lists inside forward: the host computed."""
    reads: dict[str, int] = {}
    for t in report.get("trials", []):
        for name, count in (t.get("host_reads") or {}).items():
            reads[name] = reads.get(name, 0) + count
    if not reads:
        return []
    listed = ", ".join(f"Tensor.{k}() x{v}" for k, v in sorted(reads.items()))
    return [IntegrityFlag("runtime.host_compute",
                          f"forward moved tensors to host Python/NumPy outside any kernel: {listed}")]


def check_dispatch_escapes(report: dict) -> list[IntegrityFlag]:
    used: dict[str, int] = {}
    sources = [*report.get("trials", []), report.get("ghost") or {}, report.get("load") or {}]
    for t in sources:
        for name, count in (t.get("dispatch_escapes") or {}).items():
            used[name] = used.get(name, 0) + count
    if not used:
        return []
    return [IntegrityFlag("runtime.dispatch_escape",
                          "forward left the evaluator's torch dispatch modes (which count "
                          f"torch's work) through {', '.join(sorted(used))}")]


def _summed(report: dict, key: str) -> dict[str, int]:
    """`key` counts over the load, every trial and the ghost replay."""
    total: dict[str, int] = {}
    for t in [report.get("load") or {}, *report.get("trials", []), report.get("ghost") or {}]:
        for name, count in (t.get(key) or {}).items():
            total[str(name)] = total.get(str(name), 0) + int(count)
    return total


def check_threads(report: dict) -> list[IntegrityFlag]:
    """The evaluator's watch (torch's dispatch modes: work counters, result projections,
    memory fills) holds for one thread: a thread of the candidate's is outside it."""
    started = _summed(report, "threads")
    for name, count in (report.get("threads_total") or {}).items():
        started[str(name)] = max(started.get(str(name), 0), int(count))
    alive = sum(int(t.get("threads_alive") or 0)
                for t in [*report.get("trials", []), report.get("ghost") or {}])
    if not started and not alive:
        return []
    listed = ", ".join(f"{k} x{v}" for k, v in sorted(started.items()))
    return [IntegrityFlag(
        "runtime.thread_spawn",
        "the candidate started threads (" + (listed or "none through threading") +
        (f"; {alive} still running after a call" if alive else "") +
        "): work on another thread escapes the evaluator's watch")]


def check_torch_compute(report: dict) -> list[IntegrityFlag]:
    """Torch arithmetic, reductions or library kernels during a call, outside the
    candidate's kernels (seen at dispatch, however the Python reached them: a function
    stored in `__init__`, a module in a container, a partial, an operator on a value taken
    out of a list): torch doing the problem's work by a side path. Views, allocations,
    fills and copies are allowed (coverage weighs their bytes)."""
    ops = _summed(report, "torch_compute")
    if not ops:
        return []
    listed = ", ".join(f"aten.{k} x{v}" for k, v in sorted(ops.items(), key=lambda kv: -kv[1])[:8])
    return [IntegrityFlag("runtime.torch_compute",
                          f"torch computed outside the candidate's Triton kernels during "
                          f"forward: {listed}")]


def check_host_scalar_reads(report: dict) -> list[IntegrityFlag]:
    """Scalars read out of tensors (`item()`, `float()`, `int()`, `__index__`, `bool()`, any
    route to aten's `_local_scalar_dense`) during the candidate's import, construction or
    calls feed host arithmetic no kernel sees."""
    reads = _summed(report, "scalar_reads")
    for name, count in _summed(report, "dispatch_scalar_reads").items():
        reads[f"aten.{name}"] = reads.get(f"aten.{name}", 0) + count
    if not reads:
        return []
    listed = ", ".join(f"{k}() x{v}" if k.startswith("aten.") else f"Tensor.{k}() x{v}"
                       for k, v in sorted(reads.items()))
    return [IntegrityFlag("runtime.host_scalar_read",
                          f"the candidate read tensor values into host Python: {listed}")]


def check_host_callables(report: dict) -> list[IntegrityFlag]:
    """A plain Python callable handed to a kernel (or named in its body): the interpreter
    runs it on the host, a compiled kernel could not run it at all."""
    found: dict[str, set] = {}
    for t in report.get("trials", []):
        for kernel, what in (t.get("host_callables") or {}).items():
            found.setdefault(str(kernel), set()).update(map(str, what))
    if not found:
        return []
    listed = "; ".join(f"{k}: {', '.join(sorted(v)[:4])}" for k, v in sorted(found.items()))
    return [IntegrityFlag("runtime.python_callable_in_kernel",
                          f"kernels got Python callables that are not kernels: {listed}")]


def check_torch_result_flood(report: dict) -> list[IntegrityFlag]:
    """More torch results shaped like an output than the evaluator projects in one call:
    decoys to bury the one that is the answer."""
    from search_engine.evaluation.candidate_call import MAX_PROJECTIONS

    counts = [int(t.get("projections_total") or 0) for t in report.get("trials", [])]
    ghost = report.get("ghost") or {}
    counts.append(int(ghost.get("torch_results") or 0))
    worst = max(counts, default=0)
    if worst <= MAX_PROJECTIONS:
        return []
    return [IntegrityFlag("runtime.torch_result_flood",
                          f"one call made {worst} torch results with an output's number of "
                          f"elements (over {MAX_PROJECTIONS})")]


def check_torch_answer_moved(report: dict) -> list[IntegrityFlag]:
    """A torch result already equal to a trial's answer, after which the candidate's
    kernels still ran: torch computed the answer and the kernels only moved it."""
    moved = [t["trial"] for t in report.get("trials", []) if t.get("torch_answer_moved")]
    if not moved:
        return []
    return [IntegrityFlag(
        "runtime.torch_computed_result",
        f"trials {moved[:8]}: a torch operator's result already equalled the reference "
        "output before the candidate's kernels ran: torch computes the answer and the "
        "kernels only move it")]


def check_harness_patch(report: dict) -> list[IntegrityFlag]:
    """The evaluator's own code in the candidate's process (the call wrapper, the wire
    helpers, the hooks) replaced while the candidate ran."""
    names = set(report.get("tampered_harness") or [])
    for t in [*report.get("trials", []), report.get("ghost") or {}]:
        names.update(t.get("tampered_harness") or [])
    if not names:
        return []
    return [IntegrityFlag("runtime.harness_patch",
                          f"the candidate replaced the evaluator's {', '.join(sorted(names)[:6])}")]


def is_own_kernel(profiled: str, report: dict) -> bool:
    """Whether a profiled kernel is the candidate's: its name is a compiled kernel's exact
    symbol or a launched function's name (older Triton adds a `_0d1d2de` signature suffix),
    matched whole: an aten kernel whose name merely contains one is not the candidate's."""
    import re

    names = {str(n) for n in (report.get("own_kernel_symbols") or [])} | \
        {str(n) for n in (report.get("own_kernels") or [])}
    return profiled in names or any(
        re.fullmatch(re.escape(n) + r"_[0-9a-z]+", profiled) for n in names)
