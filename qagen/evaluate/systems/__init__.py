"""The RAG system under test: one protocol, its adapters (answers file, callable, endpoint) and the BM25 baseline."""
