"""Only runnable layouts are planned: on every model of models/, each layout's microbatch and DP divide the global
batch (torchtitan and Megatron both refuse a run otherwise), so `plan`, `plan emit`, `plan export` and the site,
which all rank the planner's enumeration, never offer 12 rows a microbatch at global batch 64."""

from __future__ import annotations

import pytest

from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.engines.registry import ENGINES
from openrecipes.plan.layouts import enumerate_layouts
from openrecipes.plan.predict import PlanRequest, predict
from openrecipes.plan.shape import model_shape

TABLES = load_reference_tables()


@pytest.mark.parametrize("model", sorted(TABLES.models))
def test_every_enumerated_layout_of_every_model_runs_whole_microbatches(model):
    shape = model_shape(TABLES.models[model])
    checked = 0
    for engine in (e.name for e in ENGINES):
        for gpus, global_batch in ((2, 64), (16, 96)):
            for group in enumerate_layouts(shape, gpus, 8192, global_batch, engine, nvlink_domain=8):
                for lay in group:
                    assert global_batch % (lay.dp * lay.rows_per_microbatch) == 0, (engine, lay.label)
                    assert lay.microbatches(global_batch) * lay.dp * lay.rows_per_microbatch == global_batch
                    checked += 1
    assert checked


def test_the_ranked_table_never_offers_a_microbatch_that_does_not_divide_the_global_batch():
    ranked = predict(PlanRequest("qwen3-8b", "H200", 1, engine="torchtitan", global_batch=64), TABLES)
    sizes = {p.layout.rows_per_microbatch for p in ranked}
    assert 12 not in sizes and sizes <= {1, 2, 4, 8, 16}
