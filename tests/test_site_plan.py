"""The Plan page: read from the exported plans (plans/*.json), every figure plan_table's, the short answer first,
the measured recipes next to the planner's prediction of their own layout, and no predictor in the site."""

from __future__ import annotations

import re
from html import unescape

import pytest
from site_helpers import REPO

from openrecipes import figures
from openrecipes.catalog.store import load_catalog
from openrecipes.plan import pages
from openrecipes.plan.predict import plan_table
from openrecipes.plan.trust import stored_points
from openrecipes.site import format as fmt
from openrecipes.site.plan import read_plan
from openrecipes.site.settings import read_token_budget

GPTOSS_PAGE = "plan/gpt-oss-20b.html"


@pytest.fixture(scope="module")
def h200_rows():
    """Every ranked layout of gpt-oss-20b on 8 x H200, planned as its recipes run (BF16 gradient buffers)."""
    return plan_table("gpt-oss-20b", "H200", 8, grad_reduce_bf16=True)


def _section(site, page: str, anchor: str) -> str:
    html = (site.out / page).read_text(encoding="utf-8")
    start = html.index(f'id="{anchor}"')
    end = html.find('<section class="plan-table"', start)
    return html[start:end if end > 0 else len(html)]


def _rows(html: str, table_class: str) -> list[str]:
    body = html[re.search(rf'class="data[^"]* {table_class}[ "]', html).start():]
    body = body[body.index("<tbody>"):body.index("</tbody>")]
    return re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)


def _values(row: str) -> list[str]:
    return [unescape(v) for v in re.findall(r'data-value="([^"]*)"', row)]


def _cells(row: str) -> list[str]:
    return [unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]


def test_the_seed_layout_fits_8_h200_with_its_prediction_beside_the_measured_figure(bundled_site, h200_rows):
    section = _section(bundled_site, GPTOSS_PAGE, "plan-h200-8")
    measured = next(r for r in _rows(section, "measured-points") if "attune-tp1-pp1-ep4.html" in r)
    cells = _cells(measured)
    assert cells[1].startswith("TP1 PP1 EP4 DP8 · none recompute")
    assert cells[2] == "10,483.91 BF16"  # the measured figure and the precision it was reached in
    own = next(r for r in h200_rows if (r.label, r.recompute, r.offload_fraction, r.max_tokens_per_gpu)
               == ("TP1 PP1 EP4 DP8", "none", 0.0, 8192))
    assert own.fits
    assert cells[3] == f"{own.tokens_per_s_per_gpu:,.1f}" and _values(measured)[2] == str(own.memory_gib)
    assert "weights" in cells[5]  # the memory parts, visible without hover
    fitting = [r for r in h200_rows if r.fits]
    rank = 1 + sum(r.tokens_per_s_per_gpu > own.tokens_per_s_per_gpu for r in fitting)
    assert cells[6] == f"fits; #{rank} of {len(fitting):,}"
    error = next(p.error for p in stored_points() if p.name == "gpt-oss-20b/h200/attune-tp1-pp1-ep4")
    assert cells[7] == f"{round(error, 4) * 100:+.1f}%"  # as plans/ stores it (four decimals)
    assert "Predicted, not measured." in (bundled_site.out / GPTOSS_PAGE).read_text(encoding="utf-8")


def test_every_row_is_plan_tables(bundled_site, h200_rows):
    """Each shown row against plan_table's object for gpt-oss-20b on 8 x H200 (GLM's tables come from the same
    code; planning GLM on 64 GPUs again here would cost the test 4 s)."""
    section = _section(bundled_site, GPTOSS_PAGE, "plan-h200-8")
    page = (bundled_site.out / GPTOSS_PAGE).read_text(encoding="utf-8")
    expected = [r for r in h200_rows if r.fits][:pages.PLAN_TOP]
    shown = _rows(section, "plan-rows")
    assert len(shown) == pages.PLAN_TOP
    for row, want in zip(shown, expected, strict=False):
        assert _cells(row)[1:4] == [want.label, "BF16", want.recompute]  # every prediction says its precision
        usd = "" if want.usd_per_million_tokens is None else str(want.usd_per_million_tokens)
        figures = ("offload_fraction", "max_tokens_per_gpu", "memory_gib", "headroom_gib", "tokens_per_s_per_gpu",
                   "mfu")
        assert _values(row)[1:] == [str(getattr(want, k)) for k in figures] + [usd]
        interval = want.interval
        assert f"{interval.low:,.1f}–{interval.high:,.1f}" in _cells(row)[9]
        number = re.search(r'href="#range-basis-(\d+)"', row).group(1)  # the basis of the range, named
        assert f'<li id="range-basis-{number}">Basis {number}: {interval.basis}</li>' in unescape(page)
    misses = _rows(section, "plan-misses")
    not_fitting = {(r.label, r.recompute, r.offload_fraction, r.max_tokens_per_gpu): r
                   for r in h200_rows if not r.fits}
    assert misses
    for row in misses:
        cells = _cells(row)
        want = not_fitting[(cells[0], cells[2], float(_values(row)[0]), int(_values(row)[1]))]
        assert cells[-1] == want.reason and _values(row)[4] == str(want.tokens_per_s_per_gpu)


def test_the_short_answer_comes_first_with_the_best_measured_beside_it(bundled_site, h200_rows):
    html = (bundled_site.out / GPTOSS_PAGE).read_text(encoding="utf-8")
    assert html.index('id="plan-summary"') < html.index('<section class="plan-table"') < html.index('id="calibration"')
    assert "<details class=\"calibration\"" in html
    summary = html[html.index('id="plan-summary"'):html.index("</section>", html.index('id="plan-summary"'))]
    row = re.search(r'<tr data-gpu="H200" data-gpus="8">(.*?)</tr>', summary, re.S).group(1)
    best = next(r for r in h200_rows if r.fits)
    cells = _cells("<tr>" + row + "</tr>")
    assert cells[1].startswith(best.label) and cells[2] == "BF16" and cells[3] == f"{best.tokens_per_s_per_gpu:,.1f}"
    # the wall time and cost of site.yaml's token budget at the predicted speed, through figures.py
    table = next(t for t in read_plan(REPO, "gpt-oss-20b").tables if (t.gpu_type, t.gpus) == ("H200", 8))
    budget = read_token_budget(REPO)
    hours = figures.time_to_train_hours(budget, best.tokens_per_s_per_gpu, 8)
    cost = figures.cost_to_train_usd(budget, best.tokens_per_s_per_gpu, table.usd_per_gpu_hour)
    assert cells[6] == f"{fmt.duration(hours)} · {fmt.usd_total(cost)}"
    assert "attune-tp1-pp1-ep4" in cells[7] and "10,483.9" in cells[7]
    assert cells[7].endswith("author-reported")  # a seed: its evidence level, never "measured"


def test_torchtitan_rows_offer_the_planned_recipe(bundled_site):
    section = _section(bundled_site, "plan/qwen3-8b.html", "plan-h200-2")
    first = _rows(section, "plan-rows")[0]
    command = re.search(r'<pre class="code" id="([^"]+)">([^<]+)</pre>', first)
    assert command and 'data-copy="' + command.group(1) + '"' in first
    assert unescape(command.group(2)).startswith("openrecipes plan qwen3-8b --gpu H200 --gpus 2 --engine torchtitan "
                                                 "--global-batch 16 --emit-recipe ")
    link = re.search(r'href="([^"]+\.yaml)" download', first).group(1)
    text = (bundled_site.out / "plan" / link).resolve().read_text()
    assert "\nstatus: planned\n" in text


def test_glm_on_one_node_shows_why_nothing_fits(bundled_site):
    section = _section(bundled_site, "plan/glm-5.2-744b-a40b.html", "plan-b200-8")
    assert "No layout fits 8 × B200." in section
    assert len(_rows(section, "plan-misses")) == pages.CLOSEST_MISSES + pages.FASTEST_MISSES


def test_plan_pages_are_linked_from_the_index_and_every_board(bundled_site):
    index = (bundled_site.out / "index.html").read_text(encoding="utf-8")
    assert 'href="plan/gpt-oss-20b.html"' in index and 'href="plan/glm-5.2-744b-a40b.html"' in index
    board = (bundled_site.out / "models/glm-5.2-744b-a40b/b200/rows8192-gb128-bf16.html").read_text(encoding="utf-8")
    assert 'href="../../../plan/glm-5.2-744b-a40b.html"' in board


def test_tables_do_not_depend_on_the_recipes():
    catalog = load_catalog(REPO)
    assert pages.plan_counts(catalog, "gpt-oss-20b") == [8]
    assert pages.plan_counts(catalog, "GLM-5.2-744B-A40B") == [8, 64]
    assert pages.model_settings(catalog, "gpt-oss-20b").grad_reduce_bf16
    assert not pages.model_settings(catalog, "GLM-5.2-744B-A40B").grad_reduce_bf16


def test_our_runs_without_a_recipe_sit_beside_their_predictions(bundled_site):
    """Our Qwen3-1.7B runs that no recipe holds (reference_points.yaml own_runs: the tune sweep's 15 layouts, two
    earlier ones, seven lever arms and three arms of the FP8 calls) on the 1 x H200 table: each measured figure is
    its row's, each prediction the planner's."""
    from openrecipes.plan.calibrate import measured_points, predict_point
    from openrecipes.plan.constants import calibration
    from openrecipes.plan.points import reference_rows

    section = _section(bundled_site, "plan/qwen3-1.7b.html", "plan-h200-1")
    rows = _rows(section, "run-points")
    recipes = {entry.slug for entry in load_catalog(REPO).recipes}
    sweep = {r["name"]: r for r in reference_rows() if "log" in r and r["model"] == "qwen3-1.7b"
             and r["name"] not in recipes}
    assert len(rows) == len(sweep) == 27
    names = re.findall(r'data-name="([^"]+)"', section)
    assert set(names) == set(sweep)
    measured = [float(_values(row)[0]) for row in rows]
    assert measured == sorted(measured, reverse=True)  # fastest first
    for row, name in zip(rows, names, strict=False):
        tokens, predicted, memory, predicted_gib = map(float, _values(row))
        prediction = predict_point(measured_points()[name])
        assert tokens == sweep[name]["tokens_per_s_per_gpu"] and memory == sweep[name]["memory_gib"]
        assert predicted == round(prediction.tokens_per_s_per_gpu, 1)
        assert predicted_gib == pytest.approx(prediction.memory.total_gib - calibration().runtime_reserve_gib, abs=0.01)
        assert sweep[name]["log"] in row
        # the table plans compiled and eager layouts alike: every fitting run is ranked among them
        # (a layout inside the memory margin is not ranked, and says so)
        if "inside the margin" not in row and "does not fit" not in row:
            assert "fits; #" in row


def _broken(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize("edit, field", [
    (lambda t: _broken(t, '"measured_total"', '"measured_count"'), "tables.0.measured_total: Field required"),
    (lambda t: _broken(t, '"rank": 1,', '"rank": "first",'),  # qwen3-8b's third table: 2 x H200, from its recipe
     "tables.2.data.rows.0.planned_recipe.rank: Input should be a valid integer"),
    (lambda t: _broken(t, '"gpus": 2,', '"gpus": 2, "anchor": "x",'),
     "tables.0.anchor: Extra inputs are not permitted"),
    (lambda t: t[:-40], "Invalid JSON"),
])
def test_a_stale_or_edited_plan_is_one_line_naming_the_file_field_and_fix(tmp_path, edit, field):
    from openrecipes.errors import UserError
    from openrecipes.site.plan import read_plan

    (tmp_path / "plans").mkdir()
    path = tmp_path / "plans/qwen3-8b.json"
    path.write_text(edit((REPO / "plans/qwen3-8b.json").read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(UserError) as error:
        read_plan(tmp_path, "qwen3-8b")
    message = str(error.value)
    assert message.startswith(f"{path}: {field}") and "\n" not in message
    assert message.endswith("; re-export it with `openrecipes plan export --out plans`")


def test_site_build_refuses_a_stale_plan_with_exit_2_and_writes_nothing(tmp_path):
    import shutil

    from conftest import openrecipes

    root = tmp_path / "catalog"
    for folder in ("recipes", "models", "hardware", "runs"):
        shutil.copytree(REPO / folder, root / folder)
    (root / "plans").mkdir()
    plan = root / "plans/gpt-oss-20b.json"
    plan.write_text((REPO / plan.relative_to(root)).read_text(encoding="utf-8").replace('"runs":', '"old_runs":'),
                    encoding="utf-8")
    result = openrecipes("site", "build", "--out", str(tmp_path / "site"), "--catalog", str(root))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {plan}: tables.0.runs: Field required; re-export it with `openrecipes plan export --out plans`"]
    assert "Traceback" not in result.stderr and not (tmp_path / "site").exists()
