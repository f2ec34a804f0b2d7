"""tl.dot's input precisions as a ladder: a kernel that misses its tolerance steps up one rung.

tf32 (one tensor-core product, ~1e-3 relative error) -> tf32x3 (three tf32 products, hi*hi +
hi*lo + lo*hi: fp32 accuracy on tensor cores) -> ieee (fp32 FMA, several times slower).
A looser policy allows a rung, it never forbids a more accurate one: under `tf32`, a
normalisation after the dot (InstanceNorm after a convolution, on a trial with shifted
inputs) can amplify tf32's error past the tolerance, and tf32x3 is then the fastest kernel
that passes, where jumping to ieee would cost several times more.
"""

from __future__ import annotations

from typing import Any

STRICT_DOT_PRECISION = "tf32x3"
MORE_ACCURATE = ("tf32", "tf32x3", "ieee")  # the ladder, least accurate first
RUNG_MOVES = {"tf32x3": "dot_tf32x3", "ieee": "dot_ieee"}  # the move onto each upper rung


def next_rung(precision: str | None) -> str | None:
    """The precision one rung above `precision` (None at the top, or for a kernel with no
    dot precision)."""
    if precision not in MORE_ACCURATE[:-1]:
        return None
    return MORE_ACCURATE[MORE_ACCURATE.index(precision) + 1]


def precision_fallback(params: dict[str, Any] | None) -> list[str]:
    """The one move to try first when a kernel with these parameters failed ([] for a kernel
    with no dot or already at fp32 FMA)."""
    rung = next_rung((params or {}).get("PRECISION"))
    return [RUNG_MOVES[rung]] if rung else []
