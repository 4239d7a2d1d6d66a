"""GLUE models: stock BERT (the baseline) or BERT + POS from a checkpoint, and the Trainer that gives the POS
parameters a learning rate of their own."""

from __future__ import annotations

from transformers import Trainer

from hf_syntax.recipes.glue.schema import GlueRunConfig, pos_gate_for
from hf_syntax.recipes.glue.tasks import GlueTask


def build_model(task: GlueTask, config: GlueRunConfig, tokenizer):
    """Stock ``BertForSequenceClassification`` (baseline) or ``BertPosForSequenceClassification`` from a checkpoint;
    the POS model's vocabulary is checked against the featurizer's, so ids cannot silently mean other tags."""
    from transformers import BertForSequenceClassification

    from hf_syntax.configuration_bert_pos import BertPosConfig
    from hf_syntax.featurizer import SyntaxFeaturizer
    from hf_syntax.modeling_bert_pos import BertPosForSequenceClassification

    label_options = {"num_labels": 1 if task.is_regression else len(task.label_names)}
    if not task.is_regression:
        label_options["id2label"] = dict(enumerate(task.label_names))
        label_options["label2id"] = {name: index for index, name in enumerate(task.label_names)}
    checkpoint_type = BertPosConfig.get_config_dict(config.model_name_or_path)[0].get("model_type")
    if not config.use_pos:
        if checkpoint_type != "bert":
            raise ValueError(
                f"the no-POS baseline is stock BERT; {config.model_name_or_path!r} is a {checkpoint_type!r} checkpoint."
            )
        return BertForSequenceClassification.from_pretrained(config.model_name_or_path, **label_options)
    gate = pos_gate_for(config, new_pos_input=checkpoint_type == "bert")
    new_pos_input = (
        {"pos_combine": config.pos_combine or "sum", "pos_init": config.pos_init, "pos_gate": gate}
        if checkpoint_type == "bert" else {}
    )
    model_config = BertPosConfig.from_pretrained(
        config.model_name_or_path, pos_parser=config.pos_parser, **new_pos_input, **label_options
    )
    if config.pos_combine not in (None, model_config.pos_combine):
        raise ValueError(
            f"{config.model_name_or_path!r} was built with pos_combine={model_config.pos_combine!r}; its weights "
            f"cannot be used with pos_combine={config.pos_combine!r}. Drop the option or start from a plain BERT."
        )
    if gate and not model_config.pos_gate:
        raise ValueError(
            f"{config.model_name_or_path!r} is a BERT + POS checkpoint without a POS gate; a gate is only added to a "
            f"new POS input. Drop pos_gate or start from a plain BERT."
        )
    featurizer = SyntaxFeaturizer(tokenizer, parser=config.pos_parser, features=("pos_ids",))
    model_config.check_pos_vocab(featurizer.label_vocabularies["pos_ids"])
    return BertPosForSequenceClassification.from_pretrained(config.model_name_or_path, config=model_config)


class PosLearningRateTrainer(Trainer):
    """``Trainer`` whose optimizer trains the model's POS parameters at ``pos_learning_rate``.

    Overrides ``create_optimizer``, the hook transformers documents for custom parameter groups: the groups are
    ``Trainer``'s own (with / without weight decay), each split into the rest of the model and the POS parameters
    (``model.pos_parameter_names()``), and the POS groups carry ``lr=pos_learning_rate``. The optimizer class and
    its other arguments still come from ``TrainingArguments``, and ``Trainer``'s scheduler scales every group's own
    initial rate, so warm-up and decay apply to both rates alike.
    """

    def __init__(self, *args, pos_learning_rate: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.pos_learning_rate = pos_learning_rate

    def create_optimizer(self, model=None):
        if self.optimizer is None:
            model = self.model if model is None else model
            optimizer_cls, optimizer_kwargs = self.optimizer_cls_and_kwargs or self.get_optimizer_cls_and_kwargs(
                self.args, model
            )
            if {"params", "model", "optimizer_dict"} & set(optimizer_kwargs):
                raise ValueError(
                    f"pos_learning_rate needs an optimizer built from parameter groups; optim={self.args.optim!r} "
                    f"builds its own. Use an AdamW/SGD-style optim, or set pos_learning_rate to null (--set "
                    f"pos_learning_rate=null) to train the POS parameters at the run's rate."
                )
            self.optimizer = optimizer_cls(self.parameter_groups(model), **optimizer_kwargs)
        return super().create_optimizer(model)

    def parameter_groups(self, model) -> list[dict]:
        """Trainable parameters by (POS or not) x (weight decay or not); empty groups are left out."""
        pos_names = set(model.pos_parameter_names())
        if not pos_names:
            raise ValueError(f"pos_learning_rate was given but {type(model).__name__} has no POS parameters.")
        decay_names = set(self.get_decay_parameter_names(model))
        groups = []
        for is_pos, learning_rate in ((False, self.args.learning_rate), (True, self.pos_learning_rate)):
            for decays in (True, False):
                parameters = [
                    parameter for name, parameter in model.named_parameters()
                    if parameter.requires_grad and (name in pos_names) == is_pos and (name in decay_names) == decays
                ]
                if parameters:
                    weight_decay = self.args.weight_decay if decays else 0.0
                    groups.append({"params": parameters, "lr": learning_rate, "weight_decay": weight_decay})
        return groups
