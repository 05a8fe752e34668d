"""A recipe's facts as text, in the seed pages' formats: the site and the terminal (`openrecipes show`) both use them.

The values themselves are never recomputed: a figure is the recipe's `result:` field, only formatted.
"""

from __future__ import annotations

import math

from openrecipes import figures
from openrecipes.catalog.entry_figures import inputs_of, published_of
from openrecipes.catalog.hardware import GpuSpec
from openrecipes.catalog.model import PublishedSummary, Recipe

# The seeds' standard measurement: a 20-step run scored over steps 5-19 (numbered from 0). Only a run that differs
# says so next to its date, as the seed page does ("14-step run scored over steps 4–13").
STANDARD_STEPS_PER_RUN = 20
STANDARD_WINDOW = (5, 19)


tokens_board = figures.board_number


def tokens_detail(value: float) -> str:
    """A recipe's own page: two decimals ("10,483.91", "146.80")."""
    return f"{value:,.2f}"


def tokens_count(tokens: int) -> str:
    """A token budget in words: 1B, 250M, 1.5T."""
    for size, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if tokens >= size:
            return f"{tokens / size:g}{unit}"
    return f"{tokens:,}"


def figure_label(figure: figures.FigureSpec, token_budget: int = figures.DEFAULT_TOKEN_BUDGET) -> str:
    """A figure's label; a computed one says the token budget it is worked out for ("Time to train 1B tokens")."""
    return figure.label if figure.stored else f"{figure.label} {tokens_count(token_budget)} tokens"


def figure_text(figure: figures.FigureSpec, entry: Recipe | PublishedSummary,
                token_budget: int = figures.DEFAULT_TOKEN_BUDGET) -> str:
    """A figure of an entry as written: its text (a computed one from its full-precision value), or what is shown
    where the entry has none."""
    value = published_of(figure, entry) if figure.stored else figure.of(inputs_of(entry, None, token_budget))
    return figure.missing if value is None else figure.text(value)


def board_figures(entry: Recipe | PublishedSummary) -> str:
    """A ranked row's figures after the tokens/s per GPU it is ranked by, as `list` writes them: "$ / 1M tokens:
    $0.21 · Time to train 1B tokens: 2.6 h"."""
    return " · ".join(f"{figure_label(f)}: {figure_text(f, entry)}" for f in figures.shown_on("board")
                      if f.name != "tokens_per_s_per_gpu")


def usd(value: float | None) -> str:
    """A price; a published summary whose source gives none shows that instead of a number."""
    return "not published" if value is None else f"${value:,.2f}"


# Decimals tried, in order, until costs that tie at two decimals are told apart.
_TIE_DECIMALS = (3, 4, 5)


def usd_ranked(costs: list[tuple[float | None, float]]) -> list[str]:
    """(published, recomputed) costs shown side by side, as text: the published "$0.21", except where two
    published costs tie but their recomputed values differ; those get the fewest decimals, and at least three
    significant digits, that tell them apart ("$0.0543" beside "$0.0530")."""
    texts = [usd(published) for published, _ in costs]
    for text in set(texts):
        tied = [i for i, t in enumerate(texts) if t == text]
        if len(tied) < 2 or len({costs[i][1] for i in tied}) < 2:
            continue
        for decimals in _TIE_DECIMALS:
            # three significant digits of the smallest: 0.0543 needs four decimals
            places = max(decimals, 2 - math.floor(math.log10(min(costs[i][1] for i in tied))))
            shown = {i: f"${costs[i][1]:,.{places}f}" for i in tied}
            if len(set(shown.values())) == len({costs[i][1] for i in tied}):
                break
        for i in tied:
            texts[i] = shown[i]
    return texts


def mfu(recipe: Recipe, gpu: GpuSpec | None = None) -> str:
    """MFU as published, against the dense BF16 peak; a recipe trained in FP8 also shows the fraction of the GPU's
    dense FP8 peak (`gpu`, where hardware/gpus.yaml gives it) and says which one MFU means."""
    result = recipe.result
    text = f"{result.mfu * 100:.1f}% (N = {result.active_params.count:,} active parameters per token)"
    if recipe.workload.precision == "fp8" and gpu is not None and gpu.peak_fp8_flops is not None:
        fp8 = figures.mfu(result.active_params.count, result.tokens_per_s_per_gpu, gpu.peak_fp8_flops)
        text += (f"; MFU is defined against the dense BF16 peak ({gpu.peak_bf16_flops / 1e12:,.0f} TFLOP/s) on every "
                 f"board, FP8 ones included: against the dense FP8 peak ({gpu.peak_fp8_flops / 1e12:,.0f} TFLOP/s) "
                 f"it is {fp8 * 100:.1f}%")
    return f"{text}; {result.mfu_note}" if result.mfu_note else text


def levers(recipe: Recipe) -> list[tuple[str, str]]:
    """The fused kernels, attention backend and FP8 training a recipe's layout pulls, label then value."""
    lay = recipe.layout
    facts = [("Fused kernels", f"Liger-Kernel: {', '.join(lay.kernels)}")] if lay.kernels else []
    facts += [("Attention", lay.attention)] if lay.attention else []
    if (f8 := lay.float8) is not None:
        parts = [f"torchao float8 linear layers, {f8.scaling} scaling"]
        parts += ["weights all-gathered in FP8"] if f8.fsdp_float8_all_gather else []
        parts += ["scales precomputed in one all-reduce"] if f8.precomputed_scales else []
        parts += [f"kept in BF16: {', '.join(f8.skip)}"] if f8.skip else []
        facts.append(("FP8 training", "; ".join(parts)))
    return facts


def gpus(recipe: Recipe) -> str:
    g = recipe.gpu
    return f"{g.count} x {g.type} {g.memory_gb} GB ({g.instance}, {g.per_node} per node)"


def measured(recipe: Recipe) -> str:
    result = recipe.result
    first, last = result.window
    if result.measured is None:
        return f"not run (planned): a {result.steps_per_run}-step run to be scored over steps {first}–{last}"
    if result.steps_per_run == STANDARD_STEPS_PER_RUN and tuple(result.window) == STANDARD_WINDOW:
        return str(result.measured)
    return f"{result.measured}, {result.steps_per_run}-step run scored over steps {first}–{last}"


def convergence(recipe: Recipe) -> str | None:
    check = recipe.correctness.convergence
    if check is None:
        return None
    # Stored values as written (0.9999989, 7.4e-06, 0.00051): Python's repr of the YAML float is that text.
    return (f"correlation {check.correlation}, final loss difference {check.final_loss_difference}, "
            f"{check.pointwise_failures} pointwise failures over {check.steps} steps")


def component_tests(recipe: Recipe) -> list[str]:
    return [f"{t.test}: {t.gpu}, {t.date}. Shape: {t.shape}. {t.detail}"
            for t in recipe.correctness.component_tests]


def rows(recipe: Recipe) -> str:
    dataset = recipe.workload.dataset
    if dataset.rows_sha256 is None:
        return f"{dataset.build.name} (not built yet: `{dataset.build.builder}`)"
    return f"{dataset.build.name} (rows_sha256 {dataset.rows_sha256})"


def workload(recipe: Recipe) -> str:
    w = recipe.workload
    return f"{w.row_tokens:,}-token rows · global batch {w.global_batch} · {w.precision.upper()}"


def _shown(figure: figures.FigureSpec, recipe: Recipe, gpu: GpuSpec | None, token_budget: int) -> str:
    """A figure on a recipe's page; MFU also says what it is measured against."""
    return mfu(recipe, gpu) if figure.name == "mfu" else figure_text(figure, recipe, token_budget)


def recipe_facts(recipe: Recipe, gpu: GpuSpec | None = None,
                 token_budget: int = figures.DEFAULT_TOKEN_BUDGET) -> list[tuple[str, str]]:
    """The recipe's facts as the seed page lists them, label then value (the author is linked separately), its
    figures those figures.py shows there; `gpu`, the recipe's GPU row, adds the FP8 peak beside an FP8 recipe's MFU;
    a time to train is for `token_budget` tokens."""
    facts = [
        ("GPUs", gpus(recipe)),
        ("Layout", recipe.layout.summary),
        *levers(recipe),
        *((figure_label(f, token_budget), _shown(f, recipe, gpu, token_budget)) for f in figures.shown_on("show")),
    ]
    if (text := convergence(recipe)) is not None:
        facts.append(("Convergence check", text))
    facts += [("Component test", text) for text in component_tests(recipe)]
    if recipe.result.reference_tokens_per_s_per_gpu is not None:
        facts.append(("Reference arm", f"{tokens_detail(recipe.result.reference_tokens_per_s_per_gpu)} tokens/s per "
                                       "GPU, measured in the same job"))
    facts += [
        ("Measured", measured(recipe)),
        (figures.figure("gpu_hours").label, figure_text(figures.figure("gpu_hours"), recipe)),
        ("Rows", rows(recipe)),
    ]
    return facts


def stack_items(recipe: Recipe) -> list[tuple[str, str]]:
    """Stack fields as the seed page names them ("megatron lm"); the source is shown apart."""
    fields = recipe.stack.model_dump(exclude={"source"})
    return [(name.replace("_", " "), value) for name, value in fields.items() if value is not None]
