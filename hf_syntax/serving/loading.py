"""The hf_syntax pipeline of a saved folder on either inference backend: what the CLI, the endpoint handler's
CTranslate2 backend and scripts translate with.

It joins the two sides that know nothing of each other: ``fast_inference`` loads the model on a backend, and
``pipelines`` reads the text around it (parsing and featurizing as the model was trained, then decoding).
"""

from __future__ import annotations


def load_pipeline(model_dir, backend: str = "auto", quantization: str | None = None, workers: int = 1,
                  **pipeline_kwargs):
    """The pipeline of ``model_dir`` on ``backend`` (see ``hf_syntax.fast_inference.load_model`` for ``backend``,
    ``quantization`` and ``workers``); for a translation model a ``SyntaxTranslationPipeline``. ``pipeline_kwargs``
    go to the pipeline (generation options, ``target_tokenizer``)."""
    from hf_syntax.fast_inference import load_model
    from hf_syntax.pipelines import syntax_pipeline

    model, tokenizer = load_model(model_dir, backend, quantization, workers)
    return syntax_pipeline(model, tokenizer, **pipeline_kwargs)


__all__ = ["load_pipeline"]
