#!/usr/bin/env bash
# The main job: set up (scripts/bootstrap.sh), then train a small ja->en model on the sample data shipped in the
# package (10k pairs of small_parallel_enja), print BLEU on 100 held-out lines and a few translations, and
# write a Hub-ready model folder to runs/demo_ja_en/model. CPU only, about 10 minutes on 2 cores.
# Extra arguments go to the training script, e.g. `bash scripts/demo.sh --set training.max_steps=200`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/bootstrap.sh"
cd "$root"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
exec "$root/.venv/bin/python" training/train_translation.py --config training/configs/demo_ja_en.yaml \
  --set overwrite_output_dir=true "$@"
