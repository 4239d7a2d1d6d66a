"""Weight converters between hf_syntax models and other Transformers architectures (``marian.py``: MarianMT)."""
