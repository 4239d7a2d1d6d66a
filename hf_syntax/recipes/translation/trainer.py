"""The translation recipe's Trainer: ``Seq2SeqTrainer`` that logs a syntax model's loss parts, the DBSA warm-up
callback, the collator, and the training arguments the recipe fixes."""

from __future__ import annotations

import math
import os
from contextlib import nullcontext

import datasets
import torch
from torch.utils.data import SequentialSampler
from transformers import PreTrainedTokenizerBase, Seq2SeqTrainer, Seq2SeqTrainingArguments, TrainerCallback
from transformers.trainer_utils import IntervalStrategy, has_length

from hf_syntax.data.collators import SyntaxSeq2SeqCollator
from hf_syntax.data.corpus import TARGET_COLUMN
from hf_syntax.modeling_syntax_transformer import SyntaxTransformerPreTrainedModel
from hf_syntax.parse_losses import LOSS_PARTS
from hf_syntax.recipes.translation.schema import TranslationRecipeConfig, training_values


class ParseLossWarmupCallback(TrainerCallback):
    """Tells a DBSA model the optimizer step its lambda warm-up ramps with (`parse_loss_step`) at the start of every
    step. Any Trainer can take it; `SyntaxSeq2SeqTrainer` adds it itself. Why the step comes from the Trainer and
    is not counted by the model: see `SyntaxTransformerForConditionalGeneration`."""

    def on_step_begin(self, args, state, control, model=None, **kwargs):
        if model is not None and hasattr(model, "parse_loss_step"):
            model.parse_loss_step = state.global_step


class LogOnEverySave(TrainerCallback):
    """Logs the training loss on every step that saves a checkpoint, so that the checkpoint's log covers every step
    up to it: a run resumed from it then reports ``train_loss`` over all its steps. Otherwise, with ``save_steps``
    not a multiple of ``logging_steps``, the losses of the steps since the last log were lost at the resume."""

    def on_step_end(self, args, state, control, **kwargs):
        if control.should_save:
            control.should_log = True


class SyntaxSeq2SeqTrainer(Seq2SeqTrainer):
    """``Seq2SeqTrainer`` that logs the parts of a syntax model's loss next to ``loss``: ``translation_loss`` and the
    DBSA ``encoder_parse_loss`` / ``decoder_parse_loss`` (and a self-parsing model's ``self_parse_loss``), averaged
    over the same training steps.

    For a model with parse heads it also logs ``grad_norm_translation`` and ``grad_norm_parse``: the gradient norms
    of the translation loss and of the lambda-weighted parse losses, before clipping, on the step the log line
    belongs to (as ``grad_norm``, which is their sum's norm). They are measured only on the steps that will be
    logged (``logging_strategy="steps"`` every ``logging_steps``, and the first step with ``logging_first_step``):
    two extra backward passes through the retained graph on those steps (about 1.9x such a step's time at the small
    CPU size: +2% of the run when logging every 50 steps; benchmarks/results/enja_converged/diagnosis_runs.md), none on
    the others. With gradient accumulation the parts are summed over the step's micro-batches, scaled as the
    Trainer scales the loss. In a multi-process run the loss parts are averaged over the processes, as ``loss`` is;
    the gradient norms are each process's own (rank 0's are logged). With ``torch_compile=True`` they are not
    measured: a compiled backward frees the buffers it was given, so it cannot run again through a retained graph.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_callback(ParseLossWarmupCallback)
        self.add_callback(LogOnEverySave)
        self._loss_part_sums: dict[str, float] = {}
        self._loss_part_counts: dict[str, int] = {}
        self._gradient_parts: dict[str, list[torch.Tensor | None]] = {}

    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
        loss, outputs = super().compute_loss(model, inputs, return_outputs=True, **kwargs)
        if model.training:
            for name in LOSS_PARTS:
                value = getattr(outputs, name, None) if not isinstance(outputs, dict) else outputs.get(name)
                if value is not None:
                    self._loss_part_sums[name] = self._loss_part_sums.get(name, 0.0) + float(value.detach())
                    self._loss_part_counts[name] = self._loss_part_counts.get(name, 0) + 1
            if self._step_will_be_logged() and not self.args.torch_compile:
                self._accumulate_gradient_parts(outputs)
        return (loss, outputs) if return_outputs else loss

    def _step_will_be_logged(self) -> bool:
        """The rule of transformers' `DefaultFlowCallback`, applied to the step being computed."""
        step = self.state.global_step + 1
        first = self.args.logging_first_step and step == 1
        every = self.args.logging_strategy == IntervalStrategy.STEPS and step % self.state.logging_steps == 0
        return first or every

    def _accumulate_gradient_parts(self, outputs) -> None:
        """Add this micro-batch's gradients of the translation loss and of the weighted parse losses."""
        parts = [getattr(outputs, name, None) for name in LOSS_PARTS[1:]]  # the parse losses, in the model's order
        if all(part is None for part in parts):
            return
        parse = sum(self.model.weighted_parse_losses(*parts))
        parameters = [parameter for parameter in self.model.parameters() if parameter.requires_grad]
        scale = 1.0 / self.current_gradient_accumulation_steps
        for name, part in (("translation", outputs.translation_loss), ("parse", parse)):
            gradients = torch.autograd.grad(part * scale, parameters, retain_graph=True, allow_unused=True)
            summed = self._gradient_parts.get(name, [None] * len(parameters))
            self._gradient_parts[name] = [
                new if old is None else old if new is None else old + new for old, new in zip(summed, gradients)
            ]

    def evaluate(self, eval_dataset=None, *args, **kwargs):
        with self._scored_against_its_lines(eval_dataset if eval_dataset is not None else self.eval_dataset):
            return super().evaluate(eval_dataset, *args, **kwargs)

    def predict(self, test_dataset, *args, **kwargs):
        with self._scored_against_its_lines(test_dataset):
            return super().predict(test_dataset, *args, **kwargs)

    def _scored_against_its_lines(self, dataset):
        """The scorer's references for this dataset: its target text column (see `GeneratedTranslationScorer`). A
        dict of datasets is evaluated one dataset at a time, each through this again (by name, when the dict is
        the trainer's own ``eval_dataset``)."""
        if isinstance(dataset, str) and isinstance(self.eval_dataset, dict):
            dataset = self.eval_dataset[dataset]
        scoring_against = getattr(self.compute_metrics, "scoring_against", None)
        if scoring_against is None or not isinstance(dataset, datasets.Dataset) or TARGET_COLUMN not in dataset.column_names:
            return nullcontext()
        return scoring_against(dataset[TARGET_COLUMN])

    def _get_eval_sampler(self, eval_dataset):
        """The dataset's order even when training groups batches by length (transformers groups evaluation too):
        each translation is scored against its own reference line and written to its own line."""
        if self.args.train_sampling_strategy != "group_by_length":
            return super()._get_eval_sampler(eval_dataset)
        if eval_dataset is None or not has_length(eval_dataset):
            return None
        return SequentialSampler(eval_dataset) if self.args.world_size <= 1 else None

    def log(self, logs, *args, **kwargs):
        if "loss" in logs and self._loss_part_counts:
            means = {name: total / self._loss_part_counts[name] for name, total in self._loss_part_sums.items()}
            if self.args.world_size > 1:  # as the Trainer's "loss": the mean over the processes, not rank 0's part
                parts = torch.tensor(list(means.values()), device=self.args.device)
                means = dict(zip(means, self.accelerator.reduce(parts, reduction="mean").tolist()))
            logs = {**logs, **{name: round(value, 4) for name, value in means.items()}}
            self._loss_part_sums, self._loss_part_counts = {}, {}
        if "loss" in logs and self._gradient_parts:
            logs = {**logs, **{f"grad_norm_{name}": _norm(parts) for name, parts in self._gradient_parts.items()}}
            self._gradient_parts = {}
        super().log(logs, *args, **kwargs)

    def _issue_warnings_after_load(self, load_result) -> None:
        """Reloading a checkpoint (the best one at the end, or on resume) reports tied parameters as missing:
        ``save_pretrained`` stores a tied parameter once, under its source's name (``lm_head.weight`` is
        ``model.shared.weight``), and transformers 5's Trainer only excuses ``_keys_to_ignore_on_save``. Keys in the
        model's ``all_tied_weights_keys`` were loaded through their source, so they are tied again and not reported;
        any other missing key is still warned about."""
        tied = set(getattr(self.model, "all_tied_weights_keys", {}))
        missing = [key for key in load_result.missing_keys if key not in tied]
        if len(missing) < len(load_result.missing_keys):
            self.model.tie_weights()
        super()._issue_warnings_after_load(type(load_result)(missing, load_result.unexpected_keys))


def _norm(gradients: list[torch.Tensor | None]) -> float:
    """The 2-norm of a list of parameter gradients taken together (None: a parameter the loss does not reach)."""
    return float(torch.stack([gradient.float().norm() for gradient in gradients if gradient is not None]).norm())


def collator(source_tokenizer: PreTrainedTokenizerBase, model) -> SyntaxSeq2SeqCollator:
    """Pads every feature column; a model other than ours (the Marian reference) gets its decoder inputs made here,
    because the Trainer's label smoother takes ``labels`` away before the forward."""
    is_ours = isinstance(model, SyntaxTransformerPreTrainedModel)
    return SyntaxSeq2SeqCollator(source_tokenizer, model=None if is_ours else model)


def training_arguments(config: TranslationRecipeConfig) -> Seq2SeqTrainingArguments:
    """Seq2SeqTrainingArguments from the ``training`` section plus the recipe's fixed choices. A run that averages
    its last N checkpoints keeps N of them and loads no best one."""
    machine = {"dataloader_pin_memory": torch.cuda.is_available()}
    if launched_on_cpus_only():
        machine["use_cpu"] = True
    return Seq2SeqTrainingArguments(
        output_dir=config.output_dir,
        seed=config.seed,
        predict_with_generate=True,
        metric_for_best_model="bleu",
        greater_is_better=True,
        **{**machine, **training_values(config)},
    )


def update_steps_per_epoch(pairs: int, arguments: Seq2SeqTrainingArguments) -> int:
    """Optimizer steps in one epoch of ``pairs`` training pairs, as the Trainer counts them (the last, short batch
    and accumulation included)."""
    batches = math.ceil(pairs / (arguments.per_device_train_batch_size * arguments.world_size))
    return max(math.ceil(batches / arguments.gradient_accumulation_steps), 1)


def launched_on_cpus_only() -> bool:
    """Several processes (``torchrun``, ``accelerate launch``) on a machine without CUDA.

    Transformers then sets up the process group but, unless ``use_cpu`` is set, runs each process as a job of its own:
    the model is not wrapped in ``DistributedDataParallel``, so every process trains its shard of each batch and the
    copies drift apart. ``use_cpu`` makes it a multi-CPU DDP run (gloo) with one set of weights.
    """
    return int(os.environ.get("WORLD_SIZE", "1")) > 1 and not torch.cuda.is_available()
