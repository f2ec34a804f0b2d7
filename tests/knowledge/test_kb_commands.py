import json

import pytest
from django.core.management import CommandError, call_command

from knowledge.models import Document


def run(*args):
    from io import StringIO

    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_kb_ingest_folders_recursively_with_summary(kb, tmp_path):
    (tmp_path / "nested" / "deeper").mkdir(parents=True)
    (tmp_path / "a.md").write_text("# Banks\n\nPad shared-memory tiles by one column.\n")
    (tmp_path / "nested" / "b.rst").write_text("Pipelines\n=========\n\nUse num_stages=3 on Hopper.\n")
    (tmp_path / "nested" / "deeper" / "c.html").write_text("<h1>TMA</h1><p>Descriptors live on the host.</p>")
    (tmp_path / "nested" / "broken.pdf").write_bytes(b"PK\x03\x04zip")
    (tmp_path / "nested" / "image.png").write_bytes(b"\x89PNG")  # not a document type: ignored
    out, err = run("kb_ingest", str(tmp_path), "--vendor", "NVIDIA", "--hardware", "h100,sm90",
                   "--category", "hardware-specific")
    assert out.strip().splitlines()[-1] == "kb_ingest: 3 indexed, 1 skipped, 3 chunks from 4 files"
    assert "broken.pdf: named .pdf but it is a ZIP archive" in err
    docs = Document.objects.filter(filename__in=["a.md", "b.rst", "c.html"])
    assert docs.count() == 3
    assert all(d.vendor == "nvidia" and d.hardware == ["h100", "sm90"] for d in docs)
    assert not Document.objects.filter(filename="broken.pdf").exists()


def test_kb_ingest_reports_duplicates_and_missing_paths(kb, tmp_path):
    (tmp_path / "a.md").write_text("# Banks\n\nPad shared-memory tiles by one column.\n")
    run("kb_ingest", str(tmp_path / "a.md"))
    with pytest.raises(CommandError, match="no document was indexed"):
        out, err = run("kb_ingest", str(tmp_path / "a.md"))
    with pytest.raises(CommandError, match="no such file or folder"):
        run("kb_ingest", str(tmp_path / "missing.md"))


def test_kb_search_json_last_line(kb, ingest):
    ingest("pipe.md", b"# Pipelining\n\n## Stages\n\nSet num_stages to 2 for one GEMM.\n",
           hardware="mi300x", category="hardware-specific")
    out, _ = run("kb_search", "what num_stages for a GEMM?", "--k", "3", "--hardware", "mi300x", "--json")
    items = json.loads(out.strip().splitlines()[-1])
    assert isinstance(items, list) and 1 <= len(items) <= 3
    for key in ("document", "text", "score", "page", "section"):
        assert key in items[0]
    top = next(i for i in items if i["filename"] == "pipe.md")
    assert top["section"] == "Pipelining > Stages" and "num_stages" in top["text"]


def test_kb_search_human_output(kb, ingest):
    ingest("pipe.md", b"# Pipelining\n\nSet num_stages to 2 for one GEMM.\n")
    out, _ = run("kb_search", "num_stages", "--k", "1")
    assert out.startswith("1. ") and "score" in out
    with pytest.raises(CommandError, match="--k must be at least 1"):
        run("kb_search", "x", "--k", "0")
