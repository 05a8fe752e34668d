"""What `openrecipes run` checks before it starts torchrun, so that a run that cannot work says why in one line with
the fix, instead of torchrun failing seconds later with the cause only in its log: the engine's package importable,
as many CUDA GPUs as the recipe's processes, the rows file at the command's path with the recipe's sha256."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from openrecipes.catalog.model import Recipe
from openrecipes.engines.runner import Launch, Runner
from openrecipes.errors import UserError

GPU_WHEELS = "scripts/gpu-wheels.sh"


def check_can_run(recipe_path: Path, recipe: Recipe, runner: Runner, launch: Launch) -> None:
    """Every failing check, each as one sentence with its fix, on one line; nothing when the run can start."""
    problems = [p for p in (_package(runner.package), _gpus(launch), _rows(recipe, runner.dataset_flag, launch)) if p]
    if problems:
        raise UserError(f"{recipe_path}: cannot start: " + "; ".join(problems))


def _package(package: str | None) -> str | None:
    if package is not None and importlib.util.find_spec(package) is None:
        return (f"{package} is not importable (install the gpu extra: `pip install -e .[gpu]`, or without network "
                f"the wheels `{GPU_WHEELS}` lists, docs/running.md)")
    return None


def _gpus(launch: Launch) -> str | None:
    wanted = launch.nproc_per_node
    if importlib.util.find_spec("torch") is None:
        return f"torch is not importable, so no CUDA GPU can be used (the recipe needs {wanted})"
    try:
        import torch
    except (ImportError, OSError, RuntimeError) as broken:  # a broken install, or too little memory to map it
        return f"torch cannot be imported here ({str(broken).splitlines()[0][:120]}), so no CUDA GPU can be used"
    found = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if found < wanted:
        return (f"the recipe runs {wanted} processes, one per CUDA GPU, and this machine shows {found} (run it on a "
                f"machine with {wanted} GPUs, or check CUDA_VISIBLE_DEVICES)")
    return None


def _rows(recipe: Recipe, flag: str | None, launch: Launch) -> str | None:
    """The rows file the command reads (after `flag`), with the parquet sha256 the recipe records (a file of the
    right name built from other inputs would train on other rows and still print figures)."""
    from openrecipes.digest import file_sha256

    if flag is None:
        return None
    argv = launch.argv()
    path = Path(argv[argv.index(flag) + 1] if flag in argv[:-1] else "")
    build = recipe.workload.dataset.build
    rebuild = f"build them with `{build.builder}`"
    if not path.name:
        return f"the command names no rows file ({flag})"
    if not path.is_file():
        return f"no rows at {path}: {rebuild}"
    if build.parquet_sha256 is None:  # a planned recipe's rows, built by its builder: no digest recorded yet
        return None
    if (digest := file_sha256(path)) != build.parquet_sha256:
        return (f"{path} has sha256 {digest[:12]}…, the recipe's rows {build.parquet_sha256[:12]}…: other rows; "
                f"{rebuild}")
    return None
