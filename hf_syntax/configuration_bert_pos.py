"""Configuration of BERT + POS (Sundararaman et al. 2019, "Syntax-infused BERT").

A ``BertConfig`` plus what the POS input needs: the POS label vocabulary the embedding table was built for (so a
Hub model knows exactly which ids it expects), how POS and token embeddings are combined, and the parser spec that
produces the tags when the model is used on raw text.
"""

from huggingface_hub.dataclasses import strict
from transformers import BertConfig
from transformers.activations import ACT2FN

from .configuration_syntax_transformer import eager_if_attentions_asked, known_keys, reject_unknown_keys
from .labels import UPOS_VOCAB, LabelVocab

POS_COMBINE_MODES = ("sum", "concat")
POS_INIT_MODES = ("normal", "zeros")
LOADABLE_MODEL_TYPES = ("bert", "bert_pos")
PROBLEM_TYPES = (None, "regression", "single_label_classification", "multi_label_classification")
TASK_HEAD_KEYS = ("num_labels",)
"""A keyword argument `PreTrainedConfig` reads for a task head though it is no field."""


@strict
class BertPosConfig(BertConfig):
    r"""
    ``BertConfig`` with a part-of-speech input. Every ``BertConfig`` field, plus:

    - ``pos_vocab``: the POS label vocabulary as ``LabelVocab.to_dict()`` (default: the 17 UD UPOS tags). Ids 0/1/2
      are padding / special tokens / unknown tag, as everywhere in hf_syntax.
    - ``num_pos_tags``: rows of the POS embedding table; must equal ``len(pos_vocab)`` (0 = derive it), kept
      explicit so the table size is visible in ``config.json``.
    - ``pos_combine``: ``"sum"`` adds a ``hidden_size`` POS embedding to the token embedding (the paper's choice);
      ``"concat"`` concatenates a ``pos_embedding_size`` POS embedding and projects back to ``hidden_size``.
    - ``pos_embedding_size``: width of the POS embedding for ``"concat"`` (0 = ``hidden_size``, as in the paper);
      ``"sum"`` always uses ``hidden_size``.
    - ``pos_init``: how a new POS table starts. ``"normal"`` (default): N(0, ``initializer_range``) like BERT's
      token-type table, so the tags matter from the first step (with ``"concat"`` a zero table would never move, so
      that pair is refused). ``"zeros"``: the model computes exactly what the BERT checkpoint computes until
      fine-tuning changes the table; at BERT's fine-tuning rate a zero table barely moves, so give it a rate of its
      own (the GLUE recipe's ``pos_learning_rate``). Either way no number is drawn from the global RNG, so the task
      head starts as a plain BERT's would at the same seed.
    - ``pos_gate``: multiply the POS embedding by a learned scalar that starts at 0 (``"sum"`` only). The model
      then equals the BERT checkpoint at step 0 while the tags still steer training: the gate's gradient is the
      loss gradient at the embeddings dotted with the (non-zero, ``pos_init="normal"``) table, whereas the table's
      gradient is scaled by the gate and is exactly zero on the first step. The gate moves on step 1 and the table
      from step 2. A zero table behind a zero gate would give neither a gradient, so that pair is refused.
    - ``pos_parser``: parser spec (``spacy:<package or path>``, ``stanza:<lang>``) that tags raw text at inference;
      it should be the parser the model was fine-tuned with.
    """

    model_type = "bert_pos"

    pos_vocab: dict | None = None
    num_pos_tags: int = 0
    pos_combine: str = "sum"
    pos_embedding_size: int = 0
    pos_init: str = "normal"
    pos_gate: bool = False
    pos_parser: str = "spacy:en_core_web_sm"

    def __post_init__(self, **kwargs):
        reject_unknown_keys(type(self), kwargs, TASK_HEAD_KEYS)  # BertPosConfig(pos_combin=...) was accepted
        vocab = LabelVocab.from_dict(self.pos_vocab) if self.pos_vocab is not None else UPOS_VOCAB
        self.pos_vocab = vocab.to_dict()
        self.num_pos_tags = self.num_pos_tags or len(vocab)
        self.pos_embedding_size = self.pos_embedding_size or self.hidden_size
        super().__post_init__(**kwargs)
        eager_if_attentions_asked(self)

    def validate_pos_options(self):
        """Called by ``@strict`` on construction, so a bad option fails before any weight is built."""
        vocab = self.pos_label_vocab
        if self.num_pos_tags != len(vocab):
            raise ValueError(
                f"BertPosConfig: num_pos_tags={self.num_pos_tags} but pos_vocab {vocab.name!r} has {len(vocab)} ids "
                f"(3 reserved + {len(vocab.labels)} labels). Drop num_pos_tags or pass the matching pos_vocab."
            )
        if self.pos_combine not in POS_COMBINE_MODES:
            raise ValueError(
                f"BertPosConfig: pos_combine must be one of {POS_COMBINE_MODES}; got {self.pos_combine!r}."
            )
        if self.pos_init not in POS_INIT_MODES:
            raise ValueError(f"BertPosConfig: pos_init must be one of {POS_INIT_MODES}; got {self.pos_init!r}.")
        if self.pos_init == "zeros" and self.pos_combine == "concat":
            raise ValueError(
                "BertPosConfig: pos_init='zeros' with pos_combine='concat' would never train the POS input (the "
                "table and the projection's POS columns both start at zero, so neither gets a gradient). "
                "Use pos_init='normal'."
            )
        if self.pos_gate and (self.pos_combine, self.pos_init) != ("sum", "normal"):
            raise ValueError(
                f"BertPosConfig: pos_gate needs pos_combine='sum' and pos_init='normal'; got "
                f"pos_combine={self.pos_combine!r}, pos_init={self.pos_init!r}. A gate at 0 in front of a zero table, "
                f"or in front of the concat projection's zero POS columns, gets no gradient and neither does what it "
                f"gates, so the POS input would never train (concat already starts as the base BERT without a gate)."
            )
        if self.pos_combine == "sum" and self.pos_embedding_size != self.hidden_size:
            raise ValueError(
                f"BertPosConfig: pos_combine='sum' adds the POS embedding to the token embedding, so its size is "
                f"hidden_size={self.hidden_size}; got pos_embedding_size={self.pos_embedding_size}. "
                f"Use pos_combine='concat' for another size."
            )
        if self.pos_embedding_size < 1:
            raise ValueError(f"BertPosConfig: pos_embedding_size must be positive; got {self.pos_embedding_size}.")
        if ":" not in self.pos_parser:  # its type is checked by @strict
            raise ValueError(
                f"BertPosConfig: pos_parser must be a parser spec such as 'spacy:en_core_web_sm' or 'stanza:en'; "
                f"got {self.pos_parser!r}."
            )

    def validate_bert_fields(self):
        """BERT's own fields, checked on construction as the POS ones are; unchecked, an unknown activation was a
        KeyError when the weights were built, 0 segment types an IndexError at the first forward, a dropout outside
        [0, 1) a failure inside torch at the first training step, 0 labels a head with no output and an unknown
        problem_type no loss at all."""
        if isinstance(self.hidden_act, str) and self.hidden_act not in ACT2FN:
            raise ValueError(f"BertPosConfig: hidden_act={self.hidden_act!r} is not an activation transformers knows; "
                             f"choose one of {sorted(ACT2FN)}.")
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                     "max_position_embeddings", "type_vocab_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"BertPosConfig: {name} must be >= 1, got {getattr(self, name)}.")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout"):
            value = getattr(self, name)
            if value is not None and not 0 <= value < 1:
                raise ValueError(f"BertPosConfig: {name}={value} is a probability: 0 <= {name} < 1 (0 switches it "
                                 f"off).")
        if self.num_labels < 1:
            raise ValueError(f"BertPosConfig: num_labels={self.num_labels}; a task head needs at least 1 (1 is "
                             f"regression).")
        if self.problem_type not in PROBLEM_TYPES:
            raise ValueError(f"BertPosConfig: problem_type={self.problem_type!r} is not one transformers' task heads "
                             f"compute a loss for; choose one of {PROBLEM_TYPES} (None: read from num_labels and the "
                             f"labels' dtype).")

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, **kwargs) -> "BertPosConfig":
        """Load a ``bert_pos`` config, or extend a plain ``bert`` one with the POS defaults; refuse anything else.

        Other architectures (RoBERTa, DistilBERT, ...) differ from BERT in weight names or position handling, so
        loading their weights into this model would silently give a broken network.
        """
        config_dict, kwargs = cls.get_config_dict(pretrained_model_name_or_path, **kwargs)
        model_type = config_dict.get("model_type")
        if model_type not in LOADABLE_MODEL_TYPES:
            raise ValueError(
                f"{pretrained_model_name_or_path!r} is a {model_type!r} checkpoint; BERT + POS loads only BERT "
                f"checkpoints (model_type in {LOADABLE_MODEL_TYPES}), e.g. 'bert-base-uncased' or a saved BertPos "
                f"model. For another architecture, fine-tune it with its own classes."
            )
        config_dict["model_type"] = cls.model_type
        return cls.from_dict(config_dict, **kwargs)

    @classmethod
    def from_dict(cls, config_dict, **kwargs):
        """Keys a checkpoint's file carries that are no BertConfig field (older BERTs' ``gradient_checkpointing``,
        ``position_embedding_type``, saved again with every model trained from them) are kept as attributes, as
        transformers keeps them; only options given by name are checked for typos. ``AutoConfig`` comes here
        directly, not through ``from_pretrained``."""
        known = known_keys(cls, TASK_HEAD_KEYS)
        extras = {key: value for key, value in config_dict.items() if key not in known}
        loaded = super().from_dict({key: value for key, value in config_dict.items() if key in known}, **kwargs)
        for key, value in extras.items():
            setattr(loaded[0] if isinstance(loaded, tuple) else loaded, key, value)
        return loaded

    @property
    def pos_label_vocab(self) -> LabelVocab:
        return LabelVocab.from_dict(self.pos_vocab)

    def check_pos_vocab(self, featurizer_vocab: LabelVocab | dict) -> None:
        """Raise if the featurizer's POS ids would not mean what this model's embedding rows mean.

        Compared as plain dicts: in remote code, the config's and the featurizer's ``labels`` module may be two
        separately loaded copies, whose ``LabelVocab`` classes are not the same class.
        """
        if not isinstance(featurizer_vocab, dict):
            featurizer_vocab = featurizer_vocab.to_dict()
        theirs = LabelVocab.from_dict(featurizer_vocab)
        ours = self.pos_label_vocab
        if theirs.to_dict() == ours.to_dict():
            return
        first_difference = next(
            (
                f"id {index + 3}: model {a!r} vs featurizer {b!r}"
                for index, (a, b) in enumerate(zip(ours.labels, theirs.labels))
                if a != b
            ),
            f"model has {len(ours)} ids, featurizer {len(theirs)}",
        )
        raise ValueError(
            f"POS vocabulary mismatch: the model was built for {ours.name!r} ({len(ours.labels)} labels) but the "
            f"featurizer produces {theirs.name!r} ({len(theirs.labels)} labels); {first_difference}. Its POS ids would "
            f"mean other tags: fine-tune it with the hf_syntax version it was trained with, or start from a plain "
            f"BERT checkpoint (a new POS input takes today's vocabulary)."
        )


__all__ = ["BertPosConfig"]
