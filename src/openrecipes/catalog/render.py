"""Terminal views of the catalog (rich): validation reports, leaderboards, one recipe."""

from __future__ import annotations

import textwrap
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from openrecipes.catalog import facts
from openrecipes.catalog.evidence import EVIDENCE_MEANING, evidence_level
from openrecipes.catalog.hardware import ReferenceTables
from openrecipes.catalog.leaderboard import Selection, planned_entries, published_entries, selected_boards
from openrecipes.catalog.model import PublishedSummary, Recipe
from openrecipes.catalog.paths import relative_path
from openrecipes.catalog.published import published_figures, published_label
from openrecipes.catalog.store import Catalog, CatalogEntry
from openrecipes.catalog.validate import FileReport
from openrecipes.verdict import Finding


def validation_reports(console: Console, reports: list[FileReport]) -> None:
    """Each file under its folder, by name alone, so that no width cuts a name; each error under its file."""
    folder = None
    for report in reports:
        if report.path.parent != folder:
            folder = report.path.parent
            # The folder as the user would type it: relative to the working folder when inside it.
            console.print(f"[bold]{escape(relative_path(folder, Path.cwd()))}/[/]", highlight=False, soft_wrap=True)
        state = "[green]ok[/]     " if report.ok else "[red]invalid[/]"
        console.print(f"  {state} {escape(report.path.name)}", highlight=False, soft_wrap=True)
        _lines(console, report, report.errors, "")
        _lines(console, report, report.findings, "[yellow]finding[/] ")
    bad = sum(not r.ok for r in reports)
    found = sum(len(r.findings) for r in reports)
    console.print(f"{len(reports) - bad} valid, {bad} invalid" + (f", {found} finding(s)" if found else ""),
                  highlight=False)


def _lines(console: Console, report: FileReport, items: list[Finding], prefix: str) -> None:
    """Each error or finding as the file's name on one line, then where and what, wrapped between words below it."""
    for item in items:
        console.print(f"    {prefix}{escape(report.path.name)}", highlight=False, soft_wrap=True)
        where = f"line {item.line}: " if item.line else ""
        _indented(console, f"{where}{item.field or 'file'}: {item.message}", indent="      ")


def leaderboards(console: Console, catalog: Catalog, chosen: Selection) -> None:
    """Each board as stacked rows, so that no terminal width cuts a figure or a name: the rank and the recipe's
    name on one line, its figures and evidence level on the next, its layout and highlights (wrapped, indented)
    below; then the published entries and the planned recipes, never ranked."""
    ranked = selected_boards(catalog, chosen)
    for board, kept in ranked:
        console.print(f"[bold]Training {escape(board.model)} on {escape(board.gpu_type)}[/]\n"
                      f"[dim]{board.workload.label}[/]", highlight=False)
        for rank, entry in kept:
            r = entry.entry
            console.print(f"#{rank:<3} [bold]{escape(entry.name)}[/]", highlight=False, soft_wrap=True)
            _indented(console, f"{facts.tokens_board(r.result.tokens_per_s_per_gpu)} tokens/s per GPU · "
                           f"{facts.board_figures(r)} · {r.gpu.count} x {r.gpu.type} · {evidence_level(r)}")
            _indented(console, f"{r.layout.label} · {r.layout.highlights} · measured {r.result.measured} "
                           f"by {r.author.name}", style="dim")
        console.print()
    published = published_entries(catalog, chosen)
    if published:
        console.print("[bold]Published entries[/] (others' figures, never ranked)", highlight=False)
        for summary in published:
            s = summary.entry
            console.print(f"[bold]{escape(summary.name)}[/]", highlight=False, soft_wrap=True)
            layout = f" · {published_label(s.published, s.gpu.count)}" if s.published else ""
            _indented(console, f"{facts.tokens_board(s.result.tokens_per_s_per_gpu)} tokens/s per GPU · "
                           f"{s.model} on {s.gpu.count} x {s.gpu.type} · {s.precision or 'precision unpublished'}"
                           f"{layout} · {evidence_level(s)}")
    planned = planned_entries(catalog, chosen)
    if planned:
        console.print("[bold]Planned recipes[/] (written by `openrecipes plan emit`, never run, never ranked)",
                      highlight=False)
        for entry in planned:
            r = entry.entry
            console.print(f"[bold]{escape(entry.name)}[/]", highlight=False, soft_wrap=True)
            _indented(console, f"{facts.tokens_board(r.result.tokens_per_s_per_gpu)} tokens/s per GPU predicted · "
                           f"{r.model} on {r.gpu.count} x {r.gpu.type} · {r.layout.label} · {evidence_level(r)}")
    if not (ranked or published or planned):
        console.print("no entry of the catalog matches these filters", highlight=False)


def _indented(console: Console, text: str, style: str = "", indent: str = "    ") -> None:
    """Text under a row's name: wrapped at the terminal's width between words, each line indented (four spaces) and
    none padded (printed with soft_wrap, rich adds no breaks of its own)."""
    console.print(Text(textwrap.fill(text, width=max(console.width, 40), initial_indent=indent,
                                     subsequent_indent=indent, break_long_words=False, break_on_hyphens=False),
                       style=style), soft_wrap=True)


def recipe(console: Console, tables: ReferenceTables, entry: CatalogEntry, title: str) -> None:
    if isinstance(entry.entry, PublishedSummary):
        s = entry.entry
        console.print(f"[bold]{escape(s.model)} on {s.gpu.count} x {escape(s.gpu.type)}[/] (published summary entry)\n"
                      f"{facts.tokens_board(s.result.tokens_per_s_per_gpu)} tokens/s/GPU · "
                      f"{escape(facts.board_figures(s))}\n{escape(s.note)}\n"
                      f"source: {escape(s.source)}\nevidence: {_evidence(s)}", highlight=False)
        derived = published_figures(s, tables)
        if s.published and derived:
            run = s.published
            published = f"{run.model_tflops_per_gpu:g}" if run.model_tflops_per_gpu else "not published"
            console.print(f"{escape(run.engine_version)} · {escape(run.precision)} · "
                          f"{escape(published_label(run, s.gpu.count))} · "
                          f"sequence {run.seq_length:,} · global batch {run.global_batch or '-'}\n"
                          f"model TFLOP/s per GPU: published {published}, implied "
                          f"{derived.implied_tflops_per_gpu:,.0f} · MFU against dense BF16 {derived.mfu_bf16:.1%}"
                          + (f", against the dense {run.precision} peak {derived.mfu_precision:.1%}"
                             if derived.mfu_precision and run.precision != "bf16" else ""),
                          highlight=False)
        return
    r = entry.entry
    table = Table(title=escape(title), show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    stack = "; ".join(f"{name} {value}" for name, value in facts.stack_items(r))
    rows = [("Evidence", _evidence(r)), ("Author", r.author.name + (f" ({r.author.url})" if r.author.url else "")),
            ("Workload", facts.workload(r)), *facts.recipe_facts(r, tables.variants.get(r.gpu.variant)),
            ("Stack", stack)]
    for key, value in rows:
        table.add_row(key, escape(value))  # recipe text is shown as written, never read as rich markup
    console.print(table)
    console.print("[bold]Command[/] (the recipe's `run`, exactly as written):", highlight=False)
    command(console, r.run)


def _evidence(entry: Recipe | PublishedSummary) -> str:
    level = evidence_level(entry)
    return f"{level}: {EVIDENCE_MEANING[level]} (`openrecipes audit` re-checks it)"


def command(console: Console, text: str) -> None:
    """A command a user pastes, byte for byte: never re-wrapped, padded or highlighted at any terminal width (a
    long line is left for the terminal to fold on screen; a copy keeps it whole)."""
    console.file.write(text if text.endswith("\n") else text + "\n")
    console.file.flush()
