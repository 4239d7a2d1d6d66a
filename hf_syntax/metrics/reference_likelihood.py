"""Teacher-forced cross-entropy of reference translations: how much probability a translation model gives the
references, per target token, with no label smoothing and nothing generated.

Why beside BLEU: a study compares models on a 500-line dev set, where one run's corpus BLEU moves by a point or more
between adjacent checkpoints. The references' log-likelihood averages over every target token of the same sentences
(5,300 on that set) and involves no search: over five adjacent checkpoints of two models, their BLEU difference swung
from -0.73 to +2.63 while their cross-entropy difference stayed between -0.041 and -0.053
(benchmarks/results/enja_plateau/checkpoint_cross_entropy.json). It is the quantity the models are trained on
(without the smoothing), so it says which model fits held-out translations better, not which translates better:
studies report both.

The sources are read exactly as the translation pipeline reads them (parsed on the fly where the model needs
features; a self-parsing model reads its own tree), so the score is that of the model a user would run.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from hf_syntax.columns import IGNORE_INDEX, pad_columns
from hf_syntax.recipes.translation.data import encode_with_length_policy
from hf_syntax.source_reading import featurizer_max_length


def reference_cross_entropy(pipe, sources: list[str], references: list[str], *, batch_size: int = 32,
                            pretokenized: bool | None = None) -> dict[str, float | int]:
    """``{"cross_entropy", "perplexity", "tokens", "sentences", "references_cut"}`` of ``references`` given
    ``sources`` under the model of a ``SyntaxTranslationPipeline``: the mean over all reference tokens (their
    closing ``</s>`` included, as in training) of -log p(token | source, reference prefix), in nats.

    A reference longer than the model's positions is cut to them keeping ``</s>`` (counted in ``references_cut``),
    as the recipe cuts a long training target.
    """
    if len(sources) != len(references):
        raise ValueError(f"{len(sources)} sources but {len(references)} references: give one reference per source, "
                         f"line-aligned.")
    if not sources:
        raise ValueError("no sentences to score: give at least one source and its reference.")
    model = pipe.model
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "prepare_decoder_input_ids_from_labels"):
        raise ValueError(f"the reference cross-entropy needs the PyTorch seq2seq model; this pipeline runs "
                         f"{type(model).__name__}. Score the PyTorch model folder (--backend pytorch).")
    empty = [index + 1 for index, reference in enumerate(references) if not reference.strip()]
    if empty:
        raise ValueError(f"reference line {empty[0]} is empty ({len(empty)} empty in all): every source needs the "
                         f"translation to score; drop the pair or fill it in.")
    readings = pipe.reader.read_batch(list(sources), pretokenized)
    limit = featurizer_max_length(pipe.target_tokenizer, model.config)
    was_training = model.training
    model.eval()
    total, tokens, cut = 0.0, 0, 0
    try:
        for start in range(0, len(readings), batch_size):
            rows = [pipe.encode(reading) for reading in readings[start:start + batch_size]]
            batch = {key: value.to(model.device)
                     for key, value in pad_columns(rows, pipe.tokenizer.pad_token_id, padding_side="right").items()}
            labels, batch_cut = _reference_labels(pipe.target_tokenizer, references[start:start + batch_size], limit)
            labels = labels.to(model.device)
            with torch.no_grad():
                logits = model(**batch, decoder_input_ids=model.prepare_decoder_input_ids_from_labels(labels)).logits
            total += float(F.cross_entropy(logits.float().transpose(1, 2), labels, ignore_index=IGNORE_INDEX,
                                           reduction="sum"))
            tokens += int((labels != IGNORE_INDEX).sum())
            cut += batch_cut
    finally:
        model.train(was_training)
    return {"cross_entropy": total / tokens, "perplexity": math.exp(total / tokens), "tokens": tokens,
            "sentences": len(sources), "references_cut": cut}


def _reference_labels(tokenizer, references: list[str], limit: int) -> tuple[torch.Tensor, int]:
    """The references as padded label ids, encoded and cut as the recipe encodes its training targets (ending in
    ``</s>``, ``IGNORE_INDEX`` after it), and how many were cut."""
    encoded, cut = encode_with_length_policy(tokenizer, references, limit, "truncate", "target")
    width = max(len(ids) for ids in encoded)
    return torch.tensor([ids + [IGNORE_INDEX] * (width - len(ids)) for ids in encoded]), sum(cut)
