#!/usr/bin/env bash
# One device call of benchmarks/tune_vs_sweep.py on a 2 x H200 machine, from the repo root, with .whl (the wheels of
# ../shared/tools/gpu-wheels.sh plus pydantic and typer) and .data/qwen3-rows carried. Two lanes, one per GPU, take
# the sweep's arms in turn; with `tune`, GPU 0 first runs `openrecipes tune` (its own compile cache, so the sweep's
# compilations do not speed it up), then joins the sweep. No arm starts within ~1.5 estimated runs of SECONDS; the
# arms and tune's record come back as $OUT/runs.tgz.
#   benchmarks/tune_vs_sweep_device.sh SECONDS [tune]
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site
out=${OUT:-/tmp/out}; mkdir -p "$out"
sweep=runs/sweep-qwen3-1.7b-h200x1
until=$(( $(date +%s) + $1 ))
python3 benchmarks/tune_vs_sweep.py clean $sweep 2>/dev/null
lane() {  # a sweep lane on GPU $1; an arm running at --until gets 30 s more, then the lane is stopped
  CUDA_VISIBLE_DEVICES=$1 TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-sweep-$1 timeout $(( until + 30 - $(date +%s) )) \
    python3 benchmarks/tune_vs_sweep.py sweep qwen3-1.7b --gpu H200 --gpus 1 --out $sweep --until $until \
    >> "$out/sweep-lane$1.txt" 2>&1
}
if [ "${2:-}" = tune ]; then
  (CUDA_VISIBLE_DEVICES=0 TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-tune timeout $(( until - $(date +%s) )) \
     python3 -m openrecipes tune qwen3-1.7b --gpu H200 --gpus 1 --budget-minutes 7 > "$out/tune.txt" 2>&1
   lane 0) &
else
  lane 0 &
fi
lane 1 &
wait
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpus.csv" 2>&1
tar czf "$out/runs.tgz" runs/tune-* $sweep recipes/qwen3-1.7b/h200/tuned-* 2>/dev/null
ls -la "$out"; tail -3 "$out"/*.txt
