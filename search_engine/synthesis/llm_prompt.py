"""The LLM's messages: the system prompt and the user message of one expansion.

The user message carries the problem, the node's code, the memory operator's view
(trajectory, siblings), the node's evaluation (status, diagnostics, integrity findings), the
target's ceilings and the passages the search retrieved for the node's diagnosis. Long parts
are summarised level by level until the message fits the context (prompts.FIT_LEVELS).
"""

from __future__ import annotations

from typing import Any

from search_engine.protocols import ContextPassage
from search_engine.synthesis.base import SynthesisRequest
from search_engine.synthesis.prompts import (
    FIT_LEVELS, Level, fit_hard, keep_last, shorten_code, skill_effect_text, summarise_dropped,
)

SYSTEM_PROMPT = (
    "You are an expert GPU kernel engineer. You write Triton kernels that are correct first "
    "and fast second. Answer with one complete Python file in a single ```python block: it "
    "defines `class ModelNew(nn.Module)` with the same constructor arguments and forward "
    "signature as the reference `Model`, and its forward launches your own @triton.jit "
    "kernels that do the real work. Never call torch operators for the problem's computation "
    "(no torch.softmax, F.linear, torch.matmul, nn.Linear calls), never catch exceptions to "
    "fall back to torch, never touch timers, streams or threads.")

FINAL_LINE = "Answer with the complete file in one ```python block."


def _section(title: str, body: str) -> str:
    return f"## {title}\n{body.strip()}\n"


def build_prompt(request: SynthesisRequest, max_chars: int | None = None) -> str:
    """The user message for one expansion (see the module docstring for what goes in).

    With `max_chars` (the context budget), long parents, trajectories, siblings and passages
    are summarised step by step until the message fits (see prompts.FIT_LEVELS)."""
    prompt = ""
    for level in FIT_LEVELS:
        prompt = render_prompt(request, level)
        if max_chars is None or len(prompt) <= max_chars:
            return prompt
    return fit_hard(prompt, max_chars, FINAL_LINE)


def fit_level(request: SynthesisRequest, prompt: str) -> Level:
    """The level `build_prompt` rendered `prompt` at (the last one when it was cut)."""
    return next((lv for lv in FIT_LEVELS if len(render_prompt(request, lv)) == len(prompt)),
                FIT_LEVELS[-1])


def passage_source(p: ContextPassage) -> str:
    """Where a passage comes from, as the prompt and the candidate page name it."""
    where = p.document + (f" p.{p.page}" if p.page else "")
    if p.section and p.kind != "skill":
        where += f" \u00a7 {p.section}"
    meta = p.metadata or {}
    details = [p.kind if p.kind != "document" else "manual"]
    if meta.get("category"):
        details.append(str(meta["category"]))
    if p.kind == "skill" and p.section:
        details.append(f"family {p.section}")
    if meta.get("transformation"):
        details.append(f"transformation {meta['transformation']}")
    return f"{where} ({', '.join(details)}; score {p.score:.3f})"


def sent_passages(request: SynthesisRequest, level: Level = None) -> list[dict[str, Any]]:
    """The passages as the prompt carries them (text cut to the level's passage size)."""
    size = (level or FIT_LEVELS[0]).passage_chars
    return [{"document": p.document, "page": p.page, "section": p.section, "kind": p.kind,
             "score": p.score, "category": (p.metadata or {}).get("category", ""),
             "source": passage_source(p), "text": p.text.strip()[:size],
             **({"skill_id": (p.metadata or {}).get("skill_id"),
                 "effect": skill_effect_text(p.metadata)} if p.kind == "skill" else {})}
            for p in request.context]


def render_prompt(request: SynthesisRequest, level: Level) -> str:
    """The user message at one fit level: problem, target, task, memory, context."""
    parts = (_problem_sections(request, level) + _task_sections(request, level)
             + _memory_sections(request, level) + _context_sections(request, level))
    return "\n".join(parts + [FINAL_LINE])


def _problem_sections(request: SynthesisRequest, level: Level) -> list[str]:
    t = request.target
    return [
        _section("Problem (reference, KernelBench format)",
                 f"```python\n{shorten_code(request.problem_source, level.problem_chars)}\n```"),
        _section("Target hardware", (
            f"{t.name} ({t.vendor} {t.architecture}): memory bandwidth "
            f"{t.memory_bandwidth_gbs:g} GB/s, fp32 {t.fp32_tflops:g} TFLOP/s, bf16 "
            f"{t.bf16_tflops:g} TFLOP/s, {t.multiprocessors} SMs, L2 "
            f"{t.l2_bytes // (1024 * 1024)} MiB, shared memory per block "
            f"{t.shared_memory_per_block_bytes // 1024} KiB ({t.source}). {t.notes}")),
        _section("Precision policy", (
            f"{request.precision_policy}: "
            + ("fp32 math; tl.dot must use input_precision='ieee' (tf32 fails)."
               if request.precision_policy == "strict"
               else "looser math is allowed and labelled."))),
    ]


def _task_sections(request: SynthesisRequest, level: Level) -> list[str]:
    parent = request.parent
    if request.memory.mode == "restart" or parent.id == 0:
        parts = [_section("Your task", "Write a first fast Triton implementation from "
                          "scratch (the reference is the starting point).")]
    else:
        parts = [_section(f"Current kernel (node {parent.id})",
                          f"```python\n{shorten_code(parent.source, level.code_chars)}\n```"),
                 _section("Its evaluation", _evaluation_text(parent)),
                 _section("Your task", "Improve this kernel: fix it if it failed, "
                          "otherwise make it faster while keeping it correct.")]
    second = request.second_parent
    if second is not None:
        parts.append(_section(f"Second parent (node {second.id}) to combine",
                              f"```python\n{shorten_code(second.source, level.code_chars)}\n```"))
    return parts


def _memory_sections(request: SynthesisRequest, level: Level) -> list[str]:
    memory, parts = request.memory, []
    if memory.trajectory:
        kept, dropped = keep_last(memory.trajectory, level.trajectory_items)
        lines = [summarise_dropped(dropped, "older ancestors")] if dropped else []
        lines += [f"- node {v.id}: {v.origin.get('transformation', '')} \u2192 {v.status}, reward "
                  f"{_num(v.reward)}, speedup {_num(v.speedup_vs_eager)}, "
                  f"{_bottleneck(v.diagnostics)} {v.message[:level.message_chars]}"
                  for v in kept]
        parts.append(_section("Trajectory (ancestors, oldest first)", "\n".join(lines)))
    if memory.siblings:
        kept, dropped = keep_last(memory.siblings, level.sibling_items)
        lines = [summarise_dropped(dropped, "earlier siblings")] if dropped else []
        lines += [f"- node {v.id}: {v.origin.get('transformation', '')} \u2192 {v.status}, reward "
                  f"{_num(v.reward)}, speedup {_num(v.speedup_vs_eager)}: "
                  f"{v.message[:level.message_chars]}" for v in kept]
        parts.append(_section("Already tried from this kernel (siblings)", "\n".join(lines)))
    return parts


def _context_sections(request: SynthesisRequest, level: Level) -> list[str]:
    if not request.context:
        return []
    lines = [f"[{i + 1}] {p['source']}:\n{p['text']}"
             + (f"\n{p['effect']}" if p.get("effect") else "")
             for i, p in enumerate(sent_passages(request, level))]
    return [_section(f"Retrieved context (query: {request.context_query})", "\n\n".join(lines))]


def _num(value) -> str:
    return f"{value:.3f}" if isinstance(value, (int, float)) else "n/a"


def _bottleneck(diagnostics: dict[str, Any]) -> str:
    b = diagnostics.get("bottleneck", "")
    if isinstance(b, dict):
        return f"[{b.get('class', '')}: {b.get('reason', '')}]"
    return f"[{b}]" if b else ""


def _evaluation_text(view) -> str:
    lines = [f"status: {view.status}", f"message: {view.message[:800]}",
             f"reward: {_num(view.reward)}, speedup vs eager: {_num(view.speedup_vs_eager)}, "
             f"coverage (share of device time in your kernels): {_num(view.coverage)}"]
    diag = view.diagnostics
    if diag.get("bottleneck"):
        lines.append(f"diagnosis: {_bottleneck(diag)}")
    roof = diag.get("roofline") or {}
    if roof.get("available"):
        lines.append("roofline: " + ", ".join(f"{k} {v}" for k, v in roof.items()
                                              if isinstance(v, (int, float))))
    for kernel in (diag.get("kernels") or [])[:4]:
        lines.append("kernel: " + ", ".join(f"{k}={v}" for k, v in kernel.items()
                                            if k in ("name", "n_regs", "n_spills", "shared_bytes",
                                                     "num_warps", "occupancy")))
    if view.integrity_flags:
        lines.append("integrity findings:")
        lines += [f"- {f['check']} ({f.get('severity', 'hack')}): {f['evidence'][:300]}"
                  for f in view.integrity_flags]
    return "\n".join(lines)
