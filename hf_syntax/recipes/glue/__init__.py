"""GLUE fine-tuning of BERT + POS (Sundararaman et al. 2019, Table 2) and of the plain BERT baseline.

One function, ``run_glue``, takes a task (all eight GLUE tasks), GLUE-layout TSV files or a ``datasets`` dataset,
and a BERT checkpoint; it attaches POS ids with hf_syntax's ``parse_and_align`` map function, fine-tunes with
``Trainer`` for every learning rate of the grid (paper: batch 32, 3 epochs, lr in {2,3,4,5}e-5, chosen per task on
dev), and writes a results JSON plus GLUE-server prediction files for the test split(s) of the best run.
``use_pos=False`` is the baseline: stock ``BertForSequenceClassification``, the same tokenization, seed and
hyper-parameters, no parser. The POS table is drawn from its own generator, so both models start with the same task
head at the same seed; with ``pos_init="zeros"`` or ``pos_gate`` they compute identical logits before the first
update. ``pos_learning_rate`` (default 1e-4) trains the POS parameters (table, gate, concat projection: new to the
checkpoint) at a rate of their own, in their own optimizer parameter groups, under the same warm-up/decay schedule
as BERT's. By default a new summed POS input is gated (see ``schema.DEFAULT_POS_LEARNING_RATE``).

Sequences longer than ``max_length`` WordPieces (default 128 as in BERT's GLUE recipe, at most 512 = BERT's
position table) are truncated with the tokenizer's ``longest_first`` strategy: WordPieces are removed one at a time
from the end of whichever segment is currently longer, so a long premise cannot push the hypothesis out. POS ids are
aligned after tokenization, so a truncated word simply loses its pieces. The number of truncated examples is reported.

Read it top-down, in the order a run goes:
``tasks`` (the eight tasks: files, labels, metrics) -> ``schema`` (``GlueRunConfig``, its file and flags) -> ``data``
(TSV folders or a saved dataset, empty texts, subsampling) -> ``features`` (tokens and POS ids) -> ``model`` (BERT or
BERT + POS, the POS learning rate) -> ``run`` (``run_glue``: one fine-tuning per learning rate, results) ->
``scoring`` (metrics and GLUE-server files). Config loading, ``--config``/``--set`` (the recipe's one command-line
interface; a config file says ``recipe: glue``) and the JSON records are shared with the translation recipe
(``hf_syntax.recipes.config``, ``hf_syntax.recipes.runs``).
"""

