"""Reading a trained model: cross-attention heat maps (``attention_plots.py``) and an encoder parse scored on gold
trees (``parse_scores.py``). Trees from a DBSA parse head travel with exported models, so they live in the
top-level ``hf_syntax/parse_head_trees.py``."""
