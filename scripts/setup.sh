#!/usr/bin/env bash
# Sets up .venv for OpenRecipes. `scripts/setup.sh` installs the package; `scripts/setup.sh test` adds what the
# tests need: the CPU build of torch (from PyTorch's CPU wheel index where the package index offers the multi-GB
# CUDA build; said on stderr when neither gives a CPU build), pytest/hypothesis/Playwright, Debian's Chromium for the
# browser tests and Debian's Slurm and munge for the Slurm tests.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip==25.3 >/dev/null

torch=torch==2.13.0
cpu_index=https://download.pytorch.org/whl/cpu
# What `pip install torch==2.13.0` would install here, from pip's dry run (package metadata only, no wheel is
# downloaded): "cpu" for a CPU build (a +cpu wheel, or one that pulls no NVIDIA wheel), else the build in words.
torch_resolves_to() {
  .venv/bin/python -m pip install -q --dry-run --ignore-installed --report - "$torch" 2>/dev/null |
    .venv/bin/python -c 'import json, sys
found = [(i["metadata"]["name"].lower(), i["metadata"]["version"]) for i in json.load(sys.stdin)["install"]]
torch = next(version for name, version in found if name == "torch")
nvidia = [name for name, _ in found if name.startswith("nvidia-")]
listed = ", ".join(nvidia)
print("cpu" if torch.endswith("+cpu") or not nvidia else
      f"torch {torch}, the CUDA build, with {len(nvidia)} NVIDIA wheels ({listed}): several GB")' ||
    echo "torch 2.13.0 as the package index resolves it (pip could not say which build)"
}
# torch first and pinned, so nothing later can pull a CUDA build: the build the indexes give here when it is the
# CPU one, else PyTorch's CPU wheel index; where neither answers, what the indexes give, said before installing it.
install_cpu_torch() {
  local build
  build=$(torch_resolves_to)
  if [ "$build" = cpu ]; then
    .venv/bin/python -m pip install -q "$torch"
  elif .venv/bin/python -m pip install -q --timeout 30 --retries 1 --index-url "$cpu_index" "$torch"; then
    :
  else
    echo "setup.sh: neither the package index nor PyTorch's CPU wheel index ($cpu_index) gives a CPU build of" \
      "$torch here; installing $build" >&2
    .venv/bin/python -m pip install -q "$torch"
  fi
}

if [ "${1:-}" = "test" ]; then
  install_cpu_torch
  .venv/bin/python -m pip install -q -e '.[test]'
  # Debian's packages: Chromium for the browser tests; Slurm and munge for scripts/slurm-local.sh's local cluster.
  slurm=yes
  for tool in /usr/sbin/slurmctld /usr/sbin/slurmd /usr/bin/sbatch /usr/sbin/munged; do [ -x $tool ] || slurm=no; done
  if ! command -v chromium >/dev/null 2>&1 || [ $slurm = no ]; then
    if [ "$(id -u)" = 0 ]; then apt_get="apt-get"; else apt_get="sudo apt-get"; fi
    $apt_get update -qq >/dev/null
    command -v chromium >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive $apt_get install -y -qq chromium >/dev/null
    [ $slurm = yes ] || DEBIAN_FRONTEND=noninteractive $apt_get install -y -qq --no-install-recommends \
      slurmctld slurmd slurm-client munge >/dev/null
  fi
else
  .venv/bin/python -m pip install -q -e .
fi
