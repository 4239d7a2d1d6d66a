"""The PyTorch path for models CTranslate2 cannot express (dependency depths, Graph-Transformer layers; any model).

``optimize_for_cpu`` makes a translation model's ``generate`` decode through ``DecodingCache``, which gives the
same outputs and copies less per step than transformers' default cache (see ``decoding_cache``), and optionally
quantizes it and splits each batch over worker threads (see ``parallel_generation``).

``quantize_int8`` applies PyTorch's dynamic int8 quantization to every ``nn.Linear`` (weights stored as int8 with
one scale per tensor, activations quantized per batch at run time, accumulation in int32). The attention terms,
embeddings, LayerNorms and the relative/depth tables stay float32, so every mechanism keeps working; only the
matrix products that dominate CPU time change precision. torch 2.13 still ships
``torch.ao.quantization.quantize_dynamic`` but marks it deprecated in favour of the separate ``torchao`` package;
its deprecation warnings are silenced here because the replacement is not a dependency of this project.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from .decoding_cache import DecodingCache
from .parallel_generation import ParallelGenerate

TORCH_QUANTIZATIONS = ("int8",)


def quantize_int8(model: nn.Module) -> nn.Module:
    """A copy of ``model`` in eval mode whose linear layers run in dynamic int8 (the original is left as it is)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*torch.ao.quantization is deprecated.*")
        warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*deprecated.*")
        quantized = torch.ao.quantization.quantize_dynamic(model.eval(), {nn.Linear}, dtype=torch.qint8)
    return quantized.eval()


class QuantizationError(ValueError):
    """A quantization the chosen backend does not have; the message names the ones it has."""


def check_torch_quantization(quantization: str | None) -> None:
    """Refuse a quantization the PyTorch path does not have (a CTranslate2 compute type such as int8_float32, asked
    of a PyTorch model folder), naming the ones it has and the backend that has the others."""
    if quantization not in (None, "float32", *TORCH_QUANTIZATIONS):
        raise QuantizationError(
            f"quantization {quantization!r} is not one of the PyTorch backend's (float32, "
            f"{', '.join(TORCH_QUANTIZATIONS)}), which runs a PyTorch model folder: choose one of those, or for a "
            f"CTranslate2 compute type such as int8_float32 decode with CTranslate2 (backend 'ctranslate2', "
            f"--backend ctranslate2).")


def optimize_for_cpu(model: nn.Module, quantization: str | None = None, workers: int = 1) -> nn.Module:
    """``model`` ready for CPU generation: eval mode, ``DecodingCache`` for a translation model of ours, int8
    linear layers with ``quantization="int8"`` (a quantized copy; in float32 the model itself is changed), and with
    ``workers`` > 1 a ``generate`` that splits the batch over that many single-threaded workers (throughput on
    several cores; one sentence still decodes on one thread, so keep 1 for the latency of single requests)."""
    check_torch_quantization(quantization)
    model = quantize_int8(model) if quantization == "int8" else model.eval()
    if hasattr(model, "decoding_cache"):  # our translation models; BERT+POS classifiers do not generate
        model.decoding_cache = DecodingCache
    if workers != 1:
        model.generate = ParallelGenerate(model.generate, workers, model.generation_config)
    return model


__all__ = ["QuantizationError", "TORCH_QUANTIZATIONS", "check_torch_quantization", "optimize_for_cpu",
           "quantize_int8"]
