"""Input embeddings: sinusoidal absolute positions and the syntax-infused source feature embeddings."""

import math

import torch
from torch import nn
from transformers.utils import is_torchdynamo_compiling

from .columns import EMBEDDED_FEATURES


def sinusoidal_positions(positions: torch.Tensor, dim: int, dtype: torch.dtype) -> torch.Tensor:
    """(len(positions), dim) table with sines in the first half and cosines in the second (fairseq and Marian's
    layout, so converted Marian checkpoints see the same inputs). Computed on the fly: any length, no buffer."""
    half = dim // 2 + dim % 2
    frequencies = torch.exp(
        torch.arange(half, device=positions.device, dtype=torch.float32) * (-2 * math.log(10000.0) / dim)
    )
    angles = positions.to(torch.float32)[:, None] * frequencies[None, :]
    table = torch.cat([torch.sin(angles), torch.cos(angles[:, : dim // 2])], dim=-1)
    return table.to(dtype)


class SourceFeatureEmbedding(nn.Module):
    """Syntax-infused source embedding (Sundararaman et al. 2019).

    `concat_sum` (paper): the f-wide embeddings of the enabled features are summed and concatenated to the
    (d-f)-wide word embedding; `concat_each`: one f-wide block per feature; `add`: d-wide feature embeddings added
    to the d-wide word embedding. Subwords inherit their word's POS; case and B/I/E/O tags are per subword.
    """

    def __init__(self, config):
        super().__init__()
        self.combine = config.feature_combine
        width = config.d_model if self.combine == "add" else config.feature_embedding_dim
        self.tables = nn.ModuleDict({
            name: nn.Embedding(getattr(config, EMBEDDED_FEATURES[name].size_field), width, padding_idx=0)
            for name in config.source_features
        })

    def forward(self, word_embeddings: torch.Tensor, features: dict[str, torch.Tensor]) -> torch.Tensor:
        """word_embeddings: (batch, n, d or d-f); features: column name -> (batch, n) ids."""
        embedded = []
        for name, table in self.tables.items():
            column = EMBEDDED_FEATURES[name].name
            ids = features[column]
            if ids.shape != word_embeddings.shape[:2]:
                raise ValueError(
                    f"{column} has shape {tuple(ids.shape)} but the source has "
                    f"{tuple(word_embeddings.shape[:2])}: feature columns must be aligned to the subwords."
                )
            if not is_torchdynamo_compiling() and ids.numel() and (ids.min() < 0 or ids.max() >= table.num_embeddings):
                raise ValueError(
                    f"{column} holds ids outside [0, {table.num_embeddings}); the featurizer's label "
                    "vocabulary does not match this model's config."
                )
            embedded.append(table(ids.long()))  # int16 ids fail the lookup, as in ids_or_embeddings
        if self.combine == "concat_each":
            return torch.cat([word_embeddings, *embedded], dim=-1)
        summed = torch.stack(embedded).sum(0)
        if self.combine == "add":
            return word_embeddings + summed
        return torch.cat([word_embeddings, summed], dim=-1)


__all__ = ["SourceFeatureEmbedding", "sinusoidal_positions"]
