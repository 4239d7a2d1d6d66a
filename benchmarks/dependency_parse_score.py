"""How well a trained DBSA model's encoder parse head parses: unlabelled attachment score against a parser's trees.

    python benchmarks/dependency_parse_score.py <model folder> [--source dev.ja] [--parser spacy:ja_ginza]
    python benchmarks/dependency_parse_score.py --table benchmarks/results/dependency_real_data

The model folder is the recipe's `<output_dir>/model` (model + tokenizer). Gold trees come from the parser (GiNZA by
default, on the pre-tokenized words as in training); predicted word trees are decoded from the encoder parse head
both as a maximum spanning tree (well-formed) and as each word's argmax head. `--table` collects the summaries and
scores a run of `dependency_real_data.sh` left in a results folder into `results.md`.
"""

import argparse
import json
from pathlib import Path

import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from hf_syntax.align import word_heads_from_subword_heads
from hf_syntax.featurizer import SyntaxFeaturizer
from hf_syntax.parse_head_trees import AttachmentScore, attachment_score, word_heads_from_parse

DEV = Path(__file__).resolve().parents[2] / "shared" / "data" / "small_parallel_enja" / "dev.ja"
ROWS = (("baseline", "Trans. (baseline core)"), ("dbsa_enc_dec", "+DBSA(Enc)+DBSA(Dec)"),
        ("transformer_dep_rel", "Transformer_dep+rel"))


def score_parse_head(model_dir: Path, source: Path, parser: str, batch_size: int = 50) -> dict:
    model = AutoModelForSeq2SeqLM.from_pretrained(model_dir).eval()
    if not model.config.parse_layer_encoder:
        raise ValueError(f"{model_dir} has no encoder parse head (parse_layer_encoder=0); score a DBSA model.")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    featurizer = SyntaxFeaturizer(tokenizer, parser=parser, features=("dep_heads",), pretokenized=True,
                                  head_rule=model.config.subword_head_rule, return_word_ids=True,
                                  max_length=model.config.max_position_embeddings)
    lines = [line.strip() for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    spanning, argmax = AttachmentScore(), AttachmentScore()
    subword_correct = subword_total = 0
    for start in range(0, len(lines), batch_size):
        features = featurizer(lines[start:start + batch_size])
        batch = tokenizer.pad({"input_ids": features["input_ids"]}, return_tensors="pt")
        with torch.no_grad():
            encoded = model.get_encoder()(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        for row, (heads, word_ids) in enumerate(zip(features["dep_heads"], features["word_ids"])):
            length = len(heads)
            log_probs = encoded.parse_log_probs[row, :length, :length]
            gold = word_heads_from_subword_heads(heads, word_ids)
            spanning += attachment_score(word_heads_from_parse(log_probs, word_ids, model.config.subword_head_rule), gold)
            argmax += attachment_score(
                word_heads_from_parse(log_probs, word_ids, model.config.subword_head_rule, well_formed=False), gold
            )
            supervised = torch.tensor(heads) != -100
            predicted = log_probs.argmax(-1)
            subword_correct += int((predicted[supervised] == torch.tensor(heads)[supervised]).sum())
            subword_total += int(supervised.sum())
    return {
        "model": str(model_dir), "source": str(source), "parser": parser, "sentences": len(lines),
        "words_scored": spanning.total, "uas_spanning_tree": spanning.uas, "uas_argmax": argmax.uas,
        "subword_head_accuracy": subword_correct / subword_total if subword_total else 0.0,
    }


def write_table(results: Path) -> str:
    lines = ["| model | dev BLEU | dev chrF | steps | train loss | encoder parse UAS vs GiNZA (MST / argmax) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for name, label in ROWS:
        summary_file = results / f"{name}.summary.json"
        if not summary_file.exists():
            lines.append(f"| {label} | (no summary: see {name}.log) | | | | |")
            continue
        summary = json.loads(summary_file.read_text())
        uas_file = results / f"{name}.uas.json"
        uas = "n/a (no parse head)"
        if uas_file.exists():
            scores = json.loads(uas_file.read_text())
            uas = f"{100 * scores['uas_spanning_tree']:.1f} / {100 * scores['uas_argmax']:.1f}"
        lines.append(f"| {label} | {summary['validation_bleu']:.2f} | {summary['validation_chrf']:.2f} | "
                     f"{summary['optimizer_steps']} | {summary['train_loss']:.3f} | {uas} |")
    table = "\n".join(lines) + "\n"
    (results / "results.md").write_text(table)
    return table


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", type=Path, nargs="?")
    parser.add_argument("--source", type=Path, default=DEV)
    parser.add_argument("--parser", default="spacy:ja_ginza")
    parser.add_argument("--output", type=Path)
    parser.add_argument("--table", type=Path, help="write results.md for a results folder instead of scoring")
    args = parser.parse_args()
    if args.table:
        print(write_table(args.table))
        return
    if args.model_dir is None:
        parser.error("give a model folder to score, or --table <results folder>")
    scores = score_parse_head(args.model_dir, args.source, args.parser)
    print(json.dumps(scores, indent=2))
    if args.output:
        args.output.write_text(json.dumps(scores, indent=2) + "\n")


if __name__ == "__main__":
    main()
