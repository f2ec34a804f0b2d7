"""Knowledge base: hardware manuals and distilled skills, retrieved for the kernel search.

Plain modules (filetypes, parsing, chunking, embeddings, lexical) do not need Django;
models, services, selectors, retrieval and views do.
"""
