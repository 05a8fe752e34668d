"""The configuration check: which arguments differ between two runs, and what class each change belongs to.

`pass` when only placement (and execution-fingerprint) arguments change; `needs component test` when an argument
whose correctness a component test covers changes (CPU optimizer offload, the precision-aware optimizer);
`precision change` when the training precision changes besides placement (BF16 to FP8: the candidate belongs on its
own precision's board and the convergence check against the reference arm is the bar, parity is not claimed); `fail`
on a numerics change or on any changed argument rules/argument-classes.yaml does not class.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from openrecipes.catalog.command import ParsedRun, parse_or_fail
from openrecipes.catalog.yamlio import read_yaml
from openrecipes.engines.registry import current_words
from openrecipes.errors import UserError
from openrecipes.textfile import MIB, read_text, shown

MAX_SCRIPT_BYTES = 1 * MIB
RULES_PATH = Path(__file__).resolve().parents[3] / "rules" / "argument-classes.yaml"
CLASSES = ("placement", "execution_fingerprint", "precision", "numerics")
PASS, NEEDS_COMPONENT_TEST, PRECISION_CHANGE, FAIL = "pass", "needs component test", "precision change", "fail"


class ArgumentClass(BaseModel):
    """One entry of the rules file, as its own schema: `{class: ..., why: ..., component_test: ...}`."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    klass: Literal["placement", "execution_fingerprint", "precision", "numerics"] = Field(alias="class")
    why: str = Field(min_length=1)
    component_test: str | None = None


@dataclass(frozen=True)
class Rules:
    arguments: dict[str, ArgumentClass]
    environment: dict[str, ArgumentClass]

    def of_argument(self, flag: str) -> ArgumentClass | None:
        """An argument's own entry, else its torchtitan section's `--section.*` entry."""
        if flag in self.arguments:
            return self.arguments[flag]
        section = flag.rpartition(".")[0]
        return self.arguments.get(f"{section}.*") if section else None


class _RulesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    arguments: dict[str, ArgumentClass] = {}
    environment: dict[str, ArgumentClass] = {}


def load_rules(path: Path = RULES_PATH) -> Rules:
    """The rules file validated against its schema; an error names the entry, its line and the fix."""
    doc = read_yaml(path)
    try:
        rules = _RulesFile.model_validate(doc.data if doc.data is not None else {})
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        field = ".".join(str(part) for part in first["loc"])
        raise UserError(f"{shown(path)}:{doc.line_of(field) or 1}: {field or 'file'}: {first['msg']}; the file "
                        "holds 'arguments:' and 'environment:' mappings whose every entry needs 'class' "
                        f"(one of {', '.join(CLASSES)}) and 'why'") from None
    return Rules(rules.arguments, rules.environment)


def read_run(path: Path) -> ParsedRun:
    """The run command of a recipe (YAML) or of a plain shell script (a reference that is not in the catalog)."""
    path = Path(path)
    if path.suffix in (".yaml", ".yml"):
        from openrecipes.catalog.store import load_recipe  # pydantic only for recipes

        text = load_recipe(path).run
    else:
        text = read_text(path, MAX_SCRIPT_BYTES, "run script")
    parsed = parse_or_fail(text, shown(path))
    if not parsed.argv:
        raise UserError(f"{shown(path)}: no launch command (python3, python or torchrun) in the run script")
    for flag, values in parsed.conflicts.items():
        raise UserError(f"{shown(path)}: {flag} is given twice with different values ({' '.join(values[0]) or '(set)'}"
                        f" and {' '.join(values[1]) or '(set)'}); the launcher would take one silently, keep one")
    return parsed


def _flag_value(parsed: ParsedRun, flag: str) -> str | bool | None:
    """None when absent, True for a switch that is present, else its values as written."""
    if flag not in parsed.flags:
        return None
    return " ".join(parsed.flags[flag]) or True


def _change(name: str, reference: object, candidate: object, rule: ArgumentClass | None) -> dict:
    return {
        "argument": name,
        "reference": reference,
        "candidate": candidate,
        "class": rule.klass if rule else None,
        "why": rule.why if rule else "not in rules/argument-classes.yaml",
        "component_test": rule.component_test if rule else None,
    }


def reason(change: dict) -> str | None:
    name, was, now = change["argument"], change["reference"], change["candidate"]
    if change["class"] is None:
        return (f"{name} changes ({was} -> {now}) and is not classed; add it to rules/argument-classes.yaml "
                "with its class and reason")
    if change["class"] == "numerics":
        return f"{name} changes the numerics ({was} -> {now}): {change['why']}"
    if change["class"] == "precision":
        return (f"{name} changes the training precision ({was} -> {now}): {change['why']}; the convergence check "
                "against the reference arm is the bar, step-for-step parity is not claimed")
    if change["component_test"]:
        return (f"{name} changes ({was} -> {now}); run `openrecipes check component {change['component_test']}` "
                "at the recipe's shape")
    if change["class"] == "execution_fingerprint":
        return (f"{name} changes the execution fingerprint ({was} -> {now}): the convergence check applies, "
                "step-for-step parity is not claimed")
    return None


def compare_runs(reference: ParsedRun, candidate: ParsedRun, rules: Rules) -> dict:
    changes = []
    if current_words(reference.launcher) != current_words(candidate.launcher):
        changes.append(_change("launch program", " ".join(reference.launcher), " ".join(candidate.launcher), None))
    for flag in sorted(set(reference.flags) | set(candidate.flags)):
        was, now = _flag_value(reference, flag), _flag_value(candidate, flag)
        if was != now:
            changes.append(_change(flag, was, now, rules.of_argument(flag)))
    for name in sorted(set(reference.exports) | set(candidate.exports)):
        was, now = reference.exports.get(name), candidate.exports.get(name)
        if was != now:
            changes.append(_change(name, was, now, rules.environment.get(name)))

    failing = [c for c in changes if c["class"] in (None, "numerics")]
    component_tests = sorted({c["component_test"] for c in changes if c["component_test"]})
    precision = any(c["class"] == "precision" for c in changes)
    result = FAIL if failing else NEEDS_COMPONENT_TEST if component_tests else PRECISION_CHANGE if precision else PASS
    return {
        "result": result,
        "placement_only": result == PASS and all(c["class"] == "placement" for c in changes),
        "changes": changes,
        "component_tests": component_tests,
        "reasons": [reason for reason in map(reason, changes) if reason],
    }


def check_config(candidate: Path, reference: Path, rules_path: Path = RULES_PATH) -> dict:
    return compare_runs(read_run(reference), read_run(candidate), load_rules(rules_path))
