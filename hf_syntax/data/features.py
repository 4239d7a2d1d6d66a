"""``datasets`` map functions that attach syntax feature columns to a translation or GLUE dataset.

    ds = ds.map(parse_and_align(tokenizer, src_parser="spacy:ja_ginza", tgt_parser="spacy:en_core_web_sm",
                                source_column="source", target_column="target"),
                batched=True, num_proc=2)

The returned object is a small picklable callable: it holds only the tokenizer(s) and plain settings, never a
loaded parser (parsers are loaded lazily once per worker process and cached by spec in ``hf_syntax.parsers``), so
it works with ``num_proc`` and hashes to the same fingerprint every time, letting ``datasets`` reuse its cache.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path

from hf_syntax.columns import DEFAULT_FEATURES, normalise_features
from hf_syntax.featurizer import SyntaxFeaturizer
from hf_syntax.text_checks import BLANK_TEXT, check_valid_unicode, is_blank

logger = logging.getLogger(__name__)

FEATURES_RECORD = "hf_syntax_features.json"


class ParseAndAlign:
    """Batched map function: text columns -> ``input_ids``, ``attention_mask`` and the feature columns.

    Args:
        tokenizer: fast tokenizer of the source side (and of the target side unless ``target_tokenizer`` is given).
        src_parser / tgt_parser: parser specs (see ``hf_syntax.parsers``). With ``tgt_parser`` the target column is
            tokenized too, giving ``labels`` and ``decoder_dep_heads``; without it the target is left alone.
        features: source feature columns (names or aliases such as ``"pos"``).
        source_column / pair_column / target_column: dataset columns holding the texts; a dotted name reads a
            dict column (``"translation.ja"``). ``pair_column`` is the second GLUE sentence.
        pretokenized: the texts are whitespace-separated words (parsed as given, never re-segmented).
        allow_empty: featurize empty or blank texts as empty segments instead of refusing them (the pipelines
            refuse them too: a model trained on them learns nothing). GLUE's ``empty_text: keep`` policy sets it.
        head_rule, max_length, max_target_length, truncation, strict, parser_options: as in ``SyntaxFeaturizer``.
    """

    def __init__(self, tokenizer, src_parser=None, tgt_parser=None, features=DEFAULT_FEATURES,
                 source_column="source", target_column="target", pair_column=None, target_tokenizer=None,
                 pretokenized=False, head_rule="first", max_length=None, max_target_length=None, truncation=None,
                 strict=False, parser_options=None, allow_empty=False):
        for name, spec in (("src_parser", src_parser), ("tgt_parser", tgt_parser)):
            if spec is not None and not isinstance(spec, str):
                raise TypeError(
                    f"{name} must be a spec string such as 'spacy:en_core_web_sm' (a loaded parser object would "
                    f"be pickled into every worker and break the datasets cache); got {type(spec).__name__}."
                )
        if src_parser is None and tgt_parser is None:
            raise ValueError("parse_and_align needs src_parser and/or tgt_parser (e.g. src_parser='spacy:ja_ginza').")
        if not isinstance(allow_empty, bool):
            raise TypeError(f"allow_empty={allow_empty!r}: give True or False.")
        for name, column in (("source_column", source_column), ("target_column", target_column),
                             ("pair_column", pair_column)):
            if not (isinstance(column, str) and column) and not (name == "pair_column" and column is None):
                raise TypeError(  # was an AttributeError inside the first map batch
                    f"{name}={column!r}: give the dataset column's name, a str ('translation.en' for a key of a dict "
                    f"column){' or None' if name == 'pair_column' else ''}.")
        self.tokenizer = tokenizer
        self.target_tokenizer = target_tokenizer
        self.src_parser, self.tgt_parser = src_parser, tgt_parser
        self.features = normalise_features(features) if src_parser is not None else ()
        self.source_column, self.target_column, self.pair_column = source_column, target_column, pair_column
        self.pretokenized, self.head_rule, self.strict = pretokenized, head_rule, strict
        self.max_length, self.max_target_length, self.truncation = max_length, max_target_length, truncation
        self.parser_options = dict(parser_options or {})
        self.allow_empty = allow_empty
        self._featurizer()  # fail early on a bad tokenizer or option, before datasets starts workers

    def _featurizer(self) -> SyntaxFeaturizer:
        """Built per call: cheap (parsers are cached per process by spec) and keeps this object stateless."""
        return SyntaxFeaturizer(
            self.tokenizer, parser=self.src_parser, features=self.features, target_parser=self.tgt_parser,
            target_tokenizer=self.target_tokenizer, head_rule=self.head_rule, pretokenized=self.pretokenized,
            strict=self.strict, max_length=self.max_length, max_target_length=self.max_target_length,
            truncation=self.truncation,
            parser_options=self.parser_options,
        )

    @property
    def label_vocabularies(self) -> dict:
        """The label vocabularies of the produced id columns (plain dicts, for a model config)."""
        return self._featurizer().label_vocabularies

    @property
    def settings(self) -> dict:
        """What decides the produced columns, under the names of the recipe's ``features`` section."""
        return {
            "src_parser": self.src_parser, "tgt_parser": self.tgt_parser, "features": list(self.features),
            "pretokenized": self.pretokenized, "head_rule": self.head_rule, "max_length": self.max_length,
            "max_target_length": self.max_target_length, "truncation": self.truncation, "strict": self.strict,
        }

    def __call__(self, batch: dict, *unsupported) -> dict:
        if unsupported or not isinstance(batch, Mapping):  # with_indices / input_columns: a TypeError or a KeyError
            raise TypeError(  # that listed the texts as the dataset's columns
                "parse_and_align takes a batch as a dict of columns: call dataset.map(parse_and_align(...), "
                "batched=True) without input_columns or with_indices, and name the columns to parse with "
                "source_column / pair_column / target_column.")
        texts = pairs = targets = None
        if self.src_parser is not None:
            texts = self._texts(batch, self.source_column, "source_column")
            pairs = self._texts(batch, self.pair_column, "pair_column") if self.pair_column else None
        if self.tgt_parser is not None:
            targets = self._texts(batch, self.target_column, "target_column")
        featurizer = self._featurizer()
        output = featurizer(texts, text_pair=pairs, text_target=targets)
        _report_alignment_rules(featurizer)
        return output

    def _texts(self, batch: dict, name: str, argument: str) -> list:
        texts = _column(batch, name, argument)
        for index, text in enumerate(texts):
            if isinstance(text, str):
                check_valid_unicode(text, f"column {name!r} (batch row {index})")
        if not self.allow_empty:
            blank = [index for index, text in enumerate(texts) if _is_blank_row(text)]
            if blank:
                raise ValueError(
                    f"parse_and_align: {len(blank)} empty text(s) in column {name!r} of this batch (first at batch "
                    f"row {blank[0]}; {BLANK_TEXT}): there is nothing to "
                    f"parse. Drop them first (read_parallel(..., skip_empty=True), dataset.filter(...)), or pass "
                    f"allow_empty=True to featurize them as empty segments."
                )
        return texts


def _is_blank_row(text) -> bool:
    """A blank text, or a pre-split row with no visible word (``[]``, ``["\u200b"]``): both featurize to nothing."""
    if isinstance(text, (list, tuple)):
        return all(isinstance(word, str) for word in text) and is_blank(" ".join(text))
    return isinstance(text, str) and is_blank(text)


_REPORTED_SIDES: set = set()


def _report_alignment_rules(featurizer: SyntaxFeaturizer) -> None:
    """Warn (once per process and side) when a straddle/uncovered/swallowed rule had to be applied.

    The rules are documented and counted, but a map function's counters live in worker processes; this warning
    is how a user learns that, e.g., their tokenizer merges subwords across the parser's word boundaries.
    """
    for side, stats in (("source", featurizer.stats), ("target", featurizer.target_stats)):
        if side in _REPORTED_SIDES or stats.is_clean:
            continue
        _REPORTED_SIDES.add(side)
        logger.warning(
            "parse_and_align (%s side): alignment rules applied in a batch of %d sequences: %s. Features stay "
            "aligned (see hf_syntax.align for the rules); many straddling subwords mean the tokenizer merges across "
            "the parser's words (pre-split punctuation, or pre-segment CJK text). Reported once per process.",
            side, stats.sequences, stats.as_dict(),
        )


def parse_and_align(tokenizer, src_parser=None, tgt_parser=None, features=DEFAULT_FEATURES, **options) -> ParseAndAlign:
    """The batched ``datasets`` map function (see ``ParseAndAlign`` for the options); use ``batched=True``."""
    return ParseAndAlign(tokenizer, src_parser=src_parser, tgt_parser=tgt_parser, features=features, **options)


def save_features_record(dataset_folder, map_function: ParseAndAlign, tokenizer_folder) -> Path:
    """Record next to a saved dataset how its feature columns were made, so training can reuse them unparsed."""
    folder, tokenizer_folder = Path(dataset_folder).resolve(), Path(tokenizer_folder).resolve()
    # Relative when the tokenizer sits inside the dataset folder, so the folder can be moved as a whole.
    tokenizer = tokenizer_folder.relative_to(folder) if tokenizer_folder.is_relative_to(folder) else tokenizer_folder
    path = folder / FEATURES_RECORD
    path.write_text(json.dumps({
        "tokenizer": str(tokenizer),
        "features": map_function.settings,
        "feature_labels": map_function.label_vocabularies,
    }, indent=2) + "\n")
    return path


def load_features_record(dataset_folder) -> dict | None:
    """The record written by ``save_features_record`` (tokenizer path made absolute); None if there is none. A
    sharded preprocess output has one per shard, which must agree (one tokenizer, the same features)."""
    from hf_syntax.data.corpus import CorpusError
    from hf_syntax.data.shards import shard_folders

    shards = shard_folders(dataset_folder)
    if shards:
        records = [load_features_record(shard) for shard in shards]
        if any(record != records[0] for record in records):
            differing = next(shard for shard, record in zip(shards, records) if record != records[0])
            raise CorpusError(f"{differing} was preprocessed with another tokenizer or other features than {shards[0]}; "
                              f"preprocess every shard with the same --tokenizer and feature options")
        return records[0]
    path = Path(dataset_folder) / FEATURES_RECORD
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    record["tokenizer"] = str((Path(dataset_folder) / record["tokenizer"]).resolve())
    return record


def _column(batch: dict, name: str, argument: str) -> list:
    """Read a (possibly dotted) column from a batch, with an error that lists what is there."""
    head, _, key = name.partition(".")
    if head not in batch:
        raise KeyError(
            f"{argument}={name!r}: the dataset has no column {head!r}; its columns are {sorted(batch)}. "
            f"Pass {argument}=<one of them> to parse_and_align (use 'column.key' for dict columns)."
        )
    values = batch[head]
    if isinstance(values, (str, dict)):  # a map without batched=True: a str was read character by character
        raise ValueError(f"parse_and_align reads batches, but column {head!r} holds one {type(values).__name__}, not "
                         f"a list of them: call dataset.map(parse_and_align(...), batched=True).")
    if not key or not values:  # an empty batch (a direct call) has no row to read the key of
        return values
    for index, value in enumerate(values):  # a None row was "'NoneType' object is not subscriptable"
        if not isinstance(value, dict) or key not in value:
            found = sorted(value) if isinstance(value, dict) else type(value).__name__
            raise KeyError(f"{argument}={name!r}: column {head!r} has no key {key!r} in batch row {index} (found "
                           f"{found}).")
    return [value[key] for value in values]
