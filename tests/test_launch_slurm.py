"""`openrecipes launch --slurm`: the sbatch script it renders (options, node checks, quoting), run by bash with
stand-in srun/scontrol/torchrun, and the bad input it refuses before anything is written or submitted. The same
script under a real Slurm is tests/test_launch_slurm_cluster.py."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import GPTOSS_1, REPO, _LiteralDumper, load_seed, openrecipes

QWEN3_8B = "recipes/qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1.yaml"
STOCK = REPO / "recipes/qwen3-0.6b/h200/torchtitan-stock.yaml"


def two_node_recipe(catalog: Path, name: str, *, nodes: int = 2, per_node: int = 2, env: dict | None = None) -> Path:
    """A qwen3-0.6b recipe of `nodes` x `per_node` GPUs (FSDP over all of them) at
    catalog/recipes/qwen3-0.6b/h200/`name`: the catalog's stock recipe with its GPU count and degrees changed."""
    data = load_seed(STOCK)
    count = nodes * per_node
    data["gpu"].update(count=count, per_node=per_node)
    data["layout"].update(dp=count, fsdp=count)
    data.pop("runs", None)  # its runs are the catalog's, not this folder's
    data["env"].update(env or {})
    data["run"] = (data["run"].replace("--nnodes 1 --nproc_per_node 1", f"--nnodes {nodes} --nproc_per_node {per_node}")
                   .replace("--parallelism.data_parallel_shard_degree 1",
                            f"--parallelism.data_parallel_shard_degree {count}"))
    lines = data["run"].splitlines()
    lines[0] = "export " + " ".join(f"{key}={value}" for key, value in data["env"].items())
    data["run"] = "\n".join(lines) + "\n"
    path = catalog / "recipes/qwen3-0.6b/h200" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.dump(data, Dumper=_LiteralDumper, sort_keys=False, width=1000), encoding="utf-8")
    return path


def _stand_ins(bin_dir: Path, record: Path) -> None:
    """srun (records its words, drops its options, runs the rest as node 0), scontrol (one node, 127.0.0.1) and
    torchrun (records its words)."""
    bin_dir.mkdir()
    scripts = {
        "srun": f'printf "%s\\n" "$@" > {record}/srun.args\nwhile [ "${{1#--}}" != "$1" ]; do shift; done\n'
                'SLURM_NODEID=0 exec "$@"\n',
        "scontrol": 'if [ "$2" = hostnames ]; then echo or0\n'
                    'else echo "NodeName=or0 NodeAddr=127.0.0.1 State=IDLE"; fi\n',
        "torchrun": f'printf "%s\\n" "$@" > {record}/torchrun.args\n',
    }
    for name, body in scripts.items():
        (bin_dir / name).write_text("#!/bin/bash\n" + body)
        (bin_dir / name).chmod(0o755)


def _run_script(script: str, cwd: Path, bin_dir: Path, nnodes: int = 2) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_ID": "7",
           "SLURM_NNODES": str(nnodes), "SLURM_JOB_NODELIST": "or[0-1]", "SLURM_SUBMIT_DIR": str(cwd)}
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=30)


def test_the_script_asks_slurm_for_the_recipes_nodes_and_options(tmp_path):
    out = tmp_path / "job.sbatch"
    result = openrecipes("launch", QWEN3_8B, "--slurm", "--out", out, "--partition", "gpu", "--account", "proj-1",
                         "--time", "1-02:00:00", "--qos", "high", "--reservation", "res_1",
                         "--container-image", "nvcr.io#nvidia/pytorch:25.01-py3")
    assert result.returncode == 0, result.stderr
    script = out.read_text()
    assert script.startswith("#!/bin/bash\n#SBATCH --job-name=openrecipes-fsdp2-compile-noac-mb1\n#SBATCH --nodes=1\n")
    for line in ("--ntasks-per-node=1", "--gpus-per-node=2", "--exclusive", "--partition=gpu", "--account=proj-1",
                 "--time=1-02:00:00", "--qos=high", "--reservation=res_1"):
        assert f"\n#SBATCH {line}\n" in script
    assert "export NCCL_NVLS_ENABLE=0\n" in script
    assert "--kill-on-bad-exit=1" in script and '--output="$run_dir/train.node%n.log"' in script
    assert "--container-image='nvcr.io#nvidia/pytorch:25.01-py3'" in script
    assert '--rdzv_backend static --node_rank "$SLURM_NODEID"' in script
    assert out.stat().st_mode & stat.S_IXUSR
    assert subprocess.run(["bash", "-n", str(out)]).returncode == 0


def test_each_node_starts_torchrun_with_its_slurm_node_rank(tmp_path):
    catalog, bin_dir, record = tmp_path / "catalog", tmp_path / "bin", tmp_path
    recipe = two_node_recipe(catalog, "two.yaml")
    script = openrecipes("launch", "--slurm", recipe.relative_to(catalog), cwd=catalog).stdout
    _stand_ins(bin_dir, record)
    done = _run_script(script, catalog, bin_dir)
    assert done.returncode == 0, done.stderr
    torchrun = (record / "torchrun.args").read_text().splitlines()
    assert torchrun[:8] == ["--rdzv_backend", "static", "--node_rank", "0", "--master_addr", "127.0.0.1",
                            "--master_port", str(20000 + 7)]
    assert torchrun[8:12] == ["--nnodes", "2", "--nproc_per_node", "2"]
    assert torchrun[torchrun.index("-m") + 1] == "openrecipes.launch.torchtitan.train"
    assert "--parallelism.data_parallel_shard_degree\n4" in "\n".join(torchrun)
    assert "--output=runs/two/train.node%n.log" in (record / "srun.args").read_text().splitlines()


def test_a_job_on_fewer_nodes_than_the_recipe_stops_before_srun(tmp_path):
    catalog, bin_dir, record = tmp_path / "catalog", tmp_path / "bin", tmp_path
    recipe = two_node_recipe(catalog, "two.yaml")
    script = openrecipes("launch", "--slurm", recipe.relative_to(catalog), cwd=catalog).stdout
    _stand_ins(bin_dir, record)
    done = _run_script(script, catalog, bin_dir, nnodes=1)
    assert done.returncode == 2
    said = (catalog / "runs/two/slurm-7.out").read_text()
    assert "the recipe needs 2 node(s) of 2 GPU(s), job 7 has 1 (or[0-1]); submit it with --nodes=2" in said
    assert not (record / "srun.args").exists()


def test_values_reach_the_nodes_as_text_never_as_commands(tmp_path):
    catalog, bin_dir, record = tmp_path / "catalog", tmp_path / "bin", tmp_path
    recipe = two_node_recipe(catalog, "two.yaml", env={"OPENRECIPES_NOTE": "$(touch${IFS}PWNED)`touch${IFS}PWNED`"})
    rendered = openrecipes("launch", "--slurm", recipe.relative_to(catalog), "--probe", "gloo",
                           "--container-image", "img$(touch PWNED)';touch PWNED", cwd=catalog)
    assert rendered.returncode == 0, rendered.stderr
    _stand_ins(bin_dir, record)
    done = _run_script(rendered.stdout, catalog, bin_dir)
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.rglob("PWNED"))
    assert (catalog / "runs/two").is_dir()
    torchrun = (record / "torchrun.args").read_text().splitlines()
    assert torchrun[-4:] == ["--backend", "gloo", "--out", "runs/two"]
    srun = (record / "srun.args").read_text().splitlines()
    assert "--output=runs/two/train.node%n.log" in srun
    assert "--container-image=img$(touch PWNED)';touch PWNED" in srun
    assert "\n#SBATCH --job-name=two\n" in rendered.stdout


# File names whose stem would put the run folder, the job's slurm-N.out or launch.sbatch outside runs/<name>/, or
# reach sbatch and the shell as something other than one word.
HOSTILE_NAMES = ["...yaml", "..yaml", "a..b.yaml", ".hidden.yaml", "-x.yaml", "--help.yaml", "new\nline.yaml",
                 "$(touch PWNED).yaml", "`touch PWNED`.yaml", "x'; touch PWNED; '.yaml", 'a"b;touch PWNED".yaml',
                 "sp ace.yaml", "100%.yaml", "a" * 101 + ".yaml", "\u202eevil.yaml", "tab\there.yaml"]


def _fake_sbatch(bin_dir: Path) -> None:
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text('#!/bin/bash\nprintf "%s\\n" "$@" > "$(dirname "$0")/sbatch.args"\n'
                                    'echo "4242;openrecipes"\n')
    (bin_dir / "sbatch").chmod(0o755)


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_recipe_file_name_that_is_not_a_plain_slug_is_refused_before_anything_is_written(tmp_path, name,
                                                                                            monkeypatch):
    bin_dir = tmp_path / "bin"
    _fake_sbatch(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    catalog = tmp_path / "catalog"
    recipe = two_node_recipe(catalog, name, nodes=1, per_node=2).relative_to(catalog)
    before = _tree(tmp_path)
    for args in (["launch", recipe, "--slurm"], ["launch", recipe, "--slurm", "--submit"],
                 ["launch", recipe, "--slurm", "--out", "job.sbatch"], ["run", recipe, "--steps", "1"]):
        result = openrecipes(*args, cwd=catalog)
        assert result.returncode == 2, (args, result.stdout)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "is not a plain name" in lines[0] and "rename the file" in lines[0], lines
        assert result.stdout == ""
    assert _tree(tmp_path) == before and not (catalog / "runs").exists()
    assert not (bin_dir / "sbatch.args").exists()


@pytest.mark.parametrize("node", ["link", "file"])
def test_a_run_folder_that_is_a_link_or_a_file_is_refused(tmp_path, node, monkeypatch):
    bin_dir = tmp_path / "bin"
    _fake_sbatch(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    catalog = tmp_path / "catalog"
    recipe = two_node_recipe(catalog, "two.yaml")
    (catalog / "runs").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if node == "link":
        (catalog / "runs/two").symlink_to(elsewhere)
    else:
        (catalog / "runs/two").write_text("notes\n")
    result = openrecipes("launch", recipe.relative_to(catalog), "--slurm", "--submit", cwd=catalog)
    assert result.returncode == 2 and "runs/two: not a folder" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not list(elsewhere.iterdir()) and not (bin_dir / "sbatch.args").exists()


@pytest.mark.parametrize(("args", "said"), [
    (["--time=-5"], "--time '-5': give a positive Slurm time limit"),
    (["--time", "0"], "--time '0': give a positive Slurm time limit"),
    (["--partition="], "--partition: the value is empty"),
    (["--account", "a b"], "--account 'a b': not a Slurm account name"),
    (["--qos", "x\ny"], "--qos 'x\\ny': not a Slurm qos name"),
    (["--container-image", " "], "--container-image: the value is empty"),
    (["--probe", "mpi"], "--probe 'mpi': name a backend, gloo"),
])
def test_an_option_slurm_would_refuse_is_bad_input_before_anything_is_written(tmp_path, args, said):
    result = openrecipes("launch", REPO / QWEN3_8B, "--slurm", "--submit", *args, cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    assert said in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_a_recipe_launch_cannot_start_is_bad_input(tmp_path):
    megatron = openrecipes("launch", GPTOSS_1, "--slurm", "--submit", cwd=tmp_path)
    assert megatron.returncode == 2 and "batch scripts for recipes that run here" in megatron.stderr
    catalog = tmp_path / "catalog"
    partial = two_node_recipe(catalog, "partial.yaml", nodes=1, per_node=2)
    data = yaml.safe_load(partial.read_text())
    data["gpu"]["count"] = 1
    partial.write_text(yaml.dump(data, Dumper=_LiteralDumper, sort_keys=False, width=1000))
    half = openrecipes("launch", partial.relative_to(catalog), "--slurm", "--submit", cwd=catalog)
    assert half.returncode == 2 and "gpu.count" in half.stderr and len(half.stderr.strip().splitlines()) == 1
    assert not (catalog / "runs").exists()


def test_submit_without_sbatch_says_so_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    catalog = tmp_path / "catalog"
    recipe = two_node_recipe(catalog, "two.yaml")
    result = openrecipes("launch", recipe.relative_to(catalog), "--slurm", "--submit", cwd=catalog)
    assert result.returncode == 2 and "sbatch is not on PATH" in result.stderr
    assert not (catalog / "runs").exists()


def test_submit_prints_the_job_id_sbatch_gave(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text('#!/bin/bash\nprintf "%s\\n" "$@" > "$(dirname "$0")/sbatch.args"\n'
                                    'echo "4242;openrecipes"\n')
    (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    catalog = tmp_path / "catalog"
    recipe = two_node_recipe(catalog, "two.yaml")
    result = openrecipes("launch", recipe.relative_to(catalog), "--slurm", "--submit", cwd=catalog)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "4242\n"
    assert (bin_dir / "sbatch.args").read_text().splitlines() == [
        "--parsable", "--output=runs/two/slurm-%j.out", "runs/two/launch.sbatch"]
    assert "#SBATCH --nodes=2" in (catalog / "runs/two/launch.sbatch").read_text()


def test_an_env_name_a_shell_cannot_export_is_bad_input(tmp_path):
    catalog = tmp_path / "catalog"
    recipe = two_node_recipe(catalog, "two.yaml", env={"A-B": "1"})
    result = openrecipes("launch", recipe.relative_to(catalog), "--slurm", cwd=catalog)
    assert result.returncode == 2 and "two.yaml: env.A-B: not a shell variable name" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""
