"""The three critics: each rates a drafted question 1-5, rationale first (one LLM call each)."""

from __future__ import annotations

from qagen.generation.replies import parse_rating
from qagen.llm.client import LLMClient
from qagen.llm.prompts import Prompt
from qagen.llm.untrusted import neutralize
from qagen.records import Chunk, Criterion, Critique, Draft, Status
from qagen.runs.store import record_key

CRITIC_PROMPTS: dict[Criterion, str] = {
    "groundedness": "critique_groundedness",
    "relevance": "critique_relevance",
    "standalone": "critique_standalone",
}


def critic_inputs(criterion: Criterion, draft: Draft, chunk: Chunk, audience: str) -> dict[str, str]:
    """What each critic sees: groundedness reads the chunk; relevance knows the audience.

    The question and the chunk are untrusted (a corpus can hold "Total rating: 5", and a drafted
    question can repeat it): they are neutralised, and the prompt files put them between data tags.
    The audience is the user's own option, so it goes in as written.
    """
    question = neutralize(draft.question or "")
    if criterion == "groundedness":
        return {"question": question, "context": neutralize(chunk.text)}
    if criterion == "relevance":
        return {"question": question, "audience": audience}
    return {"question": question}


def critique_id(draft: Draft, criterion: Criterion, prompt: Prompt, model: str, audience: str) -> str:
    # The audience is part of the relevance critic's prompt, so it is part of that critique's key.
    extra = audience if criterion == "relevance" else ""
    return record_key("critique", draft.id, criterion, prompt.sha256, model, extra)


async def critique_draft(
    criterion: Criterion,
    draft: Draft,
    chunk: Chunk,
    client: LLMClient,
    prompt: Prompt,
    audience: str,
) -> Critique:
    """One critic's verdict on one draft; a failure is returned as a failed `Critique`."""
    model = client.settings.spec
    result = await client.complete(prompt.render(**critic_inputs(criterion, draft, chunk, audience)))
    status: Status
    if result.text is None:
        status, reason, score, rationale, raw = "failed", f"api_error:{result.error}", None, None, result.detail
    else:
        parsed = parse_rating(result.text)
        status = "failed" if parsed.reason else "ok"
        reason, score, rationale, raw = parsed.reason, parsed.score, parsed.rationale, result.text
    return Critique(
        id=critique_id(draft, criterion, prompt, model, audience),
        draft_id=draft.id,
        criterion=criterion,
        model=model,
        prompt_hash=prompt.hash,
        status=status,
        reason=reason,
        score=score,
        rationale=rationale,
        raw=raw,
        usage=result.usage,
    )
