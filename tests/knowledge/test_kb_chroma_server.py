"""The distributed mode: a Chroma server (HttpClient) started by the test on a free port."""

from knowledge import store
from knowledge.models import Document
from knowledge.retrieval import retrieve
from knowledge.selectors import KnowledgeScope
from knowledge.services import document_delete


def test_ingest_search_delete_against_a_chroma_server(kb, ingest, settings, chroma_server):
    settings.CHROMA_URL = chroma_server
    client = store.get_client()
    assert type(client).__name__ != "PersistentClient"
    assert client.heartbeat() > 0
    document = ingest("server.md", b"# Server\n\nThe zorblax barrier orders TMA stores.\n",
                      hardware="h100", category="hardware-specific")
    assert document.status == Document.Status.READY, document.message
    ids = store.collection(store.CHUNKS).get(where={"document_id": document.pk}, include=[])["ids"]
    assert ids == [str(c.pk) for c in document.chunks.all()]
    top = retrieve("what does the zorblax barrier order?", hardware="h100", k=1,
                   scope=KnowledgeScope.ALL)[0]
    assert top.filename == "server.md"
    document_id = document.pk
    document_delete(document)
    assert store.count(store.CHUNKS, where={"document_id": document_id}) == 0
    # The embedded store was not touched.
    settings.CHROMA_URL = ""
    assert store.count(store.CHUNKS, where={"document_id": document_id}) == 0
