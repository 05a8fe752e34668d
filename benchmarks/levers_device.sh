#!/usr/bin/env bash
# One device call measuring kernel and precision levers: arms derived from a recipe's own `run:` command, a lane per
# GPU set, each lane's arms one after the other (one inductor cache for the call), raw logs under runs/levers-DATE/.
# From the repo root with .whl (../shared/tools/gpu-wheels.sh plus pydantic, liger-kernel, torchao) and .data carried:
#   benchmarks/levers_device.sh SECONDS 'LANE' ...
# LANE is `DEVICES=ARM;ARM;...`, ARM is `NAME@RECIPE@CHANGES`, CHANGES space-separated `--flag value` (replaces the
# flag's value in the recipe's command, or appends it), `--flag` (appends a switch) or `-flag` (removes the flag).
# No arm starts after SECONDS; each stops at the call's end. Runs (RUNS_FOLDER, default runs/levers-DATE) come back
# as $OUT/runs.tgz.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-levers
out=${OUT:-/tmp/out}; mkdir -p "$out"
until=$(( $(date +%s) + $1 )); shift
folder=${RUNS_FOLDER:-runs/levers-$(date -u +%Y%m%d)}
mkdir -p "$folder"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > "$folder/gpus.csv" 2>&1
command_for() {  # RECIPE CHANGES -> the recipe's run script with the changes applied
  python3 - "$1" "$2" <<'EOF'
import shlex, sys, yaml
run = yaml.safe_load(open(sys.argv[1]))["run"].replace("\\\n", " ")
lines = run.strip().splitlines()
words = shlex.split(lines[-1])
changes = shlex.split(sys.argv[2])
i = 0
while i < len(changes):
    flag = changes[i]
    value = changes[i + 1] if i + 1 < len(changes) and not changes[i + 1].startswith("-") else None
    i += 2 if value is not None else 1
    if flag.startswith("--") and flag in words:
        at = words.index(flag)
        if value is not None:
            words[at + 1] = value
    elif flag.startswith("--"):
        words += [flag] + ([value] if value is not None else [])
    else:
        at = words.index("-" + flag)
        del words[at : at + (2 if at + 1 < len(words) and not words[at + 1].startswith("--") else 1)]
print("\n".join(lines[:-1] + [shlex.join(words)]))
EOF
}
lane() {  # DEVICES=ARM;ARM... PORT
  local devices=${1%%=*} port=$2 arm name recipe changes
  IFS=';' read -ra arms <<< "${1#*=}"
  for arm in "${arms[@]}"; do
    IFS=@ read -r name recipe changes <<< "$arm"
    local left=$(( until - $(date +%s) ))
    [ "$left" -gt 45 ] || { echo "$name: not started, no time left" >> "$out/lanes.txt"; continue; }
    mkdir -p "$folder/$name"
    command_for "$recipe" "$changes" > "$folder/$name/command.sh"
    local start=$(date +%s)
    CUDA_VISIBLE_DEVICES=$devices PET_MASTER_PORT=$port timeout "$left" bash "$folder/$name/command.sh" \
      > "$folder/$name/train.log" 2>&1
    echo "$name: exit $? after $(( $(date +%s) - start )) s on GPU(s) $devices" >> "$out/lanes.txt"
  done
}
port=29500
for spec in "$@"; do lane "$spec" $port & port=$(( port + 100 )); done
wait
tar czf "$out/runs.tgz" "$folder"
cat "$out/lanes.txt"
for log in "$folder"/*/train.log; do
  echo "== $log"; grep -aE "step: *(1|5|19|20) |Error|error:|OutOfMemory|openrecipes" "$log" | tail -n 6
done
