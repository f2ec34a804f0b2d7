"""The one vocabulary of knowledge categories, shared by the search and the knowledge base.

`knowledge.models.Category` stores exactly these values (tests/search_engine/synthesis/
test_llm_context.py fails when the two drift). The search asks for categories by diagnosis
(`for_status`): a memory-bound kernel wants the hardware's pages, a wrong answer wants the
correctness constraints.
"""

from __future__ import annotations

HARDWARE_SPECIFIC = "hardware-specific"
GENERAL_OPTIMIZATION = "general-optimization"
CORRECTNESS_CONSTRAINTS = "correctness-constraints"

CATEGORIES: tuple[str, ...] = (HARDWARE_SPECIFIC, GENERAL_OPTIMIZATION, CORRECTNESS_CONSTRAINTS)

# What each kind of diagnosis asks the knowledge base for, most useful first.
BY_NEED: dict[str, list[str]] = {
    "compile": [CORRECTNESS_CONSTRAINTS, GENERAL_OPTIMIZATION],
    "runtime": [CORRECTNESS_CONSTRAINTS, GENERAL_OPTIMIZATION],
    "correctness": [CORRECTNESS_CONSTRAINTS],
    "fusion": [GENERAL_OPTIMIZATION],
    "memory": [HARDWARE_SPECIFIC, GENERAL_OPTIMIZATION],
    "compute": [HARDWARE_SPECIFIC, GENERAL_OPTIMIZATION],
    "occupancy": [HARDWARE_SPECIFIC, GENERAL_OPTIMIZATION],
    "general": [GENERAL_OPTIMIZATION, HARDWARE_SPECIFIC],
}


def categories_for(need: str) -> list[str]:
    return list(BY_NEED.get(need, BY_NEED["general"]))


def unknown(categories: list[str] | None) -> list[str]:
    return [c for c in categories or [] if c not in CATEGORIES]


def bottleneck_query(bottleneck: str, hardware: str = "the GPU",
                     family: str = "this operator") -> tuple[str, str] | None:
    """The one retrieval phrase for a bottleneck class ("memory", "compute", "latency",
    "occupancy"; free text containing one of them) and the need it maps to for
    `categories_for`; None for another class. The search loop and the knowledge base's
    `build_query` both key their queries on it."""
    klass = (bottleneck or "").lower()
    if "memory" in klass:
        return (f"memory hierarchy on {hardware}: HBM bandwidth, coalesced and vectorized "
                f"loads, L2 cache reuse, shared memory", "memory")
    if "compute" in klass:
        return (f"compute throughput on {hardware}: tensor cores, tl.dot tiling, software "
                f"pipelining stages, tf32 and bf16 for {family}", "compute")
    if "latency" in klass or "occupancy" in klass:
        return (f"occupancy and latency on {hardware}: warps per block, registers, shared "
                f"memory per block, grid size and launch overhead for {family}", "occupancy")
    return None
