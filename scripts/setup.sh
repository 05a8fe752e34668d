#!/usr/bin/env bash
# Sets up .venv for OpenRecipes. `scripts/setup.sh` installs the package; `scripts/setup.sh test` adds what the
# tests need: the CPU build of torch (never the multi-GB CUDA default), pytest/hypothesis/Playwright, Debian's
# Chromium for the browser tests and Debian's Slurm and munge for the Slurm tests.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip==25.3 >/dev/null
if [ "${1:-}" = "test" ]; then
  # torch first and pinned, so nothing later can pull a CUDA build.
  .venv/bin/python -m pip install -q torch==2.13.0
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
