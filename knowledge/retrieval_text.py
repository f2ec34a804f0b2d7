"""What gets indexed for a chunk: its text with (optionally) the document title and
section path in front, so a passage about "the default value" still knows it is in
"Pallas pipelining > Warp specialization"."""

from __future__ import annotations

CONTEXT_MODES = ("none", "section", "title+sec")
DEFAULT_CONTEXT = "title+sec"


def context_text(title: str, section: str, text: str, mode: str = DEFAULT_CONTEXT) -> str:
    if mode == "none":
        return text
    if mode == "section":
        head = section
    else:
        head = " > ".join(p for p in (title, section) if p and not section.startswith(title))
        head = head or section or title
    return f"{head}\n\n{text}" if head else text
