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
# the move that takes a dot one rung up the ladder, by the parent's precision
MORE_ACCURATE_MOVE = {"tf32": "dot_tf32x3", "tf32x3": "dot_ieee"}


def precision_fallback(params: dict[str, Any] | None) -> list[str]:
    """The one move to try first when a kernel with these parameters failed ([] for a kernel
    with no dot or already at fp32 FMA)."""
    move = MORE_ACCURATE_MOVE.get((params or {}).get("PRECISION"))
    return [move] if move else []
