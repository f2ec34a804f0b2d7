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
