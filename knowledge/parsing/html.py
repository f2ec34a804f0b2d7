"""HTML to blocks with the standard library's parser: headings set the section; <pre>
keeps its lines; table rows become "cell | cell" lines; scripts, styles and navigation
are dropped."""

from __future__ import annotations

from html.parser import HTMLParser

from knowledge.parsing.blocks import Block, HeadingPath, ParsedDocument

SKIPPED = {"script", "style", "nav", "head", "noscript", "template", "svg", "footer"}
BLOCK_TAGS = {"p", "li", "dd", "dt", "blockquote", "div", "section", "article", "main",
              "figcaption", "caption", "body", "ul", "ol", "dl", "br", "hr"}
HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}


class _BlockParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.headings = HeadingPath()
        self.blocks: list[Block] = []
        self.title = ""
        self._buffer: list[str] = []
        self._skip_depth = 0
        self._pre_depth = 0
        self._heading: list[str] | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._table_rows: list[str] | None = None
        self._doc_title: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "title":
            self._doc_title = []
        if tag in SKIPPED:
            self._skip_depth += 1
        if self._skip_depth:
            return
        if tag in HEADINGS:
            self._flush()
            self._heading = []
        elif tag == "pre":
            self._flush()
            self._pre_depth += 1
        elif tag == "table":
            self._flush()
            self._table_rows = []
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []
        elif tag in BLOCK_TAGS and not self._pre_depth and self._table_rows is None:
            self._flush()

    def handle_endtag(self, tag):
        if tag == "title" and self._doc_title is not None:
            self.title = " ".join("".join(self._doc_title).split())
            self._doc_title = None
        if tag in SKIPPED:
            self._skip_depth = max(0, self._skip_depth - 1)
            return
        if self._skip_depth:
            return
        if tag in HEADINGS and self._heading is not None:
            heading = " ".join("".join(self._heading).split())
            if heading:
                self.headings.enter(int(tag[1]), heading)
                self.title = self.title or heading
            self._heading = None
        elif tag == "pre" and self._pre_depth:
            self._pre_depth -= 1
            self._flush("code")
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table_rows is not None:
            self._table_rows.append(" | ".join(self._row))
            self._row = None
        elif tag == "table" and self._table_rows is not None:
            self._buffer = ["\n".join(r for r in self._table_rows if r.strip(" |"))]
            self._table_rows = None
            self._flush("table")
        elif tag in BLOCK_TAGS and not self._pre_depth and self._table_rows is None:
            self._flush()

    def handle_data(self, data):
        if self._doc_title is not None:
            self._doc_title.append(data)
        if self._skip_depth:
            return
        if self._heading is not None:
            self._heading.append(data)
        elif self._cell is not None:
            self._cell.append(data)
        elif self._table_rows is None:
            self._buffer.append(data)

    def _flush(self, kind: str = "text") -> None:
        text = "".join(self._buffer)
        self._buffer = []
        if kind == "text":
            text = " ".join(text.split())
        else:
            text = text.strip("\n")
        if text.strip():
            self.blocks.append(Block(text, self.headings.path, None, kind))

    def close(self):
        super().close()
        self._flush()


def parse_html(text: str) -> ParsedDocument:
    parser = _BlockParser()
    parser.feed(text)
    parser.close()
    return ParsedDocument(blocks=parser.blocks, title=parser.title)
