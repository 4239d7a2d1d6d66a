"""Random weights for tests that compare outputs: default inits give near-constant outputs, so two models that differ
would still agree. LayerNorms keep their identity init (random LayerNorm gains make the decoder repeat one token)."""

import torch


def spread_weights(model, seed: int = 0, std: float = 0.5):
    """Every parameter but the LayerNorms drawn from N(0, std^2); returns the model."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "layer_norm" not in name:
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * std)
    return model
