"""torch.compile readiness: a training forward of every model type traces into one graph, so
`TrainingArguments(torch_compile=True)` compiles the whole model. The checks that read tensor values (the padding
shortcut, feature-id and head-index ranges) would break that graph and, on a GPU, wait for the device; they run
only eagerly, where they still raise their clear errors, and the parse loss takes no branch on its heads at all."""

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
