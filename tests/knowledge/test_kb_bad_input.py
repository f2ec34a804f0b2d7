"""Every bad upload gets a clear message and leaves nothing stored: no document row (or
only a failed one with its message), no chunks, no vectors, no stored file."""

import pytest

from knowledge import store
from knowledge.errors import KnowledgeInputError
from knowledge.models import Chunk, Document
from knowledge.services import document_ingest_file, document_process, document_upload

GOOD_MD = b"# Guide\n\nCoalesce global memory loads so a warp touches one 128-byte segment.\n"


def stored_files(settings):
    folder = settings.KERNELHUB_DATA_DIR / "knowledge" / "files"
    return sorted(folder.iterdir()) if folder.exists() else []


def assert_nothing_stored(settings, before_files):
    assert not Document.objects.exclude(status="failed").filter(filename__startswith="bad").exists()
    assert not Chunk.objects.filter(document__filename__startswith="bad").exists()
    assert stored_files(settings) == before_files


def refuse_upload(settings, name, data, match, **fields):
    before = stored_files(settings)
    count = Document.objects.count()
    with pytest.raises(KnowledgeInputError, match=match):
        document_upload(filename=name, data=data, category=fields.pop("category", "general-optimization"),
                        **fields)
    assert Document.objects.count() == count
    assert_nothing_stored(settings, before)


def fail_processing(settings, name, data, match):
    """Content only the parser can judge: the document ends failed, with the message."""
    before = stored_files(settings)
    document = document_upload(filename=name, data=data, category="hardware-specific")
    document = document_process(document.pk)
    assert document.status == Document.Status.FAILED
    assert document.progress == 100
    assert match in document.message, document.message
    assert document.chunk_count == 0 and not document.chunks.exists()
    assert store.count(store.CHUNKS, where={"document_id": document.pk}) == 0
    assert stored_files(settings) == before  # the uploaded bytes are not kept either
    return document


def test_over_size_cap(kb, settings):
    settings.KB_MAX_UPLOAD_BYTES = 1000
    refuse_upload(settings, "bad.md", b"# x\n" + b"y" * 2000, r"2\.0 MB|over the upload limit of 0\.0 MB")


def test_wrong_type_behind_right_extension(kb, settings):
    refuse_upload(settings, "bad.pdf", b"PK\x03\x04" + b"\x00" * 100, "named .pdf but it is a ZIP archive")
    refuse_upload(settings, "bad.md", b"%PDF-1.4\n%...", "named as Markdown but its content is a PDF")


def test_unknown_category_and_extension(kb, settings):
    refuse_upload(settings, "bad.md", GOOD_MD, "Unknown category 'fast-stuff'", category="fast-stuff")
    refuse_upload(settings, "bad.docx", b"PK\x03\x04", "unsupported file type .docx")


def test_empty_files(kb, settings):
    refuse_upload(settings, "bad.md", b"", "the file is empty")
    refuse_upload(settings, "bad.txt", b"  \n\n\t ", "the file is empty")


def test_document_without_text(kb, settings, pdfs):
    fail_processing(settings, "bad-blank.pdf", pdfs.make([[], []]), "contains no text (a scanned PDF")
    fail_processing(settings, "bad-comment.rst", b".. only a comment\n", "contains no text")


def test_encrypted_pdf(kb, settings, pdfs):
    locked = pdfs.encrypted(pdfs.make([["Secret tuning guide."]]), user_password="s3cret")
    fail_processing(settings, "bad-locked.pdf", locked, "encrypted with a password")


def test_pdf_with_owner_password_only_is_readable(kb, pdfs):
    # An empty user password opens it; readers (and we) can extract the text.
    pdf = pdfs.encrypted(pdfs.make([["Owner-password-only manual about wgmma."]]), user_password="")
    document = document_process(document_upload(filename="owner.pdf", data=pdf,
                                                category="hardware-specific").pk)
    assert document.status == Document.Status.READY, document.message
    assert "wgmma" in document.chunks.get().text


def test_broken_pdf(kb, settings, pdfs):
    good = pdfs.make([["Some text"]])
    fail_processing(settings, "bad-truncated.pdf", good[: len(good) // 3], "the PDF could not be read")
    fail_processing(settings, "bad-garbage.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 40,
                    "the PDF could not be read")


def test_hostile_pdf_decompression_bomb(kb, settings, pdfs):
    document = fail_processing(settings, "bad-bomb.pdf", pdfs.bomb(), "safety limits")
    assert "decompression bomb" in document.message


def test_pdf_over_page_cap(kb, settings, pdfs):
    settings.KB_MAX_PDF_PAGES = 3
    fail_processing(settings, "bad-long.pdf", pdfs.make([[f"page {i}"] for i in range(5)]),
                    "the PDF has 5 pages; the limit is 3")


def test_pdf_parse_timeout_and_memory_limit(pdfs):
    from knowledge.parsing.pdf import parse_pdf

    # The child's address-space limit holds: below what the parser needs (the PDFium
    # worker peaks near 27 MB, pypdf's above 30), it is killed and the parent reports it
    # instead of hanging or crashing.
    with pytest.raises(KnowledgeInputError, match="exceeds the memory or CPU limits"):
        parse_pdf("big.pdf", pdfs.make([["hello"]]), max_pages=10, memory_bytes=16 * 1024 * 1024)
    # Starting the parser alone takes longer than 20 ms, so this always runs out of time.
    with pytest.raises(KnowledgeInputError, match="took longer than 0.02 s"):
        parse_pdf("slow.pdf", pdfs.make([["x"] * 50] * 400), max_pages=1000, timeout_s=0.02)


def test_duplicate_names_the_original(kb, settings, ingest):
    original = ingest("guide.md", GOOD_MD, title="Coalescing guide")
    refuse_upload(settings, "bad-copy.md", GOOD_MD,
                  rf'duplicate of "Coalescing guide" \(document #{original.pk}, guide.md')


def test_failed_upload_does_not_block_a_retry(kb, settings, pdfs):
    locked = pdfs.encrypted(pdfs.make([["Text"]]), user_password="pw")
    fail_processing(settings, "bad-retry.pdf", locked, "encrypted")
    again = document_upload(filename="bad-retry.pdf", data=locked, category="hardware-specific")
    assert again.status == Document.Status.PENDING


def test_command_path_keeps_no_failed_row(kb, tmp_path, pdfs):
    path = tmp_path / "bad-cmd.pdf"
    path.write_bytes(pdfs.encrypted(pdfs.make([["Text"]]), user_password="pw"))
    with pytest.raises(KnowledgeInputError, match="encrypted"):
        document_ingest_file(path, category="hardware-specific")
    assert not Document.objects.filter(filename="bad-cmd.pdf").exists()


def test_chroma_failure_rolls_back_the_database(kb, monkeypatch):
    def broken_write(*args, **kwargs):
        raise RuntimeError("chroma is down")

    monkeypatch.setattr(store, "upsert", broken_write)
    document = document_upload(filename="bad-chroma.md", data=GOOD_MD, category="general-optimization")
    document = document_process(document.pk)
    assert document.status == Document.Status.FAILED
    assert "indexing failed (RuntimeError: chroma is down)" in document.message
    assert not Chunk.objects.filter(document=document).exists()
    monkeypatch.undo()
    assert store.count(store.CHUNKS, where={"document_id": document.pk}) == 0
