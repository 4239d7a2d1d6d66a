"""What every ``hf-syntax`` subcommand shares: the user-error type, argument types and option groups, and loading
a model folder as a pipeline (the same pipelines an exported folder carries)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


class CliError(Exception):
    """A user error: printed as ``error: ...`` with exit status 2 instead of a traceback."""


def described(command) -> str:
    """A command function's docstring as its ``--help`` shows it: plain text, without reST's double backticks."""
    return command.__doc__.replace("``", "")


def positive_int(text: str) -> int:
    """argparse type for counts and sizes: a beam of 0 or a batch of 0 would fail deep inside generation."""
    return _whole_number(text, minimum=1)


def non_negative_int(text: str) -> int:
    """argparse type for a position counted from 0 (``--shard-index``)."""
    return _whole_number(text, minimum=0)


def _whole_number(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
    return value


def read_input_lines(path: str | None) -> list[str]:
    r"""The lines of a UTF-8 text file, or of stdin without a path, broken at ``\n`` only (``split_lines``: one output
    line per input line). Bytes that are not UTF-8 (a Latin-1 file, say) are a user error naming the line, not a
    traceback and not text silently changed; so is a ``\r`` inside a line (lines ending in ``\r`` alone read as
    one line, and three sentences came back as one translation)."""
    from hf_syntax.data.corpus import CorpusError, check_no_carriage_return, split_lines
    from hf_syntax.saved_files import decode_utf8

    name = path or "stdin"
    if path is None and sys.stdin is None:
        raise CliError("stdin is closed: give the input lines on stdin, e.g. < input.txt")
    if path is None:
        stream = getattr(sys.stdin, "buffer", None)
        # an already decoded stream (a test, an embedding program) is read as text
        text = sys.stdin.read() if stream is None else decode_utf8(stream.read(), name, ENCODING_FIX, CliError)
    elif Path(path).is_dir():
        raise CliError(f"{path} is a folder; give a text file, one sentence per line")
    else:
        with open(path, "rb") as handle:
            text = decode_utf8(handle.read(), name, ENCODING_FIX, CliError)
    lines = split_lines(text)
    try:
        check_no_carriage_return(name, lines)
    except CorpusError as error:
        raise CliError(str(error)) from None
    return lines


ENCODING_FIX = "Convert the input first, e.g. iconv -f latin1 -t utf-8 (name its real encoding)."


def model_pipeline(model_dir: str, backend: str = "auto", quantization: str | None = None, workers: int = 1,
                   quiet: bool = False, **generate_kwargs):
    """The hf_syntax pipeline of a saved model folder (trained run, exported folder or CTranslate2 export);
    ``quiet``: without transformers' progress bar over the weights it loads (turned back on after)."""
    from transformers.utils import logging as transformers_logging

    from hf_syntax.fast_inference import NotExpressibleError
    from hf_syntax.fast_inference.torch_path import QuantizationError
    from hf_syntax.generation_checks import GenerationSettingError
    from hf_syntax.hub.model_folder import ModelFolderError
    from hf_syntax.parsers import ParserNotAvailableError
    from hf_syntax.serving.loading import load_pipeline

    hide_loading_bar = quiet and transformers_logging.is_progress_bar_enabled()
    if hide_loading_bar:
        transformers_logging.disable_progress_bar()
    try:
        return load_pipeline(model_dir, backend=backend, quantization=quantization, workers=workers,
                             **generate_kwargs)
    except (ModelFolderError, ParserNotAvailableError, NotExpressibleError, GenerationSettingError,
            QuantizationError, ImportError) as error:
        raise CliError(str(error)) from error
    finally:
        if hide_loading_bar:
            transformers_logging.enable_progress_bar()


def backend_options(options) -> dict:
    return {"backend": options.backend, "quantization": options.quantization, "workers": options.workers}


def generation_options(options) -> dict:
    chosen = {"num_beams": options.num_beams, "max_new_tokens": options.max_new_tokens}
    return {key: value for key, value in chosen.items() if value is not None}


def add_word_arguments(parser, default: str = "as the model was trained, config.source_pretokenized") -> None:
    """``--pretokenized`` / ``--raw-text`` (``pretokenized``: None when neither is given, which means ``default``)."""
    words = parser.add_mutually_exclusive_group()
    words.add_argument("--pretokenized", action="store_true", default=None,
                       help=f"input lines are space-separated words: parse them as given (default: {default})")
    words.add_argument("--raw-text", dest="pretokenized", action="store_false", default=None,
                       help="let the parser segment the input even if the model was trained on pre-split words")


def add_generation_arguments(parser) -> None:
    add_word_arguments(parser)
    parser.add_argument("--num-beams", dest="num_beams", type=positive_int, help="beam size (default: the model's)")
    parser.add_argument("--max-new-tokens", dest="max_new_tokens", type=positive_int,
                        help="longest translation (default: the model's)")


def add_source_trees_argument(parser) -> None:
    parser.add_argument("--source-trees", dest="source_trees", metavar="CONLLU",
                        help="read the sources' trees from this CoNLL-U file (written by 'hf-syntax parse' with the "
                             "model's parser) instead of running the parser: for a machine without the parser")


def reading_options(options) -> dict:
    """Pipeline options for how sources are read: trees from a CoNLL-U file instead of the model's parser."""
    if options.source_trees is None:
        return {}
    if not Path(options.source_trees).is_file():
        raise CliError(f"--source-trees: no file {options.source_trees}; write one with 'hf-syntax parse'.")
    return {"source_parser": f"conllu:{options.source_trees}"}


def add_backend_arguments(parser) -> None:
    parser.add_argument("--backend", choices=("auto", "pytorch", "ctranslate2"), default="auto",
                        help="auto: CTranslate2 for a CTranslate2 export, PyTorch otherwise; ctranslate2 converts a "
                             "PyTorch folder on the fly (refused with the reason if CTranslate2 cannot express it)")
    parser.add_argument("--quantization", choices=("float32", "int8", "int8_float32"),
                        help="CTranslate2 compute type, or int8 linear layers on the PyTorch backend")
    parser.add_argument("--workers", type=positive_int, default=1,
                        help="split each batch over this many single-threaded decoders running in parallel: more "
                             "sentences/s on several cores (e.g. the number of cores), same translations")
