"""What a demo shows next to a translation: the tree the model was given, the tree DBSA predicts, the model inputs.

Hub-portable like the pipeline (relative imports only): ``export`` copies it into every exported folder, and the
Space app loads it from there with ``transformers.dynamic_module_utils.get_class_from_dynamic_module``, so the
demo works where hf_syntax is not installed. Trees are returned as plain dicts ``{"words", "heads", "tags",
"labels"}`` (heads CoNLL-U style: 1-based, 0 = root) that any drawing code (displaCy, an SVG) can use.

The translation views take a text or the ``SourceReading`` that ``pipe.read(text)`` returns (``pos_tags`` a text or
a tree from the classification pipeline's ``read``): a demo reads the sentence once and passes the reading to every
view, so the sentence is parsed once for the model and the drawings.
"""

from __future__ import annotations

import re

import torch

from .columns import pad_columns
from .parse_head_trees import word_heads_from_parse


def _as_drawing(tree) -> dict:
    return {"words": list(tree.words), "heads": list(tree.heads),
            "tags": list(tree.upos) if tree.upos else [""] * len(tree.words),
            "labels": list(tree.deprels) if tree.deprels else [""] * len(tree.words)}


def _reading(pipe, source, pretokenized: bool | None):
    """A text is read (and parsed) now; a reading from ``pipe.read`` is used as it is, parsed already."""
    return pipe.read(source, pretokenized) if isinstance(source, str) else source


def source_tree(pipe, source, pretokenized: bool | None = None) -> dict | None:
    """The parse whose features the translation pipeline feeds the model, or None for a model that reads no tree."""
    tree = _reading(pipe, source, pretokenized).tree
    return None if tree is None else _as_drawing(tree)


def pos_tags(pipe, source) -> list[tuple[str, str]]:
    """(word, UPOS) pairs that BERT+POS receives for a text, or for one of the trees ``pipe.read`` returned (its
    WordPieces take their word's tag)."""
    tree = pipe.read(source)[0] if isinstance(source, str) else source
    return list(zip(tree.words, tree.upos))


def model_inputs(pipe, source, pretokenized: bool | None = None) -> dict:
    """The batch of one sentence the translation pipeline gives ``generate`` (ids, mask and feature columns)."""
    return pad_columns([pipe.encode(_reading(pipe, source, pretokenized))], pipe.tokenizer.pad_token_id)


def _word_ids(pipe, text: str, offsets, pretokenized: bool) -> list[int]:
    """Word index of every subword (-1 for special tokens): whitespace words for a model trained on pre-split
    text, else the tokenizer's own pre-tokenized words."""
    if pretokenized:
        spans = [match.span() for match in re.finditer(r"\S+", text)]
        word_ids = []
        for start, end in offsets:
            inside = [index for index, (left, right) in enumerate(spans) if left <= start < right]
            word_ids.append(inside[0] if end > start and inside else -1)
        return word_ids
    encoding = pipe.tokenizer(text, truncation=True, max_length=len(offsets))
    return [-1 if word is None else word for word in encoding.word_ids()]


@torch.no_grad()
def predicted_source_tree(pipe, source, pretokenized: bool | None = None) -> dict | None:
    """DBSA's own parse of the source: the encoder parse head's maximum spanning tree over words, or None for a
    model without an encoder parse head."""
    config = pipe.model.config
    if not getattr(config, "parse_layer_encoder", 0):
        return None
    reading = _reading(pipe, source, pretokenized)
    text, pretokenized = reading.text, reading.pretokenized
    inputs = model_inputs(pipe, reading)
    offsets = pipe.tokenizer(text, return_offsets_mapping=True, truncation=True,
                             max_length=inputs["input_ids"].shape[1])["offset_mapping"]
    word_ids = _word_ids(pipe, text, offsets, pretokenized)
    spans = {}  # word -> its characters; words whose subwords truncation cut off are not drawn
    for word, (start, end) in zip(word_ids, offsets):
        if word >= 0:
            left, right = spans.get(word, (start, end))
            spans[word] = (min(left, start), max(right, end))
    encoder = pipe.model.get_encoder()
    encoded = encoder(**{name: value.to(pipe.model.device) for name, value in inputs.items()})
    heads = word_heads_from_parse(encoded.parse_log_probs[0], word_ids,
                                  head_rule=getattr(config, "subword_head_rule", "first"))
    surfaces = [text[start:end] for start, end in (spans[word] for word in sorted(spans))]
    return {"words": surfaces, "heads": heads, "tags": [""] * len(surfaces), "labels": [""] * len(surfaces)}


__all__ = ["model_inputs", "pos_tags", "predicted_source_tree", "source_tree"]
