"""The files and folders of a saved or exported model folder, named once: the pipelines read the target tokenizer
from it, the fast-inference backends write and recognise CTranslate2 folders by it, export writes the Inference
Endpoint files and the Space demo reads the model's requirements.

Hub-portable (the pipelines import it), and it imports only the standard library: a name here is all any side needs
to agree on.
"""

from pathlib import Path

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


def new_folder_problem(folder, overwrite: bool = False, overwrite_hint: str = "pass overwrite=True") -> str | None:
    """Why ``folder`` cannot receive a new output folder, or None: a file is there (never replaced, it is no earlier
    output), or a folder with files in it unless ``overwrite``. Said before anything is written, so a refused command
    leaves nothing half made."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        return f"{folder} is a file, not a folder; give the path of a new folder"
    if folder.is_dir() and any(folder.iterdir()) and not overwrite:
        return f"{folder} exists and is not empty; choose a new folder or {overwrite_hint}."
    return None


__all__ = [
    "CTRANSLATE2_METADATA_FILE",
    "CTRANSLATE2_WEIGHTS_FILE",
    "ENDPOINT_HANDLER_FILE",
    "MODEL_CARD_FILE",
    "REQUIREMENTS_FILE",
    "TARGET_TOKENIZER_DIR",
    "new_folder_problem",
]
