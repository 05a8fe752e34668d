"""`torchrun ... -m openrecipes.launch.probe`: a launch's rendezvous and collectives without the model.

`openrecipes launch --slurm RECIPE --probe gloo|nccl` starts this module in place of the training entry, with the
recipe's node and process counts, its env and the same sbatch script, to check an allocation before it spends GPU
hours: every rank prints who it is (its torchrun and Slurm variables), then each round all-reduces rank+1 over the
whole group (nccl on the rank's GPU, or gloo on CPU) and prints the sum and the sum a complete group gives,
W(W+1)/2. Rank 0 then writes probe.json in --out, in one rename, only when every round summed right; a job that is
cancelled or fails leaves none. OPENRECIPES_PROBE_FAIL_RANK=N makes rank N exit 1 after the first round (to see
that one failed rank ends the job); OPENRECIPES_PROBE_HOLD=S waits S seconds between rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path

# Slurm's view of the task each rank runs in; torchrun's node rank must equal SLURM_NODEID.
SLURM_VARIABLES = ("SLURM_JOB_ID", "SLURM_NNODES", "SLURM_NODEID", "SLURM_JOB_NODELIST", "SLURMD_NODENAME")
RESULT_FILE = "probe.json"


def _say(text: str) -> None:
    print(f"openrecipes probe: {text}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m openrecipes.launch.probe")
    parser.add_argument("--backend", choices=("gloo", "nccl"), required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True, help="folder for probe.json (rank 0)")
    args = parser.parse_args(argv)

    import torch
    import torch.distributed as dist

    from openrecipes.atomic import write_atomic

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank, node_rank = int(os.environ["LOCAL_RANK"]), int(os.environ["GROUP_RANK"])
    me = {"rank": rank, "world_size": world, "local_rank": local_rank, "node_rank": node_rank,
          "host": socket.gethostname(), **{name.lower(): os.environ.get(name) for name in SLURM_VARIABLES}}
    _say(" ".join(f"{key}={value}" for key, value in me.items()))
    device = torch.device("cpu")
    if args.backend == "nccl":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    dist.init_process_group(args.backend)
    expected = world * (world + 1) // 2
    sums = []
    fail_rank = os.environ.get("OPENRECIPES_PROBE_FAIL_RANK")
    hold = float(os.environ.get("OPENRECIPES_PROBE_HOLD", "0"))
    for round_ in range(args.rounds):
        value = torch.tensor([rank + 1], dtype=torch.int64, device=device)
        dist.all_reduce(value)
        sums.append(int(value.item()))
        _say(f"rank={rank} round={round_} allreduce={sums[-1]} expected={expected}")
        if fail_rank is not None and rank == int(fail_rank):
            _say(f"rank={rank} exits 1 (OPENRECIPES_PROBE_FAIL_RANK)")
            return 1
        time.sleep(hold)
    everyone: list[dict | None] = [None] * world
    dist.all_gather_object(everyone, me)
    dist.destroy_process_group()
    ok = all(s == expected for s in sums)
    if rank == 0 and ok:
        args.out.mkdir(parents=True, exist_ok=True)
        result = {"world_size": world, "backend": args.backend, "expected": expected, "sums": sums, "ranks": everyone}
        write_atomic(args.out / RESULT_FILE, json.dumps(result, indent=2) + "\n")
        _say(f"wrote {args.out / RESULT_FILE}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
