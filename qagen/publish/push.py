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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qagen.errors import ConfigError, QagenError
from qagen.publish.card import (
    DEFAULT_LICENSE,
    PROMPTS_IN_REPO,
    SUMMARY_IN_REPO,
    CardContent,
    is_qagen_card,
    make_card,
    public_summary,
)
from qagen.publish.hub_errors import HubAuthError, hub_errors
from qagen.publish.local_run import LocalRun, languages, load_run
from qagen.publish.secret_masking import known_secrets, mask_secrets
from qagen.redaction import redact, register_secret

if TYPE_CHECKING:
    from huggingface_hub import HfApi


class ForeignRepoError(QagenError):
    """The repo exists and holds something qagen did not make; pushing needs `force=True`."""


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


def push_run(
    run_dir: Path | str,
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

    run = load_run(Path(run_dir).expanduser())
    if token is None and get_token() is None:
        raise HubAuthError(
            "No Hugging Face token: pass `token`, set HF_TOKEN, or log in with `hf auth login`.", settings=("token",)
        )
    secrets = known_secrets(token or get_token())
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
    run: LocalRun,
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
    prompts, prompt_files = run.prompt_files()
    content = CardContent(
        repo_id=repo_id,
        summary=public_summary(run.summary),
        kept_rows=run.kept.num_rows,
        candidate_rows=run.candidates.num_rows,
        languages=languages(run.kept if run.kept.num_rows else run.candidates),
        license=(license or DEFAULT_LICENSE).strip().lower(),
        prompts=prompts,
        revision=revision,
        agreement=run.agreement,
    )
    card = make_card(content)
    try:  # before anything is written: a bad `license` must not leave a half-made repo
        card.validate(repo_type="dataset")
    except ValueError as exc:
        raise ConfigError(
            f"The Hub refused the dataset card: {' '.join(str(exc).split())} (check `license`).", settings=("license",)
        ) from exc
    kept, masked_kept = mask_secrets(run.kept, secrets)
    candidates, masked_candidates = mask_secrets(run.candidates, secrets)

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
            "or pass `force=True` to push anyway.",
            settings=("force",),
        )
    if private and not was_private:
        raise VisibilityError(
            f"{repo_id} is public, and this push would publish data from your corpus in it; pass `private=False` "
            "to update the public repo, or make the repo private on the Hub first.",
            settings=("private",),
        )
