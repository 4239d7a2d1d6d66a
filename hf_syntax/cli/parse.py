"""``hf-syntax parse``: sentences -> CoNLL-U trees, so that a model can translate them where its parser is not
installed (``hf-syntax translate --source-trees``), e.g. on a GPU machine without spaCy/GiNZA."""

from __future__ import annotations

import sys

from hf_syntax.cli.common import CliError, add_word_arguments, described, positive_int, read_input_lines


def command_parse(options) -> None:
    """Parse every non-empty input line (stdin, or --input) with --parser, or with the parser a model was trained
    with (--model), and write one CoNLL-U tree per line to stdout (sent_id: the line number). Blank lines get no
    tree, as translate leaves them blank. The trees keep the text, spans and sentence splits, so 'hf-syntax
    translate --source-trees' gives the same translations as running the parser there: with --model each line is
    read as translate reads it (hidden characters dropped, raw text split into the words of a model trained on
    words, multiword tokens as their one surface word, as the model reads them)."""
    from hf_syntax.conllu import conllu_block
    from hf_syntax.text_checks import is_blank

    config = _tree_reading_config(options.model) if options.model is not None else None
    numbered = [(number, line.strip()) for number, line in enumerate(read_input_lines(options.input), start=1)
                if not is_blank(line)]  # before the parser loads: unreadable input fails in a second
    parse_lines = _model_reader(options, config) if config is not None else _parser_reader(options)
    for start in range(0, len(numbered), options.batch_size):
        batch = numbered[start : start + options.batch_size]
        trees = parse_lines([text for _, text in batch])
        sys.stdout.write("".join(conllu_block(tree, sent_id=str(number)) for (number, _), tree in zip(batch, trees)))


def _parser_reader(options):
    """Lines -> trees with --parser, as raw text or (--pretokenized) as space-separated words."""
    from hf_syntax.parsers import get_parser

    parser = get_parser(options.parser)
    return lambda lines: parser.parse_batch(lines, pretokenized=bool(options.pretokenized))


def _tree_reading_config(model_dir: str):
    """The config of a model that reads source trees (checked before the input is read)."""
    from hf_syntax.hub.model_folder import load_model_config

    config = load_model_config(model_dir)
    if not getattr(config, "source_parser", None):
        raise CliError(f"{model_dir} reads no source tree (its config names no source_parser); parse with "
                       f"--parser SPEC instead, or translate it without trees.")
    return config


def _model_reader(options, config):
    """Lines -> trees as the model's translation pipeline reads them (``SourceReader``), without its weights."""
    from hf_syntax.featurizer import SyntaxFeaturizer
    from hf_syntax.hub.model_folder import load_folder_tokenizer
    from hf_syntax.source_reading import SourceReader

    tokenizer = load_folder_tokenizer(options.model)
    reader = SourceReader(config, SyntaxFeaturizer(tokenizer, parser=config.source_parser), tokenizer)
    return lambda lines: [reading.tree for reading in reader.read_batch(lines, options.pretokenized)]


def add_commands(commands) -> None:
    """Register ``parse``."""
    parse = commands.add_parser("parse", help="parse sentences into CoNLL-U trees (to translate them elsewhere)",
                                description=described(command_parse))
    which = parse.add_mutually_exclusive_group(required=True)
    which.add_argument("--parser", help="parser spec, e.g. spacy:ja_ginza, spacy:en_core_web_sm, stanza:fr")
    which.add_argument("--model", help="model folder: parse with its config's source_parser, its way "
                                       "(source_pretokenized)")
    parse.add_argument("--input", help="text file, one sentence per line (default: stdin)")
    add_word_arguments(parse, default="with --model, as the model was trained; with --parser, raw text")
    parse.add_argument("--batch-size", dest="batch_size", type=positive_int, default=256,
                       help="lines per parser call (default: 256)")
    parse.set_defaults(run=command_parse)
