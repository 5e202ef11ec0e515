"""Publish a run directory to the Hugging Face Hub as one dataset repo with two configs.

`default` holds the kept rows and `candidates` every draft, both pushed with `datasets`' own
`Dataset.push_to_hub`; the card, the prompt files and a public copy of summary.json go in first,
in one commit, so the repo is marked as qagen's before any data lands (an interrupted first push
can then be finished by pushing again) and `push_to_hub` merges its `configs` and `dataset_info`
into our card instead of writing a card of its own. The run directory is only ever read.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qagen.card import (
    DEFAULT_LICENSE,
    PROMPTS_IN_REPO,
    SUMMARY_IN_REPO,
    CardContent,
    PromptFile,
    is_qagen_card,
    make_card,
    public_summary,
)
from qagen.errors import ConfigError, QagenError
from qagen.hub_errors import HubAuthError, hub_errors
from qagen.language import detect_languages
from qagen.prompts import prompts_dir
from qagen.redaction import redact, register_secret
from qagen.rundir import RunDir

if TYPE_CHECKING:
    from datasets import Dataset
    from huggingface_hub import HfApi

# Language detection reads this many kept rows at most (sampling order, so a spread of documents).
_LANGUAGE_SAMPLE = 2000
# Env vars whose values are secrets, beyond those `redaction` knows by name.
_SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD)$")
# Key shapes masked inside the data. Narrower than `redaction`'s (no "Bearer <word>"), so that a
# corpus about HTTP authentication keeps its prose; a real key or token is far longer than this.
_DATA_KEY_SHAPES = re.compile(r"\b(?:sk-[A-Za-z0-9_\-]{20,}|hf_[A-Za-z0-9]{30,})")


class ForeignRepoError(QagenError):
    """The repo exists and holds something qagen did not make; pushing needs --force."""


class VisibilityError(QagenError):
    """The repo is public but the push was not asked to be public."""


@dataclass(frozen=True)
class PushResult:
    """Where a run was published."""

    url: str
    repo_id: str
    private: bool
    commit: str
    """Id of the last commit of this push."""
    masked_values: int = 0
    """Data cells in which a secret or a key-shaped string was replaced by `***` before upload."""


@dataclass(frozen=True)
class _LocalRun:
    summary: dict[str, Any]
    prompt_hashes: dict[str, str]
    kept: Dataset
    candidates: Dataset


def push_run(
    run_dir: Path,
    repo_id: str,
    *,
    token: str | None = None,
    private: bool = True,
    revision: str | None = None,
    license: str | None = None,
    force: bool = False,
) -> PushResult:
    """Publish RUN_DIR's dataset, candidates, card, prompts and summary to the dataset repo REPO_ID.

    Args:
        token: Hub token; None uses HF_TOKEN or the login `huggingface_hub` already has.
        private: Create the repo private (the default, as the data comes from a private corpus).
            A push never makes data more visible than asked: an existing public repo needs
            private=False, and private=False makes an existing private repo public.
        revision: Branch to push to (created from main if missing); None pushes to main.
        license: License id for the card (the Hub's list); default `unknown`.
        force: Push even into a repo that holds data not made by qagen (its card is replaced and
            its `data/train-*` files may be deleted).
    """
    from huggingface_hub import HfApi, get_token

    run = _load_run(run_dir)
    if token is None and get_token() is None:
        raise HubAuthError("No Hugging Face token: pass --token, set HF_TOKEN, or log in with `hf auth login`.")
    secrets = _known_secrets(token or get_token())
    for secret in secrets:
        register_secret(secret)
    api = HfApi(token=token)
    with hub_errors(repo_id):
        user = api.whoami()["name"]
    # Without a namespace the Hub would use the token's user: name it, so the card's snippets work.
    full_id = repo_id if "/" in repo_id else f"{user}/{repo_id}"
    with hub_errors(full_id):
        return _push(api, run, full_id, token, private, revision, license, force, secrets)


def _push(
    api: HfApi,
    run: _LocalRun,
    repo_id: str,
    token: str | None,
    private: bool,
    revision: str | None,
    license: str | None,
    force: bool,
    secrets: set[str],
) -> PushResult:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        info = api.dataset_info(repo_id)
    except RepositoryNotFoundError:
        info = None
    existing = [sibling.rfilename for sibling in (info.siblings or [])] if info else []
    if info is not None:
        _check_may_push(repo_id, existing, info.card_data, private=private, was_private=bool(info.private), force=force)
    prompts, prompt_files = _prompt_files(run)
    content = CardContent(
        repo_id=repo_id,
        summary=public_summary(run.summary),
        kept_rows=run.kept.num_rows,
        candidate_rows=run.candidates.num_rows,
        languages=_languages(run.kept if run.kept.num_rows else run.candidates),
        license=(license or DEFAULT_LICENSE).strip().lower(),
        prompts=prompts,
        revision=revision,
    )
    card = make_card(content)
    try:  # before anything is written: a bad --license must not leave a half-made repo
        card.validate(repo_type="dataset")
    except ValueError as exc:
        raise ConfigError(f"The Hub refused the dataset card: {' '.join(str(exc).split())} (check --license).") from exc
    kept, masked_kept = _mask_secrets(run.kept, secrets)
    candidates, masked_candidates = _mask_secrets(run.candidates, secrets)

    if info is None:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    if revision is not None:
        api.create_branch(repo_id, branch=revision, repo_type="dataset", exist_ok=True)
        existing = api.list_repo_files(repo_id, repo_type="dataset", revision=revision)  # a branch may differ
    summary_text = redact(json.dumps(content.summary, indent=2, ensure_ascii=False)) + "\n"
    operations: list[CommitOperationAdd | CommitOperationDelete] = [
        CommitOperationAdd("README.md", str(card).encode("utf-8")),
        CommitOperationAdd(SUMMARY_IN_REPO, summary_text.encode("utf-8")),
        *(CommitOperationAdd(path, data) for path, data in prompt_files.items()),
        # Prompts of an earlier push that this run did not use would be mistaken for its own.
        *(
            CommitOperationDelete(path)
            for path in existing
            if path.startswith(f"{PROMPTS_IN_REPO}/") and path not in prompt_files
        ),
    ]
    api.create_commit(
        repo_id, operations, commit_message="qagen: dataset card, prompts, run summary", repo_type="dataset",
        revision=revision,
    )  # fmt: skip
    for config_name, dataset, what in (("default", kept, "kept rows"), ("candidates", candidates, "every draft")):
        with _without_num_proc_warning():
            commit = dataset.push_to_hub(
                repo_id,
                config_name=config_name,
                split="train",
                private=private,
                token=token,
                revision=revision,
                commit_message=f"qagen: {config_name} config ({what})",
            )
    if info is not None and info.private and not private:
        api.update_repo_settings(repo_id, private=False, repo_type="dataset")
    from huggingface_hub import constants

    url = f"{constants.ENDPOINT}/datasets/{repo_id}" + (f"/tree/{revision}" if revision else "")
    return PushResult(url, repo_id, private, commit.oid, masked_kept + masked_candidates)


def _not_num_proc_notice(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith("Setting num_proc from")


@contextmanager
def _without_num_proc_warning() -> Iterator[None]:
    """Hide the warning `push_to_hub` prints for every single-shard split (it is not about anything asked)."""
    logger = logging.getLogger("datasets.arrow_dataset")
    logger.addFilter(_not_num_proc_notice)
    try:
        yield
    finally:
        logger.removeFilter(_not_num_proc_notice)


def _check_may_push(
    repo_id: str, files: list[str], card_data: Any, *, private: bool, was_private: bool, force: bool
) -> None:
    """Refuse to overwrite someone else's dataset, or to put corpus data in a public repo unasked."""
    has_content = any(path != ".gitattributes" for path in files)
    metadata = card_data.to_dict() if hasattr(card_data, "to_dict") else card_data
    if has_content and not is_qagen_card(metadata) and not force:
        raise ForeignRepoError(
            f"{repo_id} already holds a dataset that qagen did not make (its README has no `qagen` tag); "
            "pushing would replace its card and may delete its data files. Choose another REPO_ID, "
            "or pass --force to push anyway."
        )
    if private and not was_private:
        raise VisibilityError(
            f"{repo_id} is public, and this push would publish data from your corpus in it; pass --public "
            "to update the public repo, or make the repo private on the Hub first."
        )


def _load_run(run_dir: Path) -> _LocalRun:
    """The run's outputs, read into memory (so nothing, not even a cache file, is written there)."""
    from datasets import load_from_disk

    run = RunDir(run_dir)
    run.require()
    if not run.summary_file.exists():
        raise QagenError(f"{run_dir} has no summary.json yet; finish the run with `qagen build` before pushing.")
    try:
        summary = json.loads(run.summary_file.read_text(encoding="utf-8"))
        fingerprint = json.loads(run.run_file.read_text(encoding="utf-8")).get("fingerprint", {})
    except (OSError, ValueError) as exc:
        raise QagenError(f"Cannot read {run.summary_file}: {exc}; run `qagen filter {run_dir}` again.") from exc
    if summary.get("funnel", {}).get("kept") == 0:
        # Also because `datasets` cannot load back the empty `dataset/` that such a run holds.
        raise QagenError(
            f"{run_dir} kept no questions, so there is nothing to publish; lower the bar with "
            f"`qagen filter {run_dir} --min-score N`, or draft more with --n-generations."
        )
    try:
        kept = load_from_disk(str(run.dataset_dir), keep_in_memory=True)
        candidates = load_from_disk(str(run.candidates_dir), keep_in_memory=True)
    except (OSError, ValueError) as exc:
        raise QagenError(f"Cannot read the outputs of {run_dir}: {exc}; run `qagen filter {run_dir}` again.") from exc
    hashes = {name: str(digest) for name, digest in (fingerprint.get("prompts") or {}).items()}
    return _LocalRun(summary, hashes, kept, candidates)


def _prompt_files(run: _LocalRun) -> tuple[list[PromptFile], dict[str, bytes]]:
    """The prompts the run used, with the installed text of each when it still has the run's hash."""
    import hashlib

    prompts: list[PromptFile] = []
    files: dict[str, bytes] = {}
    for name, short in run.summary.get("prompts", {}).items():
        full = run.prompt_hashes.get(name, short)
        path = prompts_dir() / f"{name}.txt"
        data = path.read_bytes() if path.is_file() else b""
        if data and hashlib.sha256(data).hexdigest().startswith(full):
            files[f"{PROMPTS_IN_REPO}/{name}.txt"] = data
            prompts.append(PromptFile(name, short, f"{PROMPTS_IN_REPO}/{name}.txt"))
        else:
            prompts.append(PromptFile(name, short, None))
    return prompts, files


def _languages(dataset: Dataset) -> list[str]:
    rows = dataset.select_columns(["question", "context"])[:_LANGUAGE_SAMPLE]
    texts = (
        f"{question or ''}\n{context or ''}"
        for question, context in zip(rows["question"], rows["context"], strict=True)
    )
    return detect_languages(texts)


def _known_secrets(token: str | None) -> set[str]:
    """Every secret value we can know of: the token and the values of secret-named env vars."""
    secrets = {value for name, value in os.environ.items() if _SECRET_NAME.search(name.upper()) and len(value) >= 8}
    if token:
        secrets.add(token)
    return secrets


def _mask(text: str, secrets: set[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return _DATA_KEY_SHAPES.sub("***", text)


def _mask_secrets(dataset: Dataset, secrets: set[str]) -> tuple[Dataset, int]:
    """The dataset with secrets masked in every string cell (a new in-memory copy only if needed)."""
    from datasets import Dataset

    columns = dataset.to_dict()
    masked = 0
    for values in columns.values():
        for index, value in enumerate(values):
            if isinstance(value, str):
                clean = _mask(value, secrets)
                if clean != value:
                    values[index] = clean
                    masked += 1
    if not masked:
        return dataset, 0
    return Dataset.from_dict(columns, features=dataset.features, info=dataset.info, split=dataset.split), masked
