"""Pipelines that turn raw text into what a syntax-aware model needs, then translate or classify it.

* ``SyntaxTranslationPipeline`` (task ``"translation"``): every seq2seq variant. When the model's config says its
  ``forward`` needs source features (``config.needs_source_features``: dependency depths, POS/case/subword tags),
  the pipeline parses the text with the parser the model was trained with (``config.source_parser``) and aligns the
  tree to the subwords with ``SyntaxFeaturizer``; a list of texts is parsed in one parser call (``SourceReader`` in
  ``source_reading.py``). DBSA, the baseline and the Graph-Transformer need no parser.
* ``PosTextClassificationPipeline`` (task ``"text-classification"``): BERT+POS. Every WordPiece gets its word's
  UPOS tag from ``config.pos_parser``.

This module is Hub-portable: it imports the featurizer with relative imports, so ``pipeline.save_pretrained``
copies ``source_reading.py``, ``featurizer.py``, ``parsers.py`` and the modules they import next to it, and
``pipeline(model=folder, trust_remote_code=True)`` works where hf_syntax is not installed (the parser package must
be; if it is not, the error names the pip package).

Only ``"translation"`` is registered when this module is imported: transformers 5 removed its built-in translation
task, so nothing is shadowed. ``"text-classification"`` is a built-in task; registering over it at import would
change ``pipeline("text-classification", ...)`` for every model in the process, so ``register_for_saving`` does it
only around a save (a folder's ``config.custom_pipelines`` entry is looked up before the built-in tasks).
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager

from transformers import (
    AutoModelForSeq2SeqLM, AutoModelForSequenceClassification, AutoTokenizer, Pipeline, PreTrainedTokenizerBase,
)
from transformers.pipelines import PIPELINE_REGISTRY, REMOVED_TASKS, TextClassificationPipeline

from .columns import pad_columns
from .featurizer import SyntaxFeaturizer
from .folder_layout import TARGET_TOKENIZER_DIR
from .generation_checks import GENERATION_COUNTS, check_generation_count, check_output_limit
from .parsers import get_parser
from .source_reading import (
    EmptyInputError, SourceReader, SourceReading, check_sources, check_texts, featurizer_max_length,
)
from .text_checks import InvalidTextError, is_hidden, strip_invisible
from .trees import WordTree

logger = logging.getLogger(__name__)

TRANSLATION_TASK = "translation"
CLASSIFICATION_TASK = "text-classification"
SCORE_FUNCTIONS = ("sigmoid", "softmax", "none")
"""What the classification pipeline's ``function_to_apply`` takes (transformers' ``ClassificationFunction``)."""

class SyntaxTranslationPipeline(Pipeline):
    """Translate text with any hf_syntax seq2seq variant; parses on the fly when the model needs features.

    ``pipe("text")`` -> ``[{"translation_text": ...}]``; a list gives one such dict per text. Generation settings
    (``num_beams``, ``max_new_tokens``, ...) go to ``generate`` on top of the model's generation config. As in the
    translation pipeline of transformers 4: ``return_tensors=True`` gives ``translation_token_ids`` instead of the
    text, and ``clean_up_tokenization_spaces`` goes to the decoding.
    ``pretokenized=True``: the texts are space-separated words (as in a pre-tokenized training corpus such as
    small_parallel_enja), parsed as given instead of re-segmented by the parser. The default is
    ``config.source_pretokenized``, i.e. what the model was trained on; with that default, a text containing no
    whitespace at all (an unsegmented Japanese sentence from a widget or an endpoint) is segmented by the parser
    instead of becoming one single "word", and the log says so once.
    ``target_tokenizer``: the target-side tokenizer for models trained with separate vocabularies (loaded from the
    model's ``target_tokenizer/`` subfolder when there is one).
    ``source_parser``: read the sources' trees with this parser instead of ``config.source_parser``, e.g.
    ``"conllu:trees.conllu"``: trees the model's parser made elsewhere (``hf-syntax parse``), for a machine that has
    no parser installed.
    """

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True

    def __init__(self, *args, target_tokenizer=None, load_parser: bool = True, source_parser: str | None = None,
                 **kwargs):
        """``load_parser=False`` leaves the parser unloaded until a text needs it (an export only saves the
        pipeline, and a GPU machine that trained on pre-parsed data may have no parser installed)."""
        super().__init__(*args, **kwargs)
        if self.tokenizer is None:
            raise ValueError("SyntaxTranslationPipeline needs the model's tokenizer (pass tokenizer=...).")
        self.target_tokenizer = target_tokenizer or self._saved_target_tokenizer() or self.tokenizer
        config = self.model.config
        separate = getattr(config, "decoder_vocab_size", None) not in (None, config.vocab_size)
        if separate and self.target_tokenizer is self.tokenizer:
            raise ValueError(
                f"this model has separate source ({config.vocab_size}) and target ({config.decoder_vocab_size}) "
                f"vocabularies, but no target tokenizer was found, so its output would be decoded with the source "
                f"vocabulary. Pass target_tokenizer=... or save it in the model folder's {TARGET_TOKENIZER_DIR}/."
            )
        self.needed_features = tuple(getattr(self.model.config, "needs_source_features", ()))
        self.featurizer = self._make_featurizer(load_parser, source_parser) if self.needed_features else None
        self.reader = SourceReader(config, self.featurizer, self.tokenizer)

    def _saved_target_tokenizer(self):
        """The ``target_tokenizer/`` subfolder of the model folder or Hub repo, if the model has one."""
        name = getattr(self.model.config, "_name_or_path", None) or getattr(self.model, "name_or_path", None)
        if not name:
            return None
        if os.path.isdir(name):
            folder = os.path.join(name, TARGET_TOKENIZER_DIR)
            return AutoTokenizer.from_pretrained(folder) if os.path.isdir(folder) else None
        try:
            return AutoTokenizer.from_pretrained(name, subfolder=TARGET_TOKENIZER_DIR)
        except (OSError, ValueError):
            return None

    def _make_featurizer(self, load_parser: bool, source_parser: str | None) -> SyntaxFeaturizer:
        """The featurizer the model was trained with, reading trees with ``source_parser`` if given; loads the
        parser now (unless told not to) so a missing one fails at creation."""
        config = self.model.config
        if not (source_parser or config.source_parser):
            raise ValueError(
                f"this {config.model_type} model needs {list(self.needed_features)} at inference but its config "
                f"names no source_parser; set model.config.source_parser to the parser it was trained with "
                f"(e.g. 'spacy:ja_ginza') and save it again."
            )
        featurizer = SyntaxFeaturizer(
            self.tokenizer, parser=source_parser or config.source_parser, features=self.needed_features,
            head_rule=getattr(config, "subword_head_rule", "first"),
            max_length=featurizer_max_length(self.tokenizer, config),
        )
        trained_with = getattr(config, "feature_labels", None) or {}
        for column, vocabulary in featurizer.label_vocabularies.items():
            if column in trained_with and trained_with[column] != vocabulary:
                raise ValueError(
                    f"the model's {column} vocabulary {trained_with[column]} differs from this featurizer's "
                    f"{vocabulary}; the ids would mean other labels. Use the hf_syntax version the model was "
                    f"trained with."
                )
        if load_parser:
            get_parser(featurizer.parser_spec)
        return featurizer

    def __call__(self, inputs, **kwargs):
        """A text gives ``[{"translation_text": ...}]``; a list of texts (or of ``read`` results) one such dict per
        text. Anything else is refused in one line (``check_sources``)."""
        if isinstance(inputs, (list, tuple)):
            # The whole list is read (checked, segmented, parsed) here: one parser call, not one per text. Readings
            # already made (the Endpoint handler checks their length first) are translated as they are.
            readings = inputs if inputs and all(isinstance(item, SourceReading) for item in inputs) else \
                self.reader.read_batch(inputs, kwargs.get("pretokenized"))
            results = super().__call__(readings, **kwargs)
            return [result[0] for result in results] if all(len(result) == 1 for result in results) else results
        check_sources(inputs)
        return super().__call__(inputs, **kwargs)

    def _sanitize_parameters(self, skip_special_tokens=None, pretokenized=None, return_tensors=None, return_text=None,
                             clean_up_tokenization_spaces=None, src_lang=None, tgt_lang=None, **generate_kwargs):
        if src_lang is not None or tgt_lang is not None:
            raise ValueError("This model translates one language pair, the one it was trained on; src_lang/tgt_lang "
                             "choose the languages of multilingual models only: drop them.")
        if return_tensors and return_text:
            raise ValueError("`return_text` and `return_tensors` are mutually exclusive: ask for one.")
        for name, value in (("skip_special_tokens", skip_special_tokens),
                            ("clean_up_tokenization_spaces", clean_up_tokenization_spaces)):
            if value is not None and not isinstance(value, bool):  # "no" failed inside the tokenizers library
                raise ValueError(f"{name}={value!r}: give True or False.")
        for name in GENERATION_COUNTS:
            check_generation_count(name, generate_kwargs.get(name))
        check_pretokenized(pretokenized)
        saved = getattr(self.model, "generation_config", None)
        check_output_limit(generate_kwargs.get("max_new_tokens"), generate_kwargs.get("max_length"),
                           generate_kwargs.get("forced_eos_token_id", getattr(saved, "forced_eos_token_id", None)),
                           getattr(self.model.config, "max_position_embeddings", None))
        if (generate_kwargs.get("max_new_tokens") is not None and "max_length" not in generate_kwargs
                and saved is not None and saved.max_new_tokens is None and saved.max_length is not None):
            # The model limits its output by max_length (as the recipe saves it): say the caller's limit the same
            # way (+1, the decoder start token) so generate does not warn that both limits were set.
            generate_kwargs["max_length"] = generate_kwargs.pop("max_new_tokens") + 1
        preprocess = {} if pretokenized is None else {"pretokenized": pretokenized}
        postprocess = {key: value for key, value in (("skip_special_tokens", skip_special_tokens),
                                                     ("clean_up_tokenization_spaces", clean_up_tokenization_spaces),
                                                     ("return_tensors", return_tensors)) if value is not None}
        return preprocess, generate_kwargs, postprocess

    def preprocess(self, text, pretokenized=None):
        reading = text if isinstance(text, SourceReading) else self.read(text, pretokenized)
        return {"row": self.encode(reading)}

    def read(self, text: str, pretokenized: bool | None = None) -> SourceReading:
        """``text`` as the model reads it, parsed once (``SourceReader.read_batch`` says how); ``encode`` and the
        tree views reuse the reading. ``pretokenized=None`` means what the model was trained on."""
        return self.reader.read(text, pretokenized)

    def encode(self, reading: SourceReading) -> dict:
        """The model's input row (ids, mask, feature columns) for one read text, from its parse (no parsing here).
        A text longer than the model reads is cut to its first tokens, and the log says so (``cut_notice``)."""
        limit = featurizer_max_length(self.tokenizer, self.model.config)
        if self.featurizer is not None:
            row = self.featurizer(trees=reading.tree)
            row = {key: row[key] for key in ("input_ids", "attention_mask", *self.needed_features)}
        else:
            # One plain row; ``_forward`` pads a batch of rows with each column's own pad value (the stock collator
            # would pad depth columns with 0, a real depth).
            row = dict(self.tokenizer(reading.text, truncation=True, max_length=limit))
        notice = self.cut_notice(reading) if len(row["input_ids"]) >= limit else None
        if notice:
            logger.warning(notice)
        return row

    def cut_notice(self, reading: SourceReading) -> str | None:
        """What the model does not read of a source longer than its token limit, with the counts (None when it
        reads all of it): the pipeline translates the first tokens only, so the log (and the Space's page) say so
        rather than passing a translation of part of the text off as the whole."""
        limit = featurizer_max_length(self.tokenizer, self.model.config)
        ids = self.tokenizer(reading.text, verbose=False)["input_ids"]  # counted, not fed: no length warning
        if len(ids) <= limit:
            return None
        kept = self.tokenizer.decode(ids[: limit - 1], skip_special_tokens=True)
        return (f"a source of {len(ids)} tokens ({kept[:30]!r}...) was cut to the {limit} this model reads: the "
                f"translation covers it up to {kept[-30:]!r}, its last {len(ids) - limit} tokens are not translated. "
                f"Split it into sentences (one per line or list item) to translate all of it.")

    def _forward(self, model_inputs, **generate_kwargs):
        rows = model_inputs["row"]
        rows = [rows] if isinstance(rows, dict) else list(rows)
        batch = pad_columns(rows, self.tokenizer.pad_token_id, padding_side="right")
        batch = {key: value.to(self.model.device) for key, value in batch.items()}
        return {"output_ids": self.model.generate(**batch, **generate_kwargs)}

    def postprocess(self, model_outputs, skip_special_tokens=True, clean_up_tokenization_spaces=None,
                    return_tensors=False):
        if return_tensors:
            return [{"translation_token_ids": ids} for ids in model_outputs["output_ids"]]
        return [
            {"translation_text": self.target_tokenizer.decode(
                ids, skip_special_tokens=skip_special_tokens,
                clean_up_tokenization_spaces=clean_up_tokenization_spaces).strip()}
            for ids in model_outputs["output_ids"]
        ]


class PosTextClassificationPipeline(TextClassificationPipeline):
    """Text(-pair) classification with BERT+POS: tags every text with ``config.pos_parser`` first.

    Takes what the stock text-classification pipeline takes (a text, ``{"text": ..., "text_pair": ...}``, or a list
    of them) and returns the same label/score dicts.
    """

    def __init__(self, *args, load_parser: bool = True, **kwargs):
        """``load_parser``: as for ``SyntaxTranslationPipeline``."""
        super().__init__(*args, **kwargs)
        config = self.model.config
        if not getattr(config, "pos_parser", None):
            raise ValueError(
                f"PosTextClassificationPipeline is for BERT+POS models (config.pos_parser); {config.model_type!r} "
                f"has none. Use the stock text-classification pipeline for it."
            )
        self.featurizer = SyntaxFeaturizer(
            self.tokenizer, parser=config.pos_parser, features=("pos_ids",),
            max_length=featurizer_max_length(self.tokenizer, config),
        )
        # Compared as plain dicts: in remote code the config's and the featurizer's LabelVocab classes come from
        # two copies of labels.py, so LabelVocab equality would always fail.
        if self.featurizer.label_vocabularies["pos_ids"] != config.pos_vocab:
            raise ValueError(
                f"the model's POS vocabulary {config.pos_vocab} differs from the featurizer's "
                f"{self.featurizer.label_vocabularies['pos_ids']}; the POS ids would mean other tags. Use the "
                f"hf_syntax version the model was trained with."
            )
        if load_parser:
            get_parser(config.pos_parser)

    def __call__(self, inputs, **kwargs):
        if isinstance(inputs, tuple):
            inputs = list(inputs)  # a batch, as for the translation pipeline (it reached the parser as one text)
        for index, item in enumerate(inputs if isinstance(inputs, list) else []):
            if isinstance(item, (list, tuple)):
                raise TypeError(
                    f"input {index} is a {type(item).__name__}; pass a text pair as {{'text': ..., 'text_pair': ...}} "
                    f"(the texts of a list are classified one by one)."
                )
        if isinstance(inputs, (str, dict, list)):
            check_texts(inputs)
        return super().__call__(inputs, **kwargs)

    def _sanitize_parameters(self, pretokenized=None, **kwargs):
        top_k = kwargs.get("top_k")  # 0 returned no label and -1 all but the last, silently
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
            raise ValueError(f"top_k={top_k!r}: give a whole number >= 1 (how many of the best labels to return), "
                             f"or None for every label.")
        function = kwargs.get("function_to_apply")  # "foo" was transformers' KeyError: 'FOO'
        if function is not None and str(getattr(function, "value", function)).lower() not in SCORE_FUNCTIONS:
            raise ValueError(f"function_to_apply={function!r}: give one of {SCORE_FUNCTIONS}, or None for the "
                             f"model's default (sigmoid for one label or multi-label, else softmax).")
        preprocess, forward, postprocess = super()._sanitize_parameters(**kwargs)
        check_pretokenized(pretokenized)
        if pretokenized is not None:
            preprocess = {**preprocess, "pretokenized": pretokenized}
        return preprocess, forward, postprocess

    def preprocess(self, inputs, pretokenized=False, **tokenizer_kwargs):
        """Tag and encode a text or a ``{"text", "text_pair"}`` dict; ``pretokenized=True``: the strings are
        space-separated words, tagged as given rather than re-segmented by the parser."""
        if tokenizer_kwargs:
            raise ValueError(
                f"PosTextClassificationPipeline takes no tokenizer arguments (got {sorted(tokenizer_kwargs)}): it "
                f"always truncates to the model's maximum length; its own option is pretokenized=True/False."
            )
        return self.encode(self.read(inputs, pretokenized))

    def read(self, inputs, pretokenized: bool = False) -> tuple[WordTree, WordTree | None]:
        """The parses of a text, or of both texts of a ``{"text", "text_pair"}`` dict (the second is None for one
        text). ``encode`` makes the model inputs from them and a demo shows their tags: each text is parsed once."""
        check_texts(inputs)  # a dict's keys too
        text, pair = (inputs["text"], inputs.get("text_pair")) if isinstance(inputs, dict) else (inputs, None)
        parse = self.featurizer.source_tree  # a word list is parsed as given
        return tuple(None if each is None else parse(each.split() if pretokenized else each)
                     for each in map(visible_text, (text, pair)))

    def encode(self, trees: tuple[WordTree, WordTree | None]) -> dict:
        """The model's input tensors (a batch of one) from the parses ``read`` returned (no parsing here). A text
        longer than the model reads is cut to its first wordpieces, and the log says so (``cut_notice``)."""
        tree, pair_tree = trees
        encoded = self.featurizer(trees=[tree], pair_trees=None if pair_tree is None else [pair_tree],
                                  return_tensors="pt")
        notice = self.cut_notice(trees) if encoded["input_ids"].shape[-1] >= self.featurizer.max_length else None
        if notice:
            logger.warning(notice)
        names = ("input_ids", "token_type_ids", "attention_mask", "pos_ids")
        return {name: encoded[name] for name in names if name in encoded}

    def cut_notice(self, trees: tuple[WordTree, WordTree | None]) -> str | None:
        """What the model does not read of a text (pair) longer than its wordpiece limit (None when it reads all of
        it): the label is that of the first wordpieces only, so the log (and the Space's page) say so, as the
        translation pipeline's ``cut_notice`` does for a translation."""
        tree, pair_tree = trees
        limit = self.featurizer.max_length
        ids = self.tokenizer(tree.text, None if pair_tree is None else pair_tree.text, verbose=False)["input_ids"]
        if len(ids) <= limit:
            return None
        what = "text pair" if pair_tree is not None else "text"
        return (f"a {what} of {len(ids)} wordpieces ({tree.text[:30]!r}...) was cut to the {limit} this model reads: "
                f"the label is for its first {limit} wordpieces, its last {len(ids) - limit} are not read. Shorten "
                f"it (classify its sentences one by one) to have all of it read.")


def check_pretokenized(value) -> None:
    """``pretokenized`` is True, False or None (the model's default); a string such as "yes" or "false" read as True."""
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"pretokenized={value!r}: give True (the text is space-separated words, parsed as given), "
                        f"False (the parser splits it) or leave it unset.")


def visible_text(text: str | None) -> str | None:
    """``text`` without hidden characters (format characters such as a zero-width space, control characters such as
    NUL: ``text_checks.is_hidden``) and outer whitespace. BERT's tokenizer drops them, but the parser read
    "man\u200b" as another word than "man" and tagged it otherwise: removed first, the words the parser tags are the
    ones the tokenizer splits."""
    if text is None:
        return None
    return strip_invisible("".join(character for character in text if not is_hidden(character)))


PIPELINE_REGISTRY.register_pipeline(
    TRANSLATION_TASK, pipeline_class=SyntaxTranslationPipeline, pt_model=AutoModelForSeq2SeqLM, type="text"
)
# transformers 5 refuses a task it lists as removed before it looks at the registry: without this, the model-object
# form pipeline("translation", model=model, tokenizer=tokenizer) raised a KeyError while the folder form worked.
REMOVED_TASKS.pop(TRANSLATION_TASK, None)


@contextmanager
def register_for_saving(pipeline_class, task: str, auto_class):
    """Register ``pipeline_class`` for ``task`` while the block runs, restoring what was there before.

    ``Pipeline.save_pretrained`` writes ``config.custom_pipelines`` (and copies this module with its relative
    imports) only for a registered class; restoring keeps a built-in task such as text-classification intact.
    """
    previous = PIPELINE_REGISTRY.supported_tasks.get(task)
    registry_logger = logging.getLogger("transformers.pipelines.base")
    level = registry_logger.level
    registry_logger.setLevel(logging.ERROR)  # its "Overwriting pipeline for task ..." would be false: we restore it
    try:
        PIPELINE_REGISTRY.register_pipeline(task, pipeline_class=pipeline_class, pt_model=auto_class, type="text")
        yield
    finally:
        registry_logger.setLevel(level)
        if previous is None:
            PIPELINE_REGISTRY.supported_tasks.pop(task, None)
        else:
            PIPELINE_REGISTRY.supported_tasks[task] = previous


def syntax_pipeline(model, tokenizer, **kwargs) -> Pipeline:
    """The hf_syntax pipeline matching ``model``: classification for BERT+POS, translation otherwise (which also
    takes ``target_tokenizer`` for separate vocabularies)."""
    for name, value in (("tokenizer", tokenizer), ("target_tokenizer", kwargs.get("target_tokenizer"))):
        if value is not None and not isinstance(value, PreTrainedTokenizerBase):  # else it failed at the first text
            raise TypeError(f"{name} is a {type(value).__name__}, not a loaded tokenizer: load it with "
                            f"AutoTokenizer.from_pretrained(FOLDER) (a tokenizers.Tokenizer: "
                            f"PreTrainedTokenizerFast(tokenizer_object=it)) and pass that.")
    if getattr(model.config, "pos_parser", None) is not None:
        return PosTextClassificationPipeline(model=model, tokenizer=tokenizer, **kwargs)
    if not getattr(model.config, "is_encoder_decoder", False):
        raise ValueError(
            f"{type(model).__name__} is neither a seq2seq model nor BERT+POS; hf_syntax has no pipeline for it."
        )
    return SyntaxTranslationPipeline(model=model, tokenizer=tokenizer, **kwargs)


def save_pipeline(pipe: Pipeline, folder) -> None:
    """``pipe.save_pretrained(folder)`` with the pipeline recorded in ``config.custom_pipelines``."""
    if isinstance(pipe, PosTextClassificationPipeline):
        with register_for_saving(PosTextClassificationPipeline, CLASSIFICATION_TASK, AutoModelForSequenceClassification):
            pipe.save_pretrained(folder)
    else:
        pipe.save_pretrained(folder)
    target = getattr(pipe, "target_tokenizer", None)
    if target is not None and target is not pipe.tokenizer:
        target.save_pretrained(f"{folder}/{TARGET_TOKENIZER_DIR}")


__all__ = [
    "EmptyInputError",
    "InvalidTextError",
    "PosTextClassificationPipeline",
    "SourceReading",
    "SyntaxTranslationPipeline",
    "check_texts",
    "save_pipeline",
    "syntax_pipeline",
]
