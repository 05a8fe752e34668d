"""Component test: optimizer CPU offload (Megatron's --optimizer-cpu-offload --optimizer-offload-fraction F).

The same parameters and gradients are updated by
  (a) Adam on the accelerator (FP32 master weights and moments),
  (b) the offloaded split: the first tensors up to a fraction F of the parameters (as Megatron's hybrid optimizer
      assigns them) updated on the CPU with FP32 master weights, the rest on the accelerator,
  (c) an FP64 reference (AdamW written out),
and the worst tensor's relative L2 error of the update (parameters after the step minus before) against (c) is
compared with the bounds after one and after three steps. Three negative controls are the offloaded split with one
fault each (a wrong beta2, BF16 master weights, no bias correction); they must exceed a bound, or the test could
not tell a broken offload from a working one. After one step a wrong beta2 is invisible (bias correction cancels
it), which is why the three-step check exists.

Imports only torch and the standard library (plus the thresholds), and has its own argparse entry, so it runs on a
GPU machine where nothing else is installed:
    python -m openrecipes.verify.components.optimizer_offload --shape glm5-moe-layer --device cuda [--json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from openrecipes.errors import UserError
from openrecipes.thresholds import OPTIMIZER_OFFLOAD

CHECKED_STEPS = (1, 3)  # the bounds apply after these steps
INIT_STD = 0.02  # Megatron's --init-method-std default
GRAD_STD = 1e-3  # Adam normalises the step: the scale only has to stay far above eps (1e-8), as in training
SEED = 1234


@dataclass(frozen=True)
class MoeLayerShape:
    name: str
    hidden: int
    experts_total: int
    experts_held: int  # experts one expert-parallel rank holds
    expert_ffn: int
    top_k: int
    description: str
    # Intra-op CPU threads (None: torch's default). The small shape's tensors are too small for threads to pay, and
    # on a busy 2-core CI runner OpenMP threads spinning against other processes made it ~100x slower.
    cpu_threads: int | None = None


SHAPES = {
    "small": MoeLayerShape(
        "small", hidden=256, experts_total=16, experts_held=4, expert_ffn=128, top_k=2,
        description="a small MoE layer for CI: hidden 256, 16 experts (4 held, EP 4), top-2, expert FFN 128",
        cpu_threads=1,
    ),
    # One EP-8 rank's shard of a GLM-5.2 MoE layer: 32 of the 256 experts (~1.2 G parameters) and the router.
    # All 256 experts (~9.7 G parameters) with FP32 copies and an FP64 reference would not fit one H200, and the
    # seeds' component test ran at EP 8, so one rank's shard is the shape the offloaded optimizer really updates.
    "glm5-moe-layer": MoeLayerShape(
        "glm5-moe-layer", hidden=6144, experts_total=256, experts_held=32, expert_ffn=2048, top_k=8,
        description="one GLM-5.2-744B-A40B MoE layer: hidden 6144, 256 experts, top-8, expert FFN 2048, sigmoid "
                    "router; the tensors one EP-8, ETP-1 rank updates: the router and 32 experts",
    ),
}


@dataclass(frozen=True)
class AdamHyperparameters:
    """The GLM-5.2 entries' optimizer: --lr 1e-5 --adam-beta1 0.9 --adam-beta2 0.98 --weight-decay 0.1
    (Megatron's default --adam-eps 1e-8), with their --optimizer-offload-fraction 0.9."""

    lr: float = 1e-5
    beta1: float = 0.9
    beta2: float = 0.98
    eps: float = 1e-8
    weight_decay: float = 0.1
    offload_fraction: float = 0.9


ENTRY = AdamHyperparameters()
WRONG_BETA2 = 0.999  # Megatron's default: what a run gets when the recipe's --adam-beta2 is dropped


def tensor_shapes(shape: MoeLayerShape) -> list[tuple[str, tuple[int, ...]]]:
    """The rank's parameter tensors in Megatron's order: the router, then each expert's fused gate/up and down."""
    tensors: list[tuple[str, tuple[int, ...]]] = [("router.weight", (shape.experts_total, shape.hidden))]
    for expert in range(shape.experts_held):
        tensors.append((f"experts.{expert}.linear_fc1.weight", (2 * shape.expert_ffn, shape.hidden)))
        tensors.append((f"experts.{expert}.linear_fc2.weight", (shape.hidden, shape.expert_ffn)))
    return tensors


def offloaded_names(tensors: list[tuple[str, tuple[int, ...]]], fraction: float) -> set[str]:
    """Whole tensors, in order, while the CPU share stays within the fraction (as Megatron's hybrid optimizer)."""
    sizes = [torch.Size(dims).numel() for _, dims in tensors]
    return {name for (name, _), held in zip(tensors, itertools.accumulate(sizes), strict=True)
            if held <= fraction * sum(sizes)}  # the running total only grows: the tensors up to the first over it


class WrittenOutAdamW:
    """AdamW with decoupled weight decay, written out: the FP64 reference, and the no-bias-correction control."""

    def __init__(self, params: list[torch.Tensor], hp: AdamHyperparameters, bias_correction: bool = True):
        self.params, self.hp, self.bias_correction, self.steps = params, hp, bias_correction, 0
        self.moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in params]

    @torch.no_grad()
    def step(self) -> None:
        self.steps += 1
        hp = self.hp
        first_correction = 1 - hp.beta1**self.steps if self.bias_correction else 1.0
        second_correction = 1 - hp.beta2**self.steps if self.bias_correction else 1.0
        for p, (m, v) in zip(self.params, self.moments, strict=True):
            grad = p.grad
            if grad is None:  # as torch's optimizers: a parameter without a gradient is left as it is
                continue
            p.mul_(1 - hp.lr * hp.weight_decay)
            m.mul_(hp.beta1).add_(grad, alpha=1 - hp.beta1)
            v.mul_(hp.beta2).addcmul_(grad, grad, value=1 - hp.beta2)
            denominator = (v / second_correction).sqrt_().add_(hp.eps)
            p.addcdiv_(m / first_correction, denominator, value=-hp.lr)


class Optimizer(Protocol):
    def step(self) -> object: ...


OptimizerFactory = Callable[[list[torch.Tensor]], Optimizer]


def torch_adamw(hp: AdamHyperparameters) -> OptimizerFactory:
    return lambda params: torch.optim.AdamW(
        params, lr=hp.lr, betas=(hp.beta1, hp.beta2), eps=hp.eps, weight_decay=hp.weight_decay
    )


@dataclass(frozen=True)
class Arm:
    name: str
    offloaded: bool  # the offload fraction's tensors live on the CPU
    offloaded_dtype: torch.dtype  # master weights of the offloaded tensors
    offloaded_optimizer: OptimizerFactory
    control: bool  # a negative control: must exceed a bound


def arms(hp: AdamHyperparameters) -> list[Arm]:
    correct = torch_adamw(hp)
    return [
        Arm("Adam on the accelerator (FP32 master)", False, torch.float32, correct, control=False),
        Arm(f"offloaded Adam, fraction {hp.offload_fraction} on the CPU (FP32 master)", True, torch.float32,
            correct, control=False),
        Arm(f"control: wrong beta2 ({WRONG_BETA2})", True, torch.float32,
            torch_adamw(AdamHyperparameters(**{**hp.__dict__, "beta2": WRONG_BETA2})), control=True),
        Arm("control: BF16 master weights", True, torch.bfloat16, correct, control=True),
        Arm("control: no bias correction", True, torch.float32,
            lambda params: WrittenOutAdamW(params, hp, bias_correction=False), control=True),
    ]


class Problem:
    """The shared initial parameters and the per-step gradients, regenerated from seeds rather than stored."""

    def __init__(self, shape: MoeLayerShape, device: torch.device):
        self.tensors, self.device = tensor_shapes(shape), device
        self.initial = {name: self._normal(dims, INIT_STD, SEED, i) for i, (name, dims) in enumerate(self.tensors)}

    def _normal(self, dims: tuple[int, ...], std: float, seed: int, index: int) -> torch.Tensor:
        generator = torch.Generator(device=self.device).manual_seed(seed * 100_003 + index)
        return torch.randn(dims, generator=generator, device=self.device, dtype=torch.float32).mul_(std)

    def gradient(self, step: int, index: int) -> torch.Tensor:
        dims = self.tensors[index][1]
        return self._normal(dims, GRAD_STD * (1 + index % 3), SEED + step, index)


def _relative_l2(update: torch.Tensor, reference: torch.Tensor) -> float:
    return (torch.linalg.vector_norm(update - reference) / torch.linalg.vector_norm(reference)).item()


def _reference_updates(problem: Problem, hp: AdamHyperparameters) -> dict[int, dict[str, torch.Tensor]]:
    params = [problem.initial[name].double() for name, _ in problem.tensors]
    optimizer = WrittenOutAdamW(params, hp)
    updates = {}
    for step in range(1, max(CHECKED_STEPS) + 1):
        for index, p in enumerate(params):
            p.grad = problem.gradient(step, index).double()
        optimizer.step()
        if step in CHECKED_STEPS:
            updates[step] = {name: p - problem.initial[name].double()
                             for (name, _), p in zip(problem.tensors, params, strict=True)}
    return updates


def _run_arm(arm: Arm, problem: Problem, offloaded: set[str], hp: AdamHyperparameters,
             reference: dict[int, dict[str, torch.Tensor]]) -> dict:
    started = time.perf_counter()
    on_cpu = [arm.offloaded and name in offloaded for name, _ in problem.tensors]
    params = [
        problem.initial[name].to("cpu", arm.offloaded_dtype, copy=True) if cpu else problem.initial[name].clone()
        for (name, _), cpu in zip(problem.tensors, on_cpu, strict=True)
    ]
    offloaded_params = [p for p, cpu in zip(params, on_cpu, strict=True) if cpu]
    optimizers = [arm.offloaded_optimizer(offloaded_params)] if offloaded_params else []
    if not all(on_cpu):
        factory = torch_adamw(hp) if arm.offloaded else arm.offloaded_optimizer
        optimizers.append(factory([p for p, cpu in zip(params, on_cpu, strict=True) if not cpu]))
    checked: dict[int, dict[str, Any]] = {}
    for step in range(1, max(CHECKED_STEPS) + 1):
        for index, p in enumerate(params):
            p.grad = problem.gradient(step, index).to(p.device, p.dtype)  # the offload's device-to-host copy
        for optimizer in optimizers:
            optimizer.step()
        if step in CHECKED_STEPS:
            errors: dict[str, float] = {}
            for (name, _), p, cpu in zip(problem.tensors, params, on_cpu, strict=True):
                start = problem.initial[name].to(arm.offloaded_dtype if cpu else torch.float32).double()
                update = p.to(problem.device).double() - start
                errors[name] = _relative_l2(update, reference[step][name])
            worst = max(errors, key=lambda name: errors[name])
            checked[step] = {"worst_error": errors[worst], "worst_tensor": worst}
    bounds = {1: OPTIMIZER_OFFLOAD.after_one_step, 3: OPTIMIZER_OFFLOAD.after_three_steps}
    within = all(checked[step]["worst_error"] <= bounds[step] for step in CHECKED_STEPS)
    return {
        "name": arm.name,
        "control": arm.control,
        "after_one_step": checked[1],
        "after_three_steps": checked[3],
        "within_bounds": within,
        "passed": within != arm.control,  # a control passes when it is caught
        "seconds": round(time.perf_counter() - started, 2),
    }


def _device(requested: str) -> torch.device:
    if requested == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda: no CUDA device is visible to torch; run on a GPU machine or use --device cpu")
    if requested not in ("cpu", "cuda"):
        raise UserError(f"--device {requested}: give cpu or cuda")
    return torch.device(requested)


def _detail(offloaded_arm: dict) -> str:
    """The sentence a recipe's component_tests[].detail records, in the seeds' wording."""
    one, three = offloaded_arm["after_one_step"], offloaded_arm["after_three_steps"]
    return (f"worst tensor (update) relative L2 error {one['worst_error']:.1e} against a bound of "
            f"{OPTIMIZER_OFFLOAD.after_one_step:.1e} after one step and {three['worst_error']:.1e} against "
            f"{OPTIMIZER_OFFLOAD.after_three_steps:.2e} after three steps at the entry's hyperparameters")


def run(shape_name: str, device_name: str = "cpu", hp: AdamHyperparameters = ENTRY) -> dict:
    if shape_name not in SHAPES:
        raise UserError(f"--shape {shape_name}: unknown; give one of {', '.join(SHAPES)}")
    shape, device = SHAPES[shape_name], _device(device_name)
    default_threads = torch.get_num_threads()
    torch.set_num_threads(shape.cpu_threads or default_threads)
    try:
        with torch.no_grad():
            problem = Problem(shape, device)
            offloaded = offloaded_names(problem.tensors, hp.offload_fraction)
            reference = _reference_updates(problem, hp)
            results = [_run_arm(arm, problem, offloaded, hp, reference) for arm in arms(hp)]
    finally:
        torch.set_num_threads(default_threads)
    failed = [arm for arm in results if not arm["passed"]]
    controls_caught = all(arm["passed"] for arm in results if arm["control"])
    parameters = sum(torch.Size(dims).numel() for _, dims in problem.tensors)
    return {
        "test": "optimizer-offload",
        "passed": not failed,
        "shape": shape.name,
        "shape_description": shape.description,
        "parameters": parameters,
        "offloaded_parameters": sum(torch.Size(d).numel() for n, d in problem.tensors if n in offloaded),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu (host and device parts "
                  "both on the CPU: the split is exercised, not a host-device copy)",
        "torch": torch.__version__,
        "hyperparameters": dict(hp.__dict__),
        "bounds": {"after_one_step": OPTIMIZER_OFFLOAD.after_one_step,
                   "after_three_steps": OPTIMIZER_OFFLOAD.after_three_steps},
        "arms": results,
        "detail": _detail(results[1]) + ("; the negative controls fail" if controls_caught else
                                         "; a negative control was NOT caught"),
        "reasons": [
            f"{arm['name']}: " + ("was not caught: its errors stay within the bounds, so the test cannot tell this "
                                  "fault from a working offload" if arm["control"] else
                                  f"worst error {arm['after_one_step']['worst_error']:.2e} / "
                                  f"{arm['after_three_steps']['worst_error']:.2e} exceeds the bounds")
            for arm in failed
        ],
    }


def report_lines(verdict: dict) -> list[str]:
    """The verdict for a person: the headline, the shape, the recipe's detail sentence, then one line per arm."""
    lines = [
        f"optimizer-offload at {verdict['shape']} on {verdict['device']} (torch {verdict['torch']}): "
        f"{'pass' if verdict['passed'] else 'FAIL'}",
        f"  shape: {verdict['shape_description']} ({verdict['parameters']:,} parameters, "
        f"{verdict['offloaded_parameters']:,} offloaded)",
        f"  detail: {verdict['detail']}",
    ]
    lines += [f"  - {arm['name']}: {arm['after_one_step']['worst_error']:.2e} after one step, "
              f"{arm['after_three_steps']['worst_error']:.2e} after three ({arm['seconds']} s) -> "
              f"{'ok' if arm['passed'] else 'WRONG'}" for arm in verdict["arms"]]
    return lines + [f"  - {reason}" for reason in verdict["reasons"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Optimizer CPU offload component test (exit 0 pass, 1 fail, 2 bad input)"
    )
    parser.add_argument("--shape", default="small", choices=sorted(SHAPES))
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--json", action="store_true", help="print the verdict as JSON")
    args = parser.parse_args(argv)
    try:
        verdict = run(args.shape, args.device)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(verdict, indent=2) if args.json else "\n".join(report_lines(verdict)))
    return 0 if verdict["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
