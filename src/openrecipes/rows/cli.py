"""`openrecipes rows build|demo` and `openrecipes tokenizer export`: argument parsing and progress only."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from openrecipes.errors import UserError
from openrecipes.names import canonical
from openrecipes.rows import demo as demo_corpus
from openrecipes.rows.build import MAX_ROW_TOKENS, MAX_ROWS, MAX_SEED, MAX_WORKERS, BuildRequest, build_rows
from openrecipes.rows.formats import CHAT_FORMATS
from openrecipes.rows.manifest import DemoCorpus, RowsManifest
from openrecipes.rows.publish import locked
from openrecipes.rows.vocab_export import VOCABS, export_tokenizer

rows_app = typer.Typer(help="Fixed-length SFT rows: chat format + loss mask + packing, with a reproducible manifest.",
                       no_args_is_help=True)
tokenizer_app = typer.Typer(help="Real tokenizers, rebuilt offline from quicktok-v1's vocabularies.",
                            no_args_is_help=True)
console = Console(highlight=False)
CORES = os.cpu_count() or 1  # the default --workers


def _run_build(request: BuildRequest) -> RowsManifest:
    started = time.monotonic()
    bar = Progress(TextColumn("rows"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                   TimeElapsedColumn(), console=console, transient=False)
    task = bar.add_task("", total=request.rows)

    def show(progress) -> None:
        if not bar.live.is_started:  # shown from the first progress on: bad input stops before, with no bar
            bar.start()
        rate = progress.tokens / max(1e-9, time.monotonic() - started)
        bar.update(task, completed=progress.rows, description=f"{progress.tokens:,} tokens  {rate:,.0f} tokens/s")

    try:
        manifest = build_rows(request, show)
    finally:
        if bar.live.is_started:  # stopping a bar never started still prints its (empty) line
            bar.stop()
    console.print(f"wrote {manifest.rows:,} rows x {manifest.row_tokens:,} tokens to "
                  f"{request.out / 'rows.parquet'} (supervised {manifest.supervised_token_ratio:.3f})")
    console.print(f"rows_sha256 {manifest.rows_sha256}")
    if manifest.conversations_skipped:
        console.print("skipped conversations: " + ", ".join(
            f"{reason} {count:,}" for reason, count in manifest.conversations_skipped.items()))
    if manifest.data_ran_out:
        console.print(f"[yellow]the data ran out: {manifest.rows:,} of {manifest.rows_requested:,} rows[/]")
    return manifest


def _spelling_check(known: Iterable[str], what: str) -> Callable[[str], str]:
    """An option's canonical spelling (any case, `-` or `_`: gpt-oss is gpt_oss, gpt_oss is gpt-oss)."""
    def check(given: str) -> str:
        try:
            return canonical(given, known, what, "docs/rows.md")
        except UserError as error:
            raise typer.BadParameter(str(error)) from None

    return check


_check_format = _spelling_check(CHAT_FORMATS, "chat format")
_check_family = _spelling_check(VOCABS, "tokenizer family")


WorkersOption = Annotated[int, typer.Option(
    min=0, max=MAX_WORKERS, help="Tokenizer processes, at most one per core; 0 tokenizes in this process.")]
SeedOption = Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the global permutation of conversations.")]
RowTokensOption = Annotated[int, typer.Option(min=1, max=MAX_ROW_TOKENS, help="Tokens per row, exactly.")]


@rows_app.command("build")
def build(
    conversations: Annotated[Path, typer.Option(
        help="Tulu-shaped .parquet or .jsonl (id, messages: [{role, content}]).")],
    tokenizer: Annotated[Path, typer.Option(help="Directory with tokenizer.json (and tokenizer_config.json).")],
    chat_format: Annotated[str, typer.Option(callback=_check_format, help=f"One of {', '.join(CHAT_FORMATS)}.")],
    rows: Annotated[int, typer.Option(min=1, max=MAX_ROWS,
                                      help="Rows to write; fewer if the data runs out (the manifest says so).")],
    seed: SeedOption,
    out: Annotated[Path, typer.Option(help="Output directory: rows.parquet + manifest.json.")],
    row_tokens: RowTokensOption = 8192,
    workers: WorkersOption = CORES,
    name: Annotated[str | None, typer.Option(help="Build name recorded in the manifest.")] = None,
    eos_token: Annotated[str | None, typer.Option(
        help="Token between conversations (default: the format's end-of-text).")] = None,
    source_dataset: Annotated[str | None, typer.Option(
        help="Dataset id for the manifest, e.g. allenai/tulu-3-sft-mixture.")] = None,
    source_revision: Annotated[str | None, typer.Option(help="Dataset revision (commit) for the manifest.")] = None,
) -> None:
    """Build fixed-length rows with per-model loss masks from a conversation file."""
    _run_build(BuildRequest(conversations, tokenizer, chat_format, row_tokens, rows, seed, out, workers, name,
                            eos_token, source_dataset, source_revision))


@rows_app.command("demo")
def demo(
    out: Annotated[Path, typer.Option(
        help="Output directory: conversations.jsonl, tokenizer/, rows.parquet, manifest.")],
    chat_format: Annotated[str, typer.Option(
        callback=_check_format, help="gpt_oss, qwen3 or llama3 (the bundled tokenizers).")] = "gpt_oss",
    row_tokens: RowTokensOption = 8192,
    rows: Annotated[int, typer.Option(
        min=1, max=MAX_ROWS, help="Rows to write; the corpus repeats in epochs when one pass is too small.")] = 4,
    seed: SeedOption = 42,
    workers: WorkersOption = CORES,
) -> None:
    """Convert chatterbot-corpus's English dialogs to the Tulu shape and build rows from them."""
    families = {"gpt_oss": "gpt-oss", "qwen3": "qwen3", "llama3": "llama3"}
    if chat_format not in families:
        raise typer.BadParameter("the demo bundles gpt_oss, qwen3 and llama3 tokenizers", param_hint="--chat-format")
    with locked(out):
        tokenizer_dir = out / "tokenizer"
        export_tokenizer(families[chat_format], tokenizer_dir)
        dialogs = demo_corpus.corpus_dialogs()
        epochs = demo_corpus.epochs_needed(dialogs, tokenizer_dir, chat_format, rows, row_tokens)
        conversations = out / "conversations.jsonl"
        demo_corpus.check_room(dialogs, epochs, rows, row_tokens, out)
        demo_corpus.write_tulu_jsonl(dialogs, epochs, conversations)
        console.print(f"{len(dialogs):,} dialogs from {demo_corpus.CORPUS}, repeated in {epochs} epoch(s)")
        _run_build(BuildRequest(conversations, tokenizer_dir, chat_format, row_tokens, rows, seed, out, workers,
                                name=f"{chat_format}-chatterbot-demo-fixed{row_tokens}",
                                source_dataset=demo_corpus.CORPUS,
                                demo=DemoCorpus(corpus=demo_corpus.CORPUS, dialogs_per_epoch=len(dialogs),
                                                epochs=epochs)))


@tokenizer_app.command("export")
def export(
    family: Annotated[str, typer.Argument(callback=_check_family, help=f"One of {', '.join(VOCABS)}.")],
    out: Annotated[Path, typer.Option(help="Directory to write tokenizer.json + tokenizer_config.json into.")],
) -> None:
    """Write a Hugging Face tokenizer directory, its vocabulary checked against the official sha256."""
    result = export_tokenizer(family, out)
    console.print(f"wrote {out}/tokenizer.json (vocabulary sha256 {result['ranks_sha256']} verified; "
                  f"tokenizer.json sha256 {result['tokenizer_json_sha256']})")


def register(app: typer.Typer) -> None:
    app.add_typer(rows_app, name="rows")
    app.add_typer(tokenizer_app, name="tokenizer")
