#!/usr/bin/env bash
# The main job: set up (scripts/bootstrap.sh), then train a syntax-aware ja->en Transformer (Transformer_dep+rel:
# relative positions plus relative depths in GiNZA's parse of the source) on the sample data shipped in the package
# (10k pairs of small_parallel_enja), print BLEU on 100 held-out lines (lines 101-200 of the dev split; the recorded
# run's score and log: benchmarks/results/demo_ja_en), export a Hub-ready folder with a Space demo, print a few
# translations with the source tree the model was given, and end with the command that starts the demo. CPU only,
# about 6.5 minutes on an idle 2-core machine once installed; the first run's install adds about 3 minutes.
# The card names a placeholder model id: export again with --model-id NAME/REPO before uploading.
# Extra arguments go to the training script, e.g. `bash scripts/demo.sh --set training.max_steps=200`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/bootstrap.sh"
cd "$root"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
python="$root/.venv/bin/python"
run=runs/demo_ja_en
"$python" training/train_translation.py --config training/configs/demo_ja_en.yaml --set overwrite_output_dir=true "$@"
"$python" -m hf_syntax.cli export "$run/model" "$run/exported" --source-lang ja \
  --target-lang en --dataset small_parallel_enja --space "$run/space" --overwrite > /dev/null
echo
echo "== A few held-out sentences, the tree GiNZA gave the model, and its translation =="
"$python" -m hf_syntax.cli show --model "$run/exported" --source hf_syntax/sample_data/small_parallel_enja/heldout.ja \
  --max-sentences 3
echo "Hub-ready model: $root/$run/exported (handler.py for Inference Endpoints); Space folder: $root/$run/space"
echo "Start the Space demo on this model (then open http://127.0.0.1:7860):"
echo "  $python $root/$run/space/app.py --model $root/$run/exported"
