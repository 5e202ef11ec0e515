"""Every command and Python snippet in README.md and the documentation pages (docs/*.md) runs as
written, against the local stand-ins.

Placeholders a newcomer would replace are replaced here the same way: their documents folder
(`docs/`, `path/to/your/docs`) is a copy of `examples/corpus`, a local server's URL is the stand-in
LLM's, OpenAI's URL that of a second stand-in, `my-org/my-testset` is a fresh repo on the stand-in
Hub, `my_rag` / the endpoint are tiny RAG systems, and `my_prompts` / `my_plugin/prompts` hold the
prompts of a new critic and a new grader. Each fenced block runs in a directory of its own that
already holds a built `run`; the servers and that run are made once for the module. No command may
reach a host other than 127.0.0.1. A block that shows output rather than a command is fenced as
`text` or with no language, and is not run. A section whose example needs more than this environment
(`RUN_ELSEWHERE`: a package to install) is run by the test named there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.evaluate.test_new_metric import SYSTEM as CONCISE_SYSTEM
from tests.evaluate.test_new_metric import USER as CONCISE_USER
from tests.extras import DENSE_MODULES, require_dense
from tests.test_fourth_critic import SPECIFICITY

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
# The README and every page of the documentation site; a page added to docs/ is run with no change here.
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)
# Lines that are not ours to run here: installing (CI does it), the test command itself, servers.
SKIP = ("export ", "pip install", "python -m pytest", "vllm ", "ollama ", "llama-server")
# A block with a command of the dense extra (`--baseline dense` or `hybrid`) is run by its own test,
# which skips (saying why) when the extra is not installed, and fails then under QAGEN_REQUIRE_DENSE=1.
DENSE_COMMAND = re.compile(r"--baseline [\w,]*(dense|hybrid)")
MY_RAG = """
def answer(question):
    return {"answer": "It is in the documents.", "contexts": ["Tides are the regular rise and fall of the sea."],
            "sources": ["tides.md"]}
"""


# Sections run by a test of their own: the page, the section's heading, and the test.
RUN_ELSEWHERE = {("docs/extending.md", "A package of extensions"): "tests/test_plugins.py"}
SECTION = re.compile(r"^## (?P<heading>.+)$", re.MULTILINE)


def _sections(text: str) -> list[tuple[str, str]]:
    """A page's text in `## ` sections, as (heading, text); the text before the first has the heading ''."""
    starts = [(0, "")] + [(match.start(), match.group("heading").strip()) for match in SECTION.finditer(text)]
    ends = [start for start, _ in starts[1:]] + [len(text)]
    return [(heading, text[start:end]) for (start, heading), end in zip(starts, ends, strict=True)]


def page_section(page: Path, heading: str) -> str:
    """The text of one `## ` section of a page."""
    [text] = [text for name, text in _sections(page.read_text(encoding="utf-8")) if name == heading]
    return text


def _blocks_in(text: str, language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(text) if lang == language]


def _blocks(page: Path, language: str) -> list[str]:
    """The page's blocks of `language`, but for those of the sections run elsewhere (`RUN_ELSEWHERE`)."""
    name = page.relative_to(ROOT).as_posix()
    sections = _sections(page.read_text(encoding="utf-8"))
    kept = [text for heading, text in sections if (name, heading) not in RUN_ELSEWHERE]
    return _blocks_in("".join(kept), language)


def _pages_with(language: str, dense: bool | None = None) -> list[Any]:
    """The pages holding a `language` block (with or without a dense command, when `dense` says which)."""
    return [
        pytest.param(page, id=page.relative_to(ROOT).as_posix())
        for page in PAGES
        if any(dense is None or bool(DENSE_COMMAND.search(block)) == dense for block in _blocks(page, language))
    ]


def _commands(block: str) -> list[str]:
    joined = block.replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        line = line.split(" #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if "&&" in line:
            line = line.split("&&", 1)[1].strip()  # "pip install ... && qagen build ...": the run part
        if line and not line.startswith(SKIP):
            commands.append(line)
    return commands


class _Endpoint(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        question = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["question"]
        body = json.dumps({"answer": f"An answer to {question}", "contexts": ["Some text."], "sources": ["tides.md"]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/ask"
    server.shutdown()


@pytest.fixture(scope="module")
def api_llm() -> Iterator[Any]:
    """The stand-in for OpenAI's API, where the README sends the critics and judges of its mixed set-ups."""
    from standins.llm.server import StandInLLM

    with StandInLLM() as server:
        yield server


@pytest.fixture(scope="module")
def pages_env(
    shared_llm: Any, api_llm: Any, hub: Any, endpoint: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """What every page's blocks run against, made once for the module: the servers, and a folder holding
    what a newcomer has (the documents, `my_rag`, the prompt folders) and a built `run`."""
    env = {
        **os.environ,
        "OPENAI_BASE_URL": shared_llm.base_url,
        "OPENAI_API_KEY": "readme-test-key",
        "HF_TOKEN": "hf_test_token",
        # `my_rag` from the working directory, then the qagen under test (the one this test imports).
        "PYTHONPATH": os.pathsep.join([".", str(ROOT)]),
        # The `qagen` command of the Python running the tests, activated or not.
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    # A built run, for the blocks that start from one (push, evaluate, report).
    template = tmp_path_factory.mktemp("pages") / "template"
    shutil.copytree(ROOT / "examples", template / "examples")
    shutil.copytree(ROOT / "examples" / "corpus", template / "docs")
    shutil.copytree(ROOT / "examples" / "corpus", template / "path" / "to" / "your" / "docs")
    (template / "my_rag.py").write_text(MY_RAG, encoding="utf-8")
    # The prompt folders of docs/extending.md: its critic and its grader, as the tests of each write them.
    for folder in (template / "my_prompts", template / "my_plugin" / "prompts"):
        folder.mkdir(parents=True)
        (folder / "critique_specificity.txt").write_text(SPECIFICITY, encoding="utf-8")
    (template / "my_plugin" / "prompts" / "grader_concise_system.txt").write_text(CONCISE_SYSTEM, encoding="utf-8")
    (template / "my_plugin" / "prompts" / "grader_concise.txt").write_text(CONCISE_USER, encoding="utf-8")
    build = [sys.executable, "-m", "qagen", "build", "docs/", "--out", "run", "-q"]  # the README's defaults
    subprocess.run(build, cwd=template, env=env, check=True, capture_output=True)
    questions = [json.loads(line) for line in _dataset_questions(template / "run")]
    with (template / "answers.jsonl").open("w", encoding="utf-8") as handle:
        for question in questions:
            handle.write(
                json.dumps({"question": question, "answer": "x", "contexts": ["y"], "sources": ["tides.md"]}) + "\n"
            )
    return {
        "env": env,
        "template": template,
        "llm": shared_llm,
        "api_llm": api_llm,
        "endpoint": endpoint,
    }


@pytest.fixture()
def readme_env(pages_env: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """The module's environment as one page's test sees it: its own working folders, qagen cache and Hub
    repo (the Hub libraries fall back to cached copies of a repo id they have seen), and an empty log on
    the API stand-in, so a page is checked for what it sent there and nothing else."""
    repo = f"alice/readme-{uuid.uuid4().hex[:8]}"
    api_llm = pages_env["api_llm"]
    api_llm.reset()
    replacements = {
        "http://localhost:8000/v1": pages_env["llm"].base_url,
        "http://localhost:11434/v1": pages_env["llm"].base_url,
        "https://api.openai.com/v1": api_llm.base_url,
        "http://localhost:8080/ask": pages_env["endpoint"],
        "my-org/my-testset": repo,
        # The stand-in at OPENAI_BASE_URL plays OpenAI, yet is a server of one's own to qagen, which prices no
        # model it serves by its name (docs/models.md): a cap in dollars needs OpenAI's prices given.
        "--max-cost 2": "--max-cost 2 --price-input 0.15 --price-output 0.60",
    }
    return {
        "env": {**pages_env["env"], "QAGEN_CACHE": os.environ["QAGEN_CACHE"]},
        "template": pages_env["template"],
        "replacements": replacements,
        "repo": repo,
        "tmp": tmp_path,
        "api_llm": api_llm,
    }


def _dataset_questions(run: Path) -> Iterator[str]:
    from datasets import load_from_disk

    for row in load_from_disk(str(run / "dataset")):
        yield json.dumps(row["question"])


def _workdir(readme_env: dict[str, Any], name: str) -> Path:
    work = readme_env["tmp"] / name
    shutil.copytree(readme_env["template"], work)
    return work


def _substitute(text: str, readme_env: dict[str, Any]) -> str:
    for old, new in readme_env["replacements"].items():
        text = text.replace(old, new)
    # The commands run in processes of their own, which the test-wide guard on connections does not reach.
    hosts = set(re.findall(r"https?://([^/:\s\"']+)", text))
    assert hosts <= {"127.0.0.1"}, f"a README command would reach {hosts}; map its URL in readme_env"
    return text


def _run_block(readme_env: dict[str, Any], index: int, block: str) -> int:
    """Run a bash block's commands in a fresh working directory; the number run."""
    work = _workdir(readme_env, f"bash{index}")
    commands = _commands(block)
    if commands and commands[0].startswith("qagen build"):
        shutil.rmtree(work / "run")  # a block that builds starts from nothing, like a newcomer
    for command in commands:
        command = _substitute(command, readme_env)
        done = subprocess.run(
            command, shell=True, cwd=work, env=readme_env["env"], capture_output=True, text=True, timeout=300
        )
        assert done.returncode in (0, 3) if "--max-cost" in command else done.returncode == 0, (
            command,
            done.stderr[-2000:],
        )
        assert "Traceback" not in done.stderr, (command, done.stderr[-2000:])
    return len(commands)


def test_the_pages_keep_every_command() -> None:
    """Moving text between the README and the pages loses no command: the README held these many."""
    shell = [command for page in PAGES for block in _blocks(page, "bash") for command in _commands(block)]
    python = [snippet for page in PAGES for snippet in _blocks(page, "python")]
    assert len(shell) >= 34
    assert len(python) >= 4
    assert any(DENSE_COMMAND.search(command) for command in shell)


@pytest.mark.slow
@pytest.mark.parametrize("page", _pages_with("bash", dense=False))
def test_every_shell_command_works(readme_env: dict[str, Any], page: Path) -> None:
    blocks = [block for block in _blocks(page, "bash") if not DENSE_COMMAND.search(block)]
    commands = [command for block in blocks for command in _commands(block)]
    ran = sum(_run_block(readme_env, index, block) for index, block in enumerate(blocks))
    assert ran == len(commands)
    # The mixed set-ups sent their critics and judges to "OpenAI", and nothing else.
    sent_to_openai = {
        kind
        for flag, kind in (
            ("--critic-base-url https://api.openai.com", "check"),  # the default vetting's yes/no checks
            ("--judge-base-url https://api.openai.com", "judge_answer_correct"),  # the default judge
        )
        if any(flag in command for command in commands)
    }
    assert {entry["kind"] for entry in readme_env["api_llm"].log} == sent_to_openai


@pytest.mark.slow
@pytest.mark.parametrize("page", _pages_with("bash", dense=True))
def test_every_dense_command_works(readme_env: dict[str, Any], page: Path) -> None:
    require_dense(*DENSE_MODULES)
    blocks = [(index, block) for index, block in enumerate(_blocks(page, "bash")) if DENSE_COMMAND.search(block)]
    ran = sum(_run_block(readme_env, index, block) for index, block in blocks)
    assert ran == sum(len(_commands(block)) for _, block in blocks) > 0


@pytest.mark.slow
@pytest.mark.parametrize("page", _pages_with("python"))
def test_every_python_snippet_works(readme_env: dict[str, Any], page: Path) -> None:
    # The Hub snippets read the repo that the README's `qagen push` would have made.
    work = _workdir(readme_env, "python-push")
    push = [sys.executable, "-m", "qagen", "push", "run", readme_env["repo"]]
    subprocess.run(push, cwd=work, env=readme_env["env"], check=True, capture_output=True)
    prelude = (
        "import datasets\n"
        "datasets.config.USE_PARQUET_EXPORT = False  # the stand-in Hub has no dataset viewer\n"
        "def my_rag_function(question):\n"
        "    return {'answer': 'x', 'contexts': ['Tides are the rise and fall of the sea.'], 'sources': ['tides.md']}\n"
    )
    snippets = _blocks(page, "python")
    assert snippets
    for index, snippet in enumerate(snippets):
        work = _workdir(readme_env, f"python{index}")
        code = prelude + _substitute(snippet, readme_env).replace('Path("run")', 'Path("run-py")').replace(
            'testset="run"', 'testset="run-py"'
        )
        if "build(config" not in code:
            code = code.replace("run-py", "run")
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=work, env=readme_env["env"], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, (snippet, done.stderr[-3000:])


def test_every_folder_the_readme_writes_is_ignored_by_git() -> None:
    """A newcomer who follows the README in the checkout does not see its outputs as changes to commit."""
    readme = README.read_text(encoding="utf-8")
    outputs = sorted(set(re.findall(r"--out (\S+)", readme)))
    assert {"run", "eval"} <= set(outputs)
    for output in outputs:
        ignored = subprocess.run(
            ["git", "check-ignore", "--quiet", "--no-index", f"{output.rstrip('/')}/summary.json"],
            cwd=ROOT,
            check=False,
        )
        assert ignored.returncode == 0, f"{output}/ is not in .gitignore"
