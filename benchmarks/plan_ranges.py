"""How often the planner's printed ranges hold measurements they were not set on, and how wide they are.

    PYTHONPATH=src python benchmarks/plan_ranges.py

Reads src/openrecipes/plan/heldout.json (`openrecipes refresh` writes it): every measured point predicted held out
alone, with its engine's points on its variant left out (transferred from other variants), and with its engine's
points in its scale band left out. Each point is scored against the range `plan` would print for it, set on the
other points only (openrecipes.plan.trust.range_basis with the point excluded): first with the basis `plan` chooses,
then as if its variant had never been measured, then as if its band had not. Prints, per basis and scale band, the
share of points inside their range and the median range width (high minus low, as a share of the prediction).
CPU only, deterministic, a second: `--tiny` (what tests/test_benchmarks.py runs) is the same run.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from openrecipes.plan.trust import (  # noqa: E402
    BANDS,
    HELD_OUT,
    OTHER_BANDS,
    OTHER_VARIANTS,
    _central,
    band_of,
    range_basis,
    stored_points,
)


def scored(kind: str | None) -> dict[str, list[tuple[bool, float]]]:
    """Per band, each point's (inside its range, the range's width)."""
    out: dict[str, list[tuple[bool, float]]] = {}
    for point in stored_points():
        band = band_of(point.gpus)
        basis, errors, _ = range_basis(point.engine, point.variant, band, point.precision, point.name, kind)
        low, high = _central(errors)
        error = point.error_of(basis)
        out.setdefault(band, []).append((low <= error <= high, 1 / (1 + low) - 1 / (1 + high)))
    return out


def main() -> None:
    print("| Range basis | " + " | ".join(f"{label} GPUs" for _, _, label in BANDS) + " |")
    print("| --- |" + " --- |" * len(BANDS))
    for title, kind in (("as `plan` chooses it", None), (OTHER_VARIANTS + " (every variant as if unmeasured)",
                                                          OTHER_VARIANTS),
                        (OTHER_BANDS + " (every band as if unmeasured)", OTHER_BANDS),
                        (HELD_OUT + " (alone)", HELD_OUT)):
        found = scored(kind)
        cells = []
        for _, _, label in BANDS:
            rows = found.get(label, [])
            cells.append(f"{sum(inside for inside, _ in rows) / len(rows):.0%} in, median width "
                         f"{statistics.median(width for _, width in rows):.0%} ({len(rows)})" if rows else "no points")
        print(f"| {title} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
