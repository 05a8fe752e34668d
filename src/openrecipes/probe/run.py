"""Measuring the operators on the device at hand: GEMMs by shape (BF16, and FP8 where the GPU has FP8 tensor cores),
causal attention by sequence length and head size, an HBM copy and, under torchrun with several ranks, collectives
by message size. Every step is warmed up, then timed `repeats` times: CUDA events on a GPU, perf_counter on a CPU.

torch is imported inside the functions that measure: only the machine that probes needs it.
"""

from __future__ import annotations

import datetime
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from openrecipes.errors import UserError
from openrecipes.probe.file import (
    AttentionTiming,
    CollectiveKind,
    CollectiveTiming,
    CopyTiming,
    GemmDtype,
    GemmTiming,
    ProbeFile,
    Timing,
)

MIB, GIB = 2**20, 2**30
Timer = Callable[[Callable[[], object]], list[float]]  # runs the operation: warm-up, then each repeat's seconds
KINDS: tuple[CollectiveKind, ...] = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")


@dataclass(frozen=True)
class Grid:
    """The shapes a probe measures."""

    gemm_m: tuple[int, ...]  # tokens
    gemm_nk: tuple[int, ...]  # a layer's input and output widths
    attention_seq: tuple[int, ...]
    attention_head_dims: tuple[int, ...]
    attention_heads: int
    attention_tokens: int  # batch = max(1, tokens // seq): short sequences come in batches, as in training
    copy_bytes: tuple[int, ...]
    message_bytes: tuple[int, ...]
    warmup: int
    repeats: int


# The layers of LLMs from 1B to 400B parameters; copies past every GPU's cache (a MI300X has 256 MB). Its FLOPs and
# bytes come to about a minute at an H200's peaks.
FULL = Grid(gemm_m=(512, 1024, 2048, 4096, 8192, 16384), gemm_nk=(1024, 2048, 4096, 8192, 16384),
            attention_seq=(1024, 2048, 4096, 8192, 16384, 32768), attention_head_dims=(64, 128, 256),
            attention_heads=16, attention_tokens=16384, copy_bytes=(512 * MIB, GIB, 2 * GIB, 4 * GIB),
            message_bytes=(MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB, GIB), warmup=3, repeats=10)
# Tiny shapes: a trial of the command (seconds on a CPU), no part's evidence.
QUICK = Grid(gemm_m=(64, 128), gemm_nk=(64, 128), attention_seq=(64, 128), attention_head_dims=(16, 32),
             attention_heads=2, attention_tokens=256, copy_bytes=(MIB, 4 * MIB), message_bytes=(64 * 1024, MIB),
             warmup=1, repeats=3)


@dataclass(frozen=True)
class Step:
    label: str  # shown in the progress bar
    measure: Callable[[Timer], Timing | None]  # None on a rank that takes no part in it


@dataclass(frozen=True)
class World:
    """The ranks torchrun started (one when the probe runs alone) and this rank's device."""

    rank: int
    size: int
    device: str  # cuda:N or cpu


def torch_module() -> Any:
    try:
        import torch
    except ImportError:
        raise UserError("PyTorch is not installed here, and `openrecipes probe` measures with it; install it (the "
                        "gpu extra, docs/probe.md) on the machine to probe") from None
    return torch


def start_world(device: str) -> World:
    """This process's rank and device; under torchrun with WORLD_SIZE > 1, the process group (NCCL on GPUs)."""
    torch = torch_module()
    size, rank, local = (int(os.environ.get(name, default)) for name, default in
                         (("WORLD_SIZE", "1"), ("RANK", "0"), ("LOCAL_RANK", "0")))
    if device == "cuda":
        if not torch.cuda.is_available():
            raise UserError("--device cuda: no GPU is visible to PyTorch here; run on the GPU to probe, or try the "
                            "command with --device cpu --quick")
        torch.cuda.set_device(local)
    else:  # one thread: the trial ends in seconds even on a busy machine, where threads wait for each other
        torch.set_num_threads(1)
    if size > 1:
        torch.distributed.init_process_group("nccl" if device == "cuda" else "gloo")
    return World(rank, size, f"cuda:{local}" if device == "cuda" else "cpu")


def end_world(world: World) -> None:
    """Every rank leaves the process group together (one that exits first aborts the others' group)."""
    if world.size > 1:
        torch = torch_module()
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


@dataclass(frozen=True)
class Machine:
    """What the probe file records of the machine."""

    device: str  # the name the driver reports for the GPU (or the CPU's)
    driver: str | None
    torch: str
    cuda: str | None


def machine(world: World) -> Machine:
    torch = torch_module()
    if world.device == "cpu":
        return Machine(_cpu_name(), None, torch.__version__, None)
    return Machine(torch.cuda.get_device_name(torch.cuda.current_device()), _driver_version(), torch.__version__,
                   torch.version.cuda)


def _cpu_name() -> str:
    import platform

    return platform.processor() or platform.machine() or "cpu"


def _driver_version() -> str | None:
    """The driver's version as nvidia-smi prints it (one driver serves every GPU of a machine); None where there is
    no nvidia-smi (a ROCm machine)."""
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.split() if done.returncode == 0 else []
    return lines[0] if lines else None


def has_fp8(world: World) -> bool:
    """FP8 GEMMs run on tensor cores from compute capability 8.9 (Ada, Hopper, Blackwell) under CUDA."""
    torch = torch_module()
    return world.device != "cpu" and torch.version.cuda is not None and torch.cuda.get_device_capability() >= (8, 9)


def timer(world: World, warmup: int, repeats: int) -> Timer:
    """CUDA events around each repeat on a GPU (the GPU's own clock, no host overhead), perf_counter on a CPU."""
    torch = torch_module()

    def on_cpu(run: Callable[[], object]) -> list[float]:
        for _ in range(warmup):
            run()
        seconds = []
        for _ in range(repeats):
            start = time.perf_counter()
            run()
            seconds.append(time.perf_counter() - start)
        return seconds

    def on_gpu(run: Callable[[], object]) -> list[float]:
        for _ in range(warmup):
            run()
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(repeats)]
        for start, end in events:
            start.record()
            run()
            end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) / 1e3 for start, end in events]

    return on_cpu if world.device == "cpu" else on_gpu


def steps(grid: Grid, world: World, fp8: bool) -> list[Step]:
    """Every measurement of the probe, in order; the collectives only with several ranks."""
    dtypes: tuple[GemmDtype, ...] = ("bf16", "fp8") if fp8 else ("bf16",)
    found = [Step(f"GEMM {dtype} {m}x{n}x{k}", partial(_gemm, world.device, m, n, k, dtype))
             for dtype in dtypes for m in grid.gemm_m for n in grid.gemm_nk for k in grid.gemm_nk]
    found += [Step(f"attention seq {seq} head {head_dim}", partial(
        _attention, world.device, seq, grid.attention_heads, head_dim, max(1, grid.attention_tokens // seq)))
        for seq in grid.attention_seq for head_dim in grid.attention_head_dims]
    found += [Step(f"copy {size // MIB} MiB", partial(_copy, world.device, size)) for size in grid.copy_bytes]
    if world.size > 1:
        for gpus, group in _groups(world):
            found += [Step(f"{kind} {gpus} GPUs {size // 1024} KiB",
                           partial(_collective, world, group, gpus, kind, size))
                      for kind in KINDS for size in grid.message_bytes]
    return found


def _groups(world: World) -> list[tuple[int, Any]]:
    """Groups of the first 2, 4, 8, ... ranks and of all of them (every rank creates every group), with the group
    this rank is in (None where it is not)."""
    torch = torch_module()
    sizes = sorted({*(2**p for p in range(1, world.size.bit_length()) if 2**p <= world.size), world.size})
    groups = [(gpus, torch.distributed.new_group(list(range(gpus)))) for gpus in sizes]
    return [(gpus, group if world.rank < gpus else None) for gpus, group in groups]


def _gemm(device: str, m: int, n: int, k: int, dtype: GemmDtype, time_it: Timer) -> GemmTiming:
    torch = torch_module()
    a = torch.randn(m, k, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, k, device=device, dtype=torch.bfloat16)
    if dtype == "fp8":  # one scale per tensor; B column-major, as _scaled_mm requires
        a, b = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
        scale = torch.ones((), device=device)
        seconds = time_it(lambda: torch._scaled_mm(a, b.t(), scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16))
    else:
        out = torch.empty(m, n, device=device, dtype=torch.bfloat16)
        seconds = time_it(lambda: torch.mm(a, b.t(), out=out))
    return GemmTiming(m=m, n=n, k=k, dtype=dtype, seconds=seconds)


def _attention(device: str, seq: int, heads: int, head_dim: int, batch: int, time_it: Timer) -> AttentionTiming:
    torch = torch_module()
    q, k, v = (torch.randn(batch, heads, seq, head_dim, device=device, dtype=torch.bfloat16, requires_grad=True)
               for _ in range(3))
    grad = torch.randn(batch, heads, seq, head_dim, device=device, dtype=torch.bfloat16)

    def forward_backward() -> object:  # autograd.grad returns the gradients instead of adding them up in .grad
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return torch.autograd.grad(out, (q, k, v), grad)

    return AttentionTiming(seq=seq, heads=heads, head_dim=head_dim, batch=batch, dtype="bf16",
                           seconds=time_it(forward_backward))


def _copy(device: str, size: int, time_it: Timer) -> CopyTiming:
    torch = torch_module()
    source = torch.ones(size, device=device, dtype=torch.uint8)
    target = torch.empty_like(source)
    return CopyTiming(size_bytes=size, seconds=time_it(lambda: target.copy_(source)))


def _collective(world: World, group: Any, gpus: int, kind: CollectiveKind, size: int,
                time_it: Timer) -> CollectiveTiming | None:
    if group is None:
        return None
    torch = torch_module()
    dist = torch.distributed
    elements = size // 2 // gpus * gpus  # BF16, a whole share per rank
    whole = torch.ones(elements, device=world.device, dtype=torch.bfloat16)
    share = torch.ones(elements // gpus, device=world.device, dtype=torch.bfloat16)
    received = torch.empty_like(whole)
    run = {"all_reduce": lambda: dist.all_reduce(whole, group=group),
           "all_gather": lambda: dist.all_gather_single(whole, share, group=group),
           "reduce_scatter": lambda: dist.reduce_scatter_single(share, whole, group=group),
           "all_to_all": lambda: dist.all_to_all_single(received, whole, group=group)}[kind]
    seconds = torch.tensor(time_it(run), device=world.device, dtype=torch.float64)
    dist.all_reduce(seconds, op=dist.ReduceOp.MAX, group=group)  # a collective ends when its slowest rank does
    return CollectiveTiming(kind=kind, message_bytes=elements * 2, gpus=gpus, seconds=seconds.tolist())


def probe_file(part: str, host: Machine, world: World, quick: bool, timings: list[Timing]) -> ProbeFile:
    return ProbeFile(openrecipes_probe=1, part=part, device=host.device, driver=host.driver, torch=host.torch,
                     cuda=host.cuda, date=datetime.datetime.now(datetime.UTC).date(), gpus=world.size, quick=quick,
                     gemm=[t for t in timings if isinstance(t, GemmTiming)],
                     attention=[t for t in timings if isinstance(t, AttentionTiming)],
                     copies=[t for t in timings if isinstance(t, CopyTiming)],
                     collectives=[t for t in timings if isinstance(t, CollectiveTiming)])


def measure(plan: list[Step], time_it: Timer, on_step: Callable[[str], None]) -> list[Timing]:
    """Each step's timing, in order (`on_step` told each step's label as it starts)."""
    torch = torch_module()
    found = []
    for step in plan:
        on_step(step.label)
        try:
            timing = step.measure(time_it)
        except torch.OutOfMemoryError:
            raise UserError(f"{step.label}: the GPU ran out of memory; free it (nvidia-smi lists what holds it) and "
                            "probe again") from None
        if timing is not None:
            found.append(timing)
    return found
