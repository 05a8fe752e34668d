#!/usr/bin/env bash
# Downloads into .whl/ (ignored by git) the wheels that let torchtitan 0.2.2 run on a GPU machine that has Python
# 3.12 and a CUDA build of torch already installed but no network: copy the checkout, .whl/ included, there.
# torchtitan 0.3.0 does not run on torch 2.11 (missing FSDP and flex-attention APIs); 0.2.2 does.
#
#   scripts/gpu-wheels.sh [EXTRA==VERSION ...]     # e.g. pydantic==2.12.5 pydantic-core==2.41.5
#
# On the GPU machine, from the repository root:
#   python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
#   export PYTHONPATH=$PWD/src:/tmp/site
# The fsspec wheel here replaces a newer one that datasets 4.7 refuses. `openrecipes run` needs pydantic (it reads
# the recipe); where the machine has none, name pydantic, pydantic-core, annotated-types and typing-inspection, or
# run the recipe's `run:` text itself (our entry module imports neither pydantic nor the catalog).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
pkgs=(torchtitan==0.2.2 torchdata==0.11.0 datasets==4.7.0 dill==0.4.0 multiprocess==0.70.18 fsspec==2026.2.0
      tyro==1.0.17 docstring_parser==0.18.0 typeguard==4.6.1 "$@")
for p in "${pkgs[@]}"; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "$p"
done
du -sh .whl
ls .whl
