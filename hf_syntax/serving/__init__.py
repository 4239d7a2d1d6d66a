"""Serving an exported model: the Inference Endpoint handler and the Gradio Space app.

Both files are templates that ``hf_syntax.hub.export`` copies next to an exported model (``handler.py``) or into a Space
folder (``app.py``). They import nothing from hf_syntax: on an endpoint or a Space only the exported folder's own
code exists, loaded by transformers with ``trust_remote_code=True``. ``browser`` drives a running Space in headless
Chromium (the browser test and ``scripts/space_screenshot.py``).
"""
