"""``hf-syntax parse``: sentences -> CoNLL-U trees, so that a model can translate them where its parser is not
installed (``hf-syntax translate --source-trees``), e.g. on a GPU machine without spaCy/GiNZA."""

from __future__ import annotations

import sys

from hf_syntax.cli.common import CliError, add_word_arguments, described, positive_int, read_input_lines


def command_parse(options) -> None:
    """Parse every non-empty input line (stdin, or --input) with --parser, or with the parser a model was trained
    with (--model), and write one CoNLL-U tree per line to stdout (sent_id: the line number). Blank lines get no
    tree, as translate leaves them blank. The trees keep the text, spans and sentence splits, so 'hf-syntax
    translate --source-trees' gives the same translations as running the parser there."""
    from hf_syntax.conllu import conllu_block
    from hf_syntax.featurizer import is_blank
    from hf_syntax.hub.model_folder import load_model_config
    from hf_syntax.parsers import get_parser

    spec, pretokenized = options.parser, options.pretokenized
    if options.model is not None:
        config = load_model_config(options.model)
        spec = getattr(config, "source_parser", None)
        if not spec:
            raise CliError(f"{options.model} reads no source tree (its config names no source_parser); parse with "
                           f"--parser SPEC instead, or translate it without trees.")
        if pretokenized is None:
            pretokenized = bool(getattr(config, "source_pretokenized", False))
    numbered = [(number, line.strip()) for number, line in enumerate(read_input_lines(options.input), start=1)
                if not is_blank(line)]  # before the parser loads: unreadable input fails in a second
    parser = get_parser(spec)
    for start in range(0, len(numbered), options.batch_size):
        batch = numbered[start : start + options.batch_size]
        trees = parser.parse_batch([text for _, text in batch], pretokenized=bool(pretokenized))
        sys.stdout.write("".join(conllu_block(tree, sent_id=str(number)) for (number, _), tree in zip(batch, trees)))


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
