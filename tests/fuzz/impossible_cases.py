"""The third adversarial pass as fuzz cases, all made here under the scratch folder: figures and precisions no GPU
can have, in measured recipes and record entries (`validate` and `audit` must fail them: exit 1, never 0); model
configs that cannot be counted exactly and card names that are not plain slugs (`model add`: exit 2, nothing
written); and importer tables with hostile cells (the importers: exit 2, recipes/ exactly as it was).

To add cases: add a mutation to a table below (ENTRY_MUTATIONS, CONFIG_MUTATIONS, COUNT_CELLS, ...).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml
from cases import _Scratch
from make_corpus import REPO
from run import Case

from openrecipes.catalog.hardware import entry_peak, load_reference_tables
from openrecipes.catalog.model import Recipe
from openrecipes.catalog.plausibility import least_flops_per_token
from openrecipes.catalog.validate import recipe_files, validate_file

FAILED, BAD = (1,), (2,)
FORTY, HUGE = "9" * 40, "9" * 5000

# --- impossible figures and precisions (validate, audit) ------------------------------------------------------------


def _limit(path: Path) -> tuple[dict[str, Any], float, str | None, bool]:
    """An entry's data, the tokens/s per GPU at which it reaches its GPU's peak, its precision, and whether it is a
    measured recipe."""
    tables = load_reference_tables()
    entry = validate_file(path, tables).entry
    assert entry is not None, path
    card = tables.models[entry.model]
    if isinstance(entry, Recipe):
        precision, seq, frozen = entry.workload.precision, entry.workload.row_tokens, False
    else:
        run = entry.published
        precision, seq, frozen = entry.precision, run.seq_length if run else None, bool(run and run.task == "lora")
    peak = entry_peak(entry.gpu, precision, tables)
    assert peak is not None and peak.flops is not None, path
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data, peak.flops / least_flops_per_token(card, seq, frozen), precision, isinstance(entry, Recipe)


def _set(data: dict[str, Any], dotted: str, value: object) -> dict[str, Any]:
    copy = json.loads(json.dumps(data, default=str))
    node = copy
    *parents, last = dotted.split(".")
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]  # reproductions.0.x: an item of a list
    node[last] = value
    return copy


def _entry_mutations(data: dict[str, Any], limit: float, precision: str | None,
                     measured: bool) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each way one entry can claim the impossible; every one must fail validation."""
    yield "just-over-the-peak", _set(data, "result.tokens_per_s_per_gpu", round(limit * 1.001 + 1, 1))
    yield "1e7-tokens", _set(data, "result.tokens_per_s_per_gpu", max(1e7, limit * 2))
    yield "1e15-tokens", _set(data, "result.tokens_per_s_per_gpu", 1e15)
    gpu = data["gpu"]["type"]
    field = "workload.precision" if measured else "published.precision"
    if not measured and data.get("published") is not None and gpu in ("H100", "H200"):
        yield "nvfp4-on-hopper", _set(data, field, "nvfp4")
        yield "mxfp8-on-hopper", _set(data, field, "mxfp8")
    if (precision or "").startswith("fp8") or measured:
        on_a100 = _set(_set(data, "gpu.type", "A100"), field, "fp8" if measured else precision)
        yield "fp8-on-a100", on_a100
    if measured:
        yield "layout-product", _set(data, "layout.dp", data["layout"]["dp"] + 1)
        if data["layout"].get("fsdp") is not None and data["layout"]["dp"] % 3:
            yield "fsdp-does-not-divide-dp", _set(data, "layout.fsdp", 3)
    elif data.get("published") is not None:
        layout, gpus = data["published"]["layout"], data["gpu"]["count"]
        if data["published"]["engine"] == "torchtitan":
            yield "fsdp-product", _set(data, "published.layout.fsdp", (layout["fsdp"] or 1) * 2)
        elif gpus % (3 * layout["pp"] * layout["cp"]):
            yield "tp-does-not-divide", _set(data, "published.layout.tp", 3)


def entry_cases(scratch: _Scratch) -> list[Case]:
    """Every bundled recipe and record entry, each made impossible in every way that applies, validated one file at
    a time in one catalog (the bundled models and hardware); a few whole catalogs audited."""
    root = scratch.folder()
    cases = []
    audited = 0
    for path in recipe_files([REPO / "recipes"]):
        data, limit, precision, measured = _limit(path)
        relative = path.relative_to(REPO).with_suffix("")
        for name, changed in _entry_mutations(data, limit, precision, measured):
            target = root / f"{relative}--{name}.yaml"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(yaml.safe_dump(changed, sort_keys=False, width=1000), encoding="utf-8")
            cases.append(Case(f"validate/impossible/{relative}/{name}", "validate",
                              ["validate", str(target), "--catalog", str(root)], str(root), expect=FAILED,
                              keep=(str(target),)))
            if name == "just-over-the-peak" and audited < 6 and (measured or audited < 3):
                audited += 1
                alone = scratch.folder()
                (alone / target.relative_to(root)).parent.mkdir(parents=True)
                (alone / target.relative_to(root)).write_bytes(target.read_bytes())
                cases.append(Case(f"audit/impossible/{relative}", "audit", ["audit", "--catalog", str(alone)],
                                  str(alone), expect=FAILED, keep=(str(alone / target.relative_to(root)),)))
    return cases


# --- model configs that cannot be counted exactly, names that are not slugs (model add) -----------------------------

BASES = ("llama-3.1-8b", "qwen3-8b", "mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3", "gpt-oss-20b")
COUNT_KEYS = ("num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
              "vocab_size")
NOT_COUNTS: list[object] = [0, -1, 1.5, 4096.0, True, False, "8", [], {}, [8], -(2**63)]
NOT_FLAGS: list[object] = ["yes", 1, 0, "false", [], {}]
MOE_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
            "n_shared_experts", "first_k_dense_replace", "decoder_sparse_step", "mlp_only_layers")
CONFIG_MUTATIONS: dict[str, list[tuple[str, object]]] = {  # base -> (key, value) that it cannot count
    "qwen3-30b-a3b": [("mlp_only_layers", v) for v in (0, False, True, {}, "[]", 1, [48], [-1], [3, 3], [True], [1.0],
                                                        list(range(48)), [2**64])]
    + [("decoder_sparse_step", v) for v in (0, -1, 49, 2**50, 1.5, 2.0, True, "1")]
    + [("num_experts", v) for v in (0, -1, 1.5, 128.0, True, "128", 2**64)]
    + [("num_experts_per_tok", v) for v in (0, -1, 129, 8.0, True)]
    + [("moe_intermediate_size", v) for v in (0, -1, 768.0, True, "768")]
    + [(key, 4) for key in ("num_local_experts", "n_routed_experts", "n_shared_experts", "first_k_dense_replace")],
    "deepseek-v3": [("first_k_dense_replace", v) for v in (61, 62, -1, 1.5, True)]
    + [(key, v) for key in ("n_shared_experts",) for v in (-1, 1.5, True)]
    + [(key, v) for key in ("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
       for v in (0, -1, 1.5, True, "8")]
    + [(key, 4) for key in ("num_experts", "num_local_experts", "decoder_sparse_step")] + [("mlp_only_layers", [1])],
    "gpt-oss-20b": [("sliding_window", v) for v in (1, 0, -1, 127.5, 128.0, True, "128")]
    + [("layer_types", v) for v in (["sliding_attention", "chunked_attention"] * 12, ["full_attention"] * 2
                                    + ["sliding_attention"] * 22, ["full_attention"] + ["sliding_attention"] * 23,
                                    ["full_attention"] * 12 + ["sliding_attention"] * 12, ["sliding_attention"] * 23,
                                    "sliding_attention", [1] * 24, {})]
    + [("num_experts", 8), ("n_routed_experts", 8), ("moe_intermediate_size", 8)],
    "qwen3-8b": [("use_sliding_window", v) for v in (True, "yes", 1)]
    + [(key, 8) for key in MOE_KEYS if key != "mlp_only_layers"] + [("mlp_only_layers", [1])],
    "llama-3.1-8b": [(key, 8) for key in MOE_KEYS if key != "mlp_only_layers"] + [("mlp_only_layers", [1]),
                                                                                   ("intermediate_size", 0)],
    "mixtral-8x7b": [("intermediate_size", v) for v in (0, 14336.0, True)] + [("num_local_experts", v) for v in
                                                                              (0, True, 8.0)]
    + [("num_experts", 8), ("moe_intermediate_size", 8), ("mlp_only_layers", [1])],
}
NAMES = ["x\n", "x\ny", "x\r", "a/b", "../x", "..", ".", ".x", "-x", "_x", "X", "Qwen", "", " ", "a" * 101, "x y",
         "x\0", "é", "x.yaml\n", "\u202ex", "x\\y", "x:y", "~x", "$(id)", "*", "x\t"]


def _config_case(scratch: _Scratch, label: str, data: dict[str, Any], name: str = "fuzz") -> Case:
    folder = scratch.folder()
    config = folder / "config.json"
    config.write_text(json.dumps(data), encoding="utf-8")
    out = folder / "models"
    out.mkdir()
    return Case(f"model add/{label}", "model add",
                ["model", "add", str(config), "--name", name, "--out", str(out / "card.yaml")], str(folder),
                expect=BAD, keep=(str(out), str(config)))


def model_add_cases(scratch: _Scratch) -> list[Case]:
    bases = {name: json.loads((REPO / f"models/configs/{name}.json").read_text(encoding="utf-8")) for name in BASES}
    cases = []
    for base, data in bases.items():
        for key in COUNT_KEYS:
            for i, value in enumerate(NOT_COUNTS):
                cases.append(_config_case(scratch, f"cannot-count/{base}/{key}-{i}", data | {key: value}))
        for key in ("tie_word_embeddings", "attention_bias"):
            for i, value in enumerate(NOT_FLAGS):
                cases.append(_config_case(scratch, f"cannot-count/{base}/{key}-{i}", data | {key: value}))
        for i, (key, value) in enumerate(CONFIG_MUTATIONS.get(base, [])):
            cases.append(_config_case(scratch, f"cannot-count/{base}/{key}-m{i}", data | {key: value}))
    for i, name in enumerate(NAMES):
        cases.append(_config_case(scratch, f"name-{i}", bases["qwen3-8b"], name))
    return cases


# --- hostile importer tables (scripts/import_*.py) ------------------------------------------------------------------

MEGATRON = str(REPO / "scripts/import_megatron_bridge.py")
TORCHTITAN = str(REPO / "scripts/import_torchtitan.py")
HEADER = ("System", "#-GPUs", "Precision", "GBS", "MBS", "Sequence Length", "TP", "PP", "CP", "VP", "EP",
          "Tokens / sec / GPU", "Model TFLOP / sec / GPU")
GOOD = ("DGX-GB300", "8", "MXFP8", "512", "8", "4096", "1", "1", "1", "n/a", "8", "44544", "1029")
# Cell values no count column may hold, no figure column, and no precision or system (a "|" or a newline would
# change the row's shape, a case of its own).
NOT_A_COUNT = [FORTY, HUGE, "8/../x", "../../etc", "0", "-1", "1.5", "1e3", "0x10", "", "８", "\x1b[2J8", "1,0",
               "nan", "inf", "8 8", "$(id)", "8;rm", "256 (512)"]
NOT_A_FIGURE = [FORTY, HUGE, "0", "-1", "1e3", "0x10", "", "８", "nan", "inf", "1.2.3", "$(id)", "1,0", "10000000"]
COUNT_CELLS = {"#-GPUs": NOT_A_COUNT + ["n/a"], "GBS": NOT_A_COUNT[:-1] + ["n/a"], "MBS": NOT_A_COUNT[:-1],
               "Sequence Length": NOT_A_COUNT[:-1], "TP": NOT_A_COUNT[:-1], "PP": NOT_A_COUNT[:-1],
               "CP": NOT_A_COUNT[:-1], "VP": NOT_A_COUNT[:-1], "EP": NOT_A_COUNT[:-1],
               "Tokens / sec / GPU": NOT_A_FIGURE, "Model TFLOP / sec / GPU": NOT_A_FIGURE}
ROWS: dict[str, dict[str, str]] = {  # whole-row changes: precisions the part lacks, unknown spellings and systems
    "nvfp4-on-dgx-h100": {"System": "DGX-H100", "Precision": "NVFP4"},
    "mxfp8-on-dgx-h100": {"System": "DGX-H100", "Precision": "MXFP8"},
    "bf16-and-nvfp4-on-dgx-h100": {"System": "DGX-H100", "Precision": "BF16 (NVFP4)"},
    "unknown-precision": {"Precision": "FP6"}, "lowercase-precision": {"Precision": "mxfp8"},
    "empty-precision": {"Precision": ""}, "path-precision": {"Precision": "../MXFP8"},
    "unknown-system": {"System": "DGX-X9"}, "path-system": {"System": "DGX-GB300/../x"},
    "two-systems": {"System": "DGX-GB300 (DGX-B200)"}, "empty-system": {"System": ""},
    "impossible-tokens": {"Tokens / sec / GPU": "4454400"},
}


def _row(cells: dict[str, str]) -> str:
    return "| " + " | ".join(cells.get(name, good) for name, good in zip(HEADER, GOOD, strict=True)) + " |\n"


def _stored_catalog(scratch: _Scratch, files: dict[str, str], repository: str) -> tuple[Path, tuple[str, ...]]:
    """A catalog holding `files` (path in `repository` -> text) as stored copies named in its manifest, and a
    recipes/ with an earlier import's entry and a stranger's notes, which the case keeps."""
    root = scratch.folder()
    sources = []
    for path, text in files.items():
        stored = root / "data/public-record" / repository / path
        stored.parent.mkdir(parents=True, exist_ok=True)
        stored.write_text(text, encoding="utf-8")
        sources.append(f"- repository: {repository}\n  path: {path}\n  commit: {'a' * 40}\n"
                       f"  sha256: {hashlib.sha256(text.encode()).hexdigest()}\n")
    (root / "data/public-record/manifest.yaml").write_text("sources:\n" + "".join(sources), encoding="utf-8")
    earlier = root / "recipes/qwen3-30b-a3b/gb300/record-mbridge-earlier.yaml"
    earlier.parent.mkdir(parents=True)
    earlier.write_text("# an earlier import's entry\n", encoding="utf-8")
    (root / "recipes/notes.txt").write_text("a stranger's notes\n", encoding="utf-8")
    kept = [root / "recipes", earlier.parent.parent, earlier.parent, earlier, root / "recipes/notes.txt"]
    return root, tuple(map(str, kept))


def _megatron_case(scratch: _Scratch, label: str, row: str) -> Case:
    summary = ("# Performance\n\n## 26.08 NeMo Container\n\n### Pre-Training Performance\n\n#### Model: Qwen3_30B_a3B"
               "\n\n| " + " | ".join(HEADER) + " |\n|" + "---|" * len(HEADER) + "\n" + _row({}) + row)
    root, kept = _stored_catalog(scratch, {"docs/performance-summary.md": summary,
                                           "docs/performance-summary-archive.md": "# Archive\n"},
                                 "NVIDIA-NeMo/Megatron-Bridge")
    return Case(f"import megatron-bridge/{label}", "import megatron-bridge", ["--root", str(root)], str(root),
                expect=BAD, keep=kept, script=MEGATRON)


TORCHTITAN_FILES = ("benchmarks/llama3_h100_202412_torchtitan.md",
                    "benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md", "docs/performance.md")
TORCHTITAN_EDITS: list[tuple[str, Callable[[str], str]]] = [  # label, edit of the December 2024 benchmark file
    *[(f"caption-gpus-{i}", lambda t, v=v: t.replace("Llama 3.1 8B model. 8 GPUs.", f"Llama 3.1 8B model. {v} GPUs.",
                                                      1)) for i, v in enumerate((FORTY, HUGE, "0"))],
    *[(f"tps-{i}", lambda t, v=v: t.replace("| FSDP | 5,762 |", f"| FSDP | {v} |", 1))
      for i, v in enumerate(NOT_A_FIGURE)],
    *[(f"memory-{i}", lambda t, v=v: t.replace("| 5,762 | 82.4 |", f"| 5,762 | {v} |", 1))
      for i, v in enumerate(NOT_A_FIGURE[:-1])],
    *[(f"sequence-{i}", lambda t, v=v: t.replace("| 32768 |", f"| {v} |", 1)) for i, v in enumerate(NOT_A_COUNT)],
    *[(f"fsdp-{i}", lambda t, v=v: t.replace("| FSDP 8, CP 1 |", f"| FSDP {v}, CP 1 |", 1))
      for i, v in enumerate((FORTY, HUGE, "0"))],
    ("local-batch-huge", lambda t: t.replace("Local batch size 2, global", f"Local batch size {FORTY}, global", 1)),
]


def _torchtitan_case(scratch: _Scratch, label: str, edit: Callable[[str], str]) -> Case:
    texts = {path: (REPO / "data/public-record/pytorch/torchtitan" / path).read_text(encoding="utf-8")
             for path in TORCHTITAN_FILES}
    edited = edit(texts[TORCHTITAN_FILES[0]])
    assert edited != texts[TORCHTITAN_FILES[0]], label
    root, kept = _stored_catalog(scratch, texts | {TORCHTITAN_FILES[0]: edited}, "pytorch/torchtitan")
    return Case(f"import torchtitan/{label}", "import torchtitan", ["--root", str(root)], str(root), expect=BAD,
                keep=kept, script=TORCHTITAN)


def importer_cases(scratch: _Scratch) -> list[Case]:
    cases = [_megatron_case(scratch, f"{column}-{i}", _row({column: value}))
             for column, values in COUNT_CELLS.items() for i, value in enumerate(values)]
    cases += [_megatron_case(scratch, label, _row(cells)) for label, cells in ROWS.items()]
    cases += [_torchtitan_case(scratch, label, edit) for label, edit in TORCHTITAN_EDITS]
    return cases


# --- figures beyond the physical bounds (validate), damaged excerpts (importers, audit) -----------------------------

BOUND_STRIDE = 3  # every third record entry: each source, model and part is still met, in a third of the runs


def _bound_mutations(data: dict[str, Any], limit: float, measured: bool) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each physical bound of catalog/plausibility.py broken on its own: every one must fail validation."""
    tables = load_reference_tables()
    spec = tables.variants[data["gpu"]["variant"]]
    capacity_gib = spec.memory_gb * 1e9 / 2**30
    if measured:
        lay, batch = data["layout"], data["workload"]["global_batch"]
        rows = batch // lay["dp"] + 1  # one row more than a data-parallel rank's share of the global batch
        tokens = rows * data["workload"]["row_tokens"] // lay["cp"]
        yield "microbatch-over-global-batch", _set(_set(data, "layout.rows_per_microbatch", rows),
                                                   "layout.max_tokens_per_gpu", tokens)
        huge = 2**40 // data["workload"]["row_tokens"]
        wide = _set(_set(data, "layout.rows_per_microbatch", huge), "layout.max_tokens_per_gpu",
                    huge * data["workload"]["row_tokens"] // lay["cp"])
        yield "microbatch-over-memory", _set(wide, "workload.global_batch", huge * lay["dp"])
        for i, _ in enumerate(data.get("reproductions") or []):
            yield f"reproduction-{i}-over-the-peak", _set(data, f"reproductions.{i}.tokens_per_s_per_gpu",
                                                          round(limit * 1.01 + 1, 1))
        return
    run = data.get("published")
    if run is None:
        return
    for name, value in (("just-over", round(capacity_gib * 1.001 + 0.1, 1)), ("5000", 5000.0), ("1e15", 1e15)):
        yield f"memory-{name}-gib", _set(data, "published.memory_gib", value)
    if run.get("derivation") is not None:
        for value in (100.01, 6231.0, 1e15):
            yield f"mfu-{value:g}-percent", _set(data, "published.derivation.published_mfu_percent", value)
    rows_field = "local_batch" if run["engine"] == "torchtitan" else "micro_batch"
    if run.get(rows_field) is not None and run.get("global_batch") is not None:
        yield "microbatch-over-global-batch", _set(data, f"published.{rows_field}", run["global_batch"] + 1)


def bound_cases(scratch: _Scratch) -> list[Case]:
    """Every bundled recipe and every third record entry with each physical bound broken, validated one file at a
    time in one catalog (the bundled models and hardware)."""
    root = scratch.folder()
    cases = []
    for i, path in enumerate(recipe_files([REPO / "recipes"])):
        data, limit, _, measured = _limit(path)
        if not measured and i % BOUND_STRIDE:
            continue
        relative = path.relative_to(REPO).with_suffix("")
        for name, changed in _bound_mutations(data, limit, measured):
            target = root / f"{relative}--{name}.yaml"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(yaml.safe_dump(changed, sort_keys=False, width=1000), encoding="utf-8")
            cases.append(Case(f"validate/bounds/{relative}/{name}", "validate",
                              ["validate", str(target), "--catalog", str(root)], str(root), expect=FAILED,
                              keep=(str(target),)))
    return cases


DGXC = str(REPO / "scripts/import_dgxc_benchmarking.py")
MLPERF = str(REPO / "scripts/import_mlperf_training.py")
DGXC_EXCERPT = "data/record-sources/dgxc-benchmarking/v24.11.1/llama3.1/README_70b.md.txt"
MLPERF_SUBMITTER = "data/record-sources/mlperf-training/v5.1/Dell"
NOT_NUMBERS = [HUGE, FORTY, "0", "-1", "1e3", "1.5.5", "", "nan", "inf", "０", "9" * 17, "9" * 8]
DGXC_CELLS = {  # a number of the excerpt as written, the text around it ({} where it stands) -> its field
    ("4", "(TP={},"): "title-tp", ("4", "PP={},"): "title-pp", ("64", "Throughput on {}x"): "column-gpus",
    ("128", "(GBS={})"): "column-gbs", ("14.72", "| {}  |"): "step-time", ("71235", "| {}  |"): "tokens",
    ("54.10", "| {}% |"): "mfu"}
MLLOG_NUMBERS = ["9" * 5000, "9" * 4000, str(2**53 + 1), "-" + str(2**53 + 1), "1e999", "-1e999", "NaN", "Infinity",
                 "-Infinity", "1e308", "0.5", '"8"', "[]", "{}", "null", "true"]
MLLOG_FIELDS = (("block_start", '"time_ms": '), ("global_batch_size", '"value": '),  # the event, its field
                ("eval_accuracy", '"samples_count": '))
MLLOG_DEPTHS = (17, 100, 10_000, 100_000)


def _excerpt_catalog(scratch: _Scratch, source: str, folder: str) -> tuple[Path, tuple[str, ...]]:
    """A catalog with the bundled models, hardware, one source's excerpts under `folder` and the entries they give,
    which a case keeps (a damaged excerpt removes none of them)."""
    root = scratch.folder()
    for name in ("models", "hardware"):
        (root / name).symlink_to(REPO / name)
    shutil.copytree(REPO / folder, root / folder)
    kept = []
    for path in (REPO / "recipes").rglob(f"record-{source}-*.yaml"):
        if f"excerpt: {folder}/" in path.read_text(encoding="utf-8"):
            target = root / path.relative_to(REPO)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
            kept.append(str(target))
    assert kept, folder
    return root, tuple(kept)


def _dgxc_case(scratch: _Scratch, label: str, edit: Callable[[str], str]) -> Case:
    root, kept = _excerpt_catalog(scratch, "dgxc", str(Path(DGXC_EXCERPT).parent))
    excerpt = root / DGXC_EXCERPT
    excerpt.write_text(edit(excerpt.read_text(encoding="utf-8")), encoding="utf-8")
    return Case(f"import dgxc-benchmarking/{label}", "import dgxc-benchmarking", ["--root", str(root)], str(root),
                expect=BAD, keep=kept, script=DGXC)


def _mlperf_cases(scratch: _Scratch, label: str, edit: Callable[[str], str]) -> list[Case]:
    """The importer (exit 2) and `audit` of one entry (exit 1: a finding) on the submitter's excerpts with a result
    file edited: the second run's, which no entry pins, so `audit` reads it through the importer's parser."""
    root, kept = _excerpt_catalog(scratch, "mlperf", MLPERF_SUBMITTER)
    result = sorted((root / MLPERF_SUBMITTER).rglob("result_1.txt.txt"))[0]
    result.write_text(edit(result.read_text(encoding="utf-8")), encoding="utf-8")
    return [Case(f"import mlperf-training/{label}", "import mlperf-training", ["--root", str(root)], str(root),
                 expect=BAD, keep=kept, script=MLPERF),
            Case(f"audit/excerpt/{label}", "audit", ["audit", kept[0], "--catalog", str(root)], str(root),
                 expect=FAILED, keep=kept)]


def _first_mllog(text: str, event: str, key: str, value: str) -> str:
    """The first MLLOG line of `event` with the value of its `key` replaced by `value`."""
    at = text.index(key, text.rindex("\n", 0, text.index(f'"key": "{event}"'))) + len(key)
    end = min(i for i in (text.find(",", at), text.find("}", at)) if i >= 0)
    return text[:at] + value + text[end:]


def _truncated(fraction: float) -> Callable[[str], str]:
    return lambda text: text[:int(len(text) * fraction)]


def excerpt_cases(scratch: _Scratch) -> list[Case]:
    """Excerpts truncated, mangled, nested deep and holding numbers past every bound, before the importers (exit 2,
    the catalog's entries kept) and `audit` (a finding)."""
    edits: list[tuple[str, Callable[[str], str]]] = [
        *[(f"truncated-{f:g}", _truncated(f)) for f in (0.0, 0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.9, 0.97)],
        ("header-only", lambda t: "".join(t.splitlines(keepends=True)[:4])),
        ("lines-reordered", lambda t: "".join(sorted(t.splitlines(keepends=True)[4:], reverse=True))),
        ("line-repeated", lambda t: t + t.splitlines(keepends=True)[-1]),
        ("line-number-5000-digits", lambda t: t.replace("\n5", f"\n{HUGE}", 1)),
        ("nul-bytes", lambda t: t.replace("|", "|\0", 3)),
        *[(f"{field}-{i}", lambda t, number=number, around=around, v=v: t.replace(around.format(number),
                                                                                  around.format(v), 1))
          for (number, around), field in DGXC_CELLS.items() for i, v in enumerate(NOT_NUMBERS)],
    ]
    cases = [_dgxc_case(scratch, label, edit) for label, edit in edits]
    for event, key in MLLOG_FIELDS:
        for i, value in enumerate(MLLOG_NUMBERS):
            cases += _mlperf_cases(scratch, f"{event}-{key.split(chr(34))[1]}-{i}",
                                   lambda t, event=event, key=key, value=value: _first_mllog(t, event, key, value))
    for depth in MLLOG_DEPTHS:
        nested = '{"a": ' * depth + "1" + "}" * depth
        cases += _mlperf_cases(scratch, f"nested-{depth}",
                               lambda t, n=nested: _first_mllog(t, "eval_accuracy", '"metadata": ', n))
    return cases


def impossible_cases(scratch: _Scratch) -> list[Case]:
    return (entry_cases(scratch) + model_add_cases(scratch) + importer_cases(scratch) + bound_cases(scratch)
            + excerpt_cases(scratch))
