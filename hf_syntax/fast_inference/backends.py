"""One entry point for loading a saved model on CPU, whichever backend runs it.

``load_model(folder)`` gives the model of a saved folder, ready for ``generate``, and its tokenizer:

* ``backend="ctranslate2"``: a folder written by ``export_ctranslate2`` (picked automatically), or a PyTorch model
  folder converted on the fly into a temporary CTranslate2 folder (refused with the reason when CTranslate2 cannot
  express the model);
* ``backend="pytorch"``: the model itself through ``optimize_for_cpu`` (generation through ``DecodingCache``, the
  same outputs; optionally int8 linear layers with ``quantization="int8"``); this is also the backend of BERT+POS
  classifiers.

The pipeline around it (the same preprocessing, featurizing and decoding on either backend) is
``hf_syntax.serving.loading.load_pipeline``'s: the backends know nothing of the pipelines.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..hub.model_folder import ModelFolderError, load_folder_tokenizer

BACKENDS = ("auto", "pytorch", "ctranslate2")


def load_model(model_dir, backend: str = "auto", quantization: str | None = None, workers: int = 1):
    """``(model, tokenizer)`` of ``model_dir`` on ``backend`` ("auto": CTranslate2 for a CTranslate2 export, else
    PyTorch).

    ``quantization``: for CTranslate2 its compute type ("int8", "int8_float32", "float32"; default: what the folder
    was exported with), for PyTorch None or "int8". ``workers``: how many parts each batch is split into, decoded in
    parallel (throughput on several cores; 1 for the latency of single sentences).
    """
    from .ctranslate2_model import CTranslate2Seq2SeqModel, is_ctranslate2_folder

    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} is unknown; choose one of {BACKENDS}.")
    model_dir = Path(model_dir)
    exported = is_ctranslate2_folder(model_dir)
    if exported and backend == "pytorch":  # also what show and plot-attention load: they read the model's attention
        raise ModelFolderError(
            f"{model_dir} is a CTranslate2 export; it has no PyTorch weights, which the PyTorch backend (show, "
            f"plot-attention, backend='pytorch' / --backend pytorch) reads. Give the model folder it was exported "
            f"from, or translate it on CTranslate2 (backend 'auto', the default, or 'ctranslate2').")
    if exported or backend == "ctranslate2":
        temporary = None
        if not exported:
            temporary = tempfile.TemporaryDirectory(prefix="hf_syntax_ct2_")
            _convert_folder(model_dir, Path(temporary.name))
            model_dir = Path(temporary.name)
        tokenizer = load_folder_tokenizer(model_dir)
        model = CTranslate2Seq2SeqModel(model_dir, compute_type=quantization or "default", workers=workers)
        model.temporary_folder = temporary
        return model, tokenizer
    from hf_syntax.hub.model_folder import load_model_folder
    from .torch_path import check_torch_quantization, optimize_for_cpu

    check_torch_quantization(quantization)  # before the weights load
    model, tokenizer = load_model_folder(model_dir)
    return optimize_for_cpu(model, quantization, workers), tokenizer


def _convert_folder(model_dir: Path, out_dir: Path) -> None:
    from hf_syntax.hub.model_folder import load_model_folder, load_target_tokenizer
    from .ctranslate2_export import export_ctranslate2

    model, tokenizer = load_model_folder(model_dir)
    export_ctranslate2(model, tokenizer, out_dir, target_tokenizer=load_target_tokenizer(model_dir), overwrite=True)


__all__ = ["BACKENDS", "load_model"]
