"""Every result number the README, the results README and the model cards quote comes from a committed artifact.

QUOTES is the table: (doc file, the text it quotes, artifact, key). The numbers in the quoted text must equal the
artifact's values at the key, rounded as the doc writes them; so a retrain or a new report that changes a number
fails here until the docs follow, and so does a doc edited by hand.

A key is a path into the JSON file: dot-separated fields; ``[field=value]`` keeps the list items with that value;
``*`` in a field matches every key of a dict that fits. After ``:`` come the fields to take from where the path led,
in the order the doc writes them (lists are flattened), or one of ``=mean`` (the mean of the values) and ``=range``
(their minimum and maximum).
"""

import fnmatch
import json
import math
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONVERGED = "benchmarks/results/enja_converged"
OVER_SEEDS = f"{CONVERGED}/results_over_seeds.json"
AGAINST = f"{CONVERGED}/results_against.json"
GRAPH = "benchmarks/results/multi30k_graph/converged_over_seeds.json"
STEP_SPEED = "benchmarks/results/speed_variants.json"
STEP_SPEED_GRAPH_SI = "benchmarks/results/speed_graph_si.json"
STEP_SPEED_DBSA_DEP_REL = "benchmarks/results/speed_dbsa_dep_rel.json"
SERVING = "benchmarks/results/serve_latency.json"
DEMO = "benchmarks/results/demo_ja_en/summary.json"
PLATEAU = "benchmarks/results/enja_plateau/results.json"
PLATEAU_RECIPE = "benchmarks/results/enja_plateau/recipe.json"
PLATEAU_OVER_SEEDS = "benchmarks/results/enja_plateau/results_over_seeds.json"
PLATEAU_AGAINST = "benchmarks/results/enja_plateau/results_against.json"
PLATEAU_CHECKPOINTS = "benchmarks/results/enja_plateau/checkpoint_cross_entropy.json"
PLATEAU_README = "benchmarks/results/enja_plateau/README.md"
MULTI30K_RECIPE = "benchmarks/results/multi30k_graph_plateau/recipe.json"
MULTI30K_README = "benchmarks/results/multi30k_graph_plateau/README.md"
MULTI30K_STUDY = "benchmarks/results/multi30k_graph_plateau/results.json"
GRAPH_42 = "[seed=42].[name=half_dim_gate_mean_new_groups]"
GRAPH_43 = "[seed=43].[name=half_dim_gate_mean_new_groups]"
GRAPH_DELTA = "half_dim_gate_mean_new_groups"
GRAPH_TEST_DELTA = "half_dim_gate_mean_new_groups.extra_tests.test_2016_flickr"
MULTI30K_OVER_SEEDS = "benchmarks/results/multi30k_graph_plateau/results_over_seeds.json"
RESULTS = "benchmarks/results/README.md"
MACHINE_REFERENCE = "benchmarks/results/machine_reference.json"
ONE_AGAINST_TWO_THREADS = "comparisons.1_vs_2_threads"

WHICH_MODEL_ROW = {  # the "which model" table's numbers, quoted by the README and by each model's card
    "transformer_dep_rel": [("+0.88 [−0.14, +1.89] | 5 |", OVER_SEEDS, "transformer_dep_rel.bleu: mean interval seeds"),
                            ("| 0.95–1.08 |", STEP_SPEED, "train_step_*_transformer_dep_rel.ratio: =range"),
                            ("| 0.62 | yes |", SERVING, "rows.[what=dep_rel].[sentences=32].ratio_to_baseline")],
    "dbsa_enc_dec": [("+0.50 [−0.48, +1.48] | 5 |", OVER_SEEDS, "dbsa_enc_dec.bleu: mean interval seeds"),
                     ("| 0.94–1.07 |", STEP_SPEED, "train_step_*_dbsa_enc_dec.ratio: =range"),
                     ("| 0.92 | no |", SERVING, "rows.[what=dbsa].[sentences=32].ratio_to_baseline")],
    "transformer_rel": [("+0.45 [−0.41, +1.32] | 5 |", OVER_SEEDS, "transformer_rel.bleu: mean interval seeds"),
                        ("| 0.94–1.09 |", STEP_SPEED, "train_step_*_transformer_rel.ratio: =range"),
                        ("| 0.94 | no |", SERVING, "rows.[what=rel].[sentences=32].ratio_to_baseline")],
    "syntax_infused": [("+0.58 [−3.61, +4.77] | 2 |", OVER_SEEDS, "syntax_infused.bleu: mean interval seeds"),
                       ("| 1.01 |", STEP_SPEED_GRAPH_SI, "train_step_32_syntax_infused.ratio"),
                       ("| 0.64 | yes |", SERVING, "rows.[what=syntax_infused].[sentences=32].ratio_to_baseline")],
    "dbsa_dep_rel": [("+0.94 [−0.29, +2.17] | 3 |", OVER_SEEDS, "dbsa_dep_rel.bleu: mean interval seeds"),
                     ("| 0.90–1.00 |", STEP_SPEED_DBSA_DEP_REL, "train_step_*_dbsa_dep_rel.ratio: =range"),
                     ("| 0.62 | yes |", SERVING, "rows.[what=dbsa_dep_rel].[sentences=32].ratio_to_baseline")],
    "dbsa_dep_rel_self": [("+0.15 [−1.24, +1.54] | 5 |", OVER_SEEDS, "dbsa_dep_rel_self.bleu: mean interval seeds"),
                          ("| 1.18–1.22 |", STEP_SPEED_DBSA_DEP_REL, "train_step_*_dbsa_dep_rel_self.ratio: =range"),
                          ("| 0.83 | no |", SERVING, "rows.[what=dbsa_dep_rel_self].[sentences=32].ratio_to_baseline")],
    "graph_transformer": [("−0.93 [−4.30, +2.43] | 2 |", GRAPH,
                           "half_dim_gate_mean_new_groups.bleu: mean interval seeds"),
                          ("| 1.10 |", STEP_SPEED_GRAPH_SI, "train_step_32_graph_transformer_half_dim_gate.ratio"),
                          ("| 0.96 | no |", SERVING, "rows.[what=graph].[sentences=32].ratio_to_baseline")],
    "baseline": [("(40.46) |", f"{CONVERGED}/results.json", "[name=baseline].dev_bleu: =mean")],
}
PLATEAU_ROW = {  # the plateau table's numbers, quoted by the README and by the cards of the models it trains
    "baseline": [("(43.53) |", PLATEAU, "[name=baseline].dev_bleu: =mean"),
                 ("(1.1783) |", PLATEAU, "[name=baseline].dev_cross_entropy: =mean")],
    "transformer_dep_rel": [("| +0.62 [−2.16, +3.41] |", PLATEAU_OVER_SEEDS, "transformer_dep_rel.bleu: mean interval"),
                            ("| −0.0239 [−0.0764, +0.0286] | 3 |", PLATEAU_OVER_SEEDS,
                             "transformer_dep_rel.cross_entropy: mean interval seeds")],
    "dbsa_dep_rel_self": [("| −0.13 [−2.27, +2.01] |", PLATEAU_OVER_SEEDS, "dbsa_dep_rel_self.bleu: mean interval"),
                          ("| −0.0255 [−0.0635, +0.0124] | 3 |", PLATEAU_OVER_SEEDS,
                           "dbsa_dep_rel_self.cross_entropy: mean interval seeds")],
    "dbsa_enc_dec": [("| +0.89 [−2.03, +3.80] |", PLATEAU_OVER_SEEDS, "dbsa_enc_dec.bleu: mean interval"),
                     ("| −0.0233 [−0.0547, +0.0081] | 3 |", PLATEAU_OVER_SEEDS,
                      "dbsa_enc_dec.cross_entropy: mean interval seeds")],
}
PLATEAU_CARDS = {"baseline": ("baseline",), "dep_rpe": ("baseline", "transformer_dep_rel"),
                 "dbsa_dep_rel_self": ("baseline", "dbsa_dep_rel_self"), "dbsa": ("baseline", "dbsa_enc_dec")}
CARDS = {"dep_rpe": ("transformer_dep_rel", "transformer_rel"), "dbsa": ("dbsa_enc_dec",),
         "syntax_infused": ("syntax_infused",), "dbsa_dep_rel": ("dbsa_dep_rel",),
         "dbsa_dep_rel_self": ("dbsa_dep_rel_self",), "graph_transformer": ("graph_transformer",),
         "baseline": ("baseline",)}


def table_quotes(rows: dict[str, list[tuple]], cards: dict[str, tuple[str, ...]]) -> list[tuple]:
    """A README table's quotes: each row's in the README, and again in every card that carries that row."""
    return [("README.md", *quote) for row in rows.values() for quote in row] + [
        (f"model_cards/{card}.md", *quote) for card, models in cards.items() for model in models for quote in rows[model]]


QUOTES = table_quotes(WHICH_MODEL_ROW, CARDS) + table_quotes(PLATEAU_ROW, PLATEAU_CARDS)
QUOTES += [
    ("README.md", "The demo prints BLEU 9.60", DEMO, "bleu"),
    ("training/README.md", "BLEU 9.60", DEMO, "bleu"),
    (RESULTS, "BLEU 9.60", DEMO, "bleu"),
    (RESULTS, "dep+rel +0.88 [−0.14, +1.89]", OVER_SEEDS, "transformer_dep_rel.bleu: mean interval"),
    (RESULTS, "DBSA +0.50 [−0.48, +1.48]", OVER_SEEDS, "dbsa_enc_dec.bleu: mean interval"),
    (RESULTS, "Transformer_rel +0.45 [−0.41, +1.32] (5 seeds)", OVER_SEEDS, "transformer_rel.bleu: mean interval seeds"),
    (RESULTS, "`dbsa_dep_rel` +0.94 [−0.29, +2.17] (3 seeds)", OVER_SEEDS, "dbsa_dep_rel.bleu: mean interval seeds"),
    (RESULTS, "`dbsa_dep_rel_self` +0.15 [−1.24, +1.54] (5 seeds)", OVER_SEEDS,
     "dbsa_dep_rel_self.bleu: mean interval seeds"),
    (RESULTS, "syntax-infused +0.58 [−3.61, +4.77] (2 seeds)", OVER_SEEDS, "syntax_infused.bleu: mean interval seeds"),
    (RESULTS, "dep+rel over Transformer_rel +0.42 [−1.12, +1.97]", AGAINST,
     "transformer_rel.transformer_dep_rel.bleu: mean interval"),
    (RESULTS, "against dep+rel −0.73 [−1.99, +0.54]", AGAINST, "transformer_dep_rel.dbsa_dep_rel_self.bleu: mean interval"),
    (RESULTS, "dep+rel +1.55 [−4.73, +7.84] (2 seeds", f"{CONVERGED}/budget_16_epochs_over_seeds.json",
     "transformer_dep_rel.bleu: mean interval seeds"),
    (RESULTS, "averaged (val BLEU 41.19 against", MULTI30K_RECIPE, "curve.[budget_epochs=36].dev_bleu"),
    (RESULTS, "against a plateau of 41.18, still", MULTI30K_RECIPE, "decision.plateau_dev_bleu"),
    (RESULTS, "fell short (39.52 against", MULTI30K_RECIPE, "candidates.[name=cosine_20].dev_bleu"),
    (MULTI30K_README, "| 28.81 | 34.94 | 36.66 | 38.73 | 39.84 | 40.26 | 40.81 | **41.19** | 41.53 |", MULTI30K_RECIPE,
     "curve.dev_bleu"),
    (MULTI30K_README, "| the budget's own checkpoint | 31.65 | 36.09 | 37.52 | 38.94 | 40.12 | 39.72 | 41.04 | 41.16 | 41.78 |",
     MULTI30K_RECIPE, "curve.single_checkpoint_dev_bleu"),
    (MULTI30K_README, "averaged val BLEU **39.52**", MULTI30K_RECIPE, "candidates.[name=cosine_20].dev_bleu"),
    (MULTI30K_README, "BLEU **41.47**,", MULTI30K_RECIPE, "candidates.[name=cosine_30].dev_bleu"),
    (MULTI30K_README, "baseline, val BLEU 41.47 and", MULTI30K_STUDY, "[seed=42].[name=baseline].val_bleu"),
    (MULTI30K_README, "BLEU 40.65; its blind", MULTI30K_STUDY,
     "[seed=42].[name=baseline].extra_tests.test_2016_flickr.bleu"),
    (MULTI30K_README, "baseline's is 390.9 s", MULTI30K_STUDY, "[seed=42].[name=baseline].seconds_per_epoch"),
    (MULTI30K_README, "val BLEU 42.66 (", MULTI30K_STUDY, f"{GRAPH_42}.val_bleu"),
    (MULTI30K_README, "BLEU 42.20 (", MULTI30K_STUDY, f"{GRAPH_42}.extra_tests.test_2016_flickr.bleu"),
    (MULTI30K_README, "cross-entropy 1.5768 against", MULTI30K_STUDY, f"{GRAPH_42}.val_cross_entropy"),
    (MULTI30K_README, "the baseline's 1.6427;", MULTI30K_STUDY, "[seed=42].[name=baseline].val_cross_entropy"),
    (MULTI30K_README, "Graph default's is 436.0 s,", MULTI30K_STUDY, f"{GRAPH_42}.seconds_per_epoch"),
    (MULTI30K_README, "read 41.47, 41.53, 41.31, 41.52 and 41.59,", MULTI30K_RECIPE,
     "decision.choice.dev_bleu_per_epoch: 25 26 27 28 29"),
    (RESULTS, "): val BLEU 41.47 in", MULTI30K_RECIPE, "decision.choice.dev_bleu"),
    (RESULTS, "averaged: dev BLEU 43.96 against", PLATEAU_RECIPE, "decision.choice.dev_bleu"),
    (RESULTS, "against a plateau of 43.33;", PLATEAU_RECIPE, "decision.plateau_dev_bleu"),
    (RESULTS, "epochs (40.30) and", PLATEAU_RECIPE, "candidates.[name=cosine_8].dev_bleu"),
    (RESULTS, "(42.89) fell short", PLATEAU_RECIPE, "candidates.[name=batch256_cosine_12].dev_bleu"),
    (RESULTS, "(43.96, 43.32, 43.30;", PLATEAU, "[name=baseline].dev_bleu"),
    (RESULTS, "mean of three seeds 43.53)", PLATEAU, "[name=baseline].dev_bleu: =mean"),
    (RESULTS, "(43.29, 44.62, 44.54:", PLATEAU, "[name=transformer_dep_rel].dev_bleu"),
    (RESULTS, "Δ +0.62 [−2.16, +3.41] over", PLATEAU_OVER_SEEDS, "transformer_dep_rel.bleu: mean interval"),
    (RESULTS, "(42.84, 43.77, 43.58:", PLATEAU, "[name=dbsa_dep_rel_self].dev_bleu"),
    (RESULTS, "Δ −0.13 [−2.27, +2.01]), DBSA", PLATEAU_OVER_SEEDS, "dbsa_dep_rel_self.bleu: mean interval"),
    (RESULTS, "dep+rel at all three seeds (Δ −0.75 [−1.42, −0.09])", PLATEAU_AGAINST,
     "transformer_dep_rel.dbsa_dep_rel_self.bleu: mean interval"),
    (RESULTS, "dep+rel Δ −0.0239 [−0.0764, +0.0286] nats", PLATEAU_OVER_SEEDS,
     "transformer_dep_rel.cross_entropy: mean interval"),
    (RESULTS, "model −0.0255, DBSA", PLATEAU_OVER_SEEDS, "dbsa_dep_rel_self.cross_entropy.mean"),
    (RESULTS, "(45.40, 42.86, 44.98: Δ", PLATEAU, "[name=dbsa_enc_dec].dev_bleu"),
    (RESULTS, "Δ +0.89 [−2.03, +3.80])", PLATEAU_OVER_SEEDS, "dbsa_enc_dec.bleu: mean interval"),
    (RESULTS, "DBSA −0.0233, over", PLATEAU_OVER_SEEDS, "dbsa_enc_dec.cross_entropy.mean"),
    ("README.md", "baseline reaches 43.96, 43.32 and\n43.30,", PLATEAU, "[name=baseline].dev_bleu"),
    ("README.md", "dep+rel 43.29, 44.62 and 44.54 (", PLATEAU, "[name=transformer_dep_rel].dev_bleu"),
    ("README.md", "(+0.62 over the three seeds, ahead at two", PLATEAU_OVER_SEEDS, "transformer_dep_rel.bleu.mean"),
    ("README.md", "self-parsing model\n42.84, 43.77 and 43.58 (", PLATEAU, "[name=dbsa_dep_rel_self].dev_bleu"),
    ("README.md", "(−0.13 over the three, ahead at two)", PLATEAU_OVER_SEEDS, "dbsa_dep_rel_self.bleu.mean"),
    ("README.md", "DBSA 45.40, 42.86 and 44.98 (", PLATEAU, "[name=dbsa_enc_dec].dev_bleu"),
    ("README.md", "(+0.89 over the three:", PLATEAU_OVER_SEEDS,
     "dbsa_enc_dec.bleu: mean"),
    ("README.md", "DBSA's −0.0233 [−0.0547, +0.0081], would take 5 seeds", PLATEAU_OVER_SEEDS,
     "dbsa_enc_dec.cross_entropy: mean interval seeds_for_80_percent_power"),
    ("README.md", "the first table: +0.89,", PLATEAU_OVER_SEEDS, "dbsa_enc_dec.bleu.mean"),
    ("README.md", "two seeds (−0.93 [−4.30, +2.43])", GRAPH, "half_dim_gate_mean_new_groups.bleu: mean interval"),
    ("README.md", "val, +1.53 [−2.79, +5.85], and", MULTI30K_OVER_SEEDS, f"{GRAPH_DELTA}.bleu: mean interval"),
    ("README.md", "+0.85 [−8.04, +9.74] (by", MULTI30K_OVER_SEEDS, f"{GRAPH_TEST_DELTA}.bleu: mean interval"),
    ("README.md", "(by 1.55 and 0.15)", MULTI30K_OVER_SEEDS, f"{GRAPH_TEST_DELTA}.bleu.differences: 42 43"),
    ("model_cards/graph_transformer.md", "val BLEU +1.53 [−2.79, +5.85] over", MULTI30K_OVER_SEEDS,
     f"{GRAPH_DELTA}.bleu: mean interval"),
    ("model_cards/graph_transformer.md", "+0.85 [−8.04, +9.74], not detected", MULTI30K_OVER_SEEDS,
     f"{GRAPH_TEST_DELTA}.bleu: mean interval"),
    ("model_cards/graph_transformer.md", "both, −0.064 [−0.085, −0.043])", MULTI30K_OVER_SEEDS,
     f"{GRAPH_DELTA}.cross_entropy: mean interval"),
    (MULTI30K_README, "reaches val BLEU 40.69 and", MULTI30K_STUDY, "[seed=43].[name=baseline].val_bleu"),
    (MULTI30K_README, "41.14 (blind", MULTI30K_STUDY, "[seed=43].[name=baseline].extra_tests.test_2016_flickr.bleu"),
    (MULTI30K_README, "default 42.56 (", MULTI30K_STUDY, f"{GRAPH_43}.val_bleu"),
    (MULTI30K_README, "(+1.87,", MULTI30K_OVER_SEEDS, f"{GRAPH_DELTA}.bleu.differences: 43"),
    (MULTI30K_README, "p = 0.001) and", MULTI30K_STUDY, f"{GRAPH_43}.paired_bootstrap_p.bleu"),
    (MULTI30K_README, "and 41.29 (", MULTI30K_STUDY, f"{GRAPH_43}.extra_tests.test_2016_flickr.bleu"),
    (MULTI30K_README, "(+0.15, p", MULTI30K_OVER_SEEDS, f"{GRAPH_TEST_DELTA}.bleu.differences: 43"),
    (MULTI30K_README, "p = 0.28;", MULTI30K_STUDY, f"{GRAPH_43}.extra_tests.test_2016_flickr.paired_bootstrap_p.bleu"),
    (MULTI30K_README, "chrF +0.79,", MULTI30K_OVER_SEEDS, f"{GRAPH_TEST_DELTA}.chrf.differences: 43"),
    (MULTI30K_README, "p = 0.005)", MULTI30K_STUDY, f"{GRAPH_43}.extra_tests.test_2016_flickr.paired_bootstrap_p.chrf"),
    (MULTI30K_README, "cross-entropy 1.5944 against", MULTI30K_STUDY, f"{GRAPH_43}.val_cross_entropy"),
    (MULTI30K_README, "against 1.6570 (", MULTI30K_STUDY, "[seed=43].[name=baseline].val_cross_entropy"),
    (MULTI30K_README, "val BLEU +1.53\n[−2.79, +5.85], ahead", MULTI30K_OVER_SEEDS, f"{GRAPH_DELTA}.bleu: mean interval"),
    (MULTI30K_README, "+0.85 [−8.04, +9.74], ahead", MULTI30K_OVER_SEEDS, f"{GRAPH_TEST_DELTA}.bleu: mean interval"),
    (MULTI30K_README, "by 1.55 and 0.15, so", MULTI30K_OVER_SEEDS, f"{GRAPH_TEST_DELTA}.bleu.differences: 42 43"),
    (MULTI30K_README, "cross-entropy −0.0643 [−0.0852, −0.0433], lower", MULTI30K_OVER_SEEDS,
     f"{GRAPH_DELTA}.cross_entropy: mean interval"),
    (MULTI30K_README, "alone, 276.0 s against", MULTI30K_STUDY, f"{GRAPH_43}.seconds_per_epoch"),
    (MULTI30K_README, "against 271.8 s,", MULTI30K_STUDY, "[seed=43].[name=baseline].seconds_per_epoch"),
    (MULTI30K_README, "fall 1.71× for the baseline and\n1.68× for the Graph default", MACHINE_REFERENCE,
     f"{ONE_AGAINST_TWO_THREADS}.seconds_ratio: baseline graph_default"),
    (MULTI30K_README, "move 1.024× and 1.006×", MACHINE_REFERENCE,
     f"{ONE_AGAINST_TWO_THREADS}.reference_steps_drift: baseline graph_default"),
    (RESULTS, "fall 1.71× (baseline), 1.68× (Graph default) and 1.67× (reference)", MACHINE_REFERENCE,
     f"{ONE_AGAINST_TWO_THREADS}.seconds_ratio: baseline graph_default reference"),
    (RESULTS, "moves 1.024× and 1.006×", MACHINE_REFERENCE,
     f"{ONE_AGAINST_TWO_THREADS}.reference_steps_drift: baseline graph_default"),
    ("README.md", "next (+0.62,", PLATEAU_OVER_SEEDS, "transformer_dep_rel.bleu.mean"),
    ("README.md", "are level, +0.26 [−4.56, +5.09]", PLATEAU_AGAINST, "transformer_dep_rel.dbsa_enc_dec.bleu: mean interval"),
    ("README.md", "all three seeds, −0.75 [−1.42, −0.09] BLEU", PLATEAU_AGAINST,
     "transformer_dep_rel.dbsa_dep_rel_self.bleu: mean interval"),
    ("README.md", "five seeds, −0.73 [−1.99, +0.54])", AGAINST,
     "transformer_dep_rel.dbsa_dep_rel_self.bleu: mean interval"),
    ("README.md", "level (−0.0016 [−0.0319, +0.0287])", PLATEAU_AGAINST,
     "transformer_dep_rel.dbsa_dep_rel_self.cross_entropy: mean interval"),
    ("README.md", "did not: +1.85, +0.67 and\n−0.77 at", OVER_SEEDS, "dbsa_dep_rel_self.bleu.differences: 42 43 44"),
    ("README.md", "−1.12, +0.45 and +0.28 at the plateau", PLATEAU_OVER_SEEDS,
     "dbsa_dep_rel_self.bleu.differences: 42 43 44"),
    ("model_cards/dep_rpe.md", "dep+rel 43.29, 44.62 and 44.54 against", PLATEAU, "[name=transformer_dep_rel].dev_bleu"),
    ("model_cards/dep_rpe.md", "baseline's 43.96, 43.32 and 43.30:", PLATEAU, "[name=baseline].dev_bleu"),
    ("model_cards/dep_rpe.md", "**+0.62 over the three seeds**", PLATEAU_OVER_SEEDS, "transformer_dep_rel.bleu.mean"),
    ("model_cards/dep_rpe.md", "  [−2.16, +3.41] (about 28 seeds", PLATEAU_OVER_SEEDS,
     "transformer_dep_rel.bleu: interval seeds_for_80_percent_power"),
    ("model_cards/dep_rpe.md", "(mean Δ −0.0239 nats per token,\n  [−0.0764, +0.0286]; about 9 seeds", PLATEAU_OVER_SEEDS,
     "transformer_dep_rel.cross_entropy: mean interval seeds_for_80_percent_power"),
    ("model_cards/dep_rpe.md", "seeds,\n  −0.75 [−1.42, −0.09] BLEU", PLATEAU_AGAINST,
     "transformer_dep_rel.dbsa_dep_rel_self.bleu: mean interval"),
    ("model_cards/dep_rpe.md", "level (−0.0016 [−0.0319, +0.0287])", PLATEAU_AGAINST,
     "transformer_dep_rel.dbsa_dep_rel_self.cross_entropy: mean interval"),
    ("model_cards/dbsa_dep_rel_self.md", "  42.84, 43.77 and 43.58 against", PLATEAU, "[name=dbsa_dep_rel_self].dev_bleu"),
    ("model_cards/dbsa_dep_rel_self.md", "baseline's 43.96, 43.32 and 43.30 (p", PLATEAU, "[name=baseline].dev_bleu"),
    ("model_cards/dbsa_dep_rel_self.md", "(p = 0.12, 0.23 and 0.26)", PLATEAU,
     "[name=dbsa_dep_rel_self].paired_bootstrap_p.bleu"),
    ("model_cards/dbsa.md", "dev): 45.40,\n  42.86 and 44.98 against", PLATEAU, "[name=dbsa_enc_dec].dev_bleu"),
    ("model_cards/dbsa.md", "baseline's 43.96, 43.32 and 43.30 (p", PLATEAU, "[name=baseline].dev_bleu"),
    ("model_cards/dbsa.md", "(p = 0.06, 0.23 and 0.03)", PLATEAU, "[name=dbsa_enc_dec].paired_bootstrap_p.bleu"),
    ("model_cards/dbsa.md", "+1.44, −0.46 and +1.68,\n", PLATEAU_OVER_SEEDS, "dbsa_enc_dec.bleu.differences: 42 43 44"),
    ("README.md", ":\n+1.44, −0.46 and +1.68)", PLATEAU_OVER_SEEDS, "dbsa_enc_dec.bleu.differences: 42 43 44"),
    ("model_cards/dbsa.md", "were +1.14, +0.09 and +0.95 at", OVER_SEEDS, "dbsa_enc_dec.bleu.differences: 42 43 44"),
    ("model_cards/dbsa.md", "(−0.0360, −0.0107 and −0.0232 nats", PLATEAU_OVER_SEEDS,
     "dbsa_enc_dec.cross_entropy.differences: 42 43 44"),
    ("model_cards/dbsa.md", "seeds +0.89 [−2.03, +3.80]:", PLATEAU_OVER_SEEDS, "dbsa_enc_dec.bleu: mean interval"),
    ("model_cards/dbsa.md", "−0.0233\n  [−0.0547, +0.0081])", PLATEAU_OVER_SEEDS, "dbsa_enc_dec.cross_entropy: mean interval"),
    ("model_cards/dbsa.md", "+0.26 [−4.56, +5.09]", PLATEAU_AGAINST, "transformer_dep_rel.dbsa_enc_dec.bleu: mean interval"),
    ("model_cards/dbsa_dep_rel_self.md", "**−0.13 over the\n  three seeds**", PLATEAU_OVER_SEEDS,
     "dbsa_dep_rel_self.bleu.mean"),
    ("model_cards/dbsa_dep_rel_self.md", "(interval [−2.27, +2.01]:", PLATEAU_OVER_SEEDS,
     "dbsa_dep_rel_self.bleu.interval"),
    ("model_cards/dbsa_dep_rel_self.md", "were +1.85, +0.67 and −0.77\n  at", OVER_SEEDS,
     "dbsa_dep_rel_self.bleu.differences: 42 43 44"),
    ("model_cards/dbsa_dep_rel_self.md", "(mean Δ\n  −0.0255 nats per token, [−0.0635, +0.0124]:", PLATEAU_OVER_SEEDS,
     "dbsa_dep_rel_self.cross_entropy: mean interval"),
    ("model_cards/dbsa_dep_rel_self.md", "seeds: −0.75 BLEU [−1.42, −0.09]**", PLATEAU_AGAINST,
     "transformer_dep_rel.dbsa_dep_rel_self.bleu: mean interval"),
    ("model_cards/dbsa_dep_rel_self.md", "level (−0.0016 [−0.0319, +0.0287])", PLATEAU_AGAINST,
     "transformer_dep_rel.dbsa_dep_rel_self.cross_entropy: mean interval"),
    ("model_cards/dbsa_dep_rel_self.md", "it was −0.73\n  [−1.99, +0.54]", AGAINST,
     "transformer_dep_rel.dbsa_dep_rel_self.bleu: mean interval"),
    (PLATEAU_README, "model 42.84 (p", PLATEAU, "[name=dbsa_dep_rel_self].[seed=42].dev_bleu"),
    (PLATEAU_README, ", 43.77 (p", PLATEAU, "[name=dbsa_dep_rel_self].[seed=43].dev_bleu"),
    (PLATEAU_README, "and 43.58 (p", PLATEAU, "[name=dbsa_dep_rel_self].[seed=44].dev_bleu"),
    (PLATEAU_README, "(p = 0.26). At", PLATEAU, "[name=dbsa_dep_rel_self].[seed=44].paired_bootstrap_p.bleu"),
    (PLATEAU_README, "and 44.54 (p", PLATEAU, "[name=transformer_dep_rel].[seed=44].dev_bleu"),
    (PLATEAU_README, "(p = 0.10), the\nself", PLATEAU, "[name=transformer_dep_rel].[seed=44].paired_bootstrap_p.bleu"),
    (PLATEAU_README, "dep+rel is +0.62 [−2.16, +3.41] at", PLATEAU_OVER_SEEDS, "transformer_dep_rel.bleu: mean interval"),
    (PLATEAU_README, "(dep+rel +0.99, +1.55\nand −0.18, the", OVER_SEEDS, "transformer_dep_rel.bleu.differences: 42 43 44"),
    (PLATEAU_README, "model +1.85, +0.67 and −0.77);", OVER_SEEDS, "dbsa_dep_rel_self.bleu.differences: 42 43 44"),
    ("model_cards/dep_rpe.md", "same seeds were +0.99, +1.55 and −0.18:", OVER_SEEDS,
     "transformer_dep_rel.bleu.differences: 42 43 44"),
    (PLATEAU_README, "(dep+rel −0.67, +1.30\nand +1.24, the", PLATEAU_OVER_SEEDS, "transformer_dep_rel.bleu.differences: 42 43 44"),
    (PLATEAU_README, "model −1.12, +0.45 and +0.28)", PLATEAU_OVER_SEEDS, "dbsa_dep_rel_self.bleu.differences: 42 43 44"),
    (PLATEAU_README, "model is −0.13 [−2.27, +2.01] and", PLATEAU_OVER_SEEDS, "dbsa_dep_rel_self.bleu: mean interval"),
    (PLATEAU_README, "seeds:\n−0.75 [−1.42, −0.09] (", PLATEAU_AGAINST, "transformer_dep_rel.dbsa_dep_rel_self.bleu: mean interval"),
    (PLATEAU_README, "did not (−0.73 [−1.99, +0.54])", AGAINST, "transformer_dep_rel.dbsa_dep_rel_self.bleu: mean interval"),
    (PLATEAU_README, "DBSA scores 45.40 (p", PLATEAU, "[name=dbsa_enc_dec].[seed=42].dev_bleu"),
    (PLATEAU_README, "(p = 0.06),\n", PLATEAU, "[name=dbsa_enc_dec].[seed=42].paired_bootstrap_p.bleu"),
    (PLATEAU_README, "),\n42.86 (p", PLATEAU, "[name=dbsa_enc_dec].[seed=43].dev_bleu"),
    (PLATEAU_README, "(p = 0.23) and", PLATEAU, "[name=dbsa_enc_dec].[seed=43].paired_bootstrap_p.bleu"),
    (PLATEAU_README, "and 44.98 (p", PLATEAU, "[name=dbsa_enc_dec].[seed=44].dev_bleu"),
    (PLATEAU_README, "(p = 0.03): +", PLATEAU, "[name=dbsa_enc_dec].[seed=44].paired_bootstrap_p.bleu"),
    (PLATEAU_README, "+1.44, −0.46 and +1.68 against", PLATEAU_OVER_SEEDS, "dbsa_enc_dec.bleu.differences: 42 43 44"),
    (PLATEAU_README, "+1.14, +0.09 and\n+0.95 at", OVER_SEEDS, "dbsa_enc_dec.bleu.differences: 42 43 44"),
    (PLATEAU_README, "that is +0.89 [−2.03, +3.80], the", PLATEAU_OVER_SEEDS, "dbsa_enc_dec.bleu: mean interval"),
    (PLATEAU_README, "gain (16 seeds", PLATEAU_OVER_SEEDS, "dbsa_enc_dec.bleu.seeds_for_80_percent_power"),
    (PLATEAU_README, "dep+rel +0.26\n[−4.56, +5.09]", PLATEAU_AGAINST, "transformer_dep_rel.dbsa_enc_dec.bleu: mean interval"),
    (PLATEAU_README, "DBSA −0.0360, −0.0107\nand −0.0232, while", PLATEAU_OVER_SEEDS,
     "dbsa_enc_dec.cross_entropy.differences: 42 43 44"),
    (PLATEAU_README, "DBSA −0.0233 [−0.0547,\n+0.0081], at", PLATEAU_OVER_SEEDS, "dbsa_enc_dec.cross_entropy: mean interval"),
    (PLATEAU_README, "dep+rel −0.0481, −0.0089 and −0.0148, the", PLATEAU_OVER_SEEDS,
     "transformer_dep_rel.cross_entropy.differences: 42 43 44"),
    (PLATEAU_README, "model −0.0385, −0.0087 and −0.0294, DBSA", PLATEAU_OVER_SEEDS,
     "dbsa_dep_rel_self.cross_entropy.differences: 42 43 44"),
    (PLATEAU_README, "the self-parsing model −0.0255 [−0.0635, +0.0124], DBSA", PLATEAU_OVER_SEEDS,
     "dbsa_dep_rel_self.cross_entropy: mean interval"),
    (PLATEAU_README, "each other −0.0016 [−0.0319, +0.0287])", PLATEAU_AGAINST,
     "transformer_dep_rel.dbsa_dep_rel_self.cross_entropy: mean interval"),
    (PLATEAU_README, "(dep+rel −0.0239 [−0.0764, +0.0286], the", PLATEAU_OVER_SEEDS,
     "transformer_dep_rel.cross_entropy: mean interval"),
    (PLATEAU_README, "(Δ −0.0534 to −0.0412 nats", PLATEAU_CHECKPOINTS,
     "seeds.[seed=42].checkpoints.difference.transformer_dep_rel.cross_entropy: =range"),
    (PLATEAU_README, "swings from −0.73 to +2.62;", PLATEAU_CHECKPOINTS,
     "seeds.[seed=42].checkpoints.difference.transformer_dep_rel.dev_bleu: =range"),
    (PLATEAU_README, "−0.0408 to −0.0157), its", PLATEAU_CHECKPOINTS,
     "seeds.[seed=42].checkpoints.difference.dbsa_dep_rel_self.cross_entropy: =range"),
    (PLATEAU_README, "its BLEU difference −1.19 to +3.05.", PLATEAU_CHECKPOINTS,
     "seeds.[seed=42].checkpoints.difference.dbsa_dep_rel_self.dev_bleu: =range"),
    (PLATEAU_README, "−0.0306 to +0.0080, lower", PLATEAU_CHECKPOINTS,
     "seeds.[seed=43].checkpoints.difference.transformer_dep_rel.cross_entropy: =range"),
    (PLATEAU_README, "−0.0265 to +0.0052, lower", PLATEAU_CHECKPOINTS,
     "seeds.[seed=43].checkpoints.difference.dbsa_dep_rel_self.cross_entropy: =range"),
    (PLATEAU_README, "lower at 4 of", PLATEAU_CHECKPOINTS, "seeds.[seed=43].summary.dbsa_dep_rel_self.lower_cross_entropy"),
    (PLATEAU_README, "cross-entropy Δ −0.0309 to −0.0009, dev", PLATEAU_CHECKPOINTS,
     "seeds.[seed=44].checkpoints.difference.transformer_dep_rel.cross_entropy: =range"),
    (PLATEAU_README, "dev BLEU +0.52 to +2.36; the", PLATEAU_CHECKPOINTS,
     "seeds.[seed=44].checkpoints.difference.transformer_dep_rel.dev_bleu: =range"),
    (PLATEAU_README, "five too (Δ −0.0402 to −0.0240)", PLATEAU_CHECKPOINTS,
     "seeds.[seed=44].checkpoints.difference.dbsa_dep_rel_self.cross_entropy: =range"),
    (PLATEAU_README, "ahead in BLEU at 4 of", PLATEAU_CHECKPOINTS, "seeds.[seed=44].summary.dbsa_dep_rel_self.higher_dev_bleu"),
    (PLATEAU_README, "(−0.01 to +3.05), while", PLATEAU_CHECKPOINTS,
     "seeds.[seed=44].checkpoints.difference.dbsa_dep_rel_self.dev_bleu: =range"),
    (PLATEAU_README, "only +0.28\nahead", PLATEAU_OVER_SEEDS, "dbsa_dep_rel_self.bleu.differences: 44"),
    (PLATEAU_README, "(cross-entropy Δ −0.0403\nto −0.0190, dev", PLATEAU_CHECKPOINTS,
     "seeds.[seed=42].checkpoints.difference.dbsa_enc_dec.cross_entropy: =range"),
    (PLATEAU_README, "dev BLEU +0.74 to +3.11);", PLATEAU_CHECKPOINTS,
     "seeds.[seed=42].checkpoints.difference.dbsa_enc_dec.dev_bleu: =range"),
    (PLATEAU_README, "(Δ −0.0173 to +0.0071)", PLATEAU_CHECKPOINTS,
     "seeds.[seed=43].checkpoints.difference.dbsa_enc_dec.cross_entropy: =range"),
    (PLATEAU_README, "(−1.23 to +0.88), and", PLATEAU_CHECKPOINTS,
     "seeds.[seed=43].checkpoints.difference.dbsa_enc_dec.dev_bleu: =range"),
    (PLATEAU_README, "lower in cross-entropy at 3 of", PLATEAU_CHECKPOINTS,
     "seeds.[seed=43].summary.dbsa_enc_dec.lower_cross_entropy"),
    (PLATEAU_README, "ahead in BLEU at 3 of", PLATEAU_CHECKPOINTS,
     "seeds.[seed=43].summary.dbsa_enc_dec.higher_dev_bleu"),
    (PLATEAU_README, "model is behind (−0.46);", PLATEAU_OVER_SEEDS, "dbsa_enc_dec.bleu.differences: 43"),
    (PLATEAU_README, "five again on both readings (cross-entropy Δ −0.0399 to −0.0140,", PLATEAU_CHECKPOINTS,
     "seeds.[seed=44].checkpoints.difference.dbsa_enc_dec.cross_entropy: =range"),
    (PLATEAU_README, "dev BLEU +0.06 to +3.41). So", PLATEAU_CHECKPOINTS,
     "seeds.[seed=44].checkpoints.difference.dbsa_enc_dec.dev_bleu: =range"),
    (PLATEAU_README, ": 7147, seed", PLATEAU, "[name=dbsa_dep_rel_self].[seed=42].train_seconds"),
    (PLATEAU_README, ": 7132) each", PLATEAU, "[name=dbsa_dep_rel_self].[seed=44].train_seconds"),
    (PLATEAU_README, "lower at 3 of", PLATEAU_CHECKPOINTS,
     "seeds.[seed=43].summary.transformer_dep_rel.lower_cross_entropy"),
    (PLATEAU_README, "score 1.2416–1.2639, its", PLATEAU_CHECKPOINTS,
     "seeds.[seed=42].checkpoints.cross_entropy.baseline: =range"),
    (PLATEAU_README, "average 1.1899)", PLATEAU, "[name=baseline].[seed=42].dev_cross_entropy"),
    (RESULTS, "val −0.93 [−4.30, +2.43]", GRAPH, "half_dim_gate_mean_new_groups.bleu: mean interval"),
    (RESULTS, "DBSA 0.94–1.07×", STEP_SPEED, "train_step_*_dbsa_enc_dec.ratio: =range"),
    (RESULTS, "Transformer_rel 0.94–1.09×", STEP_SPEED, "train_step_*_transformer_rel.ratio: =range"),
    (RESULTS, "dep+rel 0.95–1.08×", STEP_SPEED, "train_step_*_transformer_dep_rel.ratio: =range"),
    (RESULTS, "peak memory 1.50×", STEP_SPEED, "peak_memory_512.ratio"),
    (RESULTS, "dep+rel 0.62×", SERVING, "rows.[what=dep_rel].[sentences=32].ratio_to_baseline"),
    (RESULTS, "the self-parsing model 0.83×", SERVING, "rows.[what=dbsa_dep_rel_self].[sentences=32].ratio_to_baseline"),
    (RESULTS, "syntax-infused 0.64×", SERVING, "rows.[what=syntax_infused].[sentences=32].ratio_to_baseline"),
    (RESULTS, "DBSA 0.92×", SERVING, "rows.[what=dbsa].[sentences=32].ratio_to_baseline"),
    (RESULTS, "Transformer_rel 0.94×", SERVING, "rows.[what=rel].[sentences=32].ratio_to_baseline"),
    (RESULTS, "the Graph-Transformer 0.96×", SERVING, "rows.[what=graph].[sentences=32].ratio_to_baseline"),
    ("docs/serving.md", "serves 0.89× the baseline", SERVING, "rows.[what=dep_rel].[sentences=1].ratio_to_baseline"),
    ("docs/serving.md", "sentence and 0.62× for a", SERVING, "rows.[what=dep_rel].[sentences=32].ratio_to_baseline"),
    ("docs/serving.md", "(45 vs", SERVING, "rows.[what=dep_rel].[sentences=32].sentences_per_s"),
    ("docs/serving.md", "vs 73 sentences/s;", SERVING, "rows.[what=baseline].[sentences=32].sentences_per_s"),
    ("docs/serving.md", "(the self-parsing `dbsa_dep_rel_self` 0.83×", SERVING,
     "rows.[what=dbsa_dep_rel_self].[sentences=32].ratio_to_baseline"),
    (RESULTS, "DBSA + dep+rel 0.90–1.00×", STEP_SPEED_DBSA_DEP_REL, "train_step_*_dbsa_dep_rel.ratio: =range"),
    (RESULTS, "for itself 1.18–1.22×", STEP_SPEED_DBSA_DEP_REL, "train_step_*_dbsa_dep_rel_self.ratio: =range"),
]

NUMBER = re.compile(r"[+−-]?\d+(?:\.\d+)?")


def quoted_numbers(text: str) -> list[tuple[float, int]]:
    """Each number in the text with its count of decimals ("−0.14" is -0.14 to 2; an en dash is a range, not a sign)."""
    found = []
    for token in NUMBER.findall(text):
        plain = token.replace("−", "-").lstrip("+")
        found.append((float(plain), len(plain.split(".")[1]) if "." in plain else 0))
    return found


def _step(node, field: str):
    """One path field applied to a value, or to each item of a list the path already fanned out to."""
    if isinstance(node, list) and not field.startswith("["):
        return [_step(item, field) for item in node]
    if field.startswith("["):
        name, value = field[1:-1].split("=")
        return [item for item in node if str(item.get(name)) == value]
    if "*" in field:
        return [node[key] for key in node if fnmatch.fnmatch(key, field)]
    return node[field]


def _flatten(value) -> list[float]:
    return [number for item in value for number in _flatten(item)] if isinstance(value, list) else [value]


def artifact_values(artifact: str, key: str) -> list[float]:
    """The numbers a key names in an artifact (see the module docstring for the key's form)."""
    data = json.loads((ROOT / artifact).read_text(encoding="utf-8"))
    path, _, take = key.partition(":")
    for field in path.strip().split("."):
        data = _step(data, field)
    take = take.split()
    if take == ["=mean"]:
        values = _flatten(data)
        return [sum(values) / len(values)]
    if take == ["=range"]:
        values = _flatten(data)
        return [min(values), max(values)]
    if take:  # fields of a mapping, or positions in a list (0 is the first)
        return [number for field in take for number in _flatten(data[int(field) if isinstance(data, list) else field])]
    return _flatten(data)


def mismatch(doc_text: str, quote: str, artifact: str, key: str) -> str | None:
    """Why the doc's quote does not hold (absent from the doc, or a number unlike the artifact's), or None."""
    if quote.replace("−", "-") not in doc_text.replace("−", "-"):
        return f"the doc no longer says {quote!r}"
    written, actual = quoted_numbers(quote), artifact_values(artifact, key)
    if len(written) != len(actual):
        return f"{quote!r} has {len(written)} numbers, {artifact} {key} gives {len(actual)}: {actual}"
    for (number, decimals), value in zip(written, actual):
        if not math.isclose(number, round(value + 0.0, decimals), abs_tol=10 ** -(decimals + 3)):
            return f"{quote!r} says {number}, {artifact} {key} gives {value} (rounded: {round(value, decimals)})"
    return None


@pytest.mark.parametrize(("doc", "quote", "artifact", "key"), QUOTES, ids=[f"{q[0]}:{q[1]}" for q in QUOTES])
def test_a_quoted_number_is_the_artifacts(doc: str, quote: str, artifact: str, key: str):
    problem = mismatch((ROOT / doc).read_text(encoding="utf-8"), quote, artifact, key)
    assert problem is None, f"{doc}: {problem}"


def test_a_number_changed_in_the_doc_is_caught():
    """The check is not vacuous: the README with one quoted number edited fails it, naming the number."""
    doc, quote, artifact, key = QUOTES[0]
    edited_quote = quote.replace("+0.88", "+0.89")
    edited = (ROOT / doc).read_text(encoding="utf-8").replace(quote, edited_quote)
    assert "+0.88" in quote and mismatch(edited, edited_quote, artifact, key) == (
        f"{edited_quote!r} says 0.89, {artifact} {key} gives 0.88 (rounded: 0.88)")
    assert mismatch(edited, quote, artifact, key) == f"the doc no longer says {quote!r}"


def test_a_key_reads_filters_globs_and_ranges():
    assert artifact_values(SERVING, "rows.[what=baseline].[sentences=32].ratio_to_baseline") == [1.0]
    low, high = artifact_values(STEP_SPEED, "train_step_*_transformer_dep_rel.ratio: =range")
    assert low < high and len(artifact_values(STEP_SPEED, "train_step_*_transformer_dep_rel.ratio")) == 3
    assert quoted_numbers("+0.88 [−0.14, +1.89] | 5 | 0.95–1.08") == [
        (0.88, 2), (-0.14, 2), (1.89, 2), (5.0, 0), (0.95, 2), (1.08, 2)]
