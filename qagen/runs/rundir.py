"""The run directory: where every stage's records live, and the fingerprint that guards resumes."""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from qagen._version import __version__
from qagen.config import BUILD_ROLES, BuildConfig, BuildRole, describe_differences, keep_decided, with_added_fields
from qagen.corpus.settings import CorpusSettings
from qagen.errors import CorpusChangedError, QagenError, RunMismatchError
from qagen.records import Chunk, Critique, Draft
from qagen.runs.lock import LOCK_NAME, OWNER_NAME, RunLock
from qagen.runs.store import Dependents, RecordLog, write_json_atomic, writing

if TYPE_CHECKING:
    from qagen.corpus.load.fingerprint import CorpusFingerprint


class RunDir:
    """Paths and records of one run directory.

    Layout: `run.json` (settings + fingerprint), `chunks.jsonl`, `corpus.json` (each input's path,
    size and hash) and `chunking.json` (written last, so its presence means chunking finished),
    `drafts.jsonl`, `critiques.jsonl` (append-only, keyed by content-hash ids), `rounds.json` (a build
    to a target size: the round under way, `qagen.generation.target`), the outputs
    `dataset/`, `candidates/`, `summary.json`, and `.qagen.lock` (one process at a time).
    """

    def __init__(self, root: Path | str) -> None:
        self.root = root = Path(root).expanduser()
        self.run_file = root / "run.json"
        self.chunks_file = root / "chunks.jsonl"
        self.chunking_file = root / "chunking.json"
        self.corpus_file = root / "corpus.json"
        self.critiques = RecordLog(root / "critiques.jsonl", Critique)
        self.drafts = RecordLog(root / "drafts.jsonl", Draft, dependents=Dependents(self.critiques.path, "draft_id"))
        self.dataset_dir = root / "dataset"
        self.candidates_dir = root / "candidates"
        self.summary_file = root / "summary.json"
        self.rounds_file = root / "rounds.json"
        self._new_run: dict[str, Any] | None = None  # run.json of a new run, until its corpus is chunked

    def exists(self) -> bool:
        return self.run_file.exists()

    def require(self) -> None:
        if not self.exists():
            raise QagenError(
                f"{self.root} is not a qagen run directory (no run.json); start with `qagen build` or "
                "`qagen stage chunk`."
            )

    def stored_config(self) -> BuildConfig:
        self.require()
        return BuildConfig.model_validate(self._read_run()["config"])

    def _read_run(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self.run_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise QagenError(f"Cannot read {self.run_file}: {exc}.") from exc
        return data

    def llm_fixed(self) -> bool:
        """Whether an LLM stage has run here (so the models and prompts are part of the run)."""
        return self.exists() and self._read_run().get("fingerprint", {}).get("generator_model") is not None

    def fixed_roles(self) -> frozenset[BuildRole]:
        """The roles whose models and prompts are part of the run: those an LLM stage has called."""
        if not self.exists():
            return frozenset()
        fingerprint = self._read_run().get("fingerprint", {})
        return frozenset(role for role in BUILD_ROLES if fingerprint.get(f"{role}_model") is not None)

    def open(
        self, config: BuildConfig, prompt_hashes: dict[str, str | None], *, llm: bool | Collection[BuildRole] = True
    ) -> None:
        """Start a new run here, or check that `config` may resume the one that is here.

        A new run's `run.json` is written only once its corpus has been chunked (`finish_chunking`):
        until then nothing is fixed, so a failed first attempt (a corpus path typo, settings that do
        not work, a corpus with no text) cannot block the corrected command.
        """
        if not self.exists():
            self._refuse_foreign()
            self._new_run = _run_file(_fingerprint(config, prompt_hashes, llm), config)
            return
        wanted, stored = self.check_settings(config, prompt_hashes, llm=llm)
        # Keep what was decided before (e.g. the models, when `qagen stage filter` runs without them).
        write_json_atomic(self.run_file, _run_file(keep_decided(wanted, stored), config))

    def check_settings(
        self, config: BuildConfig, prompt_hashes: dict[str, str | None], *, llm: bool | Collection[BuildRole] = True
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Raise `RunMismatchError` unless `config` may resume the run here (writing nothing); else
        its fingerprint and the stored one."""
        wanted = _fingerprint(config, prompt_hashes, llm)
        stored = with_added_fields(self._read_run().get("fingerprint", {}))
        differences = describe_differences(stored, wanted)
        if differences:
            raise RunMismatchError(
                f"{self.root} holds a run made with other settings, and mixing them would mix "
                "outputs of different models, prompts or chunks:\n  - "
                + "\n  - ".join(differences)
                + "\nUse a new `out` directory, or repeat the run's own settings to resume it.",
                settings=("out",),
            )
        return wanted, stored

    @contextmanager
    def locked(self) -> Iterator[RunDir]:
        """Hold the run directory's lock while a command writes to it (see `qagen.runs.lock`).

        Folders this created for a run that never got its `run.json` are removed again on the way
        out, lock file included: a failed first attempt leaves nothing behind.
        """
        self._refuse_foreign()
        created = [folder for folder in (self.root, *self.root.parents) if not folder.exists()]
        self.root.mkdir(parents=True, exist_ok=True)
        lock = RunLock(self.root)
        try:
            lock.acquire()
        except BaseException:
            _remove_empty(created)
            raise
        try:
            self._remove_temporary_chunks()  # of a process killed while chunking: no one else writes here
            yield self
        finally:
            never_made = not self.exists()
            if never_made:
                self._remove_temporary_chunks()
            lock.release(remove=never_made)
            if never_made:
                _remove_empty(created)

    def _remove_temporary_chunks(self) -> None:
        for leftover in self.root.glob(".chunks-*.tmp"):
            leftover.unlink(missing_ok=True)

    def _refuse_foreign(self) -> None:
        """Refuse an `out` that holds something other than a qagen run, before anything is written."""
        if self.exists():
            return
        if self.root.exists() and not self.root.is_dir():
            raise QagenError(f"{self.root} is a file; `out` must be a folder.", settings=("out",))
        if self.root.is_dir() and any(not _OWN_FILE.fullmatch(entry.name) for entry in self.root.iterdir()):
            raise QagenError(
                f"{self.root} exists and is not a qagen run directory; choose another `out`.", settings=("out",)
            )

    # --- the corpus -------------------------------------------------------------------------
    def check_corpus(self, corpus: CorpusSettings, *, update: bool) -> str | None:
        """None when the corpus is the one chunked here; else what changed, if `update` allows it.

        Raises `CorpusChangedError` listing what changed (files added, removed or changed) when the
        corpus differs and `update` is False: the chunks would no longer match the documents.
        """
        # Here, not at the top: `qagen stage generate` and the other stage commands never read the corpus.
        from qagen.corpus.load.fingerprint import CorpusFingerprint, compare, current_fingerprint

        if not self.corpus_file.exists():
            if update:
                return "no record of the corpus it was chunked from"
            raise CorpusChangedError(
                f"{self.root} was chunked by an older qagen, which did not record the corpus, so whether "
                "the corpus changed since cannot be checked. Pass `update_corpus=True` to chunk it again "
                "(replies for chunks that did not change are reused, not paid again).",
                settings=("update_corpus",),
            )
        try:
            stored = CorpusFingerprint.model_validate_json(self.corpus_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise QagenError(
                f"Cannot read {self.corpus_file} ({type(exc).__name__}); pass `update_corpus=True` to chunk "
                "the corpus again and record it anew.",
                settings=("update_corpus",),
            ) from exc
        current = current_fingerprint(corpus)
        changes = compare(stored, current)
        if not changes.any():
            return None
        if update:
            return changes.describe()
        if current.location == stored.location:
            what = f"The corpus changed since it was chunked into {self.root} ({changes.describe()})"
        else:
            what = (
                f"The corpus {current.location} differs from {stored.location}, which was chunked into "
                f"{self.root} ({changes.describe()})"
            )
        raise CorpusChangedError(
            f"{what}, so the run's chunks no longer match the documents. Pass `update_corpus=True` to chunk "
            "it again and draw a new sample (replies for chunks that did not change are reused, not paid "
            "again), or use a new `out` directory.",
            settings=("update_corpus", "out"),
        )

    # --- chunks -----------------------------------------------------------------------------
    def chunking_done(self) -> bool:
        return self.exists() and self.chunking_file.exists() and self.chunks_file.exists()

    def chunking_report(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.chunking_file.read_text(encoding="utf-8"))
        return data

    def iter_chunks(self) -> Iterator[Chunk]:
        with self.chunks_file.open("r", encoding="utf-8") as handle:
            for line in handle:
                yield Chunk.model_validate_json(line)

    def write_chunks(self, chunks: Iterator[Chunk]) -> WrittenChunks:
        """Stream chunks to a temporary file of this process's own, put in place by `finish_chunking`.

        Until then the run's chunks (if any) are untouched, and a failure leaves no half file.
        """
        with writing(self.chunks_file):
            self.root.mkdir(parents=True, exist_ok=True)
            descriptor, name = tempfile.mkstemp(prefix=".chunks-", suffix=".tmp", dir=self.root)
        temporary = Path(name)
        count = 0
        try:
            with writing(self.chunks_file), os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                for chunk in chunks:
                    handle.write(chunk.model_dump_json() + "\n")
                    count += 1
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        return WrittenChunks(temporary, chunks=count)

    def discard_chunks(self, written: WrittenChunks) -> None:
        written.path.unlink(missing_ok=True)

    def finish_chunking(self, written: WrittenChunks, corpus: CorpusFingerprint, report: dict[str, Any]) -> None:
        """Put a finished chunking in place: chunks, the corpus they came from, then `chunking.json`.

        A new run's `run.json` comes first: its settings have worked and its corpus holds text.
        `chunking.json`, written last, marks the chunking done; a crash before it means chunk again.
        """
        if self._new_run is not None:
            write_json_atomic(self.run_file, self._new_run)
            self._new_run = None
        self.chunking_file.unlink(missing_ok=True)
        with writing(self.chunks_file):
            os.replace(written.path, self.chunks_file)
        write_json_atomic(self.corpus_file, corpus.model_dump(mode="json"))
        write_json_atomic(self.chunking_file, report)


class WrittenChunks(NamedTuple):
    """Chunks written to a temporary file, not yet the run's."""

    path: Path
    chunks: int


# qagen's own files in a run directory that has no run.json yet: its lock, and temporary files.
_OWN_FILE = re.compile(rf"{re.escape(LOCK_NAME)}|{re.escape(OWNER_NAME)}|\.chunks-.*\.tmp|\..+\.json\.tmp")


def _fingerprint(
    config: BuildConfig, prompt_hashes: dict[str, str | None], llm: bool | Collection[BuildRole]
) -> dict[str, Any]:
    """The fingerprint as `run.json` holds it (through JSON: tuples become lists)."""
    fingerprint: dict[str, Any] = json.loads(json.dumps(config.fingerprint(prompt_hashes, llm=llm)))
    return fingerprint


def _run_file(fingerprint: dict[str, Any], config: BuildConfig) -> dict[str, Any]:
    return {"qagen_version": __version__, "fingerprint": fingerprint, "config": config.model_dump(mode="json")}


def _remove_empty(folders: list[Path]) -> None:
    """Remove folders a command made, innermost first, unless something else was put in them."""
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()
