"""Published entries: the rules each one is validated against, and the figures derived from it.

A published figure is copied, never computed; what we compute from it (the data-parallel size, our FLOPs per token,
the model TFLOP/s and MFU it implies) lives here as `PublishedFigures`, through figures.py, so every reader (the
validator, the site) derives the same numbers the same way.

Layout rules, one per engine:
- Megatron-Bridge: DP = #GPUs / (TP x PP x CP) is a whole number; experts are placed inside TP x CP x DP
  (= #GPUs / PP), so EP x ETP divides it (ETP is 1 where the source does not publish it, as Megatron-Bridge's MoE
  performance recipes set it: perf_recipes/qwen/*/qwen3_moe.py, expert_tensor_parallel_size = 1); VP > 1 needs
  PP > 1; the FSDP column is 0 (DDP) or #GPUs / (TP x PP), its sharding group; GBS is a multiple of MBS x DP. A
  published GA column that is not GBS / (MBS x DP) is a finding: the table contradicts itself.
- torchtitan: FSDP x TP x PP x CP = #GPUs (no replicate dimension in the published runs), and a published global
  batch is the local batch x FSDP.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from openrecipes import figures, names
from openrecipes.catalog.hardware import ReferenceTables, entry_peak, variant_issue
from openrecipes.catalog.model import PublishedRun, PublishedSummary
from openrecipes.catalog.plausibility import (
    ATTENTION_FIELDS,
    Claim,
    Microbatch,
    flops_per_token,
    implausible,
    memory_beyond_part,
    mfu_beyond_peak,
    microbatch_beyond,
)
from openrecipes.engines.registry import engine_of_framework
from openrecipes.thresholds import PUBLISHED_FLOPS
from openrecipes.verdict import Finding


@dataclass(frozen=True)
class PublishedFigures:
    """What one published entry implies, derived by figures.py from the entry, its model card and its GPU."""

    data_parallel: float  # #GPUs over the model-parallel degrees (see the engine rules above)
    flops_per_token: float  # 6 (LoRA: 4) x matmul parameters + causal attention (figures.training_flops_per_token)
    implied_tflops_per_gpu: float  # tokens/s per GPU x flops_per_token
    published_tflops_per_gpu: float | None
    mfu_bf16: float  # implied FLOP/s over the dense BF16 peak: comparable across precisions
    mfu_precision: float | None  # implied FLOP/s over the dense peak of the precision used, where published

    @property
    def tflops_ratio(self) -> float | None:
        """Published over implied model TFLOP/s; 1.0 is perfect agreement."""
        published = self.published_tflops_per_gpu
        return None if published is None else published / self.implied_tflops_per_gpu


# Every imported entry is recipes/<model>/<gpu>/record-<source>-....yaml (openrecipes.record.importer writes them;
# the catalog tells the public record from the seeds' summaries by it)
ENTRY_PREFIX = "record-"


def data_parallel(run: PublishedRun, gpus: int) -> float:
    layout = run.layout
    if engine_of_framework(run.engine).layout.fsdp:  # the data-parallel ranks an FSDP engine names are its shards
        return float(layout.fsdp or 1)
    return figures.data_parallel_size(gpus, layout.tp, layout.pp, layout.cp)


def published_label(run: PublishedRun, gpus: int | None) -> str:
    """names.layout_label of the published degrees, DP derived on `gpus` (None: a sweep's layout, DP left out)."""
    lay, dp = run.layout, None if gpus is None else data_parallel(run, gpus)
    return names.layout_label(lay.tp, lay.pp, dp, lay.vp, lay.cp, lay.ep, lay.etp, lay.fsdp)


def published_figures(entry: PublishedSummary, tables: ReferenceTables) -> PublishedFigures | None:
    """The derived figures of an entry with a structured block whose model and GPU are known; else None."""
    run = entry.published
    card = tables.models.get(entry.model)
    bf16, peak = entry_peak(entry.gpu, "bf16", tables), entry_peak(entry.gpu, run.precision if run else None, tables)
    if run is None or card is None or bf16 is None or bf16.flops is None or peak is None:
        return None
    if not card.architecture.keys() >= ATTENTION_FIELDS:
        return None  # a card without the attention shape gives no FLOPs count (and no TFLOP/s check)
    tps = entry.result.tokens_per_s_per_gpu
    per_token = flops_per_token(card, run.seq_length, frozen_weights=run.task == "lora")
    return PublishedFigures(
        data_parallel=data_parallel(run, entry.gpu.count),
        flops_per_token=per_token,
        implied_tflops_per_gpu=figures.tflops_per_gpu(per_token, tps),
        published_tflops_per_gpu=run.model_tflops_per_gpu,
        mfu_bf16=figures.utilisation(per_token, tps, bf16.flops),
        mfu_precision=figures.utilisation(per_token, tps, peak.flops) if peak.flops else None,
    )


def _megatron_layout(run: PublishedRun, gpus: int) -> Iterator[Finding]:
    layout = run.layout
    model_parallel = layout.tp * layout.pp * layout.cp
    if gpus % model_parallel:
        yield Finding.at("published.layout", f"TP {layout.tp} x PP {layout.pp} x CP {layout.cp} = {model_parallel} "
                          f"does not divide the {gpus} GPUs (Megatron: DP = #GPUs / (TP x PP x CP) must be whole)")
        return
    dp = gpus // model_parallel
    expert_group = (layout.ep or 1) * (layout.etp or 1)
    if (gpus // layout.pp) % expert_group:
        yield Finding.at("published.layout.ep", f"EP {layout.ep} x ETP {layout.etp or 1} = {expert_group} does not "
                          f"divide TP x CP x DP = {gpus // layout.pp} (Megatron places experts inside #GPUs / PP)")
    if layout.fsdp and layout.fsdp != gpus // (layout.tp * layout.pp):
        yield Finding.at("published.layout.fsdp", f"FSDP {layout.fsdp} is neither 0 (DDP) nor #GPUs / (TP x PP) = "
                          f"{gpus // (layout.tp * layout.pp)}")
    if run.global_batch is not None and run.micro_batch is not None:
        per_step = run.micro_batch * dp
        if run.global_batch % per_step:
            yield Finding.at("published.global_batch", f"GBS {run.global_batch} is not a multiple of MBS x DP = "
                              f"{run.micro_batch} x {dp} = {per_step}")


def _gradient_accumulation(run: PublishedRun, gpus: int) -> Iterator[Finding]:
    """A published GA column that disagrees with GBS / (MBS x DP): the source contradicts itself, which is shown
    (a finding), since which of its numbers is wrong cannot be known from the table."""
    model_parallel = run.layout.tp * run.layout.pp * run.layout.cp
    if None in (run.gradient_accumulation, run.global_batch, run.micro_batch) or gpus % model_parallel:
        return
    assert run.global_batch is not None and run.micro_batch is not None
    implied = run.global_batch / (run.micro_batch * gpus // model_parallel)
    if run.gradient_accumulation != implied:
        yield Finding.at("published.gradient_accumulation", f"published GA {run.gradient_accumulation} != GBS / (MBS x "
                          f"DP) = {implied:g}; the source's table contradicts itself")


def _torchtitan_layout(run: PublishedRun, gpus: int) -> Iterator[Finding]:
    layout = run.layout
    fsdp = layout.fsdp or 1
    product = fsdp * layout.tp * layout.pp * layout.cp
    if product != gpus:
        yield Finding.at("published.layout", f"FSDP {fsdp} x TP {layout.tp} x PP {layout.pp} x CP {layout.cp} = "
                          f"{product}, not the {gpus} GPUs (torchtitan: FSDP x TP x PP x CP = #GPUs)")
    if run.global_batch is not None and run.local_batch is not None and run.global_batch != run.local_batch * fsdp:
        yield Finding.at("published.global_batch", f"global batch {run.global_batch} != local batch x FSDP = "
                          f"{run.local_batch} x {fsdp}")


def _beyond_bounds(entry: PublishedSummary, tables: ReferenceTables) -> Iterator[Finding]:
    """The entry's figures against the physical bounds of its GPU (plausibility.py): tokens/s per GPU, the
    published MFU and memory, the microbatch."""
    run, card = entry.published, tables.models.get(entry.model)
    refusal = implausible(Claim(entry.gpu, entry.precision, "published.precision", entry.result.tokens_per_s_per_gpu,
                                run.seq_length if run else None, run is not None and run.task == "lora"),
                          card, tables)
    if refusal is not None:
        yield refusal
    if run is None:
        return
    spec = tables.variants.get(entry.gpu.variant)
    if run.derivation is not None and (too_much := mfu_beyond_peak(run.derivation.published_mfu_percent,
                                                                    "published.derivation.published_mfu_percent")):
        yield too_much
    if (too_much := memory_beyond_part(run.memory_gib, "published.memory_gib", spec, entry.gpu.variant)) is not None:
        yield too_much
    fsdp = engine_of_framework(run.engine).layout.fsdp
    rows, field = (run.local_batch, "published.local_batch") if fsdp else (run.micro_batch, "published.micro_batch")
    if rows is not None and entry.gpu.count % (run.layout.tp * run.layout.pp * run.layout.cp) == 0:
        yield from microbatch_beyond(Microbatch(rows, field, data_parallel(run, entry.gpu.count), run.global_batch,
                                                rows * run.seq_length / run.layout.cp, field, run.layout.tp,
                                                run.layout.pp), card, spec, entry.gpu.variant)


def check_published(entry: PublishedSummary, tables: ReferenceTables) -> tuple[list[Finding], list[Finding]]:
    """(errors, findings) of an entry: errors make it invalid; findings (a published TFLOP/s that disagrees with
    ours beyond the tolerance, short of absurd) are shown and leave it valid."""
    errors: list[Finding] = []
    findings: list[Finding] = []
    if entry.model not in tables.models:
        errors.append(Finding.at("model", f"no model card named '{entry.model}' in models/; add the card or fix the "
                                          "name"))
    if entry.gpu.type not in tables.gpus:
        errors.append(Finding.at("gpu.type", f"unknown GPU type '{entry.gpu.type}'; known: {', '.join(tables.gpus)} "
                                  "(hardware/gpus.yaml)"))
    elif issue := variant_issue(entry.gpu.type, entry.gpu.variant, tables):
        errors.append(Finding.at("gpu.variant", issue))
    run = entry.published
    errors.extend(_beyond_bounds(entry, tables))
    if run is None:
        return errors, findings
    if run.layout.vp is not None and run.layout.vp > 1 and run.layout.pp == 1:
        errors.append(Finding.at("published.layout.vp", f"VP {run.layout.vp} needs PP > 1 (virtual stages split a "
                                  "pipeline)"))
    named = [key for key, spec in tables.variants.items() if run.system_as_published in spec.published_as]
    if named and entry.gpu.variant not in named:
        errors.append(Finding.at("gpu.variant", f"is {entry.gpu.variant}, but hardware/gpus.yaml lists the system "
                                  f"'{run.system_as_published}' as {named[0]}; expected {named[0]}"))
    fsdp = engine_of_framework(run.engine).layout.fsdp
    rules = _torchtitan_layout if fsdp else _megatron_layout
    errors.extend(rules(run, entry.gpu.count))
    if not fsdp:
        findings.extend(_gradient_accumulation(run, entry.gpu.count))
    derived = published_figures(entry, tables)
    if derived is not None and (ratio := derived.tflops_ratio) is not None:
        text = (f"published {derived.published_tflops_per_gpu:g} model TFLOP/s per GPU against "
                f"{derived.implied_tflops_per_gpu:.0f} from tokens/s x our {derived.flops_per_token / 1e9:.2f} "
                f"GFLOP per token ({ratio - 1:+.1%})")
        if not 1 / PUBLISHED_FLOPS.absurd <= ratio <= PUBLISHED_FLOPS.absurd:
            errors.append(Finding.at("published.model_tflops_per_gpu", f"{text}: more than a factor of "
                                      f"{PUBLISHED_FLOPS.absurd:g} apart; check the model, the GPU count and the "
                                      f"figure"))
        elif abs(ratio - 1) > PUBLISHED_FLOPS.agree:
            findings.append(Finding.at("published.model_tflops_per_gpu", f"{text}: beyond the "
                                        f"{PUBLISHED_FLOPS.agree:.0%} "
                                        "tolerance (thresholds.PUBLISHED_FLOPS); the source counts FLOPs its own way"))
    return errors, findings
