"""Row builder vs a naive loop of one apply_chat_template per conversation, on the same input, identical bytes.

Both sides build Qwen3 rows: the builder in the qwen3 format, the naive loop through Qwen3's template with
{% generation %} markers for the same mask, one apply_chat_template call per conversation in the same permutation,
packed the same way. The rows must be byte-identical (same rows_sha256) or the benchmark fails. Two inputs, both
made of the bundled chatterbot-corpus English dialogs (real text, ~2,000 dialogs per pass) repeated EPOCHS times:

- short: one dialog per conversation, as the demo does (~39 tokens per conversation).
- long: the same dialogs, regrouped: each category's dialogs, in a seeded shuffle per pass, are concatenated whole,
  in that order, into conversations of at least LONG_CONTENT_CHARS characters of content (~1,050 tokens, the order
  of a Tulu 3 SFT mixture conversation). Real text rearranged, not invented; a small category's conversations
  repeat its dialogs.

Then the seeds' size: 12,800 rows x 8,192 tokens (104,857,600 tokens) from the demo corpus repeated as
`rows demo --rows 12800` repeats it, built by the builder and by the previous builder (the naive loop would take
over ten minutes here; its figure is projected from its measured rate on the short input, whose conversations are
the same dialogs).

Last, the seeds' size again from the long conversations, a new regrouping each pass, so that no record repeats
and every token is encoded: the figure for a real mixture, where the demo's repeats do not help (builder only).

Arms: the builder as it is; the previous builder (PREVIOUS, the commit before the Arrow reader and the per-worker
memo of encoded conversations, checked out with `git archive` into a temporary folder; skipped with --no-previous
or outside a git checkout); the naive loop. Every arm must give the same rows_sha256 (and the two builders the same
parquet_sha256) or the benchmark fails. Each arm runs in a fresh process, so its peak RSS is its own; "CPU s" is
user+sys of the arm and its worker processes, the figure least moved by other jobs on the machine.
Run: .venv/bin/python benchmarks/rows_build.py [EPOCHS] [--no-short] [--no-long] [--no-seeds] [--no-seeds-long]
     [--no-previous] [--tiny]
--tiny: one epoch and the seeds' builds cut to a few rows, every arm run (a check that the benchmark runs, in about
a minute on 2 cores; its figures mean nothing).
"""

from __future__ import annotations

import hashlib
import json
import math
import multiprocessing
import os
import queue
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from openrecipes.rows.build import MAX_ROWS, BuildRequest, build_rows
from openrecipes.rows.demo import CORPUS, corpus_dialogs, write_tulu_jsonl
from openrecipes.rows.vocab_export import export_tokenizer

ROW_TOKENS, SEED = 8192, 42
SEEDS_ROWS = 12_800
SEEDS_BUILD_TOKENS = SEEDS_ROWS * 8_192
TINY_SEEDS_ROWS = 4  # --tiny: every arm and input, the seeds' builds cut to a few rows
EOS_ID = 151643  # Qwen3's <|endoftext|>
LONG_CONTENT_CHARS = 3500
PREVIOUS = "b8ed046"  # the builder before Arrow parsing and the per-worker memo of encoded conversations
REPO = Path(__file__).resolve().parents[1]
# The naive arm's template: the qwen3 format's mask as {% generation %} markers, the reference that
# tests/test_rows_formats.py checks the qwen3 format against.
QWEN3_GENERATION_TEMPLATE = (REPO / "tests/fixtures/rows/qwen3-generation.jinja").read_text(encoding="utf-8")


def category_dialogs() -> dict[str, list[list[dict]]]:
    """corpus_dialogs() grouped by the corpus file (category) each came from."""
    import chatterbot_corpus
    import yaml

    by_category = {}
    for path in sorted((Path(chatterbot_corpus.__file__).parent / "data" / "english").glob("*.yml")):
        dialogs = []
        for lines in yaml.safe_load(path.read_text(encoding="utf-8")).get("conversations", []):
            texts = [str(line).strip() for line in lines if str(line).strip()]
            if len(texts) >= 2:
                dialogs.append([{"role": "user" if turn % 2 == 0 else "assistant", "content": text}
                                for turn, text in enumerate(texts)])
        by_category[path.stem] = dialogs
    assert sum(map(len, by_category.values())) == len(corpus_dialogs())  # the same dialogs as the short input
    return by_category


def write_long_conversations(epochs: int, path: Path) -> None:
    shuffle = random.Random(SEED)
    with path.open("w", encoding="utf-8") as out:
        for category, dialogs in category_dialogs().items():
            stream = []
            for _ in range(epochs):
                stream += shuffle.sample(dialogs, len(dialogs))
            messages, number = [], 0
            for dialog in stream:
                messages += dialog
                if sum(len(message["content"]) for message in messages) >= LONG_CONTENT_CHARS or dialog is stream[-1]:
                    record = {"id": f"chatterbot-en-{category}-long{number}", "messages": messages, "source": CORPUS}
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                    messages, number = [], number + 1


def build_side(conversations: Path, tokenizer: Path, out: Path, rows: int = MAX_ROWS) -> dict:
    manifest = build_rows(BuildRequest(conversations, tokenizer, "qwen3", ROW_TOKENS, rows, SEED, out,
                                       workers=os.cpu_count() or 1))
    return {"rows_sha256": manifest.rows_sha256, "parquet_sha256": manifest.parquet_sha256, "rows": manifest.rows,
            "conversations": manifest.source.conversations, "used": manifest.conversations_used}


def naive_side(conversations: Path, template_dir: Path) -> dict:
    """One apply_chat_template call per conversation, in the same permutation, packed the same way."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(template_dir))
    records = [json.loads(line)["messages"] for line in conversations.read_text().splitlines()]
    order = np.random.Generator(np.random.PCG64(SEED)).permutation(len(records))
    ids, masks = [], []
    for index in order:
        out = tokenizer.apply_chat_template(records[index], tokenize=True, return_dict=True,
                                            return_assistant_tokens_mask=True)
        ids += [*out["input_ids"], EOS_ID]
        masks += [*out["assistant_masks"], 0]
    ids, masks = np.asarray(ids, "<i4"), np.asarray(masks, np.uint8)
    digest = hashlib.sha256()
    for row in range(len(ids) // ROW_TOKENS):
        cut = slice(row * ROW_TOKENS, (row + 1) * ROW_TOKENS)
        if masks[cut].any():
            digest.update(ids[cut].tobytes())
            digest.update(masks[cut].tobytes())
    return {"rows_sha256": digest.hexdigest(), "tokens": len(ids)}


def _timed(side, args, results) -> None:
    started = time.perf_counter()
    result = side(*args)
    result["seconds"] = time.perf_counter() - started
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    result["peak_rss_mib"] = max(each.ru_maxrss for each in usage) / 1024
    # CPU seconds of the side and its (reaped) workers: what it costs, whatever else shares the machine.
    result["cpu_seconds"] = sum(each.ru_utime + each.ru_stime for each in usage)
    results.put(result)


def in_fresh_process(side, *args) -> dict:
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    process = context.Process(target=_timed, args=(side, args, results))
    process.start()
    while process.is_alive() or not results.empty():
        try:
            result = results.get(timeout=1)
            process.join()
            return result
        except queue.Empty:
            continue
    sys.exit(f"{side.__name__} failed (exit {process.exitcode})")


# The previous builder, run from its own source tree in a fresh interpreter; it prints what _timed measures.
PREVIOUS_SIDE = """
import json, os, resource, sys, time
from pathlib import Path
from openrecipes.rows.build import BuildRequest, build_rows
conversations, tokenizer, out, rows = sys.argv[1:5]
started = time.perf_counter()
manifest = build_rows(BuildRequest(Path(conversations), Path(tokenizer), "qwen3", 8192, int(rows), 42, Path(out),
                                   workers=os.cpu_count() or 1))
seconds = time.perf_counter() - started
usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
print(json.dumps({"rows_sha256": manifest["rows_sha256"], "parquet_sha256": manifest["parquet_sha256"],
                  "rows": manifest["rows"], "seconds": seconds,
                  "peak_rss_mib": max(each.ru_maxrss for each in usage) / 1024,
                  "cpu_seconds": sum(each.ru_utime + each.ru_stime for each in usage)}))
"""


def previous_source(root: Path) -> Path | None:
    """PREVIOUS's src/ under root, or None outside a git checkout that has it."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", PREVIOUS, "src"], capture_output=True)
    if archive.returncode != 0:
        return None
    (root / "previous").mkdir()
    subprocess.run(["tar", "-x", "-C", str(root / "previous")], input=archive.stdout, check=True)
    return root / "previous" / "src"


def previous_side(source: Path, conversations: Path, tokenizer: Path, out: Path, rows: int = MAX_ROWS) -> dict:
    done = subprocess.run([sys.executable, "-c", PREVIOUS_SIDE, str(conversations), str(tokenizer), str(out),
                           str(rows)], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(source)})
    if done.returncode != 0:
        sys.exit(f"the previous builder failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _line(label: str, result: dict, tokens: int) -> str:
    return (f"  {label}: {result['seconds']:.2f} s, {tokens / result['seconds']:,.0f} tokens/s, "
            f"{result['cpu_seconds']:.1f} CPU s ({tokens / result['cpu_seconds']:,.0f} tokens per CPU s), "
            f"peak RSS {result['peak_rss_mib']:,.0f} MiB")


def _ratio(label: str, baseline: dict, builder: dict) -> str:
    return (f"  builder vs {label}: {baseline['seconds'] / builder['seconds']:.2f}x wall, "
            f"{baseline['cpu_seconds'] / builder['cpu_seconds']:.2f}x CPU")


def compare(name: str, conversations: Path, root: Path, previous: Path | None) -> bool:
    load = os.getloadavg()[0]
    builder = in_fresh_process(build_side, conversations, root / "qwen3", root / f"rows-{name}")
    naive = in_fresh_process(naive_side, conversations, root / "qwen3-generation")
    before = (previous_side(previous, conversations, root / "qwen3", root / f"rows-{name}-previous") if previous
              else None)
    tokens = naive["tokens"]
    identical = builder["rows_sha256"] == naive["rows_sha256"] and (
        before is None or (before["rows_sha256"], before["parquet_sha256"]) == (builder["rows_sha256"],
                                                                                  builder["parquet_sha256"]))
    print(f"{name}: {builder['conversations']:,} conversations, {tokens:,} tokens "
          f"({tokens / builder['conversations']:,.0f} per conversation), {builder['rows']} rows; "
          f"load average before: {load:.2f}")
    print(_line(f"builder ({os.cpu_count()} workers)", builder, tokens))
    if before:
        print(_line(f"previous builder ({PREVIOUS})", before, tokens))
    print(_line("naive apply_chat_template loop", naive, tokens))
    print(_ratio("naive", naive, builder))
    if before:
        print(_ratio("previous", before, builder))
    print(f"  identical rows: {identical} (rows_sha256 {builder['rows_sha256'][:16]}...)")
    print(f"  projected 12,800 x 8,192-token build ({SEEDS_BUILD_TOKENS:,} tokens): builder "
          f"{SEEDS_BUILD_TOKENS / tokens * builder['seconds'] / 60:.1f} min, "
          f"naive {SEEDS_BUILD_TOKENS / tokens * naive['seconds'] / 60:.1f} min")
    return identical


def seeds_build(root: Path, previous: Path | None, rows: int = SEEDS_ROWS) -> bool:
    """The seeds' 12,800 x 8,192-token build from the demo corpus repeated, as `rows demo --rows 12800` does."""
    from openrecipes.rows.demo import epochs_needed

    dialogs = corpus_dialogs()
    epochs = epochs_needed(dialogs, root / "qwen3", "qwen3", rows, ROW_TOKENS)
    write_tulu_jsonl(dialogs, epochs, root / "seeds.jsonl")
    result = _seeds_size_builder("seeds' size", root / "seeds.jsonl", root, f"{epochs} epochs of the demo corpus",
                                 rows)
    tokens = result["rows"] * ROW_TOKENS
    if previous is None:
        return True
    load = os.getloadavg()[0]
    before = previous_side(previous, root / "seeds.jsonl", root / "qwen3", root / "rows-seeds-previous", rows)
    print(_line(f"previous builder ({PREVIOUS}), load average before {load:.2f}", before, tokens))
    print(_ratio("previous", before, result))
    identical = (before["rows_sha256"], before["parquet_sha256"]) == (result["rows_sha256"], result["parquet_sha256"])
    print(f"  identical rows and parquet: {identical} (rows_sha256 {result['rows_sha256'][:16]}..., parquet_sha256 "
          f"{result['parquet_sha256'][:16]}...)")
    return identical


def seeds_long_build(root: Path, rows: int = SEEDS_ROWS) -> bool:
    """The seeds' 12,800 x 8,192-token build from long conversations, a new regrouping of the dialogs each pass:
    no record repeats whole, and records this long bypass the per-worker memo, so every token is encoded."""
    from openrecipes.rows.encode import make_encoder, parse_record

    write_long_conversations(1, root / "long-one-pass.jsonl")
    encoder = make_encoder(root / "qwen3", "qwen3", "<|endoftext|>")
    one_pass = [parse_record(line) for line in (root / "long-one-pass.jsonl").read_bytes().splitlines()]
    tokens_per_pass = len(encoder.encode_stream([record for record in one_pass if isinstance(record, list)])[0])
    epochs = math.ceil(rows * ROW_TOKENS / tokens_per_pass * 1.02)
    write_long_conversations(epochs, root / "seeds-long.jsonl")
    result = _seeds_size_builder("seeds' size, long conversations", root / "seeds-long.jsonl", root,
                                 f"{epochs} passes", rows)
    return result["rows"] == rows


def _seeds_size_builder(label: str, conversations: Path, root: Path, made_of: str, rows: int) -> dict:
    """The builder alone on `rows` rows of `conversations`, printed with its input."""
    load = os.getloadavg()[0]
    result = in_fresh_process(build_side, conversations, root / "qwen3", root / f"rows-{conversations.stem}", rows)
    tokens = result["rows"] * ROW_TOKENS
    print(f"{label}: {result['rows']:,} rows x {ROW_TOKENS:,} = {tokens:,} tokens from {result['used']:,} of "
          f"{result['conversations']:,} conversations ({made_of}, {conversations.stat().st_size / 2**20:,.0f} MiB "
          f"of JSONL); load average before: {load:.2f}")
    print(_line(f"builder ({os.cpu_count()} workers)", result, tokens))
    return result


def main() -> None:
    arguments = [argument for argument in sys.argv[1:] if not argument.startswith("--")]
    tiny = "--tiny" in sys.argv
    epochs = 1 if tiny else int(arguments[0]) if arguments else 60
    seeds_rows = TINY_SEEDS_ROWS if tiny else SEEDS_ROWS
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        export_tokenizer("qwen3", root / "qwen3")
        template_dir = root / "qwen3-generation"
        template_dir.mkdir()
        (template_dir / "tokenizer.json").write_bytes((root / "qwen3" / "tokenizer.json").read_bytes())
        config = json.loads((root / "qwen3" / "tokenizer_config.json").read_text())
        (template_dir / "tokenizer_config.json").write_text(
            json.dumps({**config, "chat_template": QWEN3_GENERATION_TEMPLATE}))
        write_tulu_jsonl(corpus_dialogs(), epochs, root / "short.jsonl")
        write_long_conversations(epochs, root / "long.jsonl")
        print(f"input: chatterbot-corpus English dialogs x {epochs} epochs, Qwen3 tokenizer, {ROW_TOKENS:,}-token rows")
        previous = None if "--no-previous" in sys.argv else previous_source(root)
        if previous is None:
            print(f"previous builder: skipped ({'--no-previous' if '--no-previous' in sys.argv else 'no git'})")
        identical = [compare(name, root / f"{name}.jsonl", root, previous) for name in ("short", "long")
                     if f"--no-{name}" not in sys.argv]
        if "--no-seeds" not in sys.argv:
            identical.append(seeds_build(root, previous, seeds_rows))
        if "--no-seeds-long" not in sys.argv:
            identical.append(seeds_long_build(root, seeds_rows))
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    if not all(identical):
        sys.exit("rows differ between the arms")


if __name__ == "__main__":
    main()
