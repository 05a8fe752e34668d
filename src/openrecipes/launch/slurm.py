"""`openrecipes launch RECIPE --slurm`: an sbatch script with one torchrun per node.

The node count comes from the recipe (gpu.count / gpu.per_node) and must be the job's SLURM_NNODES (a job given
other nodes stops before anything starts). Each node's torchrun takes its node rank from Slurm (SLURM_NODEID), and
all of them meet at a TCP store on the first host of SLURM_JOB_NODELIST (torchrun's static rendezvous: c10d's
dynamic one orders nodes by host name and process id and ignores --node_rank, so its node ranks would not be
Slurm's). Global rank = node rank * GPUs per node + local rank, so rank 0 runs on node 0 and train.node0.log, the
log `openrecipes measure` reads, holds its lines. Each node's output goes to runs/<name>/train.node<N>.log. One
rank that exits nonzero ends the job, nonzero (--kill-on-bad-exit).

Everything the script embeds from outside (paths, names, values) is shell-quoted in its body; #SBATCH lines, which
sbatch parses with its own rules, take only plain words (the job name is the recipe file's name, a plain slug by
openrecipes.launch.run_folder; an option value that is not one is refused).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from openrecipes.catalog.model import Recipe
from openrecipes.engines.runner import Launch, NodeCommand
from openrecipes.engines.torchrun import torchrun_words
from openrecipes.errors import UserError

RENDEZVOUS_PORT_BASE = 20000  # + SLURM_JOB_ID % 10000: jobs on one host (ids under 10000 apart) differ in port
# What an #SBATCH value may hold: sbatch splits its lines at whitespace and strips quotes itself.
_PLAIN = re.compile(r"[A-Za-z0-9._+,=:@/-]+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Slurm's --time forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S.
_TIME = re.compile(r"\d+(:\d{1,2}){0,2}|\d+-\d+(:\d{1,2}){0,2}")


@dataclass(frozen=True)
class SlurmOptions:
    """sbatch's options a cluster asks for; None leaves Slurm's default."""

    partition: str | None = None
    account: str | None = None
    time: str | None = None
    qos: str | None = None
    reservation: str | None = None
    container_image: str | None = None  # pyxis/enroot: every node's torchrun runs in this image

    def directives(self) -> list[str]:
        """The #SBATCH lines, each value checked (exit 2 naming the option, before anything is submitted)."""
        lines = []
        for option in ("partition", "account", "qos", "reservation"):
            value = getattr(self, option)
            if value is None:
                continue
            if not _PLAIN.fullmatch(value):
                raise UserError(f"--{option} {value!r}: not a Slurm {option} name (letters, digits and ._+,=:@/- "
                                "only, not empty)")
            lines.append(f"#SBATCH --{option}={value}")
        if self.time is not None:
            if not _TIME.fullmatch(self.time) or not any(ch in "123456789" for ch in self.time):
                raise UserError(f"--time {self.time!r}: give a positive Slurm time limit: minutes, H:M:S or "
                                "D-H:M:S (e.g. 30, 2:00:00, 1-12:00:00)")
            lines.append(f"#SBATCH --time={self.time}")
        if self.container_image is not None and not self.container_image.strip():
            raise UserError("--container-image is empty: name an image (e.g. nvcr.io#nvidia/pytorch:25.01-py3)")
        return lines


def _arg_lines(args: Sequence[str]) -> list[str]:
    """`--flag value...` groups, one a line."""
    lines: list[list[str]] = []
    for word in args:
        if word.startswith("--") or not lines:
            lines.append([])
        lines[-1].append(word)
    return [shlex.join(line) for line in lines]


def sbatch_script(command: NodeCommand, *, name: str, run_dir: str, options: SlurmOptions = SlurmOptions()) -> str:
    """The batch script; `name` is a plain slug (openrecipes.launch.run_folder.run_name), the job's name."""
    if command.nnodes < 1 or command.nproc_per_node < 1:
        raise UserError(f"{command.nnodes} node(s) x {command.nproc_per_node} GPU(s): gpu.count must be a whole "
                        "number (at least 1) of gpu.per_node")
    directives = [f"#SBATCH --job-name={name}", f"#SBATCH --nodes={command.nnodes}",
                  "#SBATCH --ntasks-per-node=1", "#SBATCH --exclusive", *options.directives()]
    if command.gpus:
        directives.insert(3, f"#SBATCH --gpus-per-node={command.nproc_per_node}")
    words = torchrun_words(command.nnodes, command.nproc_per_node, command.torchrun_options)
    # Run by bash on each node: the node rank is that task's own SLURM_NODEID; the store's host and port come in
    # as $1 and $2, so nothing of the batch script's is spliced into this text.
    lines = ['exec torchrun --rdzv_backend static --node_rank "$SLURM_NODEID" --master_addr "$1" --master_port "$2"',
             shlex.join(words), f"-m {shlex.quote(command.module)}", *_arg_lines(command.args)]
    node_shell = " \\\n    ".join(lines)
    container = ""
    if options.container_image is not None:
        container = (f"--container-image={shlex.quote(options.container_image)} "
                     '--container-mounts="$SLURM_SUBMIT_DIR:$SLURM_SUBMIT_DIR" '
                     '--container-workdir="$SLURM_SUBMIT_DIR" \\\n  ')
    exports = "".join(f"export {key}={shlex.quote(value)}\n" for key, value in command.env.items())
    return f"""#!/bin/bash
{chr(10).join(directives)}
set -euo pipefail
run_dir={shlex.quote(run_dir)}
mkdir -p "$run_dir"
exec >>"$run_dir/slurm-$SLURM_JOB_ID.out" 2>&1
if [ "$SLURM_NNODES" != {command.nnodes} ]; then
  echo "openrecipes launch: the recipe needs {command.nnodes} node(s) of {command.nproc_per_node} GPU(s)," \
    "job $SLURM_JOB_ID has $SLURM_NNODES ($SLURM_JOB_NODELIST); submit it with --nodes={command.nnodes}" >&2
  exit 2
fi
{exports}head_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
head_addr=$(scontrol -o show node "$head_node" | tr ' ' '\\n' | sed -n 's/^NodeAddr=//p')
port=$(( {RENDEZVOUS_PORT_BASE} + SLURM_JOB_ID % 10000 ))
srun --nodes={command.nnodes} --ntasks-per-node=1 --kill-on-bad-exit=1 --output="$run_dir/train.node%n.log" \\
  {container}bash -c {shlex.quote(node_shell)} \\
  bash "${{head_addr:-$head_node}}" "$port"
"""


PROBE_MODULE = "openrecipes.launch.probe"
PROBE_BACKENDS = ("gloo", "nccl")
# The probe keeps every rank's lines (prefixed [rankN]:), so a node's log shows each of its ranks.
PROBE_TORCHRUN_OPTIONS = {"--role": ["rank"], "--tee": ["3"]}


def recipe_command(recipe: Recipe, launch: Launch, *, run_dir: str, probe: str | None = None) -> NodeCommand:
    """What each node of `recipe`'s job runs: its training launch (as its engine's runner gives it), or the probe
    (`probe` its backend) with the same node and process counts and env."""
    count, per_node = recipe.gpu.count, recipe.gpu.per_node
    if count < per_node or count % per_node:
        raise UserError(f"gpu.count {count} is not a whole number of {per_node}-GPU nodes (gpu.per_node); make "
                        "gpu.count a multiple of gpu.per_node")
    for key in launch.env:
        if not _NAME.fullmatch(key):
            raise UserError(f"env.{key}: not a shell variable name (letters, digits and _, not starting with a digit)")
    if probe is None:
        return launch.node_command()
    if probe not in PROBE_BACKENDS:
        raise UserError(f"--probe {probe!r}: name a backend, gloo (CPU, no GPUs asked for) or nccl (the GPUs)")
    return NodeCommand(launch.nnodes, launch.nproc_per_node, launch.env, PROBE_TORCHRUN_OPTIONS, PROBE_MODULE,
                       ["--backend", probe, "--out", run_dir], gpus=probe == "nccl")


def find_sbatch() -> str:
    """sbatch's path, looked up before anything is written."""
    sbatch = shutil.which("sbatch")
    if sbatch is None:
        raise UserError("sbatch is not on PATH: submit from a Slurm login node, or start a local Slurm with "
                        "scripts/slurm-local.sh up and source the lines it prints; without --submit the script "
                        "is only written")
    return sbatch


def submit(sbatch: str, script: Path, run_dir: Path) -> str:
    """`sbatch` the written script from this folder; the job id. The batch's first output (before the script sends
    its own to runs/) goes to the run folder too, unless the path holds % (sbatch's pattern character)."""
    output = [] if "%" in str(run_dir) else [f"--output={run_dir}/slurm-%j.out"]
    done = subprocess.run([sbatch, "--parsable", *output, str(script)], capture_output=True, text=True)
    if done.returncode:
        reason = " ".join(done.stderr.split()) or f"exit {done.returncode}"
        raise UserError(f"{script}: sbatch refused the job: {reason}")
    return done.stdout.strip().split(";")[0]
