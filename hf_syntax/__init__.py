"""hf-syntax: syntax-aware Transformer models for Hugging Face Transformers.

Layout: the top-level modules (``hf_syntax/*.py``) are the *Hub-portable* set defined in ``hub/portable.py``; an
exported folder carries them, so they import each other only with single-dot relative imports and import optional
parsers inside ``try`` blocks or functions. Sub-packages never travel to the Hub: ``data``, ``recipes`` and
``metrics`` hold training-time code; ``cli`` the ``hf-syntax`` command; ``hub`` export and model cards;
``serving`` the endpoint handler and Space app templates; ``analysis`` attention plots; ``convert`` the Marian
converter.
"""

from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM
from transformers import AutoModelForSequenceClassification, AutoModelForTokenClassification

from .configuration_bert_pos import BertPosConfig
from .configuration_syntax_transformer import SyntaxTransformerConfig
from .modeling_bert_pos import (
    BertPosForSequenceClassification,
    BertPosForTokenClassification,
    BertPosModel,
    BertPosPreTrainedModel,
)
from .modeling_syntax_transformer import (
    SyntaxTransformerForConditionalGeneration,
    SyntaxTransformerModel,
    SyntaxTransformerPreTrainedModel,
)
from .data.collators import SyntaxClassificationCollator, SyntaxSeq2SeqCollator
from .data.features import parse_and_align
from .featurizer import SyntaxFeaturizer
from .labels import LabelVocab
from .conllu import read_conllu
from .parsers import load_parser
from .trees import WordTree
from .pipelines import PosTextClassificationPipeline, SyntaxTranslationPipeline
from .variants import *  # noqa: F403  (the presets, their models and the named architectures: variants.__all__)
from . import variants

for _config, _model in ((SyntaxTransformerConfig, SyntaxTransformerForConditionalGeneration), *PRESET_CLASSES):
    AutoConfig.register(_config.model_type, _config, exist_ok=True)
    AutoModelForSeq2SeqLM.register(_config, _model, exist_ok=True)
AutoModel.register(SyntaxTransformerConfig, SyntaxTransformerModel, exist_ok=True)
AutoConfig.register(BertPosConfig.model_type, BertPosConfig, exist_ok=True)
AutoModel.register(BertPosConfig, BertPosModel, exist_ok=True)
AutoModelForSequenceClassification.register(BertPosConfig, BertPosForSequenceClassification, exist_ok=True)
AutoModelForTokenClassification.register(BertPosConfig, BertPosForTokenClassification, exist_ok=True)

__all__ = [
    *variants.__all__,
    "BertPosConfig",
    "BertPosForSequenceClassification",
    "BertPosForTokenClassification",
    "BertPosModel",
    "BertPosPreTrainedModel",
    "SyntaxTransformerConfig",
    "SyntaxTransformerForConditionalGeneration",
    "SyntaxTransformerModel",
    "SyntaxTransformerPreTrainedModel",
    "LabelVocab",
    "SyntaxClassificationCollator",
    "SyntaxFeaturizer",
    "SyntaxSeq2SeqCollator",
    "WordTree",
    "load_parser",
    "parse_and_align",
    "read_conllu",
    "PosTextClassificationPipeline",
    "SyntaxTranslationPipeline",
]
