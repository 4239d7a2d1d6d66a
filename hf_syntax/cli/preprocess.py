"""``hf-syntax preprocess``: parse and align a parallel corpus once, into a saved dataset the recipe reuses."""

from __future__ import annotations

import shutil
from pathlib import Path

from hf_syntax.cli.common import CliError, described, non_negative_int, positive_int
from hf_syntax.columns import DEFAULT_FEATURES
from hf_syntax.folder_layout import new_folder_problem


def command_preprocess(options) -> None:
    """Parse + align a parallel corpus into a ``datasets.save_to_disk`` folder with the feature columns.

    Without ``--tokenizer`` a BPE tokenizer is trained on the training split first and saved in ``<out>/tokenizer``
    (the recipe's ``tokenizer.path``); the folder itself is a ``data.dataset`` for the recipe, which reuses its
    feature columns and tokenizer (recorded in ``hf_syntax_features.json``) instead of parsing again.

    A corpus too big for one machine is parsed in shards: train the tokenizer once (``--tokenizer-only``), then run
    ``--num-shards N --shard-index I --tokenizer <out>/tokenizer`` for I = 0 .. N-1 (a cluster job array), each
    writing ``<out>/shard-0000I-of-0000N``; ``<out>`` is then read as one dataset (``hf_syntax.data.shards``).
    """
    splits = {"train": (options.source, options.target)}
    if options.validation_source or options.validation_target:
        if not (options.validation_source and options.validation_target):
            raise CliError("give both --validation-source and --validation-target (or neither).")
        splits["validation"] = (options.validation_source, options.validation_target)
    if not options.src_parser and not options.tgt_parser and not options.tokenizer_only:
        raise CliError("give --src-parser and/or --tgt-parser (e.g. --src-parser spacy:ja_ginza).")
    out = _shard_output_folder(options)
    if options.tokenizer and Path(options.tokenizer).resolve().is_relative_to(out.resolve()):
        raise CliError(f"--tokenizer {options.tokenizer} lies inside --out {out}, which this run empties first "
                       f"(--overwrite) and removes if it fails: copy the tokenizer out of it, or choose another --out.")
    if not options.tokenizer_only:  # a parser or feature name that cannot work fails now, not after the tokenizer
        from hf_syntax.columns import normalise_features
        from hf_syntax.parsers import get_parser

        try:
            normalise_features(options.features)
        except ValueError as error:
            raise CliError(f"--features: {error}") from None
        for spec in filter(None, (options.src_parser, options.tgt_parser)):
            get_parser(spec)  # loaded once per process: the map below reuses it
    _clear_output_folder(out, options.overwrite)  # only once the run can start: a bad option deletes nothing
    existed = out.exists()
    try:
        _preprocess(options, splits, out)
    except BaseException:
        if out.exists():  # a half-written folder would block the rerun; it was new or empty before this run
            shutil.rmtree(out)
            if existed:
                out.mkdir()
        raise


def _preprocess(options, splits: dict, out: Path) -> None:
    """Tokenizer (unless given), then the parsed and aligned splits saved in ``out``."""
    import datasets

    from hf_syntax.data.corpus import load_parallel_corpus
    from hf_syntax.data.features import parse_and_align, save_features_record
    from hf_syntax.data.shards import shard_of
    from hf_syntax.recipes.config import ConfigError
    from hf_syntax.recipes.translation.tokenization import load_tokenizers, save_tokenizers

    corpus, _ = load_parallel_corpus(splits, skip_empty=options.skip_empty)
    tokenizer_folder = Path(options.tokenizer) if options.tokenizer else Path(options.out) / "tokenizer"
    if not options.tokenizer:
        from hf_syntax.data.tokenizer import train_translation_tokenizers

        source, target = train_translation_tokenizers(
            corpus["train"]["source"], corpus["train"]["target"], joint=not options.separate_vocabularies,
            vocab_size=options.vocab_size, model_max_length=options.max_length,
        )
        save_tokenizers(source, target, tokenizer_folder)
        if options.tokenizer_only:
            print(f"saved the tokenizer to {tokenizer_folder}; preprocess each shard with --tokenizer {tokenizer_folder}")
            return
    try:
        tokenizer, target_tokenizer = load_tokenizers(tokenizer_folder)
    except ConfigError as error:
        raise CliError(f"--tokenizer: {error}") from error
    try:
        map_function = parse_and_align(
            tokenizer, src_parser=options.src_parser, tgt_parser=options.tgt_parser, features=options.features,
            target_tokenizer=target_tokenizer if target_tokenizer is not tokenizer else None,
            pretokenized=options.pretokenized, max_length=options.max_length, truncation=True,
        )
    except ValueError as error:  # e.g. a --max-length below the tokenizer's special tokens: was a traceback
        raise CliError(f"preprocess: {error}") from error
    if options.num_shards > 1:
        corpus = shard_of(corpus, options.shard_index, options.num_shards)
    featurized = datasets.DatasetDict({
        name: split.map(map_function, batched=True, num_proc=options.num_proc, desc=f"Parsing and aligning {name}")
        for name, split in corpus.items()
    })
    featurized.save_to_disk(out)
    save_features_record(out, map_function, tokenizer_folder)
    print(f"saved {', '.join(f'{name}: {len(split)} pairs' for name, split in featurized.items())} to {out} "
          f"(tokenizer: {tokenizer_folder})")


def _shard_output_folder(options) -> Path:
    """Where this run writes: ``--out``, or its shard's folder in it; a sharded run needs the tokenizer given, so
    that every shard's features align to the same subwords."""
    if options.tokenizer_only:
        if options.tokenizer or options.num_shards > 1:
            raise CliError("--tokenizer-only trains the tokenizer the shards share: give it without --tokenizer "
                           "and --num-shards.")
        return Path(options.out)
    if options.shard_index >= options.num_shards:
        raise CliError(f"--shard-index {options.shard_index} is not a shard of --num-shards {options.num_shards}: "
                       f"give 0 .. {options.num_shards - 1}.")
    if options.num_shards == 1:
        return Path(options.out)
    if not options.tokenizer:
        raise CliError(f"--num-shards {options.num_shards} needs --tokenizer, the one every shard aligns to: train it "
                       f"once with --tokenizer-only --out {options.out}, then give --tokenizer {options.out}/tokenizer.")
    from hf_syntax.data.shards import shard_folder_name

    return Path(options.out) / shard_folder_name(options.shard_index, options.num_shards)


PREPROCESS_MARKERS = ("dataset_dict.json", "hf_syntax_features.json")
"""Files by which a folder is recognised as a preprocess output (only such a folder is emptied by --overwrite)."""


def _clear_output_folder(out: Path, overwrite: bool) -> None:
    """Refuse a non-empty ``--out`` (a stale split would survive next to the new ones); ``--overwrite`` empties a
    folder an earlier ``preprocess`` wrote, and nothing else."""
    if problem := new_folder_problem(out, overwrite, "pass --overwrite to replace it"):
        raise CliError(f"--out {problem}")
    if not out.is_dir() or not any(out.iterdir()):
        return
    if not any((out / marker).is_file() for marker in PREPROCESS_MARKERS):
        raise CliError(
            f"--out {out} is not a folder written by hf-syntax preprocess (no {' or '.join(PREPROCESS_MARKERS)}); "
            f"--overwrite only replaces such folders. Choose a new --out."
        )
    shutil.rmtree(out)


def add_commands(commands) -> None:
    """Register ``preprocess``."""
    preprocess = commands.add_parser("preprocess", help="parse + align a parallel corpus into a saved dataset",
                                     description=described(command_preprocess))
    preprocess.add_argument("--source", required=True, help="source side of the training corpus (one line each)")
    preprocess.add_argument("--target", required=True, help="target side, line-aligned with --source")
    preprocess.add_argument("--validation-source", dest="validation_source",
                            help="source side of a validation split (with --validation-target)")
    preprocess.add_argument("--validation-target", dest="validation_target",
                            help="target side of the validation split, line-aligned with --validation-source")
    preprocess.add_argument("--tokenizer",
                            help="saved tokenizer folder (a target_tokenizer/ in it is used); default: train one")
    preprocess.add_argument("--vocab-size", dest="vocab_size", type=positive_int, default=8000,
                            help="size of the BPE vocabulary trained when no --tokenizer is given")
    preprocess.add_argument("--separate-vocabularies", dest="separate_vocabularies", action="store_true",
                            help="train one vocabulary per side instead of a joint one")
    preprocess.add_argument("--src-parser", dest="src_parser", help="e.g. spacy:ja_ginza, spacy:en_core_web_sm")
    preprocess.add_argument("--tgt-parser", dest="tgt_parser", help="parse the target too (labels, decoder_dep_heads)")
    preprocess.add_argument("--features", nargs="+", default=list(DEFAULT_FEATURES), help="source feature columns")
    preprocess.add_argument("--pretokenized", action="store_true", help="lines are space-separated words")
    preprocess.add_argument("--max-length", dest="max_length", type=positive_int, default=128,
                            help="longest sequence in subwords; longer ones are truncated (default: 128)")
    preprocess.add_argument("--num-proc", dest="num_proc", type=positive_int, default=1, help="parallel parser processes")
    preprocess.add_argument("--skip-empty", dest="skip_empty", action="store_true",
                            help="drop (and count) pairs with an empty side instead of stopping")
    preprocess.add_argument("--num-shards", dest="num_shards", type=positive_int, default=1,
                            help="split every split into this many contiguous shards, each parsed by its own run "
                                 "(e.g. a cluster job array) into <out>/shard-I-of-N; needs --tokenizer")
    preprocess.add_argument("--shard-index", dest="shard_index", type=non_negative_int, default=0,
                            help="the shard this run parses, 0 .. --num-shards minus 1 (default: 0)")
    preprocess.add_argument("--tokenizer-only", dest="tokenizer_only", action="store_true",
                            help="only train the tokenizer on the training split into <out>/tokenizer (the first step "
                                 "of a sharded run)")
    preprocess.add_argument("--out", required=True, help="folder for datasets.save_to_disk (new or empty)")
    preprocess.add_argument("--overwrite", action="store_true",
                            help="replace an --out folder an earlier preprocess wrote (its old contents are removed)")
    preprocess.set_defaults(run=command_preprocess)
