"""torch.compile readiness: a training forward of every model type traces into one graph, so
`TrainingArguments(torch_compile=True)` compiles the whole model. The checks that read tensor values (the padding
shortcut, feature-id and head-index ranges) would break that graph and, on a GPU, wait for the device; they run
only eagerly, where they still raise their clear errors, and the parse loss takes no branch on its heads at all.
A compiled training step gives the eager step's loss and gradients, also when the lengths change between batches."""

import pytest
import torch

from device_support import MODEL_KINDS, build_model, make_batch


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_a_training_forward_traces_into_one_graph(kind):
    model, batch = build_model(kind).train(), make_batch(kind)
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(model)(**batch)
    reasons = [str(reason.reason).splitlines()[0] for reason in explanation.break_reasons]
    assert explanation.graph_break_count == 0, reasons
    assert explanation.graph_count == 1


def loss_and_gradients(model, batch: dict) -> tuple[torch.Tensor, list[torch.Tensor]]:
    model.zero_grad(set_to_none=True)
    loss = model(**batch).loss
    loss.backward()
    return loss.detach(), [parameter.grad for parameter in model.parameters() if parameter.grad is not None]


def test_a_compiled_training_step_matches_the_eager_one_as_lengths_change():
    """Batches of a training run differ in length, so compiled steps run with symbolic lengths (what
    `torch_compile=True` arrives at after its first recompile). The kind with every feature: parse heads in both
    stacks, relative and dependency terms, the self-parsing module. Its parse heads' projections were once split from
    the ordinary heads', and the split's views saved for backward got the first batch's strides: the second length
    failed in backward."""
    model = build_model("dbsa_dep_rel_self", dropout=0.0).train()
    torch._dynamo.reset()
    compiled = torch.compile(model, dynamic=True)
    for source_length, target_length in ((8, 6), (11, 9)):
        batch = make_batch("dbsa_dep_rel_self", source_length=source_length, target_length=target_length)
        eager_loss, eager_gradients = loss_and_gradients(model, batch)
        compiled_loss, compiled_gradients = loss_and_gradients(compiled, batch)
        torch.testing.assert_close(compiled_loss, eager_loss, rtol=1e-5, atol=1e-5)
        assert len(compiled_gradients) == len(eager_gradients)
        for compiled_gradient, eager_gradient in zip(compiled_gradients, eager_gradients):
            torch.testing.assert_close(compiled_gradient, eager_gradient, rtol=1e-4, atol=1e-5)


def test_eager_forward_still_names_a_head_index_out_of_range():
    model, batch = build_model("dbsa"), make_batch("dbsa")
    batch["dep_heads"][0, 0] = 99
    with pytest.raises(ValueError, match="dep_heads holds head indices outside"):
        model(**batch)


def test_eager_forward_still_names_a_feature_id_out_of_range():
    model, batch = build_model("syntax_infused"), make_batch("syntax_infused")
    batch["pos_ids"][0, 0] = model.config.num_pos_tags
    with pytest.raises(ValueError, match="pos_ids holds ids outside"):
        model(**batch)


def test_parse_losses_are_zero_with_a_graph_when_no_head_is_supervised():
    model, batch = build_model("dbsa").train(), make_batch("dbsa")
    batch["dep_heads"].fill_(-100)
    batch["decoder_dep_heads"].fill_(-100)
    output = model(**batch)
    assert output.encoder_parse_loss.item() == 0 and output.decoder_parse_loss.item() == 0
    assert output.encoder_parse_loss.requires_grad
    output.loss.backward()
    assert all(torch.isfinite(parameter.grad).all() for parameter in model.parameters() if parameter.grad is not None)


READ_COLUMNS = {"syntax_transformer": ["input_ids", "labels"], "dbsa": ["dep_heads", "decoder_dep_heads"],
                "dep_rpe": ["dep_depths"], "syntax_infused": ["pos_ids", "case_ids", "subword_tags"],
                "dbsa_dep_rel_self": ["dep_heads", "dep_depths"], "bert_pos": ["pos_ids"]}
"""Per kind, the integer columns its training forward reads that hf_syntax checks (BERT's own inputs and labels are
BERT's to check; the other kinds read the same columns through the same code)."""


@pytest.mark.parametrize(("kind", "name"), [(kind, name) for kind, names in READ_COLUMNS.items() for name in names])
def test_an_integer_column_given_as_floats_is_named(kind, name):
    """A float column (a cast forgotten, a pandas-read dataset with a NaN) failed inside an embedding or a loss, and
    float depths were used silently. The dtype is known without reading values, so the check stays in the graph."""
    model, batch = build_model(kind).train(), make_batch(kind)
    with pytest.raises(ValueError, match=rf"^`{name}` holds torch.float32 values; .* are integers \(torch.long\)"):
        model(**{**batch, name: batch[name].float()})
