"""The documentation: the site in docs/ builds with `mkdocs build --strict`, and the README's links resolve.

The commands and snippets of the pages are run by tests/test_readme.py. The site needs the `dev`
extra (mkdocs and its theme); without it the build test skips, saying so, and under
QAGEN_REQUIRE_DOCS=1 (CI) it fails instead.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import qagen
from qagen import BuildConfig, ChunkSettings, CorpusSettings, ModelSettings
from qagen.generation.write import funnel_table
from qagen.records import CorpusSummary, Funnel, StageUsage

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# The README's relative links: [text](target), the target without its #anchor; web addresses aside.
LINK = re.compile(r"\]\((?!https?://)([^)#\s]+)(?:#[^)\s]*)?\)")


def _require_mkdocs() -> None:
    missing = [name for name in ("mkdocs", "material") if importlib.util.find_spec(name) is None]
    if missing:
        message = f"{' and '.join(missing)} not installed (the site's builder and theme): pip install -e '.[dev]'"
        if os.environ.get("QAGEN_REQUIRE_DOCS") == "1":
            pytest.fail(f"{message}; QAGEN_REQUIRE_DOCS=1 says the site must be built here")
        pytest.skip(message)


@pytest.mark.slow
def test_the_documentation_site_builds_strict(tmp_path: Path) -> None:
    _require_mkdocs()
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
        cwd=ROOT,
        # The theme prints a banner about its successor on every build; it is not a warning of the site's.
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # Every page became a page of the site (--strict already refuses a page left out of the nav).
    for page in DOCS.glob("*.md"):
        built = site / "index.html" if page.stem == "index" else site / page.stem / "index.html"
        assert built.is_file(), f"{page.name} was not built"
    assert (site / "images" / "review_page.png").is_file()


def test_the_readme_links_resolve() -> None:
    """The README is not a page of the site, so --strict does not check it: its links to the pages are checked here."""
    targets = LINK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert any(target.startswith("docs/") for target in targets)
    missing = [target for target in targets if not (ROOT / target).exists()]
    assert not missing, f"the README links to files that do not exist: {missing}"


def test_the_readme_is_a_first_page() -> None:
    """A newcomer reads it in five minutes: at most 200 lines, opening with the two commands CI runs."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"the README has {len(lines)} lines: move the detail to a page of docs/"
    first_section = next(index for index, line in enumerate(lines) if line.startswith("## "))
    opening = lines[:first_section]
    assert "<!-- ci:install-and-run -->" in opening and "<!-- ci:test -->" in opening


# The counts of the example funnel of the README and docs/building.md (a build of 200 drafts from 412
# documents), as a build's summary holds them: the pages must show what the build prints for them.
EXAMPLE_CORPUS = CorpusSummary(
    documents=412, skipped=3, skipped_by_reason={"binary": 1, "empty": 2}, chunks=6547, duplicate_chunks=1,
    characters=12_400_000,
)  # fmt: skip
EXAMPLE_FUNNEL = Funnel(
    requested=200, sampled=200, drafted=198, generation_failed={"parse_failure": 1, "refusal": 1},
    critique_failed={"supported:refusal": 1}, undecided={"generation": 0, "critique": 0}, rejected=86,
    rejected_by={"supported": 86}, critic_calls_skipped=0, duplicates=4,
    too_long=1, checks_rejected={"answer_in_question": 3, "evidence_not_found": 2}, kept=101,
    failure_examples={
        "parse_failure": "guide/install.md (chunk 9c1e07a4b2d35f68e0a1): Question: Which command installs the CLI?",
        "supported:refusal": "faq/billing.md (chunk 4be2d7f0a91c36e85d10): I cannot verify billing details.",
    },
)  # fmt: skip
EXAMPLE_USAGE = {
    "generation": StageUsage(
        model="openai:gpt-4o-mini", calls=200, input_tokens=122_000, output_tokens=12_400, cost_usd=0.02574
    ),
    "critique": StageUsage(
        model="openai:gpt-4o-mini", calls=192, input_tokens=145_920, output_tokens=384, cost_usd=0.02212
    ),
}


def _example_funnel(page: Path) -> str:
    """The funnel a page shows under its `$ qagen build` line, up to the end of its block."""
    lines = page.read_text(encoding="utf-8").splitlines()
    start = next((n for n, line in enumerate(lines) if line.startswith("$ qagen build")), None)
    assert start is not None, f"{page.name} shows no funnel"
    end = lines.index("```", start)
    return "\n".join(lines[start + 1 : end])


def test_the_example_funnels_are_what_a_build_prints_for_their_counts(
    shared_llm: object, corpus: Path, tmp_path: Path
) -> None:
    """A real build's summary (a build without a model for duplicates by meaning, as in a fresh
    install), its counts set to the example's: every line the funnel prints is on the pages, as printed."""
    model = ModelSettings(spec="openai:stand-in", base_url=shared_llm.base_url)  # type: ignore[attr-defined]
    config = BuildConfig(
        corpus=CorpusSettings(path=str(corpus)), chunking=ChunkSettings(chunk_size=400, chunk_overlap=40),
        n_generations=3, generator=model, critic=model, dedup_embeddings=None,
    )  # fmt: skip
    built = qagen.build(config, tmp_path / "run", progress=False).summary
    usage = built.usage.model_copy(update=EXAMPLE_USAGE)
    example = built.model_copy(update={"corpus": EXAMPLE_CORPUS, "funnel": EXAMPLE_FUNNEL, "usage": usage})
    printed = funnel_table(example)
    for page in (ROOT / "README.md", DOCS / "building.md"):
        assert _example_funnel(page) == printed, f"{page.name}'s example funnel is not what a build prints"
