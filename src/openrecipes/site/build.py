"""Writes the static site: every page rendered from page records, the plots, the YAML downloads, recipes.json.

Every recipe string reaches HTML through Jinja's autoescape and reaches JavaScript only as JSON data read with
textContent, so a recipe cannot inject markup or script; the pages' CSP forbids inline script and style as well.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from openrecipes.catalog.store import Catalog, CatalogEntry
from openrecipes.catalog.yamlio import read_yaml
from openrecipes.errors import UserError
from openrecipes.site import format as fmt
from openrecipes.site import notes, plots
from openrecipes.site.compare import compare_record, compare_script
from openrecipes.site.plan import model_plans, plan_page_path
from openrecipes.site.pages import (
    ModelSection, Site, compare_data_path, recipe_page_path, recipe_yaml_path, relative_url, site_pages,
)
from openrecipes.site.before_run import run_inputs
from openrecipes.site.running import running_steps
from openrecipes.site.runs import run_plots

HERE = Path(__file__).parent
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
       "base-uri 'none'; form-action 'none'")
# Written into every build so a rebuild may clear the folder; a folder without it is never emptied.
BUILD_MARKER = ".openrecipes-site"


@dataclass
class BuildReport:
    out: Path
    pages: dict[str, int] = field(default_factory=dict)  # site path of each HTML page -> bytes
    plan_tables_computed: int = 0  # the Plan pages' tables not found in the cache

    @property
    def largest(self) -> tuple[str, int]:
        return max(self.pages.items(), key=lambda item: item[1])


@lru_cache(maxsize=1)
def citations() -> dict[str, dict[str, str]]:
    return read_yaml(HERE / "citations.yaml").data


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(tokens_board=fmt.tokens_board, tokens_detail=fmt.tokens_detail, usd=fmt.usd,
                       notes=_notes, note_line=_note_line)
    env.globals.update(csp=CSP, fmt=fmt, citations=citations(), page_of=recipe_page_path, yaml_of=recipe_yaml_path,
                       plan_of=lambda section: plan_page_path(section.folder), pareto_svg=_pareto_svg,
                       running_of=lambda board_page: board_page.running_path)
    return env


def _note_link(context):
    """Where a repository path in a note links from this page: its recipe page, the repository's file, or nowhere."""
    site, url = context["site"], context["url"]

    def link(path: str) -> str | None:
        target = site.link_target(path)
        if target is None:
            return None
        address, on_site = target
        return url(address) if on_site else address

    return link


@jinja2.pass_context
def _notes(context, text: str) -> Markup:
    """A note in the safe Markdown subset (site/notes.py): paragraphs and lists."""
    return notes.render(text, _note_link(context))


@jinja2.pass_context
def _note_line(context, text: str) -> Markup:
    """One line of the safe Markdown subset, for a table cell or inside a paragraph."""
    return notes.inline(text, _note_link(context))


@jinja2.pass_context
def _pareto_svg(context, section: ModelSection) -> Markup:
    """The section's plot, its links (written relative to the site root) made relative to this page."""
    prefix = relative_url(context["page_path"], "")
    return Markup(section.pareto_svg.replace('<a href="', f'<a href="{prefix}'))


def _staging(out: Path) -> Path:
    """A fresh folder beside `out` to build into; `out` must be new, empty or an earlier build (replaced at the end)."""
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: a file, not a folder; give an empty or new folder for the site")
    if out.exists() and any(out.iterdir()) and not (out / BUILD_MARKER).exists():
        raise UserError(f"{out}: not empty and not an OpenRecipes site build; give an empty or new folder")
    staging = out.with_name(f".{out.name}.building")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    (staging / BUILD_MARKER).write_text("written by `openrecipes site build`; the next build replaces this folder\n")
    return staging


def _swap_in(staging: Path, out: Path) -> None:
    """The finished build takes the place of the old one; a failed build leaves the old site whole."""
    if out.exists():
        shutil.rmtree(out)
    staging.rename(out)


class _Writer:
    def __init__(self, out: Path, report: BuildReport):
        self.out, self.report = out, report

    def bytes(self, site_path: str, data: bytes) -> None:
        target = self.out / site_path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def page(self, site_path: str, template: str, **context) -> None:
        def url(target: str) -> str:
            return quote(relative_url(site_path, target))

        html = _environment().get_template(template).render(url=url, page_path=site_path, **context)
        data = html.encode("utf-8")
        self.bytes(site_path, data)
        self.report.pages[site_path] = len(data)


def build_site(catalog: Catalog, out: Path) -> BuildReport:
    out = Path(out).resolve()
    staging = _staging(out)
    try:
        report = _build_into(catalog, staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _swap_in(staging, out)
    report.out = out
    return report


def _build_into(catalog: Catalog, out: Path) -> BuildReport:
    report = BuildReport(out)
    write = _Writer(out, report)
    site = site_pages(catalog)
    for name in ("site.css", "site.js", "favicon.svg"):
        write.bytes(f"static/{name}", (HERE / "static" / name).read_bytes())
    for entry in catalog.summaries:
        write.bytes(recipe_yaml_path(entry), (catalog.root / entry.path).read_bytes())
    for section in site.sections:
        section.pareto_svg = plots.pareto_svg(section.points, section.front, _plot_links(section),
                                              f"plot-{section.folder}")
    write.page("index.html", "index.html", site=site, title="All models")
    write.page("running.html", "running.html", site=site, title="Running a recipe", steps=None, board_page=None,
               section=None)
    for section in site.sections:
        for board_page in section.pages:
            write.page(board_page.path, "board.html", site=site, section=section, page=board_page,
                       title=board_page.title)
        for board_page in section.boards:
            write.page(board_page.running_path, "running.html", site=site, board_page=board_page, section=section,
                       steps=running_steps(board_page.board.ranked[0]),
                       title=f"Running {section.name} on {board_page.board.gpu_type}")
    for entry in catalog.recipes:
        _recipe(write, site, entry)
    write.page("compare.html", "compare.html", site=site, title="Compare two recipes")
    recipe_pages = {entry.slug: recipe_page_path(entry) for entry in catalog.recipes}
    plans, report.plan_tables_computed = model_plans(catalog, site.sections)
    for plan in plans:
        write.page(plan.path, "plan.html", site=site, section=site.section(plan.model), plan=plan,
                   recipe_pages=recipe_pages, title=f"Plan {plan.model}")
    write.bytes("recipes.json", export_json(site).encode("utf-8"))
    return report


def _recipe(write: _Writer, site: Site, entry: CatalogEntry) -> None:
    recipe = entry.entry
    board_page, rank = site.board_of[entry.slug]
    section = site.section(recipe.model)
    yaml_text = (site.catalog.root / entry.path).read_text(encoding="utf-8")
    write.bytes(recipe_yaml_path(entry), yaml_text.encode("utf-8"))
    run_images = run_plots(site.catalog.root, entry)
    for image in run_images:
        write.bytes(image.path, image.svg)
    ranked = board_page.board.ranked
    partner = ranked[1] if rank == 1 and len(ranked) > 1 else ranked[0]
    write.page(recipe_page_path(entry), "recipe.html", site=site, section=section, board_page=board_page,
               rank=rank, entry=entry, recipe=recipe, yaml_text=yaml_text, run_images=run_images,
               compare_partner=partner, inputs=run_inputs(site.catalog, entry),
               title=f"{entry.name} · {recipe.model} on {recipe.gpu.type}")
    write.bytes(compare_data_path(entry), compare_script(compare_record(entry, board_page, rank,
                                                                            site.usd_values[entry.slug])))


def _plot_links(section: ModelSection) -> dict[int, tuple[str, str]]:
    """Each plotted point's link (site path: the recipe page, or a summary's YAML) and accessible name."""
    links = {}
    for point in section.points:
        target = recipe_yaml_path(point.entry) if point.entry.is_summary else recipe_page_path(point.entry)
        links[point.number] = (quote(target), f"{point.number}: {point.label} on {point.gpu_type}")
    return links


def export_json(site: Site) -> str:
    """The whole catalog for tools: every entry with its permalink, its board rank, and its fields."""
    entries = []
    for entry in site.catalog.entries:
        record = {"slug": entry.slug, "path": entry.path.as_posix(),
                  "kind": "published_summary" if entry.is_summary else "recipe"}
        if not entry.is_summary:
            board_page, rank = site.board_of[entry.slug]
            record.update(page=recipe_page_path(entry), yaml=recipe_yaml_path(entry), board=board_page.path,
                          workload=board_page.board.workload.label, rank=rank)
        record["entry"] = entry.entry.model_dump(mode="json")
        entries.append(record)
    boards = [{"model": p.board.model, "gpu_type": p.board.gpu_type, "workload": p.board.workload.label,
               "page": p.path, "ranked": [e.slug for e in p.board.ranked]}
              for section in site.sections for p in section.boards]
    return json.dumps({"schema_version": 1, "entries": entries, "boards": boards}, indent=1, ensure_ascii=False)

