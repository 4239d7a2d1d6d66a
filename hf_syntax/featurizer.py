"""``SyntaxFeaturizer``: text -> parser -> tokenizer -> per-subword syntax columns, one code path for everything.

The same object serves a single string at inference (pipelines), a batch in a ``datasets`` map function at
training time, and pre-parsed gold trees in evaluation. Raw text is segmented by the parser and aligned to the
tokenizer's subwords by character offsets (rules in ``align.py``). Pre-tokenized input (a list of words, or a
whitespace-separated string with ``pretokenized=True``) is parsed without re-segmentation, and the tokenizer sees
the words joined by single spaces -- exactly what a pre-tokenized corpus line is -- so both see the same words. As
with a transformers tokenizer, a flat list of strings is a batch of texts: one sentence of words is ``[words]``.
"""

from __future__ import annotations

from .align import AlignmentError, AlignmentStats, subword_columns, word_ids_from_offsets
from .columns import DEFAULT_FEATURES, LABEL_VOCABS, SUBWORD_HEAD_RULES, normalise_features, pad_columns
from .parsers import get_parser
from .text_checks import check_valid_unicode
from .trees import TreeError, WordTree, locate_words


TRUNCATION_CHOICES = (None, True, False, "longest_first", "only_first", "only_second", "do_not_truncate")
"""What a transformers tokenizer takes as ``truncation``, and None."""


class SyntaxFeaturizer:
    """Tokenize text and attach syntax feature columns aligned to the subwords.

    Args:
        tokenizer: a *fast* HF tokenizer (offsets are required).
        parser: spec string (``"spacy:en_core_web_sm"``, ``"spacy:ja_ginza"``, ``"stanza:fr"``, ``"conllu:f"``),
            a ``Parser`` or a spaCy ``Language``. Loaded once per process. May be ``None`` if trees are given.
        features: source columns to produce (see ``columns.DEFAULT_FEATURES``).
        target_parser: parser for ``text_target``; when set, ``decoder_dep_heads`` is produced next to ``labels``.
        target_tokenizer: tokenizer of the target side when it differs from ``tokenizer``.
        head_rule: ``"first"`` (DBSA authors' code) or ``"last"`` subword of the head word.
        pretokenized: strings are whitespace-separated words (parsed as given, never re-segmented).
        strict: raise ``AlignmentError`` instead of applying (and counting) the straddle/uncovered rules.
        max_length / truncation: passed to the tokenizer (``truncation`` defaults to on when a length is given).
        max_target_length: ``max_length`` of the target side (defaults to ``max_length``).
        parser_options: keyword arguments for the parser backend (e.g. ``{"n_process": 2}`` for spaCy).
        return_word_ids: also return ``word_ids`` (the surface word of every source subword, -1 for special
            tokens; a pair's second segment counts its words from 0 again), e.g. to map predicted heads back to
            words with ``hf_syntax.align.word_heads_from_subword_heads``.

    ``stats`` / ``target_stats`` accumulate ``AlignmentStats`` over every call.
    """

    def __init__(self, tokenizer, parser=None, features=DEFAULT_FEATURES, target_parser=None, target_tokenizer=None,
                 head_rule="first", pretokenized=False, strict=False, max_length=None, max_target_length=None,
                 truncation=None, parser_options=None, return_word_ids=False):
        if tokenizer is None:
            raise TypeError("SyntaxFeaturizer needs the tokenizer whose subwords the features align to; got None.")
        for name, value in (("pretokenized", pretokenized), ("strict", strict), ("return_word_ids", return_word_ids)):
            if not isinstance(value, bool):  # a string such as "false" was read as True
                raise TypeError(f"{name}={value!r}: give True or False.")
        for candidate in (tokenizer, target_tokenizer):
            if candidate is not None and not getattr(candidate, "is_fast", False):
                raise TypeError(
                    f"SyntaxFeaturizer needs a fast tokenizer (character offsets); got {type(candidate).__name__}. "
                    f"Load it with AutoTokenizer.from_pretrained(..., use_fast=True) or wrap a `tokenizers` object "
                    f"in PreTrainedTokenizerFast."
                )
        if head_rule not in SUBWORD_HEAD_RULES:
            raise ValueError(f"head_rule must be one of {SUBWORD_HEAD_RULES}; got {head_rule!r}.")
        if truncation not in TRUNCATION_CHOICES:  # was transformers' TruncationStrategy error at the first call
            raise ValueError(f"truncation={truncation!r}: give one of {TRUNCATION_CHOICES} (None: on when a "
                             f"max_length is given).")
        for name, length, side in (("max_length", max_length, tokenizer),
                                   ("max_target_length", max_target_length, target_tokenizer or tokenizer)):
            if length is None:
                continue
            # the tokenizer leaves a text longer than a limit below its special tokens uncut (0, 1 for BERT)
            shortest = side.num_special_tokens_to_add() + 1
            if isinstance(length, bool) or not isinstance(length, int) or length < shortest:
                raise ValueError(f"{name}={length!r}: give a whole number of tokens >= {shortest} (one token and "
                                 f"the tokenizer's special tokens), or None for no limit.")
        self.tokenizer = tokenizer
        self.target_tokenizer = target_tokenizer or tokenizer
        self.parser_spec, self.target_parser_spec = parser, target_parser
        self.features = normalise_features(features)
        self.head_rule, self.pretokenized, self.strict = head_rule, pretokenized, strict
        self.max_length = max_length
        self.max_target_length = max_target_length if max_target_length is not None else max_length
        self.truncation = truncation if truncation is not None else max_length is not None
        if parser_options is not None and not isinstance(parser_options, dict):  # "n_process=2" failed in dict()
            raise TypeError(f"parser_options={parser_options!r}: give a dict of the parser's keyword arguments, e.g. "
                            f"{{'n_process': 2}}.")
        self.parser_options = dict(parser_options or {})
        self.return_word_ids = return_word_ids
        self.stats, self.target_stats = AlignmentStats(), AlignmentStats()

    @property
    def label_vocabularies(self) -> dict:
        """The label vocabularies of the produced id columns, as plain dicts for a model config."""
        return {name: LABEL_VOCABS[name].to_dict() for name in self.features if name in LABEL_VOCABS}

    # ------------------------------------------------------------------------------------------------ main entry
    def __call__(self, text=None, text_pair=None, text_target=None, trees=None, pair_trees=None,
                 target_trees=None, return_tensors=None):
        """Featurize one input (a string) or a batch (a list of strings or of word lists).

        The source side is produced when ``text``/``trees`` is given, the target side (``labels``, plus
        ``decoder_dep_heads`` when a target parser or ``target_trees`` is given) when ``text_target``/``target_trees``
        is. ``trees`` / ``pair_trees`` / ``target_trees`` replace parsing with given ``WordTree``s (e.g. gold UD);
        their ``text`` is what the tokenizer sees (the words of a tree without spans are located in it). Returns a
        dict of lists (unbatched for a single string), or of padded tensors with ``return_tensors="pt"``.
        """
        has_source = text is not None or trees is not None
        has_target = text_target is not None or target_trees is not None
        if not has_source and not has_target:
            raise ValueError("SyntaxFeaturizer needs `text`/`trees` (source side) and/or `text_target`/`target_trees`.")
        first = next(value for value in (text, trees, text_target, target_trees) if value is not None)
        is_batch = not isinstance(first, (str, WordTree))
        if is_batch and isinstance(first, (list, tuple)) and not first:  # was an IndexError inside the tokenizer
            raise ValueError("SyntaxFeaturizer got an empty batch: pass at least one text (or tree).")
        output, count = {}, None
        if has_source:
            source_texts, source_trees = self._texts_and_trees(text, trees, self.parser_spec, "text")
            pair_texts = pair_tree_list = None
            if text_pair is not None or pair_trees is not None:
                self._check_room_for_pairs()
                pair_texts, pair_tree_list = self._texts_and_trees(text_pair, pair_trees, self.parser_spec, "text_pair")
                if len(pair_texts) != len(source_texts):
                    raise ValueError(f"{len(source_texts)} texts but {len(pair_texts)} text pairs; give one each.")
            output.update(self._encode_source(source_texts, source_trees, pair_texts, pair_tree_list))
            count = len(source_texts)
        if has_target:
            target_texts, target_tree_list = self._texts_and_trees(
                text_target, target_trees, self.target_parser_spec, "text_target", needs_trees=False
            )
            if count is not None and len(target_texts) != count:
                raise ValueError(f"{count} texts but {len(target_texts)} targets; give one target each.")
            output.update(self._encode_target(target_texts, target_tree_list))
            count = len(target_texts)
        if return_tensors is not None:
            if return_tensors != "pt":
                raise ValueError(f"return_tensors must be None or 'pt'; got {return_tensors!r}.")
            rows = [{key: values[index] for key, values in output.items()} for index in range(count)]
            return pad_columns(rows, self.tokenizer.pad_token_id, padding_side=self.tokenizer.padding_side)
        if not is_batch:
            return {key: values[0] for key, values in output.items()}
        return output

    def source_tree(self, text) -> WordTree:
        """The tree ``self(text)`` aligns for one input (a raw string, or a list of words parsed as given), its
        ``text`` what the tokenizer sees. ``self(trees=tree)`` then gives the same columns without parsing again,
        so a caller that also shows the tree parses once."""
        return self.source_trees([text])[0]

    def source_trees(self, texts) -> list[WordTree]:
        """``source_tree`` of every input of a list, parsed in one parser call (an error names ``text[index]``)."""
        if isinstance(texts, str):  # list("Hi there") parsed every character as a text of its own
            raise TypeError(f"source_trees takes a list of texts; got the string {texts[:40]!r}. Use "
                            f"source_tree(text) for one text, or pass [text].")
        return self._texts_and_trees(list(texts), None, self.parser_spec, "text")[1]

    # ------------------------------------------------------------------------------------------------- internals
    def _texts_and_trees(self, texts, trees, parser_spec, argument, needs_trees=True):
        """Texts the tokenizer sees and the matching surface-level trees (``None`` when no parser is asked for)."""
        if trees is not None:
            trees = [trees] if isinstance(trees, WordTree) else list(trees)
            bad = [index for index, tree in enumerate(trees) if not isinstance(tree, WordTree) or tree.text is None]
            if bad:
                raise TypeError(f"{argument} trees {bad[:5]} are not WordTrees with a text; parse them first.")
            trees = [_with_spans(tree.collapse_multiword_tokens(), f"{argument} tree {index}")
                     for index, tree in enumerate(trees)]
            return [tree.text for tree in trees], trees
        items = [texts] if isinstance(texts, str) else texts
        if not isinstance(items, (list, tuple)):
            raise TypeError(f"{argument} must be a string or a list of strings/word lists; got {type(texts).__name__}.")
        tokenizer_texts, parse_inputs = [], []
        for index, item in enumerate(items):
            where = argument if isinstance(texts, str) else f"{argument}[{index}]"
            if isinstance(item, str):
                check_valid_unicode(item, where)
                tokenizer_texts.append(item)
                parse_inputs.append(item.split() if self.pretokenized else item)
            elif isinstance(item, (list, tuple)) and all(isinstance(word, str) for word in item):
                check_valid_unicode(" ".join(item), where)
                tokenizer_texts.append(" ".join(item))
                parse_inputs.append(list(item))
            else:
                raise TypeError(f"{argument}[{index}] is {item!r}; expected a string or a list of word strings.")
        if parser_spec is None:
            if needs_trees:
                raise ValueError(
                    f"SyntaxFeaturizer has no parser for {argument}; pass parser=... (e.g. 'spacy:en_core_web_sm') "
                    f"or give pre-parsed trees."
                )
            return tokenizer_texts, None
        parser = get_parser(parser_spec, **self.parser_options)
        parsed = parser.parse_batch(parse_inputs)
        trees = []
        for tokenizer_text, tree in zip(tokenizer_texts, parsed):
            tree = tree.collapse_multiword_tokens()
            if tree.text != tokenizer_text or tree.spans is None:
                tree = _relocated(tree, tokenizer_text)
            trees.append(tree)
        return tokenizer_texts, trees

    def _check_room_for_pairs(self):
        """A pair needs its special tokens and a token of each text: below that the tokenizer emptied a text."""
        shortest = self.tokenizer.num_special_tokens_to_add(pair=True) + 2
        if self.max_length is not None and self.max_length < shortest:
            raise ValueError(f"max_length={self.max_length} leaves no room for both texts of a pair: give max_length "
                             f">= {shortest} (the tokenizer's special tokens of a pair and one token of each text), "
                             f"or None for no limit.")

    def _tokenize(self, texts, pairs=None, target=False):
        if target:
            truncation = self.truncation or self.max_target_length is not None
            _check_cut_at_end(self.target_tokenizer, "the target tokenizer", truncation)
            return self.target_tokenizer(text_target=texts, return_offsets_mapping=True, truncation=truncation,
                                         max_length=self.max_target_length)
        _check_cut_at_end(self.tokenizer, "the tokenizer", self.truncation)
        try:
            return self.tokenizer(texts, pairs, return_offsets_mapping=True, truncation=self.truncation,
                                  max_length=self.max_length)
        except Exception as error:  # the Rust tokenizer raises a bare Exception
            if "Sequence to truncate too short" not in str(error):
                raise
            raise ValueError(f"truncation={self.truncation!r} cuts only one text of a pair, and in this batch that "
                             f"text is too short to bring its pair down to max_length={self.max_length}; use "
                             f"truncation='longest_first' or a larger max_length.") from None

    def _encode_source(self, texts, trees, pair_texts, pair_trees):
        encoding = self._tokenize(texts, pair_texts)
        output = {key: list(values) for key, values in encoding.items() if key != "offset_mapping"}
        columns = {name: [] for name in self.features + (("word_ids",) if self.return_word_ids else ())}
        for index in range(len(texts)):
            segments = [(texts[index], trees[index])]
            if pair_texts is not None:
                segments.append((pair_texts[index], pair_trees[index]))
            sequence_columns = self._align_sequence(
                segments, encoding, index, self.features, self.stats
            )
            for name in columns:
                columns[name].append(sequence_columns[name])
        output.update(columns)
        return output

    def _encode_target(self, texts, trees):
        encoding = self._tokenize(texts, target=True)
        output = {"labels": [list(ids) for ids in encoding["input_ids"]]}
        if trees is not None:
            output["decoder_dep_heads"] = [
                self._align_sequence([(texts[index], trees[index])], encoding, index, ("dep_heads",), self.target_stats,
                                     target=True)["dep_heads"]
                for index in range(len(texts))
            ]
        return output

    def _align_sequence(self, segments, encoding, index, features, total_stats, target=False) -> dict:
        """Columns for the ``index``-th encoded sequence, of one or two segments (each aligned to its own tree).

        Words past the last subword count as truncated only when the tokenizer cut their segment (of a pair it may
        cut one text only); otherwise they had no subword at all (a trailing zero-width or control character),
        which strict alignment refuses."""
        offsets, sequence_ids = encoding["offset_mapping"][index], encoding.sequence_ids(index)
        overflowed = bool(encoding.encodings[index].overflowing)
        merged = None
        for segment, (text, tree) in enumerate(segments):
            stats = AlignmentStats()
            in_segment = [sequence_id == segment for sequence_id in sequence_ids]
            word_ids = word_ids_from_offsets(tree.spans, offsets, in_segment, text, stats)
            cut_start = self._cut_start(text, sum(in_segment), target) if overflowed else None
            columns = subword_columns(tree, word_ids, features, self.head_rule, stats, content_end=cut_start)
            columns["word_ids"] = word_ids
            if self.strict and not stats.is_clean:
                raise AlignmentError(
                    f"strict alignment failed for {text!r}: {stats.as_dict()} (see hf_syntax.align for the rules)."
                )
            if merged is None:
                merged = columns
            else:
                for name, values in columns.items():
                    merged[name] = [new if inside else old for old, new, inside in zip(merged[name], values, in_segment)]
            total_stats.update(stats)
        return merged

    def _cut_start(self, text, kept, target) -> int | None:
        """Where the first subword the tokenizer cut off ``text`` starts, ``kept`` being how many it left (None: it
        cut none). Read from the text tokenized alone: the tokenizer tokenizes each text of a pair so, then cuts."""
        tokenizer, argument = (self.target_tokenizer, "text_target") if target else (self.tokenizer, "text")
        offsets = tokenizer(**{argument: text}, add_special_tokens=False, return_offsets_mapping=True,
                            verbose=False)["offset_mapping"]  # uncut on purpose: no "indexing errors" warning
        return offsets[kept][0] if len(offsets) > kept else None


def _check_cut_at_end(tokenizer, which: str, truncation) -> None:
    """Refuse a tokenizer that cuts long texts at their start: the features mark the words past the cut as truncated
    (:meth:`SyntaxFeaturizer._cut_start`), so a start cut left every kept subword without a head."""
    side = getattr(tokenizer, "truncation_side", "right")
    if truncation and side != "right":
        raise ValueError(f"{which} has truncation_side={side!r}, but SyntaxFeaturizer cuts a long text at its end "
                         f"(the tree's words past the cut lose their heads); set tokenizer.truncation_side = "
                         f"'right', or split long texts before featurizing them.")


def _with_spans(tree: WordTree, where: str) -> WordTree:
    """``tree`` with its words located in its text when it has no spans (built from words and a text): without
    spans no subword would find its word."""
    if tree.spans is not None:
        return tree
    try:
        return _relocated(tree, tree.text)
    except TreeError as error:
        raise TreeError(f"{where} has no spans, and its words could not be located in its text: {error} Give its "
                        f"spans, or build it with WordTree.from_words.", word=error.word) from None


def _relocated(tree: WordTree, text: str) -> WordTree:
    """The same tree with spans located in ``text`` (a pre-tokenized line whose spacing differs from one space)."""
    token_spans = locate_words(text, tree.words)
    return WordTree(
        words=tree.words, heads=tree.heads, upos=tree.upos, deprels=tree.deprels, spans=token_spans, text=text,
        sentence_starts=tree.sentence_starts,
    )
