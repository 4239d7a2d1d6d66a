"""A CTranslate2 folder behind the ``generate`` interface, so ``SyntaxTranslationPipeline`` runs it unchanged.

The pipeline keeps doing what it does for a PyTorch model (parse + align when the model needs features, pad,
decode the output ids); only ``generate`` changes: ids become CTranslate2 tokens (with the feature streams joined
by CTranslate2's separator), ``Translator.translate_batch`` decodes, and the hypotheses come back as padded id
tensors that start with the decoder start token, as ``generate``'s do.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from transformers import AutoConfig, GenerationConfig

from ..folder_layout import CTRANSLATE2_METADATA_FILE, CTRANSLATE2_WEIGHTS_FILE
from ..generation_checks import GENERATION_COUNTS, check_generation_count, check_output_limit
from ..hub.model_folder import ModelFolderError
from ..saved_files import check_config_file
from .ctranslate2_export import FEATURE_SEPARATOR
from .ctranslate2_spec import FeatureStream, import_ctranslate2
from .parallel_generation import check_workers

GENERATION_OPTIONS = ("num_beams", "max_length", "max_new_tokens", "min_length", "min_new_tokens", "length_penalty",
                      "repetition_penalty", "no_repeat_ngram_size", "num_return_sequences", "forced_eos_token_id",
                      "early_stopping")
"""``generate`` options the CTranslate2 backend maps onto ``translate_batch``."""
IGNORED_GENERATION_OPTIONS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id", "use_cache",
                              "transformers_version", "_from_model_config")
"""Options with no CTranslate2 counterpart that change nothing here: the special ids are the model's own."""
PATIENCE_FOR_EARLY_STOPPING = {True: 1.0, False: 2.0}
"""``early_stopping`` -> CTranslate2's beam ``patience`` (the search stops once ``num_beams * patience`` hypotheses
are finished). Both searches keep the same running beams and score finished ones alike (log-prob sum / generated
length including the end token); they differ only in when they stop. ``True`` stops at ``num_beams`` finished
hypotheses in both: exact. ``False`` (transformers' default) goes on while its heuristic says the best running beam
could still win, which CTranslate2 cannot express; patience 2 is the closest setting we measured (beam-4 outputs
identical on 500/500 dev sentences of the converged ja->en baseline, 492/500 with patience 1:
benchmarks/results/ctranslate2_agreement/baseline.md). ``"never"`` has no counterpart and is refused."""


GENERATION_CONFIG_FILE = "generation_config.json"
EXPORT_AGAIN = "export the folder again (hf-syntax export MODEL_DIR OUT --format ctranslate2) or copy it whole."


def is_ctranslate2_folder(path) -> bool:
    return (Path(path) / CTRANSLATE2_METADATA_FILE).is_file() and (Path(path) / CTRANSLATE2_WEIGHTS_FILE).is_file()


def _read_vocabulary(folder: Path, names: tuple[str, ...]) -> list[str]:
    for name in names:
        path = folder / f"{name}_vocabulary.json"
        if path.is_file():
            try:
                tokens = json.loads(path.read_text(encoding="utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as error:  # was a bare JSONDecodeError traceback
                raise ModelFolderError(f"{path} cannot be read ({error}); {EXPORT_AGAIN}") from None
            if not isinstance(tokens, list):
                raise ModelFolderError(f"{path} holds a JSON {type(tokens).__name__}, not the token list; "
                                       f"{EXPORT_AGAIN}")
            return tokens
    raise ModelFolderError(f"{folder} has none of {[f'{name}_vocabulary.json' for name in names]}; {EXPORT_AGAIN}")


class CTranslate2Seq2SeqModel:
    """A translation model exported by ``export_ctranslate2``, usable where the pipelines expect a seq2seq model.

    ``compute_type``: CTranslate2's ("default" = the type the folder was quantized to, "int8", "float32", ...).
    ``intra_threads``: CPU threads per translation (default: ``torch.get_num_threads()``, as the PyTorch path,
    shared out among the workers). ``workers``: translations run in parallel (CTranslate2's ``inter_threads``);
    with more than one, each ``generate`` call splits its batch into that many parts, one per worker: throughput on
    several cores, while one sentence still decodes on one worker's threads.
    """

    device = torch.device("cpu")
    temporary_folder = None
    """The ``tempfile.TemporaryDirectory`` of a model converted on the fly; deleted with the model."""

    def __init__(self, folder, compute_type: str = "default", intra_threads: int | None = None, workers: int = 1):
        ctranslate2 = import_ctranslate2()
        folder = Path(folder)
        if not is_ctranslate2_folder(folder):
            raise ValueError(f"{folder} is not a CTranslate2 export (no {CTRANSLATE2_METADATA_FILE} and "
                             f"{CTRANSLATE2_WEIGHTS_FILE}); write one with `hf-syntax export MODEL_DIR OUT --format "
                             f"ctranslate2`.")
        import hf_syntax  # noqa: F401  (registers our config classes with AutoConfig)

        try:
            metadata = json.loads((folder / CTRANSLATE2_METADATA_FILE).read_text(encoding="utf-8"))
            model_config = dict(metadata["model_config"])
            self.config = AutoConfig.for_model(model_config.pop("model_type"), **model_config)
            self.quantization = metadata["quantization"]
            self.streams = [FeatureStream(**stream) for stream in metadata["feature_streams"]]
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            raise ModelFolderError(f"{folder / CTRANSLATE2_METADATA_FILE} cannot be read ({type(error).__name__}: "
                                   f"{error}); {EXPORT_AGAIN}") from None
        self.config._name_or_path = self.name_or_path = str(folder)
        if not (folder / GENERATION_CONFIG_FILE).is_file():
            raise ModelFolderError(f"{folder} has no {GENERATION_CONFIG_FILE} (the model's search settings); "
                                   f"{EXPORT_AGAIN}")
        check_config_file(folder / GENERATION_CONFIG_FILE)  # a damaged one was an OSError traceback
        self.generation_config = GenerationConfig.from_pretrained(folder)
        shared = ("shared",)
        self.source_tokens = _read_vocabulary(folder, shared + (("source_1",) if self.streams else ("source",)))
        self.target_tokens = _read_vocabulary(folder, shared + ("target",))
        self.target_ids = {token: index for index, token in enumerate(self.target_tokens)}
        self.workers = check_workers(workers)
        threads = intra_threads if intra_threads is not None else max(1, torch.get_num_threads() // workers)
        if not (folder / "config.json").is_file():  # CTranslate2's own; it failed as if model.bin were cut off
            raise ModelFolderError(f"{folder} has no config.json (CTranslate2 reads it beside {CTRANSLATE2_WEIGHTS_FILE}"
                                   f"); {EXPORT_AGAIN}")
        try:
            self.translator = ctranslate2.Translator(str(folder), device="cpu", compute_type=compute_type,
                                                     inter_threads=workers, intra_threads=threads)
        except RuntimeError as error:  # e.g. "invalid payload size" for a model.bin cut off while copied
            raise ModelFolderError(f"{folder / CTRANSLATE2_WEIGHTS_FILE} does not load in CTranslate2 ({error}); it "
                                   f"was probably cut off while being written or copied: {EXPORT_AGAIN}") from None

    # The parts of the PreTrainedModel interface that pipelines touch.
    def to(self, device):
        if torch.device(device).type != "cpu":
            raise ValueError(f"the CTranslate2 backend of hf_syntax runs on CPU only; got device {device}.")
        return self

    def eval(self):
        return self

    def can_generate(self) -> bool:
        return True

    def generate(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **kwargs) -> torch.Tensor:
        """Like ``model.generate``: (batch * num_return_sequences, length) ids starting with the decoder start token."""
        columns = {name: kwargs.pop(name) for stream in self.streams for name in stream.columns if name in kwargs}
        missing = [name for stream in self.streams for name in stream.columns if name not in columns]
        if missing:
            raise ValueError(f"this model embeds source features but {missing} were not given; the translation "
                             f"pipeline computes them with the model's parser (config.source_parser).")
        options, forced_end = self._translate_options(kwargs)
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        source = [self._source_tokens(row, input_ids, attention_mask, columns) for row in range(input_ids.shape[0])]
        part_size = -(-len(source) // self.workers)  # the batch in one part per worker
        results = self.translator.translate_batch(source, return_end_token=True, max_input_length=0,
                                                  max_batch_size=part_size if self.workers > 1 else 0, **options)
        rows = [[self.config.decoder_start_token_id, *[self.target_ids[token] for token in hypothesis]]
                for result in results for hypothesis in result.hypotheses]
        if forced_end is not None:  # generate forces the end token at the last position a hypothesis may fill
            rows = [row if row[-1] == forced_end else [*row, forced_end] for row in rows]
        width = max(len(row) for row in rows)
        output = torch.full((len(rows), width), self.config.pad_token_id, dtype=torch.long)
        for index, row in enumerate(rows):
            output[index, : len(row)] = torch.tensor(row)
        return output

    def _source_tokens(self, row, input_ids, attention_mask, columns) -> list[str]:
        keep = attention_mask[row].bool()
        tokens = [self.source_tokens[index] for index in input_ids[row][keep].tolist()]
        if not self.streams:
            return tokens
        row_columns = {name: values[row][keep].tolist() for name, values in columns.items()}
        streams = [[str(index) for index in stream.token_ids(row_columns)] for stream in self.streams]
        return [FEATURE_SEPARATOR.join(parts) for parts in zip(tokens, *streams)]

    def _translate_options(self, kwargs) -> tuple[dict, int | None]:
        """``generate`` options (the model's generation config updated by ``kwargs``, unset ones at transformers'
        defaults) as ``translate_batch``'s, and the forced end token; an option that would change the output but has
        no mapping is an error."""
        settings = GenerationConfig.from_dict(self.generation_config.to_dict())
        unused = settings.update(**kwargs)
        defaults = GenerationConfig._get_default_generation_params()

        def value(name):
            chosen = getattr(settings, name)
            return defaults.get(name) if chosen is None else chosen

        unsupported = sorted(unused) + sorted(
            name for name, chosen in settings.to_dict().items()
            if name not in GENERATION_OPTIONS + IGNORED_GENERATION_OPTIONS
            and chosen not in (None, False, defaults.get(name))
        )
        if unsupported:
            raise ValueError(f"the CTranslate2 backend does not support the generation option(s) {unsupported}; "
                             f"it maps {list(GENERATION_OPTIONS)}. Use the PyTorch backend for the others.")
        for name in GENERATION_COUNTS:
            check_generation_count(name, value(name))
        max_new = value("max_new_tokens") or value("max_length") - 1  # max_length counts the decoder start token
        min_new = value("min_new_tokens") or max(value("min_length") - 1, 0)
        forced_end = value("forced_eos_token_id")
        if forced_end is not None:
            if forced_end != self.config.eos_token_id:
                raise ValueError(f"forced_eos_token_id={forced_end} differs from the end token "
                                 f"{self.config.eos_token_id}; the CTranslate2 backend can only force the end token.")
            check_output_limit(max_new, forced_eos_token_id=forced_end)
            max_new -= 1  # the last position is the forced end token
        early_stopping = value("early_stopping")
        if early_stopping not in PATIENCE_FOR_EARLY_STOPPING:
            raise ValueError(f"early_stopping={early_stopping!r} has no CTranslate2 counterpart; the CTranslate2 "
                             f"backend supports early_stopping=True (exact) and False (approximated with beam "
                             f"patience 2). Use the PyTorch backend for {early_stopping!r}.")
        options = {
            "beam_size": value("num_beams"), "patience": PATIENCE_FOR_EARLY_STOPPING[early_stopping],
            "max_decoding_length": max_new, "min_decoding_length": min_new,
            "length_penalty": value("length_penalty"), "repetition_penalty": value("repetition_penalty"),
            "no_repeat_ngram_size": value("no_repeat_ngram_size"),
            "num_hypotheses": value("num_return_sequences"),
        }
        return options, forced_end


__all__ = ["CTranslate2Seq2SeqModel", "GENERATION_OPTIONS", "is_ctranslate2_folder"]
