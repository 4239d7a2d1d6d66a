"""A self-parsing model with its own tree and with its training parser's tree swapped in (issue 39).

    python benchmarks/analyses/self_parse_tree_swap.py <model folder> [--source dev.ja] [--reference dev.en] \
        [--output benchmarks/results/enja_converged/dbsa_dep_rel_self.s45.tree_swap.json]

The same trained `dbsa_dep_rel_self` weights translate `--source` twice through the hf_syntax pipeline: once with the
depths of the model's own tree (how it serves, no parser), once with `self_parse_at_inference=False`, where the
pipeline parses with the model's `source_parser` (GiNZA) and the depth term reads that tree's depths, as
`dbsa_dep_rel` does. The BLEU difference is what the own tree costs (or gains) against the parser it was taught by.
It also counts how often the two trees give a subword the same depth and how many translations differ, and asks
sacreBLEU's paired bootstrap whether the difference is more than the test set's sampling noise; with `--output`,
both translations are kept beside it (`<output>.own_tree.txt`, `<output>.parser_tree.txt`) so the scores recompute.
The own parse's attachment score is `dependency_parse_score.py --head self_parse`.
"""

import argparse
import json
from pathlib import Path

import torch

from hf_syntax.cli.common import positive_int
from hf_syntax.cli.translate import translate_lines
from hf_syntax.data.corpus import read_parallel
from hf_syntax.featurizer import SyntaxFeaturizer
from hf_syntax.metrics.translation import score_translations
from hf_syntax.parse_head_trees import encoder_parse
from hf_syntax.pipelines import syntax_pipeline
from hf_syntax.self_parse import word_ids_from_roles
from hf_syntax.serving.loading import load_pipeline
from hf_syntax.study.significance import paired_bootstrap

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "small_parallel_enja"


def padded(rows: list[list[int]], length: int, side: str) -> torch.Tensor:
    """Depth rows padded with -1 (no depth) on the tokenizer's padding side, to line up with its padded ids."""
    return torch.tensor([[-1] * (length - len(row)) + row if side == "left" else row + [-1] * (length - len(row))
                         for row in rows])


def depth_agreement(model, tokenizer, lines: list[str], batch_size: int) -> dict:
    """Share of the source subwords whose own-tree depth is the parser's (both as the depth term reads them)."""
    config = model.config
    featurizer = SyntaxFeaturizer(tokenizer, parser=config.source_parser, features=("dep_depths",),
                                  pretokenized=config.source_pretokenized, head_rule=config.subword_head_rule,
                                  max_length=config.max_position_embeddings)
    parser = model.get_encoder().self_parser
    output = encoder_parse(model, "self_parse")
    same = total = same_sentences = 0
    for start in range(0, len(lines), batch_size):
        features = featurizer(lines[start:start + batch_size])
        batch = tokenizer.pad({"input_ids": features["input_ids"]}, return_tensors="pt")
        parser_depths = padded(features["dep_depths"], batch["input_ids"].shape[1], tokenizer.padding_side)
        with torch.no_grad():
            encoded = model.get_encoder()(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        own = parser.own_depths(getattr(encoded, output), batch["input_ids"], batch["attention_mask"])
        words = word_ids_from_roles(batch["input_ids"], parser.word_roles.long(), batch["attention_mask"]) >= 0
        matches = (own == parser_depths) | ~words
        same += int((matches & words).sum())
        total += int(words.sum())
        same_sentences += int(matches.all(-1).sum())
    return {"subwords": total, "same_depth_share": same / total if total else 0.0,
            "sentences_with_identical_depths": same_sentences}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("--source", type=Path, default=DATA / "dev.ja")
    parser.add_argument("--reference", type=Path, default=DATA / "dev.en")
    parser.add_argument("--max-sentences", type=positive_int, help="only the first N pairs")
    parser.add_argument("--batch-size", type=positive_int, default=32)
    parser.add_argument("--output", type=Path, help="write the scores here as JSON (and a .md beside it)")
    args = parser.parse_args()

    own_tree = load_pipeline(args.model_dir, backend="pytorch")
    model = own_tree.model
    if not model.config.self_parse_layers:
        parser.error(f"{args.model_dir} is a {model.config.model_type} without a self-parser (self_parse_layers = 0).")
    parser_model = type(model).from_pretrained(args.model_dir, self_parse_at_inference=False).eval()
    parser_tree = syntax_pipeline(parser_model, own_tree.tokenizer, target_tokenizer=own_tree.target_tokenizer)

    columns, _ = read_parallel(args.source, args.reference, max_pairs=args.max_sentences)
    lines, references = columns["source"], columns["target"]
    hypotheses = {name: translate_lines(pipe, lines, args.batch_size, progress=False)
                  for name, pipe in (("own_tree", own_tree), ("parser_tree", parser_tree))}
    pretokenized = bool(model.config.source_pretokenized)
    scores = {"model": str(args.model_dir), "source": str(args.source), "sentences": len(lines),
              "parser": model.config.source_parser,
              **{name: score_translations(found, references, pretokenized=pretokenized)
                 for name, found in hypotheses.items()}}
    scores["translations_that_differ"] = sum(a != b for a, b in zip(*hypotheses.values()))
    scores["paired_bootstrap_p"] = paired_bootstrap(hypotheses["own_tree"], hypotheses["parser_tree"], references)
    scores["depths"] = depth_agreement(model, own_tree.tokenizer, lines, args.batch_size)
    print(json.dumps(scores, indent=2))
    if args.output:
        args.output.write_text(json.dumps(scores, indent=2) + "\n", encoding="utf-8")
        args.output.with_suffix(".md").write_text(markdown(scores), encoding="utf-8")
        for name, found in hypotheses.items():
            args.output.with_suffix(f".{name}.txt").write_text("\n".join(found) + "\n", encoding="utf-8")


def markdown(scores: dict) -> str:
    trees = {"own_tree": "its own (no parser run)", "parser_tree": f"{scores['parser']}'s"}
    rows = "".join(f"| {label} | {scores[name]['bleu']:.2f} | {scores[name]['chrf']:.2f} |\n"
                   for name, label in trees.items())
    depths = scores["depths"]
    return (f"# {scores['model']}: its own tree against its parser's\n\n"
            f"{scores['sentences']} sentences of `{scores['source']}`; the same weights, the depth term reading each "
            "tree's depths.\n\n| tree | BLEU | chrF |\n|---|---:|---:|\n" + rows +
            f"\n{scores['translations_that_differ']} translations differ (paired bootstrap p = "
            f"{scores['paired_bootstrap_p']['bleu']:.3f} BLEU, {scores['paired_bootstrap_p']['chrf']:.3f} chrF). "
            "The two trees give "
            f"{100 * depths['same_depth_share']:.1f}% of {depths['subwords']} subwords the same depth; "
            f"{depths['sentences_with_identical_depths']} sentences have identical depths.\n")


if __name__ == "__main__":
    main()
