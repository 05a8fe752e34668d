"""`openrecipes launch RECIPE --slurm`: an sbatch script with one torchrun per node, joined by c10d rendezvous.

The node count comes from the recipe (gpu.count / gpu.per_node); the first node of the allocation hosts the
rendezvous. Each node's output goes to runs/<name>/train.node<N>.log; the rank filter keeps rank 0's lines only,
so train.node0.log is the log `openrecipes measure` reads.
"""

from __future__ import annotations

import shlex

from openrecipes.engines.torchtitan.render import TorchtitanLaunch

RENDEZVOUS_PORT = 29500


def sbatch_script(launch: TorchtitanLaunch, *, job_name: str, run_dir: str) -> str:
    rendezvous = {"--rdzv_backend": ["c10d"], "--rdzv_endpoint": [f"HEAD_NODE:{RENDEZVOUS_PORT}"],
                  "--rdzv_id": ["JOB_ID"]}
    command = shlex.join(launch.argv(rendezvous))
    command = command.replace("HEAD_NODE", "$head_node").replace("JOB_ID", "$SLURM_JOB_ID")
    exports = "".join(f"export {name}={shlex.quote(value)}\n" for name, value in launch.env.items())
    return f"""#!/bin/bash
#SBATCH --job-name={job_name}
#SBATCH --nodes={launch.nnodes}
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node={launch.nproc_per_node}
#SBATCH --exclusive
#SBATCH --output={run_dir}/slurm-%j.out
set -euo pipefail
{exports}mkdir -p {run_dir}
head_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
srun --ntasks-per-node=1 --kill-on-bad-exit=1 --output={run_dir}/train.node%n.log \\
  {command}
"""
