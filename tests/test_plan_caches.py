"""The planner memoizes figures that depend on a few layout fields (parameter counts per stage split, per-layer
activation bytes, interval bases, labels) and keeps one object per model shape. The caches are keyed on immutable
values only, so a process that has planned other models, engines, catalogs and calibrations gets, for each request,
what a fresh process gets: here every case is planned in one order in this process and in the reverse order in a
new one, and the two must agree byte for byte (a cache keyed on too little would hand a later case an earlier one's
figures, in one order or the other)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from openrecipes.jsonout import json_text
from openrecipes.plan import predict as planner
from openrecipes.plan.constants import Calibration

REPO = Path(__file__).resolve().parents[1]
BUNDLED, EDITED = "bundled", "edited"
# (catalog, plan_table's arguments, scale of the fitted compute efficiencies)
CASES: list[tuple[str, dict[str, Any], float]] = [
    (BUNDLED, {"model": "qwen3-0.6b", "gpu_type": "H200", "gpus": 8, "engine": "torchtitan"}, 1.0),
    (BUNDLED, {"model": "qwen3-0.6b", "gpu_type": "H200", "gpus": 2}, 1.0),
    (BUNDLED, {"model": "gpt-oss-20b", "gpu_type": "H200", "gpus": 2, "grad_reduce_bf16": True}, 1.0),
    (BUNDLED, {"model": "GLM-5.2-744B-A40B", "gpu_type": "H200", "gpus": 8, "global_batch": 1}, 1.0),
    # The same model name with another architecture (a fork's card): its shape must not be taken for the bundled one.
    (EDITED, {"model": "qwen3-0.6b", "gpu_type": "H200", "gpus": 8, "engine": "torchtitan"}, 1.0),
    # Another calibration, as the fit tries many: nothing calibrated may be remembered across them.
    (BUNDLED, {"model": "qwen3-0.6b", "gpu_type": "H200", "gpus": 8, "engine": "torchtitan"}, 0.5),
]


def edited_catalog(folder: Path) -> Path:
    """A catalog whose qwen3-0.6b card has a narrower FFN than the bundled one; hardware/ is the bundled one."""
    shutil.copytree(REPO / "models", folder / "models")
    card = folder / "models" / "qwen3-0.6b.yaml"
    text = card.read_text(encoding="utf-8")
    assert "ffn_hidden_size: 3072" in text
    card.write_text(text.replace("ffn_hidden_size: 3072", "ffn_hidden_size: 2048"), encoding="utf-8")
    return folder


def _always(calibration: Calibration) -> Callable[[], Calibration]:
    return lambda: calibration


def plan_cases(cases: list[tuple[str, dict[str, Any], float]], edited_root: Path) -> list[str]:
    """Each case's `plan --top 0 --json` text, planned in the order given, in this process."""
    bundled_calibration = planner.calibration
    texts = []
    for catalog, fields, scale in cases:
        calibration = bundled_calibration()
        calibration = calibration.with_values({f"compute_efficiency.{key}": value * scale
                                               for key, value in calibration.compute_efficiency.items()})
        planner.calibration = _always(calibration)  # what context() reads
        try:
            rows = planner.plan_table(**fields, root=REPO if catalog == BUNDLED else edited_root)
        finally:
            planner.calibration = bundled_calibration
        texts.append(json_text(rows))
    return texts


def test_each_request_is_planned_as_a_fresh_process_plans_it(tmp_path):
    edited_root = edited_catalog(tmp_path)
    here = plan_cases(CASES, edited_root)
    fresh = subprocess.run([sys.executable, __file__, str(edited_root)], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONPATH": str(REPO / "src")}, cwd=REPO)
    there = json.loads(fresh.stdout)
    for (catalog, fields, scale), ours, theirs in zip(CASES, here, there, strict=True):
        assert ours == theirs, f"{catalog} catalog, {fields}, efficiency x{scale}: planned differently"
    # The cases that could be confused are not the same plan (else the comparison above could not catch it).
    assert here[4] != here[0] and here[5] != here[0]


if __name__ == "__main__":  # the fresh process: the cases planned in the reverse order, printed in CASES' order
    print(json.dumps(list(reversed(plan_cases(list(reversed(CASES)), Path(sys.argv[1]))))))
