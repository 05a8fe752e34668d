"""The planner is fitted on a named snapshot of the catalog (derived/fitted_on.json): a recipe added since touches
its own model's plan, not the fit, the held-out tables or any other plan, and is predicted as data the planner has
not seen until `refresh --refit` fits on it."""

from __future__ import annotations

import shutil

import pytest
from conftest import REPO, openrecipes

from openrecipes.catalog.store import load_catalog
from openrecipes.plan import fitted_on
from openrecipes.plan.calibrate import measured_point, predict_point
from openrecipes.plan.score import unseen, unseen_words
from openrecipes.refresh import run_step
from openrecipes.tune import fingerprint as seal

FITTED_RECIPE = "recipes/qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1.yaml"  # a speed point of the fit
NEW_SLUG = "qwen3-8b/h200/contributed"


@pytest.fixture
def catalog(tmp_path, monkeypatch):
    """A clone of the catalog, its own snapshot file in place of the package's."""
    root = tmp_path / "catalog"
    for name in ("recipes", "models", "hardware", "rules", "schema", "runs", "plans"):
        shutil.copytree(REPO / name, root / name)
    snapshot = tmp_path / "fitted_on.json"  # fitted on every entry there, whatever waits in this checkout
    snapshot.write_text(fitted_on.snapshot_text(fitted_on.catalog_slugs(load_catalog(root))), encoding="utf-8")
    monkeypatch.setattr(fitted_on, "FITTED_ON_FILE", snapshot)
    return root


def _contribute(root) -> None:
    shutil.copy(root / FITTED_RECIPE, root / f"recipes/{NEW_SLUG}.yaml")


def test_the_committed_snapshot_names_entries_of_the_catalog():
    """Only entries that are there (a contributed recipe may wait outside it: that is not a failure)."""
    named = fitted_on.fitted_slugs()
    assert named and named <= frozenset(fitted_on.catalog_slugs(load_catalog(REPO)))


def test_a_new_recipe_waits_outside_the_fit_until_refit(catalog):
    from openrecipes.plan.calibrate import speed_points

    before = seal.derived_inputs(load_catalog(catalog))
    plans_before = seal.plan_inputs(load_catalog(catalog))
    _contribute(catalog)
    loaded = load_catalog(catalog)
    assert seal.derived_inputs(loaded) == before  # the fit and both held-out tables stay as they are
    assert {m for m, inputs in seal.plan_inputs(loaded).items() if inputs != plans_before[m]} == {"qwen3-8b"}
    slugs = {p.slug for p in speed_points(catalog)}
    assert NEW_SLUG not in slugs and FITTED_RECIPE.removeprefix("recipes/").removesuffix(".yaml") in slugs

    waiting = run_step("fitted_on", catalog, check=True)
    assert waiting.stale is None
    assert waiting.note is not None and waiting.note.startswith("1 entry added since the planner's fit")
    assert NEW_SLUG in waiting.note and "refresh --refit" in waiting.note
    [seen] = unseen({NEW_SLUG}, loaded)  # the fit as it stands predicts it: its out-of-sample error
    original = loaded.find(FITTED_RECIPE.removeprefix("recipes/").removesuffix(".yaml")).entry
    assert seen.measured == original.result.tokens_per_s_per_gpu
    assert seen.predicted == predict_point(measured_point(NEW_SLUG, original)).tokens_per_s_per_gpu
    assert f"predicted {seen.error:+.1%}, {'inside' if seen.inside else 'outside'} its range" in waiting.note
    assert run_step("fitted_on", catalog, check=False).stale is None  # a plain refresh keeps it waiting
    assert NEW_SLUG not in (fitted_on.fitted_slugs() or ())

    refit = run_step("fitted_on", catalog, check=False, refit=True)
    assert refit.stale == "1 entry added since the last fit" and refit.note is None
    assert NEW_SLUG in (fitted_on.fitted_slugs() or ())
    assert seal.derived_inputs(load_catalog(catalog)) != before  # now the fit and its tables follow


def test_an_entry_gone_from_the_catalog_is_stale_and_refresh_drops_it(catalog):
    (catalog / FITTED_RECIPE).unlink()
    gone = FITTED_RECIPE.removeprefix("recipes/").removesuffix(".yaml")
    checked = run_step("fitted_on", catalog, check=True)
    assert checked.stale == f"names 1 entry no longer in the catalog ({gone})"
    assert gone in (fitted_on.fitted_slugs() or ())  # --check wrote nothing
    assert run_step("fitted_on", catalog, check=False).stale == checked.stale
    assert gone not in (fitted_on.fitted_slugs() or ())
    assert run_step("fitted_on", catalog, check=True).stale is None


@pytest.mark.parametrize("text", ["not json", '{"entries": "qwen3-8b"}', "[]"])
def test_refit_writes_a_broken_snapshot_again_naming_every_entry(catalog, text):
    """`refresh` and `--check` refuse such a file before any step (tests/test_refresh_hostile.py); `--refit` is how it
    is written again."""
    fitted_on.FITTED_ON_FILE.write_text(text, encoding="utf-8")
    stale = run_step("fitted_on", catalog, check=False, refit=True).stale
    assert stale is not None and "fitted_on.json" in stale and "refresh --refit" in stale
    assert fitted_on.fitted_slugs() == frozenset(fitted_on.catalog_slugs(load_catalog(catalog)))


def test_published_entries_added_since_the_fit_are_scored_together():
    catalog = load_catalog(REPO)
    slugs = {e.slug for e in catalog.record if e.entry.model == "llama-3.1-8b"}
    found = unseen(slugs, catalog)
    assert found and {u.slug for u in found} <= slugs
    words = unseen_words(found)
    assert words.startswith(f"{len(found)} predicted, median |error| ")
    assert words.endswith(f"{sum(u.inside for u in found)} inside their range")


def test_a_published_entry_added_since_the_fit_is_held_out_as_predicted(monkeypatch):
    from openrecipes.plan import public_record

    catalog = load_catalog(REPO)
    fitted = {row.slug: row for row in public_record.compared(catalog) if row.held_out is not None}
    slug, row = next(iter(sorted(fitted.items())))
    assert row.held_out != row.predicted  # fitted on: its leave-one-out prediction
    monkeypatch.setattr(public_record, "fitted_slugs", lambda: frozenset(fitted) - {slug})
    entry = next(e for e in catalog.record if e.slug == slug)
    assert public_record.compare(entry, catalog).held_out == row.predicted  # never fitted on: as it stands


def test_check_and_refit_together_is_refused_in_one_line():
    done = openrecipes("refresh", "--check", "--refit")
    assert done.returncode == 2 and "give one of them" in done.stderr and "Traceback" not in done.stderr
