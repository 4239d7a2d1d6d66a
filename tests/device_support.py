"""Tiny models of every model type and synthetic but valid inputs for them, shared by the CPU dtype tests
(test_dtypes.py) and the CUDA tests (test_gpu.py): `MODEL_KINDS` names them, `build_model(kind)` makes one with
spread random weights (outputs that differ from token to token) and `make_batch(kind)` a padded batch of two with
every column its forward reads (labels included). Nothing here needs ../shared or a tokenizer."""

import torch

from hf_syntax import BertPosConfig, BertPosForSequenceClassification, SyntaxTransformerConfig, config_for
from hf_syntax.columns import EMBEDDED_FEATURES
from hf_syntax.modeling_syntax_transformer import SyntaxTransformerForConditionalGeneration
from hf_syntax.self_parse import CONTINUES, NOT_A_WORD, STARTS
from random_weights import spread_weights

VOCAB, SOURCE_LENGTH, TARGET_LENGTH = 40, 8, 6
TINY = dict(
    vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
    decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=32,
    pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
)
SEQ2SEQ_KINDS = {
    "syntax_transformer": None,
    "dbsa": ("dbsa_enc_dec", {"parse_layer_encoder": 2, "parse_layer_decoder": 2}),
    "dep_rpe": ("transformer_dep_rel", {}),  # key and value terms: the explicit attention path
    "rel_keys": ("transformer_rel", {"relative_position_values": False}),  # key terms only: the fused path
    "dbsa_dep_rel": ("dbsa_dep_rel", {"parse_layer_encoder": 2, "parse_layer_decoder": 2}),
    "dbsa_dep_rel_self": ("dbsa_dep_rel_self", {"parse_layer_encoder": 2, "parse_layer_decoder": 2,
                                                "self_parse_layers": 1}),
    "graph_transformer": ("graph_transformer_half_dim_gate", {}),
    "graph_self_gate": ("graph_transformer_self_gate", {}),
    "syntax_infused": ("syntax_infused", {"feature_embedding_dim": 8}),
}
MODEL_KINDS = (*SEQ2SEQ_KINDS, "bert_pos")


def build_model(kind: str, seed: int = 0, std: float = 0.2, **overrides):
    """A float32 model of `kind` on the CPU, in eval mode, with N(0, std^2) weights (LayerNorms at identity);
    `overrides` change the translation models' config (e.g. `dropout=0.0`)."""
    torch.manual_seed(seed)
    if kind == "bert_pos":
        config = BertPosConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=32, max_position_embeddings=32, num_labels=2)
        return spread_weights(BertPosForSequenceClassification(config), seed, std).eval()
    if SEQ2SEQ_KINDS[kind] is None:
        config = SyntaxTransformerConfig(**TINY, **overrides)
    else:
        name, preset = SEQ2SEQ_KINDS[kind]
        config = config_for(name, **{**TINY, **preset, **overrides})
    model = spread_weights(SyntaxTransformerForConditionalGeneration(config), seed, std)
    if config.self_parse_layers:  # word starts of the synthetic vocabulary: specials, then even ids start words
        roles = torch.tensor([NOT_A_WORD] * 3 + [STARTS if i % 2 == 0 else CONTINUES for i in range(3, VOCAB)])
        model.get_encoder().self_parser.word_roles.copy_(roles.to(torch.int8))
    model.generation_config.update(num_beams=1, do_sample=False, max_new_tokens=5, min_new_tokens=5, max_length=None)
    return model.eval()


def make_batch(kind: str, seed: int = 1, source_length: int = SOURCE_LENGTH,
               target_length: int = TARGET_LENGTH) -> dict[str, torch.Tensor]:
    """A batch of two on the CPU: row 1 padded (source and target), every syntax column valid for `kind`."""
    generator = torch.Generator().manual_seed(seed)

    def draw(low, high, shape):
        return torch.randint(low, high, shape, generator=generator)

    shape = (2, source_length)
    mask = torch.ones(shape, dtype=torch.long)
    mask[1, source_length - 3:] = 0
    pad = mask == 0
    if kind == "bert_pos":
        input_ids = draw(3, VOCAB, shape).masked_fill(pad, 0)
        pos_ids = draw(3, 17, shape).masked_fill(pad, 0)
        pos_ids[:, 0] = 1  # [CLS]
        return {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(input_ids),
                "pos_ids": pos_ids, "labels": torch.tensor([0, 1])}
    lengths = mask.sum(1, keepdim=True)
    batch = {
        "input_ids": draw(3, VOCAB, shape).masked_fill(pad, 0),
        "attention_mask": mask,
        "dep_heads": (draw(0, 1 << 20, shape) % lengths).masked_fill(pad, -100),
        "dep_depths": draw(0, 4, shape).masked_fill(pad, -1),
    }
    for column in EMBEDDED_FEATURES.values():
        size = getattr(SyntaxTransformerConfig(), column.size_field)
        batch[column.name] = draw(3, size, shape).masked_fill(pad, 0)
    labels = draw(3, VOCAB, (2, target_length))
    labels[1, target_length - 2:] = -100
    batch["labels"] = labels
    batch["decoder_dep_heads"] = draw(0, target_length, labels.shape).masked_fill(labels == -100, -100)
    return batch


def source_inputs(model, batch: dict) -> dict:
    """What `generate` takes: ids, mask and the source columns the model reads at inference."""
    names = ("input_ids", "attention_mask", *model.config.needs_source_features)
    return {name: batch[name] for name in names}


def to_device(batch: dict, device) -> dict:
    return {name: value.to(device) for name, value in batch.items()}


def train_one_step(model, batch: dict, learning_rate: float) -> None:
    """One AdamW step on the parameters that require a gradient (an adapter's, a prompt's), then eval mode."""
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=learning_rate)
    model(**batch).loss.backward()
    optimizer.step()
    model.eval()


def logits_of(model, batch: dict) -> torch.Tensor:
    """The model's float32 logits for `batch` (labels given: the decoder reads the shifted labels)."""
    return model(**batch).logits.float()


__all__ = ["MODEL_KINDS", "SEQ2SEQ_KINDS", "build_model", "logits_of", "make_batch", "source_inputs", "to_device",
           "train_one_step"]
