"""torchrun entry: torchtitan 0.2.2's own Trainer, fed by our rows.parquet instead of its text datasets.

    torchrun --nproc_per_node 2 -m openrecipes.launch.torchtitan.train --model.name qwen3 --model.flavor 8B \
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

from openrecipes.launch.torchtitan.kernels import (
    ATTENTION_FLAG,
    KERNELS_FLAG,
    kernel_trainer,
    parse_attention,
    parse_kernels,
    summed_loss,
    use_attention,
    with_kernels,
)
from openrecipes.launch.torchtitan.rows import RowsDataLoader
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


# Our own flags, removed from argv before torchtitan's parser sees them. A run that uses one says so in its log.
# --openrecipes.layers N cuts every flavor of the model to N layers, for smoke runs of a model too large for the GPUs at
# hand: never a catalog figure. --openrecipes.kernels / --openrecipes.attention: see kernels.py.
LAYERS_FLAG = "--openrecipes.layers"


def pop_value(argv: list[str], flag: str) -> str | None:
    """Remove `FLAG VALUE` (or `FLAG=VALUE`) from argv and return VALUE; None when the flag is absent."""
    for i, word in enumerate(argv):
        if word == flag:
            if i + 1 >= len(argv):
                raise SystemExit(f"{flag} needs a value")
            value = argv[i + 1]
            del argv[i : i + 2]
            return value
        if word.startswith(flag + "="):
            del argv[i]
            return word.partition("=")[2]
    return None


def pop_layers(argv: list[str]) -> int | None:
    value = pop_value(argv, LAYERS_FLAG)
    if value is None:
        return None
    if not value.isdigit() or int(value) < 1:
        raise SystemExit(f"{LAYERS_FLAG} needs a whole number of layers")
    return int(value)


@dataclasses.dataclass(frozen=True)
class EntryOptions:
    """What our own flags asked for."""

    layers: int | None = None
    kernels: tuple[str, ...] = ()
    attention: str | None = None


def pop_options(argv: list[str]) -> EntryOptions:
    kernels = pop_value(argv, KERNELS_FLAG)
    attention = pop_value(argv, ATTENTION_FLAG)
    return EntryOptions(layers=pop_layers(argv),
                        kernels=parse_kernels(kernels) if kernels is not None else (),
                        attention=parse_attention(attention) if attention is not None else None)


def say(line: str) -> None:
    if os.environ.get("RANK", "0") == "0":
        print(line, flush=True)


def register_rows_spec(name: str, options: EntryOptions, with_tokenizer: bool = False) -> None:
    """Our dataloader (and the kernels and attention asked for) in the model's stock TrainSpec. The tokenizer is kept
    only when `--model.hf_assets_path` names one: flex attention (gpt-oss) asks it for the EOS id; sdpa models need
    none."""
    from torchtitan.protocols import train_spec

    stock = train_spec.get_train_spec(name)
    model_args = dict(stock.model_args)
    if options.layers is not None:
        model_args = {flavor: dataclasses.replace(args, n_layers=options.layers) for flavor, args in model_args.items()}
    if options.attention is not None:
        model_args = {flavor: use_attention(options.attention, args) for flavor, args in model_args.items()}
    changes: dict[str, object] = {}
    if options.kernels:
        changes["model_cls"] = with_kernels(stock.model_cls, options.kernels, say)
    if "liger-fused-linear-cross-entropy" in options.kernels:
        changes["build_loss_fn"] = lambda job_config, **_: summed_loss
    train_spec.register_train_spec(name, dataclasses.replace(
        stock, model_args=model_args, build_dataloader_fn=build_rows_dataloader,
        build_tokenizer_fn=stock.build_tokenizer_fn if with_tokenizer else None, build_validator_fn=None, **changes))


def main() -> None:
    options = pop_options(sys.argv)
    say(stack_line())
    if options.layers is not None:
        say(f"openrecipes smoke run: every flavor cut to {options.layers} layers ({LAYERS_FLAG})")
    if options.attention is not None:
        say(f"openrecipes attention: {options.attention} ({ATTENTION_FLAG})")
    argv = sys.argv[1:]
    register_rows_spec(model_name(argv), options,
                       with_tokenizer=any(word.startswith("--model.hf_assets_path") for word in argv))
    from torchtitan.train import Trainer
    from torchtitan.train import main as torchtitan_main

    torchtitan_main(kernel_trainer(Trainer) if "liger-fused-linear-cross-entropy" in options.kernels else Trainer)


if __name__ == "__main__":
    main()
