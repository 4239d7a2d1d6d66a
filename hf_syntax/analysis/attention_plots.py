"""Cross-attention heat maps of one translation (Sundararaman et al. 2019, Figure 3).

Row t of the map is the attention, averaged over the heads of one decoder layer (the last by default), that the
decoder paid to every source subword while it produced target subword t. The translation is generated first, then
replayed with teacher forcing so the attention of every step comes out of one forward pass; with the cache and
without it the model computes the same thing, so the replay shows what generation saw.

matplotlib is only needed for drawing and is imported inside `plot_cross_attention`. Its default font (DejaVu
Sans) has no CJK glyphs, so the labels are drawn with the first installed font that has every character they use.
A demo that draws one map per request writes them through `RecentPlots`, which keeps only the last few.
"""

import collections
import functools
import itertools
import tempfile
import warnings
from pathlib import Path

import torch


@torch.no_grad()
def translation_cross_attention(model, inputs: dict, *, layer: int = -1, **generate_kwargs):
    """Translate one source sentence and return (generated ids (target_len,), attention (target_len - 1, source_len)).

    `inputs` holds `input_ids` of shape (1, source_len) plus whatever else the model's forward needs
    (`attention_mask`, feature columns such as `pos_ids`). Row t of the attention belongs to generated token t + 1
    (the decoder start token is never produced, so it has no row).
    """
    input_ids = inputs.get("input_ids")
    if input_ids is None or input_ids.dim() != 2 or input_ids.shape[0] != 1:
        raise ValueError("translation_cross_attention plots one sentence: pass `input_ids` of shape (1, source_len).")
    check_decoder_layer(model.config, layer)
    generated = model.generate(**inputs, **generate_kwargs)
    outputs = model(**inputs, decoder_input_ids=generated[:, :-1], output_attentions=True, use_cache=False)
    return generated[0], outputs.cross_attentions[layer][0].float().mean(dim=0)


def check_decoder_layer(config, layer: int) -> None:
    """A layer index the decoder has (negative counts from the top), checked before anything is translated."""
    count = config.decoder_layers
    if not -count <= layer < count:
        raise ValueError(f"layer={layer} is out of range: the decoder has {count} layers (give 0 to {count - 1}, "
                         f"or -1 for the last).")


IMAGE_FORMATS = ("png", "svg", "pdf")
"""What a heat map is written as, chosen by the file name's suffix (none: PNG)."""


def image_format(path) -> str:
    """The format ``path`` names by its suffix; any other suffix is refused before anything is drawn (matplotlib
    would otherwise write PNG bytes into ``attention.txt``, or fail only after the translation); so is a folder."""
    if Path(path).is_dir():
        raise ValueError(f"{path} is a folder; name the image file to write, e.g. {Path(path) / 'attention.png'}")
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix and suffix not in IMAGE_FORMATS:
        raise ValueError(f"{path} ends in .{suffix}; an attention plot is written as "
                         f"{', '.join('.' + name for name in IMAGE_FORMATS)} (name the file with one of them)")
    return suffix or "png"


def plot_cross_attention(attention, source_tokens, target_tokens, path, *, title: str | None = None) -> Path:
    """Draw a (target_len, source_len) attention matrix with the subwords on the axes as a PNG, SVG or PDF (by the
    suffix of ``path``); returns the path."""
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError("Plotting attention needs matplotlib: `pip install matplotlib`.") from error
    file_format = image_format(path)
    attention = torch.as_tensor(attention).detach().float().cpu()
    if attention.shape != (len(target_tokens), len(source_tokens)):
        raise ValueError(
            f"attention has shape {tuple(attention.shape)} but there are {len(target_tokens)} target and "
            f"{len(source_tokens)} source tokens: rows are target subwords, columns source subwords."
        )
    width = 1.5 + 0.35 * len(source_tokens)
    height = 1.5 + 0.35 * len(target_tokens)
    figure = Figure(figsize=(width, height), dpi=100)
    axes = figure.subplots()
    image = axes.imshow(attention.numpy(), cmap="viridis", vmin=0.0, aspect="auto")
    font = label_font([*source_tokens, *target_tokens])
    axes.set_xticks(range(len(source_tokens)), labels=source_tokens, rotation=90, font=font)
    axes.set_yticks(range(len(target_tokens)), labels=target_tokens, font=font)
    axes.set_xlabel("source subword")
    axes.set_ylabel("target subword")
    if title:
        axes.set_title(title)
    figure.colorbar(image, ax=axes)
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format=file_format)
    return path


def label_font(labels):
    """FontProperties of matplotlib's default font if it has every character of the labels, else of the first
    installed font that has them all, else the default with a fallback font that has the rest; with none, the
    default and a warning naming the characters it lacks."""
    from matplotlib import font_manager

    needed = {ord(character) for label in labels for character in label if not character.isspace()}
    default = font_manager.findfont(font_manager.FontProperties())
    if needed <= _characters_of(default):
        return font_manager.FontProperties(fname=default)
    # matplotlib's "Last Resort" font has a placeholder for every code point: it would always match, uselessly.
    # Upright regular faces first, so a CJK family is drawn in its regular weight rather than bold or thin.
    installed = sorted(
        (entry.style != "normal", abs(font_manager.weight_dict.get(entry.weight, entry.weight) - 400), entry.fname)
        for entry in font_manager.fontManager.ttflist if "LastResort" not in entry.fname
    )
    for *_, path in installed:
        if needed <= _characters_of(path):
            return font_manager.FontProperties(fname=path)
    # No one font has them all (BPE's "▁" is in DejaVu, rarely in a CJK font): the default font first, then one that
    # has the rest, as a family list matplotlib falls back through glyph by glyph.
    rest = needed - _characters_of(default)
    for *_, path in installed:
        if rest <= _characters_of(path):
            names = [font_manager.get_font(default).family_name, font_manager.get_font(path).family_name]
            return font_manager.FontProperties(family=names)
    missing = "".join(sorted(chr(point) for point in rest))
    warnings.warn(
        f"no installed font has glyphs for all of {missing!r}; those labels are drawn as boxes. Install a font "
        f"that covers them (for Japanese: `apt-get install fonts-ipafont-gothic` on Debian/Ubuntu), then delete "
        f"matplotlib's font cache (~/.cache/matplotlib/fontlist-*.json) so it finds the new font.",
        stacklevel=3,
    )
    return font_manager.FontProperties(fname=default)


@functools.lru_cache(maxsize=None)
def _characters_of(font_path: str) -> frozenset:
    from matplotlib.ft2font import FT2Font

    return frozenset(FT2Font(font_path).get_charmap())


class RecentPlots:
    """A temporary folder that holds only the last `keep` plots written through `next_path`.

    A long-running demo draws a heat map per request; kept, they would fill the disk. The folder is removed by
    `cleanup`, when the object is garbage-collected, or at interpreter exit (`tempfile.TemporaryDirectory`).
    """

    def __init__(self, keep: int = 8, prefix: str = "hf_syntax_plots_"):
        if not isinstance(keep, int) or keep < 1:
            raise ValueError(f"keep={keep!r}: keep at least the plot just written (a whole number >= 1).")
        self.keep = keep
        self._directory = tempfile.TemporaryDirectory(prefix=prefix)
        self.folder = Path(self._directory.name)
        self._written = collections.deque()
        self._numbers = itertools.count()

    def next_path(self, stem: str = "attention") -> Path:
        """A new PNG path in the folder (numbered, so two requests never share a file); the plots older than the last
        `keep`, this one included, are deleted."""
        path = self.folder / f"{stem}_{next(self._numbers):06d}.png"
        self._written.append(path)
        while len(self._written) > self.keep:
            self._written.popleft().unlink(missing_ok=True)
        return path

    def cleanup(self) -> None:
        """Remove the folder and every plot in it."""
        self._directory.cleanup()


def plot_translation_attention(model, tokenizer, inputs: dict, path, *, layer: int = -1, title: str | None = None,
                               target_tokenizer=None, **generate_kwargs) -> Path:
    """Translate `inputs` (one sentence, already tokenized and featurized) and plot the decoder's cross-attention of
    `layer` with the subwords as labels: the source's from `tokenizer`, the translation's from `target_tokenizer`
    (a model with separate vocabularies; default: `tokenizer`). Returns the image's path (its format by its
    suffix)."""
    image_format(path)  # a name it cannot write is refused before the translation
    generated, attention = translation_cross_attention(model, inputs, layer=layer, **generate_kwargs)
    source_tokens = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0].tolist())
    target_tokens = (target_tokenizer or tokenizer).convert_ids_to_tokens(generated[1:].tolist())
    return plot_cross_attention(attention, source_tokens, target_tokens, path, title=title)


__all__ = ["RecentPlots", "plot_cross_attention", "plot_translation_attention", "translation_cross_attention"]
