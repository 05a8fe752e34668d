"""Write gpu.variant into every entry under recipes/ that lacks one, read from the entry's own evidence.

    PYTHONPATH=src python scripts/add_gpu_variants.py [--root CATALOG]

The variant of an entry is, in this order:
- a record entry's `published.system_as_published`, looked up in the `published_as` names of hardware/gpus.yaml
  (DGX-H100 is H100-SXM5-80GB; torchtitan's Grand Teton H100 is H100-SXM-96GB-500W);
- a measured recipe's raw log: the device its `openrecipes stack:` line names (gpu=NVIDIA H200), looked up in the
  `reported_as` names;
- otherwise the priced instance's (a recipe) or the seed page's (a two-figure summary) GPU type, whose default
  variant is the part those prices rent.
The line is inserted under `gpu: type:`, so comments and layout stay as written; an entry that has a variant is left
alone, so the script can be run again.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from openrecipes.catalog.hardware import (
    ReferenceTables,
    load_reference_tables,
    variant_id,
    variant_of_device,
    variant_of_system,
)
from openrecipes.catalog.yamlio import read_yaml
from openrecipes.errors import UserError
from openrecipes.measure.stack import read_stack_line

_GPU_TYPE = re.compile(r"^(gpu:\n(?:  .*\n)*?  type: .*\n)", re.MULTILINE)


def _logged_device(root: Path, data: dict) -> str | None:
    candidate = (data.get("runs") or {}).get("candidate")
    log = root / candidate / "train.log" if candidate else None
    if log is None or not log.is_file():
        return None
    line = read_stack_line(log.read_text(encoding="utf-8", errors="replace").splitlines())
    return line.gpu if line else None


def variant_for(root: Path, data: dict, tables: ReferenceTables) -> str:
    published = data.get("published")
    if published:
        return variant_of_system(published["system_as_published"], tables)
    device = _logged_device(root, data)
    if device is not None:
        found = variant_of_device(device, tables)
        if found is None:
            raise UserError(f"no variant of hardware/gpus.yaml is reported as '{device}'; add it to reported_as")
        return found
    gpu = data["gpu"]
    gpu_type = tables.instances[gpu["instance"]].gpu if "instance" in gpu else gpu["type"]
    return variant_id(tables.gpus[gpu_type], tables)


def main(root: Path) -> int:
    tables = load_reference_tables(root)
    written = 0
    for path in sorted((root / "recipes").rglob("*.yaml")):
        data = read_yaml(path).data
        if not isinstance(data, dict) or "variant" in (data.get("gpu") or {}):
            continue
        variant = variant_for(root, data, tables)
        text = path.read_text(encoding="utf-8")
        new, count = _GPU_TYPE.subn(rf"\g<1>  variant: {variant}\n", text, count=1)
        if count != 1:
            raise UserError(f"{path}: no `gpu: type:` line to write the variant under")
        path.write_text(new, encoding="utf-8")
        written += 1
    print(f"wrote gpu.variant into {written} entries")
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    try:
        sys.exit(main(Path(args[args.index("--root") + 1]) if "--root" in args else Path(".")))
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
