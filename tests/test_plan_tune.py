"""`openrecipes tune`: dry run, and the tuning loop against a fake runner whose "true" speeds differ from the planner's.

The fake runner stands in for torchrun: it writes a torchtitan-format train.log (the format of runs/*/train.log), so
openrecipes.measure parses it exactly as it parses a real run.
"""

from __future__ import annotations

import datetime
import json
import shutil
from pathlib import Path

import pytest
from conftest import openrecipes
from typer.testing import CliRunner

import openrecipes.tune as tuning
from openrecipes.cli import app
from openrecipes.errors import UserError

REPO = Path(__file__).resolve().parents[1]
BASE = REPO / "recipes/qwen3-8b/h200/torchtitan-stock-fsdp2.yaml"
WHEN = datetime.datetime(2026, 12, 1, 9, 0, 0)

# "True" tokens/s per GPU by (TP, PP, CP, DP, AC mode, rows a microbatch, compile, reshard after forward): the three
# measured Qwen3-8B points where we have them, an OOM, and everything else slower than predicted.
TRUE_SPEED = {
    (1, 1, 1, 2, "selective", 2, False, True): 8313.0,   # the stock reference arm (measured)
    (1, 1, 1, 2, "none", 1, True, False): 9828.0,        # compile, no AC, MB1, no reshard (measured): the true best
    (1, 1, 1, 2, "none", 1, True, True): 9536.0,         # the same with resharding (measured probe)
}
OOM = {(1, 1, 1, 2, "none", 1, False, False)}  # predicted to fit at 133.7 GiB; the fake says otherwise
OTHER_COMPILED, OTHER_EAGER = 8800.0, 7000.0


def _key(flags: dict[str, list[str]]) -> tuple:
    def one(flag: str) -> str:
        return flags[flag][0]
    return (int(one("--parallelism.tensor_parallel_degree")), int(one("--parallelism.pipeline_parallel_degree")),
            int(one("--parallelism.context_parallel_degree")),
            int(one("--parallelism.data_parallel_shard_degree"))
            * int(one("--parallelism.data_parallel_replicate_degree")),
            one("--activation_checkpoint.mode"), int(one("--training.local_batch_size")), "--compile.enable" in flags,
            flags.get("--parallelism.fsdp_reshard_after_forward") != ["never"])


class FakeRunner:
    """Writes the log a torchtitan run of the launch would print, records each launch it was given, and advances
    its clock (`clock`, the tuner's device-time clock) by the run's simulated wall time: 30 s of process start and
    model build, then the log's steps."""

    def __init__(self) -> None:
        self.launches: list = []
        self.seconds = 0.0

    def clock(self) -> float:
        return self.seconds

    def __call__(self, launch, run_dir: Path, *, tokens_per_step: int) -> Path:
        self.launches.append(launch)
        run_dir.mkdir(parents=True, exist_ok=True)
        log = run_dir / "train.log"
        key = _key(launch.flags)
        steps = int(launch.flags["--training.steps"][0])
        clock = WHEN + datetime.timedelta(hours=len(self.launches))
        lines = ["[rank0]:openrecipes stack: torch=2.11.0+cu130 cuda=13.0 nccl=2.28.9 torchtitan=0.2.2 "
                 "python=3.12.3 gpu=NVIDIA H200",
                 f"[rank0]:[titan] {clock:%Y-%m-%d %H:%M:%S},000 - root - INFO - Training starts at step 1"]
        if key in OOM:
            clock += datetime.timedelta(seconds=25)
            lines.append(f"[rank0]:[titan] {clock:%Y-%m-%d %H:%M:%S},000 - root - ERROR - torch.OutOfMemoryError: "
                         "CUDA out of memory. Tried to allocate 2.32 GiB.")
            log.write_text("\n".join(lines) + "\n")
            self.seconds += 30 + 25
            from openrecipes.errors import UserError as RunError
            raise RunError(f"torchrun exited with 1; the raw log is {log}")
        speed = TRUE_SPEED.get(key, OTHER_COMPILED if key[6] else OTHER_EAGER)
        step_s = tokens_per_step / launch.nproc_per_node / speed
        for step in range(1, steps + 1):
            jitter = 1 + (0.002 if step % 2 else -0.002)
            clock += datetime.timedelta(seconds=25 if step == 1 else step_s * jitter)
            loss = 12.35 - 0.55 * step + 1e-4 * (key[0] + key[5])
            lines.append(f"[rank0]:[titan] {clock:%Y-%m-%d %H:%M:%S},{clock.microsecond // 1000:03d} - root - INFO - "
                         f"step: {step:2d}  loss: {loss:8.5f}  grad_norm: 10.0000  memory: 110.00GiB(78.68%)  "
                         f"tps: {speed:,.0f}  tflops: 500.00  mfu: 50.00%")
        log.write_text("\n".join(lines) + "\n")
        self.seconds += 30 + (clock - WHEN - datetime.timedelta(hours=len(self.launches))).total_seconds()
        return log


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    """A catalog folder with the base recipe only: models/ and hardware/ come from the bundled catalog."""
    target = tmp_path / "recipes/qwen3-8b/h200"
    target.mkdir(parents=True)
    shutil.copy(BASE, target / BASE.name)
    # the base recipe's own arm and its reproduction's log, which validate requires
    for log in ("runs/qwen3-8b-h200x2-torchtitan-stock/train.log",
                "runs/reproductions/qwen3-8b-h200x2-rerun-20261130/stock/train.log"):
        (tmp_path / log).parent.mkdir(parents=True)
        shutil.copy(REPO / log, tmp_path / log)
    return tmp_path


def _setup(catalog: Path) -> tuning.Setup:
    return tuning.setup("qwen3-8b", "H200", 2, catalog / "recipes/qwen3-8b/h200" / BASE.name, catalog, when=WHEN)


def test_dry_run_prints_ranked_candidates_minutes_and_commands(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no recipes/ here: the bundled catalog, and nothing may be written
    result = CliRunner().invoke(app, ["tune", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--budget-minutes", "10",
                                      "--dry-run"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "from recipes/qwen3-8b/h200/torchtitan-stock-fsdp2.yaml" in out
    assert "1  TP1 PP1 DP2, none recompute, 1 row(s) a microbatch, compiled" in out
    assert "cannot win" in out and "budget" in out
    assert "# reference arm: recipes/qwen3-8b/h200/torchtitan-stock-fsdp2.yaml at 10 steps" in out
    assert out.count("torchrun --nnodes 1 --nproc_per_node 2") >= 2
    assert "--training.steps 10" in out and "--compile.enable" in out and "--activation_checkpoint.mode none" in out
    measured = [line for line in out.splitlines() if line.endswith("  measure")]
    minutes = sum(float(line.split()[-2]) for line in measured)
    assert measured and minutes + 2.3 <= 10
    assert not (tmp_path / "runs").exists() and not (REPO / "runs" / "tune-qwen3-8b-h200x2-").exists()


def _without_compile_gain(monkeypatch) -> None:
    """The planner without its compile and host-overhead terms: a prior tune has to correct (the scenario below
    needs eager layouts ranked among the first contenders)."""
    from openrecipes.plan import predict
    from openrecipes.plan.constants import calibration

    plain = calibration().with_values({"compute_efficiency.torchtitan/H200-SXM-141GB": 0.5374, "compile_speedup": 1.0,
                                       "microbatch_overhead_s_per_layer": 0.0,
                                       "eager_sac_overhead_s_per_layer": 0.0})
    monkeypatch.setattr(predict, "calibration", lambda: plain)


def test_tune_finds_true_best_early_refits_marks_oom_and_writes_a_valid_recipe(catalog, monkeypatch):
    _without_compile_gain(monkeypatch)
    s = _setup(catalog)
    runner = FakeRunner()
    result = tuning.tune(s, budget_minutes=30, runner=runner, clock=runner.clock)

    # the true best, found while measuring fewer candidates than exist; some dropped because they cannot win
    assert result.winner.candidate.slug == "tp1-pp1-cp1-dp2-none-mb1-compile-noreshard"
    assert result.winner.measurement.tokens_per_s_per_gpu == pytest.approx(9828, rel=1e-3)
    assert len(result.measured) < len(s.ranked)
    assert len(runner.launches) == len(result.measured) + 1  # + the reference arm
    assert any(o.dropped and o.dropped.startswith("cannot win") for o in result.outcomes)
    assert result.stop_reason == "no candidate left that can win"
    assert result.spent_minutes <= 30

    # re-ranked after each refit: a ranking of the contenders left is recorded after every measurement
    assert len(result.rankings) >= 2
    assert result.efficiency.points == len([o for o in result.measured if o.measurement.ok]) + 1
    assert result.efficiency.b != 0  # eager and compiled points both measured: a compile term was fitted

    # the OOM candidate is unfit, with the memory miss recorded
    oom = [o for o in result.outcomes if o.measurement is not None and o.measurement.oom]
    assert [o.candidate.slug for o in oom] == ["tp1-pp1-cp1-dp2-none-mb1-eager-noreshard"]
    assert oom[0].dropped.startswith("out of memory: predicted 133.7 GiB")
    assert result.winner is not oom[0]

    # tune.json: the whole search as data, device minutes as the clock read them
    record = json.loads((result.run_root / "tune.json").read_text())
    assert record["winner"] == "tp1-pp1-cp1-dp2-none-mb1-compile-noreshard"
    assert record["spent_minutes"] == pytest.approx(runner.seconds / 60, abs=1e-3)
    assert record["reference"]["tokens_per_s_per_gpu"] == pytest.approx(8313, rel=1e-3)
    rows = {row["slug"]: row for row in record["outcomes"]}
    assert len(rows) == len(s.ranked)
    assert rows["tp1-pp1-cp1-dp2-none-mb1-eager-noreshard"]["oom"] is True
    assert rows["tp1-pp1-cp1-dp2-none-mb1-compile-noreshard"]["log"].endswith("/train.log")
    assert sum(row.get("minutes", 0) for row in rows.values()) + record["reference"]["minutes"] == pytest.approx(
        record["spent_minutes"], abs=0.01)

    path = tuning.write_winner(s, result)
    assert path == catalog / "recipes/qwen3-8b/h200/tuned-tp1-pp1-cp1-dp2-none-mb1-compile-noreshard.yaml"
    assert result.config.result == "pass" and result.convergence.passed
    monkeypatch.chdir(catalog)
    checked = CliRunner().invoke(app, ["validate", str(path)])
    assert checked.exit_code == 0, checked.output
    text = path.read_text()
    assert "status: measured" in text and "--parallelism.fsdp_reshard_after_forward never" in text
    assert "reference: runs/tune-qwen3-8b-h200x2-20261201-090000/reference" in text
    assert "configuration: pass" in text and "correlation:" in text


def test_tune_respects_the_budget(catalog):
    s = _setup(catalog)
    runner = FakeRunner()
    result = tuning.tune(s, budget_minutes=6, runner=runner, clock=runner.clock)
    assert result.stop_reason.startswith("budget")
    assert result.spent_minutes <= 6
    assert 1 <= len(result.measured) < 3
    assert any(o.dropped == "budget" for o in result.outcomes)


def test_budget_too_small_for_the_reference_and_one_candidate(catalog):
    with pytest.raises(UserError, match="budget-minutes 3 is below"):
        tuning.tune(_setup(catalog), budget_minutes=3, runner=FakeRunner())


@pytest.mark.parametrize("args, message", [
    (["nope", "--gpu", "H200", "--gpus", "2", "--budget-minutes", "5"], "unknown model 'nope'"),
    (["gpt-oss-20b", "--gpu", "H200", "--gpus", "8", "--budget-minutes", "5"], "no torchtitan recipe of gpt-oss-20b"),
    (["qwen3-8b", "--gpu", "H200", "--gpus", "2", "--budget-minutes", "0"], "give a positive number"),
    (["gpt-oss-20b", "--gpu", "H200", "--gpus", "8", "--budget-minutes", "5", "--base",
      str(REPO / "recipes/gpt-oss-20b/h200/attune-tp1-pp1-ep4.yaml")], "whose runs start elsewhere"),
])
def test_bad_input_exits_2_with_one_line(args, message):
    done = openrecipes("tune", *args)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_an_invalid_winner_is_refused_and_leaves_nothing_behind(catalog):
    from openrecipes.audit.record import write_recipe
    from openrecipes.catalog.hardware import load_reference_tables

    tables = load_reference_tables(catalog)
    target = catalog / "recipes/qwen3-8b/h200/tuned-broken.yaml"
    bad = (catalog / "recipes/qwen3-8b/h200" / BASE.name).read_text().replace("status: ", "status: nonsense-", 1)
    with pytest.raises(UserError, match="does not validate.*status"):
        write_recipe(target, bad, tables)
    assert sorted(p.name for p in target.parent.iterdir()) == [BASE.name]
    fresh = catalog / "recipes/qwen3-8b/b200/tuned.yaml"  # a folder made for the file goes with it
    with pytest.raises(UserError):
        write_recipe(fresh, bad, tables)
    assert not (catalog / "recipes/qwen3-8b/b200").exists()
    good = (catalog / "recipes/qwen3-8b/h200" / BASE.name).read_text()
    write_recipe(target, good, tables)
    assert target.read_text() == good
    assert sorted(p.name for p in target.parent.iterdir()) == sorted([BASE.name, target.name])


def test_lanes_run_arms_at_once_on_their_own_gpus_and_score_the_window_asked(catalog, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/tmp/cache")
    s = _setup(catalog)
    runner = FakeRunner()
    result = tuning.tune(s, budget_minutes=30, runner=runner, clock=runner.clock, lanes=2, steps=20, window_first=5)

    # each batch is two arms at once, the reference with the best-predicted contender, each on its own two GPUs
    lanes = [(launch.env["CUDA_VISIBLE_DEVICES"], launch.env["TORCHINDUCTOR_CACHE_DIR"]) for launch in runner.launches]
    assert sorted(lanes[:2]) == [("4,5", "/tmp/cache-lane0"), ("6,7", "/tmp/cache-lane1")]
    assert all(launch.flags["--training.steps"] == ["20"] for launch in runner.launches)
    assert result.reference.measurement.window == (5, 19)
    assert result.winner.candidate.slug == "tp1-pp1-cp1-dp2-none-mb1-compile-noreshard"
    assert result.lanes == 2 and json.loads((result.run_root / "tune.json").read_text())["lanes"] == 2

    path = tuning.write_winner(s, result)
    text = path.read_text()
    assert "window:\n  - 5\n  - 19" in text and "steps_per_run: 20" in text
    assert "CUDA_VISIBLE_DEVICES" not in text  # the lane is where it ran, not part of the recipe
    assert "Tokens/s/GPU of each arm measured:" in text and "(reference): 8,31" in text


def test_window_must_leave_steps(catalog):
    with pytest.raises(UserError, match="--window-from 9 leaves no window in 10 steps"):
        tuning.tune(_setup(catalog), budget_minutes=30, runner=FakeRunner(), window_first=9)


def test_a_wall_clock_limit_starts_no_arm_that_would_end_past_it(catalog):
    runner = FakeRunner()
    result = tuning.tune(_setup(catalog), budget_minutes=30, runner=runner, clock=runner.clock, wall_minutes=5)
    assert result.stop_reason.startswith("wall clock")
    assert len(runner.launches) < 4


def test_layouts_the_engine_cannot_run_are_not_candidates(catalog):
    s = _setup(catalog)
    assert s.ranked and all(c.layout.tp == 1 for c in s.ranked)  # Qwen3 with TP fails on torchtitan 0.2.2


def test_a_base_not_yet_measured_is_tuned_from_its_configuration(catalog):
    shutil.rmtree(catalog / "runs")  # a new model's stock recipe: no raw log yet, so `validate` would refuse it
    s = _setup(catalog)
    assert s.base.model == "qwen3-8b" and s.ranked
    broken = catalog / "recipes/qwen3-8b/h200/broken.yaml"
    base = (catalog / "recipes/qwen3-8b/h200" / BASE.name).read_text()
    broken.write_text(base.replace("schema_version: 1", "schema_version: 7"))
    with pytest.raises(UserError, match="broken.yaml: schema_version"):
        tuning.setup("qwen3-8b", "H200", 2, broken, catalog, when=WHEN)


def test_an_arm_is_the_base_recipe_with_only_its_layout_steps_and_command_changed(catalog):
    from openrecipes.tune.arms import arm_of, reference_arm

    s = tuning.setup("qwen3-8b", "H200", 2, catalog / "recipes/qwen3-8b/h200" / BASE.name, catalog, when=WHEN,
                     float8="tensorwise")
    kept = {"run", "result", "layout", "workload"}
    reference = reference_arm(s.base, s.card, s.reference, 12).recipe
    assert reference.model_dump(exclude={"run", "result"}) == s.base.model_dump(exclude={"run", "result"})
    assert reference.result.model_dump(exclude={"steps_per_run"}) == s.base.result.model_dump(
        exclude={"steps_per_run"})
    assert reference.result.steps_per_run == 12 and "--training.steps 12" in reference.run
    candidate = s.ranked[0]
    arm = arm_of(candidate.slug, s.base, s.card, candidate, 12).recipe
    assert arm.model_dump(exclude=kept) == s.base.model_dump(exclude=kept)
    assert arm.workload.model_dump(exclude={"precision"}) == s.base.workload.model_dump(exclude={"precision"})
    assert arm.workload.precision == "fp8" and arm.layout.float8 is not None
    assert arm.layout.float8.scaling == "tensorwise" and arm.layout.float8.skip == ["output"]
    assert (arm.layout.label, arm.layout.highlights, arm.layout.dp, arm.layout.compile) == (
        candidate.layout.label, f"tuned: {candidate.label}", candidate.layout.dp, candidate.layout.levers.compile)
    assert "--model.converters quantize.linear.float8" in arm.run
    assert s.base.workload.precision == "bf16" and s.base.layout.float8 is None  # the base is left as it was


def test_a_recipe_edited_by_copy_is_validated_again():
    from pydantic import ValidationError

    from openrecipes.catalog.store import load_recipe
    base = load_recipe(BASE)
    swapped = base.layout.model_copy(update={"kernels": ["liger-rope", "liger-rmsnorm"]})
    edited = base.model_copy(update={"layout": swapped})  # model_copy assigns without checking
    with pytest.raises(ValidationError, match="list each kernel once"):
        edited.revalidated()
