"""DBSA as a parser: how well a trained DBSA model's encoder parse head parses (issue 13, item 5).

    python benchmarks/analyses/dependency_parse_score.py <model folder> [--source dev.ja] [--parser spacy:ja_ginza] \
        [--gold-conllu ../shared/data/ud/UD_Japanese-GSD/ja_gsd-ud-dev.conllu.gz] [--output scores.json] \
        [--head self_parse]

`--head self_parse` scores a self-parsing model's own parser (`dbsa_dep_rel_self`) instead of its DBSA head.

The model folder is the recipe's `<output_dir>/model` (model + tokenizer). Three comparisons, unlabelled attachment:
- **vs the training parser** (GiNZA by default) on `--source`, words pre-split as in training: the parse head's
  maximum spanning tree (well-formed) and each word's argmax head, plus the subword-level head accuracy that the
  training loss sees. This is how well the head learned what it was taught.
- **vs gold trees** (`--gold-conllu`), on the words as the treebank segments them (the model reads the gold words),
  over all sentences and by sentence length (the training sentences have at most 16 words);
- **the training parser vs the same gold trees**, words given: the ceiling its training signal sets.
"""

import argparse
import json
from pathlib import Path

import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from hf_syntax.align import word_heads_from_subword_heads
from hf_syntax.analysis.parse_scores import gold_tree_attachment_score
from hf_syntax.conllu import read_conllu
from hf_syntax.data.corpus import read_lines
from hf_syntax.featurizer import SyntaxFeaturizer
from hf_syntax.parse_head_trees import (
    ENCODER_PARSERS,
    AttachmentScore,
    attachment_score,
    encoder_parse,
    word_heads_from_parse,
)
from hf_syntax.parsers import load_parser

DEV = Path(__file__).resolve().parents[3] / "shared" / "data" / "small_parallel_enja" / "dev.ja"
# Gold sentences by length in words: small_parallel_enja's sentences have 4-16 words, so a parse head trained on it
# has never seen positions beyond that range.
GOLD_LENGTH_BUCKETS = {"all": (0, 10**9), "up_to_16_words": (0, 16), "17_to_32_words": (17, 32),
                       "over_32_words": (33, 10**9)}


def score_against_parser(model, tokenizer, source: Path, parser: str, batch_size: int = 50, head: str = "dbsa") -> dict:
    """UAS of the encoder parse `head` against `parser`'s trees of the pre-split lines of `source`."""
    output = encoder_parse(model, head)
    featurizer = SyntaxFeaturizer(tokenizer, parser=parser, features=("dep_heads",), pretokenized=True,
                                  head_rule=model.config.subword_head_rule, return_word_ids=True,
                                  max_length=model.config.max_position_embeddings)
    lines = [line.strip() for line in read_lines(source) if line.strip()]
    spanning, argmax = AttachmentScore(), AttachmentScore()
    subword_correct = subword_total = 0
    for start in range(0, len(lines), batch_size):
        features = featurizer(lines[start:start + batch_size])
        batch = tokenizer.pad({"input_ids": features["input_ids"]}, return_tensors="pt")
        with torch.no_grad():
            encoded = model.get_encoder()(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        for row, (heads, word_ids) in enumerate(zip(features["dep_heads"], features["word_ids"])):
            length = len(heads)
            log_probs = getattr(encoded, output)[row, :length, :length]
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
        "source": str(source), "parser": parser, "sentences": len(lines), "words_scored": spanning.total,
        "uas_spanning_tree": 100 * spanning.uas, "uas_argmax": 100 * argmax.uas,
        "subword_head_accuracy": 100 * subword_correct / subword_total if subword_total else 0.0,
    }


def parser_against_gold(parser: str, trees) -> dict:
    """UAS of `parser` on the gold words of `trees`; sentences the parser re-segments are counted, not scored."""
    parsed = load_parser(parser).parse_batch([list(tree.words) for tree in trees], pretokenized=True)
    total, resegmented = AttachmentScore(), 0
    for tree, prediction in zip(trees, parsed):
        if len(prediction) != len(tree):
            resegmented += 1
            continue
        total += attachment_score(list(prediction.heads), list(tree.heads))
    return {"parser": parser, "uas": 100 * total.uas, "words_scored": total.total,
            "sentences_resegmented": resegmented}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("--source", type=Path, default=DEV, help="pre-split source lines (default: enja dev.ja)")
    parser.add_argument("--parser", default="spacy:ja_ginza", help="the parser the model was trained on")
    parser.add_argument("--gold-conllu", type=Path, help="gold trees, e.g. UD_Japanese-GSD dev")
    parser.add_argument("--output", type=Path, help="write the scores here as JSON")
    parser.add_argument("--head", choices=sorted(ENCODER_PARSERS), default="dbsa",
                        help="which encoder parse to score (self_parse: a self-parsing model's own parser)")
    args = parser.parse_args()
    model = AutoModelForSeq2SeqLM.from_pretrained(args.model_dir, trust_remote_code=True).eval()
    try:
        encoder_parse(model, args.head)
    except ValueError as error:
        parser.error(f"{args.model_dir}: {error}")
    if model.config.needs_source_features:
        parser.error(f"{args.model_dir}: its encoder reads {list(model.config.needs_source_features)} at inference, "
                     "which this score does not compute; score a model whose encoder reads tokens alone (DBSA, or "
                     "a self-parsing model with --head self_parse or dbsa).")
    tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
    scores = {"model": str(args.model_dir), "head": args.head,
              "vs_training_parser": score_against_parser(model, tokenizer, args.source, args.parser, head=args.head)}
    if args.gold_conllu:
        trees = [tree.collapse_multiword_tokens() for tree in read_conllu(args.gold_conllu)]
        scores["gold"] = str(args.gold_conllu)
        for bucket, (shortest, longest) in GOLD_LENGTH_BUCKETS.items():
            chosen = [tree for tree in trees if shortest <= len(tree) <= longest]
            model_score = gold_tree_attachment_score(model, tokenizer, chosen, head=args.head)
            scores[f"vs_gold_{bucket}"] = {"sentences": len(chosen), "uas": 100 * model_score.uas,
                                            "words_scored": model_score.total,
                                            "training_parser": parser_against_gold(args.parser, chosen)}
    print(json.dumps(scores, indent=2))
    if args.output:
        args.output.write_text(json.dumps(scores, indent=2) + "\n")


if __name__ == "__main__":
    main()
