"""The translation recipe's model: ``model.type`` + ``model.kwargs``, sized to the tokenizers, freshly initialised."""

from __future__ import annotations

import inspect
from typing import Any

from transformers import AutoModelForSeq2SeqLM

from hf_syntax.recipes.config import ConfigError
from hf_syntax.recipes.translation.schema import TranslationRecipeConfig, resolve_model_type


def build_model(config: TranslationRecipeConfig, source, target, feature_settings: dict[str, Any] | None = None):
    """A freshly initialised seq2seq model of ``model.type`` with ``model.kwargs``, sized to the tokenizers.

    ``feature_settings`` (parsers, label vocabularies) are stored in the config where the config has the field,
    so the exported model can featurize raw text at inference the way it was trained.
    """
    section = config.model  # checked by schema.check_model_section when the config was loaded
    config_class, preset = resolve_model_type(section.type)
    accepted = set(inspect.signature(config_class.__init__).parameters) | set(config_class().to_dict())
    derived = {
        "vocab_size": len(source),
        "pad_token_id": target.pad_token_id,
        "eos_token_id": target.eos_token_id,
        "bos_token_id": target.bos_token_id,
        "decoder_start_token_id": target.bos_token_id if target.bos_token_id is not None else target.pad_token_id,
    }
    if source is not target:
        if section.kwargs.get("share_encoder_decoder_embeddings"):
            raise ConfigError("model.kwargs.share_encoder_decoder_embeddings needs one joint vocabulary (tokenizer.joint)")
        if "decoder_vocab_size" not in accepted:
            raise ConfigError(f"{config_class.__name__} has no decoder_vocab_size; use tokenizer.joint: true")
        derived.update(decoder_vocab_size=len(target), share_encoder_decoder_embeddings=False)
    derived.update({key: value for key, value in (feature_settings or {}).items() if key in accepted})
    for key, value in derived.items():
        if key in section.kwargs and section.kwargs[key] != value:
            raise ConfigError(
                f"model.kwargs.{key} = {section.kwargs[key]!r} contradicts the tokenizer or features section "
                f"({value!r}); drop it from model.kwargs"
            )
    kwargs = {**preset, **section.kwargs, **derived}
    model_config = config_class(**kwargs)
    model = AutoModelForSeq2SeqLM.from_config(model_config)  # model.type is a seq2seq one: check_model_section
    if hasattr(model, "read_source_tokenizer"):  # an hf_syntax model (the recipe also trains transformers' Marian)
        model.read_source_tokenizer(source)
    # max_length (not max_new_tokens): Seq2SeqTrainer fills in max_length=20 otherwise, and generate then warns.
    model.generation_config.update(
        num_beams=config.generation.num_beams,
        max_length=config.generation.max_new_tokens + 1,  # + the decoder start token
        max_new_tokens=None,
        length_penalty=config.generation.length_penalty,
        forced_eos_token_id=target.eos_token_id,
        **{key: value for key, value in derived.items() if key.endswith("token_id")},
    )
    return model
