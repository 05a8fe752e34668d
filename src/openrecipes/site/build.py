"""Writes the static site: every page rendered from page records, the plots, the YAML downloads, recipes.json.

Every recipe string reaches HTML through Jinja's autoescape and reaches JavaScript only as JSON data read with
textContent, so a recipe cannot inject markup or script; the pages' CSP forbids inline script and style as well, and
runs only the site's own scripts: a file a contributor put in the catalog (a log, whatever it holds) is never one of
them, wherever it lands in the site.

A build appears as one unit: it is written into a sibling folder and switched in with one atomic exchange, so a
reader (or a build killed at any instant) sees the old complete site or the new complete one, never a mix. Builds
into one folder take a lock beside it: a second build waits for the first instead of writing over it.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import fcntl
import glob
import hashlib
import json
import os
import posixpath
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from openrecipes.answer.grid import ANSWERS_FOLDER
from openrecipes.atomic import check_output_folder, current_umask, publish_folder
from openrecipes.audit.reproduce import reproduction_summary
from openrecipes.catalog.evidence import EVIDENCE_LEVELS
from openrecipes.catalog.store import Catalog, CatalogEntry, RecipeEntry
from openrecipes.catalog.yamlio import MAX_YAML_BYTES, read_yaml
from openrecipes.errors import UserError
from openrecipes.forked import forked_map
from openrecipes.plan.words import describe
from openrecipes.site import format as fmt
from openrecipes.site import notes, plots
from openrecipes.site.before_run import run_inputs
from openrecipes.site.compare import compare_record, compare_script, picker_script
from openrecipes.site.evidence_files import board_csv, evidence_path, log_files, recipe_files
from openrecipes.site.pages import (
    ModelSection,
    Site,
    compare_data_path,
    recipe_page_path,
    recipe_yaml_path,
    recipe_yaml_text_path,
    relative_url,
    site_pages,
)
from openrecipes.site.plan import (
    model_plans,
    plan_page_path,
    precision_family,
    prediction_precision,
    published_precision,
    training,
)
from openrecipes.site.question import answers_scripts
from openrecipes.site.record import RecordPage, global_batches, record_row_path
from openrecipes.site.running import running_steps
from openrecipes.site.runs import run_plots
from openrecipes.site.scaling import record_sweeps, sweeps_svg
from openrecipes.site.workload import workload_words
from openrecipes.textfile import MIB, read_text, shown

HERE = Path(__file__).parent
# A page's one inline script, allowed by its sha256: it loads the site's own scripts its data-load names (and no
# other: they are listed here), from the site's own folders (data-base holds only "../" steps), in that order. The CSP
# trusts what it loads ('strict-dynamic': the compare page's per-recipe data, which site.js loads, too) and nothing
# else, so no file of the catalog runs as a script wherever it lands in the site. Scripts named by hash directly
# would need an `integrity` attribute, which browsers do not check on file:// pages (the site works from them).
LOADER = ('(function(){var s=document.currentScript,b=s.getAttribute("data-base");if(!/^(\\.\\.\\/)*$/.test(b))'
          'return;s.getAttribute("data-load").split(" ").forEach(function(p){'
          'if(["answers.js","compare/index.js","static/site.js"].indexOf(p)<0)return;'
          'var e=document.createElement("script");e.src=b+p;e.async=false;document.head.appendChild(e);});})();')
LOADER_HASH = "sha256-" + base64.b64encode(hashlib.sha256(LOADER.encode("utf-8")).digest()).decode("ascii")
CSP = (f"default-src 'self'; script-src '{LOADER_HASH}' 'strict-dynamic'; style-src 'self'; img-src 'self' data:; "
       "object-src 'none'; base-uri 'none'; form-action 'none'")
# Written into every build so a rebuild may clear the folder; a folder without it is never emptied.
BUILD_MARKER = ".openrecipes-site"
# A page is a recipe (at most 1 MiB of YAML) and its figures; a larger one means a runaway input, not a page.
MAX_PAGE_BYTES = 16 * MIB
# A board's evidence filter: planned recipes (predicted) are ranked nowhere.
BOARD_LEVELS = tuple(level for level in EVIDENCE_LEVELS if level != "predicted")
RECIPES_PER_JOB = 50
PARALLEL_JOBS = 100  # a build of this many jobs (5,000 recipes, or record pages) writes them on every core


@dataclass
class BuildReport:
    out: Path
    pages: dict[str, int] = field(default_factory=dict)  # site path of each HTML page -> bytes


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(tokens_board=fmt.tokens_board, tokens_detail=fmt.tokens_detail, usd=fmt.usd,
                       notes=_notes, note_line=_note_line)
    env.globals.update(csp=CSP, loader=Markup(LOADER), fmt=fmt, citations=read_yaml(HERE / "citations.yaml").data,
                       page_of=recipe_page_path, yaml_of=recipe_yaml_text_path, yaml_download_of=recipe_yaml_path,
                       plan_of=lambda section: plan_page_path(section.folder),
                       reproductions_of=reproduction_summary, evidence_levels=BOARD_LEVELS, inline_plot=_inline_plot,
                       precision_of=prediction_precision, precision_family=precision_family, evidence_of=evidence_path,
                       training_of=training, describe=describe, workload_words=workload_words,
                       record_batches=global_batches, published_precision_of=published_precision)
    return env


def _note_link(context):
    """Where a repository path in a note links from this page: its recipe page, the repository's file, or nowhere."""
    return partial(context["site"].link_target, url=context["url"])


@jinja2.pass_context
def _notes(context, text: str) -> Markup:
    """A note in the safe Markdown subset (site/notes.py): paragraphs and lists."""
    return notes.render(text, _note_link(context))


@jinja2.pass_context
def _note_line(context, text: str) -> Markup:
    """One line of the safe Markdown subset, for a table cell or inside a paragraph."""
    key = (posixpath.dirname(context["page_path"]), text)
    lines = context["site"].note_lines
    if key not in lines:
        lines[key] = notes.inline(text, _note_link(context))
    return lines[key]


@jinja2.pass_context
def _inline_plot(context, svg: str) -> Markup:
    """An inline plot's links (written relative to the site root) made relative to this page."""
    prefix = relative_url(context["page_path"], "")
    return Markup(svg.replace('<a href="', f'<a href="{prefix}'))


def output_folder(out: Path) -> Path:
    check_output_folder(Path(out), "--out", lambda folder: True)  # never through a link or over a device; the
    # marker check below says what a folder of someone else's files is
    try:
        out = Path(out).resolve()
    except (OSError, RuntimeError) as error:  # a symlink loop on the way
        raise UserError(f"{shown(out)}: cannot be resolved ({error}); give a plain folder path") from None
    if out.parent == out:
        raise UserError(f"{shown(out)}: give a folder for the site, not the file-system root")
    if out.exists() and not out.is_dir():
        raise UserError(f"{shown(out)}: a file, not a folder; give an empty or new folder for the site")
    if out.exists() and any(out.iterdir()) and not (out / BUILD_MARKER).exists():
        raise UserError(f"{shown(out)}: not empty and not an OpenRecipes site build; give an empty or new folder")
    return out


@contextlib.contextmanager
def _build_lock(out: Path):  # noqa: ANN202
    """One build at a time into `out`: a lock file beside it (not in it: the folder itself is swapped)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_name(f".{out.name}.lock"), "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for the other `site build` into {shown(out)} to finish", file=sys.stderr)
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class _Writer:
    def __init__(self, out: Path, report: BuildReport):
        self.out, self.report = out, report

    def bytes(self, site_path: str, data: bytes) -> None:
        target = self.out / site_path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def page(self, site_path: str, template: str, **context) -> None:
        def url(target: str) -> str:
            # A fragment stays a fragment: "page.html#row" must not become "page.html%23row", a file that is not there.
            path, hash_mark, fragment = target.partition("#")
            return quote(relative_url(site_path, path)) + hash_mark + quote(fragment, safe="")

        html = _environment().get_template(template).render(url=url, page_path=site_path, **context)
        data = html.encode("utf-8")
        if len(data) > MAX_PAGE_BYTES:
            raise UserError(f"the page {site_path} would be {len(data) / MIB:.0f} MiB, over {MAX_PAGE_BYTES // MIB} "
                            "MiB; a recipe or run log behind it is far too large")
        self.bytes(site_path, data)
        self.report.pages[site_path] = len(data)


def build_site(catalog: Catalog, out: Path, answers: Path = ANSWERS_FOLDER) -> BuildReport:
    """The site of `catalog` in `out`; the home page's answers take the planner's part from `answers`."""
    out = output_folder(out)
    with _build_lock(out):
        out = output_folder(out)  # the build this one waited for may have changed it
        # Folders an earlier build left when it was killed (its staging, or the old site it was removing): safe to
        # remove under the lock, as no build is using them.
        for leftover in out.parent.glob(f".{glob.escape(out.name)}.building*"):
            shutil.rmtree(leftover, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.building-", dir=out.parent))
        try:
            os.chmod(staging, 0o777 & ~current_umask())  # mkdtemp's folder is private; a site folder is not
            (staging / BUILD_MARKER).write_text("written by `openrecipes site build`; the next build replaces "
                                                "this folder\n")
            report = _build_into(catalog, staging, answers)
            publish_folder(staging, out)  # a kill after the swap leaves the old site as a leftover
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    report.out = out
    return report


def _build_into(catalog: Catalog, out: Path, answers: Path) -> BuildReport:
    report = BuildReport(out)
    write = _Writer(out, report)
    site = site_pages(catalog)
    plans = model_plans(catalog, site.sections)  # read first: a stale plans/*.json stops the build before any plot
    for name in ("site.css", "site.js", "plan.css", "favicon.svg"):
        write.bytes(f"static/{name}", (HERE / "static" / name).read_bytes())
    for summary in (*catalog.summaries, *catalog.record):
        _write_yaml(write, summary, (catalog.root / summary.path).read_bytes())
    # The pages that grow with the catalog, each job written apart (on every core, for a large catalog); the
    # single large files first, so no core is left with one at the end.
    jobs: list[Callable[[_Writer], None]] = [
        lambda write: write.bytes("recipes.json", export_json(site).encode("utf-8"))]
    jobs += [partial(_record_page, site, section, gpu_type, record_page)
             for section in site.sections for gpu_type, record_pages in section.record_pages.items()
             for record_page in record_pages]
    jobs += [partial(_model_pages, site, section) for section in site.sections]
    jobs += [partial(_recipes, site, catalog.recipes[start:start + RECIPES_PER_JOB])
             for start in range(0, len(catalog.recipes), RECIPES_PER_JOB)]
    # The plots before the pages (the model and board pages show them), on every core when the pages are.
    plotted = forked_map(_section_plots, site.sections, 0 if len(jobs) >= PARALLEL_JOBS else sys.maxsize)
    for section, (pareto, scaling) in zip(site.sections, plotted, strict=True):
        section.pareto_svg, section.scaling_svg = pareto, scaling
        if section.points and section.pareto_shared:  # one file, its links made relative to its own folder
            write.bytes(section.pareto_file, pareto.replace('<a href="', '<a href="../').encode("utf-8"))
        if section.scaling and section.scaling_shared:
            write.bytes(section.scaling_file, scaling.replace('<a href="', '<a href="../').encode("utf-8"))
    for path, script in answers_scripts(site, answers).items():
        write.bytes(path, script)
    write.page("index.html", "index.html", site=site, title="All models")
    write.page("running.html", "running.html", site=site, title="Running a recipe", steps=None, board_page=None,
               section=None)
    for template in ("record.html", "recipe.html", "model.html", "board.html", "running.html"):
        _environment().get_template(template)  # compiled once, before any fork
    for pages in forked_map(partial(_write_apart, out), jobs, PARALLEL_JOBS):
        report.pages |= pages
    write.bytes("compare/index.js", picker_script(
        [(f"{page.title} · {page.board.workload.label}",
          [(entry.slug, f"#{rank} {entry.name} ({entry.entry.model}, {entry.entry.gpu.type})")
           for rank, entry in enumerate(page.board.ranked, start=1)])
         for section in site.sections for page in section.boards]))
    write.page("compare.html", "compare.html", site=site, title="Compare two recipes")
    recipe_pages = {entry.slug: recipe_page_path(entry) for entry in catalog.recipes}
    for plan in plans:
        write.page(plan.path, "plan.html", site=site, section=site.section(plan.model), plan=plan,
                   recipe_pages=recipe_pages, title=f"Plan {plan.model}")
        for path, text in plan.downloads.items():
            write.bytes(path, text.encode("utf-8"))
        for log in sorted({run.log for view in plan.tables for run in view.table.runs}):
            for file in log_files(catalog.root, log, "run"):
                write.bytes(file.path, file.data)
    return report


def _write_yaml(write: _Writer, entry: CatalogEntry, data: bytes) -> None:
    """An entry's YAML as stored (for tools and the Download link), and its .txt twin that the site's links open: any
    static host serves .txt as plain text, to read in the browser, where it may offer .yaml as a download."""
    write.bytes(recipe_yaml_path(entry), data)
    write.bytes(recipe_yaml_text_path(entry), data)


def _write_apart(out: Path, job: Callable[[_Writer], None]) -> dict[str, int]:
    """One job's pages, written with a writer of its own; their sizes for the build's report."""
    report = BuildReport(out)
    job(_Writer(out, report))
    return report.pages


def _section_plots(section: ModelSection) -> tuple[str, str]:
    """A model's Pareto and scaling plots as inline SVG, their links relative to the site root ("" if none)."""
    pareto = plots.pareto_svg(section.points, section.front, _plot_links(section), f"plot-{section.folder}",
                              section.front if section.pareto_shared else None) if section.points else ""
    # one scaling plot per model, whatever the number of its runs
    scaling = plots.scaling_svg(section.scaling, f"scaling-{section.folder}") if section.scaling else ""
    return pareto, scaling


def _model_pages(site: Site, section: ModelSection, write: _Writer) -> None:
    """A model's page, its board pages with their CSV and running pages."""
    write.page(section.path, "model.html", site=site, section=section, title=section.name)
    for board_page in section.pages:
        write.page(board_page.path, "board.html", site=site, section=section, page=board_page,
                   title=board_page.title)
    for board_page in section.boards:
        write.bytes(board_page.csv_path, board_csv(
            [(rank, entry, site.evidence(entry), site.usd_values.get(entry.slug),
              recipe_page_path(entry)) for rank, entry in enumerate(board_page.board.ranked, start=1)],
            site.token_budget))
        write.page(board_page.running_path, "running.html", site=site, board_page=board_page, section=section,
                   steps=running_steps(board_page.board.ranked[0]),
                   title=f"Running {section.name} on {board_page.board.gpu_type}")


def _record_page(site: Site, section: ModelSection, gpu_type: str, page: RecordPage, write: _Writer) -> None:
    sweeps = record_sweeps(page.rows)
    write.page(page.path, "record.html", site=site, section=section, gpu_type=gpu_type, page=page, sweeps=sweeps,
               sweeps_plot=sweeps_svg(sweeps, "sweeps") if sweeps else "",
               title=f"{section.name} on {gpu_type}: the public record")


def _recipes(site: Site, entries: list[RecipeEntry], write: _Writer) -> None:
    for entry in entries:
        recipe = entry.entry
        board_page, rank = site.board_of[entry.slug]
        yaml_text = read_text(site.catalog.root / entry.path, MAX_YAML_BYTES, "recipe")
        _write_yaml(write, entry, yaml_text.encode("utf-8"))
        run_images = run_plots(site.catalog.root, entry)
        for image in run_images:
            write.bytes(image.path, image.svg)
        run_files = recipe_files(site.catalog.root, entry)
        for file in run_files:
            write.bytes(file.path, file.data)
        write.page(recipe_page_path(entry), "recipe.html", site=site, section=site.section(recipe.model),
                   board_page=board_page, rank=rank, entry=entry, recipe=recipe, yaml_text=yaml_text,
                   run_images=run_images, run_files=run_files,
                   compare_partner=_compare_partner(site, entry, board_page, rank),
                   inputs=run_inputs(site.catalog, entry), title=f"{entry.name} · {recipe.model} on {recipe.gpu.type}")
        write.bytes(compare_data_path(entry), compare_script(compare_record(
            entry, board_page, rank, site.usd_values[entry.slug], site.evidence(entry), site.token_budget)))


def _compare_partner(site: Site, entry: RecipeEntry, board_page, rank: int) -> RecipeEntry | None:
    """Whom a recipe page's compare link sets it against: its board's best (the runner-up for the best); on a board
    of one, the fastest recipe of the same model and GPU type on another board; never the recipe itself."""
    ranked = board_page.board.ranked
    if len(ranked) > 1:
        return ranked[1] if rank == 1 else ranked[0]
    others = [p.board.ranked[0] for p in site.section(entry.entry.model).boards
              if p.board.gpu_type == entry.entry.gpu.type and p.board is not board_page.board]
    return others[0] if others else None


def _plot_links(section: ModelSection) -> dict[int, tuple[str, str]]:
    """Each plotted point's link (site path: the recipe page, or a summary's YAML as text) and accessible name."""
    return {point.number: (quote((recipe_yaml_text_path if point.entry.is_summary else recipe_page_path)(point.entry)),
                           f"{point.number}: {point.label} on {point.gpu_type}") for point in section.points}


def export_json(site: Site) -> str:
    """The whole catalog for tools: every entry with its permalink, its board rank, and its fields; the public
    record's entries with their source, evidence level and derived figures, kind `published_summary` and unranked."""
    # A published run's place on the site, its exact source and what our code derives from it (never ranked).
    records = {row.entry.slug: {"page": record_row_path(row), "source_url": row.source_url,
                                "derived": dataclasses.asdict(row.figures) if row.figures else None,
                                "tflops_disagreement": row.disagreement}
               for section in site.sections for rows in section.record.values() for row in rows}
    entries = []
    for entry in (*site.catalog.entries, *site.catalog.record):
        record: dict[str, Any] = {"slug": entry.slug, "path": entry.path.as_posix(),
                                  "kind": "published_summary" if entry.is_summary else "recipe"}
        if isinstance(entry, RecipeEntry):
            board_page, rank = site.board_of[entry.slug]
            record.update(page=recipe_page_path(entry), yaml=recipe_yaml_path(entry), board=board_page.path,
                          workload=board_page.board.workload.label, rank=rank,
                          reproductions=reproduction_summary(entry.entry).as_json())
        if entry.slug in records:
            record["public_record"] = records[entry.slug]
        record["evidence"] = site.evidence(entry)
        record["entry"] = entry.entry.model_dump(mode="json")
        entries.append(record)
    boards = [{"model": p.board.model, "gpu_type": p.board.gpu_type, "workload": p.board.workload.label,
               "page": p.path, "ranked": [e.slug for e in p.board.ranked]}
              for section in site.sections for p in section.boards]
    # One line: json's C encoder writes it (an indented dump runs the pure-Python encoder, seconds at 10,000 entries).
    return json.dumps({"schema_version": 1, "entries": entries, "boards": boards}, ensure_ascii=False)

