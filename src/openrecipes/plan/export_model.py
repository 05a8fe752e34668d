"""The exported Plan pages as typed data: what `openrecipes plan export` writes to plans/<model>.json and the site
reads back. One model on both sides, so a stale or hand-edited file is refused with the field that is wrong, not
read by string key into a KeyError.

The planner's objects (`Prediction.exported()`) are `PredictedLayout`s; the rest is what plan/pages.py adds around
them. Imports nothing of the predictor: the site reads these files without it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from openrecipes.engines.levers import UNPULLED, Levers
from openrecipes.engines.registry import engine_named


class Exported(BaseModel):
    # A key the model does not know is an error: the file was written by other code, so it is re-exported.
    model_config = ConfigDict(extra="forbid", frozen=True)


class ExportedInterval(Exported):
    """The range the left-out errors put around a prediction (plan/trust.py)."""
    low: float  # tokens/s per GPU
    high: float
    basis: str  # which held-out errors set it, and why it is wide where it is
    constrained: bool  # False: the layout uses a feature no measured point of its engine has
    basis_kind: str  # left out with its source: the errors of points predicted by fits that never saw their publisher


class PredictedLayout(Exported):
    """One layout as the planner predicts it: the object `openrecipes plan --json` prints."""
    engine: str
    variant: str  # the hardware variant predicted for (hardware/gpus.yaml)
    label: str
    tp: int
    pp: int
    vpp: int
    cp: int
    ep: int
    etp: int
    dp: int
    sequence_parallel: bool
    stage_layers: list[int]
    recompute: str
    offload_fraction: float
    rows_per_microbatch: int
    max_tokens_per_gpu: int
    grad_reduce_bf16: bool
    compile: bool
    reshard_after_forward: bool
    kernels: list[str]
    attention: str | None
    float8: str | None
    low_precision: str | None  # Megatron: Transformer Engine's GEMM precision (fp8, mxfp8, nvfp4); None: BF16
    megatron_fsdp: bool = False  # Megatron: Megatron-FSDP in place of the distributed optimizer
    unmeasured_levers: list[str]
    fits: bool
    peak_fits: bool
    reason: str
    memory_gib: float
    capacity_gib: float
    headroom_gib: float
    margin_gib: float
    memory_parts: dict[str, float]  # GiB by part; which parts exist depends on the engine and layout
    step_time_s: float
    step_parts_s: dict[str, float]  # seconds by part
    tokens_per_s_per_gpu: float
    interval: ExportedInterval
    mfu: float
    usd_per_million_tokens: float | None

    @property
    def levers(self) -> Levers:
        """Its engine's lever block (engines/<name>/levers.py), as the planner's Layout holds it."""
        return engine_named(self.engine).levers_of(**{name: getattr(self, name) for name in UNPULLED})


class PlannedRecipeOffer(Exported):
    """A fitting row as a runnable recipe: the text `plan --emit-recipe RANK` writes, and that command."""
    rank: int  # among the fitting layouts a recipe can run
    text: str
    command: str


class FittingRow(PredictedLayout):
    planned_recipe: PlannedRecipeOffer | None  # None: not a torchtitan table with a recipe to compose from


class MissRow(PredictedLayout):
    note: str  # why this layout that does not fit is shown


class TableData(Exported):
    valid: int  # layouts enumerated
    fitting: int
    capacity_gib: float
    rows: list[FittingRow]  # the fastest fitting layouts, best first
    misses: list[MissRow]


class MeasuredRecipe(Exported):
    """A catalog recipe on this GPU type and count beside the planner's prediction of its own layout."""
    slug: str
    measured: float  # tokens/s per GPU
    held_out_error: float | None
    prediction: PredictedLayout | None  # None: the planner cannot place its layout (`error` says why)
    same_settings: bool = False  # planned with the table's own workload, so it has a rank among the table's layouts
    rank: int | None = None
    allocator_gib: float | None = None  # the prediction without the runtime reserve, as the allocator counts
    error: str | None = Field(None, exclude_if=lambda error: error is None)


class MeasuredRun(Exported):
    """One of our own runs that no recipe holds, beside the planner's prediction of its layout."""
    name: str
    measured: float  # tokens/s per GPU
    memory_gib: float  # the allocator's peak the log printed
    log: str
    held_out_error: float | None
    label: str
    prediction: PredictedLayout
    same_settings: bool
    rank: int | None
    allocator_gib: float


class PublishedNeighbour(Exported):
    """A published entry of the public record near a table's GPU type and count: its author-reported figure beside
    the planner's held-out prediction of exactly its layout (openrecipes.plan.public_record.compare)."""
    slug: str  # the entry's catalog slug; the site links its row on the model's public-record page
    name: str
    gpu_type: str
    gpus: int
    engine: str  # as published (megatron-bridge, torchtitan)
    engine_version: str
    task: str  # pretrain, sft or lora
    precision: str
    seq_length: int
    layout: str  # the degrees as published
    published: float  # tokens/s per GPU, author-reported
    predicted: float | None  # the planner's prediction of that layout; None where it cannot express it
    held_out: float | None  # the same with every fitted value refitted without this entry (heldout.json)
    held_out_error: float | None  # held_out / published - 1
    low: float | None  # the prediction's range
    high: float | None
    reason: str | None  # why the planner cannot express the entry


class PlanTable(Exported):
    """One GPU type and count."""
    gpu_type: str
    variant: str  # the type's default variant: the part the table predicts (hardware/gpus.yaml)
    gpus: int
    command: str  # the `openrecipes plan` command that prints the table
    instance: str | None  # the priced instance
    usd_per_gpu_hour: float | None
    data: TableData
    measured: list[MeasuredRecipe]  # the fastest, at most plan/pages.py's MEASURED_SHOWN
    measured_total: int
    runs: list[MeasuredRun]
    published: list[PublishedNeighbour]  # the model's nearest published entries: same GPU type first, then count


class SkippedSize(Exported):
    """A GPU type and count the planner cannot plan (why, in its words), with the published entries nearest to it."""
    gpu_type: str
    gpus: int
    reason: str
    published: list[PublishedNeighbour]


class CalibrationRow(Exported):
    name: str
    value: str  # as shown, four significant digits
    applies_to: str


class ExportedMargin(Exported):
    """The engine's memory margin (plan/trust.py)."""
    engine: str
    margin: float  # share of the predicted allocator peak a layout must leave free
    basis: str


class ModelPlanExport(Exported):
    """plans/<model>.json: everything one model's Plan page shows."""
    fingerprint: str  # the seal over every input and this content (tune/fingerprint.py): refresh --check checks it
    model: str
    settings: str  # the workload and engine the tables are planned for, in words
    planned_for: str  # which GPU types and counts are planned, and why, in words
    published_entries: int  # the model's published entries with a typed layout in the public record
    engine: str
    tables: list[PlanTable]
    skipped: list[SkippedSize]  # GPU types and counts not planned, with the reason
    calibration: list[CalibrationRow]
    memory_margin: ExportedMargin
