"""Site build speed at catalog scale: a synthetic catalog of 1,000 recipes, against the bundled catalog's build;
and both builds with the plots drawn as they were drawn before (the baseline), alternately in this process.

The bundled catalog's build draws the run plots (loss and step time of the 13 recipes with stored logs) and the
Pareto plots; the synthetic catalog's build draws only the Pareto plots.

The synthetic catalog is written as YAML files from the five seed recipes through the typed model: each copy keeps
its seed's layout, command and workload (so it still validates) and gets its own name, date, highlights and
tokens/s per GPU, with $/1M tokens and MFU recomputed through openrecipes.figures at the seeds' precision.
Loading (validating every file) and building are timed apart, since validation is the catalog room's cost.

    .venv/bin/python benchmarks/site_build.py [--recipes 1000] [--runs 3] [--tiny]   # a Markdown section for RESULTS.md
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import tempfile
import time
import types
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

import yaml

from openrecipes import figures
from openrecipes.catalog.hardware import peak_flops, usd_per_gpu_hour
from openrecipes.catalog.paths import bundled_root
from openrecipes.catalog.store import load_catalog
from openrecipes.site import build as site_build
from openrecipes.site import plots
from openrecipes.site import runs as site_runs
from openrecipes.site.build import build_site

REPO = Path(__file__).resolve().parents[1]
BASELINE_COMMIT = "9d63b77"  # the last commit that drew the plots the old way
TARGET_SECONDS = 5.0
PAGE_BUDGET_BYTES = 150 * 1024


# Stand-ins for the figures each copy writes for itself, put in the seed's YAML once and replaced per file: each
# dumps as the value that replaces it does (a plain scalar; a date quoted, as YAML would read it as a timestamp).
_TOKENS, _USD, _MFU, _VARIANT, _MEASURED = "ZZTOKENSZZ", "ZZUSDZZ", "ZZMFUZZ", "ZZVARIANTZZ", "0000-00-00"


def _seed_template(recipe) -> str:
    """The seed recipe as YAML through the typed model, once, its varying figures left as stand-ins."""
    result = recipe.result.model_dump(mode="json") | {
        "tokens_per_s_per_gpu": _TOKENS, "usd_per_million_tokens": _USD, "mfu": _MFU, "measured": _MEASURED}
    layout = recipe.layout.model_dump(mode="json") | {"highlights": f"{recipe.layout.highlights}; variant {_VARIANT}"}
    text = yaml.safe_dump(recipe.model_dump(mode="json") | {"result": result, "layout": layout}, sort_keys=False,
                          width=1000)
    assert all(text.count(mark) == 1 for mark in (_TOKENS, _USD, _MFU, _VARIANT, f"'{_MEASURED}'")), "a stand-in clash"
    return text


def _float(value: float) -> str:
    return yaml.representer.SafeRepresenter().represent_float(value).value


def write_synthetic_catalog(root: Path, count: int) -> None:
    """`count` recipes from the seed recipes (ours name raw-log folders under runs/, which a synthetic catalog does
    not have): each seed dumped once through the typed model, each copy its template with its own figures."""
    seeds = [(e, _seed_template(e.entry)) for e in load_catalog(bundled_root()).recipes if e.entry.runs is None]
    for folder in {seed.path.parent for seed, _ in seeds}:
        (root / folder).mkdir(parents=True, exist_ok=True)
    for i in range(count):
        seed, template = seeds[i % len(seeds)]
        recipe = seed.entry
        tokens = round(recipe.result.tokens_per_s_per_gpu * (0.55 + (i * 37 % 90) / 100), 2)
        usd = round(figures.usd_per_million_tokens(usd_per_gpu_hour(recipe.gpu.instance), tokens), 2)
        mfu = round(figures.mfu(recipe.result.active_params.count, tokens, peak_flops(recipe.gpu.type)), 4)
        measured = recipe.result.measured - datetime.timedelta(days=i % 60)
        text = (template.replace(_TOKENS, _float(tokens)).replace(_USD, _float(usd)).replace(_MFU, _float(mfu))
                .replace(_VARIANT, str(i)).replace(_MEASURED, measured.isoformat()))
        (root / seed.path.parent / f"synthetic-{i:04d}.yaml").write_text(text, encoding="utf-8")


def timed(function, *args):
    start = time.perf_counter()
    value = function(*args)
    return value, time.perf_counter() - start


@contextmanager
def drawn_as_before() -> Iterator[None]:
    """The baseline: the site room's plots module as it was before each plot was drawn once (read from git at
    BASELINE_COMMIT), in place of today's for the build."""
    source = subprocess.run(["git", "show", f"{BASELINE_COMMIT}:src/openrecipes/site/plots.py"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout
    before = types.ModuleType("plots_before")
    exec(compile(source, f"{BASELINE_COMMIT}:plots.py", "exec"), before.__dict__)
    # What today's build asks of the plots module beyond what it had then: which Pareto points to number (it numbered
    # every point) and the scaling plots (drawn today's way in both arms).
    drawn_then = before.pareto_svg
    before.pareto_svg = lambda points, front, link, id_prefix, numbered=None: drawn_then(points, front, link, id_prefix)
    before.scaling_svg = plots.scaling_svg
    try:
        site_build.plots = site_runs.plots = before
        yield
    finally:
        site_build.plots = site_runs.plots = plots


ARMS: dict[str, Callable[[], AbstractContextManager[None]]] = {"before": drawn_as_before, "now": nullcontext}


def alternate(runs: int, catalog, out: Path) -> dict[str, list[float]]:
    """Seconds per build of each arm, the arms taking turns so that a change in the machine's load hits both."""
    seconds: dict[str, list[float]] = {arm: [] for arm in ARMS}
    for run in range(runs):
        for arm, drawing in ARMS.items():
            with drawing():
                _, elapsed = timed(build_site, catalog, out / f"{arm}-{run}")
            seconds[arm].append(elapsed)
    return seconds


def row(label: str, seconds: dict[str, list[float]]) -> str:
    before, now = (statistics.median(seconds[arm]) for arm in ARMS)
    spread = {arm: f"{min(s):.2f}–{max(s):.2f}" for arm, s in seconds.items()}
    return (f"| {label} | {before:.2f} s ({spread['before']}) | {now:.2f} s ({spread['now']}) | "
            f"{before / now:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3, help="builds of each arm, taken alternately")
    parser.add_argument("--tiny", action="store_true", help="5 recipes, a build per arm (a check that it runs)")
    arguments = parser.parse_args()
    count, runs = (5, 1) if arguments.tiny else (arguments.recipes, arguments.runs)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        write_synthetic_catalog(work / "catalog", count)
        # The one-time imports and template compilation are paid by a first build (cold), timed apart.
        bundled, bundled_load_s = timed(load_catalog, bundled_root())
        _, cold_build_s = timed(build_site, bundled, work / "bundled-cold")
        bundled_s = alternate(runs, bundled, work / "bundled")
        synthetic, load_s = timed(load_catalog, work / "catalog")
        assert len(synthetic.recipes) == count, "every synthetic recipe must validate"
        synthetic_s = alternate(runs, synthetic, work / "synthetic")
        report = build_site(synthetic, work / "site")
        largest_page, largest_bytes = max(report.pages.items(), key=lambda item: item[1])
        files = sum(1 for p in report.out.rglob("*") if p.is_file())
    load_after = os.getloadavg()
    build_s = statistics.median(synthetic_s["now"])
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    verdict = "meets" if build_s <= TARGET_SECONDS and largest_bytes <= PAGE_BUDGET_BYTES else "MISSES"
    print(f"""
## Site build, {count:,} synthetic recipes — {datetime.date.today()}

Machine: {os.cpu_count()} CPUs (`nproc`), {cpu}, Python {platform.python_version()}; load average (1, 5, 15 min)
{", ".join(f"{x:.2f}" for x in load_before)} before, {", ".join(f"{x:.2f}" for x in load_after)} after.
Synthetic catalog: {count:,} YAML recipes written from the 5 seed recipes through the typed model (seed layouts and
commands, own names, dates and figures; $/1M and MFU recomputed by figures.py), all validated on load.
Each build {runs} times per arm, the arms alternating: median (min–max). "before": the plots module of commit
{BASELINE_COMMIT} (a figure per run plot, bbox_inches="tight", a layout draw before the Pareto labels); "now":
today's.

| build | before | now | before / now |
|---|---:|---:|---:|
{row(f"bundled catalog ({len(bundled.recipes)} recipes, run plots and Pareto plots)", bundled_s)}
{row(f"synthetic ({count:,} recipes, Pareto plots)", synthetic_s)}

Load + validate every file: bundled {bundled_load_s:.2f} s, synthetic {load_s:.2f} s (the catalog room's cost,
timed apart from the build). The first bundled build, which also compiles the templates, took {cold_build_s:.2f} s.
Build of {count:,} recipes: {build_s:.2f} s against the {TARGET_SECONDS:.0f} s target; {len(report.pages):,} pages,
{files:,} files; largest page {largest_page} at {largest_bytes / 1024:.0f} KB (budget 150 KB): {verdict} both targets.
""")


if __name__ == "__main__":
    main()
