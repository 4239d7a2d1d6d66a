"""Every model type trains and generates on a CUDA GPU (issue 41): float32 forward, backward and greedy generate
with no host/device mix-up, CUDA logits and tokens equal to the CPU's, and one bfloat16-autocast and one
float16-autocast (GradScaler) training step that stay finite. Tiny models from device_support.py (the builders of the
CPU dtype tests); seconds on a GPU, skipped without one (scripts/gpu_check.sh runs them)."""

import copy

import pytest
import torch

from device_support import MODEL_KINDS, build_model, logits_of, make_batch, source_inputs, to_device

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is False)"),
]
CUDA = torch.device("cuda")


@pytest.fixture(autouse=True)
def no_tf32():
    """float32 matrix products in full float32, so that CUDA and CPU logits agree to 1e-4."""
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def _finite_gradients(model) -> bool:
    gradients = [parameter.grad for parameter in model.parameters() if parameter.grad is not None]
    return bool(gradients) and all(torch.isfinite(gradient).all() for gradient in gradients)


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_float32_forward_backward_and_generate_on_cuda_match_the_cpu(kind):
    cpu_model, cpu_batch = build_model(kind), make_batch(kind)
    model, batch = copy.deepcopy(cpu_model).to(CUDA), to_device(cpu_batch, CUDA)
    with torch.no_grad():
        expected, got = logits_of(cpu_model, cpu_batch), logits_of(model, batch)
    assert got.device.type == "cuda"
    assert (got.cpu() - expected).abs().max() <= 1e-4

    model.train()
    output = model(**batch)
    output.loss.backward()
    assert torch.isfinite(output.loss) and _finite_gradients(model)

    if kind != "bert_pos":
        model.eval()
        with torch.no_grad():
            tokens = model.generate(**source_inputs(model, batch))
            expected_tokens = cpu_model.generate(**source_inputs(cpu_model, cpu_batch))
        assert tokens.device.type == "cuda"
        assert torch.equal(tokens.cpu(), expected_tokens)


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_bfloat16_autocast_training_step_is_finite(kind):
    model, batch = build_model(kind).to(CUDA).train(), to_device(make_batch(kind), CUDA)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        output = model(**batch)
    output.loss.backward()
    assert torch.isfinite(output.loss) and _finite_gradients(model)
    optimizer.step()
    assert all(torch.isfinite(parameter).all() for parameter in model.parameters())


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_float16_autocast_training_step_with_grad_scaler_is_finite(kind):
    model, batch = build_model(kind).to(CUDA).train(), to_device(make_batch(kind), CUDA)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        output = model(**batch)
    assert torch.isfinite(output.loss)
    scaler.scale(output.loss).backward()
    scaler.unscale_(optimizer)
    assert _finite_gradients(model)  # else the scaler would skip the step
    scaler.step(optimizer)
    scaler.update()
    assert all(torch.isfinite(parameter).all() for parameter in model.parameters())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("kind", ["syntax_transformer", "rel_keys", "dep_rpe"])
def test_autocast_generate_with_left_padded_decoder_prompts_is_finite(kind, dtype):
    """Row 1's decoder prompt is left-padded: its first query sees no key, the case a -inf mask turns into NaN."""
    model, batch = build_model(kind).to(CUDA), to_device(make_batch(kind), CUDA)
    prompt = torch.tensor([[1, 5, 6], [0, 1, 7]], device=CUDA)
    with torch.no_grad(), torch.autocast("cuda", dtype=dtype):
        output = model.generate(**source_inputs(model, batch), decoder_input_ids=prompt,
                                decoder_attention_mask=(prompt != 0).long(), output_logits=True,
                                return_dict_in_generate=True)
        logits = model(**source_inputs(model, batch), decoder_input_ids=prompt,
                       decoder_attention_mask=(prompt != 0).long()).logits
    assert torch.isfinite(logits).all()
    assert all(torch.isfinite(step).all() for step in output.logits)  # raw: min_new_tokens sets -inf scores


def test_the_translation_pipeline_runs_on_the_gpu_and_reads_trees_made_elsewhere(tmp_path):
    """The path of ``hf-syntax translate --source-trees`` on a GPU machine without a parser (the study driver's blind
    translations there): the pipeline puts the model on the GPU by default, reads the source trees from a CoNLL-U
    file instead of parsing, and beam search translates as it does on the CPU."""
    from hub_support import tiny_model, tiny_tokenizer

    from hf_syntax.conllu import conllu_block
    from hf_syntax.pipelines import syntax_pipeline
    from hf_syntax.trees import WordTree

    words = [["The", "cat", "sleeps", "."], ["She", "bought", "two", "books", "yesterday", "."]]
    heads = [[2, 3, 0, 3], [2, 0, 4, 2, 2, 2]]
    trees = tmp_path / "trees.conllu"
    trees.write_text("".join(conllu_block(WordTree.from_words(w, h)) for w, h in zip(words, heads)), encoding="utf-8")
    tokenizer = tiny_tokenizer()
    model = tiny_model("dep_rpe", tokenizer)
    on_cpu = syntax_pipeline(copy.deepcopy(model), tokenizer, source_parser=f"conllu:{trees}", device="cpu")
    on_gpu = syntax_pipeline(model, tokenizer, source_parser=f"conllu:{trees}")
    assert on_gpu.device.type == "cuda" and next(on_gpu.model.parameters()).device.type == "cuda"
    texts = [" ".join(sentence) for sentence in words]
    translations = [on_gpu(texts, num_beams=4, pretokenized=True), on_cpu(texts, num_beams=4, pretokenized=True)]
    assert translations[0] == translations[1] and all(item["translation_text"] for item in translations[0])
