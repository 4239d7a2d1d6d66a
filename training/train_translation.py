"""Train a translation model from a config file (see training/configs/*.yaml).

    python training/train_translation.py --config training/configs/demo_ja_en.yaml
    python training/train_translation.py --config my.yaml --set training.max_steps=2000 --resume_from_checkpoint latest
    accelerate launch training/train_translation.py --config my.yaml      # or torchrun --nproc_per_node 2 ...

Prints the final summary (BLEU, chrF, steps, time, a few translations) and writes it to <output_dir>/summary.json;
the Hub-ready model folder is <output_dir>/model.
"""

from hf_syntax.recipes.translation import main

if __name__ == "__main__":
    raise SystemExit(main())
