"""The home page's question, "model M on N x GPU G (in precision P), for T tokens?", answered in the reader's browser
from data scripts written at build time: the answers `openrecipes answer` gives (openrecipes.answer.assemble), for
every model with a card x every GPU type x the counts of its grid (answer/grid.py) x any precision, BF16 and each
precision measured or published there. The planner's part comes from derived/answers/<model>.json, never from the
predictor. answers.js lists the questions; answers/<model>.js holds a model's answers, loaded when asked (site.js
writes them with textContent, scaling each time and cost to the budget in the address).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from openrecipes.answer.assemble import answer, precision_family
from openrecipes.answer.grid import ANSWERS_FOLDER, grid_counts, point_of, predicted_here, read_grids
from openrecipes.answer.model import DEFAULT_TOKENS, AnswerGrid, Question
from openrecipes.catalog.model import Recipe
from openrecipes.catalog.store import Catalog, CatalogEntry
from openrecipes.site.pages import Site, recipe_page_path, recipe_yaml_path
from openrecipes.site.record import record_row_path

ANSWERS_PATH = "answers.js"
MODEL_ANSWERS = "answers/{model}.js"
ANY = ""  # the key of an answer for any precision


def _json(data: object) -> str:
    return json.dumps(data, ensure_ascii=True, separators=(",", ":")).replace("<", "\\u003c")


def entry_hrefs(site: Site) -> dict[str, str]:
    """Each entry's page on the site, by slug: a recipe's page, a summary's YAML, a record row on its page."""
    hrefs = {entry.slug: recipe_page_path(entry) for entry in site.catalog.recipes}
    hrefs |= {entry.slug: recipe_yaml_path(entry) for entry in site.catalog.summaries}
    hrefs |= {row.entry.slug: record_row_path(row) for section in site.sections for rows in section.record.values()
              for row in rows}
    return hrefs


def _precisions(catalog: Catalog, model: str, gpu_type: str, gpus: int) -> list[str]:
    """The precisions asked at a point: any, BF16 and each one measured or published there."""
    entries: list[CatalogEntry] = [*catalog.entries, *catalog.record]
    found = {precision_family(e.entry.workload.precision if isinstance(e.entry, Recipe) else e.entry.precision)
             for e in entries if (e.entry.model, e.entry.gpu.type, e.entry.gpu.count) == (model, gpu_type, gpus)}
    return [ANY, "BF16", *sorted(found - {"BF16"})]


def model_answers(site: Site, model: str, grid: AnswerGrid | None, hrefs: dict[str, str]) -> dict[str, dict]:
    """Every answer of one model, by "GPU|count|precision", each line with its page on the site."""
    # the model's own entries only: an answer reads nothing else of the catalog, and there are thousands of answers
    catalog = replace(site.catalog, entries=tuple(e for e in site.catalog.entries if e.entry.model == model),
                      record=tuple(e for e in site.catalog.record if e.entry.model == model))
    answers = {}
    missing = (f"predicted: not computed yet for {model} (derived/answers/{model}.json): run `openrecipes "
               "refresh`")
    for gpu_type in catalog.tables.gpus:
        for gpus in grid_counts(catalog, model, gpu_type):
            here = predicted_here(catalog, model, gpu_type, gpus)
            point = None if here else point_of(grid, gpu_type, gpus)
            for precision in _precisions(catalog, model, gpu_type, gpus):
                question = Question(model=model, gpu_type=gpu_type, gpus=gpus, precision=precision or None,
                                    tokens=DEFAULT_TOKENS)
                found = answer(question, catalog, site.evidence, point, here or missing)
                answers[f"{gpu_type}|{gpus}|{precision}"] = {
                    "lines": [{**line.model_dump(mode="json"), "href": hrefs.get(line.slug or "")}
                              for line in found.lines],
                    "not_offered": list(found.not_offered)}
    return answers


def answers_scripts(site: Site, folder: Path = ANSWERS_FOLDER) -> dict[str, bytes]:
    """answers.js (the models, GPU types and counts the form offers, the budget) and answers/<model>.js each."""
    grids = read_grids(folder)
    hrefs = entry_hrefs(site)
    models = [section.name for section in site.sections if section.name in site.catalog.tables.models]
    index = {"models": models, "budget": DEFAULT_TOKENS, "gpus": {
        model: {gpu_type: grid_counts(site.catalog, model, gpu_type) for gpu_type in site.catalog.tables.gpus}
        for model in models}}
    scripts = {ANSWERS_PATH: f"window.openrecipesAnswers = {_json(index)};\n".encode("ascii")}
    for model in models:
        data = {"model": model, "answers": model_answers(site, model, grids.get(model), hrefs)}
        scripts[MODEL_ANSWERS.format(model=model)] = f"window.openrecipesAnswers.receive({_json(data)});\n".encode(
            "ascii")
    return scripts
