"""The typed recipe: the single source of the catalog's schema (schema/recipe.schema.yaml is generated from it).

Key names are the seed pages' YAML keys; every field carries the description the JSON Schema publishes.
"""

from __future__ import annotations

import datetime
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

from openrecipes.engines import registry
from openrecipes.engines.registry import PublishedFramework

Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$", description="a sha256 digest: 64 lowercase hex digits")]
# Every number is bounded by what its field can mean, and integers stay exact as floats, so no figure computed from
# a recipe can overflow; non-finite floats (.inf, .nan) are refused by the model config. Numbers are strict: text
# such as '017', '1_000' or '0x1F' (numbers in YAML 1.1, text to this reader) is an error, never read as a number.
MAX_COUNT = 2**53
MAX_DEGREE = 2**20  # GPUs, parallel degrees, GB of one GPU
PositiveInt = Annotated[int, Field(ge=1, le=MAX_COUNT, strict=True)]
NonNegativeInt = Annotated[int, Field(ge=0, le=MAX_COUNT, strict=True)]
Degree = Annotated[int, Field(ge=1, le=MAX_DEGREE, strict=True)]
Figure = Annotated[float, Field(gt=0, le=1e15, strict=True)]
Url = Annotated[str, Field(pattern=r"^https?://\S+$")]


class Strict(BaseModel):
    # A misspelt key must be an error, not a silently ignored field.
    model_config = ConfigDict(extra="forbid", strict=False, str_strip_whitespace=False, allow_inf_nan=False)


class Gpu(Strict):
    type: str = Field(description="GPU type, the `type` of a row of hardware/gpus.yaml (e.g. H200, B200)")
    variant: str = Field(description="the hardware variant it ran on, a key of hardware/gpus.yaml of that type "
                         "(e.g. H200-SXM-141GB)")
    memory_gb: Degree = Field(description="memory of one GPU in GB, as the vendor states it")
    count: Degree = Field(description="GPUs the run used")
    per_node: Degree = Field(description="GPUs per node")
    instance: str = Field(description="the priced instance, a key of hardware/instances.yaml (e.g. AWS p5en.48xlarge)")


class Author(Strict):
    name: str = Field(description="who measured the recipe")
    url: Url | None = Field(description="where to cite the author; null when the recipe's own page is the citation")


class Stack(Strict):
    framework: str = Field(description="training framework and version (e.g. slime 0.3.0, torchtitan 0.2.2)")
    torchtitan: str | None = Field(None, description="torchtitan version, for torchtitan recipes")
    megatron_lm: str | None = Field(None, description="Megatron-LM commit and megatron-core version")
    transformer_engine: str | None = Field(None, description="Transformer Engine version")
    pytorch: str = Field(description="PyTorch version and build")
    cuda: str = Field(description="CUDA version (quote it: '12.9')")
    nccl: str | None = Field(None, description="NCCL version, as printed by the measured run")
    deepep: str | None = Field(None, description="DeepEP version, if installed")
    python: str = Field(description="Python version")
    network: str = Field(description="GPUs per node and the interconnect")
    source: str = Field(description="where these versions were read")


class Build(Strict):
    name: str = Field(description="name of the row build")
    tokenizer: str = Field(description="tokenizer, revision and tokenizer.json sha256")
    loss_mask: str = Field(description="loss-mask rule of the chat format (gpt_oss, glm5, qwen3, chatml, template)")
    rows: PositiveInt = Field(description="rows built")
    row_tokens: PositiveInt = Field(description="tokens in every row")
    padding_tokens: NonNegativeInt = Field(description="padding tokens in the build (0 for packed rows)")
    seed: int = Field(ge=-(2**63), le=2**64 - 1, strict=True,
                      description="seed of the global permutation of conversations")
    packing: str = Field(description="how conversations become rows")
    supervised_token_ratio: float | None = Field(
        ge=0, le=1, strict=True, description="fraction of tokens with a loss target; null in a planned recipe whose "
        "rows are not built yet")
    parquet_sha256: Sha256 | None = Field(
        description="sha256 of rows.parquet; null in a planned recipe whose rows are not built yet")
    parquet_bytes: PositiveInt | None = Field(
        description="size of rows.parquet in bytes; null in a planned recipe whose rows are not built yet")
    builder: str = Field(description="the program that built the rows (in a planned recipe: the command that "
                         "builds them)")


class Dataset(Strict):
    name: str = Field(description="dataset name")
    source: str = Field(description="where the dataset comes from (e.g. a Hugging Face repo id)")
    revision: str | None = Field(None, description="dataset revision (commit)")
    license: str = Field(description="dataset license")
    rows_sha256: Sha256 | None = Field(description="sha256 of the rows' token ids and loss masks (data/README.md); "
                                       "null in a planned recipe whose rows are not built yet")
    build: Build = Field(description="how the rows were built")


class Workload(Strict):
    row_tokens: PositiveInt = Field(description="tokens per training row (sequence length)")
    rows: str = Field(description="what a row holds")
    global_batch: PositiveInt = Field(description="rows per optimizer step")
    precision: Literal["bf16", "fp16", "fp8", "fp32"] = Field(description="training precision")
    dataset: Dataset = Field(description="the training data")


class LayerSplit(Strict):
    first: PositiveInt = Field(description="layers on the first pipeline stage")
    last: PositiveInt = Field(description="layers on the last pipeline stage")


class Recompute(Strict):
    granularity: Literal["full", "selective"] = Field(description="activation recompute granularity")
    method: str | None = Field(None, description="recompute method (uniform, block; op for torchtitan selective)")
    num_layers: PositiveInt | None = Field(None, description="layers per recompute unit")


class Offload(Strict):
    optimizer_fraction: float = Field(gt=0, le=1, strict=True,
                                      description="fraction of optimizer state updated on the CPU")
    overlap_d2h_h2d: bool = Field(description="device/host copies overlapped with compute")


# Fused kernels from Liger-Kernel the torchtitan entry module swaps into the model, in their canonical order, and the
# attention backends it can pin; null attention keeps torchtitan's default (SDPA trying cuDNN, then Flash, then math).
Kernel = Literal["liger-rmsnorm", "liger-swiglu", "liger-rope", "liger-fused-linear-cross-entropy"]
KERNELS: tuple[str, ...] = get_args(Kernel)
Attention = Literal["sdpa-cudnn", "sdpa-flash", "sdpa-efficient", "flex"]
ATTENTION_BACKENDS: tuple[str, ...] = get_args(Attention)
Float8Scaling = Literal["tensorwise", "rowwise"]
FLOAT8_SCALINGS: tuple[str, ...] = get_args(Float8Scaling)


class Float8(Strict):
    """torchao's float8 training of the linear layers, as torchtitan's float8 model converter applies it."""

    scaling: Float8Scaling = Field(
        description="how FP8 scales are taken: one per tensor, or one per row (more accurate, slower)")
    fsdp_float8_all_gather: bool = Field(
        False, description="FSDP all-gathers the weights in FP8 instead of BF16 (tensorwise scaling only)")
    precomputed_scales: bool = Field(
        False, description="the FP8 weight scales of every layer computed by one all-reduce after the optimizer step "
        "(needs fsdp_float8_all_gather)")
    skip: list[str] = Field(
        default_factory=list, description="module names kept in BF16 (torchtitan's filter_fqns, e.g. [output])")

    @model_validator(mode="after")
    def _torchtitan_rules(self) -> Float8:
        if self.fsdp_float8_all_gather and self.scaling != "tensorwise":
            raise ValueError("fsdp_float8_all_gather needs scaling: tensorwise (torchtitan gathers FP8 weights only "
                             "with one scale per tensor); set it to false or use tensorwise")
        if self.precomputed_scales and not self.fsdp_float8_all_gather:
            raise ValueError("precomputed_scales acts on FP8-gathered weights only; set fsdp_float8_all_gather: true "
                             "or precomputed_scales: false")
        return self


# The layout field that states each lever a recipe's fields can pull (Layout.stated_levers).
LEVER_FIELDS = {"compile": "compile", "kernels": "kernels", "attention": "attention", "float8": "float8",
                "offload_fraction": "offload"}


class Layout(Strict):
    label: str = Field(description="short layout label (e.g. TP4 PP2 CP4 EP32 DP2)")
    summary: str = Field(description="the layout in one sentence")
    highlights: str = Field(description="what stands out, for the leaderboard")
    tp: Degree = Field(description="tensor-parallel size")
    pp: Degree = Field(description="pipeline-parallel size")
    vpp: Degree = Field(description="virtual pipeline stages per rank")
    cp: Degree = Field(description="context-parallel size")
    ep: Degree = Field(description="expert-parallel size")
    etp: Degree = Field(description="expert tensor-parallel size")
    dp: Degree = Field(description="data-parallel size; TP*PP*CP*DP is the GPU count")
    fsdp: Degree | None = Field(None, description="FSDP shard degree (torchtitan); null for Megatron")
    sequence_parallel: bool = Field(description="Megatron sequence parallelism")
    layer_split: LayerSplit | None = Field(description="uneven pipeline split; null for an even split")
    max_tokens_per_gpu: PositiveInt = Field(description="tokens one GPU holds in a microbatch")
    rows_per_microbatch: PositiveInt = Field(description="rows per microbatch = max tokens per GPU * CP / row tokens")
    recompute: Recompute | None = Field(description="activation recompute; null for none")
    offload: Offload | None = Field(description="optimizer CPU offload; null for none")
    dispatcher: str | None = Field(description="MoE token dispatcher (alltoall, allgather, flex); null for dense")
    compile: bool | None = Field(None, description="torch.compile on (torchtitan recipes)")
    kernels: list[Kernel] = Field(
        default_factory=list, description="Liger-Kernel fused kernels swapped into the model (torchtitan recipes), "
        f"each once, in the order {', '.join(KERNELS)}; [] for none")
    attention: Attention | None = Field(
        None, description="attention backend pinned (torchtitan recipes); null keeps torchtitan's default (SDPA "
        "trying cuDNN, then Flash, then math)")
    float8: Float8 | None = Field(
        None, description="FP8 training of the linear layers (torchtitan recipes); given exactly when "
        "workload.precision is fp8")

    def stated_levers(self) -> dict[str, object]:
        """The levers its fields pull, by lever name (engines/levers.py): what its engine's lever block is built
        from, with the levers only the run command carries (the engine's runner reads those)."""
        return {"compile": bool(self.compile), "kernels": tuple(self.kernels), "attention": self.attention,
                "float8": self.float8.scaling if self.float8 else None,
                "offload_fraction": self.offload.optimizer_fraction if self.offload else 0.0}

    @field_validator("kernels")
    @classmethod
    def _kernels_once_in_order(cls, kernels: list[str]) -> list[str]:
        canonical = [kernel for kernel in KERNELS if kernel in kernels]
        if kernels != canonical:
            raise ValueError(f"list each kernel once, in the order {', '.join(KERNELS)}: write "
                             f"[{', '.join(canonical)}]")
        return kernels


class ActiveParams(Strict):
    count: PositiveInt = Field(description="active parameters per token (N of 6*N MFU)")
    source: str = Field(description="where the count comes from")
    revision: str | None = Field(description="model revision the count is for")


class Result(Strict):
    tokens_per_s_per_gpu: Figure = Field(description="measured training tokens/s per GPU")
    usd_per_million_tokens: Figure = Field(
        description="$ per 1M tokens at the instance's on-demand price (figures.py)"
    )
    step_time_cv_percent: float | None = Field(
        ge=0, le=1e6, strict=True, description="step-time CV over the window, percent; null in a planned recipe")
    mfu: float = Field(gt=0, lt=1, strict=True, description="6*N*tokens/s/GPU / peak dense BF16 FLOP/s")
    mfu_note: str | None = Field(description="how to read the MFU, if it needs a note")
    active_params: ActiveParams = Field(description="N used for the MFU")
    measured: datetime.date | None = Field(description="date of the measured run; null in a planned recipe")
    steps_per_run: PositiveInt = Field(description="optimizer steps in the measured run")
    window: tuple[NonNegativeInt, NonNegativeInt] = Field(
        description="first and last step scored, steps numbered from 0, both included"
    )
    window_tokens: PositiveInt = Field(description="tokens in the window = steps * global batch * row tokens")
    runs: PositiveInt = Field(description="runs the figure comes from")
    profiler: bool = Field(description="a profiler was on during the measured run")
    gpu_hours: Figure = Field(description="GPU-hours the run took")
    gpu_hours_note: str = Field(description="what the GPU-hours count")
    reference_tokens_per_s_per_gpu: Figure | None = Field(
        None, description="tokens/s per GPU of the reference arm, measured in the same job"
    )


class ComponentTest(Strict):
    test: str = Field(description="what was tested")
    shape: str = Field(description="the shape it ran at")
    gpu: str = Field(description="GPU type it ran on")
    date: datetime.date = Field(description="when it ran")
    result: Literal["pass", "fail"] = Field(description="verdict")
    detail: str = Field(description="the measured errors against their bounds")


class Convergence(Strict):
    steps: PositiveInt = Field(description="steps compared")
    result: Literal["pass", "fail"] = Field(description="verdict")
    correlation: float = Field(ge=-1, le=1, strict=True, description="Pearson correlation of the loss curves")
    final_loss_difference: float = Field(ge=0, strict=True, description="relative difference of the final losses")
    pointwise_failures: NonNegativeInt = Field(description="steps outside the pointwise tolerance")
    note: str = Field(description="what the two arms were")


class Correctness(Strict):
    result: Literal["pass", "fail", "pending"] = Field(description="overall verdict")
    summary: str = Field(description="the verdict in one sentence")
    reference: str = Field(description="the reference recipe the candidate was checked against")
    configuration: str = Field(description="configuration-check verdict")
    component_tests: list[ComponentTest] = Field(description="component tests run for this recipe")
    convergence: Convergence | None = Field(None, description="convergence check against the reference arm")
    rules: str = Field(description="argument classes and thresholds used")


class RunFolders(Strict):
    candidate: str = Field(description="folder of the candidate arm's raw log (train.log), under runs/")
    candidate_sha256: Sha256 | None = Field(
        None, description="sha256 of the candidate's train.log: `openrecipes audit` refuses a swapped or edited log"
    )
    reference: str | None = Field(None, description="folder of the reference arm's raw log, under runs/")
    reference_sha256: Sha256 | None = Field(None, description="sha256 of the reference's train.log")


class ReproductionStack(Strict):
    torch: str | None = Field(None, description="PyTorch version the reproduction's log printed")
    cuda: str | None = Field(None, description="CUDA version")
    nccl: str | None = Field(None, description="NCCL version")
    torchtitan: str | None = Field(None, description="torchtitan version")
    python: str | None = Field(None, description="Python version")


class ReproductionConvergence(Strict):
    result: Literal["pass", "fail"] = Field(description="convergence check of its loss curve against the candidate's")
    correlation: float | None = Field(description="Pearson correlation of the two loss curves")
    final_loss_difference: float | None = Field(description="relative difference of the final losses")


class Reproduction(Strict):
    """Someone ran the recipe again and measured it with the recipe's window: `openrecipes reproduce --write`."""

    date: datetime.date = Field(description="date of the reproduced run (its log's last timestamp)")
    by: str = Field(description="who ran it")
    gpu: str = Field(description="the GPU the run reported (stack line), else the recipe's GPU type")
    stack: ReproductionStack = Field(description="versions the run printed; null where it printed none")
    log: str = Field(description="the reproduction's raw log, relative to the catalog root")
    log_sha256: Sha256 = Field(description="sha256 of that log")
    window: tuple[Annotated[int, Field(ge=0)], Annotated[int, Field(ge=0)]] = Field(
        description="steps scored: the recipe's window, clipped into a shorter run"
    )
    tokens_per_s_per_gpu: float = Field(gt=0, description="reproduced tokens/s per GPU")
    step_time_cv_percent: float = Field(ge=0, description="step-time CV over the window, percent")
    delta_percent: float = Field(description="reproduced over published tokens/s per GPU, minus 1, in percent")
    noise_band_percent: float = Field(gt=0, description="how far a reproduction may land from the published figure "
                                      "by run-to-run noise (docs/trust.md)")
    within_noise_band: bool = Field(description="|delta| <= the noise band")
    convergence: ReproductionConvergence | None = Field(
        description="its loss curve checked against the recipe's candidate log; null when the recipe stores none"
    )
    note: str | None = Field(None, description="what the reproducer wants readers to know")


ENGINE_NAMES: list[JsonValue] = [name for name in registry.names()]  # the schema's choices of `engine`


class Recipe(Strict):
    schema_version: Literal[1] = Field(description="version of this schema")
    model: str = Field(description="model name, the `name` of a card in models/")
    engine: str = Field(description="the engine that runs it, the `name` of an engine of engines/registry.py; its "
                        "`run` command must start that engine", json_schema_extra={"enum": ENGINE_NAMES})
    gpu: Gpu = Field(description="the GPUs")
    author: Author = Field(description="who measured it")
    status: Literal["verified", "measured", "planned"] = Field(
        description="verified: measured and passed its correctness checks; measured: measured by OpenRecipes; "
        "planned: written by `openrecipes plan --emit-recipe`, never run: its result holds the planner's prediction "
        "and it is ranked nowhere"
    )
    stack: Stack = Field(description="software versions of the measured run")
    workload: Workload = Field(description="what is trained: rows, batch, precision, data")
    layout: Layout = Field(description="how the model is placed on the GPUs")
    result: Result = Field(description="the measured figures")
    correctness: Correctness = Field(description="why the figures can be trusted")
    env: dict[str, str] = Field(description="environment variables the run exports (must equal the command's)")
    patches: list[str] = Field(description="patch files the run applies")
    run: str = Field(description="the exact command, its exports included")
    runs: RunFolders | None = Field(None, description="raw logs of both arms under runs/ (our own measured recipes)")
    reproductions: list[Reproduction] = Field(
        default_factory=list, description="independent re-runs measured against this recipe, oldest first"
    )
    notes: str | None = Field(None, description="notes shown with the recipe")

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, engine: str) -> str:
        if engine not in registry.names():
            raise ValueError(f"no engine {engine!r}; name one of {', '.join(registry.names())}")
        return engine

    def revalidated(self) -> Recipe:
        """This recipe read back through the schema: `model_copy(update=...)` assigns fields without checking them,
        so a recipe built that way is checked here before it is used or written."""
        return Recipe.model_validate(self.model_dump())


class SummaryGpu(Strict):
    type: str = Field(description="GPU type, the `type` of a row of hardware/gpus.yaml")
    variant: str = Field(description="the hardware variant it ran on, a key of hardware/gpus.yaml of that type "
                         "(e.g. H100-SXM5-80GB)")
    count: Degree = Field(description="GPUs")


class SummaryResult(Strict):
    tokens_per_s_per_gpu: Figure = Field(description="published tokens/s per GPU")
    usd_per_million_tokens: Figure | None = Field(
        description="published $ per 1M tokens; null where the source publishes no price")


# Training precisions as the public record names them. fp8 is FP8 whose scaling recipe the source does not state;
# fp8-tensorwise and fp8-rowwise are torchao's dynamic (current) scaling per tensor and per row.
PublishedPrecision = Literal["bf16", "fp8", "fp8-current-scaling", "fp8-delayed-scaling", "fp8-blockwise",
                             "fp8-tensorwise", "fp8-rowwise", "mxfp8", "nvfp4"]
PUBLISHED_PRECISIONS: tuple[str, ...] = get_args(PublishedPrecision)
OptionalDegree = Annotated[int | None, Field(ge=1, le=MAX_DEGREE, strict=True)]


class PublishedLayout(Strict):
    """Parallel degrees exactly as the source gives them; null where the source prints n/a or has no column.
    The data-parallel size is derived, never stored: catalog/published.py derives it and labels the layout."""

    tp: Degree = Field(description="tensor-parallel size")
    pp: Degree = Field(description="pipeline-parallel size")
    vp: OptionalDegree = Field(description="virtual pipeline stages per rank; null where n/a")
    cp: Degree = Field(description="context-parallel size")
    ep: OptionalDegree = Field(description="expert-parallel size; null where n/a (dense models)")
    etp: OptionalDegree = Field(description="expert tensor-parallel size; null where not published")
    fsdp: Annotated[int | None, Field(ge=0, le=MAX_DEGREE, strict=True)] = Field(
        description="Megatron-Bridge: its FSDP column (0 = DDP, else the sharding group size #GPUs/(TP*PP)); "
        "torchtitan: the FSDP shard degree; null where the source has no such column")


class PublishedReference(Strict):
    """Where exactly a published figure was copied from."""

    repository: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", description="GitHub owner/name")
    path: str = Field(description="file path inside the repository")
    commit: str = Field(pattern=r"^[0-9a-f]{40}$", description="the commit the file was read at")
    table: str = Field(description="the table: its section headings and caption, as the source writes them")
    row: str = Field(description="the row, cell by cell as the source writes it")
    line: PositiveInt = Field(description="line of the row in the file at that commit")


class ExcerptDerivation(Strict):
    """How an entry's tokens/s per GPU follows from the lines of its source kept in a stored excerpt
    (data/record-sources/), with the raw numbers it used: `openrecipes audit` re-derives it from the excerpt."""

    excerpt: str = Field(description="the stored excerpt, relative to the catalog root")
    excerpt_sha256: Sha256 = Field(description="sha256 of the excerpt")
    method: Literal["table-throughput", "mllog-blocks"] = Field(
        description="table-throughput: a table's tokens/s over its GPUs, checked against sequence length x global "
        "batch / step time; mllog-blocks: MLPerf samples over block time x sequence length / GPUs, median of runs")
    formula: str = Field(description="the derivation in words")
    lines: list[PositiveInt] = Field(description="the source's lines the figures were read from")
    step_time_s: Figure | None = Field(None, description="published seconds per step, as written")
    published_tokens_per_s: Figure | None = Field(None, description="published tokens/s of the whole job")
    published_mfu_percent: Figure | None = Field(None, description="published model FLOPs utilisation in percent")
    run_tokens_per_s_per_gpu: list[Figure] = Field(
        default_factory=list, description="MLPerf: each run's tokens/s per GPU, the entry taking their median")
    run_files: list[str] = Field(default_factory=list, description="MLPerf: each run's result file")
    sweep: str | None = Field(None, description="the scale sweep the entry belongs to: one layout at growing counts")
    submitter: str | None = Field(None, description="who submitted or published the run")
    division: Literal["closed", "open"] | None = Field(None, description="MLPerf division")
    audited: bool = Field(False, description="the figure passed an independent review (MLPerf closed division)")


class PublishedRun(Strict):
    """The structured part of a published figure: how it was run, and exactly where it was published."""

    engine: PublishedFramework = Field(description="training framework that produced the figure")
    engine_version: str = Field(description="framework version, commit or container as the source names it")
    task: Literal["pretrain", "sft", "lora"] = Field(description="what was trained")
    model_as_published: str = Field(description="the model's name in the source")
    system_as_published: str = Field(description="the system's name in the source (e.g. DGX-GB200)")
    precision: PublishedPrecision = Field(description="training precision, normalised")
    precision_as_published: str = Field(description="the precision as the source writes it")
    seq_length: PositiveInt = Field(description="sequence length in tokens")
    global_batch: PositiveInt | None = Field(description="sequences per optimizer step; null where not published")
    micro_batch: PositiveInt | None = Field(
        description="Megatron micro batch size; null where not published")
    local_batch: PositiveInt | None = Field(
        description="torchtitan local batch size (sequences per data-parallel rank per step); null for Megatron")
    gradient_accumulation: PositiveInt | None = Field(
        description="gradient-accumulation steps where the source publishes them (its GA column)")
    layout: PublishedLayout = Field(description="parallel degrees")
    recompute: Literal["none", "selective", "full"] | None = Field(
        description="activation recompute as published; null where the source does not say")
    techniques: list[str] = Field(description="other techniques the source names for the row (torch.compile, ...)")
    model_tflops_per_gpu: Figure | None = Field(
        description="published model TFLOP/s per GPU (the source's own FLOPs count); null where not published")
    memory_gib: Figure | None = Field(None, description="published peak memory per GPU in GiB, where published")
    reference: PublishedReference = Field(description="the exact source of the figures")
    derivation: ExcerptDerivation | None = Field(
        None, description="how the figure follows from a stored excerpt of its source; null where copied whole")


class PublishedSummary(Strict):
    """A published figure, copied exactly from its source and never filled in by us (evidence author-reported).
    The seed pages' summaries carry two figures only; entries from the public record add `published`."""

    schema_version: Literal[1] = Field(description="version of this schema")
    kind: Literal["published_summary"] = Field(description="marks a summary entry, not a full recipe")
    model: str = Field(description="model name, the `name` of a card in models/")
    gpu: SummaryGpu = Field(description="the GPUs")
    result: SummaryResult = Field(description="the figures published")
    source: str = Field(description="the page and section the figures were copied from")
    note: str = Field(description="what is and is not known")
    published: PublishedRun | None = Field(
        None, description="how the figure was run and its exact source; null for the seed pages' two-figure summaries")

    @property
    def precision(self) -> str | None:
        """The training precision where the entry states it."""
        return self.published.precision if self.published else None
