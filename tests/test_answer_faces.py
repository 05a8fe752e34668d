"""The terminal and the home page give the same answer: `openrecipes answer --json` computed now, against the
answers the site build writes from derived/answers/ (here, a grid holding only the points asked), over questions
with measured, published and predicted lines and the kinds of "not offered" the site's questions meet (its
precisions are BF16 and those measured or published at the point, so "no peak" is the terminal's alone)."""

from __future__ import annotations

import json

import pytest
from conftest import REPO, openrecipes

from openrecipes.answer.grid import grid_counts, grid_text
from openrecipes.answer.model import AnswerGrid
from openrecipes.answer.predicted import predicted_point
from openrecipes.catalog.store import load_catalog

QUESTIONS = [  # model, GPU type, count, precision ("" is any)
    ("qwen3-1.7b", "H100", 1, ""),  # predicted by both engines
    ("qwen3-8b", "H200", 2, ""),  # measured, then predicted
    ("qwen3-8b", "H200", 2, "BF16"),
    ("qwen3-0.6b", "H200", 1, "FP8"),  # measured in FP8; the planner answers BF16 only
    ("llama-3.1-8b", "H100", 16, "BF16"),  # published, then predicted
    ("llama-3.1-8b", "GB200", 8, ""),  # published; no price, not predicted on an unpriced type
    ("deepseek-v3", "H100", 8, ""),  # does not fit, from the memory bound
    ("mixtral-8x7b", "H100", 1, ""),  # does not fit either
    ("qwen3-14b", "H800", 2, ""),  # nothing but reasons
    ("qwen3-4b", "A100", 1, "BF16"),  # an unpriced type
    ("gpt-oss-20b", "H200", 8, ""),  # measured, then both engines
]


def grids_for(catalog, questions, folder):
    """The grid files refresh would write, holding only the points asked (a whole grid takes minutes)."""
    folder.mkdir(parents=True, exist_ok=True)
    points: dict[str, list] = {}
    for model, gpu_type, gpus, _ in questions:
        assert gpus in grid_counts(catalog, model, gpu_type)
        if gpu_type in {row.gpu for row in catalog.tables.instances.values()}:
            points.setdefault(model, []).append(predicted_point(catalog, model, gpu_type, gpus))
    for model, found in points.items():
        (folder / f"{model}.json").write_text(grid_text(AnswerGrid(fingerprint="test", model=model,
                                                                   points=tuple(found))))
    return folder


@pytest.mark.slow
def test_the_terminal_and_the_site_give_the_same_lines(tmp_path):
    from openrecipes.site.pages import site_pages
    from openrecipes.site.question import answers_scripts

    catalog = load_catalog(REPO)
    scripts = answers_scripts(site_pages(catalog), grids_for(catalog, QUESTIONS, tmp_path / "answers"))
    kinds, reasons = set(), set()
    for model, gpu_type, gpus, precision in QUESTIONS:
        text = scripts[f"answers/{model}.js"].decode()
        site = json.loads(text[text.index("(") + 1:text.rindex(")")])["answers"][f"{gpu_type}|{gpus}|{precision}"]
        args = ["answer", model, "--gpu", gpu_type, "--gpus", str(gpus), "--json"]
        terminal = json.loads(openrecipes(*args, *(["--precision", precision] if precision else [])).stdout)
        assert [{k: v for k, v in line.items() if k != "href"} for line in site["lines"]] == terminal["lines"]
        assert site["not_offered"] == terminal["not_offered"]
        kinds |= {line["kind"] for line in terminal["lines"]}
        reasons |= {reason.split(":")[0] for reason in terminal["not_offered"]}
    assert kinds == {"measured", "published", "predicted"}
    assert {"does not fit", "no price", "predicted"} <= reasons
