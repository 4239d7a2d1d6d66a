"""DBSA + dep+rel, with a parser's depths (`dbsa_dep_rel`) and with its own (`dbsa_dep_rel_self`): real Japanese
sentences of small_parallel_enja parsed by GiNZA, a real tokenizer, the model's own tree at inference."""

import json
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForSeq2SeqLM

pytest.importorskip("ja_ginza", reason="needs GiNZA: pip install ginza ja-ginza")

from features_support import treebank  # noqa: E402
from fresh_process import run_without_hf_syntax  # noqa: E402
from hub_support import ENGLISH_PARSER, JAPANESE_PARSER  # noqa: E402
from random_weights import spread_weights  # noqa: E402

from hf_syntax import config_for  # noqa: E402
from hf_syntax.data.corpus import read_parallel  # noqa: E402
from hf_syntax.data.tokenizer import train_tokenizer  # noqa: E402
from hf_syntax.featurizer import SyntaxFeaturizer  # noqa: E402
from hf_syntax.hub.descriptions import variant_of  # noqa: E402
from hf_syntax.hub.export import export  # noqa: E402
from hf_syntax.parse_losses import LOSS_PARTS  # noqa: E402
from hf_syntax.parsers import get_parser  # noqa: E402
from hf_syntax.pipelines import syntax_pipeline  # noqa: E402
from hf_syntax.recipes.translation.data import resolve_data_path  # noqa: E402
from hf_syntax.segmenters import get_segmenter  # noqa: E402
from hf_syntax.self_parse import depths_from_parse, word_ids_from_roles, word_roles_of  # noqa: E402

PAIRS = 12
REPO_ROOT = Path(__file__).resolve().parents[1]
TRAINING_COLUMNS = ("input_ids", "attention_mask", "labels", "dep_heads", "dep_depths", "decoder_dep_heads")


@pytest.fixture(scope="module")
def corpus():
    columns, _ = read_parallel(resolve_data_path("sample_data:small_parallel_enja/train.ja.gz"),
                               resolve_data_path("sample_data:small_parallel_enja/train.en.gz"), max_pairs=400)
    japanese, english = columns["source"], columns["target"]
    tokenizer = train_tokenizer(japanese + english, vocab_size=600, model_max_length=64)
    return tokenizer, japanese[:PAIRS], english[:PAIRS]


def featurize(tokenizer, japanese, english=None, head_rule="first"):
    featurizer = SyntaxFeaturizer(tokenizer, parser=JAPANESE_PARSER, features=("dep_heads", "dep_depths"),
                                  target_parser=ENGLISH_PARSER if english else None, pretokenized=True,
                                  return_word_ids=True, head_rule=head_rule, max_length=64)
    return featurizer(japanese, text_target=english, return_tensors="pt")


@pytest.fixture(scope="module")
def batch(corpus):
    tokenizer, japanese, english = corpus
    return featurize(tokenizer, japanese, english)


def tiny(architecture, tokenizer, seed=0, **overrides):
    torch.manual_seed(seed)
    config = config_for(
        architecture, vocab_size=len(tokenizer), d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
        max_position_embeddings=64, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id, decoder_start_token_id=tokenizer.bos_token_id, dropout=0.0,
        parse_layer_encoder=2, parse_layer_decoder=2, **overrides,
    )
    model = AutoModelForSeq2SeqLM.from_config(config)
    model.read_source_tokenizer(tokenizer)
    model.generation_config.update(num_beams=2, max_new_tokens=6)
    return model


def train(model, batch, steps=3):
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        model(**{name: batch[name] for name in TRAINING_COLUMNS}).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return model.eval()


@pytest.mark.parametrize("head_rule", ["first", "last"])
def test_depths_read_back_from_the_parsers_own_subword_tree_are_the_featurizer_depths(corpus, head_rule):
    """A self-parser that predicts GiNZA's subword heads exactly gives exactly the depths dep+rel trains on."""
    tokenizer, japanese, _ = corpus
    rows = featurize(tokenizer, japanese, head_rule=head_rule)
    word_ids = word_ids_from_roles(rows["input_ids"], word_roles_of(tokenizer, len(tokenizer)).long(),
                                   rows["attention_mask"])
    assert torch.equal(word_ids, rows["word_ids"])
    heads = rows["dep_heads"]
    certain = torch.full((*heads.shape, heads.shape[1]), -50.0)
    supervised = heads >= 0
    certain[supervised.nonzero(as_tuple=True) + (heads[supervised],)] = 0.0
    assert torch.equal(depths_from_parse(certain, word_ids, head_rule), rows["dep_depths"])
    assert rows["dep_depths"].max() >= 3  # real trees, not flat ones


@pytest.mark.parametrize("architecture", ["dbsa_dep_rel", "dbsa_dep_rel_self"])
def test_every_parameter_gets_a_gradient(corpus, batch, architecture):
    tokenizer, _, _ = corpus
    model = tiny(architecture, tokenizer).train()
    output = model(**{name: batch[name] for name in TRAINING_COLUMNS})
    output.loss.backward()
    assert output.encoder_parse_loss is not None and output.decoder_parse_loss is not None
    assert (output.self_parse_loss is not None) == (architecture == "dbsa_dep_rel_self")
    parts = [getattr(output, name) for name in LOSS_PARTS[1:]]  # the loss is the parse_losses sum, self-parser included
    expected = output.translation_loss + sum(model.weighted_parse_losses(*parts))
    assert torch.allclose(output.loss, expected)
    without = [name for name, parameter in model.named_parameters()
               if parameter.grad is None or not parameter.grad.abs().sum()]
    assert without == []
    names = [name for name, _ in model.named_parameters()]
    assert any("dependency_depths" in name for name in names) and any("relative_positions" in name for name in names)
    assert any("self_parser.scorer" in name for name in names) == (architecture == "dbsa_dep_rel_self")


def test_training_reads_the_given_depths_and_inference_its_own_tree(corpus, batch):
    tokenizer, _, _ = corpus
    model = train(tiny("dbsa_dep_rel_self", tokenizer), batch)
    inputs = {name: batch[name] for name in TRAINING_COLUMNS}
    flat = {**inputs, "dep_depths": batch["dep_depths"].clamp(max=0)}
    model.train()
    assert not torch.allclose(model(**inputs).translation_loss, model(**flat).translation_loss)
    model.config.self_parse_sampling = 1.0  # scheduled sampling at 1: the own tree replaces every given one
    torch.testing.assert_close(model(**inputs).translation_loss, model(**flat).translation_loss)
    model.config.self_parse_sampling = 0.0
    model.eval()
    own = model(**inputs)
    torch.testing.assert_close(model(**flat).logits, own.logits)
    del inputs["dep_depths"]
    torch.testing.assert_close(model(**inputs).logits, own.logits)


def test_generating_from_tokens_alone_equals_passing_the_own_trees_depths(corpus, batch):
    tokenizer, _, _ = corpus
    model = train(tiny("dbsa_dep_rel_self", tokenizer), batch)
    source = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
    with torch.no_grad():
        encoder = model.get_encoder()
        parse = encoder(**source).self_parse_log_probs
        own_depths = encoder.self_parser.own_depths(parse, **source)
    assert own_depths.max() >= 1  # a tree with some depth, so the comparison below is not trivial
    generated = model.generate(**source)
    model.config.self_parse_at_inference = False
    assert torch.equal(model.generate(**source, dep_depths=own_depths), generated)
    assert not torch.equal(model(**source, dep_depths=batch["dep_depths"].clamp(max=0),
                                 decoder_input_ids=generated).logits,
                           model(**source, dep_depths=own_depths, decoder_input_ids=generated).logits)
    with pytest.raises(ValueError, match="dep_depths"):
        model.generate(**source)


def test_unknown_word_boundaries_and_bad_options_are_clear_errors(corpus, batch):
    tokenizer, _, _ = corpus
    model = tiny("dbsa_dep_rel_self", tokenizer)
    model.get_encoder().self_parser.word_roles.fill_(-1)
    with pytest.raises(ValueError, match=r"model.read_source_tokenizer\(tokenizer\)"):
        model.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    for options, message in (({"self_parse_sampling": 1.5}, "0 to 1"), ({"self_parse_layers": -1}, ">= 0"),
                             ({"dependency_depth_clip": 0}, "dependency_depth_clip"),
                             ({"source_segmenter": "mecab:ipadic"}, "sudachi:C")):
        with pytest.raises(Exception, match=message):  # huggingface_hub's strict validation wraps the ValueError
            config_for("dbsa_dep_rel_self", **options)


def test_presets_cards_and_inference_columns():
    combined, own = config_for("dbsa_dep_rel"), config_for("dbsa_dep_rel_self")
    for config in (combined, own):
        dbsa = (config.parse_layer_encoder, config.parse_layer_decoder, config.parse_loss_weight_encoder)
        dep_rel = (config.relative_position_clip, config.dependency_depth_clip, config.parse_score_form)
        assert dbsa == (4, 4, 0.5) and dep_rel == (2, 2, "scaled")
    assert combined.needs_source_features == ("dep_depths",) and own.needs_source_features == ()
    assert combined.training_columns == ("dep_heads", "decoder_dep_heads")
    assert own.training_columns == ("dep_heads", "decoder_dep_heads", "dep_depths")  # teacher-forced depths
    assert (variant_of(combined), variant_of(own)) == ("dbsa_dep_rel", "dbsa_dep_rel_self")
    assert config_for("dbsa_dep_rel_self", self_parse_at_inference=False).needs_source_features == ("dep_depths",)


def test_the_sudachi_segmenter_splits_raw_japanese_like_ginza(corpus):
    _, japanese, _ = corpus
    raw = ["".join(sentence.split()) for sentence in japanese]
    ginza = get_parser(JAPANESE_PARSER)
    assert [get_segmenter("sudachi:C").split_words(text) for text in raw] == [ginza.split_words(text) for text in raw]


@pytest.mark.slow
def test_export_loads_without_hf_syntax_and_serves_without_spacy(corpus, batch, tmp_path):
    """The exported self-parsing model: no spaCy/GiNZA in requirements.txt, and in a fresh process where neither
    hf_syntax nor spaCy can be imported, the model, its pipeline and its endpoint handler translate pre-split and
    raw Japanese as they do here."""
    tokenizer, japanese, _ = corpus
    model = spread_weights(tiny("dbsa_dep_rel_self", tokenizer, source_parser=JAPANESE_PARSER,
                                source_pretokenized=True, source_segmenter="sudachi:C")).eval()
    folder = export(model, tokenizer, tmp_path / "export",
                    {"model_id": "tests/self", "results": [{"metric": "loss", "value": 1.0, "split": "train"}]})
    requirements = (folder / "requirements.txt").read_text().split()
    assert not {"spacy", "ginza", "ja-ginza"} & set(requirements)
    assert {"sudachipy", "sudachidict_core"} <= set(requirements)
    assert "sudachi:C" in (folder / "README.md").read_text()
    pipe = syntax_pipeline(model, tokenizer)
    texts = [japanese[0], "".join(japanese[1].split())]
    expected = {"pipeline": pipe(texts, num_beams=1), "generate": model.generate(**pipe.tokenizer(
        japanese[:2], return_tensors="pt", padding=True)).tolist()}
    script = f"""
import importlib.util, json, sys
sys.modules["spacy"] = sys.modules["ginza"] = None  # importing either now fails
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
folder = {str(folder)!r}
model = AutoModelForSeq2SeqLM.from_pretrained(folder, trust_remote_code=True)
assert "hf_syntax" not in type(model).__module__
tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
spec = importlib.util.spec_from_file_location("handler", folder + "/handler.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
handler = module.EndpointHandler(folder)
texts = {json.dumps(texts, ensure_ascii=False)}
print(json.dumps({{"pipeline": handler({{"inputs": texts, "parameters": {{"num_beams": 1}}}}),
                  "generate": model.generate(**tokenizer({json.dumps(japanese[:2], ensure_ascii=False)},
                                                        return_tensors="pt", padding=True)).tolist(),
                  "spacy_loaded": any(name.split(".")[0] == "spacy" and sys.modules[name] is not None
                                      for name in sys.modules)}}))
"""
    stdout = run_without_hf_syntax(script, tmp_path)
    out = json.loads(stdout.strip().splitlines()[-1])
    assert out.pop("spacy_loaded") is False
    assert all(result["translation_text"] for result in expected["pipeline"])  # real words, not an empty output
    assert out == expected


def test_the_recipe_reads_word_starts_from_the_source_vocabulary_and_asks_for_both_training_columns(corpus, tmp_path):
    from hf_syntax.recipes.config import ConfigError
    from hf_syntax.recipes.translation.features import check_feature_columns
    from hf_syntax.recipes.translation.model import build_model
    from hf_syntax.recipes.translation.schema import load_recipe_config

    tokenizer, _, _ = corpus
    recipe = load_recipe_config(REPO_ROOT / "training" / "configs" / "small_cpu_ja_en.yaml",
                                ["model.type=dbsa_dep_rel_self", "model.kwargs.parse_layer_encoder=2",
                                 "model.kwargs.parse_layer_decoder=2", f"output_dir={tmp_path}"])
    model = build_model(recipe, tokenizer, tokenizer)
    assert torch.equal(model.get_encoder().self_parser.word_roles, word_roles_of(tokenizer, len(tokenizer)))
    parsed = {"tgt_parser": ENGLISH_PARSER}
    check_feature_columns(recipe, {"features": {**parsed, "features": ["dep_heads", "dep_depths"]}})
    with pytest.raises(ConfigError, match="dep_depths"):
        check_feature_columns(recipe, {"features": {**parsed, "features": ["dep_heads"]}})


def test_the_own_parse_is_scored_on_gold_trees(corpus):
    """A UAS worked by hand: with unscaled scores both encoder parses start uniform (U and u at zero), so every
    word's best head is the root (an all-roots forest) and on the first ten short gold trees, one root each, the score
    is 10 of their 110 words."""
    from hf_syntax.analysis.parse_scores import gold_tree_attachment_score
    from hf_syntax.conllu import read_conllu
    from hf_syntax.parse_head_trees import AttachmentScore

    tokenizer, _, _ = corpus
    model = tiny("dbsa_dep_rel_self", tokenizer, source_pretokenized=True, parse_score_form="unscaled").eval()
    trees = [tree.collapse_multiword_tokens() for tree in read_conllu(treebank("ja"))]
    short = [tree for tree in trees if len(tree) <= 16][:10]
    assert [tree.heads.count(0) for tree in short] == [1] * 10 and sum(len(tree) for tree in short) == 110
    for head in ("self_parse", "dbsa"):
        assert gold_tree_attachment_score(model, tokenizer, short, head=head) == AttachmentScore(correct=10, total=110)
    with pytest.raises(ValueError, match="no encoder parse head for 'self_parse'"):
        gold_tree_attachment_score(tiny("dbsa_dep_rel", tokenizer), tokenizer, short, head="self_parse")


@pytest.mark.slow
def test_the_recipe_trains_and_evaluates_it_by_its_own_tree(tmp_path):
    """Two real recipe steps from the features section: trained on GiNZA's heads and depths, evaluated by generating
    with its own tree; the saved model keeps the word starts of its source vocabulary."""
    import yaml
    from test_training_recipe import tiny_config
    from transformers import AutoTokenizer

    from hf_syntax.recipes.translation.run import train_translation
    from hf_syntax.recipes.translation.schema import load_recipe_config

    raw = tiny_config(tmp_path / "self", max_steps=2, eval_steps=2, save_steps=2)
    raw["data"].update(max_train_pairs=40, max_eval_pairs=4)
    raw["features"] = {"src_parser": JAPANESE_PARSER, "tgt_parser": ENGLISH_PARSER, "pretokenized": True,
                       "features": ["dep_heads", "dep_depths"]}
    raw["model"] = {"type": "dbsa_dep_rel_self",
                    "kwargs": {**raw["model"]["kwargs"], "parse_layer_encoder": 1, "parse_layer_decoder": 1}}
    (tmp_path / "self.yaml").write_text(yaml.safe_dump(raw))
    summary = train_translation(load_recipe_config(tmp_path / "self.yaml"))
    assert summary["optimizer_steps"] == 2 and 0 <= summary["validation_bleu"] <= 100
    model = AutoModelForSeq2SeqLM.from_pretrained(summary["model_dir"])
    tokenizer = AutoTokenizer.from_pretrained(summary["model_dir"])
    assert model.config.self_parse_layers == 2 and model.config.needs_source_features == ()
    assert torch.equal(model.get_encoder().self_parser.word_roles, word_roles_of(tokenizer, len(tokenizer)))
