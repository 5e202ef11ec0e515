"""The settings of a corpus: where its documents come from, and how they are cut into chunks."""

from __future__ import annotations

import os
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from qagen.corpus.chunk import LengthUnit
from qagen.errors import ConfigError

PathSetting = Annotated[str, AfterValidator(os.path.expanduser)]
"""A path setting: `~` is the home directory, as a shell reads it, also when given from Python or a file."""


class CorpusSettings(BaseModel):
    """Where the documents come from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: PathSetting | None = Field(default=None, description="A file or folder of documents or tables.")
    hf_dataset: str | None = Field(default=None, description="A saved dataset directory or a Hub dataset id.")
    split: str = Field(default="train", description="The split of `hf_dataset` to read.")
    text_column: str = Field(
        default="text", description="The column holding the text, in tables (.jsonl, .csv, .parquet) and datasets."
    )
    source_column: str | None = Field(
        default=None, description="The column naming each row's source document (None: file name and row number)."
    )

    @model_validator(mode="after")
    def _one_source(self) -> CorpusSettings:
        if (self.path is None) == (self.hf_dataset is None):
            raise ConfigError(
                "Give exactly one corpus: a path, or `hf_dataset=NAME_OR_PATH`.", settings=("hf_dataset",)
            )
        return self


MIN_CHUNK_SIZE: dict[LengthUnit, int] = {"characters": 50, "tokens": 12}
"""The smallest chunk that can hold a fact to ask about: one short sentence (about 50 characters,
or 12 tokens). Smaller chunks give questions about single words or letters, each paid for."""


class ChunkSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    chunk_size: int = Field(default=2000, description="The longest chunk, in `length_unit`s (the notebook's 2000).")
    chunk_overlap: int = Field(default=200, description="How much consecutive chunks overlap, in `length_unit`s.")
    length_unit: LengthUnit = Field(
        default="characters", description="Measure chunk length in `characters` or in tiktoken `tokens`."
    )
    encoding: str = Field(default="cl100k_base", description="The tiktoken encoding, when `length_unit` is tokens.")

    @model_validator(mode="after")
    def _big_enough(self) -> ChunkSettings:
        smallest = MIN_CHUNK_SIZE[self.length_unit]
        if self.chunk_size < smallest:
            raise ConfigError(
                f"`chunk_size` {self.chunk_size} is too small for a chunk to hold a fact to ask about; the "
                f"smallest accepted is {smallest} {self.length_unit} (the default: 2000).",
                settings=("chunk_size",),
            )
        return self
