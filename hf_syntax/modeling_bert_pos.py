"""BERT + POS (Sundararaman et al. 2019, "Syntax-infused BERT"): BERT whose input embedding also sees POS tags.

Every WordPiece carries the UPOS tag of its word (``pos_ids``, made by hf_syntax's featurizer); a trainable POS
embedding is combined with the token embedding *before* BERT's embedding LayerNorm, and everything after that is
transformers' own BERT. A new POS table starts as BERT's own small tables do (``pos_init="normal"``) or at zero
(``pos_init="zeros"``: until fine-tuning the model computes exactly what the BERT checkpoint computes); the
``concat`` projection starts at ``[I | 0]``; the optional scalar gate (``pos_gate``) starts at 0, which also makes
step 0 the BERT checkpoint's. The table is drawn from its own generator, so a BERT + POS run and a plain BERT run with
the same seed start with the same task head and differ only by the POS input. ``pos_parameter_names`` lists the
parameters a BERT checkpoint lacks on the input side, so a trainer can give them a learning rate of their own.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import (
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
    BertPreTrainedModel,
)
from transformers import initialization as init
from transformers.models.bert.modeling_bert import BertEmbeddings, BertEncoder, BertPooler
from transformers.utils import is_torchdynamo_compiling

from .columns import IGNORE_INDEX, check_ids, check_integer_column, check_tensor
from .configuration_bert_pos import BertPosConfig
from .saved_files import CheckedFromPretrained

POS_FEATURIZER_HINT = (
    "To classify text, use the pipeline, which tags the text itself (hf_syntax need not be installed): "
    "`transformers.pipeline(model=<this model's folder or Hub id>, trust_remote_code=True)`. "
    "To compute them yourself, use hf_syntax's featurizer, e.g. "
    "`SyntaxFeaturizer(tokenizer, parser=model.config.pos_parser, features=('pos',))` at inference or the "
    "`parse_and_align(...)` map function for a dataset; [CLS]/[SEP] get id 1 and padding id 0."
)


class PosTagEmbedding(nn.Embedding):
    """The POS table; its own class so that weight init can fill it without touching the global RNG (a draw from it
    would shift the task head's initialisation away from the ``use_pos=false`` baseline's at the same seed)."""


class PosConcatProjection(nn.Linear):
    """``[token; pos] -> hidden`` for ``pos_combine="concat"``; initialised (without RNG draws) to ``[I | 0]``."""


class PosGate(nn.Module):
    """A learned scalar that scales the POS embedding; starts at 0 (see ``BertPosConfig.pos_gate`` for why it and
    then the table still receive gradients)."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(()))

    def forward(self, embeddings: torch.Tensor) -> torch.Tensor:
        return self.weight * embeddings


POS_MODULE_TYPES = (PosTagEmbedding, PosConcatProjection, PosGate)


class BertPosEmbeddings(BertEmbeddings):
    """BERT's embeddings with a POS embedding combined into the token embedding ahead of position/segment/LayerNorm."""

    def __init__(self, config: BertPosConfig):
        super().__init__(config)
        self.pos_combine = config.pos_combine
        self.pos_embeddings = PosTagEmbedding(config.num_pos_tags, config.pos_embedding_size, padding_idx=0)
        if config.pos_combine == "concat":
            self.pos_projection = PosConcatProjection(
                config.hidden_size + config.pos_embedding_size, config.hidden_size
            )
        self.pos_gate = PosGate() if config.pos_gate else None

    @torch.no_grad()
    def pos_input_size(self) -> dict[str, float | None]:
        """How much POS the trained input carries: the gate's value and the root mean square of the (gated) POS
        rows against that of the word rows (padding rows left out). A gate or table still at 0 means the model
        ignores POS whatever its score says; recorded per GLUE run."""
        gate = self.pos_gate.weight.item() if self.pos_gate is not None else None
        pos_rows = self.pos_embeddings.weight[1:] * (gate if gate is not None else 1.0)
        padding = self.word_embeddings.padding_idx
        words = self.word_embeddings.weight
        word_rows = words if padding is None else torch.cat([words[:padding], words[padding + 1:]])
        return {"gate": gate, "pos_rms": pos_rows.pow(2).mean().sqrt().item(),
                "word_rms": word_rows.pow(2).mean().sqrt().item()}

    def token_and_pos_embeddings(
        self,
        input_ids: torch.Tensor | None,
        pos_ids: torch.Tensor,
        inputs_embeds: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Token embeddings with POS combined in; the result goes to ``BertEmbeddings.forward`` as ``inputs_embeds``."""
        if inputs_embeds is None:
            inputs_embeds = self.word_embeddings(input_ids)
        pos_embeddings = self.pos_embeddings(pos_ids)
        if self.pos_gate is not None:
            pos_embeddings = self.pos_gate(pos_embeddings)
        if self.pos_combine == "sum":
            return inputs_embeds + pos_embeddings
        return self.pos_projection(torch.cat([inputs_embeds, pos_embeddings], dim=-1))


class BertPosPreTrainedModel(CheckedFromPretrained, BertPreTrainedModel):
    config_class = BertPosConfig
    config: BertPosConfig

    def pos_parameter_names(self) -> list[str]:
        """Names (as in ``named_parameters``) of the POS input's parameters: table, gate and concat projection.

        These are what a BERT checkpoint lacks besides the task head; the GLUE recipe trains them at
        ``pos_learning_rate``. The whole projection counts, its token columns included: it is one new weight.
        """
        return [
            f"{module_name}.{parameter_name}"
            for module_name, module in self.named_modules()
            if isinstance(module, POS_MODULE_TYPES)
            for parameter_name, _ in module.named_parameters()
        ]

    @torch.no_grad()
    def _init_weights(self, module):
        if isinstance(module, PosTagEmbedding):
            init.copy_(module.weight, self._initial_pos_table(module.weight.shape))
            return
        if isinstance(module, PosConcatProjection):
            identity_then_zeros = torch.zeros_like(module.weight)
            identity_then_zeros[:, : module.out_features] = torch.eye(module.out_features)
            init.copy_(module.weight, identity_then_zeros)
            init.zeros_(module.bias)
            return
        if isinstance(module, PosGate):
            init.zeros_(module.weight)
            return
        super()._init_weights(module)

    def _initial_pos_table(self, shape: torch.Size) -> torch.Tensor:
        """Zeros, or N(0, initializer_range) from a generator seeded with torch's current seed; padding row 0."""
        table = torch.zeros(shape)
        if self.config.pos_init == "normal":
            generator = torch.Generator().manual_seed(torch.initial_seed())
            table.normal_(mean=0.0, std=self.config.initializer_range, generator=generator)
            table[0] = 0.0
        return table


class BertPosModel(BertPosPreTrainedModel, BertModel):
    """``BertModel`` whose ``forward`` takes ``pos_ids`` (one POS id per token, shaped like ``input_ids``)."""

    def __init__(self, config: BertPosConfig, add_pooling_layer: bool = True):
        BertPreTrainedModel.__init__(self, config)
        self.config = config
        self.gradient_checkpointing = False
        self.embeddings = BertPosEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        pos_ids: torch.Tensor | None = None,
        **kwargs,
    ):
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("BertPosModel: pass exactly one of input_ids or inputs_embeds.")
        if input_ids is not None:
            check_ids("input_ids", input_ids, self.config.vocab_size)
        tokens = input_ids if input_ids is not None else inputs_embeds[..., 0]
        if token_type_ids is not None:
            check_ids("token_type_ids", token_type_ids, self.config.type_vocab_size, shape=tokens.shape,
                      cause="segment ids are 0 for the first text and 1 for the second.")
        if attention_mask is not None:  # a mask of another shape was broadcast or ignored: padding was attended
            check_tensor("attention_mask", attention_mask)
            if attention_mask.shape != tokens.shape:
                raise ValueError(f"`attention_mask` has shape {tuple(attention_mask.shape)} but the tokens "
                                 f"{tuple(tokens.shape)}: one value per token (1 = a token, 0 = padding).")
        self._check_pos_ids(pos_ids, tokens)
        if position_ids is None and tokens.shape[-1] > self.config.max_position_embeddings:
            raise ValueError(
                f"the input has {tokens.shape[-1]} tokens but this BERT reads at most max_position_embeddings="
                f"{self.config.max_position_embeddings}: featurize with max_length={self.config.max_position_embeddings}"
                f" (parse_and_align(..., max_length=...), SyntaxFeaturizer(..., max_length=...)); the pipeline "
                f"truncates by itself."
            )
        inputs_embeds = self.embeddings.token_and_pos_embeddings(input_ids, pos_ids, inputs_embeds)
        return super().forward(
            input_ids=None,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            inputs_embeds=inputs_embeds,
            **kwargs,
        )

    def _check_pos_ids(self, pos_ids: torch.Tensor | None, tokens: torch.Tensor) -> None:
        if pos_ids is None:
            raise ValueError(
                f"{type(self).__name__} needs `pos_ids` (one POS id per token, same shape as input_ids). "
                + POS_FEATURIZER_HINT
            )
        check_integer_column("pos_ids", pos_ids, "POS ids")  # a list was "'list' object has no attribute 'shape'"
        if pos_ids.shape != tokens.shape:
            raise ValueError(
                f"`pos_ids` has shape {tuple(pos_ids.shape)} but the tokens have shape {tuple(tokens.shape)}; "
                f"they must align one to one. " + POS_FEATURIZER_HINT
            )
        if is_torchdynamo_compiling() or not pos_ids.numel():
            return
        if not 0 <= int(pos_ids.min()) <= int(pos_ids.max()) < self.config.num_pos_tags:
            raise ValueError(
                f"`pos_ids` must lie in 0..{self.config.num_pos_tags - 1} (the config's pos_vocab "
                f"{self.config.pos_vocab['name']!r}); got values from {int(pos_ids.min())} to "
                f"{int(pos_ids.max())}. Were they made with a different POS vocabulary?"
            )


class _TaskHeadTakesPosIds:
    """Names ``pos_ids`` in a BERT task head's ``forward``: ``Trainer`` drops every dataset column the signature does
    not name (``remove_unused_columns``); BERT's heads hand extra keyword arguments on to ``BertPosModel``."""

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        pos_ids: torch.Tensor | None = None,
        **kwargs,
    ):
        tokens = input_ids if input_ids is not None else inputs_embeds
        if labels is not None and torch.is_tensor(tokens):
            labels = self._checked_labels(labels, tokens.shape[:2])
        return super().forward(
            input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            inputs_embeds=inputs_embeds,
            labels=labels,
            pos_ids=pos_ids,
            **kwargs,
        )


class BertPosForSequenceClassification(_TaskHeadTakesPosIds, BertPosPreTrainedModel, BertForSequenceClassification):
    """``BertForSequenceClassification`` (pooled [CLS] -> dropout -> linear, loss by ``problem_type``) on
    ``BertPosModel``."""

    def __init__(self, config: BertPosConfig):
        BertPreTrainedModel.__init__(self, config)
        self.num_labels = config.num_labels
        self.config = config
        self.bert = BertPosModel(config)
        self.dropout = nn.Dropout(_classifier_dropout(config))
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def _checked_labels(self, labels: torch.Tensor, tokens_shape: torch.Size) -> torch.Tensor:
        """The labels of the loss BERT picks (``problem_type``, else from ``num_labels`` and the labels' dtype), as
        that loss needs them: a class id out of range (GLUE's test splits label every example -1) was an IndexError
        inside cross_entropy, integer multi-label targets a dtype error inside BCEWithLogits, and labels of another
        batch size a size mismatch naming neither. Class ids of a narrower integer type are widened (BERT took int16
        ids for multi-label targets)."""
        check_tensor("labels", labels)
        batch = tokens_shape[0]
        problem = self.config.problem_type or (
            "regression" if self.num_labels == 1
            else "single_label_classification" if not labels.is_floating_point() else "multi_label_classification")
        if problem == "multi_label_classification":
            if labels.shape != (batch, self.num_labels) or not labels.is_floating_point():
                raise ValueError(f"`labels` is {labels.dtype} of shape {tuple(labels.shape)}; multi-label "
                                 f"classification takes floats of shape ({batch}, num_labels={self.num_labels}), one "
                                 f"0/1 per class.")
            return labels
        per_example = self.num_labels if problem == "regression" else 1  # one score per output of a regression
        if labels.shape[:1] != (batch,) or labels.numel() != batch * per_example:
            raise ValueError(f"`labels` has shape {tuple(labels.shape)} for a batch of {batch}: "
                             f"{per_example} value(s) per example ({problem}).")
        if problem == "single_label_classification" and labels.numel() and not is_torchdynamo_compiling():
            check_integer_column("labels", labels, "class ids")
            counted = labels[labels != IGNORE_INDEX]  # cross_entropy skips -100, as in transformers' heads
            low, high = (int(counted.min()), int(counted.max())) if counted.numel() else (0, 0)
            if low < 0 or high >= self.num_labels:
                unlabelled = " (-1 marks an unlabelled example, as in GLUE's test splits: predict without labels)"
                raise ValueError(f"`labels` holds class ids from {low} to {high}, but this model has num_labels="
                                 f"{self.num_labels} (0 .. {self.num_labels - 1}, or -100 to skip an example)"
                                 f"{unlabelled if low == -1 else ''}.")
        return labels.long() if problem == "single_label_classification" else labels


class BertPosForTokenClassification(_TaskHeadTakesPosIds, BertPosPreTrainedModel, BertForTokenClassification):
    """``BertForTokenClassification`` (per-token dropout -> linear) on ``BertPosModel``."""

    def _checked_labels(self, labels: torch.Tensor, tokens_shape: torch.Size) -> torch.Tensor:
        """One class id per token, -100 where none: out of range they were an IndexError inside cross_entropy, of
        another shape a size mismatch naming neither."""
        check_ids("labels", labels, self.num_labels, shape=tokens_shape, ignore=IGNORE_INDEX,
                  cause="class ids run from 0 to num_labels - 1, and -100 marks a token without a label.")
        return labels.long()

    def __init__(self, config: BertPosConfig):
        BertPreTrainedModel.__init__(self, config)
        self.num_labels = config.num_labels
        self.bert = BertPosModel(config, add_pooling_layer=False)
        self.dropout = nn.Dropout(_classifier_dropout(config))
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()


def _classifier_dropout(config: BertPosConfig) -> float:
    return config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob


BertPosConfig.register_for_auto_class()
BertPosModel.register_for_auto_class("AutoModel")
BertPosForSequenceClassification.register_for_auto_class("AutoModelForSequenceClassification")
BertPosForTokenClassification.register_for_auto_class("AutoModelForTokenClassification")

__all__ = [
    "BertPosModel",
    "BertPosForSequenceClassification",
    "BertPosForTokenClassification",
    "BertPosPreTrainedModel",
]
