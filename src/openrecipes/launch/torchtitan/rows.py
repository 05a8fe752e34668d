"""Our rows.parquet as torchtitan batches: next-token labels, ignored where the target is not supervised.

Kept free of torchtitan and pydantic imports so that CPU tests and the GPU machine (no pydantic there) can load it.
A row holds `row_tokens` ids; the model reads all of them and position t learns ids[t + 1] when loss_mask[t + 1]
is set, so the last position of a row has no target. Data-parallel rank r takes rows r, r + W, r + 2W, ... in
file order, so every step trains the same rows whatever the layout.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import torch

IGNORE_INDEX = -100  # torchtitan's and PyTorch's cross-entropy ignore_index


def next_token_labels(input_ids: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """labels[..., t] = input_ids[..., t + 1] where loss_mask[..., t + 1] is set, IGNORE_INDEX elsewhere."""
    labels = torch.full_like(input_ids, IGNORE_INDEX, dtype=torch.long)
    targets = input_ids[..., 1:].long()
    labels[..., :-1] = torch.where(loss_mask[..., 1:].bool(), targets, torch.full_like(targets, IGNORE_INDEX))
    return labels


class RowsDataLoader:
    """Iterates ({"input": [B, T] int64}, labels [B, T] int64) over this rank's rows, once; stateful for checkpoints."""

    def __init__(self, path: str | Path, *, local_batch_size: int, seq_len: int, dp_rank: int, dp_world_size: int):
        table = pq.read_table(path, columns=["input_ids", "loss_mask"])
        lengths = set(pc.unique(pc.list_value_length(table.column("input_ids"))).to_pylist())
        if lengths != {seq_len}:
            raise ValueError(f"{path}: rows hold {sorted(lengths)} tokens but --training.seq_len is {seq_len}")
        ids = table.column("input_ids").combine_chunks().flatten().to_numpy().reshape(table.num_rows, seq_len)
        mask = table.column("loss_mask").combine_chunks().flatten().to_numpy().reshape(table.num_rows, seq_len)
        self.input_ids = torch.from_numpy(ids[dp_rank::dp_world_size].astype("int64"))
        self.loss_mask = torch.from_numpy(mask[dp_rank::dp_world_size].copy())
        self.local_batch_size = local_batch_size
        self.position = 0  # next row of this rank

    def __iter__(self) -> Iterator[tuple[dict[str, torch.Tensor], torch.Tensor]]:
        while self.position + self.local_batch_size <= len(self.input_ids):
            rows = slice(self.position, self.position + self.local_batch_size)
            self.position += self.local_batch_size
            yield {"input": self.input_ids[rows]}, next_token_labels(self.input_ids[rows], self.loss_mask[rows])

    def state_dict(self) -> dict[str, Any]:
        return {"position": self.position}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.position = int(state_dict["position"])
