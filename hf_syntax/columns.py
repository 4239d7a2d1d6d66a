"""Every per-token column a syntax batch can carry, described once; featurizer, configs, embeddings, collators and
pipelines read this table instead of keeping their own lists.

A column has its dataset / ``forward`` name, the side it is padded against (``source``: the longest ``input_ids``;
``target``: the longest ``labels``), its pad value (``None``: the tokenizer's pad id), whether its values are
positions in the sequence (head columns, shifted under left padding), its label vocabulary, the short name a model
config uses when the column is an embedded feature (``source_features=["pos"]``) with the config field holding that
embedding's size, the aliases ``features=[...]`` accepts, whether the featurizer produces it by default, and whether
it is a syntax input of the seq2seq models' ``forward``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .labels import CASE_VOCAB, DEPREL_VOCAB, PAD_ID, SUBWORD_TAG_VOCAB, UPOS_VOCAB, LabelVocab


IGNORE_INDEX = -100
"""The value of a position without a target: unsupervised heads, padded labels (PyTorch's cross-entropy default)."""
NO_WORD = -1
"""The word id of a subword that belongs to no word (special tokens)."""
SUBWORD_HEAD_RULES = ("first", "last")
"""Which subword of its head word a word's final subword points to: DBSA's first one, or the last."""


def check_tensor(name: str, values) -> None:
    """``values`` must be a tensor: a Python list was "'list' object has no attribute ..." deep inside the model."""
    import torch  # here, not at the top: the command line reads this module for its options without loading torch

    if not isinstance(values, torch.Tensor):
        raise TypeError(f"`{name}` is a {type(values).__name__}, not a tensor: tokenize with return_tensors='pt' "
                        f"(or wrap it: torch.tensor({name})).")


def check_integer_column(name: str, values, what: str) -> None:
    """``values`` must be a tensor of integers. A float column (a forgotten cast, a dataset read through pandas with
    a NaN in it) was otherwise cast silently (depths) or failed deep inside an embedding or a loss."""
    import torch

    check_tensor(name, values)
    if values.is_floating_point() or values.is_complex() or values.dtype == torch.bool:
        raise ValueError(f"`{name}` holds {values.dtype} values; {what} are integers (torch.long).")
    if not values.dtype.is_signed:  # uint8 wrapped around in differences and cannot hold -1 (special tokens)
        raise ValueError(f"`{name}` holds {values.dtype} values, which have no sign; {what} are signed integers "
                         f"(torch.long): convert it with .long().")


def check_ids(name: str, ids, size: int | None = None, *, shape=None, ignore: int | None = None,
              cause: str = "were they made by another tokenizer than this model's?") -> None:
    """``ids`` must be a (batch, length) tensor of integer ids (of ``shape`` where given) with at least one row and
    column and values in 0 .. ``size`` - 1 (``ignore`` aside, e.g. -100 in labels). An unbatched row failed an
    unpacking deep inside the model, an empty batch or row a reshape or an IndexError, an id out of range an
    IndexError inside an embedding lookup; here each is named with what to change. The values are read only eagerly
    (a compiled graph cannot branch on them)."""
    from transformers.utils import is_torchdynamo_compiling

    check_tensor(name, ids)
    if ids.dim() != 2:
        raise ValueError(f"`{name}` has shape {tuple(ids.shape)}; it must be (batch, length): tokenize with "
                         f"return_tensors='pt' (a single sentence too, as a batch of one: {name}[None]).")
    if shape is not None and ids.shape != shape:
        raise ValueError(f"`{name}` has shape {tuple(ids.shape)}; it must be {tuple(shape)}, as the tokens: one "
                         f"value per token, padded as they are.")
    check_integer_column(name, ids, "ids")
    if not ids.shape[0]:
        raise ValueError(f"`{name}` has shape {tuple(ids.shape)}: a batch of no sentence. Give at least one.")
    if not ids.shape[1]:
        raise ValueError(f"`{name}` has shape {tuple(ids.shape)}: its rows hold no id. Drop empty texts before "
                         f"tokenizing (a tokenizer adds special tokens even to an empty one).")
    if size is None or is_torchdynamo_compiling() or not ids.numel():
        return
    values = ids if ignore is None else ids.masked_fill(ids == ignore, 0)
    low, high = int(values.min()), int(values.max())
    if 0 <= low and high < size:
        return
    allowed = f" (or {ignore})" if ignore is not None else ""
    if low == IGNORE_INDEX and ignore is None and name.startswith("decoder"):
        cause = "-100 marks ignored labels: pass the targets as `labels`, which the model shifts into decoder inputs"
    raise ValueError(f"`{name}` holds values from {low} to {high}, but this model takes 0 .. {size - 1}{allowed}: "
                     f"{cause}")


@dataclass(frozen=True)
class Column:
    name: str
    side: str
    pad: int | None
    is_head: bool = False
    vocab: LabelVocab | None = None
    feature: str | None = None
    size_field: str | None = None
    aliases: tuple[str, ...] = ()
    parsed: str | None = None  # "default" / "optional": a column the featurizer makes from a parse
    syntax_input: bool = False  # a keyword argument of the seq2seq models' forward (see SYNTAX_INPUTS)


COLUMNS = {column.name: column for column in (
    Column("input_ids", "source", pad=None),
    Column("attention_mask", "source", pad=0),
    Column("token_type_ids", "source", pad=0),
    Column("special_tokens_mask", "source", pad=1),
    Column("word_ids", "source", pad=NO_WORD),
    Column("dep_heads", "source", pad=IGNORE_INDEX, is_head=True, aliases=("heads",), parsed="default", syntax_input=True),
    Column("dep_depths", "source", pad=-1, aliases=("depths",), parsed="default", syntax_input=True),
    Column("pos_ids", "source", pad=PAD_ID, vocab=UPOS_VOCAB, feature="pos", size_field="num_pos_tags",
           aliases=("pos", "upos"), parsed="default", syntax_input=True),
    Column("case_ids", "source", pad=PAD_ID, vocab=CASE_VOCAB, feature="case", size_field="num_case_tags",
           aliases=("case",), parsed="default", syntax_input=True),
    Column("subword_tags", "source", pad=PAD_ID, vocab=SUBWORD_TAG_VOCAB, feature="subword_tag",
           size_field="num_subword_tags", aliases=("subword_tag",), parsed="default", syntax_input=True),
    Column("deprel_ids", "source", pad=PAD_ID, vocab=DEPREL_VOCAB, aliases=("deprel",), parsed="optional"),
    Column("labels", "target", pad=IGNORE_INDEX),
    Column("decoder_dep_heads", "target", pad=IGNORE_INDEX, is_head=True, syntax_input=True),
    Column("decoder_input_ids", "target", pad=None),
    Column("decoder_attention_mask", "target", pad=0),
)}

DEFAULT_FEATURES = tuple(name for name, column in COLUMNS.items() if column.parsed == "default")
"""The columns the featurizer makes from a parse unless told otherwise, all named by the models' ``forward``."""
SYNTAX_INPUTS = {side: tuple(name for name, column in COLUMNS.items() if column.syntax_input and column.side == side)
                 for side in ("source", "target")}
"""The syntax columns the seq2seq models' ``forward`` takes, per side: the encoder reads the source ones its config
needs, the decoder the target ones, the losses the gold heads."""
OPTIONAL_FEATURES = tuple(name for name, column in COLUMNS.items() if column.parsed == "optional")
FEATURE_ALIASES = {alias: name for name, column in COLUMNS.items() for alias in column.aliases}
LABEL_VOCABS = {name: column.vocab for name, column in COLUMNS.items() if column.vocab is not None}
EMBEDDED_FEATURES = {column.feature: column for column in COLUMNS.values() if column.feature is not None}
"""Config short name (``source_features`` entry) -> the column it embeds."""
PAD_REFERENCE = {"source": "input_ids", "target": "labels"}
"""The column each side is padded against."""


def normalise_features(features) -> tuple[str, ...]:
    """Canonical column names for ``features`` (aliases such as ``"pos"`` accepted); rejects unknown names."""
    if isinstance(features, str):
        features = (features,)
    if not isinstance(features, (list, tuple)):  # None was "'NoneType' object is not iterable"
        raise TypeError(f"features={features!r}: give a feature name or a list of them from "
                        f"{DEFAULT_FEATURES + OPTIONAL_FEATURES} (aliases: {sorted(FEATURE_ALIASES)}).")
    names = []
    for feature in features:
        name = FEATURE_ALIASES.get(feature, feature)
        if name not in DEFAULT_FEATURES + OPTIONAL_FEATURES:
            raise ValueError(
                f"unknown feature {feature!r}; choose from {DEFAULT_FEATURES + OPTIONAL_FEATURES} "
                f"(aliases: {sorted(FEATURE_ALIASES)})."
            )
        if name not in names:
            names.append(name)
    return tuple(names)


def pad_columns(rows, pad_token_id, pad_to_multiple_of=None, padding_side="right"):
    """Pad feature rows (dicts of lists) into a dict of ``torch.long``/float tensors.

    Source columns are padded to the longest ``input_ids``, target columns to the longest ``labels``, each with its
    own pad value; scalar values (a classification label) are stacked. With left padding, head columns are shifted
    so they still point at the same subwords. Missing, ragged or unknown columns raise ``ValueError`` naming the
    column and the row.
    """
    import torch

    if not rows:
        raise ValueError("cannot pad an empty batch.")
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'right' or 'left'; got {padding_side!r}.")
    keys = list(rows[0].keys())
    for index, row in enumerate(rows):
        if set(row) != set(keys):
            missing, extra = sorted(set(keys) - set(row)), sorted(set(row) - set(keys))
            raise ValueError(
                f"batch row {index} has different columns from row 0 (missing {missing}, extra {extra}); every "
                f"example must carry the same feature columns (featurize the whole dataset the same way)."
            )
    batch = {}
    for side, reference in PAD_REFERENCE.items():
        listed = [isinstance(row.get(reference), (list, tuple)) for row in rows]
        if not any(listed):
            continue
        if not all(listed):
            index = listed.index(False)
            raise ValueError(f"column {reference!r} of batch row {index} is {rows[index][reference]!r}, not a list of "
                             f"token ids like the other rows'; drop that example or re-run the featurizer on it.")
        lengths = [len(row[reference]) for row in rows]
        width = max(lengths)
        if pad_to_multiple_of:
            width = -(-width // pad_to_multiple_of) * pad_to_multiple_of
        left = padding_side == "left" and side == "source"
        for key in [key for key in keys if key in COLUMNS and COLUMNS[key].side == side]:
            column = COLUMNS[key]
            pad_value = pad_token_id if column.pad is None else column.pad
            if pad_value is None:
                raise ValueError(f"cannot pad {key!r}: the tokenizer has no pad token; set tokenizer.pad_token.")
            padded = []
            for index, (row, length) in enumerate(zip(rows, lengths)):
                values = row[key]
                if not isinstance(values, (list, tuple)) or len(values) != length:
                    got = len(values) if isinstance(values, (list, tuple)) else type(values).__name__
                    raise ValueError(
                        f"column {key!r} of batch row {index} has length {got} but {reference!r} has {length}; "
                        f"feature columns must have one value per token (re-run the featurizer on this example)."
                    )
                nested = next((value for value in values if isinstance(value, (list, tuple))), None)
                if nested is not None:  # a row tokenized with return_tensors="pt" is (1, n): torch named no column
                    raise ValueError(f"column {key!r} of batch row {index} holds lists (e.g. {list(nested)[:5]!r}), "
                                     f"not one value per token: give each row flat lists (tokenize without "
                                     f"return_tensors, or take row[0] of a (1, n) tensor).")
                if None in values:  # was "Could not infer dtype of NoneType" from torch
                    raise ValueError(f"column {key!r} of batch row {index} holds None at position "
                                     f"{list(values).index(None)}; every token needs a value (re-run the featurizer "
                                     f"on this example).")
                text = next((value for value in values if isinstance(value, str)), None)
                if text is not None:  # was torch's "too many dimensions 'str'", naming no column
                    raise ValueError(f"column {key!r} of batch row {index} holds strings (e.g. {text!r}); feature "
                                     f"columns are integer ids: map the labels to ids with the label vocabulary "
                                     f"(hf_syntax.labels) or re-run the featurizer.")
                if column.is_head and any(value >= length for value in values):
                    raise ValueError(  # it pointed into the padding, whose loss is 1e37 or inf
                        f"column {key!r} of batch row {index} holds head {max(values)} but the row has {length} "
                        f"tokens: heads are 0-based positions within their own row (-100 for none); re-run the "
                        f"featurizer on this example.")
                fill = [pad_value] * (width - length)
                if left:
                    shift = width - length
                    if column.is_head:
                        values = [value + shift if value >= 0 else value for value in values]
                    padded.append(fill + list(values))
                else:
                    padded.append(list(values) + fill)
            tensor = torch.tensor(padded)
            if width and tensor.is_floating_point():  # a long tensor would have truncated 0.5 to 0 silently
                row, value = next((row, value) for row, values in enumerate(padded) for value in values
                                  if isinstance(value, float))
                raise ValueError(
                    f"column {key!r} holds floats (batch row {row}: {value!r}); feature columns are integer ids or "
                    f"positions: cast the column (dataset.cast_column) or re-run the featurizer."
                )
            batch[key] = tensor.long()
    for key in keys:
        if key in batch:
            continue
        values = [row[key] for row in rows]
        if all(value is None for value in values):  # was "not a known feature column" for labels=None
            raise ValueError(f"column {key!r} is None in every row of this batch: the examples lack it (a target "
                             f"side never featurized?); featurize it, or remove the column (remove_columns=[{key!r}]).")
        if None in values:  # was "not a known feature column and not a scalar label", with the advice to drop it
            raise ValueError(f"column {key!r} is None in batch row {values.index(None)} but set in others: every "
                             f"example needs a value; drop those without one (dataset.filter(lambda row: "
                             f"row[{key!r}] is not None)).")
        if any(isinstance(value, (list, tuple)) for value in values):
            raise ValueError(
                f"column {key!r} needs the column {PAD_REFERENCE[COLUMNS[key].side]!r} in the batch to be padded "
                f"against; it is missing."
                if key in COLUMNS else
                f"column {key!r} is a per-token list but not a known feature column ({sorted(COLUMNS)}); remove it "
                f"from the dataset (remove_columns=[{key!r}])."
            )
        if all(isinstance(value, int) for value in values):
            batch[key] = torch.tensor(values, dtype=torch.long)
        elif all(isinstance(value, (int, float)) for value in values):
            batch[key] = torch.tensor(values, dtype=torch.float)
        else:
            raise ValueError(
                f"column {key!r} is not a known feature column and not a scalar label ({type(values[0]).__name__}); "
                f"remove it from the dataset (remove_columns=[{key!r}]) or let Trainer drop unused columns."
            )
    return batch


__all__ = [
    "COLUMNS", "Column", "DEFAULT_FEATURES", "EMBEDDED_FEATURES", "FEATURE_ALIASES", "IGNORE_INDEX", "LABEL_VOCABS",
    "NO_WORD", "OPTIONAL_FEATURES", "SYNTAX_INPUTS", "normalise_features", "pad_columns",
]
