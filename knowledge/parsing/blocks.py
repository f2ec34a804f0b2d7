from __future__ import annotations

from dataclasses import dataclass, field

# How a block may be split when it is too long for one chunk:
#   "text": at sentence ends; "code", "table", "lines": only at line ends.
BLOCK_KINDS = ("text", "code", "table", "lines")


@dataclass
class Block:
    text: str
    section: str = ""  # heading path, "Chapter > Section > Subsection"
    page: int | None = None  # 1-based, for paged formats
    kind: str = "text"


@dataclass
class ParsedDocument:
    blocks: list[Block]
    title: str = ""
    pages: int | None = None  # page count for paged formats
    extra: dict = field(default_factory=dict)
    # (1-based page, why) of pages that could not be read; the rest is still indexed.
    failed_pages: list[tuple[int, str]] = field(default_factory=list)


class HeadingPath:
    """The current chain of headings while walking a document top to bottom."""

    def __init__(self) -> None:
        self._levels: list[tuple[int, str]] = []

    def enter(self, level: int, title: str) -> None:
        self._levels = [(lvl, t) for lvl, t in self._levels if lvl < level]
        self._levels.append((level, " ".join(title.split())))

    @property
    def path(self) -> str:
        return " > ".join(t for _, t in self._levels if t)

    @property
    def first(self) -> str:
        return self._levels[0][1] if self._levels else ""
