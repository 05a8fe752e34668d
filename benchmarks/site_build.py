"""Site build speed at catalog scale: a synthetic catalog of 1,000 recipes, against the bundled catalog's build.

The synthetic catalog is written as YAML files from the five seed recipes through the typed model: each copy keeps
its seed's layout, command and workload (so it still validates) and gets its own name, date, highlights and
tokens/s per GPU, with $/1M tokens and MFU recomputed through openrecipes.figures at the seeds' precision.
Loading (validating every file) and building are timed apart, since validation is the catalog room's cost.

    .venv/bin/python benchmarks/site_build.py [--recipes 1000]     # prints a Markdown section for RESULTS.md
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import tempfile
import time
from pathlib import Path

import yaml

from openrecipes import figures
from openrecipes.catalog.hardware import peak_flops, usd_per_gpu_hour
from openrecipes.catalog.paths import bundled_root
from openrecipes.catalog.store import load_catalog
from openrecipes.site.build import build_site

TARGET_SECONDS = 5.0
PAGE_BUDGET_BYTES = 150 * 1024


def write_synthetic_catalog(root: Path, count: int) -> None:
    # The seed recipes (ours name raw-log folders under runs/, which a synthetic catalog does not have).
    seeds = [e for e in load_catalog(bundled_root()).recipes if e.entry.runs is None]
    for i in range(count):
        seed = seeds[i % len(seeds)]
        recipe = seed.entry
        tokens = round(recipe.result.tokens_per_s_per_gpu * (0.55 + (i * 37 % 90) / 100), 2)
        result = recipe.result.model_copy(update={
            "tokens_per_s_per_gpu": tokens,
            "usd_per_million_tokens": round(figures.usd_per_million_tokens(
                usd_per_gpu_hour(recipe.gpu.instance), tokens), 2),
            "mfu": round(figures.mfu(recipe.result.active_params.count, tokens, peak_flops(recipe.gpu.type)), 4),
            "measured": recipe.result.measured - datetime.timedelta(days=i % 60),
        })
        layout = recipe.layout.model_copy(update={"highlights": f"{recipe.layout.highlights}; variant {i}"})
        synthetic = recipe.model_copy(update={"result": result, "layout": layout})
        path = root / seed.path.parent / f"synthetic-{i:04d}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(synthetic.model_dump(mode="json"), sort_keys=False, width=1000),
                        encoding="utf-8")


def timed(function, *args):
    start = time.perf_counter()
    value = function(*args)
    return value, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", type=int, default=1000)
    count = parser.parse_args().recipes
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        write_synthetic_catalog(work / "catalog", count)
        # Baseline first, which also pays the one-time imports and template compilation (cold).
        bundled, bundled_load_s = timed(load_catalog, bundled_root())
        _, cold_build_s = timed(build_site, bundled, work / "bundled-cold")
        _, bundled_build_s = timed(build_site, bundled, work / "bundled-site")
        synthetic, load_s = timed(load_catalog, work / "catalog")
        report, build_s = timed(build_site, synthetic, work / "site")
        assert len(synthetic.recipes) == count, "every synthetic recipe must validate"
        largest_page, largest_bytes = report.largest
        files = sum(1 for p in report.out.rglob("*") if p.is_file())
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    verdict = "meets" if build_s <= TARGET_SECONDS and largest_bytes <= PAGE_BUDGET_BYTES else "MISSES"
    print(f"""
## Site build, {count:,} synthetic recipes — {datetime.date.today()}

Machine: {os.cpu_count()} CPUs (`nproc`), {cpu}, Python {platform.python_version()}.
Synthetic catalog: {count:,} YAML recipes written from the 5 seed recipes through the typed model (seed layouts and
commands, own names, dates and figures; $/1M and MFU recomputed by figures.py), all validated on load.

| step | bundled catalog ({len(bundled.recipes)} recipes) | synthetic ({count:,} recipes) | ratio |
|---|---:|---:|---:|
| load + validate every file | {bundled_load_s:.2f} s | {load_s:.2f} s | {load_s / bundled_load_s:.0f}x |
| build the site | {bundled_build_s:.2f} s | {build_s:.2f} s | {build_s / bundled_build_s:.0f}x |

Build of {count:,} recipes: {build_s:.2f} s against the {TARGET_SECONDS:.0f} s target; {len(report.pages):,} pages, {files:,} files;
largest page {largest_page} at {largest_bytes / 1024:.0f} KB (budget 150 KB): {verdict} both targets.
Validation of the files ({load_s:.2f} s) is the catalog room's cost and is timed apart from the build.
The Plan pages are read from the committed plans/*.json (`openrecipes plan export`; the build runs no planner): the
first bundled build, which also compiles the templates, took {cold_build_s:.2f} s.
""")


if __name__ == "__main__":
    main()
