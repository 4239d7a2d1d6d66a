"""Serving an exported model: the Inference Endpoint handler, the Gradio Space app and the pipeline of a saved folder.

``endpoint_handler.py`` and ``space_app.py`` are templates that ``hf_syntax.hub.export`` copies next to an exported
model (``handler.py``) or into a Space folder (``app.py``, written by ``space.py``). They import nothing from hf_syntax:
on an endpoint or a Space only the exported folder's own code exists, loaded by transformers with
``trust_remote_code=True``. ``loading.load_pipeline`` gives the pipeline of a saved folder on either inference
backend (the CLI's, and the handler's CTranslate2 backend where hf_syntax is installed). ``browser`` drives a running
Space in headless Chromium (the browser test and ``scripts/space_screenshot.py``).
"""
