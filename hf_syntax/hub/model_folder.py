"""Loading a saved hf_syntax model folder with its tokenizer: what export, the fast-inference backends and the CLI
start from. Kept apart from publishing so that inference code need not import the exporter."""

from __future__ import annotations

from pathlib import Path


class ModelFolderError(ValueError):
    """The folder is not a saved model; the message says what to give instead."""


def load_model_config(model_dir: Path):
    """The config of a saved hf_syntax model folder, without its weights (which are checked to be whole: a folder
    cut off while saving is named here, before any work)."""
    from transformers import AutoConfig

    from hf_syntax.saved_files import DamagedFileError, check_model_files

    model_dir = Path(model_dir)
    if not (model_dir / "config.json").is_file():
        raise ModelFolderError(
            f"{model_dir} has no config.json; give the folder written by save_pretrained / the recipe.")
    try:
        check_model_files(model_dir)
    except DamagedFileError as error:
        raise ModelFolderError(str(error)) from None
    return AutoConfig.from_pretrained(model_dir)


def load_model_folder(model_dir: Path):
    """A saved hf_syntax model (seq2seq variant or BERT+POS classifier) and its tokenizer."""
    from transformers import AutoModelForSeq2SeqLM, AutoModelForSequenceClassification, AutoTokenizer

    config = load_model_config(model_dir)
    auto_class = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForSequenceClassification
    return auto_class.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir)


def load_target_tokenizer(model_dir: Path):
    """The folder's own target tokenizer (its ``target_tokenizer/``: a model with separate vocabularies), or None."""
    from transformers import AutoTokenizer

    from hf_syntax.folder_layout import TARGET_TOKENIZER_DIR

    target_dir = Path(model_dir) / TARGET_TOKENIZER_DIR
    return AutoTokenizer.from_pretrained(target_dir) if target_dir.is_dir() else None


__all__ = ["ModelFolderError", "load_model_config", "load_model_folder", "load_target_tokenizer"]
