import pytest

from knowledge.errors import KnowledgeInputError
from knowledge.filetypes import decode_text, detect_kind


@pytest.mark.parametrize("name, head, kind", [
    ("manual.pdf", b"%PDF-1.7\n...", "pdf"),
    ("notes.MD", b"# Title\n", "markdown"),
    ("guide.rst", b"Title\n=====\n", "rst"),
    ("page.htm", b"<!doctype html><p>x</p>", "html"),
    ("readme.txt", b"plain words", "text"),
])
def test_right_content_is_accepted(name, head, kind):
    assert detect_kind(name, head) == kind


@pytest.mark.parametrize("name, head, expected", [
    ("manual.pdf", b"PK\x03\x04rest-of-zip", "named .pdf but it is a ZIP archive"),
    ("manual.pdf", b"just some text", "has no PDF header"),
    ("notes.md", b"%PDF-1.4\n", "content is a PDF"),
    ("notes.md", b"\x89PNG\r\n\x1a\n....", "content is a PNG image"),
    ("page.html", b"\x7fELF\x02\x01", "content is an ELF executable"),
    ("notes.txt", b"text\x00\x01\x02binary", "binary (NUL bytes)"),
    ("slides.pptx", b"PK\x03\x04", "unsupported file type .pptx"),
    ("empty.md", b"   \n\n", "the file is empty"),
])
def test_wrong_type_behind_right_extension_is_refused(name, head, expected):
    with pytest.raises(KnowledgeInputError, match=expected.replace(".", r"\.").replace("(", r"\(").replace(")", r"\)")):
        detect_kind(name, head)


def test_non_utf8_text_is_refused_with_position():
    with pytest.raises(KnowledgeInputError, match=r"not valid UTF-8 text \(byte 3\)"):
        decode_text("a.md", b"abc\xff\xfe")
    assert decode_text("a.md", "\ufeffhé".encode("utf-8")) == "hé"
