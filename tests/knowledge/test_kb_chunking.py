"""Chunks fit the model, overlap, keep headings/pages, and do not cut lines of code."""

from knowledge.chunking import ChunkingConfig, chunk_blocks
from knowledge.embeddings import MAX_TOKENS, token_counts
from knowledge.ingestion import CHUNKING
from knowledge.parsing.blocks import Block


def test_long_prose_is_split_at_sentences_with_overlap():
    sentences = [f"Sentence number {i} talks about coalesced memory access patterns." for i in range(80)]
    blocks = [Block(" ".join(sentences), "Guide > Memory", 3, "text")]
    config = ChunkingConfig(max_tokens=100, overlap_tokens=25)
    chunks = chunk_blocks(blocks, token_counts, config)
    assert len(chunks) > 5
    for chunk in chunks:
        assert chunk.tokens <= config.max_tokens
        assert chunk.section == "Guide > Memory" and chunk.page == 3
        assert chunk.text.endswith(".")  # ends at a sentence end
    first_tail = chunks[0].text.split(". ")[-1]
    assert first_tail in chunks[1].text  # overlap carries the last sentence over


def test_code_is_split_only_between_lines():
    lines = [f"    acc += tl.load(ptr + offsets_{i}, mask=mask_{i}, other=0.0)" for i in range(60)]
    blocks = [Block("\n".join(lines), "Kernels", None, "code")]
    chunks = chunk_blocks(blocks, token_counts, ChunkingConfig(max_tokens=120, overlap_tokens=0))
    assert len(chunks) > 2
    rebuilt = []
    for chunk in chunks:
        for line in chunk.text.split("\n"):
            assert line.strip() in {l.strip() for l in lines}  # every line whole
            rebuilt.append(line.strip())
    assert rebuilt == [l.strip() for l in lines]


def test_small_sections_merge_but_keep_their_headings():
    blocks = [Block("Short intro.", "Doc > A"), Block("Tiny note.", "Doc > B"),
              Block("word " * 150, "Doc > C")]
    chunks = chunk_blocks(blocks, token_counts, ChunkingConfig(200, 20, 60))
    assert chunks[0].section == "Doc > A"
    assert "B\nTiny note." in chunks[0].text


def test_section_change_ends_a_full_enough_chunk():
    blocks = [Block("alpha " * 80, "Doc > A"), Block("beta " * 80, "Doc > B")]
    chunks = chunk_blocks(blocks, token_counts, ChunkingConfig(200, 20, 60))
    assert [c.section for c in chunks] == ["Doc > A", "Doc > B"]
    assert "alpha" not in chunks[1].text  # no overlap across sections


def test_chosen_size_leaves_room_for_heading_context():
    assert CHUNKING.max_tokens + 20 <= MAX_TOKENS
