"""The public record on the Plan pages: beside every planned GPU type and count, the model's nearest published entries
(the same GPU type first, then the nearest GPU count), author-reported, each beside the planner's held-out prediction
of its own layout or the reason it cannot make one; and a Plan page for every model with published entries, planned
at their GPU types and counts. Predicted figures are never pinned here: they are read from the planner's own
comparison (openrecipes.plan.public_record.compare), so a refitted calibration changes both sides alike."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import replace
from html import unescape

import pytest
from site_helpers import REPO

from openrecipes.catalog.published import published_label
from openrecipes.catalog.store import load_catalog
from openrecipes.plan import pages
from openrecipes.plan.public_record import compare
from openrecipes.site.plan import read_plan


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(REPO)


def _published(catalog, model: str):
    return [e for e in catalog.record if e.entry.model == model and e.entry.published is not None]


def _distance(entry, gpu_type: str, gpus: int) -> tuple[bool, float]:
    return entry.entry.gpu.type != gpu_type, abs(math.log(entry.entry.gpu.count / gpus))


def _sizes(plan):
    return [(t.gpu_type, t.gpus, t.published) for t in plan.tables] + [
        (s.gpu_type, s.gpus, s.published) for s in plan.skipped]


@pytest.mark.parametrize("model", ["llama-3.1-70b", "llama-3.1-8b"])
def test_each_table_carries_the_nearest_published_entries_same_gpu_type_first(catalog, model):
    entries = {e.slug: e for e in _published(catalog, model)}
    plan = read_plan(REPO, model)
    assert plan is not None and plan.published_entries == len(entries) > 0
    for gpu_type, gpus, shown in _sizes(plan):
        assert len(shown) == min(pages.NEAREST_PUBLISHED, len(entries))
        distances = [_distance(entries[n.slug], gpu_type, gpus) for n in shown]
        assert distances == sorted(distances)  # same GPU type first, then the nearest count
        hidden = [e for slug, e in entries.items() if slug not in {n.slug for n in shown}]
        # no entry left out is nearer than one shown
        assert all(_distance(e, gpu_type, gpus) >= distances[-1] for e in hidden)
        if any(e.entry.gpu.type == gpu_type for e in entries.values()):
            assert shown[0].gpu_type == gpu_type
        for n in shown:
            entry = entries[n.slug]
            assert (n.gpu_type, n.gpus, n.published) == (entry.entry.gpu.type, entry.entry.gpu.count,
                                                         entry.entry.result.tokens_per_s_per_gpu)
            assert n.layout == published_label(entry.entry.published, entry.entry.gpu.count)
            assert n.engine == entry.entry.published.engine


def test_equally_near_entries_are_the_newest_releases(catalog):
    """NVIDIA's entries of Llama 3.1 70B on 64 x H100 (NeMo containers 25.11 to 26.04.01, dgxc-benchmarking
    v24.11.1 to v25.04): the three newest."""
    plan = read_plan(REPO, "llama-3.1-70b")
    table = next(t for t in plan.tables if (t.gpu_type, t.gpus) == ("H100", 64))
    same = [e for e in _published(catalog, "llama-3.1-70b") if (e.entry.gpu.type, e.entry.gpu.count) == ("H100", 64)]
    assert len(same) > pages.NEAREST_PUBLISHED

    def version(entry):
        return pages._release(entry.entry.published.engine_version)

    newest = sorted(same, key=version, reverse=True)[:pages.NEAREST_PUBLISHED]
    assert [n.slug for n in table.published] == [e.slug for e in newest]


def test_each_entry_carries_the_planners_own_comparison_or_its_reason(catalog):
    plan = read_plan(REPO, "llama-3.1-70b")
    shown = {n.slug: n for _, _, published in _sizes(plan) for n in published}
    by_slug = {e.slug: e for e in catalog.record}
    inexpressible = expressed = 0
    for slug, n in shown.items():
        row = compare(by_slug[slug], catalog)
        assert (n.predicted, n.held_out, n.low, n.high, n.reason) == (row.predicted, row.held_out, row.low, row.high,
                                                                    row.reason)
        if row.reason:
            inexpressible += 1
            assert n.predicted is None and n.held_out_error is None
        else:
            expressed += 1
            assert n.held_out_error == pytest.approx(n.held_out / n.published - 1, abs=1e-4)
    assert inexpressible and expressed  # FP8 entries have no Megatron time term; BF16 torchtitan ones are predicted


def test_a_model_with_only_published_entries_is_planned_at_their_sizes_and_workload(catalog):
    entries = _published(catalog, "llama-3.1-70b")
    plan = read_plan(REPO, "llama-3.1-70b")
    assert {(t.gpu_type, t.gpus) for t in plan.tables} | {(s.gpu_type, s.gpus) for s in plan.skipped} == {
        (e.entry.gpu.type, e.entry.gpu.count) for e in entries}
    workloads = Counter((e.entry.published.seq_length, e.entry.published.global_batch) for e in entries
                        if e.entry.published.global_batch)
    (rows, batch), uses = workloads.most_common(1)[0]
    assert f"{rows:,}-token rows, global batch {batch}" in plan.settings
    assert f"its {len(entries)} published entries" in plan.planned_for and f"the workload {uses} of them" in \
        plan.planned_for
    assert ("H100", 64) in {(t.gpu_type, t.gpus) for t in plan.tables}
    assert set(pages.plan_models(catalog)) >= {e.entry.model for e in catalog.record if e.entry.published} & set(
        catalog.tables.models)


def test_a_size_the_planner_refuses_still_lists_its_published_entries(monkeypatch):
    """A GPU count that is not whole nodes (GB300 trays hold 4 GPUs) is listed with the reason and its entries."""
    catalog = load_catalog(REPO)
    scope = pages.plan_scope(catalog, "kimi-k2")
    monkeypatch.setattr(pages, "plan_scope", lambda *_: replace(scope, sizes=[("GB300", 258)]))
    plan = pages.model_plan(catalog, "kimi-k2", "test")
    assert plan.tables == [] and [(s.gpu_type, s.gpus) for s in plan.skipped] == [("GB300", 258)]
    assert "4-GPU GB300 nodes" in plan.skipped[0].reason and plan.skipped[0].published


def test_kimi_k2_is_planned_where_its_entries_ran():
    """256 GB300s are 64 whole compute trays of NVL72 racks: planned, beside NVIDIA's published figures."""
    plan = read_plan(REPO, "kimi-k2")
    assert [(t.gpu_type, t.gpus) for t in plan.tables] == [("GB300", 256)] and plan.skipped == []
    assert plan.tables[0].published and all(n.predicted is not None for n in plan.tables[0].published)


def _cells(row: str) -> list[str]:
    return [unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]


def test_the_page_shows_them_author_reported_and_linked_to_the_record(bundled_site):
    html = (bundled_site.out / "plan/llama-3.1-70b.html").read_text(encoding="utf-8")
    plan = read_plan(REPO, "llama-3.1-70b")
    table = next(t for t in plan.tables if (t.gpu_type, t.gpus) == ("H100", 64))
    start = html.index('id="plan-h100-64"')
    section = html[start:html.index("</section>", start)]
    assert "Nearest published entries" in section and "author-reported" in section
    body = section[section.index('class="data published-points'):]
    rows = re.findall(r"<tr data-slug=\"([^\"]+)\">(.*?)</tr>", body, re.S)
    assert [slug for slug, _ in rows] == [n.slug for n in table.published]
    record = (bundled_site.out / "models/llama-3.1-70b/h100/public-record.html").read_text(encoding="utf-8")
    for (_, row), n in zip(rows, table.published, strict=True):
        link = re.search(r'href="([^"#]+)#([^"]+)"', row)
        assert link.group(1) == "../models/llama-3.1-70b/h100/public-record.html"
        assert f'id="{link.group(2)}"' in record
        cells = _cells(row)
        assert cells[5] == f"{n.published:,.1f}"
        if n.reason:
            assert cells[6] == f"the planner cannot express it: {unescape(n.reason)}"
    summary = html[html.index('id="plan-summary"'):html.index("</section>", html.index('id="plan-summary"'))]
    answer = re.search(r'<tr data-gpu="H100" data-gpus="64">(.*?)</tr>', summary, re.S).group(1)
    nearest = table.published[0]
    assert _cells(answer)[-1].startswith(f"{nearest.published:,.1f} · 64 × H100 · {nearest.precision}")
    assert "<th>Nearest published (author-reported)</th>" in summary
    if nearest.precision.split("-")[0] != "bf16":  # beside a BF16 prediction, a figure of another precision says so
        assert _cells(answer)[-1].endswith(f"{nearest.precision.split('-')[0].upper()}: not the predicted BF16")
    assert f'title="{nearest.name}"' in answer
    assert "Fastest recipe or run" not in summary  # nothing of Llama 3.1 70B is measured: no empty column
    # the index links the new page as it links the others
    assert 'href="plan/llama-3.1-70b.html"' in (bundled_site.out / "index.html").read_text(encoding="utf-8")


def test_a_model_without_published_entries_says_so_in_one_line(bundled_site):
    plan = read_plan(REPO, "qwen3-8b")
    assert plan.published_entries == 0 and all(t.published == [] for t in plan.tables)
    html = (bundled_site.out / "plan/qwen3-8b.html").read_text(encoding="utf-8")
    assert html.count("No published entry of qwen3-8b is in the public record") == 1
    assert "published-points" not in html and "Nearest published" not in html
