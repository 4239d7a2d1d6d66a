"""Checkpoint averaging: the parameter mean of a run's last checkpoints as its final model.

Why: the last epochs of a run sit around one point of the loss surface, and a dev set of a few hundred lines is too
small to pick one of them with (a pick swings by up to 3 BLEU between adjacent epochs). Their mean is one model that
is usually at least as good as the best of them and chosen by nothing. The behaviour follows fairseq's
``average_checkpoints.py``: every floating-point parameter and buffer is averaged; other tensors (integer ids, step
counters) are the newest checkpoint's.

Two users: the translation recipe (``training.average_last_checkpoints: N``) and ``hf-syntax average``.
"""

from __future__ import annotations

import itertools
import json
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

import torch

from hf_syntax.folder_layout import TARGET_TOKENIZER_DIR, new_folder_problem
from hf_syntax.recipes.runs import checkpoint_folders

TRAINER_STATE_FILES = ("optimizer.pt", "scheduler.pt", "scaler.pt", "trainer_state.json", "training_args.bin")
"""What a Trainer checkpoint carries besides the model: meaningless for an average, so not copied to one."""
CONFIG_KEYS_THAT_MAY_DIFFER = {"_name_or_path", "transformers_version", "dtype", "torch_dtype", "custom_pipelines"}
"""Config entries that record where or with what a folder was saved, not what the model is (``custom_pipelines``:
a run's final model folder is saved with its pipeline, its checkpoints are not)."""
SAVED_ONLY_CONFIG_KEYS = ("architectures", "auto_map")
"""Config entries save_pretrained writes (the class and its remote-code map), unset on a model never saved."""
AVERAGING_RECORD = "averaged_from.json"
VOCABULARY_FILES = ("tokenizer.json", f"{TARGET_TOKENIZER_DIR}/tokenizer.json")
"""The files that say which subword each embedding row is: the same in every folder of one average."""


class CheckpointAveragingError(ValueError):
    """Checkpoints that cannot be averaged (different models, missing files): the message names them."""


def average_state_dicts(state_dicts: Iterable[Mapping[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The mean of floating-point tensors (summed in float64, then cast back to each tensor's dtype, so two float32
    values average to the correctly rounded mean); the other tensors of the last state dict unchanged. Key sets and
    shapes must agree."""
    totals: dict[str, torch.Tensor] = {}
    newest: Mapping[str, torch.Tensor] = {}
    count = 0
    for state_dict in state_dicts:
        if count and set(state_dict) != set(newest):
            difference = sorted(set(state_dict) ^ set(newest))
            raise CheckpointAveragingError(f"the checkpoints hold different parameters ({difference[:3]} ...); "
                                           f"average checkpoints of one model")
        for name, tensor in state_dict.items():
            if count and tensor.shape != newest[name].shape:
                raise CheckpointAveragingError(f"parameter {name} has shape {tuple(tensor.shape)} in one checkpoint "
                                               f"and {tuple(newest[name].shape)} in another; average checkpoints "
                                               f"of one model")
            if tensor.is_floating_point():
                value = tensor.detach().to(torch.float64)
                totals[name] = value.clone() if name not in totals else totals[name].add_(value)
        newest, count = state_dict, count + 1
    if not count:
        raise CheckpointAveragingError("no checkpoints to average")
    return {name: (totals[name] / count).to(tensor.dtype) if name in totals else tensor.detach().clone()
            for name, tensor in newest.items()}


def check_one_model(configs: Mapping[Path, dict]) -> None:
    """Refuse checkpoints of different architectures or configs, naming the first entry that differs."""
    (first_path, first), *others = configs.items()
    for path, config in others:
        for key in sorted((set(first) | set(config)) - CONFIG_KEYS_THAT_MAY_DIFFER):
            if first.get(key) != config.get(key):
                raise CheckpointAveragingError(
                    f"{first_path} and {path} are not checkpoints of one model: config.json's {key!r} is "
                    f"{first.get(key)!r} in one and {config.get(key)!r} in the other; average checkpoints of one "
                    f"run (one architecture and config)")


def check_one_vocabulary(folders: list[Path]) -> None:
    """Refuse folders whose tokenizers differ: the same embedding row would stand for different subwords, so the
    average would be fluent in neither (two runs of one config that trained their own vocabularies on other data)."""
    for name in VOCABULARY_FILES:
        saved = {folder: (folder / name).read_bytes() for folder in folders if (folder / name).is_file()}
        (first, first_bytes), *others = saved.items() or [(None, None)]
        different = next((folder for folder, data in others if data != first_bytes), None)
        if different is not None:
            raise CheckpointAveragingError(f"{first} and {different} have different vocabularies ({name} differs): "
                                           f"their embedding rows are different subwords; average checkpoints of "
                                           f"one run")


def check_averaging_input(folder: Path) -> None:
    """Name a path that is not a model folder for what it is: missing, or a run's folder whose checkpoints are inside
    it (the likely slip), with the checkpoints to name instead."""
    if not folder.exists():
        raise CheckpointAveragingError(f"{folder} does not exist; give checkpoint-* folders or saved model folders")
    inside = checkpoint_folders(folder)
    if inside and not (folder / "config.json").is_file():
        raise CheckpointAveragingError(f"{folder} is a run's folder, not a checkpoint; name its checkpoints, e.g. the "
                                       f"last two: {' '.join(str(path) for path in inside[-2:])}")


def read_config(folder: Path) -> dict:
    """A saved folder's full config (defaults included: ``config.json`` stores only what differs from them)."""
    from hf_syntax.hub.model_folder import ModelFolderError, load_model_config

    try:
        return load_model_config(folder).to_dict()
    except ModelFolderError as error:
        raise CheckpointAveragingError(f"{error} (give checkpoint-* folders or saved model folders)") from None


def average_checkpoints(folders: list[Path], output: Path) -> Path:
    """Write the average of saved model folders (Trainer checkpoints or exported folders of one model) to
    ``output``: the newest folder's files (tokenizer, generation config, remote code, card) with the averaged
    weights, and ``averaged_from.json`` naming the folders. The Trainer's optimizer and scheduler states are not
    copied: an average is a model, not a point to resume from."""
    from hf_syntax.hub.model_folder import load_model_folder

    if isinstance(folders, (str, Path)):  # one path was read character by character ("t does not exist")
        raise CheckpointAveragingError(f"give a list of checkpoint folders to average, not one path ({folders}): "
                                       f"e.g. average_checkpoints([folder_a, folder_b], output)")
    folders = [Path(folder) for folder in folders]
    if not folders:
        raise CheckpointAveragingError("give at least one checkpoint folder to average")
    output = Path(output)
    if output.resolve() in {folder.resolve() for folder in folders}:
        raise CheckpointAveragingError(f"--output {output} is one of the checkpoints; write the average elsewhere")
    if problem := new_folder_problem(output, overwrite_hint="empty it first (an average never replaces files)"):
        raise CheckpointAveragingError(f"--output {problem}")
    for folder in folders:
        check_averaging_input(folder)
    twice = next((folder for index, folder in enumerate(folders)
                  if folder.resolve() in {earlier.resolve() for earlier in folders[:index]}), None)
    if twice is not None:
        raise CheckpointAveragingError(f"{twice} is named twice; each checkpoint counts once in the mean")
    check_one_model({folder: read_config(folder) for folder in folders})  # before loading any weights
    check_one_vocabulary(folders)
    model, _ = load_model_folder(folders[-1])  # the newest counts once, as loaded; the others stream in
    average_final_weights(model, folders[:-1], name=str(folders[-1]))
    newest = folders[-1]
    shutil.copytree(newest, output, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
        *TRAINER_STATE_FILES, "rng_state*.pth", "model*.safetensors", "model.safetensors.index.json", "*.bin"))
    with tempfile.TemporaryDirectory() as saved:  # only the weights: the newest folder's config.json stays as it was
        model.save_pretrained(saved)
        for weights in Path(saved).glob("model*.safetensors*"):
            shutil.move(str(weights), output / weights.name)
    (output / AVERAGING_RECORD).write_text(json.dumps({"averaged_checkpoints": [str(f) for f in folders]}, indent=2)
                                          + "\n", encoding="utf-8")
    return output


def average_final_weights(model: torch.nn.Module, earlier_checkpoints: list[Path], name: str = "the final model"
                          ) -> None:
    """Make ``model`` (a run's final weights) the mean of itself and ``earlier_checkpoints`` (its newest
    checkpoints before the final step): the run's last ``1 + len(earlier_checkpoints)`` states. Its own weights
    count once even where the final step was also checkpointed."""
    configs = {folder: read_config(folder) for folder in earlier_checkpoints}
    final_config = model.config.to_dict()
    # entries a config holds only once its model was saved, which a finished run resumed to be averaged (no step
    # trained in this process) never was; what the model is, its weights' names check below
    for key in SAVED_ONLY_CONFIG_KEYS:
        if final_config.get(key) is None and configs:
            final_config[key] = next(iter(configs.values())).get(key)
    check_one_model({Path(name): final_config, **configs})
    earlier = (type(model).from_pretrained(folder).state_dict() for folder in earlier_checkpoints)
    model.load_state_dict(average_state_dicts(itertools.chain(earlier, [model.state_dict()])))
