"""The translation recipe's tokenizers: trained on the training pairs (joint or per side) or loaded, saved beside the
run and in every checkpoint so a resume or an export finds both sides."""

from __future__ import annotations

from pathlib import Path

import datasets
from transformers import AutoTokenizer, PreTrainedTokenizerBase, Seq2SeqTrainingArguments, TrainerCallback

from hf_syntax.data.corpus import SOURCE_COLUMN, TARGET_COLUMN
from hf_syntax.data.tokenizer import train_translation_tokenizers
from hf_syntax.folder_layout import TARGET_TOKENIZER_DIR
from hf_syntax.recipes.config import ConfigError
from hf_syntax.recipes.translation.schema import TranslationRecipeConfig


def prepare_tokenizers(
    config: TranslationRecipeConfig, train: datasets.Dataset, args: Seq2SeqTrainingArguments, resume_dir: Path | None,
    dataset_tokenizer: str | None = None,
) -> tuple[PreTrainedTokenizerBase, PreTrainedTokenizerBase]:
    """Load (configured path, the tokenizer a preprocessed dataset was made with, or the checkpoint being resumed)
    or train + save the source/target tokenizers.

    The main process trains and saves first; other processes (``torchrun``) then load the saved files, so
    every rank uses the identical vocabulary.
    """
    section = config.tokenizer
    configured = section.path or dataset_tokenizer
    load_from = Path(configured).expanduser() if configured else resume_dir
    if load_from is None:
        saved = Path(config.output_dir) / "tokenizer"
        with args.main_process_first(desc="training the tokenizer"):
            if args.process_index == 0:
                source, target = train_translation_tokenizers(
                    train[SOURCE_COLUMN],
                    train[TARGET_COLUMN],
                    joint=section.joint,
                    model=section.model,
                    vocab_size=section.vocab_size,
                    min_frequency=section.min_frequency,
                    normalization=section.normalization,
                    model_max_length=config.data.max_source_length,
                )
                save_tokenizers(source, target, saved)
        load_from = saved
    return load_tokenizers(load_from)


def save_tokenizers(source: PreTrainedTokenizerBase, target: PreTrainedTokenizerBase, folder: Path) -> None:
    """Source tokenizer at ``folder``; a separate target tokenizer (per-side vocabularies) in a subfolder."""
    source.save_pretrained(folder)
    if target is not source:
        target.save_pretrained(folder / TARGET_TOKENIZER_DIR)


def load_tokenizers(folder: Path) -> tuple[PreTrainedTokenizerBase, PreTrainedTokenizerBase]:
    if not (folder / "tokenizer_config.json").is_file():
        raise ConfigError(f"no saved tokenizer in {folder} (tokenizer_config.json missing)")
    source = AutoTokenizer.from_pretrained(str(folder))
    target_folder = folder / TARGET_TOKENIZER_DIR
    target = AutoTokenizer.from_pretrained(str(target_folder)) if target_folder.is_dir() else source
    for tokenizer in {id(source): source, id(target): target}.values():
        if tokenizer.pad_token_id is None or tokenizer.eos_token_id is None:
            raise ConfigError(f"the tokenizer in {folder} needs pad and eos tokens for translation training")
    if (source.pad_token_id, source.eos_token_id) != (target.pad_token_id, target.eos_token_id):
        raise ConfigError(f"source and target tokenizers in {folder} disagree on the pad/eos ids")
    return source, target


class SaveTargetTokenizer(TrainerCallback):
    """Per-side vocabularies: put the target tokenizer in every checkpoint, so a resume finds both."""

    def __init__(self, target_tokenizer: PreTrainedTokenizerBase):
        self.target_tokenizer = target_tokenizer

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            self.target_tokenizer.save_pretrained(checkpoint / TARGET_TOKENIZER_DIR)
