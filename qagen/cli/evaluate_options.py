"""The options of `qagen evaluate`, declared once: the command takes them, its config keys read them."""

from __future__ import annotations

from pathlib import Path

import click

from qagen.cli.installed_help import ListsInstalled, installed
from qagen.cli.option_spec import SettingOption, argument, option, option_group
from qagen.cli.options import batch_options, call_options, variable_name
from qagen.cli.paths import UserPath
from qagen.evaluate.config import DEFAULT_METRICS
from qagen.evaluate.judges.registry import ALL, LLM_METRICS, MetricSpec
from qagen.evaluate.metrics.scoring import DETERMINISTIC_METRICS
from qagen.evaluate.systems.rerank import DEFAULT_RERANK_TOP
from qagen.evaluate.systems.retriever_specs import RETRIEVERS
from qagen.llm.backends import DEFAULT_MODEL


def _installed_rerankers() -> str:
    from qagen.evaluate.systems.rerank.specs import RERANKERS

    return installed(RERANKERS, lambda kind: kind.form)


def metrics_help(*, installed: bool = True) -> str:
    """The `--metrics` help: every LLM metric with what it measures, by group, then the deterministic
    metrics; `installed`: those installed packages bring too (else qagen's own and those registered in
    Python, as the configuration page lists them whatever is installed)."""
    llm = tuple(LLM_METRICS) if installed else LLM_METRICS.own()
    deterministic = tuple(DETERMINISTIC_METRICS) if installed else DETERMINISTIC_METRICS.own()
    by_group: dict[str, list[MetricSpec]] = {}
    for spec in llm:
        by_group.setdefault(spec.group, []).append(spec)
    singles = [f"{group} ({specs[0].help})" for group, specs in by_group.items() if [s.name for s in specs] == [group]]
    grouped = [
        f"{group} ({'; '.join(f'{spec.name}: {spec.help}' for spec in specs)})"
        for group, specs in by_group.items()
        if [spec.name for spec in specs] != [group]
    ]
    others = [f"{metric.name} ({metric.help})" for metric in deterministic]
    return f"Comma list of metrics or groups: {'; '.join([*singles, *grouped, *others])}; {ALL}."


def metrics_option_help(*, installed: bool = True) -> str:
    return (
        f"{metrics_help(installed=installed)} Without --embeddings, the groups ragas and all leave answer_relevancy "
        "out (with a note)."
    )


class _MetricsOption(SettingOption):
    """`--metrics`, whose help lists the metrics registered when it is shown (one registered after
    the CLI was imported, or brought by an installed package, too)."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = metrics_option_help()
        return super().get_help_record(ctx)


EVALUATE_OPTIONS = option_group(
    argument("dataset", required=False),
    option(
        "--out",
        "-o",
        "out",
        required=True,
        type=UserPath(path_type=Path),
        help="Evaluation directory: answers, verdicts, results.jsonl, summary.json (and the baseline's BM25 index). "
        "Re-run the same command to resume.",
    ),
    option(
        "--answers",
        type=UserPath(path_type=Path, exists=True, dir_okay=False),
        help="JSONL of {question, answer, contexts, sources} made by your RAG system elsewhere; rows match the "
        "test set's questions by `id` if given, else ignoring case and spacing.",
    ),
    option(
        "--rag",
        "rag_callable",
        metavar="MODULE:FUNCTION",
        help="A Python function question -> str | {answer, contexts, sources} (sync or async).",
    ),
    option(
        "--endpoint",
        metavar="URL",
        help='An HTTP endpoint: POST {"question": ...} returns {answer, contexts, sources}.',
    ),
    option(
        "--baseline",
        metavar="RETRIEVER[,...]",
        cls=ListsInstalled,
        installed=lambda: installed(RETRIEVERS),
        help="The bundled baseline over --corpus, answered by --reader-model with the notebook's RAG prompt, "
        "retrieving with bm25, dense (--embeddings searched with FAISS; pip install 'qagen[dense]') or hybrid (both, "
        "reciprocal rank fusion); a comma list (bm25,dense,hybrid) runs a grid.",
    ),
    option(
        "--corpus",
        type=UserPath(path_type=Path, exists=True),
        help="The corpus for --baseline (a file or folder, as for qagen build).",
    ),
    option(
        "--chunk-size",
        default="2000",
        show_default=True,
        help="Baseline chunk size in characters; a comma list (500,1000,2000) runs a settings grid.",
    ),
    option(
        "--k",
        "k_values",
        default="7",
        show_default=True,
        help="Contexts retrieved (and scored by hit@k, NDCG@k); a comma list (3,7) runs a grid.",
    ),
    option(
        "--rerank",
        "rerank",
        default="none",
        show_default=True,
        cls=ListsInstalled,
        installed=_installed_rerankers,
        help="Reranker of --baseline between retrieval and the reader: none, cross-encoder:PATH (a local "
        "sentence-transformers model folder), endpoint:MODEL (POST /rerank of vLLM or TEI at --rerank-url), reader "
        "(--reader-model orders them, listwise); a comma list runs a grid.",
    ),
    option(
        "--rerank-top",
        type=click.IntRange(min=1),
        default=DEFAULT_RERANK_TOP,
        show_default=True,
        help="Candidates retrieved for the reranker; the reader gets the best --k of them (never fewer than --k).",
    ),
    option(
        "--rerank-url",
        default=None,
        help="Server of --rerank endpoint:MODEL, e.g. http://127.0.0.1:8080 (default: --base-url).",
    ),
    option(
        "--cache-dir",
        type=UserPath(path_type=Path, file_okay=False),
        default=None,
        help="Where --baseline keeps its BM25 and dense indexes (the chunks' embeddings), reused by every later "
        "evaluation of the same corpus, chunking and model whatever its --out. [default: $QAGEN_CACHE, else "
        "$XDG_CACHE_HOME/qagen, else ~/.cache/qagen]",
    ),
    option(
        "--reader-model",
        old_flag="--model",
        default=DEFAULT_MODEL,
        show_default=True,
        help="Reader model of --baseline (LangChain provider:model).",
    ),
    option("--judge-model", default=None, help="Model of the LLM judges (default: --reader-model)."),
    option(
        "--base-url",
        envvar="OPENAI_BASE_URL",
        default=None,
        help="OpenAI-compatible server for the reader (and the judges unless --judge-base-url). [env: OPENAI_BASE_URL]",
    ),
    option(
        "--api-key-env",
        metavar="VAR",
        default=None,
        callback=variable_name,
        help="Name of the environment variable holding the key for --reader-model, and the judges' unless "
        "--judge-api-key-env (default: OPENAI_API_KEY for openai:* models). The name, not the key.",
    ),
    option(
        "--judge-base-url",
        envvar="QAGEN_JUDGE_BASE_URL",
        default=None,
        help="OpenAI-compatible server for the judges (default: --base-url). [env: QAGEN_JUDGE_BASE_URL]",
    ),
    option(
        "--judge-api-key-env",
        metavar="VAR",
        default=None,
        callback=variable_name,
        help="Name of the environment variable holding the judges' key (default: --api-key-env).",
    ),
    option(
        "--metrics",
        cls=_MetricsOption,
        default=",".join(DEFAULT_METRICS),
        show_default=True,
        help=metrics_option_help(installed=False),
    ),
    option(
        "--embeddings",
        default=None,
        help="Embeddings model of --baseline dense/hybrid (default: local): local (all-MiniLM-L6-v2, offline, in "
        "qagen[dense]), a sentence-transformers folder, or openai:MODEL (from --base-url); a comma list runs a grid. "
        "Also answer_relevancy's (from the judges' server; the first of a list).",
    ),
    option("--split", default="train", show_default=True, help="Split of DATASET when it is a dataset."),
    option("--question-column", default="question", show_default=True, help="Question column of DATASET."),
    option(
        "--answer-column",
        default=None,
        help="Reference-answer column (default: answer, expected_answer, true_answer, reference...).",
    ),
    option("--token", envvar="HF_TOKEN", default=None, help="Hub token for a private DATASET. [env: HF_TOKEN]"),
    option(
        "--max-output-tokens",
        type=click.IntRange(min=1),
        default=None,
        help="Cap on tokens per reply, for the reader and the judges (default: 2048; a reply cut at the cap is "
        "recorded as truncated).",
    ),
    option(
        "--judge-max-output-tokens",
        type=click.IntRange(min=1),
        default=None,
        help="The judges' own cap on tokens per reply (default: --max-output-tokens).",
    ),
    option(
        "--interrupt-grace",
        type=click.FloatRange(min=0),
        default=5.0,
        show_default=True,
        metavar="SECONDS",
        help="After Ctrl-C, how long a --rag function still running may take to return; then its question is "
        "recorded as failed (interrupted) and the run ends.",
    ),
    call_options,
    batch_options,
    option("--quiet", "-q", is_flag=True, default=False, help="No progress bars."),
)
"""Every option of `qagen evaluate` but `--config` and `--set`, in the order `--help` lists them."""
