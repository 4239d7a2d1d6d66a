"""``hf-syntax evaluate`` and ``hf-syntax translate``: a model folder's translations, scored or written out."""

from __future__ import annotations

import itertools
import json
import sys

from hf_syntax.cli.common import (
    CliError,
    add_backend_arguments,
    add_generation_arguments,
    add_source_trees_argument,
    backend_options,
    described,
    generation_options,
    model_pipeline,
    positive_int,
    read_input_lines,
    reading_options,
)
from hf_syntax.metrics.bleu_tokenizers import BLEU_TOKENIZERS, check_bleu_tokenizer


def _batches(items: list, size: int):
    for start in range(0, len(items), size):
        yield items[start : start + size]


def translate_lines(pipe, lines: list[str], batch_size: int, progress: bool = True, pretokenized: bool | None = None,
                    where: str = "input", line_numbers: list[int] | None = None) -> list[str]:
    """Translate lines in batches (empty lines stay empty: also those of only zero-width characters) with a progress
    bar on stderr. Every line is read (segmented, parsed) before any is translated, so a line the model cannot read
    is named at once (as ``{where} line N``; ``line_numbers``: each line's number in its file, when some lines of
    the file were left out), not after the lines before it were translated and lost."""
    from tqdm.auto import tqdm

    from hf_syntax.text_checks import is_blank

    texts = ["" if is_blank(line) else line.strip() for line in lines]
    numbered = [(number, text) for number, text in zip(line_numbers or range(1, len(texts) + 1), texts) if text]
    readings = []
    for batch in _batches(numbered, batch_size):
        readings += read_numbered_lines(pipe, batch, pretokenized, where)
    translations = []
    with tqdm(total=len(readings), desc="Translating", unit="sent", disable=not progress, file=sys.stderr) as bar:
        for batch in _batches(readings, batch_size):
            results = pipe(batch, batch_size=len(batch), pretokenized=pretokenized)
            translations += [result["translation_text"] for result in results]
            bar.update(len(batch))
    found = iter(translations)
    return [next(found) if text else "" for text in texts]


def read_numbered_lines(pipe, batch: list[tuple[int, str]], pretokenized: bool | None, where: str) -> list:
    """The pipeline's readings of ``(line number, text)`` pairs, read together (one parser call); a text it cannot
    read (too long for the parser, not alignable, ...) is a user error naming its line of ``where``."""
    try:
        return pipe.reader.read_batch([text for _, text in batch], pretokenized)
    except ValueError:
        for number, text in batch:  # which line: read one by one
            try:
                pipe.reader.read_batch([text], pretokenized)
            except ValueError as error:
                raise CliError(f"{where} line {number}: {str(error).rstrip('.')}. Nothing was translated: split or "
                               f"remove that line and run again.") from error
        raise


def command_evaluate(options) -> None:
    """BLEU/chrF of translations against references (and/or the references' cross-entropy under the model), and/or
    the attachment score of a DBSA encoder parse head."""
    if not options.reference and not options.gold_conllu:
        raise CliError("give --source with --reference (BLEU/chrF) and/or --gold-conllu (parse attachment score).")
    if bool(options.source) != bool(options.reference):
        given, missing = ("--reference", "--source") if options.reference else ("--source", "--reference")
        raise CliError(f"{given} needs {missing}: the sentences to translate and their reference translations, "
                       f"line by line.")
    # every input is read before the model loads: a file that cannot be read fails in a second, not after the load
    # (or after translating, for a malformed --gold-conllu)
    if options.reference:
        from hf_syntax.data.corpus import read_parallel

        columns, read = read_parallel(options.source, options.reference, skip_empty=options.skip_empty,
                                      max_pairs=options.max_sentences)
    gold_trees = read_gold_trees(options.gold_conllu, options.max_sentences) if options.gold_conllu else None
    if options.reference and "bleu" in options.metrics:
        try:
            check_bleu_tokenizer(options.bleu_tokenize)
        except ValueError as error:
            raise CliError(f"--bleu-tokenize {error}") from None
    pipe = model_pipeline(options.model, **backend_options(options), **generation_options(options),
                          **reading_options(options))
    scores = {}
    if options.reference:
        if read.empty_pairs_skipped:
            scores["empty_pairs_skipped"] = read.empty_pairs_skipped
        if "bleu" in options.metrics:
            skipped = set(read.skipped_line_numbers)  # --skip-empty: name lines by their number in the file
            kept = (number for number in itertools.count(1) if number not in skipped)
            line_numbers = list(itertools.islice(kept, len(columns["source"])))
            scores.update(translation_scores(pipe, columns, options, line_numbers))
        if "cross-entropy" in options.metrics:
            from hf_syntax.metrics.reference_likelihood import reference_cross_entropy

            try:
                scores.update(reference_cross_entropy(pipe, columns["source"], columns["target"],
                                                      batch_size=options.batch_size,
                                                      pretokenized=options.pretokenized))
            except ValueError as error:
                raise CliError(f"--metrics cross-entropy: {error}") from None
        scores["sentences"] = len(columns["source"])
    if gold_trees is not None:
        scores.update(encoder_attachment_score(pipe, gold_trees))
    print(json.dumps(scores, indent=2))


def translation_scores(pipe, columns: dict[str, list[str]], options, line_numbers: list[int]) -> dict[str, float]:
    """BLEU and chrF of the model's translations of ``columns["source"]`` (at ``line_numbers`` of ``--source``)
    against ``columns["target"]``."""
    from hf_syntax.metrics.translation import score_translations

    hypotheses = translate_lines(pipe, columns["source"], options.batch_size, pretokenized=options.pretokenized,
                                 where=f"--source {options.source}", line_numbers=line_numbers)
    pretokenized = options.pretokenized
    if pretokenized is None:
        pretokenized = bool(getattr(pipe.model.config, "source_pretokenized", False))
    return score_translations(hypotheses, columns["target"], bleu_tokenize=options.bleu_tokenize,
                              lowercase=options.lowercase, pretokenized=pretokenized)


def read_gold_trees(conllu_path: str, max_sentences: int | None = None) -> list:
    """The first ``max_sentences`` trees of a CoNLL-U file, multiword tokens collapsed to words (an empty file is an
    error: it would score 0 UAS over no words)."""
    from hf_syntax.conllu import read_conllu

    trees = read_conllu(conllu_path)[:max_sentences]
    if not trees:
        raise CliError(f"--gold-conllu {conllu_path} holds no sentence; give the treebank's CoNLL-U file.")
    return [tree.collapse_multiword_tokens() for tree in trees]


def encoder_attachment_score(pipe, trees: list) -> dict:
    """UAS of the encoder parse head on gold trees."""
    from functools import partial

    from tqdm.auto import tqdm

    from hf_syntax.analysis.parse_scores import gold_tree_attachment_score

    try:
        total = gold_tree_attachment_score(pipe.model, pipe.tokenizer, trees,
                                           progress=partial(tqdm, desc="Parsing", unit="sent", file=sys.stderr))
    except ValueError as error:
        raise CliError(str(error)) from None
    return {"uas": 100 * total.uas, "scored_words": total.total}


def command_translate(options) -> None:
    """stdin -> stdout, one translation per input line, in batches."""
    lines = read_input_lines(None)  # before the model loads: unreadable input fails in a second, not after the load
    pipe = model_pipeline(options.model, **backend_options(options), **generation_options(options),
                          **reading_options(options), quiet=options.quiet)
    for translation in translate_lines(pipe, lines, options.batch_size, progress=not options.quiet,
                                       pretokenized=options.pretokenized):
        print(translation)


def add_commands(commands) -> None:
    """Register ``evaluate`` and ``translate``."""
    evaluate = commands.add_parser("evaluate",
                                   help="BLEU/chrF or cross-entropy against references, parse attachment score",
                                   description=described(command_evaluate))
    evaluate.add_argument("--model", required=True, help="model folder (trained run or exported)")
    evaluate.add_argument("--source", help="sentences to translate")
    evaluate.add_argument("--reference", help="reference translations, line-aligned with --source")
    evaluate.add_argument("--metrics", nargs="+", choices=("bleu", "cross-entropy"), default=["bleu"],
                          help="what --reference is scored with: bleu (BLEU and chrF of the translations; the "
                               "default) and/or cross-entropy (the references' teacher-forced cross-entropy per "
                               "token in nats, no label smoothing and nothing generated: every reference token "
                               "counts and no search is involved, which suits comparing models on a small dev set)")
    evaluate.add_argument("--gold-conllu", dest="gold_conllu", help="gold source trees (DBSA encoder parse head)")
    evaluate.add_argument("--max-sentences", dest="max_sentences", type=positive_int,
                          help="score only the first N sentences (pairs, or trees of --gold-conllu); default: all")
    evaluate.add_argument("--skip-empty", dest="skip_empty", action="store_true",
                          help="drop pairs with an empty side instead of stopping; the scores say how many "
                               "(empty_pairs_skipped)")
    evaluate.add_argument("--batch-size", dest="batch_size", type=positive_int, default=32,
                          help="sentences translated together (default: 32)")
    evaluate.add_argument("--bleu-tokenize", dest="bleu_tokenize", default="13a", choices=BLEU_TOKENIZERS,
                          help="sacreBLEU's tokenizer for BLEU: 13a (default, WMT's), intl, zh (Chinese), ja-mecab "
                               "or ko-mecab (need MeCab installed), char, none (texts already tokenized)")
    evaluate.add_argument("--lowercase", action="store_true",
                          help="case-insensitive BLEU and chrF (both sides lower-cased)")
    add_generation_arguments(evaluate)
    add_source_trees_argument(evaluate)
    add_backend_arguments(evaluate)
    evaluate.set_defaults(run=command_evaluate)

    translate = commands.add_parser("translate", help="translate stdin to stdout, one line each",
                                    description=described(command_translate))
    translate.add_argument("--model", required=True, help="model folder (trained run or exported)")
    translate.add_argument("--batch-size", dest="batch_size", type=positive_int, default=32,
                           help="sentences translated together (default: 32)")
    translate.add_argument("--quiet", action="store_true",
                           help="no progress bars on stderr (neither the translation's nor the model load's)")
    add_generation_arguments(translate)
    add_source_trees_argument(translate)
    add_backend_arguments(translate)
    translate.set_defaults(run=command_translate)
