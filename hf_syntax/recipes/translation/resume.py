"""Whether a checkpoint was trained with the recipe a run now has: a resume (or a study's ``cut_from``) that goes on
from another recipe's checkpoint would report a run that nobody trained, the optimizer and schedule state keeping
the old values while the config file, the new model settings and the final config.json say the new ones."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from hf_syntax.recipes.config import ConfigError
from hf_syntax.recipes.translation.schema import TranslationRecipeConfig, resolve_model_type
from hf_syntax.recipes.translation.trainer import training_arguments

logger = logging.getLogger(__name__)

# Learning-rate schedules whose rate at a step does not depend on the run's length: only these can be cut short or
# continued to a longer budget.
OPEN_ENDED_SCHEDULES = ("inverse_sqrt", "constant", "constant_with_warmup")
# The training arguments that decide a run's steps up to any epoch (output folders, logging, saving, evaluation and
# threads do not, so a resume may change them).
TRAJECTORY_ARGUMENTS = ("seed", "data_seed", "learning_rate", "lr_scheduler_type", "lr_scheduler_kwargs",
                        "warmup_steps", "warmup_ratio", "per_device_train_batch_size", "gradient_accumulation_steps",
                        "optim", "weight_decay", "adam_beta1", "adam_beta2", "adam_epsilon", "max_grad_norm",
                        "label_smoothing_factor")


def recipe_differences(recipe: TranslationRecipeConfig, checkpoint: Path) -> list[str]:
    """What a checkpoint's run trained differently from ``recipe``, one ``"<what>: <there> there, <here> here"`` per
    difference (empty: the same recipe): a model setting the recipe names (its preset and ``model.kwargs``), an
    argument of :data:`TRAJECTORY_ARGUMENTS`, or the length of a schedule that depends on it (cosine, linear)."""
    import torch

    config_class, preset = resolve_model_type(recipe.model.type)
    wanted = as_saved(config_class(**{**preset, **recipe.model.kwargs}).to_dict())
    # config.json leaves out the values that equal every config's defaults: read those as the defaults
    saved = {**as_saved(config_class().to_dict()), **json.loads((checkpoint / "config.json").read_text())}
    differences = [f"model {key}: {saved.get(key)!r} there, {wanted.get(key)!r} here"
                   for key in dict.fromkeys(["model_type", *preset, *recipe.model.kwargs])
                   if saved.get(key) != wanted.get(key)]
    try:
        trained = torch.load(checkpoint / "training_args.bin", weights_only=False)
    except Exception as error:  # pickled by another transformers version; the Trainer itself never reads it back
        logger.warning("%s: cannot read training_args.bin (%s: %s); its training arguments are not compared",
                       checkpoint, type(error).__name__, error)
        return differences
    arguments = training_arguments(recipe)
    for key in TRAJECTORY_ARGUMENTS:
        there, here = getattr(trained, key, None), getattr(arguments, key, None)  # None: another transformers'
        if there != here:
            differences.append(f"training {key}: {plain(there)!r} there, {plain(here)!r} here")
    schedule = plain(arguments.lr_scheduler_type)
    if schedule not in OPEN_ENDED_SCHEDULES and schedule_length(trained) != schedule_length(arguments):
        differences.append(f"the {schedule} schedule's length: {schedule_length(trained)} there, "
                           f"{schedule_length(arguments)} here (only {', '.join(OPEN_ENDED_SCHEDULES)} can be cut "
                           f"short or continued)")
    return differences


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
