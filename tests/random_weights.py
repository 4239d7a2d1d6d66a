"""Random weights for tests that compare outputs: default inits give near-constant outputs, so two models that differ
would still agree. The one helper of the suite; its two draws keep the LayerNorms at or near their identity init
(random LayerNorm gains make the decoder repeat one token)."""

import torch


def spread_weights(model, seed: int = 0, std: float = 0.5, fan_in_gain: float | None = None):
    """Random parameters from a seeded generator; returns the model. Marian's frozen sinusoidal table
    (``embed_positions``) is a parameter too and stays as it is.

    By default every parameter but the LayerNorms is drawn from N(0, std^2) and the LayerNorms stay at identity. With
    ``fan_in_gain``, matrices come from N(0, gain^2 / fan_in) and every vector within 0.1 of its init (LayerNorm gains
    near 1, biases near 0): outputs that still vary from token to token in wider models (the backend comparisons).
    """
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "embed_positions" in name or ("layer_norm" in name and fan_in_gain is None):
                continue
            noise = torch.randn(parameter.shape, generator=generator)
            if fan_in_gain is None:
                parameter.copy_(noise * std)
            elif parameter.dim() >= 2:
                parameter.copy_(noise * fan_in_gain / parameter.shape[-1] ** 0.5)
            else:
                centre = 1.0 if "layer_norm" in name and name.endswith("weight") else 0.0
                parameter.copy_(centre + 0.1 * noise)
    return model
