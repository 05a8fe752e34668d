"""Checks beyond the schema: layout arithmetic, published figures recomputed, the run command against the fields.

Each check yields Findings (openrecipes.verdict) naming the dotted field, what was found and what is expected, so
a submitter can fix the recipe from the message alone.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from openrecipes import figures
from openrecipes.catalog.command import CommandError, ParsedRun
from openrecipes.catalog.entry_figures import inputs_of
from openrecipes.catalog.hardware import ReferenceTables, variant_issue
from openrecipes.catalog.model import LEVER_FIELDS, Recipe
from openrecipes.catalog.paths import catalog_root, evidence_problem
from openrecipes.catalog.plausibility import Microbatch, implausible, microbatch_beyond, recipe_claim
from openrecipes.catalog.yamlio import YamlDocument
from openrecipes.engines.knowledge import Engine, FlagField
from openrecipes.engines.registry import engine_named, engine_of
from openrecipes.thresholds import PIPELINE_CONVERGENCE  # the thresholds `check convergence` applies, so they agree
from openrecipes.verdict import Finding


@dataclass
class Context:
    recipe: Recipe
    doc: YamlDocument
    tables: ReferenceTables
    command: ParsedRun | CommandError  # the recipe's run script, read once, or why it cannot be read


def check_reference_rows(ctx: Context) -> Iterator[Finding]:
    recipe, tables = ctx.recipe, ctx.tables
    card = tables.models.get(recipe.model)
    if card is None:
        yield Finding.at("model", f"no model card named '{recipe.model}' in models/; known: {', '.join(tables.models)}")
    elif card.active_params.count != recipe.result.active_params.count:
        yield Finding.at(
            "result.active_params.count",
            f"is {recipe.result.active_params.count:,} but the model card {tables.model_files[recipe.model].name} "
            f"says {card.active_params.count:,}; expected {card.active_params.count}",
        )
    if recipe.gpu.type not in tables.gpus:
        yield Finding.at("gpu.type", f"unknown GPU type '{recipe.gpu.type}'; known: {', '.join(tables.gpus)}")
    elif issue := variant_issue(recipe.gpu.type, recipe.gpu.variant, tables):
        yield Finding.at("gpu.variant", issue)
    elif (gpu := tables.variants[recipe.gpu.variant]).memory_gb != recipe.gpu.memory_gb:
        yield Finding.at("gpu.memory_gb", f"is {recipe.gpu.memory_gb} but a {recipe.gpu.variant} has {gpu.memory_gb} "
                          f"GB; expected {gpu.memory_gb}")
    instance = tables.instances.get(recipe.gpu.instance)
    if instance is None:
        yield Finding.at("gpu.instance", f"unknown instance '{recipe.gpu.instance}'; known: "
                                         f"{', '.join(tables.instances)}")
    elif instance.gpu != recipe.gpu.type:
        yield Finding.at("gpu.instance", f"'{recipe.gpu.instance}' has {instance.gpu} GPUs, not {recipe.gpu.type}")


def check_path(ctx: Context) -> Iterator[Finding]:
    """recipes/<model card file name>/<gpu type, lower case>/<name>.yaml, so permalinks follow the data."""
    path = ctx.doc.path.resolve()
    if path.parent.parent.parent.name != "recipes":
        return
    card_file = ctx.tables.model_files.get(ctx.recipe.model)
    if card_file is not None and path.parent.parent.name != card_file.stem:
        yield Finding.at("model", f"the file lies under recipes/{path.parent.parent.name}/ but model "
                          f"'{ctx.recipe.model}' belongs under recipes/{card_file.stem}/; move the file")
    if path.parent.name != ctx.recipe.gpu.type.lower():
        yield Finding.at("gpu.type", f"the file lies under .../{path.parent.name}/ but gpu.type is "
                          f"'{ctx.recipe.gpu.type}'; "
                          f"move it to .../{ctx.recipe.gpu.type.lower()}/")


def check_runs(ctx: Context) -> Iterator[Finding]:
    """Each arm named under runs: holds its raw log inside the catalog, so anyone can recompute the figures."""
    if ctx.recipe.runs is None:
        return
    root = catalog_root(ctx.doc.path)
    for arm in ("candidate", "reference"):
        folder = getattr(ctx.recipe.runs, arm)
        problem = None if folder is None else evidence_problem(root, folder, folder=True)
        if problem:
            yield Finding.at(f"runs.{arm}", problem)


def check_reproduction_logs(ctx: Context) -> Iterator[Finding]:
    """Each reproduction's log is a file inside the catalog's runs/, and a run of its own: its sha256 is none of
    the logs the recipe already cites (the candidate's, the reference's, an earlier reproduction's)."""
    if not ctx.recipe.reproductions:
        return
    root = catalog_root(ctx.doc.path)
    runs = ctx.recipe.runs
    seen = {digest: f"runs.{arm}_sha256" for arm, digest in (("candidate", runs and runs.candidate_sha256),
                                                            ("reference", runs and runs.reference_sha256)) if digest}
    for i, entry in enumerate(ctx.recipe.reproductions):
        problem = evidence_problem(root, entry.log, folder=False)
        if problem:
            yield Finding.at(f"reproductions.{i}.log", problem)
        if entry.log_sha256 in seen:
            yield Finding.at(f"reproductions.{i}.log_sha256", f"is the log of {seen[entry.log_sha256]}: a reproduction "
                              "is a new run, not a log the recipe already cites; remove the entry")
        seen.setdefault(entry.log_sha256, f"reproductions.{i}")


EARLIEST_RUN = datetime.date(2020, 1, 1)  # before Megatron-LM's and torchtitan's releases this catalog runs on


def check_dates(ctx: Context) -> Iterator[Finding]:
    """A measured run happened while the engines existed and not in the future: 1900 or 2099 is a typo."""
    today = datetime.date.today()
    dates = [("result.measured", ctx.recipe.result.measured)]
    dates += [(f"reproductions.{i}.date", entry.date) for i, entry in enumerate(ctx.recipe.reproductions)]
    for field, day in dates:
        if day is not None and not EARLIEST_RUN <= day <= today:
            yield Finding.at(field, f"is {day}, outside {EARLIEST_RUN} to today ({today}); give the date the run was "
                              "measured (its log's first timestamp)")


# The facts only a run or a built dataset has: a planned recipe (never run, its rows maybe not built) leaves them
# null, every other recipe gives them.
MEASURED_FACTS = ("result.measured", "result.step_time_cv_percent")
BUILT_ROWS_FACTS = ("workload.dataset.rows_sha256", "workload.dataset.build.supervised_token_ratio",
                    "workload.dataset.build.parquet_sha256", "workload.dataset.build.parquet_bytes")


def _dotted(recipe: Recipe, field: str) -> object:
    value: object = recipe
    for name in field.split("."):
        value = getattr(value, name)
    return value


def check_own_facts(ctx: Context) -> Iterator[Finding]:
    """A measured recipe states what its run and its rows measured; a planned one states nothing it did not measure:
    no run date, no step-time CV, no reproductions."""
    r = ctx.recipe
    if r.status != "planned":
        for field in (*MEASURED_FACTS, *BUILT_ROWS_FACTS):
            if _dotted(r, field) is None:
                yield Finding.at(field, "is null, but only a planned recipe (never run) may leave it null; give the "
                                 "measured value")
        return
    for field in MEASURED_FACTS:
        if (value := _dotted(r, field)) is not None:
            yield Finding.at(field, f"is {value}, but a planned recipe was never run; make it null")
    if r.reproductions:
        yield Finding.at("reproductions", "a planned recipe was never run, so nobody reproduced it; remove them")


def check_layout(ctx: Context) -> Iterator[Finding]:
    r, lay = ctx.recipe, ctx.recipe.layout
    product = lay.tp * lay.pp * lay.cp * lay.dp
    if product != r.gpu.count:
        expected = figures.data_parallel_size(r.gpu.count, lay.tp, lay.pp, lay.cp)
        yield Finding.at("layout.dp", f"TP*PP*CP*DP = {lay.tp}*{lay.pp}*{lay.cp}*{lay.dp} = {product}, but gpu.count "
                          f"is {r.gpu.count}; expected dp = {expected:g}")
    if (lay.tp * lay.cp * lay.dp) % (lay.ep * lay.etp):
        yield Finding.at("layout.ep", f"EP*ETP = {lay.ep}*{lay.etp} = {lay.ep * lay.etp} does not divide TP*CP*DP = "
                          f"{lay.tp * lay.cp * lay.dp}; choose EP*ETP among its divisors")
    if lay.fsdp is not None and lay.dp % lay.fsdp:
        yield Finding.at("layout.fsdp", f"FSDP {lay.fsdp} does not divide DP {lay.dp} (torchtitan shards within the "
                          "data-parallel ranks, DP = replicas x FSDP); choose a divisor of layout.dp")
    if r.gpu.count > r.gpu.per_node and r.gpu.count % r.gpu.per_node:
        yield Finding.at("gpu.count", f"{r.gpu.count} GPUs is not a whole number of {r.gpu.per_node}-GPU nodes")
    expected_rows = figures.rows_per_microbatch(lay.max_tokens_per_gpu, lay.cp, r.workload.row_tokens)
    if lay.rows_per_microbatch != expected_rows:
        yield Finding.at("layout.rows_per_microbatch", f"is {lay.rows_per_microbatch} but max tokens per GPU * CP / "
                          f"row tokens = {lay.max_tokens_per_gpu}*{lay.cp}/{r.workload.row_tokens}; expected "
                          f"{expected_rows:g}")
    if r.workload.dataset.build.row_tokens != r.workload.row_tokens:
        yield Finding.at("workload.dataset.build.row_tokens", f"is {r.workload.dataset.build.row_tokens} but "
                          f"workload.row_tokens is {r.workload.row_tokens}; expected {r.workload.row_tokens}")
    card = ctx.tables.models.get(r.model)
    if card is None or "layers" not in card.architecture:
        return
    layers = card.layers
    if lay.layer_split is not None:
        middle_stages = lay.pp - 2
        middle = layers - lay.layer_split.first - lay.layer_split.last
        if lay.pp < 2 or (middle_stages == 0 and middle != 0) or (middle_stages > 0 and middle % middle_stages):
            yield Finding.at("layout.layer_split", f"first {lay.layer_split.first} + last {lay.layer_split.last} (+ "
                              f"{max(middle_stages, 0)} even middle stages) does not make the model's {layers} layers "
                              f"over PP {lay.pp}; expected first + last = {layers}" if lay.pp == 2 else
                              f"first + last leave {middle} layers for {middle_stages} middle stages; make it "
                              f"divisible")
    elif layers % (lay.pp * lay.vpp):
        yield Finding.at("layout.pp", f"{layers} layers do not split evenly over PP {lay.pp} x VPP {lay.vpp}; "
                          "give layout.layer_split or choose a divisor")


def check_published_figures(ctx: Context) -> Iterator[Finding]:
    r, res, raw = ctx.recipe, ctx.recipe.result, ctx.doc.raw
    first, last = res.window
    if first > last or last >= res.steps_per_run:
        yield Finding.at("result.window", f"[{first}, {last}] is not inside steps 0..{res.steps_per_run - 1} of the "
                                          f"run")
    expected_tokens = figures.window_tokens(first, last, r.workload.global_batch, r.workload.row_tokens)
    if res.window_tokens != expected_tokens:
        yield Finding.at("result.window_tokens", f"is {res.window_tokens} but (last - first + 1) * global batch * row "
                          f"tokens = ({last} - {first} + 1) * {r.workload.global_batch} * {r.workload.row_tokens}; "
                          f"expected {expected_tokens}")
    # Each stored figure worked out from the stored tokens/s per GPU (those that need the logs have no inputs here).
    inputs = inputs_of(r, ctx.tables)
    for figure in figures.STORED:
        recomputed = figure.of(inputs)
        if recomputed is not None:
            yield from _compare_published(f"result.{figure.name}", recomputed, raw, figure.formula_text)


def check_plausible(ctx: Context) -> Iterator[Finding]:
    """The measured and each reproduced tokens/s per GPU within what the GPU can do at the recipe's precision, and
    the microbatch within the global batch and the GPU's memory (plausibility.py)."""
    r, card = ctx.recipe, ctx.tables.models.get(ctx.recipe.model)
    claimed = [("result.tokens_per_s_per_gpu", r.result.tokens_per_s_per_gpu)]
    claimed += [(f"reproductions.{i}.tokens_per_s_per_gpu", entry.tokens_per_s_per_gpu)
                 for i, entry in enumerate(r.reproductions)]
    for field, tokens in claimed:
        refusal = implausible(recipe_claim(r, tokens, field), card, ctx.tables)
        if refusal is not None:
            yield refusal
            if refusal.field == "workload.precision":
                break  # one precision the part lacks, named once
    lay = r.layout
    batch = Microbatch(lay.rows_per_microbatch, "layout.rows_per_microbatch", lay.dp, r.workload.global_batch,
                       lay.max_tokens_per_gpu, "layout.max_tokens_per_gpu", lay.tp, lay.pp)
    yield from microbatch_beyond(batch, card, ctx.tables.variants.get(r.gpu.variant), r.gpu.variant)


def _compare_published(field: str, recomputed: float, raw: dict[str, str], formula: str) -> Iterator[Finding]:
    text = raw.get(field)
    if text is not None and not figures.within_published_rounding(recomputed, text):
        yield Finding.at(field, f"is {text} but {formula} = {recomputed:.6g}; expected {recomputed:.4g} "
                          f"(within ±{figures.published_half_unit(text):g}, the published rounding)")


def check_command(ctx: Context) -> Iterator[Finding]:
    command = ctx.command
    if isinstance(command, CommandError):
        yield Finding.at("run", f"{command}")
        return
    if not command.argv:
        yield Finding.at("run", "no launch line (python3 ... / torchrun ...) found; the command must start the "
                                "training")
        return
    for flag in command.repeated:
        yield Finding.at("run", f"{flag} is given more than once; keep one")
    yield from _compare_env(ctx.recipe.env, command.exports)
    started = engine_of(command)
    if started is None:
        yield Finding.at("run", f"the launch line starts {' '.join(command.argv[:3])}..., no engine's command; "
                          "a torchtitan recipe runs `torchrun ... -m openrecipes.launch.torchtitan.train`")
        return
    engine = engine_named(ctx.recipe.engine)
    if started is not engine:  # the one place a recipe's engine is compared with its command
        yield Finding.at("engine", f"is {engine.name} but the run command starts {' '.join(command.argv[:3])}..., "
                          f"{started.name}'s command; set engine: {started.name}")
        return
    for row in engine.flags + tuple(row for row in engine.flags_when_present if command.has(row.flag)):
        yield from _compare_flag(ctx.recipe, command, row)
    yield from _check_node_count(ctx.recipe, command, engine.node_flags)
    yield from _check_levers(ctx.recipe, engine)
    card = ctx.tables.models.get(ctx.recipe.model)
    layers = command.value(engine.layers_flag) if engine.layers_flag else None
    if card is not None and layers is not None and "layers" in card.architecture and layers != str(card.layers):
        yield Finding.at("run", f"{engine.layers_flag} {layers} but the model card has {card.layers} layers")


def _compare_env(env: dict[str, str], exports: dict[str, str]) -> Iterator[Finding]:
    for name in sorted(set(env) | set(exports)):
        if name not in exports:
            yield Finding.at(f"env.{name}", f"is set in env: but the run command never exports it; add "
                              f"`export {name}={env[name]}` to run or remove it from env")
        elif name not in env:
            yield Finding.at("env", f"the run command exports {name}={exports[name]} but env: lacks it; add it")
        elif env[name] != exports[name]:
            yield Finding.at(f"env.{name}",
                              f"is '{env[name]}' but the run command exports '{exports[name]}'; make them equal")


def _compare_flag(recipe: Recipe, command: ParsedRun, row: FlagField) -> Iterator[Finding]:
    expected, actual = row.expected(recipe), row.read(command)
    if expected == actual:
        return
    written = row.field_in(recipe)
    if row.kind == "switch":
        said = "passes" if actual else "does not pass"
        yield Finding.at(row.field, f"is {written!r} but the run command {said} {row.flag}; make them agree")
    elif not command.has(row.flag):
        said = "set" if row.kind == "marks" else repr(expected)
        yield Finding.at(row.field, f"is {said} but the run command has no {row.flag}; add `{row.flag} {expected}`")
    elif written is None or expected is None:
        said = "null" if written is None else repr(written)
        yield Finding.at(row.field, f"is {said} but the run command passes {row.flag} {command.value(row.flag)}; "
                          "fill the field or drop the flag")
    else:
        yield Finding.at(row.field, f"is {expected!r} but the run command passes {row.flag} {command.value(row.flag)}; "
                          f"expected {row.flag} {expected}")


def _check_levers(recipe: Recipe, engine: Engine) -> Iterator[Finding]:
    """The layout pulls only levers its engine has (engines/<name>/levers.py), and FP8 precision with float8 is
    float8 training."""
    lay, precision = recipe.layout, recipe.workload.precision
    if lacking := engine.lacking(**lay.stated_levers()):
        own = ", ".join(field for name, field in LEVER_FIELDS.items() if engine.has_lever(name))
        for name in lacking:
            yield Finding.at(f"layout.{LEVER_FIELDS[name]}", f"is set but {engine.name} has no such lever (its own: "
                              f"{own}); remove it")
        return
    if not engine.has_lever("float8"):
        return
    if precision == "fp8" and lay.float8 is None:
        yield Finding.at("layout.float8", "is null but workload.precision is fp8; give layout.float8 (scaling: "
                          "tensorwise or rowwise) or set workload.precision to bf16")
    elif precision != "fp8" and lay.float8 is not None:
        yield Finding.at("layout.float8", f"is set but workload.precision is {precision}; set workload.precision to "
                          "fp8 or remove layout.float8")


def _check_node_count(recipe: Recipe, command: ParsedRun, node_flags: tuple[str, str]) -> Iterator[Finding]:
    nodes_flag, per_node_flag = node_flags
    nodes, per_node = command.value(nodes_flag), command.value(per_node_flag)
    if nodes is None or per_node is None:
        yield Finding.at("run", f"the run command must pass {nodes_flag} and {per_node_flag} so the GPU count can be "
                          "checked")
        return
    try:
        total = int(nodes) * int(per_node)
    except ValueError:
        yield Finding.at("run", f"{nodes_flag} {nodes} / {per_node_flag} {per_node} are not whole numbers")
        return
    if total != recipe.gpu.count:
        yield Finding.at("gpu.count", f"is {recipe.gpu.count} but the run command starts {nodes} node(s) x {per_node} "
                          f"GPUs = {total}; expected {total}")


def check_correctness(ctx: Context) -> Iterator[Finding]:
    """The verdicts agree with their own figures and the thresholds of thresholds.py: a correlation below
    the minimum cannot say pass, and an overall pass needs every part to pass."""
    c, limits = ctx.recipe.correctness, PIPELINE_CONVERGENCE
    conv = c.convergence
    if conv is not None and conv.result == "pass":
        scored = conv.steps - int(conv.steps * limits.skip_first_fraction)
        if conv.correlation < limits.min_correlation:
            yield Finding.at("correctness.convergence.correlation",
                              f"is {conv.correlation:g}, below {limits.min_correlation}"
                              f", the least a pass allows; correctness.convergence.result cannot say pass")
        if conv.final_loss_difference > limits.max_final_loss_difference:
            yield Finding.at("correctness.convergence.final_loss_difference",
                              f"is {conv.final_loss_difference:g}, above {limits.max_final_loss_difference}, the most "
                              "a pass allows; correctness.convergence.result cannot say pass")
        if conv.pointwise_failures > limits.max_pointwise_failure_ratio * scored:
            yield Finding.at("correctness.convergence.pointwise_failures",
                              f"is {conv.pointwise_failures} of {scored} scored points, more than "
                              f"{limits.max_pointwise_failure_ratio:.0%}; correctness.convergence.result cannot say "
                              "pass")
    if c.result == "pass":
        if conv is not None and conv.result != "pass":
            yield Finding.at("correctness.result", "is pass but correctness.convergence.result is fail; make it fail")
        if c.configuration.startswith("fail"):
            yield Finding.at("correctness.result", "is pass but correctness.configuration failed; make it fail")
        for i, test in enumerate(c.component_tests):
            if test.result != "pass":
                yield Finding.at(f"correctness.component_tests.{i}.result", "is fail but correctness.result is pass; "
                                  "make the overall result fail")
    if ctx.recipe.status == "verified" and c.result != "pass":
        yield Finding.at("status", f"is verified but correctness.result is {c.result}; verified needs passed checks")


CHECKS: tuple[Callable[[Context], Iterator[Finding]], ...] = (
    check_reference_rows,
    check_path,
    check_runs,
    check_reproduction_logs,
    check_dates,
    check_own_facts,
    check_layout,
    check_published_figures,
    check_plausible,
    check_command,
    check_correctness,
)


def run_checks(recipe: Recipe, doc: YamlDocument, tables: ReferenceTables,
               command: ParsedRun | CommandError) -> list[Finding]:
    ctx = Context(recipe=recipe, doc=doc, tables=tables, command=command)
    return [issue for check in CHECKS for issue in check(ctx)]

