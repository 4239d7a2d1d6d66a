"""Fine-tune BERT + POS (or, with --no_pos, plain BERT) on a GLUE task; see hf_syntax.recipes.glue.

    python training/run_glue_pos.py --task cola --data_dir ../shared/data/glue \\
        --model_name_or_path bert-base-uncased --pos_parser spacy:en_core_web_sm --output_dir runs/cola_pos

Add --pos_init zeros --pos_learning_rate 1e-3 (or --pos_gate) to start exactly as the BERT checkpoint and still let
the POS input learn.

Writes <output_dir>/results.json, one folder per learning rate (model, run.json, test predictions) and the best
run's GLUE-server files in <output_dir>/glue_submission/.
"""

from __future__ import annotations

import argparse
import json

from hf_syntax.configuration_bert_pos import POS_COMBINE_MODES, POS_INIT_MODES
from hf_syntax.recipes.glue import EMPTY_TEXT_POLICIES, GLUE_TASKS, PAPER_LEARNING_RATES, GlueRunConfig, run_glue


def parse_arguments(argv=None) -> GlueRunConfig:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", required=True, choices=sorted(GLUE_TASKS))
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--model_name_or_path", required=True,
                        help="a BERT checkpoint (model_type 'bert' or 'bert_pos')")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--data_dir", help="GLUE folder (with <Task>/ subfolders) or one task's folder of TSV files")
    source.add_argument("--dataset_path", help="a DatasetDict saved with save_to_disk, Hub 'glue' column names")
    parser.add_argument("--no_pos", action="store_true", help="plain BERT baseline, everything else identical")
    parser.add_argument("--pos_parser", default="spacy:en_core_web_sm", help="parser spec that tags the text")
    parser.add_argument("--pos_combine", choices=POS_COMBINE_MODES,
                        help="sum (paper, default) or concat + projection; a bert_pos checkpoint keeps its own")
    parser.add_argument("--pos_init", choices=POS_INIT_MODES, default="normal",
                        help="a new POS table: normal(0, initializer_range) or zeros (= the base BERT until trained)")
    parser.add_argument("--pos_gate", action="store_true",
                        help="scale a new POS embedding by a learned scalar starting at 0 (= the base BERT at step 0)")
    parser.add_argument("--pos_learning_rate", type=float,
                        help="learning rate of the POS parameters (table, gate, projection); default: --learning_rates")
    parser.add_argument("--learning_rates", type=float, nargs="+", default=list(PAPER_LEARNING_RATES),
                        help="grid; the best on dev is reported (paper: 2e-5 3e-5 4e-5 5e-5)")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--max_steps", type=int, default=-1, help="stop after this many steps (overrides epochs)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--max_length", type=int, default=128, help="WordPieces per example (<= 512), longest_first")
    parser.add_argument("--empty_text", default="error", choices=EMPTY_TEXT_POLICIES)
    parser.add_argument("--max_train_samples", type=int)
    parser.add_argument("--max_eval_samples", type=int)
    parser.add_argument("--num_proc", type=int, default=1, help="processes for parsing")
    parser.add_argument("--featurized_cache_dir",
                        help="keep the parsed + aligned splits here; later runs (other seeds) reuse them")
    parser.add_argument("--no_save_model", action="store_true")
    parser.add_argument("--no_predict_test", action="store_true")
    arguments = parser.parse_args(argv)
    return GlueRunConfig(
        task=arguments.task,
        output_dir=arguments.output_dir,
        model_name_or_path=arguments.model_name_or_path,
        data_dir=arguments.data_dir,
        dataset_path=arguments.dataset_path,
        use_pos=not arguments.no_pos,
        pos_parser=arguments.pos_parser,
        pos_combine=arguments.pos_combine,
        pos_init=arguments.pos_init,
        pos_gate=arguments.pos_gate,
        pos_learning_rate=arguments.pos_learning_rate,
        learning_rates=tuple(arguments.learning_rates),
        batch_size=arguments.batch_size,
        epochs=arguments.epochs,
        max_steps=arguments.max_steps,
        seed=arguments.seed,
        max_length=arguments.max_length,
        empty_text=arguments.empty_text,
        max_train_samples=arguments.max_train_samples,
        max_eval_samples=arguments.max_eval_samples,
        num_proc=arguments.num_proc,
        featurized_cache_dir=arguments.featurized_cache_dir,
        save_model=not arguments.no_save_model,
        predict_test=not arguments.no_predict_test,
    )


def main(argv=None) -> None:
    summary = run_glue(parse_arguments(argv))
    print(json.dumps({"task": summary["task"], "variant": summary["variant"], "best": summary["best"]}, indent=2))


if __name__ == "__main__":
    main()
