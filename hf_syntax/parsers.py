"""Parser backends that turn text into ``WordTree``s, chosen by a short spec string.

* ``spacy:<package or path>`` -- any spaCy pipeline with a dependency parser (``spacy:en_core_web_sm``,
  ``spacy:fr_core_news_sm``, GiNZA as ``spacy:ja_ginza``, or a folder written by ``nlp.to_disk``);
* ``stanza:<lang>`` -- a ``stanza.Pipeline`` (needs the user's downloaded stanza models);
* ``conllu:<file>`` -- gold trees from a CoNLL-U file (plain or ``.gz``, read by ``conllu.py``), looked up by
  sentence text.

Input is raw text (the parser segments it) or pre-tokenized: a list of words, or a string with
``pretokenized=True`` that is split on whitespace. Pre-tokenized input is never re-segmented: spaCy gets a
``Doc(vocab, words, spaces)`` and only runs its components on it, so the tree has exactly the given words.
Optional packages are imported inside functions, so this module loads where spaCy or stanza are missing.
"""

from __future__ import annotations

import abc
import difflib
import inspect
import os

from .conllu import iter_conllu
from .segmenters import SUDACHI_MAX_BYTES
from .text_checks import TextTooLongError, check_valid_unicode
from .trees import MultiwordToken, TreeError, WordTree, locate_words


class ParserNotAvailableError(ImportError):
    """The parser package or model named by a spec is not installed; the message says what to install."""


class ParserSpecError(ValueError):
    """A parser spec that names no backend (``"foo:bar"``, ``"ja_ginza"``); the message shows the spelling."""


class TreeNotFoundError(KeyError):
    """A ``conllu:`` parser was asked for a sentence its file has no tree for; the message says which."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


SPACY_COMPONENTS_NOT_NEEDED = (
    "ner", "lemmatizer", "textcat", "textcat_multilabel", "entity_ruler", "entity_linker", "span_ruler",
    "spancat", "trainable_lemmatizer", "compound_splitter",
)
"""Components that do not contribute words, UPOS or heads. GiNZA's ``compound_splitter`` re-splits tokens, so it goes
too (it would break the "same words as the tokenizer" rule); GiNZA's ``bunsetu_recognizer`` stays because it turns
labels such as ``obl_bunsetu`` into plain UD ones."""


def _normalise_input(item, pretokenized: bool, index: int = 0):
    """A raw text stays a string; pre-tokenized input becomes a list of words (a string is split on whitespace).
    Text that is not valid Unicode is refused here, naming the input (the parsers' own errors name neither)."""
    if isinstance(item, str):
        check_valid_unicode(item, f"input {index}")
        return item.split() if pretokenized else item
    if isinstance(item, (list, tuple)) and all(isinstance(word, str) for word in item):
        blank = [position for position, word in enumerate(item) if not word.strip() or word != word.strip()]
        if blank:
            raise ValueError(
                f"input {index}: pre-tokenized words at positions {blank} are empty or contain leading/trailing "
                f"whitespace; give only real words (strip them and drop empty strings before parsing)."
            )
        check_valid_unicode(" ".join(item), f"input {index}")
        return list(item)
    raise TypeError(f"input {index} is {item!r}; expected a string or a list of word strings.")


class Parser(abc.ABC):
    """Maps raw texts or word lists to ``WordTree``s.

    ``parse(text_or_words)`` gives one tree, ``parse_batch([...])`` one tree per item (batched by the backend).
    A list of strings is one pre-tokenized sentence for ``parse`` and a batch of texts for ``parse_batch``.
    """

    spec = "parser"

    def parse(self, item, pretokenized: bool = False) -> WordTree:
        return self._parse_items([_normalise_input(item, pretokenized)])[0]

    def parse_batch(self, items, pretokenized: bool = False) -> list[WordTree]:
        if isinstance(items, str) or not isinstance(items, (list, tuple)):
            raise TypeError(f"parse_batch expects a list of texts or word lists; got {type(items).__name__}.")
        return self._parse_items([_normalise_input(item, pretokenized, index) for index, item in enumerate(items)])

    def split_words(self, text: str) -> list[str]:
        """The surface words ``parse(text)`` gives, for a model trained on pre-split words that then parses them
        as given. A backend whose tokenizer runs alone splits without parsing; this default parses."""
        return list(self.parse(text).collapse_multiword_tokens().words)

    @abc.abstractmethod
    def _parse_items(self, items) -> list[WordTree]:
        """Parse normalised items (str = raw text, list = words) in one batch."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"


# ------------------------------------------------------------------------------------------------------------ spaCy
def _import_spacy():
    try:
        import spacy
    except ImportError as error:
        raise ParserNotAvailableError("The spaCy backend needs spaCy: pip install spacy") from error
    return spacy


class SpacyParser(Parser):
    """A spaCy pipeline run with ``nlp.pipe`` in batches; components that add nothing to the tree are excluded."""

    def __init__(self, name_or_path, n_process: int = 1, batch_size: int = 64):
        spacy = _import_spacy()
        if isinstance(name_or_path, str):
            try:
                nlp = spacy.load(name_or_path, exclude=list(SPACY_COMPONENTS_NOT_NEEDED))
            except OSError as error:
                raise ParserNotAvailableError(_spacy_install_hint(name_or_path)) from error
            self.spec = f"spacy:{name_or_path}"
        else:
            nlp = name_or_path
            self.spec = f"spacy:{nlp.meta.get('lang', '?')}_{nlp.meta.get('name', 'pipeline')}"
        if "parser" not in nlp.pipe_names:
            raise ValueError(
                f"spaCy pipeline {self.spec!r} has no dependency parser (components: {nlp.pipe_names}); "
                f"use a pipeline with a 'parser' component."
            )
        if any(isinstance(value, bool) or not isinstance(value, int) or value < 1 for value in (n_process, batch_size)):
            raise ValueError(f"n_process and batch_size must be whole numbers >= 1; got {n_process!r} and "
                             f"{batch_size!r}.")
        self.nlp, self.n_process, self.batch_size = nlp, n_process, batch_size
        sudachi = type(getattr(nlp.tokenizer, "tokenizer", None)).__module__.startswith("sudachipy")
        self._byte_limit = SUDACHI_MAX_BYTES if sudachi else None  # GiNZA and spaCy's Japanese pipelines

    def _parse_items(self, items):
        for item in items:
            if isinstance(item, str):
                self._check_length(item)
        from_words = self._doc_from_words
        docs_or_texts = [item if isinstance(item, str) else from_words(item) for item in items]
        docs = self.nlp.pipe(docs_or_texts, batch_size=self.batch_size, n_process=self.n_process)
        return [tree_from_spacy_doc(doc) for doc in docs]

    def _check_length(self, text: str) -> None:
        """Refuse a raw text the pipeline's tokenizer would refuse, before any text of the batch is parsed (SudachiPy's
        own error names neither the text nor the fix)."""
        size, limit, unit = len(text), self.nlp.max_length, "characters"
        if self._byte_limit is not None and size <= limit:
            size, limit, unit = len(text.encode("utf-8")), self._byte_limit, "UTF-8 bytes"
        if size > limit:
            raise TextTooLongError(f"a text of {size} {unit} (it begins {text[:20]!r}) is longer than the parser "
                                   f"{self.spec} reads ({limit}): split it into sentences (one per line or list item)")

    def split_words(self, text: str) -> list[str]:
        """The tokenizer's words alone (no tagging or parsing), the words ``parse(text)`` gives: no kept component
        re-tokenizes (GiNZA's ``compound_splitter`` is excluded), except spaCy's merge_* ones, which need the parse."""
        if any(self.nlp.get_pipe_meta(name).factory.startswith("merge_") for name in self.nlp.pipe_names):
            return super().split_words(text)
        check_valid_unicode(text)
        self._check_length(text)
        return [token.text for token in self.nlp.make_doc(text) if not token.is_space]

    def _doc_from_words(self, words):
        Doc = _import_spacy().tokens.Doc
        return Doc(self.nlp.vocab, words=words, spaces=[True] * (len(words) - 1) + [False] if words else [])


def _spacy_install_hint(name_or_path: str) -> str:
    """What to install (or check) when ``spacy.load`` cannot find a pipeline."""
    if os.sep in name_or_path or "/" in name_or_path or name_or_path.startswith("."):
        return (f"no spaCy pipeline folder at {name_or_path!r} (a folder written by nlp.to_disk(), with a "
                f"config.cfg); check the path, or give an installed pipeline package name instead.")
    package = name_or_path.replace("_", "-")
    if name_or_path.startswith("ja_ginza"):
        how = f"`pip install ginza {package}`"
    else:
        how = (f"`python -m spacy download {name_or_path}` (spaCy's own models) or `pip install {package}` "
               f"(pipelines published on PyPI)")
    return f"spaCy pipeline {name_or_path!r} is not installed. Install it with {how}."


UD1_UPOS_RENAMES = {"CONJ": "CCONJ"}
"""spaCy still knows UD v1's name for coordinating conjunctions; a model trained on v1 data tags with it."""


def tree_from_spacy_doc(doc) -> WordTree:
    """Convert a parsed ``spacy.tokens.Doc``; whitespace tokens are dropped (their dependents move to their head)."""
    kept = [token for token in doc if not token.is_space]
    position = {token.i: index for index, token in enumerate(kept)}

    def head_of(token):
        head = token.head
        while head.i != token.i and head.is_space and head.head.i != head.i:
            token, head = head, head.head
        if head.i == token.i or head.is_space:
            return 0
        return position[head.i] + 1

    starts = [index for index, token in enumerate(kept) if token.is_sent_start or index == 0]
    return WordTree(
        words=[token.text for token in kept],
        heads=[head_of(token) for token in kept],
        upos=[UD1_UPOS_RENAMES.get(token.pos_, token.pos_) or None for token in kept],
        deprels=[token.dep_ or None for token in kept],
        spans=[(token.idx, token.idx + len(token.text)) for token in kept],
        text=doc.text,
        sentence_starts=starts,
    )


# ----------------------------------------------------------------------------------------------------------- stanza
class StanzaParser(Parser):
    """A ``stanza.Pipeline`` (tokenize, mwt, pos, lemma, depparse) using models already on disk (never downloads)."""

    def __init__(self, lang: str, **pipeline_options):
        try:
            import stanza
        except ImportError as error:
            raise ParserNotAvailableError("The stanza backend needs stanza: pip install stanza") from error
        self.spec = f"stanza:{lang}"
        self.lang, self.options = lang, pipeline_options
        self._pipelines = {}
        self._stanza = stanza
        self._pipeline(pretokenized=False)

    def _pipeline(self, pretokenized: bool):
        if pretokenized not in self._pipelines:
            options = {"processors": "tokenize,mwt,pos,lemma,depparse", "download_method": None, "verbose": False}
            options.update(self.options)
            try:
                self._pipelines[pretokenized] = self._stanza.Pipeline(
                    self.lang, tokenize_pretokenized=pretokenized, **options
                )
            except Exception as error:  # stanza raises several types (FileNotFoundError, ResourcesFileNotFound...)
                raise ParserNotAvailableError(
                    f"stanza models for {self.lang!r} are not available ({type(error).__name__}: {error}). Download "
                    f"them once with `python -c \"import stanza; stanza.download('{self.lang}')\"`."
                ) from error
        return self._pipelines[pretokenized]

    def _parse_items(self, items):
        trees = []
        for item in items:
            if isinstance(item, str):
                trees.append(tree_from_stanza_document(self._pipeline(False)(item), text=item))
            else:
                document = self._pipeline(True)([item])
                trees.append(tree_from_stanza_document(document, text=" ".join(item)))
        return trees


def tree_from_stanza_document(document, text: str | None = None) -> WordTree:
    """Convert a ``stanza.Document`` (all its sentences, as a forest).

    Spans come from the tokens' ``start_char``/``end_char`` when stanza set them (a pipeline run on raw text),
    else by locating the tokens in ``text``; without ``text`` it is rebuilt from each sentence's ``text`` (the
    ``# text`` line of a CoNLL-U document) or from the tokens and their ``SpaceAfter`` marks, sentences joined by
    one space.
    """
    words, heads, upos, deprels, starts, multiword, surface = [], [], [], [], [], [], []
    sentence_texts = []
    for sentence in document.sentences:
        offset = len(words)
        starts.append(offset)
        for token in sentence.tokens:
            first = len(words)
            for word in token.words:
                words.append(word.text)
                heads.append(word.head + offset if word.head else 0)
                upos.append(word.upos)
                deprels.append(word.deprel)
            if len(token.words) > 1:
                multiword.append(MultiwordToken(first, len(words) - 1, token.text))
            surface.append((token, len(words) - first))
        sentence_texts.append(sentence.text or "".join(
            token.text + (token.spaces_after if token.spaces_after is not None else " ") for token in sentence.tokens
        ).strip())
    has_offsets = bool(surface) and all(token.start_char is not None for token, _ in surface)
    if has_offsets and (text is not None or document.text is not None):
        text = text if text is not None else document.text
        token_spans = [(token.start_char, token.end_char) for token, _ in surface]
    else:
        text = text if text is not None else " ".join(sentence_texts)
        token_spans = locate_words(text, [token.text for token, _ in surface])
    spans = [span for (_, count), span in zip(surface, token_spans) for _ in range(count)]
    return WordTree(
        words=words, heads=heads, upos=upos, deprels=deprels, spans=spans, text=text,
        sentence_starts=starts if words else (), multiword_tokens=multiword,
    )


# ---------------------------------------------------------------------------------------------------------- CoNLL-U
class ConlluParser(Parser):
    """Gold trees from a CoNLL-U file, returned for inputs equal to a sentence's text (or its surface tokens).

    ``allow_multiple_roots``: read sentences with several roots as forests (see ``conllu.iter_conllu``).
    """

    def __init__(self, path, allow_multiple_roots: bool = False):
        self.spec = f"conllu:{os.fspath(path)}"
        sentences = list(iter_conllu(path, allow_multiple_roots))
        if not sentences:
            raise TreeError(f"{os.fspath(path)} holds no sentence, so the conllu: parser has no tree to give; parse "
                            f"the sentences into it first (hf-syntax parse), or give the treebank's file.")
        self.trees = [sentence.tree for sentence in sentences]
        self._by_text = {tree.text: tree for tree in self.trees}
        self._by_tokens = {_surface_words(path, sentence): sentence.tree for sentence in sentences}

    def _parse_items(self, items):
        trees = []
        for item in items:
            tree = self._by_text.get(item) if isinstance(item, str) else self._by_tokens.get(tuple(item))
            if tree is None:
                raise TreeNotFoundError(
                    f"{self.spec}: no sentence with text/tokens {item!r}; the conllu backend only returns the "
                    f"trees of its file (parse this text into it with 'hf-syntax parse', or use a spaCy or stanza "
                    f"parser)."
                )
            trees.append(tree)
        return trees


def _surface_words(path, sentence) -> tuple[str, ...]:
    """A CoNLL-U sentence's surface tokens (multiword tokens collapsed); a tree that does not collapse is an error
    naming the file, line and sent_id (the tree's own error names neither)."""
    try:
        return sentence.tree.collapse_multiword_tokens().words
    except TreeError as error:
        sent_id = f" (sent_id {sentence.sent_id})" if sentence.sent_id else ""
        raise TreeError(f"{os.fspath(path)}:{sentence.line}: the sentence{sent_id} does not collapse into its surface "
                        f"tokens: {error} Check its multiword token ranges against its heads and sentence_starts."
                        ) from error


# ------------------------------------------------------------------------------------------------------ spec lookup
BACKENDS = {"spacy": SpacyParser, "stanza": StanzaParser, "conllu": ConlluParser}
_LOADED_PARSERS: dict = {}


def load_parser(spec, **options) -> Parser:
    """A new parser for ``spec`` (``"spacy:ja_ginza"``, ``"stanza:fr"``, ``"conllu:dev.conllu.gz"``).

    A ``Parser`` is returned as is and a spaCy ``Language`` object is wrapped; ``options`` go to the backend
    (``n_process``, ``batch_size`` for spaCy; pipeline options for stanza).
    """
    if isinstance(spec, Parser):
        return spec
    if not isinstance(spec, str):
        if hasattr(spec, "pipe") and hasattr(spec, "vocab"):
            _check_options("spacy", options)
            return SpacyParser(spec, **options)
        raise TypeError(f"parser must be a spec string, a Parser or a spaCy Language; got {type(spec).__name__}.")
    backend, separator, argument = spec.partition(":")
    if not separator or not argument or backend not in BACKENDS:
        raise ParserSpecError(
            f"parser spec {spec!r} is not '<backend>:<argument>' with a backend in {sorted(BACKENDS)}; "
            f"e.g. 'spacy:en_core_web_sm', 'spacy:ja_ginza', 'stanza:fr', 'conllu:path/to/dev.conllu'."
        )
    _check_options(backend, options)
    return BACKENDS[backend](argument, **options)


def _check_options(backend: str, options: dict) -> None:
    """Refuse an option the backend does not take, listing those it does (Python's own TypeError names none).
    stanza's options go on to ``stanza.Pipeline``, which checks them itself."""
    parameters = list(inspect.signature(BACKENDS[backend]).parameters.values())[1:]  # after the spec's argument
    if any(parameter.kind is parameter.VAR_KEYWORD for parameter in parameters):
        return
    known = [parameter.name for parameter in parameters]
    for name in options:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            guess = f"did you mean {close[0]!r}? " if close else ""
            raise TypeError(f"the {backend} parser has no option {name!r}; {guess}its options are "
                            f"{', '.join(known)}.")


def _cache_key(spec: str, options: dict) -> tuple:
    """``get_parser``'s cache key: option values that are dicts, lists or sets (stanza's
    ``processors={"tokenize": "ewt"}``) become hashable, and equal options give equal keys in any order."""
    def frozen(value):
        if isinstance(value, dict):
            return tuple(sorted((repr(key), frozen(item)) for key, item in value.items()))
        if isinstance(value, (list, tuple)):
            return tuple(frozen(item) for item in value)
        if isinstance(value, (set, frozenset)):
            return frozenset(frozen(item) for item in value)
        return value
    return spec, frozen(options)


def get_parser(spec, **options) -> Parser:
    """Like ``load_parser`` but loaded once per process and cached (what datasets map functions use)."""
    if not isinstance(spec, str):
        return load_parser(spec, **options)
    key = _cache_key(spec, options)
    if key not in _LOADED_PARSERS:
        _LOADED_PARSERS[key] = load_parser(spec, **options)
    return _LOADED_PARSERS[key]
