"""manifest.json: what was built, from what, and the hashes a second machine must reproduce."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from openrecipes.atomic import write_atomic
from openrecipes.errors import UserError

PERMUTATION = "numpy.random.Generator(numpy.random.PCG64(seed)).permutation(conversations)"
PACKING = ("source conversations in a seeded global permutation, concatenated with an EOS token between them and "
           "cut into consecutive {row_tokens}-token rows; rows without supervised targets are skipped")
TOKENIZER_NAMES = {"gpt-oss": "gpt-oss", "qwen3": "Qwen3", "llama3": "Llama 3"}


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ManifestTokenizer(_Part):
    path: str
    tokenizer_json_sha256: str


class ManifestSource(_Part):
    path: str
    dataset: str | None
    revision: str | None
    conversations: int


class DemoCorpus(_Part):
    """The bundled demo's corpus, repeated in epochs when one pass holds fewer tokens than the rows asked for."""

    corpus: str
    dialogs_per_epoch: int
    epochs: int


class RowsManifest(_Part):
    """One build's manifest.json, field for field (data/README.md defines the hashes)."""

    name: str
    tokenizer: ManifestTokenizer
    chat_format: str
    loss_mask: str
    eos_token: str
    rows: int
    rows_requested: int
    data_ran_out: bool
    row_tokens: int
    padding_tokens: int
    seed: int
    permutation: str
    packing: str
    supervised_tokens: int
    supervised_token_ratio: float
    rows_sha256: str
    parquet_sha256: str
    parquet_bytes: int
    source: ManifestSource
    conversations_used: int
    conversations_skipped: dict[str, int]
    rows_skipped_without_target: int
    demo: DemoCorpus | None = None  # only in a demo build's manifest

    @classmethod
    def read(cls, path: Path) -> RowsManifest:
        try:
            return cls.model_validate_json(path.read_bytes())
        except (OSError, ValidationError) as error:
            reason = str(error).splitlines()[0]
            raise UserError(f"{path}: not a rows manifest ({reason}); build the rows again") from None

    def write(self, path: Path) -> None:
        fields = self.model_dump(exclude={"demo"} if self.demo is None else None)
        write_atomic(path, json.dumps(fields, indent=2, ensure_ascii=False) + "\n")

    def tokenizer_described(self) -> str:
        """The tokenizer by name where `openrecipes tokenizer export` wrote it, with its digest (`build.tokenizer`)."""
        from openrecipes.rows.quicktok_encode import EXPORTED_TOKENIZER_JSON

        digest = self.tokenizer.tokenizer_json_sha256
        family = EXPORTED_TOKENIZER_JSON.get(digest)
        if family is None:
            return f"{self.tokenizer.path} (tokenizer.json sha256 {digest})"
        return (f"{TOKENIZER_NAMES[family]} (rebuilt offline by `openrecipes tokenizer export {family}` from "
                f"quicktok-v1's vocabulary; tokenizer.json sha256 {digest})")

    def packing_described(self) -> str:
        """The packing rule, with the demo corpus's repetition when there is one (a recipe's `build.packing`)."""
        if self.demo is None:
            return self.packing
        return (f"{self.packing}; the {self.demo.dialogs_per_epoch:,} dialogs repeat in {self.demo.epochs} epochs to "
                f"fill {self.rows:,} rows")
