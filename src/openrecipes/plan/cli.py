"""`openrecipes plan`: the ranked predicted layouts of a model on N GPUs (`plan MODEL`), and the planner beside the
public record (`plan compare MODEL`).

tune/ adds `plan emit` and `plan export` to this group: they compose recipes through the renderer (launch/) and the
recipe writer (audit/), rooms above the planner's. `plan emit` takes its request options from here (`with_request`),
and the old spelling `plan MODEL ... --emit-recipe K` reaches it by that flag (`PlanGroup`), importing nothing above.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import wraps
from typing import Annotated

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from typer._click import core as click  # typer vendors click
from typer.core import TyperCommand, TyperGroup

from openrecipes.catalog.paths import default_catalog_root
from openrecipes.catalog.store import Catalog, load_catalog
from openrecipes.engines.registry import names as engine_names
from openrecipes.errors import UserError
from openrecipes.jsonout import json_text
from openrecipes.plan.answer import (
    EngineChoice,
    MeasuredRecipe,
    PublishedFigure,
    default_engine,
    default_workload,
    measured_above,
    published_figures,
    widened,
)
from openrecipes.plan.levers import parse_levers
from openrecipes.plan.predict import PlanRequest, Prediction, ranking
from openrecipes.plan.trust import check_current, memory_margin
from openrecipes.plan.words import marks_legend, short_label

# Non-fitting layouts shown under the fitting ones: enough to see what stops the next-larger layouts.
NON_FITTING_SHOWN = 5
# What the planner answers within the time and memory docs/planning.md states (the largest request, DeepSeek-V3 at
# the three limits, measured on two cores): the public record's largest run is 8,192 GPUs with a global batch of
# 15,360 rows, and a batch beyond 16 rows per GPU adds no layout (16 rows is the largest microbatch planned).
MAX_GPUS = 2**13
MAX_GLOBAL_BATCH = 2**15
MAX_ROW_TOKENS = 2**20
# Terminals narrower than this get the narrow table (unless --wide): one line a row at 80 columns, the columns
# left out named under it; figures never wrap, a long layout label wraps between its words.
WIDE_TABLE = 150
WIDEST = 1_000  # the most a table may take with --wide
WIDE_COLUMNS = ("#", "Layout", "Tokens/GPU", "GiB", "Headroom", "Tokens/s/GPU", "Range", "Basis", "MFU", "$/1M",
                "Fit")
NARROW_COLUMNS = ("#", "Layout", "tok/s/GPU", "Range", "Basis", "GiB", "Fit")
NARROW_LEFT_OUT = ("Tokens/GPU", "Headroom", "MFU", "$/1M", "the largest memory part of a layout that does not fit")
COMPARE_WIDE = ("Entry", "GPUs", "Engine", "Precision", "Layout", "Published", "Held out", "Error", "Range")
COMPARE_NARROW = ("Entry", "GPUs", "Layout", "Published", "Held out", "Error")
COMPARE_TEXT = ("Entry", "Engine", "Precision", "Layout")
PLAN_MODEL = "model"  # the command `plan MODEL` runs, hidden from `plan --help` (the group's help shows its usage)
# Flags of the old spellings `plan MODEL ... --FLAG`, and the command each one is now (`--out` was --emit-recipe's).
OLD_SPELLINGS = {"--emit-recipe": "emit", "--out": "emit", "--compare-published": "compare"}
MODEL_HELP = "model name, as in models/*.yaml (e.g. gpt-oss-20b)"


class PlanGroup(TyperGroup):
    """`plan COMMAND ...` runs the command; any other first word is the model that `plan MODEL ...` plans (and names
    the command in a usage error: `see openrecipes plan MODEL --help`), or that an old spelling's flag hands to its
    command with the rest of the words."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                               list[str]]:
        if args and args[0] not in self.commands:
            flags = {word.partition("=")[0] for word in args}
            name = next((name for flag, name in OLD_SPELLINGS.items() if flag in flags and name in self.commands),
                        None)
            return (name, self.commands[name], args) if name else (args[0], self.commands[PLAN_MODEL], args)
        return super().resolve_command(ctx, args)


class PlannedModel(TyperCommand):
    """The command `plan MODEL` runs: its usage line is `openrecipes plan MODEL [OPTIONS]`, the model already in
    the command's path (PlanGroup names it so)."""

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return [self.options_metavar or ""]


app = typer.Typer(
    cls=PlanGroup, subcommand_metavar="MODEL [OPTIONS] | COMMAND [ARGS]",
    help="Predict the ranked layouts of MODEL on N GPUs: `openrecipes plan MODEL --gpu TYPE --gpus N` (see "
         "`openrecipes plan MODEL --help` for its options); the commands below compare the planner with the public "
         "record and write a planned recipe or the Plan pages' tables.")


def register(parent: typer.Typer) -> None:
    parent.add_typer(app, name="plan")


Asked = tuple[PlanRequest, EngineChoice, Catalog]  # a request as asked, why its engine, the catalog it was read in


def ask(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    gpu: Annotated[str | None, typer.Option("--gpu", help="GPU type (its default variant, the part a user rents: "
                                            "H100, H200) or a variant id of hardware/gpus.yaml "
                                            "(H100-SXM-96GB-500W)")] = None,
    gpus: Annotated[int | None, typer.Option("--gpus", help="GPU count")] = None,
    row_tokens: Annotated[int | None, typer.Option(
        "--row-tokens", min=1, max=MAX_ROW_TOKENS,
        help="tokens per training row (default: the model's recipes', else 8192)")
    ] = None,
    global_batch: Annotated[int | None, typer.Option(
        "--global-batch", min=1, max=MAX_GLOBAL_BATCH,
        help="rows per optimizer step (default: the model's recipes', else 128)")
    ] = None,
    engine: Annotated[str | None, typer.Option(
        "--engine", help="megatron or torchtitan (default: the engine that runs the model's recipes here)")] = None,
    grad_reduce_bf16: Annotated[bool, typer.Option(
        "--grad-reduce-bf16", help="BF16 gradient buffers (Megatron --grad-reduce-in-bf16, as the gpt-oss seeds use)"),
    ] = False,
    kernels: Annotated[str | None, typer.Option(
        "--kernels", help="torchtitan: Liger-Kernel kernels on every layout, comma-separated (e.g. "
        "liger-rmsnorm,liger-fused-linear-cross-entropy); default: each measured on the GPU type, and none")] = None,
    attention: Annotated[str | None, typer.Option(
        "--attention", help="torchtitan: attention backend (sdpa-cudnn, sdpa-flash, sdpa-efficient, flex)")] = None,
    float8: Annotated[str | None, typer.Option(
        "--float8", help="torchtitan: FP8 linear layers with this scaling (tensorwise, rowwise), `measured` for BF16 "
        "and each scaling measured on the GPU type, `none` for BF16 only (the default)")] = None,
    precision: Annotated[str | None, typer.Option(
        "--precision", help="Megatron: every layout's block GEMMs in fp8 (delayed or current scaling), mxfp8 or nvfp4 "
        "(Blackwell), timed by the speed-up fitted on the public record; default BF16")] = None,
) -> Asked:
    """The request of each command that plans a model on N GPUs (`plan MODEL`, `plan emit`), checked."""
    check_current()
    if gpu is None or gpus is None:
        raise UserError("give --gpu TYPE and --gpus N (e.g. openrecipes plan gpt-oss-20b --gpu H200 --gpus 8)")
    model, gpu, variant = _names(model, gpu)
    if not 1 <= gpus <= MAX_GPUS:
        raise UserError(f"--gpus {gpus}: give 1 to {MAX_GPUS:,} GPUs (the planner's limit, docs/planning.md)")
    if engine is not None and engine not in engine_names():
        raise UserError(f"--engine {engine}: use {' or '.join(engine_names())}")
    catalog = load_catalog(default_catalog_root())
    choice = (EngineChoice(engine, "asked with --engine") if engine is not None
              else default_engine(catalog, model))
    workload = default_workload(catalog, model)
    levers, search = parse_levers(kernels, attention, float8)
    request = PlanRequest(model, gpu, gpus, row_tokens or workload.row_tokens, global_batch or workload.global_batch,
                          choice.engine, grad_reduce_bf16, **levers, search=search, low_precision=precision,
                          variant=variant)
    if row_tokens is None or global_batch is None:
        choice = EngineChoice(choice.engine, f"{choice.reason}; {workload.reason}")
    return request, choice, catalog


def with_request(command: Callable[..., None]) -> Callable[..., None]:
    """`command(asked, **its own options)` as typer reads a command: `ask`'s parameters (MODEL and the request's
    options) and then the command's own, in one signature, so that the long option list is written once."""
    shared = inspect.signature(ask, eval_str=True).parameters
    own = list(inspect.signature(command, eval_str=True).parameters.values())[1:]
    run = wraps(command)(lambda **given: command(ask(**{name: given.pop(name) for name in shared}), **given))
    params = [p.replace(kind=p.KEYWORD_ONLY) for p in [*shared.values(), *own]]
    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return run


def plan(
    asked: Asked,
    top: Annotated[int | None, typer.Option("--top", min=0, max=10**6, help="fitting layouts to show (0: all; "
                                                                            "default 20)")] = None,
    layout: Annotated[str | None, typer.Option(
        "--layout", help="predict exactly this layout instead of ranking them all, in the words of the table's "
        "Layout column: \"TP4 PP8 VP5 CP2 EP8 MB1 full\" (degrees TP PP VP CP EP ETP, DP optional, MB rows per "
        "microbatch, recompute none/sel/full, the engine's levers)")] = None,
    wide: Annotated[bool, typer.Option("--wide", help="every column, however narrow the terminal")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="print every ranked layout (or --top of them) as JSON")] = False,
) -> None:
    """Predict memory and speed of every valid layout and rank them: fitting layouts by tokens/s per GPU,
    then the ones that do not fit with the reason. Exit 2 on bad input."""
    request, choice, catalog = asked
    if layout is not None:
        _plan_given(asked, layout, top, wide, as_json)
        return
    # --json prints every layout; the terminal NON_FITTING_SHOWN misses at most, so no other's step is worked out
    ranked_layouts = ranking(request, None if as_json else NON_FITTING_SHOWN)
    ranked = ranked_layouts.predictions
    if not any(p.peak_fits for p in ranked):
        closest = ranked[0]  # the ones that do not fit come closest first
        raise UserError(f"no layout of {request.model} fits {request.gpus} x {request.gpu_type} ({request.engine}): "
                        f"the closest, {short_label(closest.layout)}, needs {closest.memory.total_gib:,.1f} GiB per "
                        f"GPU of {closest.capacity_gib:.1f}; plan more GPUs or shorter rows")
    published = published_figures(catalog, request, ranked)
    if as_json:
        rows = [p.exported() for p in ranked[:top or None]]
        print(json_text([row.model_copy(update={"interval": row.interval.model_copy(update=vars(widened(
            p.interval, p.tokens_per_s_per_gpu, published)))}) for p, row in zip(ranked, rows, strict=False)]))
        return
    top = 20 if top is None else top
    fitting = [p for p in ranked if p.fits]
    shown = (fitting[:top] if top else fitting) + [p for p in ranked if not p.fits][:NON_FITTING_SHOWN]
    title = (f"{request.model} on {request.gpus} x {ranked[0].variant}, {request.engine} ({choice.reason}): "
             f"{len(fitting):,} of {ranked_layouts.valid:,} valid layouts fit; predicted, not measured")
    _print_table(Console(), request, title, shown, wide, measured_above(catalog, request, ranked), published)


def _plan_given(asked: Asked, text: str, top: int | None, wide: bool, as_json: bool) -> None:
    """`plan MODEL ... --layout TEXT`: exactly that layout, predicted alone, and why it does or does not fit."""
    from openrecipes.plan.given import predicted

    request, choice, _ = asked
    if top is not None:
        raise UserError("--layout predicts one layout; --top ranks them all: leave one of them out")
    fixed = [name for name, value in (("--kernels", request.kernels), ("--attention", request.attention),
                                      ("--float8", request.float8), ("--precision", request.low_precision)) if value]
    if fixed:
        raise UserError(f"--layout names its levers itself: write them in it and leave out {', '.join(fixed)}")
    prediction = predicted(request, text)
    if as_json:
        print(json_text([prediction.exported()]))
        return
    console = Console()
    title = (f"{request.model} on {request.gpus} x {prediction.variant}, {request.engine} ({choice.reason}): the "
             "layout given, predicted, not measured")
    _print_table(console, request, title, [prediction], wide, [], [])
    parts = ", ".join(f"{name.replace('_', ' ')} {gib:.1f}" for name, gib in prediction.memory.parts_gib().items())
    console.print(f"memory per GPU (GiB): {parts}")
    console.print(f"{prediction.reason}")


def compare(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    old_spelling: Annotated[bool, typer.Option("--compare-published", hidden=True)] = False,
    wide: Annotated[bool, typer.Option("--wide", help="every column, however narrow the terminal")] = False,
) -> None:
    """Print every published entry of MODEL beside the planner's prediction of its own layout. Exit 2 on bad
    input."""
    from openrecipes.catalog.names import model_name
    from openrecipes.plan.public_record import compared

    catalog = load_catalog(default_catalog_root())
    model = model_name(model, catalog.tables)
    rows = compared(catalog, model)
    if not rows:
        raise UserError(f"--compare-published: the catalog has no published entry of {model} with a layout "
                        "(docs/public-record.md)")
    console = Console()
    narrow = not wide and console.width < WIDE_TABLE
    table = _table(f"{model}: {len(rows)} published entries beside the planner's prediction of each one's own "
                   "layout (held out: refitted without that entry; the range is today's)", narrow)
    headers = COMPARE_NARROW if narrow else COMPARE_WIDE
    for header in headers:
        table.add_column(header, justify="left" if header in COMPARE_TEXT else "right",
                         no_wrap=header not in COMPARE_TEXT, overflow="fold", ratio=1 if header == "Entry" else None)
    unexpressed: dict[str, int] = {}
    for r in rows:
        cells = {"Entry": r.name.removeprefix("record-"), "GPUs": f"{r.gpus:,} x {r.gpu_type}", "Engine": r.engine,
                 "Precision": r.precision, "Layout": r.layout, "Published": f"{r.published:,.0f}"}
        if r.error is not None and r.held_out is not None:
            cells |= {"Held out": f"{r.held_out:,.0f}", "Error": f"{r.error:+.1%}",
                      "Range": f"{r.low:,.0f}-{r.high:,.0f}"}
        else:
            reason = r.reason or "no reason given"
            unexpressed[reason] = unexpressed.get(reason, 0) + 1
            cells |= {"Held out": "-", "Error": "-", "Range": "-"}
        table.add_row(*(cells[h] for h in headers))
    _print_wide(console, table, narrow)
    if narrow:
        left_out = [h for h in COMPARE_WIDE if h not in COMPARE_NARROW]
        console.print(f"Left out at {console.width} columns: {', '.join(left_out)}; --wide shows them all")
    for reason, count in unexpressed.items():
        console.print(f"-: not expressed: {reason} ({count} {'entry' if count == 1 else 'entries'})")


def _names(model: str, gpu: str) -> tuple[str, str, str]:
    """The canonical spellings of a model and a GPU as typed (any case, `-` or `_`, or the card's file name), among
    the planner's tables (the catalog's and its reference points'): the model, the GPU type and its variant (a
    type means its default variant, the part a user rents; a variant id selects that variant)."""
    from openrecipes.catalog.hardware import resolve_gpu
    from openrecipes.catalog.names import gpu_name, model_name
    from openrecipes.plan.points import reference_tables

    tables = reference_tables()
    by_id = {name.lower(): name for name in tables.variants}
    if gpu.lower() in by_id:
        gpu_type, variant = resolve_gpu(by_id[gpu.lower()], tables)
    else:
        try:
            gpu_type, variant = resolve_gpu(gpu_name(gpu, tables), tables)
        except UserError:
            resolve_gpu(gpu, tables)  # raises, listing every type and variant
            raise
    return model_name(model, tables), gpu_type, variant


def _print_table(console: Console, request: PlanRequest, title: str, rows: list[Prediction], wide: bool,
                 measured: list[MeasuredRecipe], published: list[PublishedFigure]) -> None:
    """The rows as a table: at a narrow terminal one line each, the columns that do not fit left out and named."""
    margin = memory_margin(request.engine)
    intervals = [widened(p.interval, p.tokens_per_s_per_gpu, published) for p in rows]
    bases = list(dict.fromkeys(interval.basis for interval in intervals))
    labels = [short_label(m.layout) for m in measured] + [short_label(p.layout) for p in rows]
    narrow = not wide and console.width < WIDE_TABLE
    capacity = rows[0].capacity_gib if rows else 0.0
    caption = (f"{request.row_tokens:,}-token rows, global batch {request.global_batch:,}; Layout: "
               f"{marks_legend(labels)}\nGiB: predicted peak per GPU, capacity {capacity:.1f} GiB; fits: leaves "
               f"{margin.margin:.1%} of the predicted allocator peak free ({margin.basis}); margin: below capacity, "
               f"inside that margin\n{_bases_text(bases)}; --json has every part")
    table = _table(title, narrow, caption)
    headers = NARROW_COLUMNS if narrow else WIDE_COLUMNS
    for header in headers:
        table.add_column(header, justify="left" if header in ("Layout", "Fit") else "right",
                         no_wrap=header != "Layout", ratio=1 if header == "Layout" else None)
    for m in measured:
        cells = {"#": "M", "Layout": short_label(m.layout), "Tokens/s/GPU": f"{m.tokens_per_s_per_gpu:,.1f}",
                 "tok/s/GPU": f"{m.tokens_per_s_per_gpu:,.0f}", "Fit": "measured"}
        table.add_row(*(cells.get(h, "") for h in headers))
    for rank, (p, interval) in enumerate(zip(rows, intervals, strict=True), 1):
        lay = p.layout
        span = f"{interval.low:,.0f}-{interval.high:,.0f}" + ("" if interval.constrained else "*")
        cells = {"#": str(rank) if p.fits else "-", "Layout": short_label(lay),
                 "Tokens/GPU": f"{lay.max_tokens_per_gpu:,}", "GiB": f"{p.memory.total_gib:.1f}",
                 "Headroom": f"{p.headroom_gib:.1f}",
                 "Tokens/s/GPU": f"{p.tokens_per_s_per_gpu:,.1f}", "tok/s/GPU": f"{p.tokens_per_s_per_gpu:,.0f}",
                 "Range": span, "Basis": str(bases.index(interval.basis) + 1), "MFU": f"{p.mfu:.1%}",
                 "$/1M": f"{p.usd_per_million_tokens:.2f}" if p.usd_per_million_tokens is not None else "-",
                 "Fit": ("yes" if p.fits else p.short_reason) if not narrow else _fit_word(p)}
        table.add_row(*(cells[h] for h in headers))
    # --wide at a narrow terminal: the table at its own width (the terminal folds its lines), never squeezed
    _print_wide(console, table, narrow)
    if narrow:
        console.print(f"Left out at {console.width} columns: {', '.join(NARROW_LEFT_OUT)}; --wide shows them all")
    for m in measured:
        console.print(f"M: measured recipe {m.slug.rsplit('/', 1)[-1]}, faster than the planner's best fitting "
                      "prediction")
    for figure in published:
        console.print(f"published: {figure.tokens_per_s_per_gpu:,.1f} tokens/s per GPU for {request.model} on "
                      f"{request.gpus} x {request.gpu_type} ({figure.source}); the planner's best is "
                      f"{figure.ratio:.2f}x it, and every range is widened to hold it")
    if any(not interval.constrained for interval in intervals):
        console.print("* no measured point constrains this layout: the range is wide (see the caption)")
    unmeasured = sorted({name for p in rows for name in p.step.unmeasured_levers})
    if unmeasured:
        console.print(f"time effect unmeasured (predicted as without them): {', '.join(unmeasured)}; memory: "
                      "docs/planning.md, levers")
    datasheet = sorted({p.step.datasheet_precision for p in rows if p.step.datasheet_precision})
    if datasheet:
        console.print(f"{', '.join(name.upper() for name in datasheet)} gain predicted from the datasheet's peak, "
                      f"not measured on {rows[0].variant}: docs/planning.md, compute by operator")


def _table(title: str, narrow: bool, caption: str | None = None) -> Table:
    """A table; at a narrow terminal without borders, for the columns' room: one space between columns, a rule
    under the header, as wide as the terminal."""
    if narrow:
        return Table(title=title, caption=caption, title_justify="left", caption_justify="left", box=box.SIMPLE_HEAD,
                     show_edge=False, pad_edge=False, padding=(0, 0), expand=True)
    return Table(title=title, caption=caption, title_justify="left", caption_justify="left")


def _print_wide(console: Console, table: Table, narrow: bool) -> None:
    """The narrow table at the terminal's width; the wide one (--wide, or a wide terminal) at its own, never squeezed
    (the terminal folds what is wider)."""
    width = console.measure(table, options=console.options.update_width(WIDEST)).maximum
    (Console(width=width) if not narrow and width > console.width else console).print(table)


def _fit_word(prediction: Prediction) -> str:
    """The narrow table's Fit: yes, margin (the peak fits inside the memory margin) or no."""
    return "yes" if prediction.fits else "margin" if prediction.peak_fits else "no"


def _bases_text(bases: list[str]) -> str:
    """Each range basis once, numbered as the Basis column numbers it: the sentences every basis shares first, then
    what each one adds (a doubling, a published figure), so that nothing is printed twice."""
    parts = [basis.split("; ") for basis in bases]
    shared = 0
    while all(len(p) > shared and p[shared] == parts[0][shared] for p in parts):
        shared += 1
    head = "; ".join(parts[0][:shared])
    own = ["that range" + "".join(f", but {part}" for part in p[shared:]) for p in parts]
    if len(bases) == 1:
        return f"Range (Basis 1): {bases[0]}"
    return (f"Range: {head}; Basis " if head else "Range: Basis ") + "; ".join(
        f"{n}: {text}" for n, text in enumerate(own, 1))


app.command(PLAN_MODEL, hidden=True, cls=PlannedModel, epilog="The other commands: `openrecipes plan compare MODEL`, "
            "`plan emit MODEL ... --rank K --out FILE`, `plan export --out DIR` (`openrecipes plan --help`).")(
    with_request(plan))
app.command("compare")(compare)
