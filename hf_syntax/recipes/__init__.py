"""Training recipes: ``translation/`` (every seq2seq variant on ``Seq2SeqTrainer``) and ``glue/`` (BERT + POS on
``Trainer``), each a package read top-down from its ``__init__``. What they share is written once: ``config``
(YAML/JSON files -> strict dataclasses, ``--set`` overrides) and ``runs`` (``--config``/``--set`` flags, resuming from
a checkpoint, the JSON records a run writes)."""
