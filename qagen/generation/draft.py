"""Draft one factoid question and answer from a chunk (one LLM call)."""

from __future__ import annotations

from qagen.generation.replies import parse_factoid_qa
from qagen.llm.client import LLMClient
from qagen.llm.prompts import Prompt
from qagen.llm.untrusted import neutralize
from qagen.records import Chunk, Draft, Status
from qagen.runs.store import record_key

QA_PROMPT = "qa_generation"


def draft_inputs(chunk: Chunk) -> dict[str, str]:
    """What the generator sees: the chunk, neutralised (it is untrusted text; the prompt file puts
    it between data tags), so a chunk that holds `Factoid question: ...` cannot pose as a reply."""
    return {"context": neutralize(chunk.text)}


def draft_id(chunk: Chunk, prompt: Prompt, model: str) -> str:
    """The resume key of a draft: the same chunk, prompt and model never cost a second call."""
    return record_key("draft", chunk.id, prompt.sha256, model)


async def draft_question(chunk: Chunk, client: LLMClient, prompt: Prompt) -> Draft:
    """Ask the generator for a question/answer pair; a failure is returned as a failed `Draft`."""
    model = client.settings.spec
    result = await client.complete(prompt.render(**draft_inputs(chunk)))
    status: Status
    if result.text is None:
        # No reply: keep the (redacted) error in `raw` so the candidate row shows what happened.
        status, reason, question, answer, raw = "failed", f"api_error:{result.error}", None, None, result.detail
    else:
        parsed = parse_factoid_qa(result.text)
        status = "failed" if parsed.reason else "ok"
        reason, question, answer, raw = parsed.reason, parsed.question, parsed.answer, result.text
    return Draft(
        id=draft_id(chunk, prompt, model),
        chunk_id=chunk.id,
        model=model,
        prompt_hash=prompt.hash,
        status=status,
        reason=reason,
        question=question,
        answer=answer,
        raw=raw,
        usage=result.usage,
    )
