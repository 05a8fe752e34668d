"""torchrun entry: torchtitan 0.2.2's own Trainer, fed by our rows.parquet instead of its text datasets.

    torchrun --nproc_per_node 2 -m openrecipes.engines.torchtitan.train --model.name qwen3 --model.flavor 8B \
        --training.dataset_path rows.parquet ...   (every other flag is torchtitan's own)

The model's stock TrainSpec is registered again under its own name with our dataloader and no tokenizer (the rows
are already tokens; sdpa attention needs none), so `--model.name` keeps torchtitan's spelling. Weights are
initialised at random by the model's init_weights: nothing is loaded. Rank 0 prints the stack versions first, so the
raw log names what it ran on.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import sys

import torch

from openrecipes.engines.torchtitan.rows import RowsDataLoader
from openrecipes.measure.stack import STACK_PREFIX


def stack_line() -> str:
    import torchtitan

    nccl = ".".join(str(part) for part in torch.cuda.nccl.version()) if torch.cuda.is_available() else "none"
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    return (f"{STACK_PREFIX} torch={torch.__version__} cuda={torch.version.cuda} nccl={nccl} "
            f"torchtitan={torchtitan.__version__} python={platform.python_version()} gpu={gpu}")


def build_rows_dataloader(dp_world_size: int, dp_rank: int, tokenizer, job_config, **_: object) -> RowsDataLoader:
    del tokenizer  # rows are token ids already
    if not job_config.training.dataset_path:
        raise SystemExit("--training.dataset_path must name a rows.parquet (openrecipes rows build)")
    return RowsDataLoader(
        job_config.training.dataset_path,
        local_batch_size=job_config.training.local_batch_size,
        seq_len=job_config.training.seq_len,
        dp_rank=dp_rank,
        dp_world_size=dp_world_size,
    )


def model_name(argv: list[str]) -> str:
    for i, word in enumerate(argv):
        if word == "--model.name" and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith("--model.name="):
            return word.partition("=")[2]
    raise SystemExit("--model.name is required (e.g. qwen3)")


# Our one flag: cut every flavor of the model to N layers, for smoke runs of a model too large for the GPUs at hand.
# A run that uses it says so in its log (rank 0 prints the cut) and is never a catalog figure.
LAYERS_FLAG = "--openrecipes.layers"


def pop_layers(argv: list[str]) -> int | None:
    """Remove `--openrecipes.layers N` from argv (torchtitan's parser does not know it) and return N."""
    if LAYERS_FLAG not in argv:
        return None
    i = argv.index(LAYERS_FLAG)
    if i + 1 >= len(argv) or not argv[i + 1].isdigit() or int(argv[i + 1]) < 1:
        raise SystemExit(f"{LAYERS_FLAG} needs a whole number of layers")
    layers = int(argv[i + 1])
    del argv[i : i + 2]
    return layers


def register_rows_spec(name: str, layers: int | None = None, with_tokenizer: bool = False) -> None:
    """Our dataloader in the model's stock TrainSpec. The tokenizer is kept only when `--model.hf_assets_path`
    names one: flex attention (gpt-oss) asks it for the EOS id; sdpa models need none."""
    from torchtitan.protocols import train_spec

    stock = train_spec.get_train_spec(name)
    model_args = stock.model_args
    if layers is not None:
        model_args = {flavor: dataclasses.replace(args, n_layers=layers) for flavor, args in model_args.items()}
    train_spec.register_train_spec(name, dataclasses.replace(
        stock, model_args=model_args, build_dataloader_fn=build_rows_dataloader,
        build_tokenizer_fn=stock.build_tokenizer_fn if with_tokenizer else None, build_validator_fn=None))


def main() -> None:
    layers = pop_layers(sys.argv)
    if os.environ.get("RANK", "0") == "0":
        print(stack_line(), flush=True)
        if layers is not None:
            print(f"openrecipes smoke run: every flavor cut to {layers} layers ({LAYERS_FLAG})", flush=True)
    argv = sys.argv[1:]
    register_rows_spec(model_name(argv), layers,
                       with_tokenizer=any(word.startswith("--model.hf_assets_path") for word in argv))
    from torchtitan.train import Trainer, main as torchtitan_main

    torchtitan_main(Trainer)


if __name__ == "__main__":
    main()
