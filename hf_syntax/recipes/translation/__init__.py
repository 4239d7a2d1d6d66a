"""Translation training recipe on ``Seq2SeqTrainer``: one config file in, a trained Hub-ready model + summary out.

The recipe is variant-agnostic: ``model.type`` is any registered seq2seq ``model_type`` (``syntax_transformer``
and its paper variants, or ``marian`` as a reference) or a named architecture of ``hf_syntax.variants.ARCHITECTURES``
(``dbsa_enc_dec``, ``transformer_dep_rel``, ...: its preset, under ``model.kwargs``), with ``model.kwargs`` for its
config, and the optional ``features`` section is handed to the syntax-feature map function unchanged (a
``data.dataset`` made by ``hf-syntax preprocess`` brings its feature columns and tokenizer along, and is not parsed
again). Everything else is plain Transformers: inverse-sqrt schedule with warm-up, generation-based evaluation with
local BLEU/chrF metrics, best checkpoint by BLEU, ``resume_from_checkpoint``, and ``accelerate launch``/``torchrun``
through the Trainer.

Read it top-down, in the order a run goes:
``schema`` (the config file's sections) -> ``data`` (pairs and token ids) -> ``features`` (parses as columns) ->
``tokenization`` (train or load the vocabulary) -> ``model`` (config -> fresh model) -> ``trainer`` (the Trainer
subclass, collator and fixed arguments) -> ``resume`` (whether a checkpoint was trained with this recipe) -> ``run``
(``train_translation`` and the command line) -> ``publish`` (the Hub-ready folder and summary). What it shares with
the GLUE recipe (strict YAML + ``--set``, resume, JSON records) is in ``hf_syntax.recipes.config`` and
``hf_syntax.recipes.runs``.
"""
