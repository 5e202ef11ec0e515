"""The stand-in's /v1/embeddings: deterministic unit vectors, through the real OpenAI and LangChain clients."""

from __future__ import annotations

import math

import openai
import pytest
from langchain_openai import OpenAIEmbeddings

from standins.llm.embeddings import DIMENSIONS, embedding
from standins.llm.server import StandInLLM


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_vectors_are_unit_length_deterministic_and_lexical() -> None:
    one = embedding("The lighthouse keeper kept a logbook.")
    assert len(one) == DIMENSIONS and math.isclose(sum(x * x for x in one), 1.0)
    assert embedding("the LIGHTHOUSE keeper kept a logbook") == one  # case and punctuation do not count
    near = embedding("Who kept the logbook of the lighthouse?")
    far = embedding("Glaciers retreat in warm summers.")
    assert cosine(one, near) > 0.5 > cosine(one, far)
    assert embedding("... !!!") == [0.0] * DIMENSIONS


def test_openai_client_gets_base64_and_float_vectors(llm: StandInLLM) -> None:
    client = openai.OpenAI(base_url=llm.base_url, api_key="k")
    # The openai client asks for base64 unless told otherwise, and decodes it.
    default = client.embeddings.create(model="embedder", input=["a lighthouse", "a glacier"])
    floats = client.embeddings.create(model="embedder", input="a lighthouse", encoding_format="float")
    assert [item.index for item in default.data] == [0, 1]
    assert default.data[0].embedding == pytest.approx(embedding("a lighthouse"), abs=1e-6)
    assert floats.data[0].embedding == embedding("a lighthouse")
    assert default.model == "embedder" and default.usage.prompt_tokens == 6


def test_langchain_embeddings_and_the_log(llm: StandInLLM) -> None:
    llm.reset()
    model = OpenAIEmbeddings(model="embedder", base_url=llm.base_url, api_key="k", check_embedding_ctx_length=False)
    vectors = model.embed_documents(["one text", "another text"])
    assert vectors[1] == pytest.approx(embedding("another text"), abs=1e-6)
    assert model.embed_query("one text") == pytest.approx(vectors[0])
    kinds = [(entry["kind"], entry["path"], entry["model"]) for entry in llm.log]
    assert kinds == [("embeddings", "/v1/embeddings", "embedder")] * 2


def test_bad_embeddings_requests_are_openai_shaped_errors() -> None:
    with StandInLLM(models=["embedder"]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        with pytest.raises(openai.BadRequestError, match="'input'"):
            client.embeddings.create(model="embedder", input=[1, 2, 3])
        with pytest.raises(openai.NotFoundError, match="other"):
            client.embeddings.create(model="other", input="text")
