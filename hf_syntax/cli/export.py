"""``hf-syntax export``: a Hub-ready folder (with an optional Space demo) or a CTranslate2 folder."""

from __future__ import annotations

from pathlib import Path

from hf_syntax.cli.common import CliError, described


def command_export(options) -> None:
    """Write a Hub-ready folder (weights, code, tokenizer, generation config, model card, endpoint handler) and,
    with ``--space DIR``, a Gradio Space folder that demos it; or with ``--format ctranslate2`` a CTranslate2 folder
    for fast CPU inference (tokenizers and parser spec included)."""
    from hf_syntax.folder_layout import new_folder_problem

    model_dir = Path(options.model_dir).resolve()
    for folder in (options.out_dir, options.space):  # both, before anything is written; in the flag's own name
        if folder and (problem := new_folder_problem(folder, options.overwrite, "pass --overwrite")):
            raise CliError(problem)
        if folder and Path(folder).resolve() != model_dir and Path(folder).resolve().is_relative_to(model_dir):
            raise CliError(f"{folder} is inside the model folder {options.model_dir}: the model folder would then "
                           f"carry a second copy of its weights (an upload of it too); write the export elsewhere.")
    if options.format == "ctranslate2":
        if options.space:
            raise CliError("--space demos a Hub folder (--format hub); a CTranslate2 folder is translated with "
                           "hf-syntax translate --model FOLDER")
        card_flags = [flag for flag, dest in CARD_FLAGS.items() if getattr(options, dest)]
        if card_flags:  # they were ignored: a CTranslate2 folder has no model card
            raise CliError(f"{', '.join(card_flags)} fill the model card of a Hub folder (--format hub); a CTranslate2 "
                           f"folder has none: drop them, or export --format hub.")
        _export_ctranslate2(options)
        return
    if options.quantization:
        raise CliError("--quantization applies to --format ctranslate2 only.")
    from huggingface_hub import ModelCard

    from hf_syntax.hub.cards import PLACEHOLDER_MODEL_ID
    from hf_syntax.hub.export import export

    if options.model_id and not _is_repo_id(options.model_id):
        raise CliError(f"--model-id {options.model_id!r} is not a Hub model id: give NAME/REPO, the repo you will "
                       f"upload the folder to (e.g. me/{options.model_id.strip('/').split('/')[-1] or 'my-model'}).")
    context = {"model_id": options.model_id or PLACEHOLDER_MODEL_ID, "license": options.license}
    for key in [name for name in CARD_FLAGS.values() if name not in ("model_id", "widget")]:
        value = getattr(options, key)
        if value:
            context[key] = value
    if options.widget:
        context["widget"] = _widget_examples(options.widget, options.text_pairs)
    folder = export(options.model_dir, None, options.out_dir, context, overwrite=options.overwrite)
    print(f"exported to {folder}; push it with huggingface_hub.upload_folder(repo_id=..., folder_path='{folder}')")
    if not options.model_id:
        print(f"its card (and Space README) name the model {PLACEHOLDER_MODEL_ID}: export again with --model-id "
              f"NAME/REPO, the Hub repo you upload to, so that the card's usage lines load it")
    if options.space:
        from hf_syntax.serving.space import SpaceError, write_space

        # the card's own examples, so that a pair classifier's examples keep their second text
        examples = [[item["text"], item["text_pair"]] if "text_pair" in item else item["text"]
                    for item in ModelCard.load(folder / "README.md").data.widget]
        try:
            space = write_space(options.space, context["model_id"], folder, examples, overwrite=options.overwrite)
        except SpaceError as error:
            raise CliError(str(error)) from error
        print(f"wrote the Space demo to {space}; run it here with: python {space / 'app.py'} --model {folder}")


def _widget_examples(texts: list[str], text_pairs: bool) -> list:
    """``--widget`` as the card's examples: with ``--text-pairs`` the texts go two by two, text then text_pair
    (each used to become an example of its own, so the widget classified premises alone)."""
    if not text_pairs:
        return texts
    if len(texts) % 2:
        raise CliError(f"--text-pairs --widget takes each example as two texts, its text then its text_pair "
                       f"(--widget 'A man eats.' 'Someone is eating.' ...); got {len(texts)}, an odd number.")
    return [{"text": text, "text_pair": pair} for text, pair in zip(texts[::2], texts[1::2])]


CARD_FLAGS = {"--model-id": "model_id", "--source-lang": "source_language", "--target-lang": "target_language",
              "--dataset": "dataset", "--dataset-config": "dataset_config", "--training-data": "training_data",
              "--base-model": "base_model", "--task-name": "task_name", "--widget": "widget",
              "--text-pairs": "text_pairs", "--card-template": "variant"}
"""The options that fill the model card (flag -> option name); --license has a default, so it is not among them."""


def _is_repo_id(name: str) -> bool:
    """NAME/REPO as the Hub spells a model repo (a bare name only resolves for a few legacy models)."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(name)
    except HFValidationError:
        return False
    return name.count("/") == 1


def _export_ctranslate2(options) -> None:
    from hf_syntax.hub.model_folder import ModelFolderError, load_model_folder, load_target_tokenizer
    from hf_syntax.fast_inference import NotExpressibleError, export_ctranslate2

    try:
        model, tokenizer = load_model_folder(Path(options.model_dir), hf_syntax_only=True)
        if not getattr(model.config, "is_encoder_decoder", False):
            raise CliError("--format ctranslate2 exports translation models; this one is a classifier.")
        folder = export_ctranslate2(model, tokenizer, options.out_dir,
                                    target_tokenizer=load_target_tokenizer(options.model_dir),
                                    quantization=options.quantization, overwrite=options.overwrite)
    except (ModelFolderError, NotExpressibleError, FileExistsError, ImportError) as error:
        raise CliError(str(error)) from error
    print(f"exported a CTranslate2 model to {folder}; translate with `hf-syntax translate --model {folder}`")


def add_commands(commands) -> None:
    """Register ``export``."""
    export = commands.add_parser("export", help="write a Hub-ready folder with a model card",
                                 description=described(command_export))
    export.add_argument("model_dir", help="trained model folder (e.g. <output_dir>/model)")
    export.add_argument("out_dir", help="new folder to write")
    export.add_argument("--model-id", dest="model_id",
                        help="the Hub repo you will upload to, NAME/REPO: the card's usage lines load it (default: "
                             "a placeholder to replace)")
    export.add_argument("--source-lang", dest="source_language", help="language code of the input, e.g. ja")
    export.add_argument("--target-lang", dest="target_language", help="language code of the output, e.g. en")
    export.add_argument("--dataset", help="the Hub dataset id (owner/name) of the evaluation data (it goes into the "
                        "card's datasets and model-index metadata); a local path or other name is only named in the "
                        "text")
    export.add_argument("--dataset-config", dest="dataset_config",
                        help="the dataset's config, e.g. rte for nyu-mll/glue")
    export.add_argument("--training-data", dest="training_data", help="one paragraph on the training data")
    export.add_argument("--base-model", dest="base_model",
                        help="the Hub id of the checkpoint it was fine-tuned from, if any (card metadata)")
    export.add_argument("--task-name", dest="task_name", help="e.g. 'GLUE RTE'")
    export.add_argument("--widget", nargs="+", help="example inputs for the Hub widget (source language); with "
                        "--text-pairs two texts per example, its text then its text_pair")
    export.add_argument("--text-pairs", dest="text_pairs", action="store_true",
                        help="the classifier reads sentence pairs: widget examples are text + text_pair "
                             "(a GLUE recipe run says so itself)")
    export.add_argument("--card-template", dest="variant", metavar="NAME",
                        help="the model card template to fill (model_cards/NAME.md), for a model whose config mixes "
                             "mechanisms no template describes (the error names them); default: read from the config")
    export.add_argument("--license", default="apache-2.0", help="license of the weights in the card (default: "
                        "apache-2.0); check the training data's terms")
    export.add_argument("--space", metavar="DIR",
                        help="also write a Gradio Space folder (app.py, requirements.txt, README) for the model")
    export.add_argument("--overwrite", action="store_true", help="write into a non-empty out_dir (and --space DIR)")
    export.add_argument("--format", choices=("hub", "ctranslate2"), default="hub",
                        help="hub: weights + code + card for the Hub; ctranslate2: a CTranslate2 folder (translation "
                             "models CTranslate2 can express exactly; the error says why when it cannot)")
    export.add_argument("--quantization", choices=("float32", "int8", "int8_float32", "int16"),
                        help="CTranslate2 weight type (--format ctranslate2)")
    export.set_defaults(run=command_export)
