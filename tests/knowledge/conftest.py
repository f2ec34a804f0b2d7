"""Fixtures of the knowledge-base tests, and small PDFs made on the fly (real text pages,
bookmarks, encryption, hostile streams)."""

from __future__ import annotations

import io
import zlib


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[list[str]], *, extra_stream: bytes | None = None) -> bytes:
    """A PDF whose page i shows the lines pages[i] (Helvetica, one line per row).

    `extra_stream`, when given, is a FlateDecode-compressed content stream appended to
    the first page (to build decompression bombs).
    """
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled below
    pages_obj = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids = []
    for index, lines in enumerate(pages):
        ops = ["BT", "/F1 11 Tf", "72 760 Td", "14 TL"]
        for line in lines:
            ops.append(f"({_escape(line)}) Tj T*")
        ops.append("ET")
        data = "\n".join(ops).encode("latin-1")
        contents = [add(b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream")]
        if extra_stream is not None and index == 0:
            contents.append(add(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(extra_stream)
                                + extra_stream + b"\nendstream"))
        refs = b" ".join(b"%d 0 R" % c for c in contents)
        kids.append(add(
            b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents [%s] "
            b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (pages_obj, refs, font)
        ))
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_obj
    objects[pages_obj - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n"
              % (len(objects) + 1, catalog, xref))
    return out.getvalue()


def with_outline(pdf: bytes, entries: list[tuple[str, int]]) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf)))
    for title, page in entries:
        writer.add_outline_item(title, page)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def encrypted(pdf: bytes, user_password: str, owner_password: str = "owner") -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf)))
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def decompression_bomb(inflated_bytes: int = 200_000_000) -> bytes:
    """A one-page PDF with a content stream that inflates to `inflated_bytes` of spaces."""
    compressor = zlib.compressobj(9)
    block = b" " * 1_000_000
    data = b"".join(compressor.compress(block) for _ in range(inflated_bytes // len(block)))
    data += compressor.flush()
    return make_pdf([["A harmless looking first line."]], extra_stream=data)


# --- fixtures ---------------------------------------------------------------------------------
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import urllib.request  # noqa: E402
from pathlib import Path  # noqa: E402
from types import SimpleNamespace  # noqa: E402

import pytest  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
CORPUS = REPO_ROOT.parent / "shared" / "corpus"


@pytest.fixture(scope="session", autouse=True)
def kb_data_dir(tmp_path_factory):
    """Chroma and stored files of this run in a fresh folder.

    Django's settings are read before any conftest runs (pytest-django sets Django up
    first), so an environment variable set in a conftest comes too late; override instead.
    A store left from an earlier run would hold vectors under ids this run's fresh test
    database hands out again.
    """
    from django.test import override_settings

    path = tmp_path_factory.mktemp("kb-data")
    with override_settings(KERNELHUB_DATA_DIR=path):
        yield path


@pytest.fixture(scope="session")
def pdfs():
    return SimpleNamespace(make=make_pdf, with_outline=with_outline, encrypted=encrypted,
                           bomb=decompression_bomb)


def _new_vectors_cleanup():
    """Vectors written by a test whose rows roll back would outlive it: remove them."""
    from knowledge import store
    from knowledge.models import Document, Skill

    last_doc = Document.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    last_skill = Skill.objects.order_by("-pk").values_list("pk", flat=True).first() or 0

    def cleanup():
        new_docs = list(Document.objects.filter(pk__gt=last_doc).values_list("pk", flat=True))
        if new_docs:
            store.delete(store.CHUNKS, where={"document_id": {"$in": new_docs}})
        new_skills = list(Skill.objects.filter(pk__gt=last_skill).values_list("pk", flat=True))
        store.delete(store.SKILLS, ids=[f"skill-{pk}" for pk in new_skills])

    return cleanup


@pytest.fixture
def kb(db):
    """Database access for a knowledge test, leaving Chroma as the test found it."""
    cleanup = _new_vectors_cleanup()
    yield
    cleanup()


def upload(name: str, data: bytes, **fields):
    from knowledge.services import document_process, document_upload

    fields.setdefault("category", "general-optimization")
    document = document_upload(filename=name, data=data, **fields)
    return document_process(document.pk)


@pytest.fixture
def ingest():
    """ingest(name, bytes, **fields) -> the processed Document."""
    return upload


@pytest.fixture(scope="session")
def corpus_kb(kb_data_dir, django_db_setup, django_db_blocker):
    """The labelled corpus, indexed once per test run (committed, so every test sees it)."""
    if not (CORPUS / "questions.json").is_file():
        pytest.skip(f"the labelled corpus is not at {CORPUS} (expected ../shared/corpus "
                    "relative to the repository root)")
    from knowledge.evaluation import corpus_files, load_questions
    from knowledge.models import Document
    from knowledge.services import document_ingest_file

    with django_db_blocker.unblock():
        documents = []
        for f in corpus_files(CORPUS):
            existing = Document.objects.filter(filename=f.path.name, status="ready").first()
            documents.append(existing or document_ingest_file(
                f.path, category=f.category, vendor=f.vendor, hardware=f.hardware))
        yield SimpleNamespace(documents=documents, questions=load_questions(CORPUS / "questions.json"),
                              files=corpus_files(CORPUS))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory):
    """A Chroma server on a free local port, started from the venv and stopped by pid."""
    chroma = Path(sys.executable).with_name("chroma")
    if not chroma.exists():
        chroma = Path(shutil.which("chroma") or "")
    if not chroma.is_file():
        pytest.fail("the chroma CLI is not installed next to the Python interpreter")
    port = free_port()
    path = tmp_path_factory.mktemp("chroma-server")
    log = open(path / "server.log", "wb")
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    proc = subprocess.Popen([str(chroma), "run", "--path", str(path / "data"), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1) as response:
                json.load(response)
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"chroma server did not start: {(path / 'server.log').read_text()[-2000:]}")
            time.sleep(0.3)
    yield url
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    log.close()
