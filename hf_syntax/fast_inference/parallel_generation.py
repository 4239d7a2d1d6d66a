"""Generation split over worker threads: each worker decodes its share of the batch with one intra-op thread.

On a few CPU cores, the matrices of a small translation model are too small for intra-op threading to pay: two
threads on one product spend much of the step synchronising. Splitting the batch instead gives every core its own
sentences and no synchronisation (CTranslate2's ``inter_threads`` does the same). PyTorch releases the GIL inside
its operators, so Python threads decode in parallel; only the Python between operators is serialised. Beam search
treats every sentence on its own, so the outputs are those of one call over the whole batch (float32: the same
tokens, up to the rounding of a different batch shape; dynamic int8 picks its activation scales per call, so
there a split may change a token where two candidates score almost alike).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import torch


class ParallelGenerate:
    """A drop-in for a model's bound ``generate`` that runs ``workers`` calls, each on a contiguous part of the
    batch, and returns their outputs concatenated in the input order, a shorter part right-padded with the token
    ``generate`` itself fills finished rows with (so the result is the tensor one call returns).

    While it runs, PyTorch's intra-op thread count is 1 (it is process-wide, so other threads' PyTorch work runs
    single-threaded meanwhile); it is restored afterwards. A call that asks for a dict output
    (``return_dict_in_generate``) or has fewer rows than two runs as one call.
    """

    def __init__(self, generate, workers: int, generation_config):
        self.generate = generate
        self.workers = check_workers(workers)
        self.generation_config = generation_config
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="hf_syntax_generate")

    def __call__(self, input_ids: torch.Tensor | None = None, **kwargs):
        if input_ids is None:
            input_ids = kwargs.pop("inputs", None)
        rows = 0 if input_ids is None else input_ids.shape[0]
        parts = min(self.workers, rows)
        if parts < 2 or kwargs.get("return_dict_in_generate"):
            return self.generate(input_ids, **kwargs)
        bounds = [part.tolist() for part in torch.arange(rows).tensor_split(parts)]

        def shard(indices):
            start, stop = indices[0], indices[-1] + 1
            sliced = {name: value[start:stop] if _is_batch_tensor(value, rows) else value
                      for name, value in kwargs.items()}
            return self.generate(input_ids[start:stop], **sliced)

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            outputs = list(self._pool.map(shard, bounds))
        finally:
            torch.set_num_threads(threads)
        width = max(output.shape[1] for output in outputs)
        fill = self.fill_token(kwargs)
        return torch.cat([torch.nn.functional.pad(output, (0, width - output.shape[1]), value=fill)
                          for output in outputs])

    def fill_token(self, kwargs) -> int:
        """The token transformers' ``generate`` puts after a finished row: the pad id (the end token when there is
        none), except that beam search takes the end token when the pad id is 0."""
        config = kwargs.get("generation_config") or self.generation_config

        def setting(name):
            return kwargs[name] if kwargs.get(name) is not None else getattr(config, name)

        end = setting("eos_token_id")
        end = end[0] if isinstance(end, (list, tuple)) else end
        pad = setting("pad_token_id")
        if pad is None or (pad == 0 and (setting("num_beams") or 1) > 1):
            return end
        return pad


def check_workers(workers) -> int:
    """``workers`` if it is a positive int (the PyTorch path and the CTranslate2 backend share this check)."""
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers={workers!r}: give a positive number of parallel decoders (1 = no split).")
    return workers


def _is_batch_tensor(value, rows: int) -> bool:
    return isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape[0] == rows


__all__ = ["ParallelGenerate", "check_workers"]
