"""What every engine tells the rest of OpenRecipes, in one typed shape: which recipes are its own, which launch
flag carries which recipe field, how its training logs read, and which layout rules the planner applies to it.

An engine folder (`engines/<name>/`) fills one `Engine` in its `engine.py` and `engines/registry.py` lists it.
These modules sit on the engine-knowledge floor, below the catalog: they import only floor-1 modules, so the
validator, the measure room and the planner can all ask them; its runner (engines/<name>/runner.py) renders a
recipe into a launch through the one interface of engines/runner.py.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from openrecipes.engines.levers import Levers, has_lever, lacking, levers_of
from openrecipes.engines.runner import LaunchCommand, Runner
from openrecipes.steptable import StepTable

Kind = Literal["int", "float", "str", "switch", "list", "marks"]


@dataclass(frozen=True)
class FlagField:
    """A launch flag and the recipe field it carries, read both ways: the validator checks each pair agrees, the
    layout reader reads the field from the flag and a renderer writes the flag from the field. `switch` flags carry
    a boolean by their presence; `list` flags a list field as one comma-separated value, absent when the list is
    empty; a `marks` flag its fixed value (`default`) exactly when its field is set; `default` is otherwise the value
    the engine assumes when the flag is absent."""

    flag: str
    field: str
    kind: Kind
    default: object = None

    def field_in(self, recipe: object) -> object:
        """The recipe's value of the dotted field (None where a section on the way is null)."""
        return functools.reduce(lambda value, part: None if value is None else getattr(value, part),
                                self.field.split("."), recipe)

    def expected(self, recipe: object) -> object:
        """The value the recipe's launch command must give the flag (what `read` returns for that command)."""
        value = self.field_in(recipe)
        if self.kind == "switch":
            return bool(value)
        if self.kind == "list":
            return ",".join(value) if isinstance(value, list) and value else None
        if self.kind == "marks":
            return self.default if value is not None else None
        return self.default if value is None else value  # a null field means the engine's default

    def read(self, command: LaunchCommand) -> object:
        """The value a run command gives the field (the engine's default when the flag is absent)."""
        if self.kind == "switch":
            return command.has(self.flag)
        text = command.value(self.flag)
        if text is None:
            return None if self.kind in ("list", "marks") else self.default
        if self.kind in ("list", "marks"):
            return text
        try:
            return {"int": int, "float": float, "str": str}[self.kind](text)
        except ValueError:
            return text

    def words(self, recipe: object) -> list[str] | None:
        """The flag's values as a launch writes them for the recipe ([] for a passed switch); None: left out."""
        expected = self.expected(recipe)
        if self.kind == "switch":
            return [] if expected else None
        return None if expected is None else [str(expected)]


LogReader = Callable[[Path, Iterable[str]], StepTable]


@dataclass(frozen=True)
class LogFormat:
    """A training-log format: the line that identifies it, a word every such line holds (a cheap test first),
    and the reader of a whole log into the step table."""

    name: str
    step_line: re.Pattern[str]
    word: str
    read: LogReader
    prints_stack: bool = False  # rank 0 prints the `openrecipes stack:` line (our entry module does)


@dataclass(frozen=True)
class LayoutRules:
    """How the engine places a model, as the planner's engine-independent core (plan/) models it."""

    offload_fractions: tuple[float, ...]  # optimizer fractions on the host worth comparing; (0.0,) for none
    fsdp: bool  # FSDP2 over DP*CP (FP32 shards, gathered BF16 layers); else Megatron's distributed optimizer
    experts_within_fsdp: bool  # EP borrows from the FSDP*CP ranks; else EP*ETP divides TP*CP*DP
    logits_bytes: int  # bytes per logit at the loss's peak
    compiled_logits_bytes: int  # the same with the loss compiled (--compile.enable)
    # Selective recompute: the fraction of a layer's matmul outputs op-level AC saves (the rest run again, and
    # eager runs wait on its host-side policy); None for Megatron's, which reruns elementwise work only.
    selective_saved_matmul_fraction: float | None
    amp_without_fsdp: bool  # with an FSDP degree of 1 it trains under AMP (FP32 weights, BF16 copies)
    host_overhead_per_microbatch: bool  # a host-side cost per layer per microbatch
    ring_attention: bool  # CP attention scores at the calibrated CP efficiency
    # Virtual pipeline stages per rank: None for every count a stage's layers allow (openrecipes.plan.layouts),
    # else at most this many, each dividing a middle stage
    max_virtual_stages: int | None = None


@dataclass(frozen=True)
class Engine:
    name: str  # the planner's and calibration's name of the engine (`--engine`)
    is_recipe: Callable[[LaunchCommand], bool]  # whether a parsed run command is this engine's
    flags: tuple[FlagField, ...]  # checked in every recipe of the engine
    flags_when_present: tuple[FlagField, ...]  # checked when the command passes them
    node_flags: tuple[str, str]  # (nodes, GPUs per node): their product must be gpu.count
    log_formats: tuple[LogFormat, ...]
    layout: LayoutRules
    # renders its recipes into launches (engines/runner.py); its `runs_here` says whether this machine starts them
    runner: Runner
    lever_block: type[Levers]  # its levers beyond a layout's degrees (engines/<name>/levers.py)
    # The flags naming the model its command trains, each with the model card's architecture key that gives it
    # (e.g. --model.name <- torchtitan_model); empty where the command names no card model.
    model_flags: Mapping[str, str]
    # The flag giving the model's decoder layers, checked against the model card (None: the command gives none).
    layers_flag: str | None
    # The training frameworks of the public record it models (published.engine; engines.registry.PublishedFramework).
    published_as: tuple[str, ...]
    # Launcher words that name the same program as another (a module that moved): commands compare as equal.
    renamed: Mapping[str, str] = field(default_factory=dict)
    # Whether a run command trains from random weights (it loads no checkpoint): the site says so beside its runs.
    from_random_weights: Callable[[str], bool] = lambda run: False

    def has_lever(self, name: str) -> bool:
        """Whether its lever block holds the lever (engines/levers.py) as a setting of its own."""
        return has_lever(self.lever_block, name)

    def lacking(self, **stated: object) -> list[str]:
        """The stated levers it has none of (engines/levers.py: lacking)."""
        return lacking(self.lever_block, **stated)

    def levers_of(self, **stated: object) -> Levers:
        """Its lever block of the levers a source states (engines/levers.py: levers_of)."""
        return levers_of(self.lever_block, self.name, **stated)
