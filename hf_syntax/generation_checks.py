"""Generation settings checked the same way by every backend (PyTorch ``generate``, CTranslate2) and the Endpoint,
so that a setting one of them would refuse or misread fails alike everywhere, with what to give instead."""

from __future__ import annotations


class GenerationSettingError(ValueError):
    """A generation setting the model cannot translate with; the message says which values work."""


def check_room_for_words(max_new_tokens: int | None, forced_eos_token_id: int | None) -> None:
    """Refuse ``max_new_tokens`` < 2 for a model that forces its end token (every recipe model does): the end token
    takes the last place, so no word fits. PyTorch then wrote empty translations and CTranslate2 failed with
    "maximum decoding length must be > 0"; both backends check here."""
    if forced_eos_token_id is not None and max_new_tokens is not None and max_new_tokens < 2:
        raise GenerationSettingError(
            f"max_new_tokens={max_new_tokens} leaves room for no word: this model ends every translation with its "
            f"end token (generation_config.forced_eos_token_id), which takes the last of those places, so the "
            f"translation would be empty. Give max_new_tokens >= 2.")


__all__ = ["GenerationSettingError", "check_room_for_words"]
