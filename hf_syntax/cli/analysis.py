"""``hf-syntax show`` and ``hf-syntax plot-attention``: look inside a model (the trees it used and predicted,
its cross-attention)."""

from __future__ import annotations

from hf_syntax.cli.common import (
    CliError,
    add_generation_arguments,
    described,
    generation_options,
    model_pipeline,
    positive_int,
    read_input_lines,
)


def format_tree(tree: dict) -> str:
    """One line per word: its number, the word, its relation and its head (``root`` for a root)."""
    width = max(len(word) for word in tree["words"])
    lines = []
    for index, (word, head, label) in enumerate(zip(tree["words"], tree["heads"], tree["labels"]), start=1):
        arrow = "root" if head == 0 else f"{label or 'dep'} -> {head} {tree['words'][head - 1]}"
        lines.append(f"  {index:>3} {word:<{width}}  {arrow}")
    return "\n".join(lines)


def command_show(options) -> None:
    """Translate a few sentences and print, for each, the source tree the model was given (feature models) and the
    tree its parse head predicts (DBSA): what the model used, next to what it wrote."""
    from hf_syntax.text_checks import is_blank
    from hf_syntax.tree_views import predicted_source_tree, source_tree

    # the input is read before the model loads: unreadable or empty input fails in a second, not after the load
    texts = [line.strip() for line in read_input_lines(options.source) if not is_blank(line)][: options.max_sentences]
    if not texts:
        raise CliError("no sentence to show: give --source FILE (or lines on stdin) with at least one non-empty line.")
    pipe = model_pipeline(options.model, backend="pytorch", **generation_options(options))
    config = pipe.model.config
    if not getattr(config, "is_encoder_decoder", False):
        raise CliError("show prints translations with their trees; this model is a classifier.")
    for text in texts:
        print(f"source:      {text}")
        reading = pipe.read(text, options.pretokenized)  # one parse for both views
        given = source_tree(pipe, reading)
        if given:
            print(f"tree given ({config.source_parser}; the model reads {', '.join(config.needs_source_features)}):")
            print(format_tree(given))
        else:
            print("tree given:  none (this model reads subwords only)")
        predicted = predicted_source_tree(pipe, reading)
        if predicted:
            print("tree predicted by the encoder's parse head:")
            print(format_tree(predicted))
        print(f"translation: {pipe(text, pretokenized=options.pretokenized)[0]['translation_text']}\n")


def command_plot_attention(options) -> None:
    """Translate one sentence and draw the decoder's cross-attention over the source subwords."""
    from hf_syntax.columns import pad_columns
    from hf_syntax.analysis.attention_plots import check_decoder_layer, image_format, plot_translation_attention

    try:
        image_format(options.out)
    except ValueError as error:
        raise CliError(f"--out {error}") from None
    pipe = model_pipeline(options.model, backend="pytorch")
    if not getattr(pipe.model.config, "is_encoder_decoder", False):
        raise CliError("plot-attention draws a translation model's cross-attention; this model is a classifier.")
    try:
        check_decoder_layer(pipe.model.config, options.layer)
    except ValueError as error:
        raise CliError(f"--layer: {error}") from None
    row = pipe.preprocess(options.text, pretokenized=options.pretokenized)["row"]
    inputs = pad_columns([row], pipe.tokenizer.pad_token_id)
    path = plot_translation_attention(pipe.model, pipe.tokenizer, inputs, options.out, layer=options.layer,
                                      title=options.title, target_tokenizer=pipe.target_tokenizer,
                                      **generation_options(options))
    print(f"wrote {path}")


def add_commands(commands) -> None:
    """Register ``show`` and ``plot-attention``."""
    show = commands.add_parser("show", help="translate a few sentences and print the trees the model used",
                               description=described(command_show))
    show.add_argument("--model", required=True, help="model folder (trained run or exported)")
    show.add_argument("--source", help="file of source sentences (default: stdin)")
    show.add_argument("--max-sentences", dest="max_sentences", type=positive_int, default=3,
                      help="show at most this many sentences, the first non-empty ones (default: 3)")
    add_generation_arguments(show)
    show.set_defaults(run=command_show)

    plot = commands.add_parser("plot-attention", help="draw the cross-attention of one translation as a PNG",
                               description=described(command_plot_attention))
    plot.add_argument("--model", required=True, help="model folder (trained run or exported)")
    plot.add_argument("--text", required=True, help="one source sentence")
    plot.add_argument("--out", required=True, help="image file to write: .png, .svg or .pdf")
    plot.add_argument("--layer", type=int, default=-1, help="decoder layer (default: the last)")
    plot.add_argument("--title", help="title above the plot (default: none)")
    add_generation_arguments(plot)
    plot.set_defaults(run=command_plot_attention)
