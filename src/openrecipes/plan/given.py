"""A layout as a user writes it (`plan MODEL ... --layout "TP4 PP8 VP5 CP2 EP8 MB1 full"`): read word by word,
checked against the rules the planner's enumeration applies (openrecipes.plan.layouts), built and predicted alone.
Nothing is enumerated, so it answers as fast at 1,024 GPUs as at one. The words are the ones `plan`'s table
writes (openrecipes.plan.words.short_label), so a row's label reads back as its layout."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from openrecipes.catalog.hardware import load_reference_tables, precision_peak_flops
from openrecipes.catalog.model import ATTENTION_BACKENDS, FLOAT8_SCALINGS, KERNELS
from openrecipes.engines.knowledge import LayoutRules
from openrecipes.engines.registry import engine_named
from openrecipes.errors import UserError
from openrecipes.plan.layouts import LOW_PRECISIONS, Layout, Recompute, expert_sizes, stage_split, vpp_sizes
from openrecipes.plan.predict import Context, PlanRequest, Prediction, context, predict_layout
from openrecipes.plan.shape import ModelShape
from openrecipes.plan.words import COMPILED, LEVER_WORDS, NO_RESHARD, OFFLOAD

DEGREE = re.compile(r"(ETP|TP|PP|VP|CP|EP|DP|MB)(\d+)", re.IGNORECASE)
RECOMPUTE_WORDS: dict[str, Recompute] = {"none": "none", "sel": "selective", "selective": "selective",
                                         "full": "full"}
# Every word a lever may be written as: the table's short mark and the recipe's value (liger-rmsnorm, tensorwise).
LEVER_SPELLINGS = {spelling: words for words in LEVER_WORDS
                   for spelling in (words.short.replace(" ", "-"), words.value if words.field != "float8"
                                    else f"float8-{words.value}")}
FORMS = (f"TPn PPn VPn CPn EPn ETPn DPn (optional: the rest of the GPUs) MBn (rows per microbatch); "
         f"recompute none, sel or full; torchtitan: {COMPILED} (compiled), {NO_RESHARD} (no reshard after forward), "
         f"{', '.join(w.short for w in LEVER_WORDS if w.field == 'kernels')} (Liger kernels), "
         f"{', '.join(ATTENTION_BACKENDS)}, {', '.join(f'fp8-{s}' for s in FLOAT8_SCALINGS)}; Megatron: "
         f"{OFFLOAD}S (the optimizer's share S on the host, 0 < S <= 1: {OFFLOAD}0.5), {', '.join(LOW_PRECISIONS)}")
Refuse = Callable[[str], UserError]  # the error naming the written layout and the rule it breaks


@dataclass(frozen=True)
class WrittenLayout:
    """The words of `--layout`, read: degrees (DP None: the rest of the GPUs), recompute and levers."""

    degrees: dict[str, int]
    recompute: Recompute
    compile: bool
    reshard_after_forward: bool
    kernels: tuple[str, ...]
    attention: str | None
    float8: str | None
    offload_fraction: float
    low_precision: str | None

    def degree(self, name: str) -> int:
        return self.degrees.get(name, 1)


def read_layout(text: str) -> WrittenLayout:
    """The layout `text` writes, or a UserError naming the word it cannot read and the words it can."""
    degrees: dict[str, int] = {}
    recompute: list[Recompute] = []
    levers: dict[str, list[str]] = {"kernels": [], "attention": [], "float8": []}
    flags: set[str] = set()
    offload: list[float] = []
    precision: list[str] = []
    for word in text.split():
        folded = word.casefold()
        if match := DEGREE.fullmatch(word):
            name, value = match[1].upper(), int(match[2])
            if name in degrees or value < 1:
                raise _unreadable(text, word, "each degree once, at least 1")
            degrees[name] = value
        elif folded in RECOMPUTE_WORDS:
            recompute.append(RECOMPUTE_WORDS[folded])
        elif folded in (COMPILED.casefold(), "compiled", "compile"):
            flags.add(COMPILED)
        elif folded in (NO_RESHARD.casefold(), "no-reshard"):
            flags.add(NO_RESHARD)
        elif folded in LEVER_SPELLINGS:
            lever = LEVER_SPELLINGS[folded]
            levers[lever.field].append(lever.value)
        elif share := _fraction(folded.removeprefix("offload").removeprefix(OFFLOAD)) if folded.startswith(
                OFFLOAD) else None:
            offload.append(share)
        elif folded in LOW_PRECISIONS:
            precision.append(folded)
        else:
            raise _unreadable(text, word, "")
    for what, given in (("recompute", recompute), ("attention backend", levers["attention"]),
                        ("FP8 scaling", levers["float8"]), ("offload share", offload), ("precision", precision)):
        if len(given) > 1:
            raise _unreadable(text, " ".join(map(str, given)), f"one {what} at most")
    if len(set(levers["kernels"])) < len(levers["kernels"]):
        raise _unreadable(text, " ".join(levers["kernels"]), "each kernel once")
    return WrittenLayout(degrees, recompute[0] if recompute else "none", COMPILED in flags, NO_RESHARD not in flags,
                         tuple(k for k in KERNELS if k in levers["kernels"]), next(iter(levers["attention"]), None),
                         next(iter(levers["float8"]), None), offload[0] if offload else 0.0,
                         precision[0] if precision else None)


def _fraction(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 < value <= 1 else None


def _unreadable(text: str, word: str, rule: str) -> UserError:
    return UserError(f"--layout \"{text}\": cannot read '{word}'{f' ({rule})' if rule else ''}; the words are "
                     f"{FORMS}")


def built(ctx: Context, written: WrittenLayout, text: str) -> Layout:
    """The planner's Layout of the written one on the request's GPUs and workload, or a UserError naming the rule of
    the planner's enumeration (openrecipes.plan.layouts) it breaks."""
    request = ctx.request
    shape, rules, engine = ctx.shape, engine_named(request.engine).layout, engine_named(request.engine)

    def refuse(reason: str) -> UserError:
        return UserError(f"--layout \"{text}\": {reason}")

    tp, pp, vp, cp, ep, etp = (written.degree(name) for name in ("TP", "PP", "VP", "CP", "EP", "ETP"))
    rows = written.degree("MB")
    if request.gpus % (tp * pp * cp):
        raise refuse(f"TP x PP x CP = {tp * pp * cp} does not divide --gpus {request.gpus}")
    dp = request.gpus // (tp * pp * cp)
    if written.degrees.get("DP", dp) != dp:
        raise refuse(f"DP{written.degrees['DP']} with TP x PP x CP = {tp * pp * cp} takes "
                     f"{tp * pp * cp * written.degrees['DP']} GPUs, not --gpus {request.gpus}: leave DP out or fix it")
    if tp > ctx.links.gpus_per_nvlink_domain:
        raise refuse(f"TP{tp} spans more than one NVLink domain ({ctx.links.gpus_per_nvlink_domain} GPUs)")
    for what, count in (("attention heads", shape.attention_heads), ("query groups", shape.query_groups),
                        ("vocabulary entries", shape.vocab)):
        if count % tp:
            raise refuse(f"TP{tp} does not divide the model's {count:,} {what}")
    split = stage_split(shape.layers, pp)
    if split is None:
        raise refuse(f"PP{pp} has more stages than the model's {shape.layers} layers")
    if cp > 1 and request.row_tokens % (2 * cp):
        raise refuse(f"CP{cp} needs rows divisible by 2 x CP; rows are {request.row_tokens:,} tokens (--row-tokens)")
    if request.global_batch % dp:
        raise refuse(f"DP{dp} does not divide the global batch of {request.global_batch} rows (--global-batch)")
    rows_per_rank = request.global_batch // dp
    if rows > rows_per_rank:
        raise refuse(f"MB{rows} is more than the {rows_per_rank} rows each data-parallel rank takes a step")
    _check_experts(shape, tp, cp, dp, ep, etp, rules, refuse)
    _check_virtual(split, pp, vp, -(-rows_per_rank // rows), rules, refuse)
    if engine.lacking(kernels=written.kernels, attention=written.attention, float8=written.float8):
        raise refuse(f"kernels, attention backends and fp8-SCALING are torchtitan levers, which {request.engine} "
                     "lacks (Megatron's low precisions are fp8, mxfp8, nvfp4)")
    if written.compile and not engine.has_lever("compile"):
        raise refuse(f"{request.engine} is not compiled by the planner ({COMPILED})")
    if not written.reshard_after_forward and not (rules.fsdp and dp * cp > 1):
        raise refuse(f"{NO_RESHARD} needs FSDP sharding weights (torchtitan with DP x CP > 1)")
    if written.offload_fraction and not engine.has_lever("offload_fraction"):
        raise refuse(f"{request.engine} keeps the optimizer on the GPU ({OFFLOAD}N is Megatron's)")
    if written.low_precision:
        _check_precision(request, written.low_precision, ctx.links.variant, refuse)
    levers = engine.levers_of(
        compile=written.compile, reshard_after_forward=written.reshard_after_forward, kernels=written.kernels,
        attention=written.attention, float8=written.float8, offload_fraction=written.offload_fraction,
        grad_reduce_bf16=request.grad_reduce_bf16, low_precision=written.low_precision)
    return Layout(request.engine, tp, pp, vp, cp, ep, etp, dp, split, written.recompute, rows,
                  rows * request.row_tokens // cp, levers)


def _check_experts(shape: ModelShape, tp: int, cp: int, dp: int, ep: int, etp: int, rules: LayoutRules,
                   refuse: Refuse) -> None:
    """EP and ETP as the enumeration places them (layouts.expert_sizes), each refusal naming its rule."""
    if (ep, etp) in set(expert_sizes(shape, tp, cp, dp, rules)):
        return
    if not shape.is_moe:
        raise refuse("EP and ETP are for a mixture of experts; this model is dense")
    if shape.experts % ep:
        raise refuse(f"EP{ep} does not divide the model's {shape.experts} experts")
    if etp not in (1, tp):
        raise refuse(f"ETP{etp}: ETP is 1 or TP ({tp})")
    ranks, group = (cp * dp, ep) if rules.experts_within_fsdp else (tp * cp * dp, ep * etp)
    raise refuse(f"EP{ep}{f' x ETP{etp}' if group != ep else ''} = {group} does not divide the "
                 f"{ranks} {'CP x DP' if rules.experts_within_fsdp else 'TP x CP x DP'} ranks it is carved from")


def _check_virtual(split: tuple[int, ...], pp: int, vp: int, microbatches: int, rules: LayoutRules,
                   refuse: Refuse) -> None:
    """VP as the enumeration allows it (layouts.vpp_sizes), the microbatches in groups of PP."""
    if vp == 1:
        return
    if pp == 1:
        raise refuse(f"VP{vp} needs PP > 1")
    allowed = vpp_sizes(split, pp, rules)
    if vp not in allowed:
        raise refuse(f"VP{vp} does not split the stages' layers ({', '.join(map(str, split))}); VP can be "
                     f"{', '.join(map(str, allowed))}")
    if microbatches % pp:
        raise refuse(f"VP needs the microbatches ({microbatches} a rank) in groups of PP{pp}")


def _check_precision(request: PlanRequest, precision: str, variant: str, refuse: Refuse) -> None:
    if not engine_named(request.engine).has_lever("low_precision"):
        raise refuse(f"{precision} is Megatron's (Transformer Engine); {request.engine}'s FP8 is fp8-SCALING")
    if precision_peak_flops(load_reference_tables().variants[variant], precision) is None:
        raise refuse(f"{variant} has no dense {precision} peak (hardware/gpus.yaml)")


def predicted(request: PlanRequest, text: str) -> Prediction:
    """The prediction of exactly the layout `text` writes, on the request's GPUs and workload."""
    ctx = context(request)
    return predict_layout(ctx, built(ctx, read_layout(text), text))
