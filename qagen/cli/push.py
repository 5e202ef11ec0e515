"""`qagen push`: publish a run directory to the Hugging Face Hub (registered on `qagen.cli.app.main`)."""

from __future__ import annotations

from pathlib import Path

import click

from qagen.cli.errors import friendly_errors
from qagen.cli.paths import UserPath
from qagen.redaction import register_secret


@click.command()
@click.argument("run_dir", type=UserPath(path_type=Path, exists=True, file_okay=False))
@click.argument("repo_id")
@click.option(
    "--token",
    envvar="HF_TOKEN",
    default=None,
    metavar="TOKEN",
    help="Hub token with write access (default: the login of `hf auth login`). [env: HF_TOKEN]",
)
@click.option(
    "--public",
    is_flag=True,
    default=False,
    help="Make the dataset public. Without it the repo is created private, and an existing public repo is refused.",
)
@click.option(
    "--revision",
    metavar="BRANCH",
    default=None,
    help="Push to this branch (created from main if missing) instead of main.",
)
@click.option(
    "--license",
    "license_id",
    metavar="ID",
    default=None,
    help="License of the data, as a Hub license id (apache-2.0, cc-by-4.0, other, ...). [default: unknown]",
)
@click.option(
    "--force",
    is_flag=True,
    default=False,
    help="Push even into an existing repo that qagen did not make (its card is replaced, its data files may be).",
)
@friendly_errors
def push(
    run_dir: Path,
    repo_id: str,
    token: str | None,
    public: bool,
    revision: str | None,
    license_id: str | None,
    force: bool,
) -> None:
    """Publish RUN_DIR to the Hub as the dataset repo REPO_ID (private unless --public).

    The repo gets a dataset card (funnel, models, settings, prompt hashes), the prompt files, the
    run's summary, and two configs:

    \b
      load_dataset(REPO_ID)                 the kept questions (split train)
      load_dataset(REPO_ID, "candidates")   every draft with scores, rationales, status, reason

    REPO_ID without a namespace goes to your own. Pushing again updates the repo; RUN_DIR is only
    read.
    """
    from qagen.publish.push import push_run

    register_secret(token)
    result = push_run(
        run_dir, repo_id, token=token, private=not public, revision=revision, license=license_id, force=force
    )
    visibility = "private" if result.private else "public"
    if result.masked_values:
        click.echo(
            f"note: {result.masked_values} data cells held a secret or key-shaped string; it was replaced by *** "
            "in the pushed copy.",
            err=True,
        )
    click.echo(f"pushed {run_dir} to {result.url} ({visibility}, commit {result.commit[:12]})")
