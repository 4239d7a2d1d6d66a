"""Collators that pad every syntax feature column with its own pad value.

``DataCollatorForSeq2Seq`` pads only ``input_ids``/``attention_mask``/``labels``; a syntax dataset also carries
feature columns, each with its own pad value (``hf_syntax.columns.COLUMNS``). The padding itself is ``hf_syntax.columns.pad_columns`` -- the same code the
inference featurizer uses -- so training and inference batches cannot drift apart. Ragged, missing or unknown
columns raise an error naming the column and the example.
"""

from __future__ import annotations

import torch

from hf_syntax.columns import pad_columns


class _SyntaxCollator:
    required_columns: tuple[str, ...] = ("input_ids",)

    def __init__(self, tokenizer, pad_to_multiple_of: int | None = None, required_features=()):
        if not hasattr(tokenizer, "pad_token_id"):  # None was "'NoneType' object has no attribute 'pad_token_id'"
            raise TypeError(f"{type(self).__name__} needs the tokenizer the examples were made with; got "
                            f"{type(tokenizer).__name__}.")
        if tokenizer.pad_token_id is None:
            raise ValueError(
                f"{type(self).__name__}: the tokenizer has no pad token; set tokenizer.pad_token before collating."
            )
        if pad_to_multiple_of is not None and (isinstance(pad_to_multiple_of, bool)
                                               or not isinstance(pad_to_multiple_of, int) or pad_to_multiple_of < 1):
            raise ValueError(f"{type(self).__name__}: pad_to_multiple_of={pad_to_multiple_of!r}; give a whole number "
                             f">= 1 (e.g. 8), or None for no rounding.")
        self.tokenizer = tokenizer
        self.pad_to_multiple_of = pad_to_multiple_of
        if isinstance(required_features, str):  # one name, not its characters
            required_features = (required_features,)
        self.required = tuple(self.required_columns) + tuple(required_features)

    def __call__(self, examples):
        if isinstance(examples, dict):
            raise ValueError(f"{type(self).__name__} takes a list of examples (one dict per row), as a Trainer passes "
                             f"them; got one dict of columns {sorted(examples)} (a sliced dataset, dataset[:8]): pass "
                             f"[dataset[i] for i in range(8)] instead.")
        if examples is None or isinstance(examples, (str, bytes)) or not hasattr(examples, "__iter__"):
            raise TypeError(f"{type(self).__name__} takes a list of examples (one dict per row); got "
                            f"{type(examples).__name__}.")  # None was "'NoneType' object is not iterable"
        # Rows of a dataset formatted for torch or numpy hold arrays: padded as the lists they are.
        examples = [{key: value.tolist() if hasattr(value, "tolist") else value for key, value in example.items()}
                    for example in examples]
        if not examples:
            raise ValueError(f"{type(self).__name__} got an empty batch.")
        missing = [column for column in self.required if column not in examples[0]]
        if missing:
            raise ValueError(
                f"{type(self).__name__}: the examples lack the columns {missing} (they have {sorted(examples[0])}). "
                f"Attach them with hf_syntax.data.features.parse_and_align(...) before training."
            )
        return self._pad(examples)

    def _pad(self, examples: list[dict]) -> dict:
        return pad_columns(examples, self.tokenizer.pad_token_id, pad_to_multiple_of=self.pad_to_multiple_of,
                           padding_side=self.tokenizer.padding_side)


class SyntaxSeq2SeqCollator(_SyntaxCollator):
    """Pads source columns to the longest ``input_ids`` and ``labels``/``decoder_dep_heads`` to the longest labels.

    ``required_features`` (e.g. ``("dep_heads", "decoder_dep_heads")``) makes a batch without them an error instead
    of a silently feature-less batch. The model shifts labels into decoder inputs itself.
    """

    required_columns = ("input_ids", "labels")

    def __init__(self, tokenizer, pad_to_multiple_of: int | None = None, required_features=(), model=None):
        super().__init__(tokenizer, pad_to_multiple_of, required_features)
        self.model = model

    def __call__(self, examples):
        """With ``model`` given, also ``decoder_input_ids`` (as ``DataCollatorForSeq2Seq`` does): a Trainer that
        smooths labels itself (``label_smoothing_factor``) pops ``labels``, and a stock model such as Marian then
        has no decoder input at all."""
        batch = super().__call__(examples)
        if self.model is not None and hasattr(self.model, "prepare_decoder_input_ids_from_labels"):
            batch["decoder_input_ids"] = self.model.prepare_decoder_input_ids_from_labels(labels=batch["labels"])
        return batch


class SyntaxClassificationCollator(_SyntaxCollator):
    """Pads the source columns (e.g. ``pos_ids`` for BERT+POS); a scalar ``labels`` column is stacked as is
    (``long`` for classes, ``float`` for regression such as STS-B), multi-label targets (one float per class) as
    floats, and per-token labels (token classification) are padded with -100."""

    def _pad(self, examples: list[dict]) -> dict:
        """Multi-label targets were padded as token ids, and refused as floats in a column of ids."""
        labels = [example.get("labels") for example in examples]
        if not any(isinstance(value, (list, tuple)) and any(isinstance(x, float) for x in value) for value in labels):
            return super()._pad(examples)
        widths = [len(value) if isinstance(value, (list, tuple)) else None for value in labels]
        if len(set(widths)) != 1:
            row = next(index for index, width in enumerate(widths) if width != widths[0])
            raise ValueError(f"`labels` holds multi-label targets (one float per class), but batch row {row} has "
                             f"{labels[row]!r} where row 0 has {widths[0]} values: give every row one value per "
                             f"class (num_labels).")
        batch = super()._pad([{key: value for key, value in example.items() if key != "labels"}
                              for example in examples])
        batch["labels"] = torch.tensor(labels, dtype=torch.float)
        return batch
