"""Inference Endpoint handler of an hf-syntax model (copied as ``handler.py`` into every exported folder).

Inference Endpoints call ``EndpointHandler(path)(data)`` with ``data = {"inputs": ..., "parameters": {...}}``:

* translation models: ``inputs`` is a text or a list of texts -> ``[{"translation_text": ...}]`` (one dict per text);
  ``parameters``: ``num_beams``, ``max_new_tokens``, ``pretokenized`` (input words separated by spaces are parsed
  as given; default: as the model was trained).
* BERT+POS classifiers: ``inputs`` is a text, ``{"text": ..., "text_pair": ...}`` or a list of them ->
  ``[{"label": ..., "score": ...}]`` (one dict per input); ``parameters``: ``top_k``, which makes each input's
  item a list of its ``top_k`` best labels, ``[[{"label": ..., "score": ...}, ...]]``, for one input too.

``options`` (``use_cache``, ``wait_for_model``), which clients of the hosted Inference API send, is accepted and
changes nothing here.

A bad request (missing ``inputs``, wrong types, an empty text, a text that is not valid Unicode, a text longer than
the model reads, an unknown parameter) is answered with ``{"error": "..."}`` saying what to change, never with a
traceback. The model is the
folder's own code loaded with ``trust_remote_code=True``, so hf_syntax need not be installed; feature models parse
on the fly with the parser named in ``config.json`` (the folder's ``requirements.txt`` installs it).

The backend is chosen by ``backend=`` or the ``HF_SYNTAX_BACKEND`` environment variable; each backend is a function
of the folder path that returns a callable taking the pipeline's arguments (see ``BACKENDS``): ``pytorch`` (default)
or ``ctranslate2`` (CTranslate2 decoding; needs ``hf-syntax[ctranslate2]`` installed). A request's texts are
translated ``batch_size=`` (or ``HF_SYNTAX_BATCH_SIZE``, default ``BATCH_SIZE``) at a time, so a long list of them
needs no more memory than that many.
"""

from __future__ import annotations

import os

from transformers import AutoConfig, pipeline
from transformers.dynamic_module_utils import get_class_from_dynamic_module

SERVING_OPTIONS = {"use_cache", "wait_for_model"}
"""The request ``options`` Hugging Face's inference clients may send: accepted, and left to the serving layer."""
TRANSLATION_PARAMETERS = {"num_beams": int, "max_new_tokens": int, "pretokenized": bool}
CLASSIFICATION_PARAMETERS = {"top_k": int}
MAX_BEAMS = 16
BATCH_SIZE = 32
"""Texts translated at once: a request's list is decoded in batches of this many (each times num_beams sequences)."""


class BadRequest(ValueError):
    """The request cannot be answered as sent; the message says what to change."""


def load_pytorch_pipeline(path: str):
    """The folder's own transformers pipeline (translation or BERT+POS classification), in PyTorch."""
    return pipeline(model=path, trust_remote_code=True)


def load_ctranslate2_pipeline(path: str):
    """The same translation pipeline decoding with CTranslate2 (the folder is converted once, at start-up). Needs
    ``pip install 'hf-syntax[ctranslate2]'``; refused with the reason for models CTranslate2 cannot express."""
    try:
        from hf_syntax.serving.loading import load_pipeline
    except ImportError as error:
        raise ImportError("the ctranslate2 backend needs hf_syntax and CTranslate2: pip install "
                          "'hf-syntax[ctranslate2]' (or use HF_SYNTAX_BACKEND=pytorch).") from error
    return load_pipeline(path, backend="ctranslate2")


def check_saved_files(path: str) -> None:
    """Name a cut-off weights file or a damaged ``config.json`` in one line, with the folder's own ``saved_files.py``:
    transformers' ``pipeline()`` would bury that error in a list of tracebacks, one per model class it tried. A folder
    exported before the check existed is loaded as it is."""
    if os.path.isfile(os.path.join(path, "saved_files.py")):
        get_class_from_dynamic_module("saved_files.check_model_files", path)(path)


BACKENDS = {"pytorch": load_pytorch_pipeline, "ctranslate2": load_ctranslate2_pipeline}
"""Backend name -> loader(path) -> a pipeline-like callable with a ``tokenizer`` attribute."""


class EndpointHandler:
    """Answers Inference Endpoint requests for the model in ``path`` (see the module docstring for the contract)."""

    def __init__(self, path: str = "", backend: str | None = None, batch_size: int | None = None):
        path = path or "."
        backend = backend or os.environ.get("HF_SYNTAX_BACKEND", "pytorch")
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; choose one of {sorted(BACKENDS)} (HF_SYNTAX_BACKEND).")
        self.batch_size = _batch_size(batch_size)
        check_saved_files(path)
        # blank as the pipeline counts it (whitespace, zero-width, control and other invisible characters only): the
        # folder's own text_checks.py, since this standalone file cannot import hf_syntax
        self.is_blank = get_class_from_dynamic_module("text_checks.is_blank", path)
        self.config = AutoConfig.from_pretrained(path, trust_remote_code=True)
        self.pipeline = BACKENDS[backend](path)
        self.is_translation = bool(getattr(self.config, "is_encoder_decoder", False))
        self.parameter_types = TRANSLATION_PARAMETERS if self.is_translation else CLASSIFICATION_PARAMETERS
        self.max_source_tokens = _max_source_tokens(self.pipeline.tokenizer, self.config)

    def __call__(self, data):
        try:
            inputs, parameters = self._read_request(data)
        except BadRequest as error:
            return {"error": str(error)}
        try:
            if self.is_translation:
                return self._translate(inputs, parameters)
            results = self.pipeline(inputs, **parameters)
        except BadRequest as error:
            return {"error": str(error)}
        except ValueError as error:  # the pipeline's own input errors (texts it cannot parse or align)
            return {"error": f"the model cannot read this input: {error}"}
        # The stock classification pipeline returns a bare dict for one input, and with top_k one input's list of
        # labels, which read as one label per input; the contract is one item per input.
        return [results] if isinstance(results, dict) or ("top_k" in parameters and not isinstance(inputs, list)) \
            else results

    def _translate(self, inputs, parameters: dict) -> list:
        """Read the texts as the model reads them (segmented, for a model trained on pre-split words), refuse one
        longer than the model reads (the pipeline would translate its first tokens only), then translate those
        readings: the length counted is that of what the model is given, and the texts are parsed once."""
        texts = inputs if isinstance(inputs, list) else [inputs]
        readings = self.pipeline.reader.read_batch(texts, parameters.get("pretokenized"))
        for index, reading in enumerate(readings):
            length = len(self.pipeline.tokenizer(reading.text, verbose=False)["input_ids"])
            if length > self.max_source_tokens:
                where = f"inputs[{index}]" if isinstance(inputs, list) else "inputs"
                raise BadRequest(f"{where} is {length} tokens long; this model reads at most "
                                 f"{self.max_source_tokens}. Split it into shorter sentences.")
        return self.pipeline(readings, batch_size=min(len(readings), self.batch_size), **parameters)

    # --------------------------------------------------------------------------------------------- validation
    def _read_request(self, data):
        if not isinstance(data, dict):
            raise BadRequest(f'the request body must be a JSON object {{"inputs": ...}}; got {_kind(data)}.')
        unknown = sorted(set(data) - {"inputs", "parameters", "options"})
        if unknown:
            raise BadRequest(f"unknown request field(s) {unknown}; a request has 'inputs' and optional 'parameters' "
                             f"(and 'options').")
        options = data.get("options") or {}  # what clients of the hosted Inference API send; it is the server's concern
        if not isinstance(options, dict) or set(options) - SERVING_OPTIONS:
            raise BadRequest(f"'options' holds the serving options {sorted(SERVING_OPTIONS)} (nothing here depends on "
                             f"them); got {options!r}.")
        if "inputs" not in data:
            raise BadRequest('the request has no "inputs"; send {"inputs": "a sentence"} or a list of sentences.')
        inputs = data["inputs"]
        items = inputs if isinstance(inputs, list) else [inputs]
        if isinstance(inputs, list) and not inputs:
            raise BadRequest('"inputs" is an empty list; send at least one text.')
        for index, item in enumerate(items):
            where = f"inputs[{index}]" if isinstance(inputs, list) else "inputs"
            self._check_item(item, where)
        return inputs, self._read_parameters(data.get("parameters"))

    def _check_item(self, item, where: str) -> None:
        if self.is_translation:
            if not isinstance(item, str):
                raise BadRequest(f"{where} is {_kind(item)}; a translation model takes a text or a list of texts.")
            self._check_text(item, None, where)
            return
        if isinstance(item, dict):
            if "text" not in item or set(item) - {"text", "text_pair"}:
                raise BadRequest(f"{where} has keys {sorted(item)}; a text pair is "
                                 f'{{"text": ..., "text_pair": ...}}.')
            for key in item:
                if not isinstance(item[key], str) and not (key == "text_pair" and item[key] is None):
                    raise BadRequest(f"{where}.{key} is {_kind(item[key])}; it must be a text.")
            self._check_text(item["text"], item.get("text_pair"), where)
        elif isinstance(item, str):
            self._check_text(item, None, where)
        else:
            raise BadRequest(f'{where} is {_kind(item)}; send a text or {{"text": ..., "text_pair": ...}}.')

    def _check_text(self, text: str, pair: str | None, where: str) -> None:
        for name, value in (("text", text), ("text_pair", pair)):
            if value is None:
                continue
            if self.is_blank(value):
                raise BadRequest(f"{where} has an empty {name}; there is nothing to "
                                 f"{'translate' if self.is_translation else 'classify'}.")
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as error:  # JSON can carry a lone surrogate ("\\ud800"); no tokenizer encodes it
                raise BadRequest(f"{where} {name} has a lone surrogate (\\u{ord(value[error.start]):04x} at character "
                                 f"{error.start}), which is not valid Unicode; send UTF-8 text.") from None
        if self.is_translation:
            return  # counted as the model reads it, after segmenting (``_translate``)
        length = len(self.pipeline.tokenizer(text, pair)["input_ids"])
        if length > self.max_source_tokens:
            raise BadRequest(f"{where} is {length} tokens long; this model reads at most {self.max_source_tokens}. "
                             f"Split it into shorter sentences.")

    def _read_parameters(self, parameters) -> dict:
        if parameters is None:
            return {}
        if not isinstance(parameters, dict):
            raise BadRequest(f'"parameters" must be an object; got {_kind(parameters)}.')
        unknown = sorted(set(parameters) - set(self.parameter_types))
        if unknown:
            raise BadRequest(f"unknown parameter(s) {unknown}; this model accepts {sorted(self.parameter_types)}.")
        for name, value in parameters.items():
            wanted = self.parameter_types[name]
            # bool is an int in Python: {"num_beams": true} must not pass as 1.
            if not isinstance(value, wanted) or (wanted is int and isinstance(value, bool)):
                raise BadRequest(f"parameter {name} is {value!r}; it must be a{'n' if wanted is int else ''} "
                                 f"{wanted.__name__}.")
            if wanted is int and value < 1:
                raise BadRequest(f"parameter {name} is {value}; it must be at least 1.")
        if parameters.get("num_beams", 1) > MAX_BEAMS:
            raise BadRequest(f"parameter num_beams is {parameters['num_beams']}; this endpoint allows at most "
                             f"{MAX_BEAMS}.")
        try:  # the pipeline's own checks, e.g. a max_new_tokens that leaves no room beside a forced end token or
            # runs past the decoder's position table
            self.pipeline._sanitize_parameters(**parameters)
        except (TypeError, ValueError) as error:
            raise BadRequest(f"bad parameters: {error}") from None
        return dict(parameters)


def _kind(value) -> str:
    """What a request sent, in words ("an int", "a list", "null")."""
    if value is None:
        return "null"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _batch_size(given: int | None) -> int:
    """``batch_size=``, else ``HF_SYNTAX_BATCH_SIZE``, else ``BATCH_SIZE``: a whole number >= 1."""
    value = os.environ.get("HF_SYNTAX_BATCH_SIZE", BATCH_SIZE) if given is None else given
    text = str(value).strip()
    if not (text.isascii() and text.isdigit() and int(text) >= 1):
        raise ValueError(f"batch size {value!r} (batch_size= or HF_SYNTAX_BATCH_SIZE): give the number of texts to "
                         f"translate at once, a whole number >= 1 (default {BATCH_SIZE}).")
    return int(text)


def _max_source_tokens(tokenizer, config) -> int:
    """Longest input in tokens: the tokenizer's limit, capped by the model's position table."""
    limits = [getattr(config, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)]
    return min(limit for limit in limits if isinstance(limit, int) and 0 < limit < 10**6)
