"""Fine-tune BERT + POS (or, with --set use_pos=false, plain BERT) on a GLUE task; see hf_syntax.recipes.glue.

    python training/run_glue_pos.py --config training/configs/glue_rte_pos.yaml --set max_steps=100
    python training/run_glue_pos.py --set task=cola --set data_dir=glue_data --set model_name_or_path=bert-base-uncased \\
        --set output_dir=runs/cola_pos --set use_pos=false

A `--config` file holds GlueRunConfig fields (with `recipe: glue`) and `--set key=value` overrides them, as in the
translation recipe, so `hf-syntax train --config <glue config>` runs it too. Writes <output_dir>/results.json, one
folder per learning rate (model, run.json, test predictions) and the best run's GLUE-server files in
<output_dir>/glue_submission/.
"""

from hf_syntax.recipes.glue.run import main

if __name__ == "__main__":
    main()
