"""Loading a saved hf_syntax model folder with its tokenizer: what export, the fast-inference backends and the CLI
start from. Kept apart from publishing so that inference code need not import the exporter."""

from __future__ import annotations

from pathlib import Path


class ModelFolderError(ValueError):
    """The folder is not a saved model; the message says what to give instead."""


def load_model_config(model_dir: Path):
    """The config of a saved model folder, without its weights (which are checked to be there and whole: a folder
    cut off while saving is named here, before any work): an hf_syntax model, or another sequence-to-sequence model
    the translation recipe trains (``model.type: marian``). A CTranslate2 export or an encoder-only model of another
    library (a stock BERT) is refused with what to give instead: transformers failed on them with "Unrecognized
    model" or an AttributeError deep in the export."""
    import json

    from transformers import CONFIG_MAPPING, AutoConfig

    from hf_syntax.folder_layout import CTRANSLATE2_METADATA_FILE, CTRANSLATE2_WEIGHTS_FILE
    from hf_syntax.saved_files import DamagedFileError, check_model_files

    model_dir = Path(model_dir)
    if not model_dir.is_dir():  # a typo'd path was said to have "no config.json"
        raise ModelFolderError(f"{model_dir} is {'a file' if model_dir.exists() else 'not there'}; give the model "
                               f"folder (written by save_pretrained / the recipe).")
    if (model_dir / CTRANSLATE2_WEIGHTS_FILE).is_file():
        metadata = "" if (model_dir / CTRANSLATE2_METADATA_FILE).is_file() else (
            f" (and its {CTRANSLATE2_METADATA_FILE} is missing, which translate needs to read it: export it again "
            f"with hf-syntax export MODEL_DIR OUT --format ctranslate2)")
        raise ModelFolderError(
            f"{model_dir} is a CTranslate2 export ({CTRANSLATE2_WEIGHTS_FILE}){metadata}; it has no PyTorch weights, "
            f"which this reads: give the model folder it was exported from.")
    if (model_dir / CTRANSLATE2_METADATA_FILE).is_file():  # its model.bin gone: it was said to lack safetensors
        raise ModelFolderError(f"{model_dir} is a CTranslate2 export without its {CTRANSLATE2_WEIGHTS_FILE}; export it "
                               f"again with hf-syntax export MODEL_DIR OUT --format ctranslate2.")
    if not (model_dir / "config.json").is_file():
        raise ModelFolderError(
            f"{model_dir} has no config.json; give the folder written by save_pretrained / the recipe.")
    try:
        check_model_files(model_dir)
    except DamagedFileError as error:
        raise ModelFolderError(str(error)) from None
    model_type = json.loads((model_dir / "config.json").read_text(encoding="utf-8")).get("model_type")
    try:
        config = AutoConfig.from_pretrained(model_dir)
    except ValueError as error:
        if model_type in CONFIG_MAPPING:  # a known type whose values do not load (e.g. an option it does not have)
            raise ModelFolderError(f"{model_dir}/config.json does not load: {error}") from None
        config = None  # a model_type transformers does not know, or none
    if not getattr(config, "is_encoder_decoder", False):
        require_hf_syntax_model(config, model_dir, model_type)
    return config


def require_hf_syntax_model(config, model_dir: Path, model_type: str | None = None) -> None:
    """Refuse a model of another library where hf_syntax's own code must run on it (a Hub export carries that
    code; a stock BERT, or a Marian model the recipe trained, has none of it)."""
    from hf_syntax import BertPosConfig, SyntaxTransformerConfig

    if not isinstance(config, (SyntaxTransformerConfig, BertPosConfig)):
        raise ModelFolderError(
            f"{model_dir} holds a model of type {model_type or getattr(config, 'model_type', None)!r} (config.json "
            f"model_type), not an hf_syntax model ({SyntaxTransformerConfig.model_type!r}, its variants, or "
            f"{BertPosConfig.model_type!r}): give a folder that hf_syntax saved (the recipe, save_pretrained of an "
            f"hf_syntax model, hf-syntax export); to start from a stock BERT, fine-tune BERT+POS from it "
            f"(BertPosForSequenceClassification.from_pretrained); another library's translation model is saved and "
            f"shared with its own save_pretrained / push_to_hub.")


def load_folder_tokenizer(model_dir: Path):
    """The tokenizer saved in a model folder; a missing or broken one is a ``ModelFolderError`` saying so (the
    tokenizers library said "Couldn't instantiate the backend tokenizer", naming no folder)."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(model_dir)
    except (OSError, ValueError) as error:
        raise ModelFolderError(
            f"{model_dir}: its tokenizer does not load ({(str(error).splitlines() or [type(error).__name__])[0]}); "
            f"the folder needs the "
            f"tokenizer files (tokenizer.json, tokenizer_config.json) saved with the model: copy them in, or give "
            f"the folder the recipe or export wrote, which holds them.") from None


def load_model_folder(model_dir: Path, hf_syntax_only: bool = False):
    """A saved model (an hf_syntax seq2seq variant or BERT+POS classifier, or another library's translation model
    unless ``hf_syntax_only``: the exports, which carry hf_syntax's code) and its tokenizer."""
    from transformers import AutoModelForSeq2SeqLM, AutoModelForSequenceClassification

    config = load_model_config(model_dir)
    if hf_syntax_only:
        require_hf_syntax_model(config, model_dir)  # before the weights load
    tokenizer = load_folder_tokenizer(model_dir)  # before the weights: a missing tokenizer fails in a second
    auto_class = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForSequenceClassification
    try:
        return auto_class.from_pretrained(model_dir), tokenizer
    except RuntimeError as error:  # transformers' table of the tensors (logged above it) ended in a traceback
        if "ignore_mismatched_sizes" not in str(error):
            raise
        raise ModelFolderError(f"{model_dir}: its weights do not fit its config.json (tensor sizes differ, listed "
                               f"above): the config was edited, or the weights are another model's; save the folder "
                               f"again (or restore its config.json).") from None


def load_target_tokenizer(model_dir: Path):
    """The folder's own target tokenizer (its ``target_tokenizer/``: a model with separate vocabularies), or None."""
    from transformers import AutoTokenizer

    from hf_syntax.folder_layout import TARGET_TOKENIZER_DIR

    target_dir = Path(model_dir) / TARGET_TOKENIZER_DIR
    return AutoTokenizer.from_pretrained(target_dir) if target_dir.is_dir() else None


__all__ = ["ModelFolderError", "load_folder_tokenizer", "load_model_config", "load_model_folder",
           "load_target_tokenizer"]
