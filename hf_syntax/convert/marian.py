"""Weight conversion between transformers' `MarianMTModel` and our baseline core, in both directions.

Both are the post-LN Transformer with sinusoidal positions laid out [sin | cos]; parameter names match except for
the feed-forward (`fc1` vs `ffn.fc1`) and the output bias (Marian's `final_logits_bias` buffer vs our optional
`lm_head.bias`). Matching logits prove the core is the Transformer, and the converter lets users start from an
OPUS-MT checkpoint they have on disk.
"""

import re

import torch
from transformers import MarianConfig, MarianMTModel

from hf_syntax.attention import RELATIVE_TERMS
from hf_syntax.configuration_syntax_transformer import SyntaxTransformerConfig
from hf_syntax.modeling_syntax_transformer import SyntaxTransformerForConditionalGeneration
from hf_syntax.parse_head import DBSA_PARSE_HEAD

_SHARED_FIELDS = (
    "vocab_size", "decoder_vocab_size", "d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads",
    "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim", "activation_function", "dropout",
    "attention_dropout", "activation_dropout", "max_position_embeddings", "scale_embedding",
    "share_encoder_decoder_embeddings", "tie_word_embeddings", "pad_token_id", "bos_token_id", "eos_token_id",
    "decoder_start_token_id",
)
_FFN = re.compile(r"(layers\.\d+\.)(fc[12]\.)")
_OUR_FFN = re.compile(r"(layers\.\d+\.)ffn\.(fc[12]\.)")


def config_from_marian(marian_config: MarianConfig, **overrides) -> SyntaxTransformerConfig:
    """Our baseline config with the same architecture as `marian_config` (syntax mechanisms off)."""
    values = {name: getattr(marian_config, name) for name in _SHARED_FIELDS}
    if values["share_encoder_decoder_embeddings"] and not values["tie_word_embeddings"]:
        raise ValueError("A Marian model that shares embeddings but unties the output projection is not supported.")
    return SyntaxTransformerConfig(**values, output_bias=True, **overrides)


def from_marian(marian: MarianMTModel, **config_overrides) -> SyntaxTransformerForConditionalGeneration:
    """Our baseline model holding the weights of `marian` (a `MarianMTModel` instance)."""
    if not isinstance(marian, MarianMTModel):
        raise TypeError(f"from_marian converts a MarianMTModel (MarianMTModel.from_pretrained(folder)); got "
                        f"{type(marian).__name__}.")
    if getattr(marian.config, "normalize_before", False):
        raise ValueError("Pre-LN Marian models are not supported: our core is post-LN like the original Transformer.")
    model = SyntaxTransformerForConditionalGeneration(config_from_marian(marian.config, **config_overrides))
    state = {}
    for name, tensor in marian.state_dict().items():
        if "embed_positions" in name:
            continue  # sinusoidal, recomputed on the fly
        if name == "final_logits_bias":
            state["lm_head.bias"] = tensor[0]
            continue
        state[_FFN.sub(r"\1ffn.\2", name)] = tensor
    _load_exactly(model, state)
    model.generation_config = marian.generation_config
    return model.eval() if not marian.training else model


def to_marian(model: SyntaxTransformerForConditionalGeneration) -> MarianMTModel:
    """A `MarianMTModel` with the weights of our model; only the plain baseline (no syntax mechanism) converts."""
    # by name: a model loaded with trust_remote_code is an instance of the folder's copy of the class
    if SyntaxTransformerForConditionalGeneration.__name__ not in {kind.__name__ for kind in type(model).__mro__}:
        raise TypeError(f"to_marian converts a SyntaxTransformerForConditionalGeneration (an hf_syntax translation "
                        f"model); got {type(model).__name__}.")
    config = model.config
    syntax_options = {
        **{kind.clip_field: 0 for kind in RELATIVE_TERMS.values()},
        **dict.fromkeys(DBSA_PARSE_HEAD.layer_fields.values(), 0),
        "encoder_layer_type": "standard", "source_features": [], "absolute_positions": True,
    }
    differing = [name for name, plain in syntax_options.items() if getattr(config, name) != plain]
    if differing:
        raise ValueError(f"Only the plain baseline converts to Marian; this model sets {differing}.")
    marian_config = MarianConfig(**{name: getattr(config, name) for name in _SHARED_FIELDS})
    marian = MarianMTModel(marian_config)
    state = {}
    for name, tensor in model.state_dict().items():
        if name == "lm_head.bias":
            state["final_logits_bias"] = tensor[None]
            continue
        state[_OUR_FFN.sub(r"\1\2", name)] = tensor
    _load_exactly(marian, state, ignore=("embed_positions", "final_logits_bias"))
    marian.generation_config = model.generation_config
    return marian.eval() if not model.training else marian


def _load_exactly(target: torch.nn.Module, state: dict, ignore: tuple[str, ...] = ()):
    """Load `state` and fail on any parameter that is missing or left over (a silent partial load is a bug)."""
    result = target.load_state_dict(state, strict=False)
    missing = [key for key in result.missing_keys if not any(part in key for part in ignore)]
    unexpected = list(result.unexpected_keys)
    if missing or unexpected:
        raise ValueError(f"Weight conversion mismatch: missing {missing[:5]}, unexpected {unexpected[:5]}.")


__all__ = ["config_from_marian", "from_marian", "to_marian"]
