"""What generation and evaluation both stand on: the corpus read (`load`), chunked (`chunk`) and
indexed (`bm25_index`, `embeddings`, their cache `index_cache`, the build's `chunk_index`), where an
answer's evidence lies in a chunk (`evidence`), and the corpus and chunking settings (`settings`)."""
