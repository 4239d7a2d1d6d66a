"""Train a translation model from a config file (see training/configs/*.yaml).

    python training/train_translation.py --config training/configs/demo_ja_en.yaml
    python training/train_translation.py --config my.yaml --set training.max_steps=2000 --resume_from_checkpoint latest
    accelerate launch training/train_translation.py --config my.yaml      # or torchrun --nproc_per_node 2 ...

Every seq2seq variant trains from the same config: ``model.type`` is a model type (``dbsa``, ``dep_rpe``, ...) or a
named architecture of ``hf_syntax.ARCHITECTURES`` (``dbsa_enc_dec``, ``transformer_dep_rel``, ...), and the
``features`` section supplies the parses the variant trains on, e.g.

    python training/train_translation.py --config training/configs/demo_ja_en.yaml --set model.type=dbsa_enc_dec \
        --set 'features={src_parser: "spacy:ja_ginza", tgt_parser: "spacy:en_core_web_sm", pretokenized: true,
                         features: [dep_heads]}'

DBSA runs log ``translation_loss``, ``encoder_parse_loss`` and ``decoder_parse_loss`` next to ``loss``, and on each
logged step the gradient norms of the translation loss and of the weighted parse losses (``grad_norm_translation``,
``grad_norm_parse``, next to the Trainer's ``grad_norm``). The DBSA diagnosis options are config values too, e.g.
``--set model.kwargs.parse_score_form=scaled --set model.kwargs.parse_loss_warmup_steps=500
--set training.max_grad_norm=0`` (0 = no clipping); see ``DbsaConfig``.
``--push_to_hub --hub_model_id me/name`` upload the final model folder (what ``hf-syntax export`` writes) when the run
ends. ``hf-syntax train`` is the same command.

Prints the final summary (BLEU, chrF, steps, time, a few translations) and writes it to <output_dir>/summary.json;
the Hub-ready model folder is <output_dir>/model.
"""

from hf_syntax.recipes.translation.run import main

if __name__ == "__main__":
    raise SystemExit(main())
