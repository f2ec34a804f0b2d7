"""Measure retrieval on a labelled corpus: recall@k with evidence phrases.

The corpus folder has MANIFEST.md (a table: file, vendor, hardware tags, category, ...)
and questions.json ([{id, question, file, evidence: [...], category}]). A question counts
as found when one of the top-k chunks contains one of its evidence phrases, compared
after normalizing whitespace and inline markup.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

MARKUP = re.compile(r"[`*]")


def normalize(text: str) -> str:
    return " ".join(MARKUP.sub("", text).split())


@dataclass
class CorpusFile:
    path: Path
    relative: str
    vendor: str
    hardware: list[str]
    category: str


def corpus_files(root: Path) -> list[CorpusFile]:
    """The documents listed in the corpus MANIFEST.md with their vendor, tags and category."""
    files = []
    for line in (root / "MANIFEST.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 9 or not (root / cells[0]).is_file():
            continue
        relative, vendor, hardware, category = cells[0], cells[5], cells[6], cells[7]
        files.append(CorpusFile(root / relative, relative, vendor,
                                [h.strip() for h in hardware.split(",") if h.strip()], category))
    return files


def load_questions(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))


def evidence_hit(question: dict, texts: Iterable[str]) -> bool:
    phrases = [normalize(p) for p in question["evidence"]]
    return any(p in normalize(t) for t in texts for p in phrases)


def recall_at_k(questions: list[dict], search: Callable[[str], list[str]]) -> tuple[float, list[str]]:
    """(recall, ids of the questions missed); `search` returns the top-k chunk texts."""
    missed = [q["id"] for q in questions if not evidence_hit(q, search(q["question"]))]
    return 1 - len(missed) / len(questions), missed


# --- diagnostics-keyed retrieval ----------------------------------------------------------
# Search-tree nodes in a state where one passage of the labelled corpus is what the next
# kernel needs: (family, target, status, bottleneck class, evidence phrases of that passage).
NODE_CASES = [
    ("softmax", "mi300x", "correct", "memory", ["peak memory bandwidth of the GPU is 5.3 TB per second"]),
    ("layernorm", "h100", "correct", "memory", ["Maximizing memory throughput involves coalescing memory",
                                                "accessed via 32-, 64-, or 128-byte transactions"]),
    ("matmul", "h200", "correct", "memory", ["usually significantly improves the L2 utilization",
                                             "rearrange the grid to be `(m // mt, n, mt)`"]),
    ("matmul", "h200", "correct", "compute", ["`M` is divisible by 64",
                                              "`N` is divisible by 8 and not greater than 256"]),
    ("matmul", "mi300x", "correct", "compute", ["For kernels with a single GEMM, set to ``2``."]),
    ("matmul", "mi300x", "correct", "occupancy", ["each Execution Unit (EU) has 512 available",
                                                  "it will be rounded up to 176"]),
    ("matmul", "h100", "incorrect", "", ["only the first 10 bits of the input",
                                         "TF32 tensor cores are disabled for matrix multiplications and enabled for"]),
    ("softmax", "h100", "runtime_error", "", [":code:`TRITON_INTERPRET` to :code:`1`",
                                              "bypass compilation and be simulated by the interpreter"]),
]


def plain_query(family: str) -> str:
    """What a session without diagnostics would ask: the operator alone."""
    return f"How do I write a faster {family} kernel in Triton?"


def node_view(status: str, bottleneck: str):
    from search_engine.synthesis.base import NodeView

    diagnostics = {"bottleneck": {"class": f"{bottleneck}-bound"}} if bottleneck else {}
    return NodeView(id=1, source="", origin={"transformation": "tile"}, status=status,
                    diagnostics=diagnostics, coverage=1.0 if status == "correct" else None)


def node_retrieval(provider, case, *, keyed: bool, k: int = 4) -> tuple[str, list]:
    """(query, passages) for one case: keyed on the node's diagnosis, hardware and the
    categories the search loop asks for, or the plain query with no filters. k = 4 is the
    search loop's context_k."""
    from search_engine.hardware import get_target
    from search_engine.search.loop import context_query

    family, target, status, bottleneck, _ = case
    if not keyed:
        query = plain_query(family)
        return query, list(provider.retrieve(query, k=k))
    query, categories = context_query(node_view(status, bottleneck), family, get_target(target))
    return query, list(provider.retrieve(query, hardware=target, categories=categories, k=k))


def prompt_has_passage(prompt: str, case) -> bool:
    return evidence_hit({"evidence": case[4]}, [prompt])


def needed_section(case, section_levels: int = 2) -> str:
    """The "document § section" line a prompt names when it carries a passage of the
    section that holds the case's evidence (its first `section_levels` headings)."""
    from knowledge.models import Chunk

    for chunk in Chunk.objects.select_related("document").iterator():
        if evidence_hit({"evidence": case[4]}, [chunk.text]):
            section = " > ".join(chunk.section.split(" > ")[:section_levels])
            return f"{chunk.document.title}" + (f" § {section}" if section else "")
    raise LookupError(f"no indexed chunk holds the evidence of {case[:4]}")


def prompt_has_section(prompt: str, needed: str) -> bool:
    """`needed` from needed_section; page numbers between title and section are skipped."""
    title, _, section = needed.partition(" § ")
    lines = [line for line in prompt.splitlines() if title in line]
    return any(not section or f"§ {section}" in line for line in lines)


# Questions no document of the corpus answers (our own): off-topic, and near the subject (GPU
# programming) but about hardware or software the corpus does not cover.
UNANSWERABLE = [
    "What is the capital city of Peru?",
    "How do I bake sourdough bread with a starter?",
    "Which football club won the 1998 Champions League final?",
    "How do I configure an nginx reverse proxy with TLS certificates?",
    "What is the boiling point of ethanol at sea level?",
    "How do I file a tax return as a freelancer in Germany?",
    "What are the side effects of ibuprofen?",
    "How do I set up a PostgreSQL streaming replica?",
    "What is the HBM bandwidth of the Intel Gaudi 3 accelerator?",
    "How many tensor processing cores does Google's TPU v5p have per chip?",
    "How do I write a kernel for the Cerebras wafer-scale engine in CSL?",
    "What is the price of an NVIDIA H200 in 2026?",
    "How do I program the Apple Neural Engine directly?",
    "What clock frequency does the Graphcore IPU Mk2 run at?",
    "How do I enable ray tracing cores in a Vulkan game engine?",
    "What is the warranty period for a Dell PowerEdge server?",
    "How do I train a reinforcement learning agent to play chess?",
    "How does Kubernetes schedule pods onto GPU nodes with the device plugin?",
    "What is the instruction set of the RISC-V vector extension 1.0?",
    "How do I mine cryptocurrency on a consumer graphics card?",
    "Which Linux kernel version added io_uring?",
    "What is the thermal design power of the AMD Ryzen 9 7950X?",
    "How do I convert a Word document to PDF on macOS?",
    "What is the population of Tokyo?",
]
