"""The end of a translation run: the Hub-ready model folder (as ``hf-syntax export`` writes it), the optional upload,
and the summary printed for a person."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from hf_syntax.modeling_syntax_transformer import SyntaxTransformerPreTrainedModel
from hf_syntax.recipes.translation.schema import DataSection, TranslationRecipeConfig
from hf_syntax.recipes.translation.tokenization import save_tokenizers

logger = logging.getLogger(__name__)


def save_model_folder(model, source_tokenizer, target_tokenizer, config: TranslationRecipeConfig,
                      summary: dict[str, Any], model_dir: Path) -> None:
    """Write the final model folder as ``hf-syntax export`` does: safetensors only, the code, the pipeline, the
    tokenizer(s) and a model card with this run's scores, so the folder the run prints (and ``push_to_hub``
    uploads) loads with ``pipeline("translation", model=folder, trust_remote_code=True)`` anywhere.

    A stock reference model (``model.type: marian``) has no hf_syntax code or card: it is saved with
    ``save_pretrained`` and its tokenizer(s).
    """
    from hf_syntax.hub.cards import PLACEHOLDER_MODEL_ID
    from hf_syntax.hub.descriptions import mechanisms_of
    from hf_syntax.hub.export import export, results_from_summary

    if model_dir.exists():  # a resumed or repeated run replaces its own folder, leaving nothing stale
        shutil.rmtree(model_dir)
    if not isinstance(model, SyntaxTransformerPreTrainedModel):
        model.save_pretrained(model_dir)
        save_tokenizers(source_tokenizer, target_tokenizer, model_dir)
        return
    context = {"model_id": config.hub_model_id or PLACEHOLDER_MODEL_ID, **results_from_summary(summary)}
    mechanisms = mechanisms_of(model.config)
    if len(mechanisms) > 1:  # a custom mix: the card uses the first mechanism's template; say so
        context["variant"] = mechanisms[0]
        logger.warning("the model combines %s; its card describes %s only: edit %s", mechanisms, mechanisms[0],
                       model_dir / "README.md")
    separate = {"target_tokenizer": target_tokenizer} if target_tokenizer is not source_tokenizer else {}
    export(model, source_tokenizer, model_dir, context, **separate)


def describe_training_data(data: DataSection, train_pairs: int) -> str:
    """How many training pairs came from where, for the card (kept in the run's summary, so that exporting the
    model folder later says it too)."""
    origin = (f"the saved dataset `{data.dataset}` (split `{data.train_split}`)" if data.dataset is not None
              else f"`{data.train.source}` / `{data.train.target}`")
    return f"{train_pairs} sentence pairs ({data.source_lang}->{data.target_lang}) from {origin}."


def hub_upload(config: TranslationRecipeConfig, model_dir: Path) -> dict[str, Any]:
    """What ``push_to_hub`` uploads and how: the exported model folder only (never the checkpoints, logs or
    ``training_args.bin`` of the output_dir), under the Trainer's own Hub settings (``training.hub_private_repo``,
    ``hub_token``, ``hub_revision``), which were otherwise accepted and ignored: a private repo was made public."""
    return {"repo_id": config.hub_model_id, "folder_path": str(model_dir),
            "commit_message": f"hf-syntax {config.model.type}: trained model folder",
            "private": config.training.get("hub_private_repo"), "token": config.training.get("hub_token"),
            "revision": config.training.get("hub_revision")}


def push_model_folder(upload: dict[str, Any]) -> None:
    """Create the Hub repo if needed and upload the folder (needs a login: ``hf auth login``)."""
    from huggingface_hub import create_repo, upload_folder

    create_repo(upload["repo_id"], exist_ok=True, private=upload["private"], token=upload["token"])
    upload_folder(**{key: value for key, value in upload.items() if key != "private"})


def print_summary(summary: dict[str, Any]) -> None:
    """Human-readable end of a run: scores, cost, where the model is, a few translations."""
    split = summary["reported_split"]
    label = summary.get("split_names", {}).get(split, split)
    print(f"\n=== {summary['model_type']} {summary['languages']}: {label} BLEU {summary['bleu']:.2f} "
          f"chrF {summary['chrf']:.2f} ({summary['pairs'].get(split, 0)} sentences)")
    print(f"    {summary['optimizer_steps']} optimizer steps, {summary['epochs']:.2f} epochs, "
          f"{summary['train_seconds']:.0f} s training, {summary['seconds']:.0f} s total, "
          f"{summary['parameters'] / 1e6:.2f}M parameters")
    print(f"    skipped empty pairs {summary['empty_pairs_skipped']}, truncated {summary['truncated']}")
    print(f"    Hub-ready model folder: {summary['model_dir']}")
    for example in summary["examples"]:
        print(f"  SRC {example['source']}\n  REF {example['reference']}\n  HYP {example['hypothesis']}\n")
