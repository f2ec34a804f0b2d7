"""A document's chunks live in the database and Chroma together, and leave together."""

from knowledge import store
from knowledge.models import Chunk, Document
from knowledge.services import document_delete

GUIDE = b"""# Matrix cores

Intro to MFMA instructions on CDNA.

## Modifiers

The cbsz modifier broadcasts one block to its neighbours.
"""


def vectors_of(document_id):
    return store.collection(store.CHUNKS).get(where={"document_id": document_id},
                                              include=["metadatas", "embeddings"])


def test_ingest_stores_chunks_with_metadata(kb, ingest):
    document = ingest("mfma.md", GUIDE, vendor="AMD", hardware="MI300X, gfx942",
                      category="hardware-specific")
    assert document.status == Document.Status.READY and document.progress == 100
    assert document.title == "Matrix cores"  # from the document's own heading
    assert document.hardware == ["mi300x", "gfx942"]
    chunks = list(document.chunks.all())
    assert document.chunk_count == len(chunks) >= 1
    got = vectors_of(document.pk)
    assert sorted(got["ids"]) == sorted(str(c.pk) for c in chunks)
    meta = got["metadatas"][0]
    assert meta["document"] == "Matrix cores" and meta["vendor"] == "amd"
    assert meta["hardware"] == ["mi300x", "gfx942"] and meta["category"] == "hardware-specific"
    assert "section" in meta
    norms = [sum(x * x for x in e) ** 0.5 for e in got["embeddings"]]
    assert all(abs(n - 1.0) < 1e-3 for n in norms)  # normalized
    assert len(got["embeddings"][0]) == 384


def test_pdf_chunks_keep_page_numbers(kb, ingest, pdfs):
    pdf = pdfs.make([["Register pressure", "VGPR usage limits occupancy."],
                     ["Spilling", "Spills go to scratch memory."]])
    document = ingest("regs.pdf", pdf, hardware="mi250x")
    assert document.pages == 2
    pages = {m["page"] for m in vectors_of(document.pk)["metadatas"]}
    assert pages <= {1, 2} and 1 in pages


def test_delete_removes_rows_vectors_and_file(kb, ingest, settings):
    document = ingest("mfma.md", GUIDE)
    path = settings.KERNELHUB_DATA_DIR / document.stored_path
    assert path.exists() and vectors_of(document.pk)["ids"]
    document_id = document.pk
    document_delete(document)
    assert not Document.objects.filter(pk=document_id).exists()
    assert not Chunk.objects.filter(document_id=document_id).exists()
    assert vectors_of(document_id)["ids"] == []
    assert not path.exists()
