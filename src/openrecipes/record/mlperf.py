"""MLPerf Training results (mlcommons/training_results_<version>): each submission's MLLOG result files, system
description and config script parsed strictly from their stored excerpts, and the published entry they become
(scripts/import_mlperf_training.py writes them; `openrecipes audit` re-derives each from the same excerpts).

Tokens/s per GPU of one run: the training blocks of its MLLOG (block_start to block_stop, the samples counted
between them), the first block left out (it holds the warm-up and compilation), as samples over seconds x the
logged max_sequence_length / GPUs. A submission's entry is the median over its runs, each run's figure kept. The
GPUs are the system description's nodes x accelerators per node; the layout (TP, PP, CP, VP, micro batch) and the
precision come from the one config script of the submitter's implementations that runs that many nodes and GPUs at
the logged global batch. Where none or several differing scripts fit, the submission is reported, not imported.
"""

from __future__ import annotations

import functools
import hashlib
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openrecipes.catalog.model import MAX_DEGREE
from openrecipes.errors import UserError
from openrecipes.jsonout import read_json
from openrecipes.record.importer import Skipped, entry_name
from openrecipes.record.sources import (
    EXCERPTS,
    Excerpt,
    ParsedLayout,
    differences,
    parse_count,
    pin_problem,
    read_excerpt,
)

SOURCE = "mlperf-training"
TAG = "mlperf"
BENCHMARKS = {"llama31_8b": ("llama-3.1-8b", "Llama 3.1 8B pre-training"),
              "llama31_405b": ("llama-3.1-405b", "Llama 3.1 405B pre-training")}
# accelerator_model_name as the system descriptions write it -> (GPU type in hardware/gpus.yaml, hardware variant).
ACCELERATORS = {
    "NVIDIA H100-SXM5-80GB": ("H100", "H100-SXM5-80GB"),
    "NVIDIA H200-SXM5-141GB": ("H200", "H200-SXM-141GB"),
    # 275,040 MiB (288 GB) of HBM3e, which the system names count as 270 GB: the 288 GB part.
    "NVIDIA Blackwell Ultra GPU (B300-SXM-270GB)": ("B300", "B300-SXM-288GB"),
    "NVIDIA Blackwell GPU (B200-SXM-180GB)": ("B200", "B200-SXM-180GB"),
    "NVIDIA Blackwell GPU (GB200)": ("GB200", "GB200-NVL72-186GB"),
    "NVIDIA Blackwell Ultra GPU (GB300)": ("GB300", "GB300-NVL72-279GB"),
    "AMD Instinct MI355X": ("MI355X", "MI355X-OAM-288GB"),
}
MIN_BLOCKS = 2  # the first block is warm-up; one more is needed for a figure
_MLLOG = re.compile(r"^(?:[0-9]+: )?:::MLLOG (\{.*\})$")
_ASSIGN = re.compile(r"^\s*(?:export\s+)?([A-Z][A-Z0-9_]*)=(.*?)\s*(?:#.*)?$")
_SOURCE = re.compile(r"^\s*(?:source|\.)\s+\$\(dirname \$\{BASH_SOURCE\[0\]\}\)/([A-Za-z0-9_.-]+\.sh)\s*$")
_SYSTEM = re.compile(r'^\s*"([a-z_]+)"\s*:\s*"(.*)",?\s*$')


@dataclass(frozen=True)
class Run:
    """One result file: what the importer read from its MLLOG lines."""

    excerpt: Excerpt
    benchmark: str
    division: str
    platform: str
    global_batch: int
    seq_length: int
    samples: int  # counted over the blocks after the first
    seconds: float
    lines: tuple[int, ...]

    def tokens_per_s_per_gpu(self, gpus: int) -> float:
        return self.samples * self.seq_length / self.seconds / gpus


def _events(excerpt: Excerpt) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for number, text in excerpt.lines.items():
        found = _MLLOG.match(text.strip())
        event = read_json(found.group(1), excerpt.where(number)) if found else None
        if not isinstance(event, dict) or not {"key", "value", "time_ms", "metadata"} <= event.keys() or not (
                type(event["time_ms"]) is int and isinstance(event["metadata"], dict)):  # true is an int to Python
            raise UserError(f"{excerpt.where(number)}: not an MLLOG line (':::MLLOG {{\"key\", \"value\", "
                            "\"time_ms\", \"metadata\"}}'); fix or re-store the result file")
        out.append((number, event))
    return out


def _whole(value: Any, where: str, key: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise UserError(f"{where}: {key} {value!r} is not a whole positive number; fix the result file")
    return value


@dataclass
class _Block:
    start_line: int
    start_ms: int
    end_line: int | None = None  # its block_stop, or the eval_start after it
    end_ms: int | None = None
    samples_line: int | None = None  # the eval_accuracy after it: the samples counted since the run began
    samples: int | None = None


def parse_run(excerpt: Excerpt) -> Run | str:
    """The logged benchmark, submitter, batch, sequence length and training blocks of one result file.

    A block runs from its block_start to its block_stop (or, in logs that write none, the eval_start after it);
    the samples it trained are the count the eval_accuracy after it logs less the one after the block before (the
    submitters' block_start counts mean different things: the samples so far, or the block's own). A log whose
    blocks end at neither marker cannot tell training from evaluation time: the reason is returned instead.
    """
    single: dict[str, tuple[int, Any]] = {}
    blocks: list[_Block] = []
    for number, event in _events(excerpt):
        key, where = event["key"], excerpt.where(number)
        block = blocks[-1] if blocks else None
        if key == "block_start":
            if block is not None and block.end_ms is None:
                return (f"{where}: a block starts before the one before it ends (no block_stop or eval_start), so "
                        "its training time cannot be told from evaluation time")
            blocks.append(_Block(number, event["time_ms"]))
        elif key in ("block_stop", "eval_start"):
            if block is None:
                raise UserError(f"{where}: {key} before any block_start; fix the file")
            if block.end_ms is None:
                if event["time_ms"] <= block.start_ms:
                    raise UserError(f"{where}: a block that ends before it starts; fix the file")
                block.end_line, block.end_ms = number, event["time_ms"]
        elif key == "eval_accuracy":
            if block is None or block.samples is not None:
                raise UserError(f"{where}: eval_accuracy with no training block before it; fix the file")
            count = _whole(event["metadata"].get("samples_count"), where, "eval_accuracy samples_count")
            if blocks[:-1] and (blocks[-2].samples or 0) >= count:
                raise UserError(f"{where}: samples_count {count} does not grow from the evaluation before")
            block.samples_line, block.samples = number, count
        elif key in single:
            raise UserError(f"{where}: a second {key} line (the first on line {single[key][0]}); fix the file")
        else:
            single[key] = (number, event["value"])
    needed = ("submission_benchmark", "submission_org", "submission_division", "submission_platform",
              "global_batch_size", "max_sequence_length")
    for key in needed:
        if key not in single:
            raise UserError(f"{excerpt.shown}: no {key} line; the result file is incomplete")
    used = [(before, block) for before, block in zip(blocks, blocks[1:], strict=False)
            if before.samples is not None and block.samples is not None and block.end_ms is not None]
    if len(used) < MIN_BLOCKS - 1:
        raise UserError(f"{excerpt.shown}: {len(blocks)} training block(s) with their end and samples; a figure "
                        f"needs {MIN_BLOCKS} (the first is warm-up)")
    division = str(single["submission_division"][1])
    if division not in ("closed", "open"):
        raise UserError(f"{excerpt.where(single['submission_division'][0])}: unknown division '{division}'")
    lines = {*(single[k][0] for k in needed)}
    for before, block in used:
        lines |= {before.samples_line or 0, block.start_line, block.end_line or 0, block.samples_line or 0}
    return Run(excerpt, str(single["submission_benchmark"][1]), division, str(single["submission_platform"][1]),
               _whole(single["global_batch_size"][1], excerpt.where(single["global_batch_size"][0]), "GBS"),
               _whole(single["max_sequence_length"][1], excerpt.where(single["max_sequence_length"][0]), "seq"),
               sum((block.samples or 0) - (before.samples or 0) for before, block in used),
               sum((block.end_ms or 0) - block.start_ms for _, block in used) / 1000, tuple(sorted(lines)))


@dataclass(frozen=True)
class System:
    excerpt: Excerpt
    accelerator: str
    nodes: int
    per_node: int
    fields: dict[str, str]

    @property
    def gpus(self) -> int:
        return self.nodes * self.per_node


def parse_system(excerpt: Excerpt) -> System:
    fields: dict[str, str] = {}
    for number, text in excerpt.lines.items():
        found = _SYSTEM.match(text)
        if not found:
            raise UserError(f"{excerpt.where(number)}: not a '\"key\": \"value\",' line of a system description")
        fields[found.group(1)] = found.group(2)
    for key in ("accelerator_model_name", "number_of_nodes", "accelerators_per_node"):
        if key not in fields:
            raise UserError(f"{excerpt.shown}: no {key}; the system description is incomplete")
    nodes, per_node = (parse_count(fields[key], excerpt.shown, key) for key in ("number_of_nodes",
                                                                              "accelerators_per_node"))
    return System(excerpt, fields["accelerator_model_name"], nodes, per_node, fields)


@dataclass(frozen=True)
class Config:
    excerpt: Excerpt
    variables: dict[str, str]  # the script's and its sourced files' literal assignments (the script's win)
    missing: tuple[str, ...]  # sourced files the repository does not hold: the script is not read whole

    def degree(self, *names: str) -> int | None:
        """The first of `names` the script sets to a count from 1 to 2^20 (a degree or a batch); None where it sets
        none (a count beyond is not a layout this importer can take)."""
        for name in names:
            value = self.variables.get(name, "").strip("\"'")
            if re.fullmatch(r"[1-9][0-9]{0,6}", value) and int(value) <= MAX_DEGREE:
                return int(value)
        return None

    def flag(self, name: str) -> bool:
        return self.variables.get(name, "").strip("\"'").lower() in ("true", "1")


def read_config(root: Path, relative: str, seen: tuple[str, ...] = ()) -> Config:
    """A config script with the files it sources from its own folder (one the repository lacks is named in
    `missing`, and the script then fits no submission)."""
    excerpt = read_excerpt(root, relative)
    variables: dict[str, str] = {}
    missing: list[str] = []
    for number, text in excerpt.lines.items():
        if (sourced := _SOURCE.match(text)):
            other = str(Path(relative).parent / f"{sourced.group(1)}.txt")
            if other in seen:
                raise UserError(f"{excerpt.where(number)}: sources {sourced.group(1)} in a loop")
            if not (root / other).is_file():
                missing.append(sourced.group(1))
                continue
            inner = read_config(root, other, (*seen, relative))
            variables.update(inner.variables)
            missing += inner.missing
        elif (found := _ASSIGN.match(text)) and "$" not in found.group(2):
            variables[found.group(1)] = found.group(2)
        elif not found and not re.match(r"^\s*(?:source|\.)\s", text):
            raise UserError(f"{excerpt.where(number)}: neither an assignment nor a sourced file; re-store the excerpt")
    return Config(excerpt, variables, tuple(missing))


def layout_of(config: Config, system: System, global_batch: int) -> ParsedLayout | None:
    """The config's layout when it runs the system's nodes (and GPUs per node, where it sets them) at
    `global_batch`; None when it runs another size or does not state its layout and precision."""
    if config.missing:
        return None
    gpus = system.gpus
    nodes, per_node = config.degree("DGXNNODES", "NNODES"), config.degree("DGXNGPU", "GPUS_PER_NODE")
    per_node = per_node or system.per_node  # a script that leaves it to its environment runs the system's count
    tp = config.degree("TENSOR_MODEL_PARALLEL", "TP") or 0
    pp = config.degree("PIPELINE_MODEL_PARALLEL", "PP") or 0
    cp = config.degree("CONTEXT_PARALLEL", "CP") or 0
    if nodes != system.nodes or per_node != system.per_node or not (tp and pp and cp) or gpus % (tp * pp * cp):
        return None
    gbs = config.degree("GBS") or (config.degree("MINIBS") or 0) * (gpus // (tp * pp * cp))
    if gbs != global_batch:
        return None
    # FP8_PARAMS, AMD's scripts: FP8 weights, which Transformer Engine trains in FP8 only.
    flags = (("FP4", "nvfp4", "FP4=True"), ("FP8", "fp8", "FP8=True"), ("FP8_PARAMS", "fp8", "FP8_PARAMS=1"))
    if (found := next(((precision, shown) for flag, precision, shown in flags if config.flag(flag)), None)) is None:
        return None
    precision, shown = found
    vp = config.degree("INTERLEAVED_PIPELINE", "VP")
    return ParsedLayout(tp, pp, cp, vp if vp and vp > 1 else None, config.degree("MICRO_BATCH_SIZE", "MBS") or 1,
                        precision=precision, precision_as_published=shown)


@dataclass(frozen=True)
class Submission:
    version: str
    folder: str  # <version>/<org>/results/<system>/<benchmark>

    @property
    def submitter(self) -> str:
        """The submitting organisation as the repository's folder names it (some logs keep a placeholder)."""
        return self.folder.split("/")[1]
    runs: tuple[Run, ...]
    system: System
    configs: tuple[Config, ...]  # every script that runs this size at this batch, all with the one layout
    layout: ParsedLayout


def submissions(root: Path, skipped: list[Skipped]) -> list[Submission]:
    """Every importable submission of the stored excerpts; the others are reported in `skipped`."""
    from openrecipes.record.sources import excerpt_files

    files = excerpt_files(root, SOURCE)
    folders: dict[str, list[str]] = {}
    for relative in files:
        parts = relative.removeprefix(f"{EXCERPTS}/{SOURCE}/").split("/")
        if len(parts) == 6 and parts[2] == "results" and re.fullmatch(r"result_\d+\.txt\.txt", parts[-1]):
            folders.setdefault("/".join(parts[:-1]), []).append(relative)
    out = []
    seen: dict[tuple[str, ...], str] = {}  # the result files' sha256s -> the folder that holds them first
    for folder, results in sorted(folders.items()):
        version, org, _, system_name, benchmark = folder.split("/")
        where = f"{EXCERPTS}/{SOURCE}/{folder}"
        if benchmark not in BENCHMARKS:
            continue
        parsed = [parse_run(read_excerpt(root, r)) for r in sorted(results)]
        if (reason := next((p for p in parsed if isinstance(p, str)), None)) is not None:
            skipped.append(Skipped(BENCHMARKS[benchmark][0], where, reason))
            continue
        runs = tuple(p for p in parsed if isinstance(p, Run))
        digests = tuple(sorted(run.excerpt.file_sha256 for run in runs))
        if digests in seen:
            skipped.append(Skipped(BENCHMARKS[benchmark][0], where, f"the same result files as {seen[digests]} (a "
                                   "later round republished them)"))
            continue
        seen[digests] = where
        system_file = f"{EXCERPTS}/{SOURCE}/{version}/{org}/systems/{system_name}.json.txt"
        if system_file not in files:
            raise UserError(f"{where}: no stored system description {system_file}; store it")
        system = parse_system(read_excerpt(root, system_file))
        if system.accelerator not in ACCELERATORS:
            skipped.append(Skipped(BENCHMARKS[benchmark][0], where, f"accelerator '{system.accelerator}' is not a GPU "
                                   "type of hardware/gpus.yaml"))
            continue
        batches = {run.global_batch for run in runs} | {run.benchmark for run in runs} - {benchmark}
        if len(batches) != 1:
            raise UserError(f"{where}: the runs log different global batches or benchmarks "
                            f"({sorted(map(str, batches))})")
        prefix = f"{EXCERPTS}/{SOURCE}/{version}/{org}/benchmarks/{benchmark}/implementations/"
        fits: dict[ParsedLayout, list[Config]] = {}
        for relative in files:
            name = Path(relative).name
            if relative.startswith(prefix) and name.startswith("config_") and "common" not in name:
                config = read_config(root, relative)
                if (layout := layout_of(config, system, runs[0].global_batch)) is not None:
                    fits.setdefault(layout, []).append(config)
        if len(fits) != 1:
            names = sorted(Path(c.excerpt.path).name for configs in fits.values() for c in configs)
            skipped.append(Skipped(BENCHMARKS[benchmark][0], where, (
                f"{len(fits)} different layouts among the config scripts that run {system.gpus} GPUs at global batch "
                f"{runs[0].global_batch} ({', '.join(names)}); the logs do not say which ran") if fits else (
                f"no config script states TP, PP, CP, FP8 or FP4 for {system.gpus} GPUs at global batch "
                f"{runs[0].global_batch}")))
            continue
        [(layout, configs)] = fits.items()
        # The system's own implementation folder first, when several scripts give the same layout.
        configs.sort(key=lambda c: (not c.excerpt.path.split("/")[4].startswith(system_name), c.excerpt.path))
        out.append(Submission(version, folder, runs, system, tuple(configs), layout))
    return out


def entry(sub: Submission) -> tuple[Path, dict[str, Any]]:
    """The published entry of one submission: the median of its runs."""
    first = sub.runs[0]
    model, task_name = BENCHMARKS[first.benchmark]
    gpu_type, variant = ACCELERATORS[sub.system.accelerator]
    gpus = sub.system.gpus
    per_run = [round(run.tokens_per_s_per_gpu(gpus), 2) for run in sub.runs]
    median = round(statistics.median(per_run), 2)
    lay = sub.layout
    assert lay.precision is not None  # layout_of gives every layout its precision
    dp = gpus // (lay.tp * lay.pp * lay.cp)
    submitter = re.sub(r"[^a-z0-9]+", "", sub.submitter.lower())
    # Six hex digits of the system's folder name: two systems of one submitter at the same size and layout get
    # different files, and the name still fits an 80-column terminal (the entry names the system in full).
    system_tag = hashlib.sha256(sub.folder.split("/")[3].encode()).hexdigest()[:6]
    shown = sub.folder.split("/", 1)[1]  # the folder inside the repository
    scripts = [Path(c.excerpt.path).name for c in sub.configs]
    name = entry_name(TAG, sub.version.replace(".", ""), "pretrain", lay.precision, gpus,
                      {"tp": lay.tp, "pp": lay.pp, "cp": lay.cp, "vp": lay.vp},
                      [submitter[:10], system_tag])
    data: dict[str, Any] = {
        "schema_version": 1, "kind": "published_summary", "model": model,
        "gpu": {"type": gpu_type, "variant": variant, "count": gpus},
        "result": {"tokens_per_s_per_gpu": median, "usd_per_million_tokens": None},
        "source": f"mlcommons/training_results_{sub.version} {shown} (commit {first.excerpt.commit}): "
                  f"{len(sub.runs)} result files, MLPerf Training {sub.version} {first.division} division",
        "note": (f"MLPerf Training {sub.version} {task_name}, submitted by {sub.submitter} ({first.division} division, "
                 "reviewed by the other submitters before publication). Tokens/s per GPU is derived from each run's "
                 "MLLOG training blocks (the first, warm-up, left out): samples x sequence length / seconds / GPUs; "
                 f"the entry is the median of the {len(sub.runs)} runs, each kept. Layout and precision from "
                 f"{scripts[0]}, the config script of the submission that runs {gpus} GPUs at the logged global "
                 "batch" + (f" ({len(scripts) - 1} other script(s) give the same layout)." if scripts[1:] else ".")),
        "published": {
            "engine": "nemo", "engine_version": sub.system.fields.get("framework", "as in the submission"),
            "task": "pretrain", "model_as_published": first.benchmark, "system_as_published": first.platform,
            "precision": lay.precision, "precision_as_published": lay.precision_as_published,
            "seq_length": first.seq_length, "global_batch": first.global_batch, "micro_batch": lay.mbs,
            "local_batch": None, "gradient_accumulation": None,
            "layout": lay.degrees(),
            "recompute": None, "techniques": [], "model_tflops_per_gpu": None,
            "reference": {"repository": first.excerpt.repository, "path": first.excerpt.path,
                          "commit": first.excerpt.commit, "table": f"MLLOG of {shown} ({dp}-way data parallel)",
                          "row": first.excerpt.lines[first.lines[-1]].strip(), "line": first.lines[-1]},
            "derivation": {
                "excerpt": first.excerpt.shown, "excerpt_sha256": first.excerpt.sha256, "method": "mllog-blocks",
                "formula": (f"per run: samples counted in the training blocks after the first x {first.seq_length} "
                            f"/ their seconds / {gpus} GPUs ({sub.system.nodes} nodes x {sub.system.per_node}); the "
                            "median of the runs, rounded to 0.01"),
                "lines": list(first.lines), "run_tokens_per_s_per_gpu": per_run,
                "run_files": [run.excerpt.shown for run in sub.runs],
                "sweep": f"mlperf-{sub.version}-{submitter}-{model}-"
                         f"{lay.precision}-{gpu_type}-tp{lay.tp}pp{lay.pp}cp{lay.cp}vp{lay.vp or 1}",
                "submitter": sub.submitter, "division": first.division,
                "audited": first.division == "closed",
            },
        },
    }
    return Path("recipes") / model / gpu_type.lower() / f"{name}.yaml", data


def rederive(data: dict[str, Any], stem: str, root: Path) -> list[str]:
    """What differs between a stored MLPerf entry and the entry its excerpts give today (empty: it holds)."""
    if (problem := pin_problem(root, data["published"]["derivation"])) is not None:
        return [problem]
    # The excerpts as they are on disk now (name, size, mtime): a changed file re-derives everything.
    excerpts = sorted((root / EXCERPTS / SOURCE).rglob("*.txt"))
    derived = _entries(root, tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in excerpts)).get(stem)
    return ["no stored submission gives this entry"] if derived is None else differences(data, derived)


@functools.lru_cache(maxsize=2)
def _entries(root: Path, stamp: tuple[tuple[str, int, int], ...]) -> dict[str, dict[str, Any]]:
    """Every entry the stored excerpts give, by file stem (audit re-derives each of them from this once)."""
    return {path.stem: data for path, data in map(entry, submissions(root, []))}
