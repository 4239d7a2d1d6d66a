"""Whether a checkpoint was trained with the recipe a run now has: a resume (or a study's ``cut_from``) that goes on
from another recipe's checkpoint would report a run that nobody trained, the optimizer and schedule state keeping
the old values while the config file, the new model settings and the final config.json say the new ones."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from transformers.models.auto.configuration_auto import CONFIG_MAPPING

from hf_syntax.recipes.config import ConfigError
from hf_syntax.recipes.translation.schema import TranslationRecipeConfig, resolve_model_type
from hf_syntax.recipes.translation.trainer import training_arguments

logger = logging.getLogger(__name__)

# Learning-rate schedules whose rate at a step does not depend on the run's length: only these can be cut short or
# continued to a longer budget.
OPEN_ENDED_SCHEDULES = ("inverse_sqrt", "constant", "constant_with_warmup")
# The training arguments that decide a run's steps up to any epoch (output folders, logging, saving, evaluation and
# threads do not, so a resume may change them). The batch size and the gradient accumulation are compared as their
# product (:data:`EFFECTIVE_BATCH`): 64 x 1 and 32 x 2 take the same steps.
TRAJECTORY_ARGUMENTS = ("seed", "data_seed", "learning_rate", "lr_scheduler_type", "lr_scheduler_kwargs",
                        "warmup_steps", "warmup_ratio", "optim", "weight_decay", "adam_beta1", "adam_beta2",
                        "adam_epsilon", "max_grad_norm", "label_smoothing_factor")
EFFECTIVE_BATCH = ("per_device_train_batch_size", "gradient_accumulation_steps")
# Optimizer names that are one optimizer: transformers' default optim is adamw_torch_fused or adamw_torch depending
# on the torch version, and the fused kernel computes the same update.
SAME_OPTIMIZER = {"adamw_torch_fused": "adamw_torch"}
# Model config fields that are no choice of the recipe: filled in by build_model from the tokenizers and the
# features section (compared only where model.kwargs names them), or bookkeeping of the saving code and the Trainer
# (use_cache is training.use_cache, which only switches the decoder cache; the generation settings are in
# generation_config.json, not compared).
DERIVED_MODEL_FIELDS = ("vocab_size", "decoder_vocab_size", "pad_token_id", "eos_token_id", "bos_token_id",
                        "decoder_start_token_id", "share_encoder_decoder_embeddings", "source_parser",
                        "target_parser", "feature_labels", "source_pretokenized")
BOOKKEEPING_MODEL_FIELDS = ("_name_or_path", "transformers_version", "architectures", "auto_map", "dtype",
                            "torch_dtype", "use_cache")
_MISSING = object()
TRAINING_INPUTS_FILE = "training_inputs.json"
"""Written into a run's output_dir when it starts: what decides its batches besides the training arguments."""
DATA_TRAJECTORY_FIELDS = ("dataset", "train_split", "source_column", "target_column", "skip_empty", "max_train_pairs",
                          "max_source_length", "max_target_length", "long_lines")


def recipe_differences(recipe: TranslationRecipeConfig, checkpoint: Path) -> list[str]:
    """What a checkpoint's run trained differently from ``recipe``, one ``"<what>: <there> there, <here> here"`` per
    difference (empty: the same recipe): a model config field (see :func:`model_differences`), an argument of
    :data:`TRAJECTORY_ARGUMENTS` that both transformers versions have, the effective batch, or the length of a
    schedule that depends on it (cosine, linear)."""
    import torch

    differences = [*model_differences(recipe, checkpoint), *input_differences(recipe, checkpoint)]
    try:
        trained = torch.load(checkpoint / "training_args.bin", weights_only=False)
    except Exception as error:  # pickled by another transformers version; the Trainer itself never reads it back
        logger.warning("%s: cannot read training_args.bin (%s: %s); its training arguments are not compared",
                       checkpoint, type(error).__name__, error)
        return differences
    arguments = training_arguments(recipe)
    for key in TRAJECTORY_ARGUMENTS:
        there, here = plain(getattr(trained, key, _MISSING)), plain(getattr(arguments, key, _MISSING))
        if there is _MISSING or here is _MISSING:  # a field of one transformers version only
            continue
        if key == "optim" and SAME_OPTIMIZER.get(there, there) == SAME_OPTIMIZER.get(here, here):
            continue
        if there != here:
            differences.append(f"training {key}: {there!r} there, {here!r} here")
    there, here = effective_batch(trained), effective_batch(arguments)
    if there is not None and here is not None and there != here:
        differences.append(f"training effective batch ({' x '.join(EFFECTIVE_BATCH)}): {there} there, {here} here")
    schedule = plain(arguments.lr_scheduler_type)
    if schedule not in OPEN_ENDED_SCHEDULES and schedule_length(trained) != schedule_length(arguments):
        differences.append(f"the {schedule} schedule's length: {schedule_length(trained)} there, "
                           f"{schedule_length(arguments)} here (only {', '.join(OPEN_ENDED_SCHEDULES)} can be cut "
                           f"short or continued)")
    return differences


def model_differences(recipe: TranslationRecipeConfig, checkpoint: Path) -> list[str]:
    """Every field of the model config that the recipe decides (its preset, ``model.kwargs`` and the config class's
    defaults for the rest) and the checkpoint's config.json holds otherwise: not :data:`DERIVED_MODEL_FIELDS` unless
    ``model.kwargs`` names them, nor :data:`BOOKKEEPING_MODEL_FIELDS`. config.json leaves out the values equal to its
    class's defaults, so both sides are read with their class's defaults filled in (a field the recipe leaves out
    is its default here, whatever the checkpoint set it to)."""
    config_class, preset = resolve_model_type(recipe.model.type)
    wanted = as_saved(config_class(**{**preset, **recipe.model.kwargs}).to_dict())
    written = json.loads((checkpoint / "config.json").read_text())
    saved_class = CONFIG_MAPPING[written["model_type"]] if written.get("model_type") in CONFIG_MAPPING else config_class
    try:  # as the class reads it back: its defaults, and what it assumes of a file saved before a field existed
        saved = as_saved(saved_class.from_dict(written).to_dict())
    except Exception:  # a field this version does not know, or a value it no longer accepts: the file as written
        saved = {**as_saved(saved_class().to_dict()), **written}
    compared = [key for key in wanted if key not in BOOKKEEPING_MODEL_FIELDS and not key.startswith("_")
                and (key not in DERIVED_MODEL_FIELDS or key in recipe.model.kwargs)]
    compared.sort(key=lambda key: (key != "model_type", key))
    return [f"model {key}: {saved.get(key)!r} there, {wanted[key]!r} here"
            for key in compared if saved.get(key) != wanted[key]]


def effective_batch(arguments) -> int | None:
    """Pairs per optimizer step on one device: the batch size times the gradient accumulation (None: not known)."""
    sizes = [getattr(arguments, key, None) for key in EFFECTIVE_BATCH]
    return None if None in sizes else sizes[0] * sizes[1]


def training_inputs(recipe: TranslationRecipeConfig) -> dict[str, Any]:
    """What decides a run's batches besides its training arguments: which training pairs (files and tokenizer
    folders by name, as a run folder may move between machines), how they are cut, and the subword vocabulary."""
    data = recipe.data
    inputs = {f"data.{key}": as_saved(getattr(data, key)) for key in DATA_TRAJECTORY_FIELDS}
    if data.train is not None:
        inputs["data.train files"] = [Path(data.train.source).name, Path(data.train.target).name]
    inputs.update({f"tokenizer.{key}": as_saved(value) for key, value in vars(recipe.tokenizer).items()})
    if recipe.tokenizer.path is not None:
        inputs["tokenizer.path"] = Path(recipe.tokenizer.path).name
    return inputs


def record_training_inputs(recipe: TranslationRecipeConfig, fresh: bool) -> None:
    """Write :func:`training_inputs` into the run's folder when it starts (a resumed run keeps the record it started
    with, so a later resume compares with that)."""
    path = Path(recipe.output_dir) / TRAINING_INPUTS_FILE
    if fresh or not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(training_inputs(recipe), indent=2) + "\n", encoding="utf-8")


def input_differences(recipe: TranslationRecipeConfig, checkpoint: Path) -> list[str]:
    """The :func:`training_inputs` that differ from those the checkpoint's run started on (none where its folder
    has no record: a run from before it). The resumed run kept its checkpoint's vocabulary and its data order while
    the config and the summary named the new ones."""
    path = checkpoint.parent / TRAINING_INPUTS_FILE
    if not path.is_file():
        return []
    there = json.loads(path.read_text(encoding="utf-8"))
    return [f"{key}: {there[key]!r} there, {value!r} here" for key, value in training_inputs(recipe).items()
            if key in there and there[key] != value]


def check_resumed_recipe(recipe: TranslationRecipeConfig, checkpoint: Path) -> None:
    """Refuse to resume from a checkpoint of another recipe (see :func:`recipe_differences`), naming the values."""
    differences = recipe_differences(recipe, checkpoint)
    if differences:
        raise ConfigError(f"resume_from_checkpoint: {checkpoint} was trained with other settings ("
                          f"{'; '.join(differences)}); resuming would mix the two recipes: restore the values it was "
                          f"trained with to continue that run, or train the new settings in a new output_dir")


def schedule_length(arguments) -> str:
    """The length a schedule is stretched over: ``max_steps`` where set, else ``num_train_epochs``."""
    return f"{arguments.max_steps} steps" if arguments.max_steps > 0 else f"{arguments.num_train_epochs:g} epochs"


def as_saved(value: Any) -> Any:
    """A config value as config.json holds it (tuples as lists)."""
    return json.loads(json.dumps(value, default=str))


def plain(value: Any) -> Any:
    """A training argument as its config spells it (``'cosine'``, not ``<SchedulerType.COSINE: 'cosine'>``)."""
    return getattr(value, "value", value)
