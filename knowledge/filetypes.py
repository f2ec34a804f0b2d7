"""Which kind of document a file is: by extension, confirmed by its bytes (magic numbers).

A right extension on the wrong content (a ZIP named .md, a PNG named .pdf) is refused
before anything is stored.
"""

from __future__ import annotations

from pathlib import PurePath

from knowledge.errors import KnowledgeInputError

EXTENSIONS = {
    ".pdf": "pdf",
    ".md": "markdown",
    ".markdown": "markdown",
    ".rst": "rst",
    ".html": "html",
    ".htm": "html",
    ".txt": "text",
    ".text": "text",
}
KIND_LABELS = {
    "pdf": "PDF",
    "markdown": "Markdown",
    "rst": "reStructuredText",
    "html": "HTML",
    "text": "plain text",
}

# Signatures of binary formats people upload by mistake (or on purpose). Other binaries
# (executables, bzip2, ...) are caught by their NUL bytes.
BINARY_SIGNATURES = [
    (b"%PDF-", "a PDF"),
    (b"PK\x03\x04", "a ZIP archive (or an Office document)"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"\xfd7zXZ\x00", "an xz archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"\x7fELF", "an ELF executable"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Office document"),
    (b"Rar!", "a RAR archive"),
]

# The PDF header may follow a little junk; readers accept it within the first KiB.
PDF_HEADER_WINDOW = 1024


def kind_for_name(name: str) -> str:
    suffix = PurePath(name).suffix.lower()
    if suffix not in EXTENSIONS:
        allowed = ", ".join(sorted(EXTENSIONS))
        raise KnowledgeInputError(
            f"{PurePath(name).name}: unsupported file type {suffix or '(no extension)'}; "
            f"upload one of {allowed}."
        )
    return EXTENSIONS[suffix]


def detect_kind(name: str, head: bytes) -> str:
    """The document kind for a file named `name` whose first bytes are `head`.

    Raises KnowledgeInputError when the content does not match the extension.
    """
    kind = kind_for_name(name)
    filename = PurePath(name).name
    if not head.strip():
        raise KnowledgeInputError(f"{filename}: the file is empty.")
    if kind == "pdf":
        if b"%PDF-" not in head[:PDF_HEADER_WINDOW]:
            found = _binary_signature(head)
            what = f"it is {found}" if found else "its content has no PDF header (%PDF-)"
            raise KnowledgeInputError(f"{filename}: named .pdf but {what}.")
        return kind
    found = _binary_signature(head)
    if found:
        raise KnowledgeInputError(
            f"{filename}: named as {KIND_LABELS[kind]} but its content is {found}."
        )
    if b"\x00" in head:
        raise KnowledgeInputError(
            f"{filename}: named as {KIND_LABELS[kind]} but its content is binary (NUL bytes)."
        )
    return kind


def decode_text(name: str, data: bytes) -> str:
    """Text of a Markdown/RST/HTML/plain file; UTF-8 (with or without BOM), else refused."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise KnowledgeInputError(
            f"{PurePath(name).name}: not valid UTF-8 text (byte {exc.start}); "
            "save it as UTF-8 and upload again."
        ) from None
    if "\x00" in text:
        raise KnowledgeInputError(f"{PurePath(name).name}: the text contains NUL bytes.")
    return text


def _binary_signature(head: bytes) -> str | None:
    for signature, label in BINARY_SIGNATURES:
        if head.startswith(signature):
            return label
    return None
