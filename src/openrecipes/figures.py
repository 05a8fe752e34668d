"""Every derived figure in one place: the arithmetic, and FIGURES, the one list of a recipe's figures.

The catalog stores inputs (tokens/s, GPUs, active parameters, instance price) and the figures the seeds publish;
these functions recompute each published figure. Nothing else in the project does this arithmetic. The result
block, `audit`, `validate`, `list`, `show`, the boards, the compare page and the CSV export iterate FIGURES instead
of naming figures: a new figure is one entry there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from decimal import ROUND_HALF_UP, Decimal
from statistics import mean, stdev
from typing import Any, Literal

SECONDS_PER_HOUR = 3600.0
# A dense transformer's training step costs 6 FLOPs per active parameter per token (2 forward, 4 backward).
FLOPS_PER_PARAM_PER_TOKEN = 6


def mfu(active_params: int, tokens_per_s_per_gpu: float, peak_flops_per_gpu: float) -> float:
    """Model FLOPs utilisation: 6 * N_active * tokens/s/GPU / peak dense BF16 FLOP/s of one GPU."""
    return FLOPS_PER_PARAM_PER_TOKEN * active_params * tokens_per_s_per_gpu / peak_flops_per_gpu


def usd_per_gpu_hour(instance_usd_per_hour: float, gpus_per_instance: int) -> float:
    return instance_usd_per_hour / gpus_per_instance


def usd_per_million_tokens(usd_per_gpu_hour: float, tokens_per_s_per_gpu: float) -> float:
    """$ per 1M training tokens: $/GPU-hour / (tokens/s/GPU * 3600) * 1e6."""
    return usd_per_gpu_hour / (tokens_per_s_per_gpu * SECONDS_PER_HOUR) * 1e6


def time_to_train_hours(tokens: float, tokens_per_s_per_gpu: float, gpus: int) -> float:
    """Wall time to train `tokens` at a layout's speed: tokens / (tokens/s/GPU * GPUs) / 3600."""
    return tokens / (tokens_per_s_per_gpu * gpus) / 3600


def cost_to_train_usd(tokens: float, tokens_per_s_per_gpu: float, usd_per_gpu_hour_: float) -> float:
    """$ to train `tokens`: GPU-hours (every GPU for the wall time) * $/GPU-hour, i.e. tokens / 1M * $ per 1M."""
    return tokens / 1e6 * usd_per_million_tokens(usd_per_gpu_hour_, tokens_per_s_per_gpu)


def window_tokens(first_step: int, last_step: int, global_batch: int, row_tokens: int) -> int:
    """Tokens trained in a window of steps; both ends are included."""
    return (last_step - first_step + 1) * global_batch * row_tokens


def rows_per_microbatch(max_tokens_per_gpu: int, cp: int, row_tokens: int) -> float:
    """Rows in one microbatch: a CP group of `cp` GPUs shares each row, each GPU holding max_tokens_per_gpu."""
    return max_tokens_per_gpu * cp / row_tokens


def gpu_hours(gpus: int, seconds: float) -> float:
    return gpus * seconds / SECONDS_PER_HOUR


def tokens_per_s_per_gpu(tokens: int, seconds: float, gpus: int) -> float:
    """Throughput over a window: its tokens / the sum of its step times / GPUs."""
    return tokens / seconds / gpus


def step_seconds(tokens_per_step: int, gpus: int, tokens_per_s_per_gpu: float) -> float:
    """The step time a throughput implies: the inverse of tokens_per_s_per_gpu for one step."""
    return tokens_per_step / gpus / tokens_per_s_per_gpu


def step_time_cv_percent(step_times: Sequence[float]) -> float:
    """Coefficient of variation of step times: sample standard deviation / mean, in percent."""
    if len(step_times) < 2:
        raise ValueError("the step-time CV needs at least two steps")
    return stdev(step_times) / mean(step_times) * 100.0


def mean_half_width(cv_percent: float, steps: int, sigmas: float) -> float:
    """Relative half-width of the confidence interval on a mean over `steps` step times: sigmas x CV / sqrt(steps)."""
    return sigmas * (cv_percent / 100) / math.sqrt(steps)


def data_parallel_size(gpus: int, tp: int, pp: int, cp: int) -> float:
    return gpus / (tp * pp * cp)


def within_published_rounding(recomputed: float, published_text: str) -> bool:
    """True when `recomputed` rounds to the published figure at the precision it was published with.

    `published_text` is the figure as written in the YAML (e.g. '26.95', '0.0158', '7.4e-06'): its last
    digit sets the tolerance to half a unit of that digit.
    """
    return abs(recomputed - float(published_text)) <= published_half_unit(published_text) * (1 + 1e-9)


def published_half_unit(published_text: str) -> float:
    text = published_text.strip().lower()
    mantissa, _, exponent = text.partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (-decimals + (int(exponent) if exponent else 0))


# --- Training FLOPs per token --------------------------------------------------------------------------------------
# Two ways to count a token's FLOPs, side by side in docs/public-record.md: 6N (FLOPS_PER_PARAM_PER_TOKEN, the
# recipes' MFU and the planner's compute), and 6 x the matmul parameters plus causal attention (the published
# record's, close to what Megatron-Bridge's "model TFLOP/s" counts). Both add attention_flops_per_token.


def attention_flops_per_token(layers: int, score_width: int, seq_length: int, window: int | None = None,
                              windowed_fraction: float = 0.0, sparse_topk: int | None = None) -> float:
    """Training FLOPs of the score (Q.K) and value (P.V) matmuls per token over all layers: 2 FLOPs per multiply-add,
    forward 2 x context x score_width (heads x (qk + v head dims)), three times that with the backward pass.

    A causal query attends half the sequence on average; on the windowed fraction of the layers at most `window`
    keys (the token itself included), and with sparse attention (DSA) at most `sparse_topk` keys."""
    full = seq_length / 2
    context = full if sparse_topk is None else min(full, sparse_topk)
    windowed = min(full, window) if window else full
    mean_context = (1 - windowed_fraction) * context + windowed_fraction * windowed
    return 3 * 2 * mean_context * score_width * layers


def attention_score_width(arch: Mapping[str, Any]) -> int:
    """heads x (qk + v head dims) of a model card's architecture: multi-latent attention scores with its no-position
    and rotary parts; grouped-query attention with kv_channels (hidden / heads where the card gives none)."""
    heads = int(arch["attention_heads"])
    if "qk_head_dim" in arch:
        return heads * (int(arch["qk_head_dim"]) + int(arch.get("qk_pos_emb_head_dim", 0)) + int(arch["v_head_dim"]))
    return heads * 2 * int(arch.get("kv_channels") or int(arch["hidden_size"]) // heads)


def attention_window(arch: Mapping[str, Any]) -> tuple[int | None, float]:
    """A card's sliding window in keys (Megatron's --window-size W attends W past tokens plus the token itself) and
    the fraction of layers it is on: all but every window_attn_skip_freq-th; (None, 0.0) without a window."""
    window, skip = arch.get("window_size"), arch.get("window_attn_skip_freq")
    if window is None:
        return None, 0.0
    return int(window) + 1, (1 - 1 / int(skip)) if skip else 1.0


def matmul_params(active_params: int, vocab: int, hidden: int, untied_embeddings: bool) -> int:
    """Active parameters that cost a matmul per token: the input embedding is a lookup, so an untied one is left
    out (a tied one is the output head's matmul, kept)."""
    return active_params - vocab * hidden if untied_embeddings else active_params


# A frozen weight (LoRA fine-tuning) gets no weight gradient: 2 FLOPs forward and 2 for the input gradient.
FLOPS_PER_FROZEN_PARAM_PER_TOKEN = 4


def training_flops_per_token(params: int, attention_flops: float, frozen_weights: bool = False) -> float:
    """6 FLOPs per parameter (2 forward, 4 backward; 4 when the weights are frozen, as in LoRA, whose small adapters
    this leaves out) plus the attention matmuls."""
    per_param = FLOPS_PER_FROZEN_PARAM_PER_TOKEN if frozen_weights else FLOPS_PER_PARAM_PER_TOKEN
    return per_param * params + attention_flops


def tflops_per_gpu(flops_per_token: float, tokens_per_s_per_gpu: float) -> float:
    """Model TFLOP/s per GPU that a throughput implies."""
    return flops_per_token * tokens_per_s_per_gpu / 1e12


def utilisation(flops_per_token: float, tokens_per_s_per_gpu: float, peak_flops_per_gpu: float) -> float:
    """Model FLOPs utilisation for any FLOPs count: FLOPs per token x tokens/s per GPU / peak FLOP/s of one GPU."""
    return flops_per_token * tokens_per_s_per_gpu / peak_flops_per_gpu


# --- The one list of figures ---------------------------------------------------------------------------------------

# The tokens a time to train is worked out for where no page sets its own (the site's site.yaml token_budget).
DEFAULT_TOKEN_BUDGET = 1_000_000_000

# Where a figure is shown besides the result block: `list` and its --json (boards), `show` and a recipe's page
# (show), the compare page (compare), a board's CSV export (csv).
Surface = Literal["board", "show", "compare", "csv"]
EVERYWHERE: frozenset[Surface] = frozenset(("board", "show", "compare", "csv"))


@dataclass(frozen=True)
class Inputs:
    """What the figures are worked out from. A figure any of whose inputs is None is None: a log measured without
    its recipe has step times but no GPU count, peak or price."""

    tokens_per_s_per_gpu: float | None = None
    gpus: int | None = None
    active_params: int | None = None
    peak_flops_per_gpu: float | None = None
    usd_per_gpu_hour: float | None = None
    step_times: tuple[float, ...] | None = None  # the scored window's step times, in seconds
    elapsed_seconds: float | None = None  # the logs' first to last timestamp
    token_budget: int = DEFAULT_TOKEN_BUDGET


_INPUT_NAMES = frozenset(f.name for f in fields(Inputs))


@dataclass(frozen=True)
class FigureSpec:
    """One figure: its name (the result block's field, the --json key, the CSV column), how it is shown, which way
    is better, the inputs it is worked out from and its formula, which takes them in the order `inputs` names them."""

    name: str
    label: str
    unit: str
    decimals: int  # as published: a stored figure is rounded to these
    better: Literal[1, -1]  # 1: higher is better, -1: lower is better
    inputs: tuple[str, ...]
    formula: Callable[..., float]
    formula_text: str  # the formula in words, as validate's findings quote it
    text: Callable[[float], str]  # the value as pages and the terminal write it
    stored: bool = True  # in a recipe's result: block, measured by `measure` and re-derived by `audit`
    shown: frozenset[Surface] = EVERYWHERE
    # A stored figure published with too few decimals to rank by: pages rank by the value recomputed at full
    # precision where it rounds to the published one.
    ranked_unrounded: bool = False
    missing: str = "not published"  # shown where an entry has no value
    # The compare page: decimals of a difference (None: the figure's own), and whether a difference inside the
    # run's step-time noise band is "within noise" (speed and what is worked out from it alone).
    difference_decimals: int | None = None
    within_noise: bool = False
    key: str = ""  # a board's short name for its column (its sort address, ?sort=usd-asc, and cell class); the name
    board_text: Callable[[float], str] | None = None  # a board's text where it is shorter than `text`

    def __post_init__(self) -> None:
        unknown = set(self.inputs) - _INPUT_NAMES
        if unknown:
            raise ValueError(f"figure {self.name}: unknown inputs {sorted(unknown)}")

    @property
    def column(self) -> str:
        return self.key or self.name

    @property
    def per_budget(self) -> bool:
        """Worked out for a token budget: a page scales it as its reader changes the budget."""
        return "token_budget" in self.inputs

    def of(self, inputs: Inputs) -> float | None:
        """The figure at full precision, or None when one of its inputs is missing."""
        values = [getattr(inputs, name) for name in self.inputs]
        return None if any(v is None for v in values) else self.formula(*values)

    def published(self, inputs: Inputs) -> float | None:
        """The figure rounded as the result block stores it."""
        value = self.of(inputs)
        return None if value is None else round(value, self.decimals)

    def unrounded(self, published: float, inputs: Inputs) -> float:
        """The figure recomputed at full precision where that rounds to `published` (as written with this figure's
        decimals); otherwise (an input missing, or a figure that does not agree) the published one."""
        value = self.of(inputs)
        if value is None or not within_published_rounding(value, f"{published:.{self.decimals}f}"):
            return published
        return value


def board_number(value: float) -> str:
    """Leaderboards and cards: one decimal ("10,483.9")."""
    return f"{value:,.1f}"


def number_text(value: float, decimals: int) -> str:
    """`value` with thousands separators, rounded as the browser's toLocaleString rounds (a tie away from zero, on
    the float's shortest decimal, as ICU reads it), so that a page's script and the terminal print the same digits."""
    rounded = Decimal(repr(value)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    return f"{rounded:,.{decimals}f}"


def duration_text(hours: float) -> str:
    """A wall time as a reader plans with it: minutes under an hour, hours under two days, then days."""
    if hours < 1:
        return f"{number_text(hours * 60, 0)} min"
    return f"{number_text(hours, 1)} h" if hours < 48 else f"{number_text(hours / 24, 1)} days"


def usd_total_text(usd: float) -> str:
    """A total cost (a training run's): whole dollars from $100."""
    return f"${number_text(usd, 0)}" if usd >= 100 else f"${number_text(usd, 2)}"


# The figures in the order the result block's checks, `audit` and every table list them.
FIGURES: tuple[FigureSpec, ...] = (
    FigureSpec("tokens_per_s_per_gpu", "Tokens/s per GPU", "tokens/s", 2, 1, ("tokens_per_s_per_gpu",), float,
               "window tokens / sum of the window's step times / GPUs", lambda v: f"{v:,.2f}", within_noise=True,
               key="tokens", board_text=board_number),
    FigureSpec("usd_per_million_tokens", "$ / 1M tokens", "$", 2, -1, ("usd_per_gpu_hour", "tokens_per_s_per_gpu"),
               usd_per_million_tokens, "$/GPU-hour / (tokens/s/GPU * 3600) * 1e6", lambda v: f"${v:,.2f}",
               ranked_unrounded=True, difference_decimals=4, within_noise=True, key="usd"),
    FigureSpec("mfu", "MFU", "fraction", 4, 1, ("active_params", "tokens_per_s_per_gpu", "peak_flops_per_gpu"), mfu,
               "6 * N * tokens/s/GPU / peak", lambda v: f"{v * 100:.1f}%", shown=frozenset(("show", "compare", "csv")),
               difference_decimals=1),
    FigureSpec("step_time_cv_percent", "Step-time CV", "%", 2, -1, ("step_times",), step_time_cv_percent,
               "sample standard deviation / mean of the window's step times", lambda v: f"{v}%",
               shown=frozenset(("show", "compare")), missing="not measured (planned)"),
    # Shown with the run it counts (`show`'s "GPU-hours" beside its date), not among the figures tables compare.
    FigureSpec("gpu_hours", "GPU-hours", "GPU-hours", 2, -1, ("gpus", "elapsed_seconds"), gpu_hours,
               "GPUs * (last - first log timestamp) / 3600", str, shown=frozenset()),
    FigureSpec("time_to_train_hours", "Time to train", "h", 2, -1, ("token_budget", "tokens_per_s_per_gpu", "gpus"),
               time_to_train_hours, "token budget / (tokens/s/GPU * GPUs) / 3600", duration_text, stored=False,
               within_noise=True, key="time"),
)
STORED = tuple(f for f in FIGURES if f.stored)


def shown_on(surface: Surface) -> tuple[FigureSpec, ...]:
    """The figures a surface shows, in the list's order."""
    return tuple(f for f in FIGURES if surface in f.shown)


def figure(name: str) -> FigureSpec:
    return next(f for f in FIGURES if f.name == name)
