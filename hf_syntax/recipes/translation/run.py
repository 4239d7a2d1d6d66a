"""The translation recipe from top to bottom: ``train_translation`` (config in, trained model folder + summary out)
and ``main``, its command line (``training/train_translation.py``, ``hf-syntax train``)."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import datasets
import numpy as np
from transformers import EarlyStoppingCallback, Seq2SeqTrainer, TrainerCallback, TrainerState, set_seed
from transformers.trainer_utils import TrainOutput

from hf_syntax.align import AlignmentError
from hf_syntax.data.corpus import SOURCE_COLUMN, TARGET_COLUMN, CorpusError
from hf_syntax.metrics.translation import GeneratedTranslationScorer
from hf_syntax.parsers import ParserNotAvailableError
from hf_syntax.recipes.checkpoint_averaging import average_final_weights
from hf_syntax.recipes.config import ConfigError
from hf_syntax.recipes.runs import (
    SUMMARY_FILE,
    add_config_arguments,
    add_translation_run_arguments,
    check_output_dir,
    checkpoint_folders,
    checkpoint_step,
    device_name,
    resolve_resume,
    whole_run_training_loss,
    write_json,
)
from hf_syntax.recipes.translation.data import load_translation_data, tokenize_translation_data
from hf_syntax.recipes.translation.features import (
    PREPROCESSED_COLUMNS, add_syntax_features, attach_preprocessed_features, check_feature_columns,
    reusable_preprocessed_features,
)
from hf_syntax.recipes.translation.model import build_model
from hf_syntax.recipes.translation.publish import (
    describe_training_data, hub_upload, print_summary, push_model_folder, save_model_folder,
)
from hf_syntax.recipes.translation.resume import check_resumed_recipe, record_training_inputs
from hf_syntax.recipes.translation.schema import (AVERAGING_OPTION, TranslationRecipeConfig, check_averaging,
                                                  load_recipe_config)
from hf_syntax.recipes.translation.tokenization import SaveTargetTokenizer, prepare_tokenizers
from hf_syntax.recipes.translation.trainer import (SyntaxSeq2SeqTrainer, collator, training_arguments,
                                                   update_steps_per_epoch)
from hf_syntax.trees import TreeError

FINAL_MODEL_DIR = "model"

logger = logging.getLogger(__name__)


def average_last_checkpoints(trainer: Seq2SeqTrainer, count: int) -> list[int]:
    """Make the trainer's model the mean of its final weights and its ``count - 1`` newest checkpoints before the
    final step; returns the steps averaged, the final one last (``[final]`` alone for ``count`` 1)."""
    final = trainer.state.global_step
    if count == 1:
        return [final]
    folders = checkpoint_folders(Path(trainer.args.output_dir))
    earlier = [folder for folder in folders if checkpoint_step(folder) < final]
    if len(earlier) < count - 1:
        raise ConfigError(f"training.{AVERAGING_OPTION}={count}: the run has {len(earlier)} checkpoint(s) before its "
                          f"final step {final}, not {count - 1}; save more often (training.save_steps) or average "
                          f"fewer")
    earlier = earlier[-(count - 1):]
    average_final_weights(trainer.model, earlier)
    return [*(checkpoint_step(folder) for folder in earlier), final]


def best_validation_scores(trainer: Seq2SeqTrainer, averaged: bool) -> dict[str, float]:
    """Validation scores of the model the trainer ended with: taken from the log when training already evaluated
    that checkpoint (saves a generation pass), computed otherwise (always for averaged weights, which no
    checkpoint holds)."""
    if averaged:
        return trainer.evaluate(metric_key_prefix="validation")
    evaluations = [entry for entry in trainer.state.log_history if "eval_bleu" in entry]
    best = trainer.state.best_metric
    if trainer.args.load_best_model_at_end and best is not None:
        chosen = next((entry for entry in evaluations if entry["eval_bleu"] == best), None)
    else:
        chosen = next((entry for entry in evaluations if entry["step"] == trainer.state.global_step), None)
    if chosen is None:
        return trainer.evaluate(metric_key_prefix="validation")
    return {f"validation_{key[len('eval_'):]}": value for key, value in chosen.items() if key.startswith("eval_")}


def _examples(dataset: datasets.Dataset, hypotheses: list[str], count: int) -> list[dict[str, str]]:
    return [
        {"source": source, "reference": reference, "hypothesis": hypothesis}
        for source, reference, hypothesis in zip(dataset[SOURCE_COLUMN][:count], dataset[TARGET_COLUMN][:count], hypotheses)
    ]


class StoredEarlyStoppingEntry(TrainerCallback):
    """Gives early stopping its entry in a resumed state that has none (a checkpoint saved without early stopping):
    transformers' checkpoint save looks the entry up and fails where it is missing."""

    def __init__(self, early_stopping: EarlyStoppingCallback):
        self.early_stopping = early_stopping

    def on_train_begin(self, args, state, control, **kwargs):
        state.stateful_callbacks.setdefault(type(self.early_stopping).__name__, self.early_stopping.state())


def evaluations_without_gain(resume_dir: Path | None) -> int:
    """How many evaluations of the checkpoint's log came after its best BLEU (0 without a checkpoint)."""
    state_file = resume_dir / "trainer_state.json" if resume_dir else None
    history = json.loads(state_file.read_text())["log_history"] if state_file and state_file.is_file() else []
    bleus = [entry["eval_bleu"] for entry in history if "eval_bleu" in entry]
    return len(bleus) - 1 - bleus.index(max(bleus)) if bleus else 0


def stopped_early(patience: int | None, resume_dir: Path | None) -> bool:
    """Whether early stopping had already ended the run at the checkpoint it resumes from: cut off after its stopping
    checkpoint but before its summary, or (a study that ``continues`` a shorter budget) a run that would have stopped
    within the shorter one. Training on would report a run early stopping never trained."""
    return bool(patience) and evaluations_without_gain(resume_dir) >= patience


def early_stopping(patience: int | None, resume_dir: Path | None) -> list[TrainerCallback]:
    """The early-stopping callback of a run with a ``patience``. Resumed, it starts from the count of evaluations since
    the best one in the checkpoint's log, as the same run without the cut would have: transformers would start from
    0 (it restores the count it saves only when asked), and a checkpoint of a shorter budget saved none at all."""
    if not patience:
        return []
    callback = EarlyStoppingCallback(patience)
    callback.early_stopping_patience_counter = evaluations_without_gain(resume_dir)
    return [callback, StoredEarlyStoppingEntry(callback)]


def finish_stopped_run(trainer: Seq2SeqTrainer, resume_dir: Path) -> TrainOutput:
    """End a run that early stopping had ended (``stopped_early``) without training a step: its state and weights
    are those of the checkpoint, then of its best one where the recipe loads the best model at the end, as the
    Trainer's own end of training leaves them. transformers' ``train`` would run at least one more step first."""
    trainer.state = TrainerState.load_from_json(str(resume_dir / "trainer_state.json"))
    trainer._load_from_checkpoint(str(resume_dir))
    best = trainer.state.best_model_checkpoint
    if trainer.args.load_best_model_at_end and best is not None and Path(best).is_dir():
        trainer._load_best_model()
    logger.warning("%s: early stopping had ended this run there; nothing is trained, the run is finished from it",
                   resume_dir)
    return TrainOutput(global_step=trainer.state.global_step, training_loss=0.0, metrics={})


def train_translation(
    config: TranslationRecipeConfig, *, resume_from_checkpoint: str | None = None, callbacks: list | None = None
) -> dict[str, Any]:
    """Run the whole recipe; returns (and writes to ``<output_dir>/summary.json``) the final summary."""
    started = time.perf_counter()
    set_seed(config.seed)
    check_output_dir(config.output_dir)
    try:
        args = training_arguments(config)
    except ValueError as error:  # transformers' own refusals (bf16 without a GPU, ...) were a traceback
        raise ConfigError(f"training: {error}") from None
    resume_dir = resolve_resume(resume_from_checkpoint, config.output_dir, config.overwrite_output_dir)
    if resume_dir is not None:
        check_resumed_recipe(config, resume_dir)
    if args.process_index == 0:
        record_training_inputs(config, fresh=resume_dir is None)
    preprocessed = reusable_preprocessed_features(config)
    check_feature_columns(config, preprocessed)
    keep = (*PREPROCESSED_COLUMNS, *preprocessed["features"]["features"]) if preprocessed else ()
    loaded, skipped, available = load_translation_data(config.data, keep_columns=keep)
    raw = loaded.select_columns([SOURCE_COLUMN, TARGET_COLUMN])
    source_tokenizer, target_tokenizer = prepare_tokenizers(
        config, raw["train"], args, resume_dir, dataset_tokenizer=preprocessed["tokenizer"] if preprocessed else None
    )
    with args.main_process_first(desc="tokenizing"):
        encoded, truncated = tokenize_translation_data(
            raw, source_tokenizer, target_tokenizer, config.data, encode_source=preprocessed is None
        )
        feature_settings: dict[str, Any] = {}
        if preprocessed is not None:
            encoded, feature_settings = attach_preprocessed_features(encoded, loaded, preprocessed, config.data)
        elif config.features is not None:
            encoded, feature_settings = add_syntax_features(
                encoded, source_tokenizer, target_tokenizer, config.features, config.data
            )
    # the data's size decides how many checkpoints an epoch schedule saves: refuse averaging more before training
    check_averaging(config.training.get(AVERAGING_OPTION, 1), config,
                    update_steps_per_epoch(len(encoded["train"]), args))
    model = build_model(config, source_tokenizer, target_tokenizer, feature_settings)
    scorer = GeneratedTranslationScorer(
        target_tokenizer, bleu_tokenize=config.evaluation.bleu_tokenize, lowercase=config.evaluation.lowercase
    )
    trainer = SyntaxSeq2SeqTrainer(
        model=model,
        args=args,
        train_dataset=encoded["train"],
        eval_dataset=encoded["validation"],
        processing_class=source_tokenizer,
        data_collator=collator(source_tokenizer, model),
        compute_metrics=scorer,
        callbacks=[
            *(callbacks or []),
            *early_stopping(config.early_stopping_patience, resume_dir),
            *([SaveTargetTokenizer(target_tokenizer)] if target_tokenizer is not source_tokenizer else []),
        ],
    )
    resumed_at = checkpoint_step(resume_dir)
    if stopped_early(config.early_stopping_patience, resume_dir):
        train_result = finish_stopped_run(trainer, resume_dir)
    else:
        train_result = trainer.train(resume_from_checkpoint=str(resume_dir) if resume_dir else None)
    train_seconds = time.perf_counter() - started
    averaged_steps = average_last_checkpoints(trainer, config.training.get(AVERAGING_OPTION, 1))

    final_split = "test" if "test" in encoded else "validation"
    prediction = trainer.predict(encoded[final_split], metric_key_prefix=final_split)
    results = {final_split: prediction.metrics}
    if final_split != "validation":
        results["validation"] = best_validation_scores(trainer, averaged=len(averaged_steps) > 1)
    hypotheses = scorer.decode(np.asarray(prediction.predictions))[: len(raw[final_split])]  # see the scorer
    examples = _examples(raw[final_split], hypotheses, config.evaluation.show_examples)

    model_dir = Path(config.output_dir) / FINAL_MODEL_DIR
    summary = {
        "model_type": config.model.type,
        "languages": f"{config.data.source_lang}->{config.data.target_lang}",
        "reported_split": final_split,
        "split_names": {role: getattr(config.data, role).split for role in ("train", "validation", "test")
                        if getattr(config.data, role) is not None and getattr(config.data, role).split},
        "bleu": results[final_split][f"{final_split}_bleu"],
        "chrf": results[final_split][f"{final_split}_chrf"],
        "validation_bleu": results["validation"]["validation_bleu"],
        "validation_chrf": results["validation"]["validation_chrf"],
        "optimizer_steps": trainer.state.global_step,
        "epochs": trainer.state.epoch,
        **whole_run_training_loss(trainer.state.log_history, train_result, resumed_at),
        # The checkpoint the final model was chosen as (None: nothing chosen on dev, the run ended where it ended).
        "best_checkpoint": trainer.state.best_model_checkpoint if trainer.args.load_best_model_at_end else None,
        # The final model is the mean of the states at these steps (one step: the final weights as they are).
        AVERAGING_OPTION: len(averaged_steps),
        "averaged_steps": averaged_steps,
        "seconds": round(time.perf_counter() - started, 1),
        "train_seconds": round(train_seconds, 1),
        "parameters": sum(parameter.numel() for parameter in model.parameters()),
        "device": device_name(trainer.args.device),
        "pairs": {split: len(dataset) for split, dataset in encoded.items()},
        "training_data": describe_training_data(config.data, len(encoded["train"])),
        "pairs_in_split": available,  # more than "pairs" where max_train_pairs / max_eval_pairs cut the split
        "empty_pairs_skipped": skipped,
        "truncated": truncated,
        "model_dir": str(model_dir),
        # One line per sentence of the reported split, in corpus order (for sacrebleu --paired-bs and the like).
        "predictions_file": str(Path(config.output_dir) / f"predictions_{final_split}.txt"),
        "examples": examples,
    }
    if trainer.is_world_process_zero():
        Path(summary["predictions_file"]).write_text("".join(f"{line}\n" for line in hypotheses), encoding="utf-8")
        save_model_folder(trainer.model, source_tokenizer, target_tokenizer, config, summary, model_dir)
        # last: a summary marks a finished run (studies skip it), so a run whose model folder failed to save has none
        write_json(Path(config.output_dir) / SUMMARY_FILE, summary)
        print_summary(summary)
        if config.push_to_hub:
            upload = hub_upload(config, model_dir)
            print(f"    uploading {upload['folder_path']} to {upload['repo_id']}")
            push_model_folder(upload)
    return summary


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--config`` file, ``--set section.key=value`` overrides, resume and empty-line policy."""
    import argparse

    parser = argparse.ArgumentParser(description="Train a translation model with the hf-syntax recipe.")
    add_config_arguments(parser, "training.max_steps=200", required=True)
    add_translation_run_arguments(parser)
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an error instead of one 'error:' line")
    options = parser.parse_args(argv)
    overrides = list(options.overrides)
    if options.output_dir:
        overrides.append(f"output_dir={options.output_dir}")
    if options.skip_empty:
        overrides.append("data.skip_empty=true")
    if options.push_to_hub:
        overrides.append("push_to_hub=true")
    if options.hub_model_id:
        overrides.append(f"hub_model_id={options.hub_model_id}")
    try:
        config = load_recipe_config(options.config, overrides)
        train_translation(config, resume_from_checkpoint=options.resume_from_checkpoint)
    except (ConfigError, CorpusError, ParserNotAvailableError, TreeError, AlignmentError) as error:
        if options.debug:
            raise
        parser.exit(2, f"error: {error}\n")
    return 0
