"""Checks of the files a saved model folder holds, before transformers reads them.

A weights file cut off while it was saved or copied (a killed save, a full disk, an interrupted download) makes
safetensors fail with "incomplete metadata", naming no file; a ``config.json`` that is not UTF-8 gives an error that
says neither why nor what to do. Here each is one line naming the file, what is wrong with it and what to do.
``CheckedFromPretrained`` runs the checks in the model classes' ``from_pretrained`` (so also through the Auto
classes, remote code and the Endpoint handler); the command line and the recipe's resume call them directly.
"""

from __future__ import annotations

import codecs
import json
import os
from pathlib import Path

GENERATION_CONFIG = "generation_config.json"
SAVE_AGAIN = ("save or copy the model folder again (for a training checkpoint: resume from an earlier "
              "checkpoint-* folder)")


class DamagedFileError(OSError):
    """A file of a saved model that cannot be read as it is (the message names it and says what to do)."""


def decode_utf8(data: bytes, name: str, fix: str, error: type[Exception] = DamagedFileError) -> str:
    """``data`` as text (without the byte-order mark some editors write first, which would otherwise become part of
    the first word); bytes that are not UTF-8 raise ``error`` naming ``name``, the byte and its line, then ``fix``
    (what to do about it)."""
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as problem:
        line = data.count(b"\n", 0, problem.start) + 1
        raise error(f"{name} is not UTF-8 text: byte 0x{data[problem.start]:02x} on line {line} is not valid "
                    f"UTF-8. {fix}") from None


def check_config_file(path: Path) -> None:
    """A ``config.json`` (or ``generation_config.json``) that transformers can read: UTF-8 JSON holding an object."""
    text = decode_utf8(path.read_bytes(), str(path), f"Re-encode it as UTF-8 or {SAVE_AGAIN}.")
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as problem:
        raise DamagedFileError(f"{path} is not valid JSON ({problem}); fix it or {SAVE_AGAIN}.") from None
    if not isinstance(parsed, dict):
        raise DamagedFileError(f"{path} holds a JSON {type(parsed).__name__}, not a config object; {SAVE_AGAIN}.")
    if "auto_map" in parsed and not isinstance(parsed["auto_map"], dict):  # was a TypeError inside transformers
        raise DamagedFileError(f"{path}: auto_map is {parsed['auto_map']!r}; it maps the Auto classes to the folder's "
                               f"code ({{\"AutoConfig\": ...}}): restore it, drop the key, or {SAVE_AGAIN}.")


def safetensors_problem(path: Path) -> str | None:
    """What keeps a ``.safetensors`` file from loading (None: it is whole): the format is an 8-byte header length,
    a JSON header giving every tensor's byte range, then the tensors, so a cut-off file is shorter than the header
    says."""
    size = path.stat().st_size
    if size == 0:
        return "is empty (0 bytes)"
    with open(path, "rb") as handle:
        header_length = int.from_bytes(handle.read(8), "little")
        if 8 + header_length > size:  # also a file of less than the 8 bytes that give the header's length
            return f"is cut off: {size} bytes, too short for its own header"
        try:
            header = json.loads(handle.read(header_length))
            end = max((entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__"), default=0)
        except (UnicodeDecodeError, json.JSONDecodeError, AttributeError, KeyError, IndexError, TypeError):
            return "has a header that is not safetensors JSON"
    if size < 8 + header_length + end:
        return f"is cut off: {size} bytes where its header needs {8 + header_length + end}"
    return None


def check_model_files(folder) -> None:
    """Raise ``DamagedFileError`` for a local model folder whose ``config.json``, ``generation_config.json`` or
    ``*.safetensors`` weights cannot be read, or that has a config but no weights (anything that is not a local folder, such as a Hub id, is left to
    transformers, whose own errors for a missing file named no folder or came as a list of tracebacks)."""
    if not isinstance(folder, (str, os.PathLike)) or not os.path.isdir(folder):
        return
    folder = Path(folder)
    if (folder / GENERATION_CONFIG).is_file():  # transformers loaded the model without it: its beam and output
        check_config_file(folder / GENERATION_CONFIG)  # limit silently fell back to transformers' defaults
    if (folder / "config.json").is_file():
        check_config_file(folder / "config.json")
        if not any(folder.glob("*.safetensors")) and not any(folder.glob("pytorch_model*.bin")):
            raise DamagedFileError(f"no *.safetensors weights in {folder} (e.g. model.safetensors): they were not "
                                   f"saved or not copied with the config; {SAVE_AGAIN}.")
    for path in sorted(folder.glob("*.safetensors")):
        problem = safetensors_problem(path)
        if problem:
            raise DamagedFileError(f"{path} {problem}; it was cut off while being saved or copied: {SAVE_AGAIN}.")


class CheckedFromPretrained:
    """Mixin for a ``PreTrainedModel`` class: ``from_pretrained`` of a local folder checks its files first
    (``check_model_files``)."""

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs):
        check_model_files(pretrained_model_name_or_path)
        return super().from_pretrained(pretrained_model_name_or_path, *args, **kwargs)


__all__ = ["CheckedFromPretrained", "DamagedFileError", "check_config_file", "check_model_files", "decode_utf8",
           "safetensors_problem"]
