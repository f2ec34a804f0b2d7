"""Kernel code as a reader sees it: highlighted source and unified diffs (pygments).

One place for the candidate page, the review page and the comparison of kernels."""

from __future__ import annotations

import difflib

from django.utils.html import format_html
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer, PythonLexer

CODE_STYLE = "monokai"


def code_css() -> str:
    return HtmlFormatter(style=CODE_STYLE).get_style_defs(".highlight")


def source_html(source: str) -> str:
    formatter = HtmlFormatter(linenos="table", cssclass="highlight", style=CODE_STYLE)
    return highlight(source or "# (no source)\n", PythonLexer(), formatter)


def diff_lines(old: str, new: str, old_name: str, new_name: str) -> list[str]:
    return list(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                     fromfile=old_name, tofile=new_name))


def diff_html(lines: list[str]) -> str:
    """The highlighted diff, or "" when the two sides are identical."""
    if not lines:
        return ""
    # A last line without a newline would glue the next hunk header onto it.
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return highlight(text, DiffLexer(), HtmlFormatter(cssclass="highlight", style=CODE_STYLE))


def diff_stats(lines: list[str]) -> str:
    added = sum(1 for l in lines if l.startswith("+") and not l.startswith("+++"))
    removed = sum(1 for l in lines if l.startswith("-") and not l.startswith("---"))
    return format_html("<span class='added'>+{}</span> <span class='removed'>−{}</span>",
                       added, removed)


def code_diff(old: str, new: str, old_name: str, new_name: str) -> dict:
    """{"html", "stats"} of the diff from `old` to `new` for a template."""
    lines = diff_lines(old or "", new or "", old_name, new_name)
    return {"html": diff_html(lines), "stats": diff_stats(lines)}
