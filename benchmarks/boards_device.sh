#!/usr/bin/env bash
# One device call of `openrecipes tune` on an H200 machine of several GPUs, from the repo root, with .whl (the wheels
# of ../shared/tools/gpu-wheels.sh plus pydantic), the rows under .data and, where a board's stock recipe is new,
# .bases/recipes (copied into recipes/ first) carried. Each argument is one phase, run one after the other; a phase
# is one or more tunes separated by '+', run at once, each `MODEL:GPUS:LANES:DEVICES:BUDGET:BASE` (DEVICES the
# CUDA_VISIBLE_DEVICES of its lanes, GPUS per arm). A phase's tunes start no arm that would end after its
# --wall-minutes (the phase's share of SECONDS). Every arm runs 20 steps, scored over steps 5-19: the board's
# window, so the winner and the reference arm, measured in this call, are the board's two arms.
# Runs, tune records and winner recipes come back as $OUT/runs.tgz; each tune's output as $OUT/tune-MODEL.txt.
#   benchmarks/boards_device.sh SECONDS 'PHASE_SECONDS|MODEL:GPUS:LANES:DEVICES:BUDGET:BASE[+...]' ...
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site
out=${OUT:-/tmp/out}; mkdir -p "$out"
[ -d .bases/recipes ] && cp -rn .bases/recipes/. recipes/
until=$(( $(date +%s) + $1 )); shift
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > "$out/gpus.csv" 2>&1
tune() {  # MODEL:GPUS:LANES:DEVICES:BUDGET:BASE and the phase's end (epoch seconds)
  IFS=: read -r model gpus lanes devices budget base <<< "$1"
  local left=$(( $2 - $(date +%s) ))
  [ "$left" -gt 60 ] || { echo "no time left for $model" >> "$out/tune-$model.txt"; return; }
  CUDA_VISIBLE_DEVICES=$devices TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-$model timeout $(( left + 45 )) \
    python3 -m openrecipes tune "$model" --gpu H200 --gpus "$gpus" --lanes "$lanes" --budget-minutes "$budget" \
    --steps 20 --window-from 5 --wall-minutes "$(python3 -c "print(round($left / 60, 2))")" --base "$base" \
    >> "$out/tune-$model.txt" 2>&1
}
for phase in "$@"; do
  end=$(( $(date +%s) + ${phase%%|*} )); [ $end -gt $until ] && end=$until
  IFS=+ read -ra tunes <<< "${phase#*|}"
  for t in "${tunes[@]}"; do
    case $t in
      smoke:*) eval "${t#smoke:}" > "$out/smoke.txt" 2>&1 & ;;
      *) tune "$t" $end & ;;
    esac
  done
  wait
done
tar czf "$out/runs.tgz" $(find runs recipes -newer "$out/gpus.csv" \( -name "tune-*" -o -name "tuned-*" \) -prune) 2>/dev/null
ls -la "$out"; tail -n 4 "$out"/*.txt
