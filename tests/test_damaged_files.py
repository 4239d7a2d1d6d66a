"""A damaged model file is one line naming the file, what is wrong and what to do, on every path that loads it: a
``model.safetensors`` cut off while saving (half of it, or 0 bytes) used to be safetensors' "incomplete metadata"
naming no file, and a ``config.json`` in Latin-1 an ``OSError`` traceback."""

import io
import re
import shutil
import sys

import pytest
import yaml
from transformers import AutoModelForSeq2SeqLM, pipeline

from hub_support import tiny_model, tiny_tokenizer

from hf_syntax import SyntaxTransformerForConditionalGeneration
from hf_syntax.cli import main
from hf_syntax.hub.export import export
from hf_syntax.recipes.runs import CHECKPOINT_FILES
from hf_syntax.saved_files import DamagedFileError
from hf_syntax.serving.endpoint_handler import EndpointHandler

CUTS = {"half": lambda data: data[: len(data) // 2], "empty": lambda data: b""}
SAYS = {"half": "is cut off: ", "empty": "is empty (0 bytes)"}
WHAT_TO_DO = "save or copy the model folder again"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A baseline model (no parser needed) saved as the recipe leaves it, and exported for the Hub."""
    root = tmp_path_factory.mktemp("damaged")
    tokenizer = tiny_tokenizer()
    model = tiny_model("baseline", tokenizer)
    model.save_pretrained(root / "model")
    tokenizer.save_pretrained(root / "model")
    context = {"model_id": "tests/damaged", "results": [{"metric": "loss", "value": 1.0, "split": "train"}]}
    export(model, tokenizer, root / "exported", context)
    return root


def damaged_copy(folder, tmp_path, cut: str, name: str = "model.safetensors", copy_name: str | None = None):
    copy = tmp_path / (copy_name or f"{folder.name}-{cut}")
    shutil.copytree(folder, copy)
    path = copy / name
    path.write_bytes(CUTS[cut](path.read_bytes()))
    return copy, path


def one_error_line(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in err, err
    (line,) = [line for line in err.splitlines() if line.startswith("error:")]
    return line


@pytest.mark.parametrize("cut", CUTS)
def test_a_cut_off_weights_file_is_named_on_every_path(folders, tmp_path, monkeypatch, capsys, cut):
    monkeypatch.setattr(sys, "stdin", io.StringIO("a sentence to translate\n"))
    model_dir, weights = damaged_copy(folders / "model", tmp_path, cut)
    exported, exported_weights = damaged_copy(folders / "exported", tmp_path, cut)
    for argv, path in ((["translate", "--model", str(model_dir)], weights),
                       (["translate", "--model", str(exported)], exported_weights),
                       (["export", str(model_dir), str(tmp_path / "out")], weights),
                       (["plot-attention", "--model", str(model_dir), "--text", "a", "--out", str(tmp_path / "a.png")],
                        weights)):
        line = one_error_line(capsys, argv)
        assert f"{path} {SAYS[cut]}" in line and WHAT_TO_DO in line, line
    for load, folder, path in ((AutoModelForSeq2SeqLM.from_pretrained, model_dir, weights),
                               (SyntaxTransformerForConditionalGeneration.from_pretrained, model_dir, weights),
                               (EndpointHandler, exported, exported_weights)):
        with pytest.raises(OSError, match=re.escape(f"{path} {SAYS[cut]}") + f".*{WHAT_TO_DO}") as raised:
            load(str(folder))
        assert type(raised.value).__name__ == "DamagedFileError"  # the handler's is the folder's own copy of it
    # transformers' own pipeline() turns every load error into a list of tracebacks; the line is among them.
    with pytest.raises(ValueError, match=re.escape(f"DamagedFileError: {exported_weights} {SAYS[cut]}")):
        pipeline(model=str(exported), trust_remote_code=True)


@pytest.mark.parametrize("cut", CUTS)
def test_resume_refuses_a_cut_off_checkpoint_before_any_data_work(folders, tmp_path, capsys, cut):
    from hf_syntax.recipes.translation.run import main as train

    run = tmp_path / "run"
    checkpoint, weights = damaged_copy(folders / "model", tmp_path, cut, copy_name="run/checkpoint-10")
    for name in (*CHECKPOINT_FILES, "rng_state.pth"):
        if not (checkpoint / name).exists():
            (checkpoint / name).write_bytes(b"")
    corpus = tmp_path / "pairs.txt"
    corpus.write_text("a b\nc d\n")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"output_dir": str(run), "data": {
        split: {"source": str(corpus), "target": str(corpus)} for split in ("train", "validation")}}))
    with pytest.raises(SystemExit) as exit_info:
        train(["--config", str(config), "--resume-from-checkpoint", "latest"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in err, err
    assert f"error: checkpoint {weights} {SAYS[cut]}" in err and "resume from an earlier checkpoint-" in err
    assert not (run / "tokenizer").exists()  # refused before the tokenizer or any data work


def test_a_config_json_that_is_not_utf8_is_named_on_every_path(folders, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("a sentence to translate\n"))
    model_dir = tmp_path / "latin1"
    shutil.copytree(folders / "model", model_dir)
    config = model_dir / "config.json"
    config.write_bytes(config.read_bytes().replace(b'"model_type"', '"caf\u00e9": 1,\n  "model_type"'.encode("latin-1")))
    source = tmp_path / "source.txt"
    source.write_text("a sentence to show\n", encoding="utf-8")
    for argv in (["translate", "--model", str(model_dir)], ["export", str(model_dir), str(tmp_path / "out")],
                 ["plot-attention", "--model", str(model_dir), "--text", "a", "--out", str(tmp_path / "a.png")],
                 ["show", "--model", str(model_dir), "--source", str(source)]):
        line = one_error_line(capsys, argv)
        assert f"{config} is not UTF-8 text: byte 0xe9 on line" in line and "Re-encode it as UTF-8" in line, line
    with pytest.raises(DamagedFileError, match=re.escape(f"{config} is not UTF-8 text")):
        SyntaxTransformerForConditionalGeneration.from_pretrained(model_dir)


def test_a_generation_config_that_is_not_json_is_named(folders, tmp_path, monkeypatch, capsys):
    """The model loaded without it, silently: the beam and the output limit fell back to transformers' defaults
    (20 tokens where the model was trained to stop at its own limit)."""
    monkeypatch.setattr(sys, "stdin", io.StringIO("a sentence to translate\n"))
    model_dir = tmp_path / "cut-generation-config"
    shutil.copytree(folders / "exported", model_dir)
    generation_config = model_dir / "generation_config.json"
    generation_config.write_text("{", encoding="utf-8")
    line = one_error_line(capsys, ["translate", "--model", str(model_dir)])
    assert f"{generation_config} is not valid JSON" in line and WHAT_TO_DO in line, line
    with pytest.raises(DamagedFileError, match=re.escape(f"{generation_config} is not valid JSON")):
        AutoModelForSeq2SeqLM.from_pretrained(model_dir, trust_remote_code=True)


def test_a_config_whose_auto_map_is_not_a_mapping_is_named(folders, tmp_path, monkeypatch, capsys):
    """``auto_map: null`` (a hand edit) was a TypeError inside transformers, naming no file. (transformers' own
    AutoModel reads the config before any of the folder's code runs, so only hf_syntax's paths can name it.)"""
    monkeypatch.setattr(sys, "stdin", io.StringIO("a sentence to translate\n"))
    model_dir = tmp_path / "no-auto-map"
    shutil.copytree(folders / "exported", model_dir)
    config = model_dir / "config.json"
    config.write_text(re.sub(r'"auto_map": \{[^}]*\}', '"auto_map": null', config.read_text(encoding="utf-8")),
                      encoding="utf-8")
    assert '"auto_map": null' in config.read_text(encoding="utf-8")
    line = one_error_line(capsys, ["translate", "--model", str(model_dir)])
    assert f"{config}: auto_map is None; it maps the Auto classes" in line, line
    with pytest.raises(DamagedFileError, match=re.escape(f"{config}: auto_map is None")):
        SyntaxTransformerForConditionalGeneration.from_pretrained(model_dir)


def test_weights_that_do_not_fit_the_config_are_one_error_line(folders, tmp_path, monkeypatch, capsys):
    """An edited d_model: transformers' size-mismatch RuntimeError was a traceback."""
    monkeypatch.setattr(sys, "stdin", io.StringIO("a sentence to translate\n"))
    model_dir = tmp_path / "wider-config"
    shutil.copytree(folders / "model", model_dir)
    config = model_dir / "config.json"
    config.write_text(re.sub(r'"d_model": (\d+)', lambda match: f'"d_model": {2 * int(match[1])}',
                             config.read_text(encoding="utf-8")), encoding="utf-8")
    line = one_error_line(capsys, ["translate", "--model", str(model_dir)])
    assert f"{model_dir}: its weights do not fit its config.json" in line, line
