"""Terminal views of the catalog (rich): validation reports, leaderboards, one recipe."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table

from openrecipes.catalog import facts
from openrecipes.catalog.leaderboard import boards
from openrecipes.catalog.model import PublishedSummary
from openrecipes.catalog.published import published_figures
from openrecipes.catalog.store import Catalog, CatalogEntry
from openrecipes.catalog.validate import FieldError, FileReport


def validation_reports(console: Console, reports: list[FileReport]) -> None:
    for report in reports:
        if report.ok:
            console.print(f"[green]ok[/]      {escape(str(report.path))}", highlight=False)
            _lines(console, report, report.findings, "[yellow]finding[/] ")
            continue
        console.print(f"[red]invalid[/] {escape(str(report.path))}", highlight=False)
        _lines(console, report, report.errors, "")
        _lines(console, report, report.findings, "[yellow]finding[/] ")
    bad = sum(not r.ok for r in reports)
    found = sum(len(r.findings) for r in reports)
    console.print(f"{len(reports) - bad} valid, {bad} invalid" + (f", {found} finding(s)" if found else ""),
                  highlight=False)


def _lines(console: Console, report: FileReport, items: list[FieldError], prefix: str) -> None:
    for item in items:
        where = f"{report.path}:{item.line}" if item.line else str(report.path)
        console.print(f"  {prefix}{escape(where)}: [bold]{escape(item.field or 'file')}[/] {escape(item.message)}",
                      highlight=False, markup=True, soft_wrap=True)


def leaderboards(console: Console, catalog: Catalog) -> None:
    for board in boards(catalog):
        title = f"Training {escape(board.model)} on {escape(board.gpu_type)}\n[dim]{board.workload.label}[/]"
        table = Table(title=title, title_justify="left")
        for column in ("#", "tokens/s per GPU", "$ / 1M tokens", "GPUs", "layout", "highlights", "measured",
                       "author", "recipe"):
            table.add_column(column, justify="right" if column in ("#", "tokens/s per GPU", "$ / 1M tokens",
                                                                    "GPUs") else "left")
        for rank, entry in enumerate(board.ranked, start=1):
            r = entry.entry
            table.add_row(f"#{rank}", facts.tokens_board(r.result.tokens_per_s_per_gpu),
                          facts.usd(r.result.usd_per_million_tokens),
                          str(r.gpu.count), *map(escape, (r.layout.label, r.layout.highlights)),
                          str(r.result.measured), escape(r.author.name), escape(entry.name))
        console.print(table)
    if catalog.summaries or catalog.record:
        table = Table(title="Published entries (author-reported figures, never ranked)", title_justify="left")
        for column in ("model", "GPU", "GPUs", "precision", "layout", "tokens/s per GPU", "$ / 1M tokens", "entry"):
            table.add_column(column)
        for summary in sorted([*catalog.summaries, *catalog.record],
                              key=lambda e: (e.entry.model, e.entry.gpu.type, e.slug)):
            s = summary.entry
            table.add_row(escape(s.model), escape(s.gpu.type), str(s.gpu.count), escape(s.precision or "-"),
                          escape(s.published.layout.label if s.published else "-"),
                          facts.tokens_board(s.result.tokens_per_s_per_gpu), facts.usd(s.result.usd_per_million_tokens),
                          escape(summary.name))
        console.print(table)


def recipe(console: Console, catalog: Catalog, entry: CatalogEntry) -> None:
    if isinstance(entry.entry, PublishedSummary):
        s = entry.entry
        console.print(f"[bold]{escape(s.model)} on {s.gpu.count} x {escape(s.gpu.type)}[/] (published summary entry)\n"
                      f"{facts.tokens_board(s.result.tokens_per_s_per_gpu)} tokens/s/GPU · "
                      f"{facts.usd(s.result.usd_per_million_tokens)} / 1M tokens\n{escape(s.note)}\n"
                      f"source: {escape(s.source)}", highlight=False)
        derived = published_figures(s, catalog.tables)
        if s.published and derived:
            run = s.published
            published = f"{run.model_tflops_per_gpu:g}" if run.model_tflops_per_gpu else "not published"
            console.print(f"{escape(run.engine_version)} · {escape(run.precision)} · {escape(run.layout.label)} · "
                          f"sequence {run.seq_length:,} · global batch {run.global_batch or '-'}\n"
                          f"model TFLOP/s per GPU: published {published}, implied "
                          f"{derived.implied_tflops_per_gpu:,.0f} · MFU against dense BF16 {derived.mfu_bf16:.1%}"
                          + (f", against the dense {run.precision} peak {derived.mfu_precision:.1%}"
                             if derived.mfu_precision and run.precision != "bf16" else ""),
                          highlight=False)
        return
    r = entry.entry
    table = Table(title=escape(entry.slug), show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    stack = "; ".join(f"{name} {value}" for name, value in facts.stack_items(r))
    rows = [("Author", r.author.name + (f" ({r.author.url})" if r.author.url else "")),
            ("Workload", facts.workload(r)), *facts.recipe_facts(r, catalog.tables.gpus.get(r.gpu.type)),
            ("Stack", stack)]
    for key, value in rows:
        table.add_row(key, escape(value))  # recipe text is shown as written, never read as rich markup
    console.print(table)
    console.print(Syntax(r.run, "bash", word_wrap=True))

