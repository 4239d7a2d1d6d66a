#!/usr/bin/env bash
# The GPU check of issue 41, one command on a CUDA machine (3 to 4 minutes on one H200, no network):
#   bash scripts/gpu_check.sh OUT_DIR [DATA_DIR] [benchmarks/gpu_check.py run options: --profile, --compile, --rows ...]
# 1. the tests marked `gpu` (tests/test_gpu.py; they skip on CPU, so CI never runs them) and the dtype tests that
#    share their builders (tests/test_dtypes.py);
# 2. benchmarks/gpu_check.py run: every model type trained 200 steps by the translation recipe in float32 and bf16,
#    CPU/GPU greedy agreement, training and beam-4 speed against MarianMTModel; writes OUT_DIR/gpu_check.{json,md}.
#
# What a GPU machine usually lacks, and how this script brings it:
# - Packages: a CUDA PyTorch image has torch and transformers but rarely `datasets`, `evaluate`, `dill`,
#   `multiprocess`, and its transformers may be older than ours. Put wheels in .whl/ beforehand (on a machine with
#   pip: see the `pip download` line in benchmarks/results/gpu_check.README.md); they are installed into a private folder
#   here, without network and without touching the image's own packages.
# - Parsers and parsed data: spaCy/GiNZA are not needed there. DATA_DIR (default .gpu_data) is made beforehand on a
#   machine with the parsers by `python benchmarks/gpu_check.py prepare --data .gpu_data` and copied along.
set -uo pipefail
out=${1:?usage: bash scripts/gpu_check.sh OUT_DIR [DATA_DIR]}
data=${2:-.gpu_data}
cd "$(dirname "$0")/.."
mkdir -p "$out"
source scripts/gpu_env.sh
if [ ! -f "$data/dataset_dict.json" ]; then
    echo "no prepared data in $data: run 'python benchmarks/gpu_check.py prepare --data $data' where the parsers are" >&2
    exit 1
fi
"$python" -m pytest -q -p no:cacheprovider tests/test_gpu.py tests/test_dtypes.py 2>&1 | tee "$out/gpu_tests.log"
tests=$(grep -E "^(=+ )?[0-9]+ (passed|failed|skipped|error)" "$out/gpu_tests.log" | tail -n 1 | tr -d '=')
"$python" benchmarks/gpu_check.py run --data "$data" --out "$out" --tests "${tests:-no summary line}" "${@:3}"
