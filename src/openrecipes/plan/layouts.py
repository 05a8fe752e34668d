"""Every valid layout of a model on N GPUs under one engine's rules.

TP (heads, query groups and vocabulary divisible; within one NVLink domain) with sequence parallel, PP with an
even split or Megatron's uneven first/last-stage split, interleaved VPP, CP (row divisible by 2*CP for the
load-balanced split), EP*ETP, recompute none/selective/full, and a token budget per GPU (slime's
--max-tokens-per-gpu). Where the engines differ (where EP's ranks come from, which optimizer fractions may sit on
the host) the engine's LayoutRules (engines/<name>/layouts.py) say.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from openrecipes import figures
from openrecipes.engines.knowledge import LayoutRules
from openrecipes.engines.levers import Levers, lever_values
from openrecipes.engines.registry import engine_named
from openrecipes.names import layout_label
from openrecipes.plan.shape import ModelShape

EngineName = str  # an engine's name in openrecipes.engines.registry (engines.knowledge.Engine.name)
Recompute = Literal["none", "selective", "full"]
RECOMPUTE_POLICIES: tuple[Recompute, ...] = ("none", "selective", "full")
# Rows per microbatch the enumeration tries (the seeds use 1, 6 and 8).
ROWS_PER_MICROBATCH = (1, 2, 3, 4, 6, 8, 12, 16)
# Megatron's low precisions by family: each family's GEMM speed-up is one fitted value (calibration.yaml). FP8 with
# delayed and with current scaling run the same FP8 GEMMs (the record's Llama 3.1 70B on 64 x H100: 719 and 728-736
# TFLOP/s per GPU).
LOW_PRECISIONS = {"fp8": "fp8", "fp8-current-scaling": "fp8", "fp8-delayed-scaling": "fp8", "mxfp8": "mxfp8",
                  "nvfp4": "nvfp4"}


@dataclass(frozen=True)
class Layout:
    """A layout: its engine, its degrees, and the engine's typed lever block (engines/<name>/levers.py)."""

    engine: EngineName
    tp: int
    pp: int
    vpp: int
    cp: int
    ep: int
    etp: int
    dp: int
    stage_layers: tuple[int, ...]  # decoder layers on each pipeline stage
    recompute: Recompute
    rows_per_microbatch: int
    max_tokens_per_gpu: int
    levers: Levers

    def __post_init__(self) -> None:
        if type(self.levers) is not engine_named(self.engine).lever_block:  # built by Engine.levers_of, never mixed
            raise TypeError(f"a {self.engine} layout with a {type(self.levers).__name__} lever block")

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.cp * self.dp

    @property
    def sequence_parallel(self) -> bool:
        return self.tp > 1

    @property
    def sharded_data_parallel(self) -> bool:
        """Weights gathered layer by layer every microbatch: torchtitan's FSDP2 or Megatron-FSDP."""
        return self.rules.fsdp or self.levers.megatron_fsdp

    @property
    def expert_data_parallel(self) -> int:
        """Ranks sharing one expert shard's optimizer state: the non-PP ranks over EP*ETP."""
        return self.tp * self.cp * self.dp // (self.ep * self.etp)

    @property
    def label(self) -> str:
        return layout_label(self.tp, self.pp, self.dp, self.vpp, self.cp, self.ep, self.etp)

    @property
    def rules(self) -> LayoutRules:
        return engine_named(self.engine).layout

    def microbatches(self, global_batch: int) -> int:
        """Microbatches per data-parallel rank per step (the enumeration keeps them whole)."""
        return math.ceil(global_batch / self.dp / self.rows_per_microbatch)

    def flat_fields(self) -> dict[str, object]:
        """Its fields with every lever's value beside the degrees, as an exported row states them (the levers
        engines/levers.py names)."""
        fields = {name: value for name, value in vars(self).items() if name != "levers"}
        return fields | lever_values(self.levers)


def offload_group(engine: EngineName, **stated: object) -> tuple[Levers, ...]:
    """The engine's lever blocks of the stated levers with each optimizer fraction it may offload to the host."""
    found = engine_named(engine)
    return tuple(found.levers_of(**stated, offload_fraction=fraction) for fraction in found.layout.offload_fractions)


def reshard_choice_applies(levers: Levers, dp: int, cp: int, fsdp: bool) -> bool:
    """Keeping weights gathered after the forward only means something where FSDP shards them (DP x CP > 1)."""
    return levers.reshard_after_forward or (fsdp and dp * cp > 1)


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def stage_split(layers: int, pp: int) -> tuple[int, ...] | None:
    """Even split, else Megatron's uneven one (--decoder-first/last-pipeline-num-layers): equal middle stages and
    the rest on the first and last, chosen so that the heaviest stage holds as few layers as any such split can
    (61 layers over 16 stages: 2, 4 x 14, 3; its step waits on the heaviest stage)."""
    base, remainder = divmod(layers, pp)
    if base == 0:
        return None
    if remainder == 0:
        return (base,) * pp
    if pp == 2:
        return (base, base + remainder)
    splits = []
    for middle in range(1, layers // (pp - 2) + 1):
        rest = layers - middle * (pp - 2)
        if rest >= 2:
            splits.append((rest // 2, *(middle,) * (pp - 2), rest - rest // 2))
    return min(splits, key=max) if splits else None


def _tp_sizes(shape: ModelShape, gpus: int, nvlink_domain: int) -> list[int]:
    return [t for t in divisors(gpus) if t <= nvlink_domain and shape.attention_heads % t == 0
            and shape.query_groups % t == 0 and shape.vocab % t == 0]


def expert_sizes(shape: ModelShape, tp: int, cp: int, dp: int, rules: LayoutRules) -> Iterator[tuple[int, int]]:
    if not shape.is_moe:
        yield 1, 1
        return
    for etp in sorted({1, tp}):
        for ep in divisors(shape.experts):
            # EP borrows from the FSDP*CP ranks, or EP*ETP is carved out of the TP*CP*DP ranks of a stage.
            borrowed_ranks, group = (cp * dp, ep) if rules.experts_within_fsdp else (tp * cp * dp, ep * etp)
            if borrowed_ranks % group == 0:
                yield ep, etp


def vpp_sizes(split: tuple[int, ...], pp: int, rules: LayoutRules) -> list[int]:
    """Virtual stages per pipeline rank. Megatron: every count that splits a stage's layers evenly, down to one layer
    a chunk, the first and last stages' counted with the embedding or the loss in one layer's slot (VP 5 for Llama
    3.1 70B at PP 4: 20 layers a stage; DeepSeek-V3's 61 layers at PP 2 split 30 and 31, and with the loss 32, so VP
    4 and 8; Llama 3.1 405B's 126 at PP 16 split 7, 8 x 14, 7, with the embedding and the loss 8 each, so VP 8);
    the other stages take their own share of chunks, as Megatron's --pipeline-model-parallel-layout
    allows). An engine with max_virtual_stages: up to that many, each dividing a middle stage."""
    if pp == 1:
        return [1]
    if rules.max_virtual_stages is not None:
        return [v for v in range(1, rules.max_virtual_stages + 1) if split[len(split) // 2] % v == 0]
    slots = {*split, split[0] + 1, split[-1] + 1}
    return sorted({v for layers in slots for v in divisors(layers)})


def _microbatch_sizes(rows_per_rank: int, row_tokens: int, cp: int) -> list[int]:
    """Rows per microbatch that a run can take: whole microbatches on every data-parallel rank (torchtitan refuses
    a global batch that DP x local batch does not divide, and Megatron one that DP x micro batch does not: 12 rows
    a microbatch at global batch 64 over DP 1 runs in neither), each microbatch's tokens split evenly over CP."""
    return [r for r in ROWS_PER_MICROBATCH if rows_per_rank % r == 0 and (r * row_tokens) % cp == 0]


def enumerate_layouts(shape: ModelShape, gpus: int, row_tokens: int, global_batch: int, engine: EngineName,
                      nvlink_domain: int, lever_groups: tuple[tuple[Levers, ...], ...] | None = None
                      ) -> Iterator[tuple[Layout, ...]]:
    """Every valid layout with each group of lever blocks (openrecipes.plan.levers.lever_groups; None: no lever
    pulled), in groups: one layout with each block of a group (each optimizer fraction the engine may offload to the
    host), alike in every other field (the planner works out what does not depend on the fraction once per group)."""
    rules = engine_named(engine).layout
    lever_groups = lever_groups or (offload_group(engine),)
    for tp in _tp_sizes(shape, gpus, nvlink_domain):
        for pp in divisors(gpus // tp):
            split = stage_split(shape.layers, pp)
            if split is None:
                continue
            for cp in divisors(gpus // (tp * pp)):
                if row_tokens % (2 * cp) and cp > 1:
                    continue
                dp = round(figures.data_parallel_size(gpus, tp, pp, cp))
                if global_batch % dp:
                    continue
                rows_per_rank = global_batch // dp
                for ep, etp in expert_sizes(shape, tp, cp, dp, rules):
                    for rows in _microbatch_sizes(rows_per_rank, row_tokens, cp):
                        microbatches = rows_per_rank // rows
                        for vpp in vpp_sizes(split, pp, rules):
                            if vpp > 1 and microbatches % pp:
                                continue  # the interleaved schedule runs microbatches in groups of PP
                            for recompute in RECOMPUTE_POLICIES:
                                for group in lever_groups:
                                    if not reshard_choice_applies(group[0], dp, cp, rules.fsdp):
                                        continue
                                    yield tuple(Layout(engine, tp, pp, vpp, cp, ep, etp, dp, split, recompute, rows,
                                                       rows * row_tokens // cp, levers) for levers in group)
