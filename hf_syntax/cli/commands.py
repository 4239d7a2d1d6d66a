"""``hf-syntax``: one command line for the whole path, corpus -> features -> model -> scores -> Hub folder.

    hf-syntax preprocess --source train.ja --target train.en --tokenizer runs/x/tokenizer --src-parser spacy:ja_ginza --out data/ja-en
    hf-syntax train --config training/configs/demo_ja_en.yaml
    hf-syntax evaluate --model runs/x/model --source dev.ja --reference dev.en
    hf-syntax translate --model runs/x/model < input.txt > output.txt
    hf-syntax export runs/x/model exported/x --model-id me/x --source-lang ja --target-lang en --space spaces/x
    hf-syntax export runs/x/model exported/x-ct2 --format ctranslate2 --quantization int8
    hf-syntax plot-attention --model runs/x/model --text "..." --out attention.png
    hf-syntax show --model runs/x/model --source dev.ja --max-sentences 3

Every subcommand has ``--help``. Models are used through the same pipelines an exported folder carries, so what the
command line translates is what ``pipeline(model=folder, trust_remote_code=True)`` translates.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hf_syntax.columns import DEFAULT_FEATURES


class CliError(Exception):
    """A user error: printed as ``error: ...`` with exit status 2 instead of a traceback."""


def user_errors() -> tuple[type[Exception], ...]:
    """Errors that come from what the user gave (files, options, parsers, configs), each with a message that says
    what to fix: ``main`` prints them as one ``error:`` line (``--debug`` shows the traceback instead)."""
    from hf_syntax.align import AlignmentError
    from hf_syntax.hub.cards import CardError
    from hf_syntax.data.corpus import CorpusError
    from hf_syntax.hub.export import ExportError
    from hf_syntax.parsers import ParserNotAvailableError
    from hf_syntax.pipelines import EmptyInputError
    from hf_syntax.recipes.config import ConfigError
    from hf_syntax.trees import TreeError

    return (CliError, AlignmentError, CardError, ConfigError, CorpusError, EmptyInputError, ExportError,
            FileNotFoundError, ParserNotAvailableError, TreeError)


def positive_int(text: str) -> int:
    """argparse type for counts and sizes: a beam of 0 or a batch of 0 would fail deep inside generation."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _load_pipeline(model_dir: str, backend: str = "auto", quantization: str | None = None, **generate_kwargs):
    """The hf_syntax pipeline of a saved model folder (trained run, exported folder or CTranslate2 export)."""
    from hf_syntax.hub.export import ExportError
    from hf_syntax.fast_inference import NotExpressibleError, load_pipeline
    from hf_syntax.parsers import ParserNotAvailableError

    try:
        return load_pipeline(model_dir, backend=backend, quantization=quantization, **generate_kwargs)
    except (ExportError, ParserNotAvailableError, NotExpressibleError, ImportError) as error:
        raise CliError(str(error)) from error


def _backend_options(options) -> dict:
    return {"backend": options.backend, "quantization": options.quantization}


def _generation_options(options) -> dict:
    chosen = {"num_beams": options.num_beams, "max_new_tokens": options.max_new_tokens}
    return {key: value for key, value in chosen.items() if value is not None}


def _batches(items: list, size: int):
    for start in range(0, len(items), size):
        yield items[start : start + size]


def translate_lines(pipe, lines: list[str], batch_size: int, progress: bool = True, pretokenized: bool | None = None
                    ) -> list[str]:
    """Translate lines in batches (empty lines stay empty) with a progress bar on stderr."""
    from tqdm.auto import tqdm

    texts = [line.strip() for line in lines]
    todo = [text for text in texts if text]
    translations = []
    with tqdm(total=len(todo), desc="Translating", unit="sent", disable=not progress, file=sys.stderr) as bar:
        for batch in _batches(todo, batch_size):
            results = pipe(batch, batch_size=len(batch), pretokenized=pretokenized)
            translations += [result["translation_text"] for result in results]
            bar.update(len(batch))
    found = iter(translations)
    return [next(found) if text else "" for text in texts]


# ----------------------------------------------------------------------------------------------------- commands
def command_preprocess(options) -> None:
    """Parse + align a parallel corpus into a ``datasets.save_to_disk`` folder with the feature columns.

    Without ``--tokenizer`` a BPE tokenizer is trained on the training split first and saved in ``<out>/tokenizer``
    (the recipe's ``tokenizer.path``); the folder itself is a ``data.dataset`` for the recipe, which reuses its
    feature columns and tokenizer (recorded in ``hf_syntax_features.json``) instead of parsing again.
    """
    import datasets

    from hf_syntax.data.corpus import load_parallel_corpus
    from hf_syntax.data.features import parse_and_align, save_features_record
    from hf_syntax.recipes.config import ConfigError
    from hf_syntax.recipes.translation.tokenization import load_tokenizers, save_tokenizers

    splits = {"train": (options.source, options.target)}
    if options.validation_source or options.validation_target:
        if not (options.validation_source and options.validation_target):
            raise CliError("give both --validation-source and --validation-target (or neither).")
        splits["validation"] = (options.validation_source, options.validation_target)
    if not options.src_parser and not options.tgt_parser:
        raise CliError("give --src-parser and/or --tgt-parser (e.g. --src-parser spacy:ja_ginza).")
    _clear_output_folder(Path(options.out), options.overwrite)
    corpus, _ = load_parallel_corpus(splits, skip_empty=options.skip_empty)
    tokenizer_folder = Path(options.tokenizer) if options.tokenizer else Path(options.out) / "tokenizer"
    if not options.tokenizer:
        from hf_syntax.data.tokenizer import train_translation_tokenizers

        source, target = train_translation_tokenizers(
            corpus["train"]["source"], corpus["train"]["target"], joint=not options.separate_vocabularies,
            vocab_size=options.vocab_size, model_max_length=options.max_length,
        )
        save_tokenizers(source, target, tokenizer_folder)
    try:
        tokenizer, target_tokenizer = load_tokenizers(tokenizer_folder)
    except ConfigError as error:
        raise CliError(f"--tokenizer: {error}") from error
    map_function = parse_and_align(
        tokenizer, src_parser=options.src_parser, tgt_parser=options.tgt_parser, features=options.features,
        target_tokenizer=target_tokenizer if target_tokenizer is not tokenizer else None,
        pretokenized=options.pretokenized, max_length=options.max_length, truncation=True,
    )
    featurized = datasets.DatasetDict({
        name: split.map(map_function, batched=True, num_proc=options.num_proc, desc=f"Parsing and aligning {name}")
        for name, split in corpus.items()
    })
    featurized.save_to_disk(options.out)
    save_features_record(options.out, map_function, tokenizer_folder)
    print(f"saved {', '.join(f'{name}: {len(split)} pairs' for name, split in featurized.items())} to {options.out} "
          f"(tokenizer: {tokenizer_folder})")


PREPROCESS_MARKERS = ("dataset_dict.json", "hf_syntax_features.json")
"""Files by which a folder is recognised as a preprocess output (only such a folder is emptied by --overwrite)."""


def _clear_output_folder(out: Path, overwrite: bool) -> None:
    """Refuse a non-empty ``--out`` (a stale split would survive next to the new ones); ``--overwrite`` empties a
    folder an earlier ``preprocess`` wrote, and nothing else."""
    import shutil

    if not out.exists() or (out.is_dir() and not any(out.iterdir())):
        return
    if not overwrite:
        raise CliError(f"--out {out} exists and is not empty; choose a new folder or pass --overwrite to replace it.")
    if not out.is_dir() or not any((out / marker).is_file() for marker in PREPROCESS_MARKERS):
        raise CliError(
            f"--out {out} is not a folder written by hf-syntax preprocess (no {' or '.join(PREPROCESS_MARKERS)}); "
            f"--overwrite only replaces such folders. Choose a new --out."
        )
    shutil.rmtree(out)


def command_train(options) -> None:
    """Run the recipe the config file is for: GLUE (``training/run_glue_pos.py``) when it names a ``task``,
    translation (``training/train_translation.py``) otherwise."""
    from hf_syntax.recipes.config import read_config_file

    argv = ["--config", options.config]
    for override in options.overrides:
        argv += ["--set", override]
    if "task" in read_config_file(options.config):
        from hf_syntax.recipes.glue.run import main as glue_main

        translation_only = [flag for flag in ("resume_from_checkpoint", "skip_empty", "push_to_hub", "hub_model_id")
                            if getattr(options, flag)]
        if translation_only:
            raise CliError(f"{options.config} is a GLUE config (it names a task); --{translation_only[0]} is an "
                           f"option of the translation recipe only.")
        glue_main(argv + (["--output_dir", options.output_dir] if options.output_dir else []))
        return
    from hf_syntax.recipes.translation.run import main

    for flag in ("output_dir", "resume_from_checkpoint", "hub_model_id"):
        if getattr(options, flag):
            argv += [f"--{flag}", getattr(options, flag)]
    for flag in ("skip_empty", "push_to_hub", "debug"):
        if getattr(options, flag):
            argv.append(f"--{flag}")
    status = main(argv)
    if status:
        raise SystemExit(status)


def command_evaluate(options) -> None:
    """BLEU/chrF of translations against references, and/or the attachment score of a DBSA encoder parse head."""
    if not options.reference and not options.gold_conllu:
        raise CliError("give --source with --reference (BLEU/chrF) and/or --gold-conllu (parse attachment score).")
    scores = {}
    pipe = _load_pipeline(options.model, **_backend_options(options), **_generation_options(options))
    if options.reference:
        if not options.source:
            raise CliError("--reference needs --source (the sentences to translate).")
        from hf_syntax.data.corpus import read_parallel
        from hf_syntax.metrics.translation import score_translations

        columns, _ = read_parallel(options.source, options.reference, max_pairs=options.max_sentences)
        hypotheses = translate_lines(pipe, columns["source"], options.batch_size, pretokenized=options.pretokenized)
        scores.update(score_translations(hypotheses, columns["target"], bleu_tokenize=options.bleu_tokenize,
                                         lowercase=options.lowercase))
        scores["sentences"] = len(hypotheses)
    if options.gold_conllu:
        scores.update(encoder_attachment_score(pipe, options.gold_conllu, options.max_sentences))
    print(json.dumps(scores, indent=2))


def encoder_attachment_score(pipe, conllu_path: str, max_sentences: int | None = None) -> dict:
    """UAS of the encoder parse head on gold trees: the model reads each gold sentence's words and its parse head's
    maximum spanning tree over words is compared with the gold heads (words cut off by truncation are not scored)."""
    import torch
    from tqdm.auto import tqdm

    from hf_syntax.featurizer import SyntaxFeaturizer
    from hf_syntax.parsers import read_conllu
    from hf_syntax.parse_head_trees import AttachmentScore, attachment_score, word_heads_from_parse

    config = pipe.model.config
    if not getattr(config, "parse_layer_encoder", 0):
        raise CliError(f"{config.model_type} has no encoder parse head (parse_layer_encoder = 0); --gold-conllu "
                       f"scores DBSA models only.")
    trees = [tree.collapse_multiword_tokens() for tree in read_conllu(conllu_path)[:max_sentences]]
    featurizer = SyntaxFeaturizer(pipe.tokenizer, features=("dep_depths",), return_word_ids=True,
                                  head_rule=config.subword_head_rule, max_length=config.max_position_embeddings)
    total = AttachmentScore()
    for tree in tqdm(trees, desc="Parsing", unit="sent", file=sys.stderr):
        row = featurizer(trees=tree, return_tensors="pt")
        with torch.no_grad():
            encoded = pipe.model.get_encoder()(input_ids=row["input_ids"], attention_mask=row["attention_mask"])
        predicted = word_heads_from_parse(encoded.parse_log_probs[0], row["word_ids"][0].tolist(),
                                          head_rule=config.subword_head_rule)
        total = total + attachment_score(predicted, list(tree.heads)[: len(predicted)])
    return {"uas": 100 * total.uas, "scored_words": total.total}


def command_translate(options) -> None:
    """stdin -> stdout, one translation per input line, in batches."""
    pipe = _load_pipeline(options.model, **_backend_options(options), **_generation_options(options))
    lines = sys.stdin.read().splitlines()
    for translation in translate_lines(pipe, lines, options.batch_size, progress=not options.quiet,
                                       pretokenized=options.pretokenized):
        print(translation)


def format_tree(tree: dict) -> str:
    """One line per word: its number, the word, its relation and its head (``root`` for a root)."""
    width = max(len(word) for word in tree["words"])
    lines = []
    for index, (word, head, label) in enumerate(zip(tree["words"], tree["heads"], tree["labels"]), start=1):
        arrow = "root" if head == 0 else f"{label or 'dep'} -> {head} {tree['words'][head - 1]}"
        lines.append(f"  {index:>3} {word:<{width}}  {arrow}")
    return "\n".join(lines)


def command_show(options) -> None:
    """Translate a few sentences and print, for each, the source tree the model was given (feature models) and the
    tree its parse head predicts (DBSA): what the model used, next to what it wrote."""
    from hf_syntax.tree_views import predicted_source_tree, source_tree

    pipe = _load_pipeline(options.model, backend="pytorch", **_generation_options(options))
    config = pipe.model.config
    if not getattr(config, "is_encoder_decoder", False):
        raise CliError("show prints translations with their trees; this model is a classifier.")
    stream = open(options.source, encoding="utf-8") if options.source else sys.stdin
    with stream:
        texts = [line.strip() for line in stream if line.strip()][: options.max_sentences]
    if not texts:
        raise CliError("no sentence to show: give --source FILE (or lines on stdin) with at least one non-empty line.")
    for text in texts:
        print(f"source:      {text}")
        given = source_tree(pipe, text, options.pretokenized)
        if given:
            print(f"tree given ({config.source_parser}; the model reads {', '.join(config.needs_source_features)}):")
            print(format_tree(given))
        else:
            print("tree given:  none (this model reads subwords only)")
        predicted = predicted_source_tree(pipe, text, options.pretokenized)
        if predicted:
            print("tree predicted by the encoder's parse head:")
            print(format_tree(predicted))
        print(f"translation: {pipe(text, pretokenized=options.pretokenized)[0]['translation_text']}\n")


def command_export(options) -> None:
    """Write a Hub-ready folder (weights, code, tokenizer, generation config, model card, endpoint handler) and,
    with ``--space DIR``, a Gradio Space folder that demos it; or with ``--format ctranslate2`` a CTranslate2 folder
    for fast CPU inference (tokenizers and parser spec included)."""
    if options.format == "ctranslate2":
        _export_ctranslate2(options)
        return
    if options.quantization:
        raise CliError("--quantization applies to --format ctranslate2 only.")
    from huggingface_hub import ModelCard

    from hf_syntax.hub.export import export

    context = {"model_id": options.model_id or Path(options.out_dir).name, "license": options.license}
    for key in ("source_language", "target_language", "dataset", "training_data", "base_model", "task_name"):
        value = getattr(options, key)
        if value:
            context[key] = value
    if options.widget:
        context["widget"] = options.widget
    out = Path(options.out_dir)
    if out.is_dir() and any(out.iterdir()) and not options.overwrite:  # said here in the flag's command-line name
        raise CliError(f"{out} exists and is not empty; choose a new folder or pass --overwrite.")
    folder = export(options.model_dir, None, options.out_dir, context, overwrite=options.overwrite)
    print(f"exported to {folder}; push it with huggingface_hub.upload_folder(repo_id=..., folder_path='{folder}')")
    if options.space:
        from hf_syntax.serving.space import SpaceError, write_space

        examples = options.widget or [item["text"] for item in ModelCard.load(folder / "README.md").data.widget]
        try:
            space = write_space(options.space, context["model_id"], folder, examples, overwrite=options.overwrite)
        except SpaceError as error:
            raise CliError(str(error)) from error
        print(f"wrote the Space demo to {space}; run it here with: python {space / 'app.py'} --model {folder}")


def _export_ctranslate2(options) -> None:
    from hf_syntax.hub.export import ExportError, load_for_export
    from hf_syntax.fast_inference import NotExpressibleError, export_ctranslate2
    from hf_syntax.pipelines import TARGET_TOKENIZER_DIR

    try:
        model, tokenizer = load_for_export(Path(options.model_dir))
        if not getattr(model.config, "is_encoder_decoder", False):
            raise CliError("--format ctranslate2 exports translation models; this one is a classifier.")
        target_dir = Path(options.model_dir) / TARGET_TOKENIZER_DIR
        target = None
        if target_dir.is_dir():
            from transformers import AutoTokenizer

            target = AutoTokenizer.from_pretrained(target_dir)
        folder = export_ctranslate2(model, tokenizer, options.out_dir, target_tokenizer=target,
                                    quantization=options.quantization, overwrite=options.overwrite)
    except (ExportError, NotExpressibleError, FileExistsError, ImportError) as error:
        raise CliError(str(error)) from error
    print(f"exported a CTranslate2 model to {folder}; translate with `hf-syntax translate --model {folder}`")


def command_plot_attention(options) -> None:
    """Translate one sentence and draw the decoder's cross-attention over the source subwords."""
    from hf_syntax.columns import pad_columns
    from hf_syntax.analysis.attention_plots import plot_translation_attention

    pipe = _load_pipeline(options.model, backend="pytorch")
    if not getattr(pipe.model.config, "is_encoder_decoder", False):
        raise CliError("plot-attention draws a translation model's cross-attention; this model is a classifier.")
    row = pipe.preprocess(options.text, pretokenized=options.pretokenized)["row"]
    inputs = pad_columns([row], pipe.tokenizer.pad_token_id)
    path = plot_translation_attention(pipe.model, pipe.tokenizer, inputs, options.out, layer=options.layer,
                                      title=options.title, **_generation_options(options))
    print(f"wrote {path}")


# ------------------------------------------------------------------------------------------------------ parsing
def _add_generation_arguments(parser) -> None:
    words = parser.add_mutually_exclusive_group()
    words.add_argument("--pretokenized", action="store_true", default=None,
                       help="input lines are space-separated words: parse them as given (default: as the model was "
                            "trained, config.source_pretokenized)")
    words.add_argument("--raw-text", dest="pretokenized", action="store_false", default=None,
                       help="let the parser segment the input even if the model was trained on pre-split words")
    parser.add_argument("--num-beams", dest="num_beams", type=positive_int, help="beam size (default: the model's)")
    parser.add_argument("--max-new-tokens", dest="max_new_tokens", type=positive_int,
                        help="longest translation (default: the model's)")


def _add_backend_arguments(parser) -> None:
    parser.add_argument("--backend", choices=("auto", "pytorch", "ctranslate2"), default="auto",
                        help="auto: CTranslate2 for a CTranslate2 export, PyTorch otherwise; ctranslate2 converts a "
                             "PyTorch folder on the fly (refused with the reason if CTranslate2 cannot express it)")
    parser.add_argument("--quantization", choices=("float32", "int8", "int8_float32"),
                        help="CTranslate2 compute type, or int8 linear layers on the PyTorch backend")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hf-syntax", description="Syntax-aware Transformers: preprocess, train, evaluate, translate, export."
    )
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an error instead of one 'error:' line")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    preprocess = commands.add_parser("preprocess", help="parse + align a parallel corpus into a saved dataset",
                                     description=command_preprocess.__doc__)
    preprocess.add_argument("--source", required=True, help="source side of the training corpus (one line each)")
    preprocess.add_argument("--target", required=True, help="target side, line-aligned with --source")
    preprocess.add_argument("--validation-source", dest="validation_source")
    preprocess.add_argument("--validation-target", dest="validation_target")
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
    preprocess.add_argument("--max-length", dest="max_length", type=positive_int, default=128)
    preprocess.add_argument("--num-proc", dest="num_proc", type=positive_int, default=1, help="parallel parser processes")
    preprocess.add_argument("--skip-empty", dest="skip_empty", action="store_true",
                            help="drop (and count) pairs with an empty side instead of stopping")
    preprocess.add_argument("--out", required=True, help="folder for datasets.save_to_disk (new or empty)")
    preprocess.add_argument("--overwrite", action="store_true",
                            help="replace an --out folder an earlier preprocess wrote (its old contents are removed)")
    preprocess.set_defaults(run=command_preprocess)

    train = commands.add_parser("train", help="train a translation or GLUE model from a config file",
                                description=command_train.__doc__)
    train.add_argument("--config", required=True, help="YAML/JSON recipe config (see training/configs/)")
    train.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                       help="override one config value (repeatable), e.g. --set model.type=dbsa")
    train.add_argument("--output_dir")
    train.add_argument("--resume_from_checkpoint", metavar="FOLDER|latest")
    train.add_argument("--skip_empty", action="store_true")
    train.add_argument("--push_to_hub", action="store_true",
                       help="upload the exported model folder (<output_dir>/model) at the end of the run")
    train.add_argument("--hub_model_id", help="the Hub repo to upload to, e.g. me/dbsa-ja-en")
    train.set_defaults(run=command_train)

    evaluate = commands.add_parser("evaluate", help="BLEU/chrF against references, parse attachment score",
                                   description=command_evaluate.__doc__)
    evaluate.add_argument("--model", required=True, help="model folder (trained run or exported)")
    evaluate.add_argument("--source", help="sentences to translate")
    evaluate.add_argument("--reference", help="reference translations, line-aligned with --source")
    evaluate.add_argument("--gold-conllu", dest="gold_conllu", help="gold source trees (DBSA encoder parse head)")
    evaluate.add_argument("--max-sentences", dest="max_sentences", type=positive_int)
    evaluate.add_argument("--batch-size", dest="batch_size", type=positive_int, default=32)
    evaluate.add_argument("--bleu-tokenize", dest="bleu_tokenize", default="13a")
    evaluate.add_argument("--lowercase", action="store_true")
    _add_generation_arguments(evaluate)
    _add_backend_arguments(evaluate)
    evaluate.set_defaults(run=command_evaluate)

    translate = commands.add_parser("translate", help="translate stdin to stdout, one line each",
                                    description=command_translate.__doc__)
    translate.add_argument("--model", required=True, help="model folder (trained run or exported)")
    translate.add_argument("--batch-size", dest="batch_size", type=positive_int, default=32)
    translate.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_generation_arguments(translate)
    _add_backend_arguments(translate)
    translate.set_defaults(run=command_translate)

    export = commands.add_parser("export", help="write a Hub-ready folder with a model card",
                                 description=command_export.__doc__)
    export.add_argument("model_dir", help="trained model folder (e.g. <output_dir>/model)")
    export.add_argument("out_dir", help="new folder to write")
    export.add_argument("--model-id", dest="model_id", help="Hub repo id shown in the card (default: out_dir name)")
    export.add_argument("--source-lang", dest="source_language")
    export.add_argument("--target-lang", dest="target_language")
    export.add_argument("--dataset", help="training dataset name or Hub id")
    export.add_argument("--training-data", dest="training_data", help="one paragraph on the training data")
    export.add_argument("--base-model", dest="base_model")
    export.add_argument("--task-name", dest="task_name", help="e.g. 'GLUE RTE'")
    export.add_argument("--widget", nargs="+", help="example inputs for the Hub widget (source language)")
    export.add_argument("--license", default="apache-2.0")
    export.add_argument("--space", metavar="DIR",
                        help="also write a Gradio Space folder (app.py, requirements.txt, README) for the model")
    export.add_argument("--overwrite", action="store_true", help="write into a non-empty out_dir (and --space DIR)")
    export.add_argument("--format", choices=("hub", "ctranslate2"), default="hub",
                        help="hub: weights + code + card for the Hub; ctranslate2: a CTranslate2 folder (translation "
                             "models CTranslate2 can express exactly; the error says why when it cannot)")
    export.add_argument("--quantization", choices=("float32", "int8", "int8_float32", "int16"),
                        help="CTranslate2 weight type (--format ctranslate2)")
    export.set_defaults(run=command_export)

    show = commands.add_parser("show", help="translate a few sentences and print the trees the model used",
                               description=command_show.__doc__)
    show.add_argument("--model", required=True, help="model folder (trained run or exported)")
    show.add_argument("--source", help="file of source sentences (default: stdin)")
    show.add_argument("--max-sentences", dest="max_sentences", type=int, default=3)
    _add_generation_arguments(show)
    show.set_defaults(run=command_show)

    plot = commands.add_parser("plot-attention", help="draw the cross-attention of one translation as a PNG",
                               description=command_plot_attention.__doc__)
    plot.add_argument("--model", required=True)
    plot.add_argument("--text", required=True, help="one source sentence")
    plot.add_argument("--out", required=True, help="PNG file to write")
    plot.add_argument("--layer", type=int, default=-1, help="decoder layer (default: the last)")
    plot.add_argument("--title")
    _add_generation_arguments(plot)
    plot.set_defaults(run=command_plot_attention)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    options = parser.parse_args(argv)
    try:
        options.run(options)
    except user_errors() as error:
        if options.debug:
            raise
        parser.exit(2, f"error: {error}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
