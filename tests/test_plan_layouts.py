"""Enumeration yields only valid layouts: the GPU count factors, experts place, layers split, rows divide."""

from __future__ import annotations

from dataclasses import replace

from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from layout_helpers import relaid

from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.plan.layouts import enumerate_layouts, stage_split
from openrecipes.plan.shape import model_shape

SHAPES = {name: model_shape(card) for name, card in load_reference_tables().models.items()}


def test_stage_split_is_even_or_megatron_first_last_with_the_lightest_heaviest_stage():
    assert stage_split(78, 2) == (39, 39)
    assert stage_split(24, 7) == (2, 4, 4, 4, 4, 4, 2)
    # DeepSeek-V3's 61 layers over 16 stages: the step waits on the heaviest stage, so 4 layers, never 10
    assert stage_split(61, 16) == (2, *(4,) * 14, 3)
    assert stage_split(4, 8) is None
    for layers in range(1, 130):
        for pp in range(1, 17):
            split = stage_split(layers, pp)
            if split is not None:
                assert sum(split) == layers and len(split) == pp and min(split) >= 1
                heaviest = -(-layers // pp)
                if pp == 2 or layers - heaviest * (pp - 2) >= 2:  # first and last stages keep a layer each
                    assert max(split) == heaviest
                assert len(set(split[1:-1])) <= 1  # Megatron's rule: equal middle stages


@settings(max_examples=examples(25), deadline=None)
@given(model=st.sampled_from(sorted(SHAPES)), gpus=st.sampled_from([1, 2, 3, 4, 6, 8, 16]),
       engine=st.sampled_from(["megatron", "torchtitan"]), global_batch=st.sampled_from([32, 96, 128]),
       row_tokens=st.sampled_from([4096, 8192]))
def test_every_enumerated_layout_is_valid(model, gpus, engine, global_batch, row_tokens):
    shape = SHAPES[model]
    groups = list(enumerate_layouts(shape, gpus, row_tokens, global_batch, engine, nvlink_domain=8))
    layouts = [lay for group in groups for lay in group]
    assert len(layouts) == len(set(layouts))
    for group in groups:  # a group's layouts differ in the offloaded optimizer fraction alone
        assert len({relaid(lay, offload_fraction=0.0) for lay in group}) == 1
        assert len({lay.levers.offload_fraction for lay in group}) == len(group)
    for lay in layouts:
        assert lay.tp * lay.pp * lay.cp * lay.dp == gpus
        assert lay.tp <= 8 and shape.attention_heads % lay.tp == 0 and shape.query_groups % lay.tp == 0
        assert sum(lay.stage_layers) == shape.layers and len(lay.stage_layers) == lay.pp
        # VP splits each middle stage evenly (uneven first and last stages take their own chunks)
        split = lay.stage_layers  # VP divides a stage's layers, the embedding or the loss in the first or last's
        assert min(split) >= 1 and any(n % lay.vpp == 0 for n in (*split, split[0] + 1, split[-1] + 1))
        assert global_batch % lay.dp == 0 and lay.rows_per_microbatch <= global_batch // lay.dp
        assert lay.max_tokens_per_gpu * lay.cp == lay.rows_per_microbatch * row_tokens
        assert lay.cp == 1 or row_tokens % (2 * lay.cp) == 0
        assert (lay.tp * lay.cp * lay.dp) % (lay.ep * lay.etp) == 0
        assert lay.etp in (1, lay.tp)
        if shape.is_moe:
            assert shape.experts % lay.ep == 0
        else:
            assert lay.ep == lay.etp == 1
        if engine == "torchtitan":
            assert (lay.cp * lay.dp) % lay.ep == 0 and lay.levers.offload_fraction == 0.0


def test_a_dense_model_plans_under_torchtitan_on_one_gpu():
    """A synthetic dense card (Llama-like shape, not a catalog model): no experts, FSDP states, one GPU."""
    from openrecipes.catalog.hardware import ModelCard
    from openrecipes.plan.predict import PlanRequest, predict

    tables = load_reference_tables()
    card = ModelCard(name="dense-test", family="test", notes=[], notes_source="test", total_params=None,
                     active_params={"count": 1_000_000_000, "source": "test", "revision": None},
                     architecture={"layers": 16, "hidden_size": 2048, "ffn_hidden_size": 8192, "attention_heads": 16,
                                   "query_groups": 8, "kv_channels": 128, "padded_vocab_size": 128000,
                                   "untied_embeddings": False})
    ranked = predict(PlanRequest("dense-test", "H200", 1, engine="torchtitan"),
                     replace(tables, models={**tables.models, "dense-test": card}))
    best = ranked[0]
    assert best.fits and best.layout.gpus == 1 and best.layout.ep == 1
    # One GPU: no FSDP; torchtitan trains under AMP, whose eager BF16 weight copies replace FSDP's gathered layers.
    assert set(best.memory.parts) >= {"weights", "gradients", "optimizer_states", "amp_weight_copies", "activations"}
