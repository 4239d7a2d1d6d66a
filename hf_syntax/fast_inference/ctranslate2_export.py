"""Export a seq2seq model to CTranslate2 where CTranslate2's Transformer can compute exactly what ours computes.

The weights go through CTranslate2's own spec classes (``TransformerEncoderSpec`` / ``TransformerDecoderSpec`` /
``TransformerSpec``) and its ``Converter`` base class, which validates, quantizes and writes ``model.bin``. What
maps and what is refused (with the reason) is decided, and the weights are mapped, in ``ctranslate2_spec``; this
module writes the folder: ``model.bin``, the vocabularies, the tokenizer(s) and the metadata the runtime model
(``ctranslate2_model``) reads back.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import torch

from ..folder_layout import CTRANSLATE2_METADATA_FILE, TARGET_TOKENIZER_DIR, new_folder_problem
from .ctranslate2_spec import NotExpressibleError, build_spec, check_expressible, feature_streams, import_ctranslate2

QUANTIZATIONS = ("float32", "int8", "int8_float32", "int16")
FEATURE_SEPARATOR = "\uffe8"
"""CTranslate2 splits a source token into its streams on this character (``word￨12``)."""


def vocabulary_tokens(tokenizer, size: int) -> list[str]:
    """The tokenizer's tokens by id, padded with unique fillers up to the model's vocabulary size."""
    tokens = tokenizer.convert_ids_to_tokens(list(range(min(size, len(tokenizer)))))
    tokens += [f"<hf_syntax_unused_{index}>" for index in range(len(tokens), size)]
    if len(set(tokens)) != len(tokens):
        raise ValueError("the tokenizer maps two ids to the same token; CTranslate2 vocabularies must be unique.")
    return tokens


def _converter_class():
    """A ``ctranslate2.converters.Converter`` for an in-memory model (defined lazily: ctranslate2 is optional)."""
    ctranslate2 = import_ctranslate2()

    class SyntaxTransformerConverter(ctranslate2.converters.Converter):
        """Builds the spec, registers vocabularies and special tokens; ``convert`` validates, quantizes, saves."""

        def __init__(self, model, source_tokenizer, target_tokenizer):
            self.model = model
            self.source_tokenizer = source_tokenizer
            self.target_tokenizer = target_tokenizer

        def _load(self):
            config = self.model.config
            spec = build_spec(self.model)
            source = vocabulary_tokens(self.source_tokenizer, config.vocab_size)
            target = vocabulary_tokens(self.target_tokenizer, config.decoder_vocab_size)
            streams = feature_streams(config)
            if streams:
                clashing = [token for token in source if FEATURE_SEPARATOR in token]
                if clashing:
                    raise NotExpressibleError(
                        f"source tokens {clashing[:3]} contain CTranslate2's feature separator {FEATURE_SEPARATOR!r}."
                    )
            spec.register_source_vocabulary(source)
            for stream in streams:
                spec.register_source_vocabulary([str(index) for index in range(stream.vocabulary_size)])
            spec.register_target_vocabulary(target)
            if self.target_tokenizer.unk_token_id is not None:
                spec.config.unk_token = target[self.target_tokenizer.unk_token_id]
            spec.config.bos_token = target[config.bos_token_id]
            spec.config.eos_token = target[_single_eos(config)]
            spec.config.decoder_start_token = target[config.decoder_start_token_id]
            spec.config.layer_norm_epsilon = self.model.model.encoder.layers[0].self_attn_layer_norm.eps
            return spec

    return SyntaxTransformerConverter


def _single_eos(config) -> int:
    eos = config.eos_token_id
    if isinstance(eos, list):
        if len(eos) != 1:
            raise NotExpressibleError(f"eos_token_id={eos}: CTranslate2 stops on one end token per model.")
        eos = eos[0]
    return eos


def export_ctranslate2(model, tokenizer, out_dir, *, target_tokenizer=None, quantization: str | None = None,
                       overwrite: bool = False) -> Path:
    """Write a CTranslate2 folder for ``model``: ``model.bin`` + CTranslate2's config and vocabularies, the
    tokenizer(s), ``generation_config.json`` and ``CTRANSLATE2_METADATA_FILE`` (our config, with the parser spec
    a feature model needs, and the source streams). Returns the folder.

    ``quantization``: None/"float32", "int8", "int8_float32" or "int16" (CTranslate2's weight types for CPU).
    """
    if quantization not in (None, *QUANTIZATIONS):
        raise ValueError(f"quantization={quantization!r} is not supported; choose one of {QUANTIZATIONS}.")
    check_expressible(model.config)
    out_dir = Path(out_dir)
    if problem := new_folder_problem(out_dir, overwrite):
        raise FileExistsError(problem)
    target_tokenizer = target_tokenizer or tokenizer
    converter = _converter_class()(model.eval(), tokenizer, target_tokenizer)
    with torch.no_grad():
        converter.convert(str(out_dir), quantization=quantization, force=True)
    tokenizer.save_pretrained(out_dir)
    if target_tokenizer is not tokenizer:
        target_tokenizer.save_pretrained(out_dir / TARGET_TOKENIZER_DIR)
    model.generation_config.save_pretrained(out_dir)
    ctranslate2 = import_ctranslate2()
    metadata = {
        "format": "ctranslate2",
        "ctranslate2_version": ctranslate2.__version__,
        "quantization": quantization or "float32",
        "feature_streams": [asdict(stream) for stream in feature_streams(model.config)],
        "model_config": model.config.to_dict(),
    }
    (out_dir / CTRANSLATE2_METADATA_FILE).write_text(json.dumps(metadata, indent=2, sort_keys=True) + "\n")
    return out_dir


__all__ = ["FEATURE_SEPARATOR", "QUANTIZATIONS", "export_ctranslate2"]
