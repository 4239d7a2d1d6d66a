"""Write a Gradio Space folder for an exported model: ``app.py``, ``plotting.py``, ``requirements.txt``, README.

The app (``space_app.py``) and the heat-map code (``hf_syntax.analysis.attention_plots``, which needs only torch and matplotlib) are
copied as they are; only the model id and the example inputs are filled in. The Space loads the model from the Hub
(or ``--model <folder>`` locally) with ``trust_remote_code``, so it never needs hf_syntax installed.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import yaml
from huggingface_hub import ModelCard

from hf_syntax.analysis import attention_plots
from hf_syntax.folder_layout import MODEL_CARD_FILE, REQUIREMENTS_FILE, new_folder_problem
from hf_syntax.hub.cards import PLACEHOLDER_MODEL_ID

APP_TEMPLATE = Path(__file__).with_name("space_app.py")
"""The app, a script for the Space's own folder (it imports the ``plotting.py`` copied beside it), never imported
from here."""
APP_REQUIREMENTS = ("spacy", "matplotlib")
"""What the app imports besides gradio (spaCy for displaCy's tree drawing), on top of the model's requirements."""
MODEL_LINE = 'DEFAULT_MODEL = "your-name/your-model"'
EXAMPLES_LINE = "EXAMPLES: list = []"


class SpaceError(ValueError):
    """The Space folder cannot be written as asked; the message says what to change."""


def write_space(space_dir, model_id: str, model_folder, examples=(), overwrite: bool = False) -> Path:
    """Write the Space for the model ``model_id`` exported in ``model_folder`` (its ``requirements.txt`` is reused,
    its card's readable ``model_name`` heads the Space's README); returns the folder. ``examples``: inputs shown
    under the text box (a pair classifier's as ``[text, text_pair]``, which fill both boxes)."""
    try:
        gradio_version = metadata.version("gradio")
    except metadata.PackageNotFoundError as error:
        raise SpaceError("writing a Space needs gradio (the version it pins): pip install 'hf-syntax[space]'") from error
    space_dir = Path(space_dir)
    if problem := new_folder_problem(space_dir, overwrite):
        raise SpaceError(problem)
    model_requirements = Path(model_folder) / REQUIREMENTS_FILE
    if not model_requirements.is_file():
        raise SpaceError(f"{model_folder} has no requirements.txt; export the model first (hf-syntax export).")
    space_dir.mkdir(parents=True, exist_ok=True)
    app = APP_TEMPLATE.read_text(encoding="utf-8")
    for line in (MODEL_LINE, EXAMPLES_LINE):
        if line not in app:
            raise SpaceError(f"the app template {APP_TEMPLATE} lost its line {line!r}; restore it.")
    app = app.replace(MODEL_LINE, f"DEFAULT_MODEL = {json.dumps(model_id)}")
    app = app.replace(EXAMPLES_LINE, f"EXAMPLES: list = {json.dumps(list(examples), ensure_ascii=False)}")
    (space_dir / "app.py").write_text(app, encoding="utf-8")
    (space_dir / "plotting.py").write_text(Path(attention_plots.__file__).read_text(encoding="utf-8"), encoding="utf-8")
    requirements = model_requirements.read_text(encoding="utf-8").split()
    requirements += [name for name in (f"gradio=={gradio_version}", *APP_REQUIREMENTS) if name not in requirements]
    (space_dir / "requirements.txt").write_text("\n".join(requirements) + "\n", encoding="utf-8")
    on_hub = model_id != PLACEHOLDER_MODEL_ID
    card = Path(model_folder) / MODEL_CARD_FILE
    model_name = ModelCard.load(card).data.model_name if card.is_file() else None
    # the Space is titled with the model's readable name; without a card, with the repo's (or the folder's) name
    front_matter = {"title": model_name or (model_id.split("/")[-1] if on_hub else Path(model_folder).name),
                    "emoji": "🌳", "colorFrom": "green", "colorTo": "blue", "sdk": "gradio",
                    "sdk_version": gradio_version, "app_file": "app.py", "pinned": False, "models": [model_id]}
    if not on_hub:  # no repo named yet: the Space neither lists nor links a model that does not exist
        del front_matter["models"]
    title = model_name or model_id
    (space_dir / "README.md").write_text(
        f"---\n{yaml.safe_dump(front_matter, allow_unicode=True, sort_keys=False)}---\n\n"
        f"# {title}\n\nA demo of {f'[{model_id}](https://huggingface.co/{model_id})' if on_hub else 'this model'}. "
        f"Type a sentence: the demo shows "
        f"the translation, the source tree the model was given (when it reads one), the tree its DBSA parse head "
        f"predicts (when it has one) and the last decoder layer's cross-attention; for a BERT+POS classifier the label scores and the POS tags it used.\n\n"
        f"Run it locally on an exported folder (serves on 127.0.0.1, no outside calls):\n\n"
        f"```bash\npip install -r requirements.txt\npython app.py --model path/to/exported-model\n```\n",
        encoding="utf-8",
    )
    return space_dir


__all__ = ["SpaceError", "write_space"]
