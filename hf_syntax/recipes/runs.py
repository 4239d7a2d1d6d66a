"""What every recipe run shares around the Trainer: the ``--config`` / ``--set`` command line, resuming from a
checkpoint folder, and the JSON files a run writes (``summary.json``, ``results.json``, ``run.json``)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

from hf_syntax.recipes.config import ConfigError
from hf_syntax.saved_files import DamagedFileError, check_model_files

logger = logging.getLogger(__name__)

# Required files in a checkpoint folder for an exact resume (weights are checked separately).
CHECKPOINT_FILES = ("config.json", "trainer_state.json", "optimizer.pt", "scheduler.pt", "training_args.bin")
CHECKPOINT_WEIGHTS = ("model.safetensors", "pytorch_model.bin")
# What a finished run leaves beside its model/ folder: a translation run's summary (its presence marks the run
# finished), a GLUE learning rate's record.
SUMMARY_FILE = "summary.json"
GLUE_RUN_FILE = "run.json"


def add_config_arguments(parser: argparse.ArgumentParser, set_example: str, required: bool = False) -> None:
    """``--config FILE`` and repeatable ``--set key=value`` (``set_example`` shows a key of this recipe).

    Both recipes read their file through ``hf_syntax.recipes.config.load_config``, so the flags mean the same.
    """
    parser.add_argument("--config", required=required, help="YAML/JSON experiment config (see training/configs/)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help=f"override one config value, e.g. --set {set_example} (repeatable)")


def add_translation_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The translation recipe's own options, for ``training/train_translation.py`` and ``hf-syntax train`` alike:
    dashes, as every hf-syntax option; the underscore spellings scripts already use stay accepted."""
    parser.add_argument("--output-dir", "--output_dir", dest="output_dir",
                        help="folder of the run (checkpoints, model/, summary.json); default: the config's output_dir")
    parser.add_argument("--resume-from-checkpoint", "--resume_from_checkpoint", dest="resume_from_checkpoint",
                        metavar="FOLDER|latest",
                        help="continue a run from a checkpoint-* folder, or the newest one in output_dir")
    parser.add_argument("--skip-empty", "--skip_empty", dest="skip_empty", action="store_true",
                        help="drop (and count) corpus pairs with an empty side instead of stopping with an error")
    parser.add_argument("--push-to-hub", "--push_to_hub", dest="push_to_hub", action="store_true",
                        help="upload the exported model folder (<output_dir>/model) at the end (needs a login)")
    parser.add_argument("--hub-model-id", "--hub_model_id", dest="hub_model_id",
                        help="the Hub repo to upload to, e.g. me/dbsa-ja-en")


def device_name(device) -> str:
    """Where a run trained, for its summary: "cpu", or the accelerator's name ("NVIDIA H100 80GB HBM3"), so that
    a study can say which of its runs trained on a GPU."""
    if device.type == "cuda":
        import torch

        return torch.cuda.get_device_name(device)
    return device.type


def write_json(path: Path, record: dict[str, Any]) -> None:
    """A run's record as indented UTF-8 JSON (non-ASCII text such as Japanese examples kept readable; values JSON
    has no type for, such as paths, written as strings)."""
    write_text_atomically(path, json.dumps(record, indent=2, ensure_ascii=False, default=str) + "\n")


def write_text_atomically(path: Path, text: str) -> None:
    """Write UTF-8 ``text`` to ``path`` whole or not at all: a session end or a kill mid-write left half a file
    (records, caches, translations, logs) that the next session read as broken JSON or as a translation short of
    lines."""
    path = Path(path)
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")  # one per writer
    partial = Path(name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.chmod(partial, 0o644)  # mkstemp makes it 600; write_text made files readable to all
    os.replace(partial, path)


def check_checkpoint_folder(folder: Path) -> None:
    """Refuse to resume from a folder that lacks what an exact resume needs (names the missing files) or whose
    weights, config or trainer state were cut off while saving, before any data is prepared."""
    if not folder.is_dir():
        raise ConfigError(f"resume_from_checkpoint: {folder} is not a folder")
    missing = [name for name in CHECKPOINT_FILES if not (folder / name).is_file()]
    if not any((folder / name).is_file() for name in CHECKPOINT_WEIGHTS):
        missing.append(" or ".join(CHECKPOINT_WEIGHTS))
    if not any(folder.glob("rng_state*.pth")):
        missing.append("rng_state.pth (random states: without them the resumed run is not exact)")
    if not (folder / "tokenizer_config.json").is_file():
        missing.append("tokenizer_config.json")
    if missing:
        raise _cut_off(folder, missing)
    try:
        check_model_files(folder)
    except DamagedFileError as error:
        raise ConfigError(f"checkpoint {error}") from None
    if not _is_json(folder / "trainer_state.json"):  # the Trainer writes it last, after the weights checked above
        raise _cut_off(folder, ["a whole trainer_state.json (what is there is not JSON)"])


def _cut_off(folder: Path, missing: list[str]) -> ConfigError:
    return ConfigError(f"checkpoint {folder} is incomplete, missing: {', '.join(missing)}; it was probably cut off "
                       "while saving; resume from an earlier checkpoint-* folder or start again")


def _is_json(path: Path) -> bool:
    try:
        json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return False
    return True


def check_output_dir(output_dir: str | Path) -> None:
    """Refuse an output_dir that is a file before any data is read (it failed minutes later, as the tokenizer was
    saved into it)."""
    if Path(output_dir).exists() and not Path(output_dir).is_dir():
        raise ConfigError(f"output_dir {output_dir} is a file, not a folder; give the run a folder path "
                          f"(--output-dir or the config's output_dir)")


def resolve_resume(resume_from_checkpoint: str | None, output_dir: str, overwrite: bool) -> Path | None:
    """``None``, a checkpoint folder, or ``"latest"`` (the newest ``checkpoint-*`` in output_dir).

    A fresh run into a folder with checkpoints is refused unless ``overwrite``: "latest" would later pick up
    the other run's newest checkpoint. With ``overwrite`` the other run's checkpoints are moved aside to
    ``overwritten-checkpoint-N``: left in place, the final average took them in and a later "latest" resumed from them.
    """
    if resume_from_checkpoint is None:
        earlier = checkpoint_folders(Path(output_dir))
        if earlier and not overwrite:
            raise ConfigError(
                f"output_dir {output_dir} already holds checkpoints; continue that run with "
                "--resume-from-checkpoint latest, pick a new output_dir, or set overwrite_output_dir: true"
            )
        for folder in earlier:
            logger.warning("overwrite_output_dir: moved the earlier run's %s to %s", folder,
                           move_aside(folder, "overwritten"))
        return None
    if resume_from_checkpoint == "latest":
        return newest_complete_checkpoint(Path(output_dir))
    folder = Path(resume_from_checkpoint).expanduser()
    check_checkpoint_folder(folder)
    return folder


def newest_complete_checkpoint(output_dir: Path) -> Path:
    """The newest ``checkpoint-*`` an exact resume can start from.

    A run stopped while saving (a session's time limit, a killed job) leaves its newest checkpoint incomplete; the
    epoch it holds is lost either way, so "latest" resumes from the one before and moves the cut-off folder aside
    to ``incomplete-checkpoint-N`` (kept for inspection; the Trainer saves step N afresh), saying so. With no
    complete checkpoint at all it stops, naming what the newest one lacks, and moves nothing.
    """
    folders = checkpoint_folders(output_dir)[::-1]
    if not folders:
        raise ConfigError(f"resume_from_checkpoint=latest: no checkpoint-* folder in {output_dir}")
    cut_off = []
    for folder in folders:
        try:
            check_checkpoint_folder(folder)
        except ConfigError as error:
            cut_off.append((folder, error))
            continue
        for incomplete, error in cut_off:
            logger.warning("%s; moved it to %s and resuming from %s", error, move_aside(incomplete, "incomplete"),
                           folder)
        return folder
    raise cut_off[0][1]


def set_aside_when_none_is_complete(output_dir: Path) -> list[Path]:
    """For a driver that owns ``output_dir`` (the study's): when every ``checkpoint-*`` in it was cut off while saving
    (a session ended during the first save), move them aside and return their new names, so that the run starts
    again instead of failing on "latest" in every later session. With a complete one, nothing is moved: "latest"
    resumes from it."""
    folders = checkpoint_folders(output_dir)
    for folder in folders:
        try:
            check_checkpoint_folder(folder)
        except ConfigError:
            continue
        return []
    return [move_aside(folder, "incomplete") for folder in folders]


def move_aside(folder: Path, reason: str) -> Path:
    """Rename a checkpoint folder to ``<reason>-checkpoint-N`` (``-2``, ``-3``... when that name is taken: the
    same step moved aside before, both kept), out of the ``checkpoint-*`` names that resuming and averaging read."""
    aside = folder.with_name(f"{reason}-{folder.name}")
    for attempt in range(2, 1000):
        if not aside.exists():
            break
        aside = folder.with_name(f"{reason}-{folder.name}-{attempt}")
    folder.rename(aside)
    return aside


def checkpoint_folders(output_dir: Path) -> list[Path]:
    """The ``checkpoint-<step>`` folders of a Trainer output_dir, oldest first."""
    folders = [path for path in Path(output_dir).glob("checkpoint-*")
               if path.name.split("-", 1)[1].isdigit() and path.is_dir()]
    return sorted(folders, key=lambda path: int(path.name.split("-", 1)[1]))


def timed_stretches(output_dir: Path) -> list[tuple[float, float, float]]:
    """``(saved_at, later_saved_at, seconds per optimizer step)`` between each pair of consecutive checkpoints (their
    folders' save times), oldest first: the training and any evaluation between the two saves. Empty before two
    checkpoints."""
    checkpoints = checkpoint_folders(output_dir)
    steps = [int(folder.name.split("-", 1)[1]) for folder in checkpoints]
    saved_at = [folder.stat().st_mtime for folder in checkpoints]
    return [(time, later_time, (later_time - time) / (later - step))
            for step, later, time, later_time in zip(steps, steps[1:], saved_at, saved_at[1:])]


def seconds_per_step(output_dir: Path) -> float | None:
    """A run's pace: the median of its :func:`timed_stretches`' paces. The median, not the total: a run spread over
    sessions has breaks between them, and stretches that shared the cores with other work run slow. None before two
    checkpoints."""
    paces = [pace for _, _, pace in timed_stretches(output_dir)]
    return statistics.median(paces) if paces else None


def checkpoint_step(folder: Path | None) -> int:
    """The optimizer step a checkpoint was saved at (0 without one). Read before training: the Trainer's
    ``save_total_limit`` may delete the checkpoint a run resumed from."""
    return json.loads((folder / "trainer_state.json").read_text())["global_step"] if folder else 0


def whole_run_training_loss(log_history: list[dict], train_result, resumed_at: int) -> dict[str, float]:
    """``train_loss`` (mean training loss per optimizer step) over the whole run, and ``train_loss_steps``, the steps
    it covers.

    The Trainer's ``training_loss`` averages only the steps this process ran; after a resume from the checkpoint of
    step ``resumed_at``, the steps before it come from its log history (a ``loss`` logged at step s is the mean
    since the previously logged step).
    The recipe logs on every step that saves a checkpoint (``LogOnEverySave``), so this covers every step; only a
    checkpoint saved without that (by an older version, with ``save_steps`` not a multiple of ``logging_steps``)
    leaves steps unlogged, and ``train_loss_steps`` is then less than the run's steps.
    """
    total, covered = 0.0, 0
    for entry in log_history:
        if "loss" in entry and covered < entry["step"] <= resumed_at:
            total += entry["loss"] * (entry["step"] - covered)
            covered = entry["step"]
    resumed_steps = train_result.global_step - resumed_at
    total += train_result.training_loss * resumed_steps
    covered += resumed_steps
    return {"train_loss": total / covered if covered else train_result.training_loss, "train_loss_steps": covered}
