"""Our rows.parquet as torchtitan batches: next-token labels, ignored where the target is unsupervised."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest


@pytest.fixture(scope="module")
def rows(torch):
    from openrecipes.launch.torchtitan import rows

    return rows


def _parquet(path, rows):
    table = pa.table({
        "input_ids": pa.array([ids for ids, _ in rows], pa.list_(pa.int32())),
        "loss_mask": pa.array([mask for _, mask in rows], pa.list_(pa.uint8())),
    })
    pq.write_table(table, path)
    return path


def test_labels_are_the_next_token_where_it_is_supervised(torch, rows):
    ids = torch.tensor([[10, 11, 12, 13, 14]])
    mask = torch.tensor([[0, 0, 1, 1, 0]], dtype=torch.uint8)
    labels = rows.next_token_labels(ids, mask)
    assert labels.tolist() == [[rows.IGNORE_INDEX, 12, 13, rows.IGNORE_INDEX, rows.IGNORE_INDEX]]
    assert labels.dtype == torch.long


def test_loader_batches_one_ranks_rows_in_file_order(tmp_path, torch, rows):
    data = [([r * 10 + t for t in range(4)], [0, 1, 1, 1]) for r in range(6)]
    path = _parquet(tmp_path / "rows.parquet", data)
    loader = rows.RowsDataLoader(path, local_batch_size=2, seq_len=4, dp_rank=1, dp_world_size=2)
    batches = list(loader)
    assert len(batches) == 1  # rank 1 holds rows 1, 3, 5: one full batch of 2, the last row is left over
    inputs, labels = batches[0]
    assert inputs["input"].tolist() == [[10, 11, 12, 13], [30, 31, 32, 33]]
    assert inputs["input"].dtype == torch.int64
    assert labels.tolist() == [[11, 12, 13, rows.IGNORE_INDEX], [31, 32, 33, rows.IGNORE_INDEX]]
    assert loader.state_dict() == {"position": 2}


def test_loader_resumes_from_its_state(tmp_path, rows):
    path = _parquet(tmp_path / "rows.parquet", [([r, r, r], [1, 1, 1]) for r in range(4)])
    loader = rows.RowsDataLoader(path, local_batch_size=1, seq_len=3, dp_rank=0, dp_world_size=1)
    loader.load_state_dict({"position": 3})
    assert [batch[0]["input"].tolist() for batch in loader] == [[[3, 3, 3]]]


def test_rows_of_another_length_are_refused(tmp_path, rows):
    path = _parquet(tmp_path / "rows.parquet", [([1, 2, 3], [1, 1, 1])])
    with pytest.raises(ValueError, match="seq_len is 8"):
        rows.RowsDataLoader(path, local_batch_size=1, seq_len=8, dp_rank=0, dp_world_size=1)


def test_layer_cut_flag_is_taken_out_of_torchtitans_argv(torch):
    from openrecipes.launch.torchtitan.train import pop_layers

    argv = ["--model.name", "gpt_oss", "--openrecipes.layers", "4", "--training.steps", "6"]
    assert pop_layers(argv) == 4
    assert argv == ["--model.name", "gpt_oss", "--training.steps", "6"]
    assert pop_layers(argv) is None
    with pytest.raises(SystemExit):
        pop_layers(["--openrecipes.layers", "zero"])
