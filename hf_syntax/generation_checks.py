"""Generation settings checked the same way by every backend (PyTorch ``generate``, CTranslate2) and the Endpoint,
so that a setting one of them would refuse or misread fails alike everywhere, with what to give instead."""

from __future__ import annotations


class GenerationSettingError(ValueError):
    """A generation setting the model cannot translate with; the message says which values work."""


GENERATION_COUNTS = {"num_beams": "1 is greedy search", "max_new_tokens": "the longest translation",
                     "max_length": "the longest translation, its decoder start token counted"}
"""The generation settings that count something, with what they count."""


def check_generation_count(name: str, value) -> None:
    """A count among ``GENERATION_COUNTS`` must be a whole number >= 1: 0 beams was a ZeroDivisionError inside
    generate, a str a TypeError there."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise GenerationSettingError(f"{name}={value!r}: give a whole number >= 1 ({GENERATION_COUNTS[name]}).")


def check_output_limit(max_new_tokens: int | None = None, max_length: int | None = None,
                       forced_eos_token_id: int | None = None, max_positions: int | None = None) -> None:
    """Refuse an output limit the model cannot translate with. Below 2 new tokens beside a forced end token (every
    recipe model forces it) no word fits: PyTorch wrote empty translations and CTranslate2 failed with "maximum
    decoding length must be > 0". Past the decoder's position table (``max_positions``) a long translation failed
    midway, after the earlier ones were made. ``max_length`` (used when no ``max_new_tokens`` is given) counts the
    decoder start token as well."""
    if max_new_tokens is not None:
        name, given, new_tokens = "max_new_tokens", max_new_tokens, max_new_tokens
    elif max_length is not None:
        name, given, new_tokens = "max_length", max_length, max_length - 1
    else:
        return
    counted = given - new_tokens  # 1 for max_length: the decoder start token
    if forced_eos_token_id is not None and new_tokens < 2:
        raise GenerationSettingError(
            f"{name}={given} leaves room for no word: {'it counts the decoder start token, and ' if counted else ''}"
            f"this model ends every translation with its end token (generation_config.forced_eos_token_id), which "
            f"takes the last of those places, so the translation would be empty. Give {name} >= {2 + counted}.")
    if max_positions is not None and new_tokens > max_positions:
        raise GenerationSettingError(
            f"{name}={given}: this model writes at most {max_positions} tokens (its decoder's position table, "
            f"max_position_embeddings), so a translation that long would fail midway. Give {name} <= "
            f"{max_positions + counted}.")


__all__ = ["GENERATION_COUNTS", "GenerationSettingError", "check_generation_count", "check_output_limit"]
