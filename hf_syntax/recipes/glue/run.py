"""The GLUE recipe from top to bottom: ``run_glue`` (one fine-tuning per learning rate of the grid, the best on dev
reported) and ``main``, its command line (``training/run_glue_pos.py``, ``hf-syntax train``)."""

from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import asdict
from pathlib import Path

import datasets
import torch
from transformers import Trainer

from hf_syntax.recipes.glue.data import (
    check_task_dataset, handle_empty_texts, load_task_dataset, subsample, with_example_indices,
)
from hf_syntax.recipes.glue.features import count_truncated, featurize
from hf_syntax.recipes.glue.model import PosLearningRateTrainer, build_model
from hf_syntax.recipes.glue.schema import GlueRunConfig, check_run_config, parse_arguments
from hf_syntax.recipes.glue.scoring import GlueMetricComputer, write_glue_predictions
from hf_syntax.recipes.glue.tasks import GLUE_HUB_DATASET, GlueTask, get_task
from hf_syntax.recipes.config import ConfigError
from hf_syntax.recipes.runs import GLUE_RUN_FILE, check_output_dir, device_name, write_json


def run_glue(config: GlueRunConfig, dataset: datasets.DatasetDict | None = None) -> dict:
    """Fine-tune on ``config.task`` for every learning rate; return (and write) the results summary."""
    from transformers import AutoTokenizer

    check_run_config(config)
    task = get_task(config.task)
    check_output_dir(config.output_dir)
    output_dir = Path(config.output_dir)
    check_earlier_results(output_dir, config.overwrite_output_dir)
    training_arguments(config, config.learning_rates[0], output_dir)  # refused now, not after the old results are gone

    raw = dataset if dataset is not None else load_task_dataset(task, config.data_dir, config.dataset_path)
    check_task_dataset(task, raw)
    raw = with_example_indices(raw)
    split_sizes = {split: len(part) for split, part in raw.items()}
    raw = subsample(raw, task, config)
    if not config.predict_test:
        raw = datasets.DatasetDict({split: part for split, part in raw.items() if split not in task.test_splits})
    empty_counts = handle_empty_texts(task, raw, config.empty_text)

    tokenizer = AutoTokenizer.from_pretrained(config.model_name_or_path)
    started = time.time()
    featurized = featurize(
        task, raw, tokenizer, config.use_pos, config.pos_parser, config.max_length, config.num_proc,
        cache_dir=config.featurized_cache_dir,
    )
    featurize_seconds = time.time() - started
    remove_earlier_results(output_dir)  # only now: a bad model path or dataset above leaves the old results whole
    output_dir.mkdir(parents=True, exist_ok=True)

    runs = []
    for learning_rate in config.learning_rates:
        run_dir = output_dir / f"lr{learning_rate:g}"
        runs.append(_fine_tune(task, config, featurized, tokenizer, learning_rate, run_dir, split_sizes))
    best = max(runs, key=lambda run: run["eval"][_main_split(task)][task.main_metric])
    if config.predict_test:
        _publish_submission(best, output_dir)

    summary = {
        "task": task.name,
        "model": config.model_name_or_path,
        "variant": f"bert+pos ({config.pos_combine or 'sum'})" if config.use_pos else "bert (no POS)",
        "settings": asdict(config),
        "data": {
            "examples": {split: len(part) for split, part in featurized.items()},
            "examples_in_split": split_sizes,
            "empty_text_examples": empty_counts,
            f"truncated_to_{config.max_length}": count_truncated(featurized, config.max_length),
            "featurize_seconds": round(featurize_seconds, 1),
        },
        "main_metric": f"{_main_split(task)}/{task.main_metric}",
        "best": {"learning_rate": best["learning_rate"], **best["eval"][_main_split(task)]},
        "runs": runs,
    }
    write_json(output_dir / "results.json", summary)
    return summary


RUN_FOLDER = re.compile(r"lr[0-9.e+-]+")  # a learning rate's folder, as run_glue names it (lr5e-05)


def check_earlier_results(output_dir: Path, overwrite: bool) -> None:
    """Refuse an output_dir that holds a finished run's results.json unless ``overwrite``: a new grid written beside
    it mixed the old rates' folders and submission with the new results. A run stopped before its results.json may
    run again."""
    if (output_dir / "results.json").is_file() and not overwrite:
        raise ConfigError(f"output_dir {output_dir} holds the results of an earlier run (results.json); pick a new "
                          f"output_dir, or set overwrite_output_dir=true to replace them")


def remove_earlier_results(output_dir: Path) -> None:
    """Remove a finished run's results.json, its learning rates' folders and glue_submission/ (``overwrite``, checked
    by check_earlier_results), once the new run has its model and data: other files in the folder stay."""
    if not (output_dir / "results.json").is_file():
        return
    for path in output_dir.iterdir():
        if path.is_dir() and (RUN_FOLDER.fullmatch(path.name) or path.name == "glue_submission"):
            shutil.rmtree(path)
    (output_dir / "results.json").unlink()


def _main_split(task: GlueTask) -> str:
    return next(iter(task.eval_splits))


def training_arguments(config: GlueRunConfig, learning_rate: float, run_dir: Path):
    """The TrainingArguments of one learning rate's fine-tuning: ``training`` over the recipe's defaults, under the
    recipe's own fields. Those transformers refuses (bf16 without a GPU) are a ``ConfigError``."""
    from transformers import TrainingArguments

    try:
        return TrainingArguments(**{
            # Defaults `training` may change; pinned memory only helps (and only works) with a GPU.
            "per_device_eval_batch_size": max(config.batch_size, 64), "report_to": [],
            "dataloader_pin_memory": torch.cuda.is_available(),
            **config.training,
            "output_dir": str(run_dir), "per_device_train_batch_size": config.batch_size,
            "num_train_epochs": config.epochs, "max_steps": config.max_steps, "learning_rate": learning_rate,
            "seed": config.seed, "eval_strategy": "no", "save_strategy": "no", "logging_steps": config.logging_steps,
        })
    except ValueError as error:
        raise ConfigError(f"training: {error}") from None


def _fine_tune(task, config, featurized, tokenizer, learning_rate, run_dir: Path, split_sizes: dict) -> dict:
    """One fine-tuning at ``learning_rate`` from the same seed: dev scores, test predictions, the model; the record
    is also written to ``<run_dir>/run.json``, with what the scores were measured on (the dataset and its config,
    the examples used of each split's ``split_sizes``), so the card of an export says it (hf_syntax.hub.export)."""
    from transformers import set_seed

    from hf_syntax.data.collators import SyntaxClassificationCollator

    set_seed(config.seed)
    model = build_model(task, config, tokenizer)
    arguments = training_arguments(config, learning_rate, run_dir)
    trainer_options = dict(
        model=model,
        args=arguments,
        train_dataset=featurized["train"],
        data_collator=SyntaxClassificationCollator(tokenizer),
        processing_class=tokenizer,
        compute_metrics=GlueMetricComputer(task),
    )
    if not config.use_pos or config.pos_learning_rate is None:
        trainer = Trainer(**trainer_options)
    else:
        trainer = PosLearningRateTrainer(**trainer_options, pos_learning_rate=config.pos_learning_rate)
    started = time.time()
    train_output = trainer.train()
    train_seconds = time.time() - started
    scores = {}
    for split in task.eval_splits:
        metrics = trainer.evaluate(featurized[split], metric_key_prefix="eval")
        scores[split] = {name: round(metrics[f"eval_{name}"] * 100, 2) for name in task.metrics}
    run = {
        "learning_rate": learning_rate,
        "eval": scores,
        "dataset": {"hub_id": GLUE_HUB_DATASET if config.data_dir else None, "config": task.name,
                    "source": config.data_dir or config.dataset_path},
        "examples": {split: {"used": len(featurized[split]), "in_split": split_sizes[split]}
                     for split in ("train", *task.eval_splits)},
        "text_pairs": len(task.text_columns) == 2,
        "train_loss": round(train_output.training_loss, 4),
        "last_logged_loss": _last_logged_loss(trainer),
        **({"pos_input": model.bert.embeddings.pos_input_size()} if config.use_pos else {}),
        "steps": train_output.global_step,
        "train_seconds": round(train_seconds, 1),
        "device": device_name(trainer.args.device),
        "run_dir": str(run_dir),
    }
    if config.predict_test:
        run["predictions"] = {}
        for split, file_name in task.submission_files.items():
            if split in featurized:
                path = run_dir / file_name
                unlabelled = featurized[split].remove_columns("labels")
                write_glue_predictions(task, trainer.predict(unlabelled).predictions, unlabelled, path)
                run["predictions"][split] = str(path)
    if config.save_model:
        trainer.save_model(str(run_dir / "model"))
    write_json(run_dir / GLUE_RUN_FILE, run)
    return run


def _last_logged_loss(trainer) -> float | None:
    """Mean training loss of the last logging window (``train_loss`` is the mean over the whole run)."""
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    return round(losses[-1], 4) if losses else None


def _publish_submission(best_run: dict, output_dir: Path) -> None:
    """Copy the best run's test predictions to ``<output_dir>/glue_submission/`` (zip that folder for GLUE)."""
    for source in best_run.get("predictions", {}).values():
        target = output_dir / "glue_submission" / Path(source).name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


def main(argv=None) -> None:
    """Command line: ``--config`` file and ``--set key=value`` overrides (``GlueRunConfig`` fields)."""
    summary = run_glue(parse_arguments(argv))
    print(json.dumps({"task": summary["task"], "variant": summary["variant"], "best": summary["best"]}, indent=2))
