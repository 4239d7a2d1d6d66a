"""The files and folders of a saved or exported model folder, named once: the pipelines read the target tokenizer
from it, the fast-inference backends write and recognise CTranslate2 folders by it, export writes the Inference
Endpoint files and the Space demo reads the model's requirements.

Hub-portable (the pipelines import it), and it imports nothing: a name here is all any side needs to agree on.
"""

TARGET_TOKENIZER_DIR = "target_tokenizer"
"""Subfolder holding the target-side tokenizer of a model trained with separate vocabularies."""
MODEL_CARD_FILE = "README.md"
ENDPOINT_HANDLER_FILE = "handler.py"
"""The Inference Endpoint's entry point (a copy of ``hf_syntax/serving/endpoint_handler.py``)."""
REQUIREMENTS_FILE = "requirements.txt"
"""What an endpoint or a Space installs before loading the model: libraries and the parser packages it runs."""
CTRANSLATE2_WEIGHTS_FILE = "model.bin"
CTRANSLATE2_METADATA_FILE = "hf_syntax_ctranslate2.json"
"""Our config beside CTranslate2's (parser spec, source streams, quantization): what marks a CTranslate2 export."""

__all__ = [
    "CTRANSLATE2_METADATA_FILE",
    "CTRANSLATE2_WEIGHTS_FILE",
    "ENDPOINT_HANDLER_FILE",
    "MODEL_CARD_FILE",
    "REQUIREMENTS_FILE",
    "TARGET_TOKENIZER_DIR",
]
