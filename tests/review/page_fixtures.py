"""What the review page's tests share: a built run and its evaluation, and a way to ask the page's API."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from click.testing import CliRunner

from qagen.cli.app import main
from standins.corpus import write_corpus
from standins.llm.server import StandInLLM


class Reviewed(NamedTuple):
    run: Path
    eval: Path
    llm: StandInLLM


@contextmanager
def build_and_evaluate(root: Path, *, drafts: int = 30) -> Iterator[Reviewed]:
    """A run of `drafts` drafts (critics stop at the first rejection) and a BM25 evaluation of it
    with the correctness judge and the graders, against the stand-in LLM, which keeps answering
    until the context ends (the review asks the critics the early stop skipped)."""
    corpus = write_corpus(root / "corpus", documents=12)
    with StandInLLM() as llm:
        server = ["--base-url", llm.base_url]
        for args in (
            ["build", corpus, "--out", root / "run", "-n", drafts, "--seed", "7", "--chunk-size", "400",
             "--vetting", "cookbook", "--generator-model", "openai:stand-in"],
            ["evaluate", root / "run", "--baseline", "bm25", "--corpus", corpus, "--out", root / "eval",
             "--chunk-size", "400", "--metrics", "correctness,graders", "--reader-model", "openai:stand-in"],
        ):  # fmt: skip
            result = CliRunner().invoke(main, [str(arg) for arg in [*args, *server, "-q"]], catch_exceptions=False)
            assert result.exit_code == 0, result.output
        yield Reviewed(root / "run", root / "eval", llm)


def critiques_by_draft(run: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """critiques.jsonl as draft id -> criterion -> the critique (the last line of its id)."""
    found: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for line in (run / "critiques.jsonl").read_text(encoding="utf-8").splitlines():
        critique = json.loads(line)
        found[critique["draft_id"]][critique["criterion"]] = critique
    return found


def labels(directory: Path) -> list[dict[str, Any]]:
    path = directory / "labels.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def call(url: str, body: object = None, *, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """(status, JSON body) of a GET, or of a POST when `body` is given (sent as JSON unless it is bytes)."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode("utf-8")
    sent = {"Content-Type": "application/json"} if data is not None and not isinstance(body, bytes) else {}
    request = urllib.request.Request(url, data=data, headers={**sent, **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # a loaded 2-core CI machine
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
