"""Every Megatron layout the public record publishes that the planner can express is a row of `plan`'s own table."""

from __future__ import annotations

from conftest import REPO

from openrecipes.catalog.store import load_catalog
from openrecipes.plan.constants import links
from openrecipes.plan.layouts import enumerate_layouts
from openrecipes.plan.public_record import record_points
from openrecipes.plan.shape import model_shape


def _degrees(layout):
    return (layout.tp, layout.pp, layout.vpp, layout.cp, layout.ep, layout.etp, layout.dp,
            layout.rows_per_microbatch, layout.stage_layers)


def test_every_expressible_published_megatron_layout_is_enumerated():
    catalog = load_catalog(REPO)
    wanted: dict[tuple, dict[tuple, str]] = {}  # the layouts each request must enumerate
    for point in record_points(catalog):
        r = point.request
        if r.engine == "megatron":
            key = (r.model, r.gpus, r.row_tokens, r.global_batch, r.variant)
            wanted.setdefault(key, {})[_degrees(point.layout)] = f"{point.slug}: {point.layout.label}"
    assert sum(len(layouts) for layouts in wanted.values()) >= 50
    missing = []
    for (model, gpus, row_tokens, global_batch, variant), layouts in wanted.items():
        left = dict(layouts)
        domain = links(variant, catalog.tables.variants[variant]).gpus_per_nvlink_domain
        for group in enumerate_layouts(model_shape(catalog.tables.models[model]), gpus, row_tokens, global_batch,
                                       "megatron", domain):
            left.pop(_degrees(group[0]), None)
            if not left:
                break
        missing += left.values()
    assert not missing, missing


def test_vp5_is_enumerated_for_llama_70b_at_pp4():
    catalog = load_catalog(REPO)
    shape = model_shape(catalog.tables.models["llama-3.1-70b"])
    vps = {group[0].vpp for group in enumerate_layouts(shape, 64, 8192, 128, "megatron", 8)
           if group[0].pp == 4 and group[0].tp == 4 and group[0].cp == 2}
    assert {1, 2, 4, 5, 10, 20} <= vps
