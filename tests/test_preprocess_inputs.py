"""``hf-syntax preprocess`` options it refuses before it removes anything from ``--out`` (no parser needed)."""

import pytest

from hf_syntax.cli import main


@pytest.fixture
def earlier_output(tmp_path):
    """A folder an earlier preprocess wrote (which --overwrite empties), holding its tokenizer, and a tiny corpus."""
    (tmp_path / "out" / "tokenizer").mkdir(parents=True)
    (tmp_path / "out" / "tokenizer" / "tokenizer.json").write_text("{}")
    (tmp_path / "out" / "dataset_dict.json").write_text('{"splits": ["train"]}')
    for name in ("train.en", "train.ja"):
        (tmp_path / name).write_text("a b\n", encoding="utf-8")
    return tmp_path


def preprocess(folder, *options):
    return main(["preprocess", "--source", str(folder / "train.en"), "--target", str(folder / "train.ja"),
                 "--out", str(folder / "out"), "--overwrite", *options])


def test_a_tokenizer_inside_out_is_refused_and_kept(earlier_output, capsys):
    """--overwrite deleted --out, the tokenizer it was told to use with it, and then failed to load that tokenizer."""
    with pytest.raises(SystemExit):
        preprocess(earlier_output, "--tokenizer", str(earlier_output / "out" / "tokenizer"),
                   "--src-parser", "spacy:en_core_web_sm")
    assert "lies inside --out" in capsys.readouterr().err
    assert (earlier_output / "out" / "tokenizer" / "tokenizer.json").is_file()


def test_a_bad_parser_spec_deletes_nothing(earlier_output, capsys):
    with pytest.raises(SystemExit):
        preprocess(earlier_output, "--src-parser", "nosuch:x")
    assert "parser spec 'nosuch:x'" in capsys.readouterr().err
    assert (earlier_output / "out" / "dataset_dict.json").is_file()
