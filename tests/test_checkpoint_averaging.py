"""Checkpoint averaging: the recipe's ``training.average_last_checkpoints`` and ``hf-syntax average``, on real tiny
runs and hand-made checkpoints."""

import json
import shutil
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file
from transformers import AutoModelForSeq2SeqLM

from fresh_process import run_without_hf_syntax
from hub_support import tiny_model, tiny_tokenizer
from test_training_recipe import CHECKPOINT_STEP, TOTAL_STEPS, tiny_config

from hf_syntax.cli import main as cli
from hf_syntax.hub.export import export
from hf_syntax.recipes.checkpoint_averaging import (
    CheckpointAveragingError, average_checkpoints, average_state_dicts,
)
from hf_syntax.recipes.config import ConfigError
from hf_syntax.recipes.translation.run import train_translation
from hf_syntax.recipes.translation.schema import load_recipe_config


def write_config(tmp_path: Path, name: str, **training) -> Path:
    config_file = tmp_path / f"{name}.yaml"
    config_file.write_text(yaml.safe_dump(tiny_config(tmp_path / name, **training)))
    return config_file


@pytest.fixture(scope="module")
def averaged_run(tmp_path_factory):
    """A tiny run on a schedule that ends (linear decay to 0) whose final model averages its last two states."""
    tmp_path = tmp_path_factory.mktemp("averaging")
    config = load_recipe_config(write_config(tmp_path, "run", average_last_checkpoints=2, lr_scheduler_type="linear",
                                             save_total_limit=None))
    return tmp_path / "run", train_translation(config)


def weights(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(str(folder / "model.safetensors"))


def test_the_final_model_is_the_mean_of_the_last_two_checkpoints(averaged_run):
    output_dir, summary = averaged_run
    assert summary["average_last_checkpoints"] == 2
    assert summary["averaged_steps"] == [CHECKPOINT_STEP, TOTAL_STEPS]
    assert summary["best_checkpoint"] is None  # nothing was chosen on dev
    first, last = (weights(output_dir / f"checkpoint-{step}") for step in (CHECKPOINT_STEP, TOTAL_STEPS))
    final = weights(output_dir / "model")
    assert set(final) == set(last)
    for name, tensor in final.items():
        assert not torch.equal(first[name], last[name]) or "layer_norm" in name or "embed_positions" in name
        torch.testing.assert_close(tensor, ((first[name].double() + last[name].double()) / 2).float(),
                                   rtol=0, atol=0)


def test_the_card_says_the_weights_are_a_mean_of_checkpoints(averaged_run):
    output_dir, _ = averaged_run
    card = (output_dir / "model" / "README.md").read_text(encoding="utf-8")
    assert f"mean of the checkpoints at steps {CHECKPOINT_STEP}, {TOTAL_STEPS}" in card


def test_the_run_summary_keeps_what_its_card_says_of_the_training_data(averaged_run):
    """``hf-syntax export`` of the model folder later reads the summary: the card it writes then says the same."""
    output_dir, summary = averaged_run
    assert summary["training_data"].startswith(f"{summary['pairs']['train']} sentence pairs (ja->en) from `")
    assert summary["training_data"] in (output_dir / "model" / "README.md").read_text(encoding="utf-8")


def test_the_averaged_run_reports_the_averaged_weights_dev_score(averaged_run):
    output_dir, summary = averaged_run
    evaluations = [entry for entry in json.loads(
        (output_dir / f"checkpoint-{TOTAL_STEPS}" / "trainer_state.json").read_text())["log_history"]
        if "eval_bleu" in entry]
    assert [entry["step"] for entry in evaluations] == [CHECKPOINT_STEP, TOTAL_STEPS]
    hypotheses = Path(summary["predictions_file"]).read_text(encoding="utf-8").splitlines()
    assert len(hypotheses) == summary["pairs"]["test"]
    assert "validation_bleu" in summary and summary["validation_bleu"] >= 0


def test_a_linear_schedule_ends_at_learning_rate_zero(averaged_run):
    """The log shows the rate each step trained with: after the last one, one more equal decrement reaches 0."""
    output_dir, _ = averaged_run
    history = json.loads((output_dir / f"checkpoint-{TOTAL_STEPS}" / "trainer_state.json").read_text())["log_history"]
    rates = [entry["learning_rate"] for entry in history if "learning_rate" in entry]
    assert len(rates) == TOTAL_STEPS and max(rates) > rates[-1] > 0
    assert rates[-1] - (rates[-2] - rates[-1]) == pytest.approx(0, abs=1e-12)


def test_averaging_one_checkpoint_gives_it_back_exactly(averaged_run, tmp_path):
    output_dir, _ = averaged_run
    last = output_dir / f"checkpoint-{TOTAL_STEPS}"
    assert cli(["average", str(last), "--output", str(tmp_path / "one")]) == 0
    original, averaged = weights(last), weights(tmp_path / "one")
    assert set(original) == set(averaged)
    assert all(torch.equal(original[name], averaged[name]) for name in original)
    assert not (tmp_path / "one" / "optimizer.pt").exists()  # a model, not a point to resume from
    assert (tmp_path / "one" / "tokenizer_config.json").is_file()


def test_a_checkpoint_averages_with_its_runs_final_model_folder(averaged_run, tmp_path):
    """The final model folder is saved with its pipeline (config.custom_pipelines) and a checkpoint is not: that
    says how the folder was saved, not which model it is, so the two average."""
    output_dir, _ = averaged_run
    first, final = output_dir / f"checkpoint-{CHECKPOINT_STEP}", output_dir / "model"
    assert "custom_pipelines" in json.loads((final / "config.json").read_text())
    assert "custom_pipelines" not in json.loads((first / "config.json").read_text())
    assert cli(["average", str(first), str(final), "--output", str(tmp_path / "mixed")]) == 0
    older, newer, averaged = weights(first), weights(final), weights(tmp_path / "mixed")
    for name, tensor in averaged.items():
        torch.testing.assert_close(tensor, ((older[name].double() + newer[name].double()) / 2).float(), rtol=0, atol=0)


@pytest.fixture(scope="module")
def two_exports(tmp_path_factory):
    """Two exported folders of one tiny dep-free model with hand-set weights: all 1.0 and all 4.0."""
    tmp_path = tmp_path_factory.mktemp("hand_made")
    tokenizer = tiny_tokenizer()
    folders = []
    for value in (1.0, 4.0):
        model = tiny_model("baseline", tokenizer)
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.fill_(value)
        with pytest.warns(UserWarning):  # exported without results: the card warns it is untrained
            folders.append(export(model, tokenizer, tmp_path / f"weights_{value:g}"))
    return folders


def test_two_hand_made_checkpoints_average_exactly_and_load_anywhere(two_exports, tmp_path):
    averaged = average_checkpoints(two_exports, tmp_path / "averaged")
    model = AutoModelForSeq2SeqLM.from_pretrained(averaged)
    assert all(torch.equal(parameter, torch.full_like(parameter, 2.5)) for parameter in model.parameters())
    assert json.loads((averaged / "averaged_from.json").read_text())["averaged_checkpoints"] == [
        str(folder) for folder in two_exports]
    output = run_without_hf_syntax(
        "from transformers import AutoModelForSeq2SeqLM\n"
        f"model = AutoModelForSeq2SeqLM.from_pretrained({str(averaged)!r}, trust_remote_code=True)\n"
        "print(sorted({float(value) for p in model.parameters() for value in p.flatten().unique()}))\n",
        tmp_path,
    )
    assert output.strip() == "[2.5]"


def test_floating_tensors_are_averaged_and_the_others_are_the_newest(tmp_path):
    older = {"weight": torch.tensor([1.0, 2.0]), "step": torch.tensor([3])}
    newer = {"weight": torch.tensor([2.0, 5.0]), "step": torch.tensor([7])}
    mean = average_state_dicts([older, newer])
    assert torch.equal(mean["weight"], torch.tensor([1.5, 3.5])) and torch.equal(mean["step"], torch.tensor([7]))


def test_checkpoints_of_different_configs_are_refused_in_one_line(two_exports, tmp_path, capsys):
    tokenizer = tiny_tokenizer()
    other = tiny_model("dbsa", tokenizer)
    other.save_pretrained(tmp_path / "dbsa")
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        cli(["average", str(two_exports[0]), str(tmp_path / "dbsa"), "--output", str(tmp_path / "mixed")])
    assert stopped.value.code == 2
    message = capsys.readouterr().err.strip()
    assert "\n" not in message and message.startswith("error: ") and "not checkpoints of one model" in message
    assert not (tmp_path / "mixed").exists()


def test_a_checkpoint_named_twice_or_of_another_vocabulary_is_refused(two_exports, tmp_path):
    """Naming one folder twice would weigh it double; a folder whose tokenizer maps ids to other subwords (two runs
    that trained their own vocabularies) has embedding rows that mean other things: neither is a mean of one model."""
    with pytest.raises(CheckpointAveragingError, match="is named twice; each checkpoint counts once"):
        average_checkpoints([two_exports[0], two_exports[1], two_exports[0]], tmp_path / "twice")
    other = shutil.copytree(two_exports[1], tmp_path / "other_vocabulary")
    tokenizer = json.loads((other / "tokenizer.json").read_text())
    vocabulary = tokenizer["model"]["vocab"]
    first, second = list(vocabulary)[-2:]
    vocabulary[first], vocabulary[second] = vocabulary[second], vocabulary[first]
    (other / "tokenizer.json").write_text(json.dumps(tokenizer))
    with pytest.raises(CheckpointAveragingError, match=r"have different vocabularies \(tokenizer.json differs\)"):
        average_checkpoints([two_exports[0], other], tmp_path / "mixed")
    assert not (tmp_path / "twice").exists() and not (tmp_path / "mixed").exists()


def test_different_shapes_are_refused():
    with pytest.raises(CheckpointAveragingError, match="shape"):
        average_state_dicts([{"weight": torch.zeros(2)}, {"weight": torch.zeros(3)}])


@pytest.mark.parametrize("training, message", [
    ({"average_last_checkpoints": 0}, "whole number >= 1"),
    ({"average_last_checkpoints": 2, "load_best_model_at_end": True}, "load_best_model_at_end"),
    ({"average_last_checkpoints": 3, "save_total_limit": 2}, "save_total_limit=2"),
    # refused after the whole run before: 8 steps saved every 4 leave one checkpoint before the final step
    ({"average_last_checkpoints": 3}, r"average_last_checkpoints=3 averages the final weights with the 2 checkpoint\(s\) "
                                      r"saved before the final step, but the run saves 1 before it"),
    ({"average_last_checkpoints": 3, "max_steps": -1, "num_train_epochs": 2, "save_strategy": "epoch"},
     "the run saves 1 before it"),
    ({"average_last_checkpoints": 2, "save_strategy": "no"}, "the run saves 0 before it"),
])
def test_averaging_settings_that_cannot_work_are_refused(tmp_path, training, message):
    with pytest.raises(ConfigError, match=message):
        load_recipe_config(write_config(tmp_path, "bad", **training))


def test_step_saves_too_few_for_the_average_over_epochs_are_refused_before_training(tmp_path):
    """Over an epoch schedule the steps, and so the step saves, depend on the data's size: the run trained its whole
    schedule and then failed, writing no model."""
    config = load_recipe_config(write_config(tmp_path, "run", max_steps=-1, num_train_epochs=1, save_steps=100,
                                             average_last_checkpoints=2))
    with pytest.raises(ConfigError, match=r"average_last_checkpoints=2 averages the final weights with the 1 "
                                          r"checkpoint\(s\) saved before the final step, but the run saves 0"):
        train_translation(config)
    assert not list((tmp_path / "run").glob("checkpoint-*"))


def test_a_finished_run_resumed_averages_to_the_same_model(tmp_path):
    """A session that ends after the last epoch's checkpoint but before the average is written resumes with no step
    to train: the model in memory was then never saved (its config names no architecture), which the averaging used
    to refuse as 'not checkpoints of one model'. (Epochs, as the studies train: transformers trains one more step
    when a run that stopped at max_steps mid-epoch is resumed.)"""
    import shutil

    epochs = {"max_steps": -1, "num_train_epochs": 2, "eval_strategy": "epoch", "save_strategy": "epoch",
              "average_last_checkpoints": 2, "lr_scheduler_type": "linear", "save_total_limit": None}
    summary = train_translation(load_recipe_config(write_config(tmp_path, "run", **epochs)))
    shutil.copytree(tmp_path / "run", tmp_path / "copy", ignore=shutil.ignore_patterns("model", "summary.json"))
    resumed = train_translation(load_recipe_config(write_config(tmp_path, "copy", **epochs)),
                                resume_from_checkpoint="latest")
    assert resumed["averaged_steps"] == summary["averaged_steps"] and len(summary["averaged_steps"]) == 2
    final, again = weights(tmp_path / "run" / "model"), weights(tmp_path / "copy" / "model")
    assert all(torch.equal(final[name], again[name]) for name in final)


def test_paths_that_are_not_checkpoints_or_a_new_folder_are_named(averaged_run, tmp_path):
    """A missing folder, a run's folder given for its checkpoints, and an --output that is a file were each a
    misleading 'no config.json' or a NotADirectoryError traceback."""
    output_dir, _ = averaged_run
    checkpoint = output_dir / f"checkpoint-{CHECKPOINT_STEP}"
    with pytest.raises(CheckpointAveragingError, match="does not exist"):
        average_checkpoints([tmp_path / "missing", checkpoint], tmp_path / "a")
    run_folder = shutil.copytree(output_dir, tmp_path / "run", ignore=shutil.ignore_patterns("model"))
    with pytest.raises(CheckpointAveragingError, match=f"is a run's folder, not a checkpoint; name its checkpoints, "
                                                       f"e.g. the last two: .*checkpoint-{TOTAL_STEPS}$"):
        average_checkpoints([run_folder], tmp_path / "b")
    (tmp_path / "notes.txt").write_text("keep me")
    with pytest.raises(CheckpointAveragingError, match="--output .*notes.txt is a file, not a folder"):
        average_checkpoints([checkpoint], tmp_path / "notes.txt")
    assert (tmp_path / "notes.txt").read_text() == "keep me"
    (tmp_path / "earlier").mkdir()
    (tmp_path / "earlier" / "model.safetensors").write_text("an earlier average")
    with pytest.raises(CheckpointAveragingError, match=r"--output .*earlier exists and is not empty; choose a new folder "
                                                       r"or empty it first"):  # the API has no overwrite to pass
        average_checkpoints([checkpoint], tmp_path / "earlier")
    with pytest.raises(CheckpointAveragingError, match=r"give a list of checkpoint folders to average, not one path"):
        average_checkpoints(str(checkpoint), tmp_path / "c")  # its characters were taken for folders: "t does not exist"
