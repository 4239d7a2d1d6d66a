#!/usr/bin/env bash
# Runs of a study on a CUDA machine, one command with a deadline (issues 36 and 41):
#   bash scripts/gpu_study.sh OUT_DIR SECONDS STUDY [hf-syntax study options: --runs, --seeds, --jobs, --threads]
# (runs lacking different seeds go in one queue as --runs RUN:SEED,SEED ...; six 8-epoch enja runs side by side
# took 5-8 minutes each on one H200, 2026-11-28)
# needs .gpu_study/ (python benchmarks/gpu_study.py prepare STUDY --blind SRC ..., where the parsers are) and, for what the image lacks,
# .whl/ (scripts/gpu_env.sh). The driver trains for at most SECONDS, translating the blind source of every finished
# run from the trees made beforehand; OUT_DIR/runs.tgz then holds the finished run folders without weights (and
# the logs of runs still training), for 'python benchmarks/gpu_study.py unpack STUDY OUT_DIR/runs.tgz' here.
set -uo pipefail
out=${1:?usage: bash scripts/gpu_study.sh OUT_DIR SECONDS STUDY [hf-syntax study options]}
seconds=${2:?usage: bash scripts/gpu_study.sh OUT_DIR SECONDS STUDY [hf-syntax study options]}
study=${3:?usage: bash scripts/gpu_study.sh OUT_DIR SECONDS STUDY [hf-syntax study options]}
shift 3
cd "$(dirname "$0")/.."
mkdir -p "$out"
source scripts/gpu_env.sh
if [ ! -f .gpu_study/compare_args ]; then
    echo "no .gpu_study/: run 'python benchmarks/gpu_study.py prepare $study ...' where the parsers are" >&2
    exit 1
fi
[ -e ../shared ] || ln -s "$PWD/.gpu_study/shared" ../shared  # the study's paths name ../shared, as here
tar -xzf .gpu_study/prepared.tar.gz
read -ra prepared_args < .gpu_study/compare_args  # --blind, --blind-trees, --source-trees, --extra-test
timeout "$seconds" "$python" -m hf_syntax.cli study "$study" "${prepared_args[@]}" "$@" 2>&1 | tee "$out/driver.log"
nvidia-smi --query-gpu=name,utilization.gpu,memory.used --format=csv > "$out/gpu_at_deadline.csv" 2>&1
"$python" benchmarks/gpu_study.py pack "$study" "$out/runs.tgz"
