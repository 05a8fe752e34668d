"""Precision boards on the site: an FP8 recipe on its own board, its MFU against the BF16 peak with the FP8 peak
beside it, and the levers in the recipe page's layout facts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_levers_catalog import FP8, QWEN3_8B, variant, write

from openrecipes import figures
from openrecipes.catalog import facts
from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.catalog.leaderboard import best_per_gpu, boards
from openrecipes.catalog.model import Recipe
from openrecipes.catalog.store import load_catalog
from openrecipes.site.build import build_site

FP8_TOKENS = 11800.0  # a fixture figure, not a measurement
CHROMIUM = Path("/usr/bin/chromium")


def fp8_twin() -> dict:
    """The Qwen3-8B recipe's FP8 twin with fused kernels, faster than every BF16 recipe; its figures recomputed."""
    data = variant(kernels=["liger-rmsnorm", "liger-fused-linear-cross-entropy"], attention="sdpa-cudnn", float8=FP8)
    tables = load_reference_tables()
    gpu, instance = tables.gpus["H200"], tables.instances[data["gpu"]["instance"]]
    result = data["result"]
    result["tokens_per_s_per_gpu"] = FP8_TOKENS
    result["mfu"] = round(figures.mfu(result["active_params"]["count"], FP8_TOKENS, gpu.peak_bf16_flops), 4)
    result["usd_per_million_tokens"] = round(figures.usd_per_million_tokens(
        figures.usd_per_gpu_hour(instance.usd_per_hour, instance.gpus), FP8_TOKENS), 2)
    return data


@pytest.fixture(scope="module")
def catalog_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("fp8-catalog")
    write(root, variant(), QWEN3_8B.name)  # the BF16 recipe without its raw logs
    write(root, fp8_twin(), "openrecipes-fp8-tensorwise.yaml")
    shutil.rmtree(root / "recipes/x")  # write_recipe's staging copy
    return root


def test_fp8_recipes_form_their_own_board_and_never_lead_the_bf16_summaries(catalog_root):
    catalog = load_catalog(catalog_root)
    found = {(b.workload.precision, tuple(e.slug for e in b.ranked)) for b in boards(catalog)}
    assert found == {("bf16", ("qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1",)),
                     ("fp8", ("qwen3-8b/h200/openrecipes-fp8-tensorwise",))}
    best = best_per_gpu(catalog, "qwen3-8b")
    assert [b.fastest.slug for b in best] == ["qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1"]


def test_fp8_mfu_stays_against_bf16_with_the_fp8_peak_beside_it(catalog_root):
    entry = load_catalog(catalog_root).find("openrecipes-fp8-tensorwise")
    gpu = load_reference_tables().gpus["H200"]
    text = facts.mfu(entry.entry, gpu)
    bf16_mfu = figures.mfu(8190735360, FP8_TOKENS, 989e12)
    assert text.startswith(f"{bf16_mfu * 100:.1f}% (N = 8,190,735,360")
    assert "defined against the dense BF16 peak (989 TFLOP/s)" in text
    assert f"dense FP8 peak (1,979 TFLOP/s) it is {bf16_mfu * 989 / 1979 * 100:.1f}%" in text
    bf16 = load_catalog(catalog_root).find("openrecipes-fsdp2-compile-noac-mb1").entry
    assert "FP8" not in facts.mfu(bf16, gpu)


def test_recipe_facts_show_the_levers():
    shown = dict(facts.recipe_facts(Recipe.model_validate(fp8_twin())))
    assert shown["Fused kernels"] == "Liger-Kernel: liger-rmsnorm, liger-fused-linear-cross-entropy"
    assert shown["Attention"] == "sdpa-cudnn"
    assert shown["FP8 training"] == ("torchao float8 linear layers, tensorwise scaling; weights all-gathered in FP8; "
                                     "scales precomputed in one all-reduce; kept in BF16: output")
    assert not {"Fused kernels", "Attention", "FP8 training"} & set(dict(facts.recipe_facts(
        Recipe.model_validate(variant()))))


def test_built_site_has_an_fp8_board_that_says_which_peak(catalog_root, tmp_path):
    built = build_site(load_catalog(catalog_root), tmp_path / "site")
    board = (built.out / "models/qwen3-8b/h200/rows8192-gb16-fp8.html").read_text()
    assert "Training qwen3-8b on H200 in FP8" in board
    assert "ranked only against each other, never with BF16 recipes" in board
    assert "dense BF16 peak (989 TFLOP/s)" in board and "dense FP8 peak (1,979 TFLOP/s)" in board
    assert "rows8192-gb16-bf16.html" in board  # the BF16 board of the same GPU, linked as another board
    bf16_board = (built.out / "models/qwen3-8b/h200/rows8192-gb16-bf16.html").read_text()
    assert "precision-note" not in bf16_board and "rows8192-gb16-fp8.html" in bf16_board
    page = (built.out / "recipes/qwen3-8b/h200/openrecipes-fp8-tensorwise.html").read_text()
    assert 'data-fact="FP8 training"' in page and "dense FP8 peak (1,979 TFLOP/s)" in page


@pytest.mark.browser
def test_fp8_board_in_chromium_links_its_bf16_sibling(catalog_root, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed")
    from site_helpers import served

    built = build_site(load_catalog(catalog_root), tmp_path / "site")
    with served(built.out) as base, sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                             args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        page.goto(f"{base}models/qwen3-8b/h200/rows8192-gb16-fp8.html")
        assert page.locator("#workload-label").inner_text().endswith("FP8")
        assert "never with BF16 recipes" in page.locator("#precision-note").inner_text()
        assert page.locator("#leaderboard tbody tr").count() == 1
        page.locator(".other-boards a").click()
        assert page.url.endswith("rows8192-gb16-bf16.html")
        assert page.locator("#precision-note").count() == 0
        browser.close()
