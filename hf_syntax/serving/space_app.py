"""Gradio demo of an hf-syntax model: the translation, the tree the model was given, the tree DBSA predicts and the
decoder's cross-attention; for BERT+POS the label, the scores and the POS tags used.

Written into a Space folder by ``hf-syntax export ... --space DIR`` (as ``app.py``, next to ``plotting.py``). It
imports nothing from hf_syntax: the model and its helpers (``tree_views.py``) come from the exported folder's own
code through ``trust_remote_code``. Run it locally with ``python app.py --model <exported folder>``; it serves on
127.0.0.1 and makes no outside calls (no usage analytics, no update check, no fonts or scripts from a CDN).
"""

import os

# Before gradio is imported: no usage analytics and no version check (both call out), no Hub telemetry.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import argparse  # noqa: E402
import html  # noqa: E402
import signal  # noqa: E402
from pathlib import Path  # noqa: E402

import gradio as gr  # noqa: E402
from huggingface_hub import ModelCard  # noqa: E402
from spacy import displacy  # noqa: E402
from transformers import pipeline  # noqa: E402
from transformers.dynamic_module_utils import get_class_from_dynamic_module  # noqa: E402

from plotting import RecentPlots, plot_cross_attention, translation_cross_attention  # noqa: E402

DEFAULT_MODEL = "your-name/your-model"
EXAMPLES: list = []
VIEWS = ("source_tree", "predicted_source_tree", "model_inputs", "pos_tags")
PLOTS_KEPT = 16
"""Heat maps kept in the app's temporary folder (older ones are deleted; the folder goes when the app exits)."""
GRADIO_COPIES_SECONDS = 900
"""Gradio serves a copy of every heat map from its own cache; copies older than this are deleted this often."""


def tree_html(tree, caption: str) -> str:
    """A dependency tree drawn by displaCy as inline SVG (arrows point from head to dependent; roots unmarked)."""
    arcs = []
    for dependent, head in enumerate(tree["heads"]):
        if head == 0:
            continue
        start, end = sorted((dependent, head - 1))
        arcs.append({"start": start, "end": end, "label": tree["labels"][dependent] or "",
                     "dir": "left" if dependent < head - 1 else "right"})
    words = [{"text": word, "tag": tag or ""} for word, tag in zip(tree["words"], tree["tags"])]
    svg = displacy.render({"words": words, "arcs": arcs}, style="dep", manual=True, jupyter=False,
                          options={"compact": True, "distance": 95, "offset_x": 40})
    return f"<figure><figcaption>{html.escape(caption)}</figcaption><div style='overflow-x:auto'>{svg}</div></figure>"


def readable_title(model: str) -> str:
    """The page's title: the name the model card gives the model (``model_name``, which ``hf-syntax export`` fills
    with e.g. "Transformer_dep+rel, Japanese→English"); without one, the Hub id, or a local folder's own name --
    never a path of this machine."""
    folder = Path(model)
    if folder.is_dir():
        card = folder / "README.md"
        name = ModelCard.load(card).data.model_name if card.is_file() else None
        fallback = folder.resolve().name
    else:
        try:
            name = ModelCard.load(model).data.model_name
        except (OSError, ValueError):  # offline, no card, or not a Hub id: the id is still readable
            name = None
        fallback = model
    return Path(name).name if name and os.path.isabs(name) else name or fallback


def note_html(text: str) -> str:
    return f"<p><em>{html.escape(text)}</em></p>"


class Demo:
    """The model behind the page and the functions its buttons call."""

    def __init__(self, model: str):
        self.title = readable_title(model)
        self.pipe = pipeline(model=model, trust_remote_code=True)
        self.views = {name: get_class_from_dynamic_module(f"tree_views.{name}", model) for name in VIEWS}
        self.config = self.pipe.model.config
        self.is_translation = bool(getattr(self.config, "is_encoder_decoder", False))
        self.plots = RecentPlots(keep=PLOTS_KEPT, prefix="hf_syntax_space_")

    def translate(self, text: str):
        """Translation, tree given (HTML), tree predicted (HTML), cross-attention heat map (PNG path)."""
        if not text or not text.strip():
            raise gr.Error("Type a sentence to translate first.")
        try:
            reading = self.pipe.read(text)  # the one parse: the model's features and both drawings come from it
        except ValueError as error:  # text the model cannot read (not valid Unicode, ...): say why on the page
            raise gr.Error(str(error)) from None
        notice = self.pipe.cut_notice(reading)
        if notice:  # the translation below is of its first tokens only: say so on the page
            gr.Warning(notice)
        inputs = self.views["model_inputs"](self.pipe, reading)
        generated, attention = translation_cross_attention(self.pipe.model, inputs)
        translation = self.pipe.postprocess({"output_ids": generated[None]})[0]["translation_text"]

        given = self.views["source_tree"](self.pipe, reading)
        given_html = (tree_html(given, f"Parsed by {self.config.source_parser}; the model reads "
                                       f"{', '.join(self.config.needs_source_features)} from this tree.")
                      if given else note_html("This model reads no tree at inference: it gets the subwords only."))
        predicted = self.views["predicted_source_tree"](self.pipe, reading)
        predicted_html = (tree_html(predicted, "The encoder's parse head: maximum spanning tree over its head "
                                               "distributions.")
                          if predicted else note_html("This model has no parse head, so it predicts no tree."))

        source_tokens = self.pipe.tokenizer.convert_ids_to_tokens(inputs["input_ids"][0].tolist())
        target_tokens = self.pipe.target_tokenizer.convert_ids_to_tokens(generated[1:].tolist())
        plot = plot_cross_attention(attention, source_tokens, target_tokens,
                                    self.plots.next_path(),
                                    title="Cross-attention, last decoder layer (mean over heads)")
        return translation, given_html, predicted_html, str(plot)

    def classify(self, text: str, text_pair: str):
        """Scores of every label and the POS tags BERT+POS received (HTML table)."""
        if not text or not text.strip():
            raise gr.Error("Type a sentence to classify first.")
        item = {"text": text, "text_pair": text_pair} if text_pair and text_pair.strip() else text
        try:
            trees = self.pipe.read(item)  # the one parse of each text: the model's POS ids and the table come from it
        except ValueError as error:
            raise gr.Error(str(error)) from None
        notice = self.pipe.cut_notice(trees)
        if notice:  # the label below is of its first wordpieces only: say so on the page
            gr.Warning(notice)
        scores = self.pipe.postprocess(self.pipe.forward(self.pipe.encode(trees)), top_k=None)
        tags = [pair for tree in trees if tree is not None for pair in self.views["pos_tags"](self.pipe, tree)]
        rows = "".join(f"<tr><td>{html.escape(word)}</td><td>{html.escape(tag or '')}</td></tr>" for word, tag in tags)
        table = (f"<table><thead><tr><th>word</th><th>UPOS (from {html.escape(self.config.pos_parser)})</th></tr>"
                 f"</thead><tbody>{rows}</tbody></table>")
        return {result["label"]: result["score"] for result in scores}, table


def build(demo: Demo) -> gr.Blocks:
    with gr.Blocks(title=f"hf-syntax: {demo.title}",
                   delete_cache=(GRADIO_COPIES_SECONDS, GRADIO_COPIES_SECONDS)) as page:
        gr.Markdown(f"# {html.escape(demo.title)}\nA syntax-aware Transformer (hf-syntax): type a sentence and see what "
                    f"the model read and what it did.")
        if demo.is_translation:
            source = gr.Textbox(label="Source sentence", lines=2, elem_id="source")
            button = gr.Button("Translate", variant="primary", elem_id="run")
            translation = gr.Textbox(label="Translation", elem_id="translation", interactive=False)
            gr.Markdown("### Source tree given to the model")
            given = gr.HTML(elem_id="given-tree")
            gr.Markdown("### Source tree the model predicts (DBSA parse head)")
            predicted = gr.HTML(elem_id="predicted-tree")
            heat_map = gr.Image(label="Cross-attention", type="filepath", elem_id="attention")
            outputs = [translation, given, predicted, heat_map]
            button.click(demo.translate, inputs=source, outputs=outputs)
            source.submit(demo.translate, inputs=source, outputs=outputs)
            if EXAMPLES:
                gr.Examples(EXAMPLES, inputs=source)
        else:
            text = gr.Textbox(label="Text", elem_id="source")
            pair = gr.Textbox(label="Second text (for sentence-pair tasks)", elem_id="source-pair")
            button = gr.Button("Classify", variant="primary", elem_id="run")
            scores = gr.Label(label="Label", elem_id="label")
            gr.Markdown("### POS tags given to the model")
            tags = gr.HTML(elem_id="pos-tags")
            button.click(demo.classify, inputs=[text, pair], outputs=[scores, tags])
            if EXAMPLES:  # a pair fills both boxes, a single text the first
                gr.Examples([example if isinstance(example, list) else [example, ""] for example in EXAMPLES],
                            inputs=[text, pair])
    return page


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=os.environ.get("HF_SYNTAX_MODEL", DEFAULT_MODEL),
                        help="exported model folder or Hub id (default: $HF_SYNTAX_MODEL, else %(default)s)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", 7860)))
    options = parser.parse_args(argv)
    # A stopped Space or `kill` sends SIGTERM: treat it as Ctrl-C, so gradio shuts down (deleting its cached copies)
    # and the interpreter exits normally (deleting the app's heat-map folder).
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    build(Demo(options.model)).launch(server_name=options.host, server_port=options.port, share=False,
                                      ssr_mode=False, footer_links=[])


if __name__ == "__main__":
    main()
