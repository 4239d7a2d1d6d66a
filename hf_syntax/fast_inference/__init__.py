"""Fast CPU inference: CTranslate2 export for what it can express exactly, an int8 PyTorch path for the rest.

* ``check_expressible`` (``ctranslate2_spec``): whether CTranslate2 computes a model exactly, or the reason it
  cannot; ``export_ctranslate2`` (``ctranslate2_export``): model -> CTranslate2 folder;
* ``CTranslate2Seq2SeqModel`` (``ctranslate2_model``): such a folder behind ``generate``, for the pipelines;
* ``optimize_for_cpu`` (``torch_path``): generation through ``DecodingCache`` (``decoding_cache``: fewer copies
  per step, same outputs) and optionally dynamic int8 linear layers, for any model;
* ``load_model`` (``backends``): the model of a saved folder on either backend, and its tokenizer (the
  pipeline around it: ``hf_syntax.serving.loading.load_pipeline``).

CTranslate2 is an optional dependency (``pip install 'hf-syntax[ctranslate2]'``); it is imported only when used.
"""

from .backends import BACKENDS, load_model
from .ctranslate2_export import export_ctranslate2
from .ctranslate2_model import CTranslate2Seq2SeqModel, is_ctranslate2_folder
from .ctranslate2_spec import NotExpressibleError, check_expressible, expressibility_problems
from .decoding_cache import DecodingCache
from .torch_path import optimize_for_cpu, quantize_int8

__all__ = [
    "BACKENDS",
    "CTranslate2Seq2SeqModel",
    "DecodingCache",
    "NotExpressibleError",
    "check_expressible",
    "expressibility_problems",
    "export_ctranslate2",
    "is_ctranslate2_folder",
    "load_model",
    "optimize_for_cpu",
    "quantize_int8",
]
