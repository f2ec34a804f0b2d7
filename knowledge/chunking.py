"""Pack parsed blocks into chunks sized for the embedding model, with overlap.

A block that fits stays whole. A longer one is split at sentence ends (prose) or line
ends (code, tables, PDF lines); only a single line longer than a chunk is cut between
words. Chunks end at a section change unless the chunk so far is small, in which case
the next section's heading is written into the chunk so its context survives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from knowledge.parsing.blocks import Block

# Sentence end: ".", "!" or "?" and a space, or a newline before a list item or blank line.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[`*A-Z0-9])|\n(?=\s*(?:[-*+]|\d+[.)])\s)|\n\s*\n")

TokenCounter = Callable[[list[str]], list[int]]


@dataclass
class ChunkingConfig:
    max_tokens: int = 200  # word pieces of chunk content; the heading context comes on top
    overlap_tokens: int = 40
    # Below this many tokens a chunk continues into the next section instead of ending.
    min_section_tokens: int = 60


@dataclass
class ChunkDraft:
    text: str
    section: str
    page: int | None
    ordinal: int
    tokens: int


@dataclass
class _Unit:
    text: str
    section: str
    page: int | None
    tokens: int
    separator: str  # joins it to the unit before it


def chunk_blocks(blocks: list[Block], count: TokenCounter,
                 config: ChunkingConfig = ChunkingConfig()) -> list[ChunkDraft]:
    units = _units(blocks, count, config.max_tokens)
    chunks: list[ChunkDraft] = []
    current: list[_Unit] = []
    fresh = 0  # units in `current` that are not overlap from the previous chunk

    def emit() -> None:
        first = current[len(current) - fresh] if fresh else current[0]
        chunks.append(ChunkDraft(_join(current), first.section, first.page, len(chunks),
                                 sum(u.tokens for u in current)))

    for unit in units:
        size = sum(u.tokens for u in current)
        section_change = bool(current) and unit.section != current[-1].section
        full = size + unit.tokens > config.max_tokens
        if fresh and (full or (section_change and size >= config.min_section_tokens)):
            emit()
            current = [] if section_change else _tail(current, config.overlap_tokens)
            while current and sum(u.tokens for u in current) + unit.tokens > config.max_tokens:
                current.pop(0)
            fresh = 0
        if current and unit.section != current[-1].section and unit.section:
            # Merged into a chunk of another section: keep the heading with its text.
            heading = unit.section.split(" > ")[-1]
            unit = _Unit(f"{heading}\n{unit.text}", unit.section, unit.page,
                         unit.tokens + len(heading.split()), "\n\n")
        current.append(unit)
        fresh += 1
    if fresh:
        emit()
    return chunks


def _join(units: list[_Unit]) -> str:
    parts = [units[0].text]
    for unit in units[1:]:
        parts.append(unit.separator + unit.text)
    return "".join(parts).strip()


def _tail(units: list[_Unit], budget: int) -> list[_Unit]:
    tail: list[_Unit] = []
    used = 0
    for unit in reversed(units):
        if used + unit.tokens > budget:
            break
        tail.insert(0, unit)
        used += unit.tokens
    return tail


def _units(blocks: list[Block], count: TokenCounter, max_tokens: int) -> list[_Unit]:
    sizes = count([b.text for b in blocks])
    pieces: list[tuple[Block, str, str]] = []  # block, text, separator
    for block, size in zip(blocks, sizes):
        if size <= max_tokens:
            pieces.append((block, block.text, "\n\n"))
            continue
        parts, separator = _split(block)
        for i, part in enumerate(parts):
            pieces.append((block, part, "\n\n" if i == 0 else separator))
    piece_sizes = count([text for _, text, _ in pieces])
    units: list[_Unit] = []
    for (block, text, separator), size in zip(pieces, piece_sizes):
        if size <= max_tokens:
            units.append(_Unit(text, block.section, block.page, size, separator))
            continue
        # One line or sentence longer than a whole chunk: cut between words.
        words = text.split()
        per_piece = max(1, int(len(words) * max_tokens / size * 0.9))
        for start in range(0, len(words), per_piece):
            part = " ".join(words[start : start + per_piece])
            units.append(_Unit(part, block.section, block.page,
                               count([part])[0], separator if start == 0 else " "))
    return units


def _split(block: Block) -> tuple[list[str], str]:
    if block.kind == "text":
        parts = [p.strip() for p in SENTENCE_END.split(block.text) if p and p.strip()]
        return parts, " "
    return [line for line in block.text.split("\n") if line.strip()], "\n"
