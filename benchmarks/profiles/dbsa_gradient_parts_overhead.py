"""Cost of measuring the translation and parse gradient norms separately (`SyntaxSeq2SeqTrainer` on logged steps).

A DBSA model of the small CPU configuration (d=256, 3+3 layers, 4 heads, ffn 1024, 8k vocabulary, parse heads in
layer 2 on both sides) takes training steps on a batch of the small configuration's shape: plain steps (forward,
backward, Adam) and measured steps (the same plus the two `torch.autograd.grad` calls the trainer makes), taken
alternately so that a busy machine slows both alike. Prints the median seconds of each and what the measurement
adds to a run that logs every `--logging-steps` steps.

    python benchmarks/dbsa_gradient_parts_overhead.py --steps 10
"""

import argparse
import statistics
import time

import torch

from hf_syntax import config_for
from hf_syntax.variants import DbsaForConditionalGeneration


def batch(size: int, length: int, vocab: int, generator: torch.Generator) -> dict:
    """Random ids and well-formed heads (each token's head a random earlier-or-later token of its sentence)."""
    ids = torch.randint(3, vocab, (size, length), generator=generator)
    heads = torch.randint(0, length - 1, (size, length), generator=generator)
    heads[:, -1] = -100
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "dep_heads": heads,
            "labels": ids.flip(1), "decoder_dep_heads": heads.clone()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10, help="steps of each kind (after one warm-up step each)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--length", type=int, default=16, help="tokens per sentence, both sides")
    parser.add_argument("--logging-steps", type=int, default=50)
    options = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = config_for("dbsa_enc_dec", vocab_size=8000, d_model=256, encoder_layers=3, decoder_layers=3,
                        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=1024,
                        decoder_ffn_dim=1024, parse_layer_encoder=2, parse_layer_decoder=2)
    model = DbsaForConditionalGeneration(config).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    parameters = [parameter for parameter in model.parameters() if parameter.requires_grad]
    inputs = batch(options.batch_size, options.length, config.vocab_size, torch.Generator().manual_seed(1))

    def step(measure: bool) -> float:
        started = time.perf_counter()
        outputs = model(**inputs)
        if measure:
            parse = outputs.encoder_parse_loss + outputs.decoder_parse_loss
            for part in (outputs.translation_loss, parse):
                torch.autograd.grad(part, parameters, retain_graph=True, allow_unused=True)
        outputs.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return time.perf_counter() - started

    step(False), step(True)
    times = {False: [], True: []}
    for _ in range(options.steps):
        for measure in (False, True):
            times[measure].append(step(measure))
    plain, measured = statistics.median(times[False]), statistics.median(times[True])
    extra = measured - plain
    print(f"plain step {plain:.3f} s, measured step {measured:.3f} s (x{measured / plain:.2f}, median of "
          f"{options.steps} each; batch {options.batch_size} x {options.length} tokens)")
    print(f"measuring every {options.logging_steps} steps adds {extra / options.logging_steps / plain:.1%} "
          "to the training time")


if __name__ == "__main__":
    main()
