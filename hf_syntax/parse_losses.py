"""The losses of the DBSA parse heads (Deguchi et al. 2019) and how they join the translation loss.

A parse head's attention over the keys is its predicted head distribution; its loss is `-log A[t, head(t)]` over the
tokens with a gold head (`parse_head.DBSA_PARSE_HEAD.gold_columns`: `dep_heads` for the encoder, `decoder_dep_heads`
for the decoder); a self-parsing model's bottom parser (`self_parse.py`) is scored the same way on `dep_heads`
(`self_parse_loss`). The model's loss is the translation loss plus each parse loss times its lambda
(`weighted_parse_losses`), and `LOSS_PARTS` names the parts a model output reports, which training logs show.
"""

import torch
from torch.nn import functional as F
from transformers.utils import is_torchdynamo_compiling

from .columns import IGNORE_INDEX, check_integer_column
from .parse_head import DBSA_PARSE_HEAD, SIDES

LOSS_PARTS = ("translation_loss", "encoder_parse_loss", "decoder_parse_loss", "self_parse_loss")
"""The fields of a translation output that hold the parts of its loss (None for a part the model lacks)."""


def shift_decoder_heads(heads: torch.Tensor) -> torch.Tensor:
    """Label-space heads -> decoder-input rows: label t is decoder input t+1, so a head index h becomes
    h+1 on row t+1; the start token and heads lying in the future of their row (after the causal mask) are
    unsupervised (-100)."""
    shifted = heads.new_full(heads.shape, IGNORE_INDEX)
    previous = heads[:, :-1]
    shifted[:, 1:] = torch.where(previous >= 0, previous + 1, previous.new_tensor(IGNORE_INDEX))
    rows = torch.arange(heads.shape[1], device=heads.device)
    return shifted.masked_fill(shifted > rows, IGNORE_INDEX)


def parse_loss(log_probs: torch.Tensor, heads: torch.Tensor, denominator: torch.Tensor | None = None) -> torch.Tensor:
    """`-log A[t, head(t)]` summed over supervised tokens and divided by `denominator` (default: their number, i.e.
    the mean); zero (with a graph) when nothing is supervised. No branch on the heads' values: no wait for a GPU, no
    break in a torch.compile graph."""
    log_probs, heads = log_probs.flatten(0, 1).float(), heads.flatten().long()  # nll_loss takes int64 targets
    if denominator is None:
        denominator = (heads != IGNORE_INDEX).sum()
    return F.nll_loss(log_probs, heads, ignore_index=IGNORE_INDEX, reduction="sum") / denominator.clamp(min=1)


def check_heads(name: str, heads, shape: tuple[int, int], column_of: str, keep: torch.Tensor | None = None,
                 mask_name: str = "attention_mask"):
    """`heads` must be a (batch, length) tensor of head indices in [0, length) or -100, as `shape` (that of
    `column_of`) says, and, where a mask `keep` (1 = a token) is given, point only at kept positions: a head on a
    padded position scored the masked-out key, a loss of 1e37 or inf. `keep` is indexed by the same positions as the
    heads (the caller shifts it for the decoder)."""
    check_integer_column(name, heads, "head indices")
    batch, length = shape
    if heads.shape != (batch, length):  # a wrong row count was a bare size mismatch inside nll_loss
        raise ValueError(f"{name} has shape {tuple(heads.shape)} but {column_of} has {(batch, length)}: one head "
                         "per token of each sentence; align them per token.")
    if is_torchdynamo_compiling():  # reading the values would break the graph; a bad index fails in the loss
        return
    supervised = heads != IGNORE_INDEX
    bad = supervised & ((heads < 0) | (heads >= length))
    masked = torch.zeros_like(bad)
    if keep is not None:
        masked = supervised & ~bad & (keep.gather(1, heads.clamp(0, length - 1).long()) == 0)
    if not bool((bad | masked).any()):  # the values are read once
        return
    if bad.any():
        raise ValueError(
            f"{name} holds head indices outside [0, {length}) (e.g. {heads[bad][0].item()}); heads are 0-based "
            "token indices within the same sequence, -100 for unsupervised tokens."
        )
    row, token = (int(index) for index in masked.nonzero()[0])
    raise ValueError(
        f"{name} row {row}, token {token} points at position {int(heads[row, token])}, which {mask_name} marks "
        f"as padding: a head must be a token of the same sentence (re-run the featurizer, or check the mask)."
    )


def encoder_parse_loss(config, log_probs: torch.Tensor | None, heads: torch.Tensor | None, featurizer_hint: str,
                       field: str = "parse_layer_encoder", head: str = "a DBSA encoder parse head",
                       attention_mask: torch.Tensor | None = None):
    """The encoder parse head's loss (None for a model without one); `attention_mask` is the source one."""
    if log_probs is None:
        return None
    if heads is None:
        raise ValueError(
            f"This model has {head} ({field}={getattr(config, field)}); training it needs `dep_heads`. "
            f"{featurizer_hint}"
        )
    check_heads("dep_heads", heads, log_probs.shape[:2], "the source", attention_mask)
    return parse_loss(log_probs, heads)


def self_parse_loss(config, log_probs: torch.Tensor | None, heads: torch.Tensor | None, featurizer_hint: str,
                    attention_mask: torch.Tensor | None = None):
    """The loss of a self-parsing model's bottom parser (`self_parse.py`) on the gold `dep_heads` (None for a model
    without one); weighted by `self_parse_loss_weight`, without the DBSA warm-up."""
    return encoder_parse_loss(config, log_probs, heads, featurizer_hint, "self_parse_layers", "an encoder parser",
                              attention_mask)


def decoder_parse_loss(config, log_probs: torch.Tensor | None, heads: torch.Tensor | None, labels: torch.Tensor,
                       decoder_attention_mask: torch.Tensor | None = None):
    """The decoder parse head's loss over the rows whose head is at or before them, normalised as
    `config.decoder_parse_loss_normalizer` says (None for a model without one). `decoder_attention_mask` is over
    the decoder inputs, where label h is input h + 1."""
    if log_probs is None:
        return None
    if heads is None:
        raise ValueError(
            "This model has a DBSA decoder parse head (parse_layer_decoder="
            f"{config.parse_layer_decoder}); training it needs `decoder_dep_heads` aligned to `labels` "
            "(parse the target side too: `parse_and_align(..., tgt_parser=...)`)."
        )
    keep = None
    if decoder_attention_mask is not None:  # label h is decoder input h + 1; the last label is no input
        keep = torch.cat([decoder_attention_mask[:, 1:], decoder_attention_mask.new_ones(labels.shape[0], 1)], dim=1)
    check_heads("decoder_dep_heads", heads, labels.shape, "labels", keep, "decoder_attention_mask (shifted: label h "
                "is decoder input h + 1)")
    denominator = None
    if config.decoder_parse_loss_normalizer == "all_pairs":
        denominator = (heads != IGNORE_INDEX).sum()  # every target token with a head, future heads included
    return parse_loss(log_probs, shift_decoder_heads(heads), denominator)


def parse_loss_weights(config, step: int | None, training: bool) -> tuple[float, float]:
    """(lambda_enc, lambda_dec) at optimizer step `step`: the configured weights times min(1, step / warm-up steps),
    so lambda grows linearly from 0 to its value; the configured weights when the warm-up is off, and outside
    training when no step was set (losses of a finished model)."""
    weights = tuple(getattr(config, DBSA_PARSE_HEAD.loss_weight_fields[side]) for side in SIDES)
    if config.parse_loss_warmup_steps == 0:
        return weights
    if step is None:
        if training:
            raise ValueError(
                f"parse_loss_warmup_steps={config.parse_loss_warmup_steps} ramps lambda with the optimizer step, "
                "but the model was not told the step: set `model.parse_loss_step = step` before each update, or "
                "train with `hf_syntax.recipes.translation.trainer.ParseLossWarmupCallback()` among the Trainer's "
                "callbacks (the translation recipe adds it)."
            )
        return weights
    if step < 0:  # a negative lambda would train the model to parse badly
        raise ValueError(f"parse_loss_step={step}: the optimizer step counts from 0.")
    ramp = min(1.0, step / config.parse_loss_warmup_steps)
    return weights[0] * ramp, weights[1] * ramp


def weighted_parse_losses(weights: tuple[float, float], encoder_parse, decoder_parse, self_parse=None,
                          self_parse_weight: float = 0.0) -> list[torch.Tensor]:
    """lambda times each parse loss the model has, encoder first, then decoder, then a self-parsing model's parser
    (times `self_parse_weight`): the model's loss is the translation loss plus these, added in this order, and the
    Trainer's gradient log measures their sum."""
    parts = zip((*weights, self_parse_weight), (encoder_parse, decoder_parse, self_parse))
    return [weight * part for weight, part in parts if part is not None]


__all__ = [
    "LOSS_PARTS",
    "check_heads",
    "decoder_parse_loss",
    "encoder_parse_loss",
    "parse_loss",
    "parse_loss_weights",
    "self_parse_loss",
    "shift_decoder_heads",
    "weighted_parse_losses",
]
