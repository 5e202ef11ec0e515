"""Checks of a draft that cost no LLM call, made before any critic is paid.

- `evidence`: the sentence the generator quoted as the answer's evidence, placed in the chunk by a
  fuzzy match (or, for replies without one, the answer's content words looked for in the chunk).
- `rules`: the rules the prompts already state (a standalone question, a non-trivial answer, an
  answer the chunk holds), as a table of named checks with their own rejection reasons.
- `easiness`: how much of a question its chunk spells out (where BM25 ranks its chunk is the
  build's chunk index's: `qagen.corpus.chunk_index`).
"""
