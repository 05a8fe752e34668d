"""The bundled demo: chatterbot-corpus 1.3.3's English dialogs (BSD) in the Tulu shape, built into rows.

The corpus is small (a few hundred short dialogs), so a build asking for more tokens than one pass holds repeats
the corpus in epochs: each copy's ids carry the epoch, the global permutation mixes all copies, and the manifest
records the epoch count. The data is repeated, never invented.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

import yaml

from openrecipes.errors import UserError
from openrecipes.rows.encode import eos_token_for, make_encoder
from openrecipes.rows.room import check_free_space, output_bytes_bound

CORPUS = "chatterbot-corpus==1.3.3"
# libyaml's parser where PyYAML was built with it: the same dialogs as the pure-Python SafeLoader, a tenth of the time
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def corpus_dialogs() -> list[list[dict]]:
    """Every English dialog with at least one reply, as alternating user/assistant messages."""
    try:
        import chatterbot_corpus
    except ImportError:
        raise UserError(f"rows demo: {CORPUS} is not installed; pip install {CORPUS}") from None
    dialogs = []
    for path in sorted((Path(chatterbot_corpus.__file__).parent / "data" / "english").glob("*.yml")):
        for lines in yaml.load(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER).get("conversations", []):
            texts = [str(line).strip() for line in lines if str(line).strip()]
            if len(texts) >= 2:
                dialogs.append([{"role": "user" if turn % 2 == 0 else "assistant", "content": text}
                                for turn, text in enumerate(texts)])
    return dialogs


def epochs_needed(dialogs: list[list[dict]], tokenizer: Path, chat_format: str, rows: int, row_tokens: int) -> int:
    """Passes over the corpus that hold rows x row_tokens tokens, with one pass of margin for dropped rows."""
    encoder = make_encoder(tokenizer, chat_format, eos_token_for(tokenizer, chat_format, None))
    tokens_per_epoch = sum(len(ids) for ids, _ in encoder.encode(dialogs))
    return math.ceil(rows * row_tokens / tokens_per_epoch) + 1


def _epoch_lines(dialogs: list[list[dict]], epoch: int) -> str:
    return "".join(json.dumps({"id": f"chatterbot-en-{number}-epoch{epoch}", "messages": messages, "source": CORPUS},
                              ensure_ascii=False) + "\n" for number, messages in enumerate(dialogs))


def check_room(dialogs: list[list[dict]], epochs: int, rows: int, row_tokens: int, out: Path) -> None:
    """Before anything is written: the corpus file plus the build must fit on the disk."""
    corpus_bytes = len(_epoch_lines(dialogs, epochs).encode()) * epochs  # the widest epoch number, every epoch
    check_free_space(out, corpus_bytes + output_bytes_bound(rows * row_tokens),
                     f"{epochs:,} epochs of the demo corpus and {rows:,} rows of {row_tokens:,} tokens")


def write_tulu_jsonl(dialogs: list[list[dict]], epochs: int, path: Path) -> None:
    """Written beside its place and renamed in: a killed demo never leaves a truncated file a build would read."""
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.",
                                     suffix=".tmp", delete=False) as out:
        try:
            for epoch in range(epochs):
                out.write(_epoch_lines(dialogs, epoch))
        except BaseException:
            os.unlink(out.name)
            raise
    os.chmod(out.name, 0o644)
    os.replace(out.name, path)
