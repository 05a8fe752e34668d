#!/usr/bin/env bash
# One device call: a catalog recipe through `openrecipes launch --slurm --submit` under a real Slurm on one H200
# machine (no network), then `openrecipes reproduce` on the node log it gathered. From the repo root, with carried:
#   .whl          the wheels of ../shared/tools/gpu-wheels.sh plus pydantic (pydantic, pydantic-core, annotated-types,
#                 typing-inspection), as for the other *_device.sh calls
#   .slurm-debs   scripts/slurm-debs.sh (Debian's munge and Slurm, 12 .deb files, ~3.7 MB)
#   .data/qwen3-rows  the recipe's rows (`openrecipes rows demo --out .data/qwen3-rows --chat-format qwen3 --rows 320
#                 --seed 42`; built here when not carried)
#   benchmarks/slurm_device.sh [RECIPE] [SECONDS]
# RECIPE defaults to recipes/qwen3-0.6b/h200/tuned-tp1-pp1-cp1-dp1-none-mb4-compile.yaml (one node, one GPU), SECONDS
# (default 480) bounds the wait for each job. First `--probe nccl` (rendezvous and all-reduce on the recipe's ranks,
# no model), then the recipe. Back in $OUT: probe/ and run/ (each job's launch.sbatch, slurm-JOB.out,
# train.node0.log; probe.json), probe-job.txt and job.txt (scontrol's record of each job), reproduce.json and
# reproduce.txt, slurm/ (the daemons' logs and config), gpus.csv, packed into one archive, slurm-device.tgz.
set -u
export PYTHONUNBUFFERED=1
recipe=${1:-recipes/qwen3-0.6b/h200/tuned-tp1-pp1-cp1-dp1-none-mb4-compile.yaml}
wait_s=${2:-480}
name=$(basename "$recipe" .yaml)
out=${OUT:-/tmp/out}; mkdir -p "$out"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > "$out/gpus.csv" 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
export PYTHONPATH=$PWD/src:/tmp/site
if [ ! -f .data/qwen3-rows/rows.parquet ]; then
  python3 -m openrecipes rows demo --out .data/qwen3-rows --chat-format qwen3 --rows 320 --seed 42 \
    > "$out/rows.txt" 2>&1 || { tail -n 5 "$out/rows.txt"; exit 1; }
fi

# Slurm from the .deb files, unpacked (no dpkg -i: Ubuntu's library package names differ from Debian's).
export SLURM_ROOT=/tmp/slurm-root SLURM_LOCAL_NODES=1
rm -rf "$SLURM_ROOT"
for deb in .slurm-debs/*.deb; do dpkg -x "$deb" "$SLURM_ROOT" || exit 1; done
state=${SLURM_LOCAL_DIR:-/tmp/openrecipes-slurm-$(id -u)}
collect() {  # the daemons' logs and config, the run folder
  mkdir -p "$out/slurm" "$out/run"
  cp "$state"/*.conf "$state"/*.log "$state"/munge/*.log "$out/slurm/" 2>/dev/null
  cp -r "runs/$name/." "$out/run/" 2>/dev/null
}
if ! env_lines=$(scripts/slurm-local.sh up 2> "$out/slurm-up.txt"); then
  collect; cat "$out/slurm-up.txt"; scripts/slurm-local.sh down; exit 1
fi
eval "$env_lines"
sinfo -N -o "%N %T %G %c" > "$out/sinfo.txt" 2>&1

wait_job() {  # JOB NAME: wait (at most wait_s), keep scontrol's record as NAME.txt, say how it ended
  local start=$(date +%s)
  while squeue -h -j "$1" 2>/dev/null | grep -q .; do
    [ $(( $(date +%s) - start )) -lt "$wait_s" ] || { echo "job $1 still running after $wait_s s: cancelled"; \
      scancel "$1"; sleep 10; break; }
    sleep 3
  done
  scontrol -o show job "$1" > "$out/$2.txt" 2>&1
  echo "$2 job $1: $(grep -o 'JobState=[^ ]*' "$out/$2.txt") $(grep -o 'ExitCode=[^ ]*' "$out/$2.txt")" \
    "after $(( $(date +%s) - start )) s"
}
refused() { cat "$out/submit.txt"; collect; scripts/slurm-local.sh down; exit 1; }

# First the probe (NCCL all-reduce over the recipe's ranks, no model), then the recipe itself.
job=$(python3 -m openrecipes launch --slurm "$recipe" --submit --probe nccl 2>> "$out/submit.txt") || refused
wait_job "$job" probe-job
mkdir -p "$out/probe"; cp -r "runs/$name/." "$out/probe/" 2>/dev/null; rm -rf "runs/$name"
job=$(python3 -m openrecipes launch --slurm "$recipe" --submit 2>> "$out/submit.txt") || refused
wait_job "$job" job
python3 -m openrecipes reproduce "$recipe" "runs/$name/train.node0.log" --json > "$out/reproduce.json" \
  2> "$out/reproduce.txt"
echo "reproduce: exit $?"
collect
scripts/slurm-local.sh down
head -c 1500 "$out/reproduce.json"; tail -n 3 "$out/reproduce.txt"
grep -aE "step: *(1|5|19|20) |Error|error:|OutOfMemory" "$out/run/train.node0.log" | tail -n 6
# The device tool returns at most 8 files: everything comes back as one archive.
tar czf /tmp/slurm-device.tgz -C "$out" . && find "$out" -mindepth 1 -delete && mv /tmp/slurm-device.tgz "$out/"
