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

import logging
import re

import torch

from .columns import pad_columns
from .featurizer import SyntaxFeaturizer
from .parse_head_trees import word_heads_from_parse
from .parsers import ParserNotAvailableError

logger = logging.getLogger(__name__)


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


def _words(pipe, reading, length: int) -> tuple[list[str], list[int]]:
    """The source's words and the word index of every one of its first ``length`` subwords (-1 for special tokens).

    When the config names the source parser, these are the parser's words aligned as the featurizer aligned them
    in training ("do" "n't" for "don't"): the parse head learnt its heads over those words. Without a parser (or
    where it is not installed: an exported DBSA model's Space needs none to translate, so the log says so) they
    are the whitespace words of pre-split text, else the tokenizer's own pre-tokenized words (which may split a
    parser's word, so a within-word link can be drawn as a dependency).
    """
    featurizer = pipe.featurizer
    spec = featurizer.parser_spec if featurizer is not None else getattr(pipe.model.config, "source_parser", None)
    text = reading.text
    if spec:
        featurizer = SyntaxFeaturizer(pipe.tokenizer, parser=spec, features=("dep_heads",), max_length=length,
                                      return_word_ids=True)
        try:
            tree = reading.tree or featurizer.source_tree(text.split() if reading.pretokenized else text)
        except ParserNotAvailableError as error:
            logger.warning("the predicted tree is drawn over the text's whitespace words or the tokenizer's, not "
                           "the words of %s that the model was trained on: %s", spec, error)
        else:
            return list(tree.words), featurizer(trees=tree)["word_ids"]
    encoding = pipe.tokenizer(text, return_offsets_mapping=True, truncation=True, max_length=length)
    if not reading.pretokenized:
        word_ids = [-1 if word is None else word for word in encoding.word_ids()]
        return [text[slice(*encoding.word_to_chars(word))] for word in range(max(word_ids) + 1)], word_ids
    matches = list(re.finditer(r"\S+", text))
    word_ids = []
    for start, end in encoding["offset_mapping"]:
        inside = [index for index, match in enumerate(matches) if match.start() <= start < match.end()]
        word_ids.append(inside[0] if end > start and inside else -1)
    return [match.group() for match in matches], word_ids


@torch.no_grad()
def predicted_source_tree(pipe, source, pretokenized: bool | None = None) -> dict | None:
    """DBSA's own parse of the source: the encoder parse head's maximum spanning tree over the words it was trained
    on (``_words``), or None for a model without an encoder parse head."""
    config = pipe.model.config
    if not getattr(config, "parse_layer_encoder", 0):
        return None
    reading = _reading(pipe, source, pretokenized)
    inputs = model_inputs(pipe, reading)
    words, word_ids = _words(pipe, reading, inputs["input_ids"].shape[1])
    drawn = sorted({word for word in word_ids if word >= 0})  # a word whose subwords were all cut off is not drawn
    number = {word: index for index, word in enumerate(drawn)}
    encoder = pipe.model.get_encoder()
    encoded = encoder(**{name: value.to(pipe.model.device) for name, value in inputs.items()})
    heads = word_heads_from_parse(encoded.parse_log_probs[0], [number.get(word, -1) for word in word_ids],
                                  head_rule=getattr(config, "subword_head_rule", "first"))
    surfaces = [words[word] for word in drawn]
    return {"words": surfaces, "heads": heads, "tags": [""] * len(surfaces), "labels": [""] * len(surfaces)}


__all__ = ["model_inputs", "pos_tags", "predicted_source_tree", "source_tree"]
