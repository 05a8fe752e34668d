"""refresh's answers step: a grid is computed again only when its model's seal moved (or it is missing or not a
grid), a grid of a model that left is removed, `--check` writes nothing, and every written grid reads back; the
planner itself is stood in for (a whole grid takes minutes of CPU)."""

from __future__ import annotations

import pytest

from openrecipes.answer import refresh
from openrecipes.answer.grid import read_grids
from openrecipes.answer.model import AnswerGrid


@pytest.fixture
def stand_ins(monkeypatch):
    computed: list[str] = []
    seals = {"model-a": "seal-a", "model-b": "seal-b"}

    def compute(catalog, model, inputs, progress):
        computed.append(model)
        return AnswerGrid(fingerprint=inputs, model=model, points=())

    monkeypatch.setattr(refresh, "grid_inputs", lambda catalog: dict(seals))
    monkeypatch.setattr(refresh, "compute_grid", compute)
    return computed, seals


def test_only_stale_grids_are_computed_again(tmp_path, stand_ins):
    computed, seals = stand_ins
    said: list[str] = []
    assert "missing" in refresh.refresh_grids(None, tmp_path, True, said.append)
    assert computed == [] and not list(tmp_path.glob("*.json"))  # --check writes nothing
    assert "missing" in refresh.refresh_grids(None, tmp_path, False, said.append)
    assert computed == ["model-a", "model-b"]
    assert {m: g.fingerprint for m, g in read_grids(tmp_path).items()} == seals
    assert refresh.refresh_grids(None, tmp_path, False, said.append) is None and len(computed) == 2
    seals["model-b"] = "moved"
    (tmp_path / "model-gone.json").write_text("{}")
    stale = refresh.refresh_grids(None, tmp_path, False, said.append)
    assert "model-b.json (its inputs or the planner's version changed)" in stale and "model-gone.json" in stale
    assert computed[2:] == ["model-b"] and sorted(p.stem for p in tmp_path.glob("*.json")) == ["model-a", "model-b"]
    assert any("answer grids stale" in line for line in said)


def test_check_computes_sampled_points_again_and_names_a_grid_edited_with_its_seal_kept(tmp_path, stand_ins,
                                                                                         monkeypatch):
    from openrecipes.answer.grid import grid_text
    from openrecipes.answer.model import PredictedLine, PredictedPoint

    _, seals = stand_ins
    line = PredictedLine(engine="megatron", layout="TP1 PP1 DP8 MB1", tokens_per_s_per_gpu=1000.0, low=900.0,
                         high=1100.0, get="openrecipes plan emit ...")
    planner = {("H100", 8): PredictedPoint(gpu_type="H100", gpus=8, lines=(line,), not_offered=())}
    monkeypatch.setattr(refresh, "predicted_point", lambda catalog, model, gpu_type, gpus: planner[(gpu_type, gpus)])
    for model, seal in seals.items():
        (tmp_path / f"{model}.json").write_text(grid_text(AnswerGrid(fingerprint=seal, model=model,
                                                                     points=(planner[("H100", 8)],))))
    said: list[str] = []
    assert refresh.refresh_grids(None, tmp_path, True, said.append, sample=2) is None
    assert sum("computed again and compared: the same" in line for line in said) == 2
    edited = line.model_copy(update={"tokens_per_s_per_gpu": 2000.0})
    (tmp_path / "model-a.json").write_text(grid_text(AnswerGrid(fingerprint="seal-a", model="model-a", points=(
        PredictedPoint(gpu_type="H100", gpus=8, lines=(edited,), not_offered=()),))))
    stale = refresh.refresh_grids(None, tmp_path, True, said.append, sample=2)
    assert stale is not None and "model-a.json (its contents differ" in stale and "model-b" not in stale
