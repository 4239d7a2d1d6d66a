"""Seconds per epoch of the translation recipe against the plain PyTorch loop stock Marian was measured with
(issue 13), in one run: interleaved repeats, ratios rather than absolute claims.

Issue 13 asks the baseline recipe to match the reference per epoch *and per second*. The learning curves
(benchmarks/results/enja_converged/) answer the first half; this script measures the second on the same data and
model size, so that "BLEU after N epochs" converts into "BLEU after N seconds":

  * ``recipe``: optimizer steps of `SyntaxSeq2SeqTrainer` on the baseline of `small_cpu_ja_en.yaml` with the
    recipe's collator and the Trainer's random sampler, and one dev evaluation as the recipe runs it every epoch
    (beam 4, BLEU/chrF through `Trainer.evaluate`);
  * ``recipe_group_by_length``: the same Trainer with ``train_sampling_strategy="group_by_length"`` (less padding);
  * ``reference``: a `MarianMTModel` with the same initial weights, trained by a plain loop as the reference was
    (sentences sorted by source length and cut into batches of 64, the batch order shuffled; Adam (0.9, 0.98),
    eps 1e-9, inverse-sqrt warm-up, clipping at 1.0, label smoothing 0.1), evaluated with `generate` (beam 4) in
    batches of the recipe's eval batch size. Both evaluations translate with the same weights (the recipe model's),
    so they produce the same translations and differ only in the loop around `generate`.

Step times come from inside each run (a callback / the loop's own clock), so the Trainer's per-call setup is not
counted as training. Estimated seconds per epoch = optimizer steps per epoch x mean step time + one evaluation.
Results: benchmarks/results/recipe_speed.{json,md}.

Usage: python benchmarks/speed/recipe_speed.py [--steps 60] [--repeats 3] [--threads 2]
       python benchmarks/speed/recipe_speed.py --tiny     # a minute: checks every path runs, timings meaningless
"""

import argparse
import json
import math
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path

import sacrebleu
import torch
import torch.nn.functional as F
from transformers import TrainerCallback
from transformers.models.marian.modeling_marian import shift_tokens_right

from hf_syntax.cli.common import positive_int
from hf_syntax.convert.marian import to_marian
from hf_syntax.metrics.translation import GeneratedTranslationScorer
from hf_syntax.recipes.translation.data import load_translation_data, tokenize_translation_data
from hf_syntax.recipes.translation.model import build_model
from hf_syntax.recipes.translation.schema import load_recipe_config
from hf_syntax.recipes.translation.tokenization import prepare_tokenizers
from hf_syntax.recipes.translation.trainer import SyntaxSeq2SeqTrainer, collator, training_arguments

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "training" / "configs" / "small_cpu_ja_en.yaml"
RESULTS = Path(__file__).resolve().parents[1] / "results"
TINY = ["data.max_train_pairs=2000", "data.max_eval_pairs=20", "tokenizer.vocab_size=1000"]


class StepClock(TrainerCallback):
    """Wall time of every optimizer step of a Trainer run (data loading and collation included)."""

    def __init__(self):
        self.seconds: list[float] = []

    def on_step_begin(self, args, state, control, **kwargs):
        self._started = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.seconds.append(time.perf_counter() - self._started)


def recipe_trainer(config, encoded, source, target, model, sampling: str) -> tuple[SyntaxSeq2SeqTrainer, StepClock]:
    """The recipe's Trainer as `train_translation` builds it, without evaluation or saving during training."""
    args = training_arguments(config)
    args.train_sampling_strategy = sampling
    clock = StepClock()
    trainer = SyntaxSeq2SeqTrainer(
        model=model, args=args, train_dataset=encoded["train"], eval_dataset=encoded["validation"],
        processing_class=source, data_collator=collator(source, model), callbacks=[clock],
        compute_metrics=GeneratedTranslationScorer(target),
    )
    return trainer, clock


class ReferenceLoop:
    """The plain loop of the reference: length-sorted batches in shuffled order, Adam, inverse sqrt, clip 1.0."""

    def __init__(self, marian, encoded, target, config, seed: int = 0):
        self.model, self.target, self.train = marian, target, encoded["train"]
        self.validation = encoded["validation"]
        self.batch_size = config.training["per_device_train_batch_size"]
        self.eval_batch_size = config.training["per_device_eval_batch_size"]
        self.generation = {"num_beams": config.generation.num_beams,  # the length limit as the recipe sets it
                           "max_length": config.generation.max_new_tokens + 1}
        self.label_smoothing = config.model.kwargs["label_smoothing"]
        warmup = config.training["warmup_steps"]
        self.optimizer = torch.optim.Adam(marian.parameters(), lr=config.training["learning_rate"],
                                          betas=(0.9, config.training["adam_beta2"]),
                                          eps=config.training["adam_epsilon"])
        self.schedule = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda step: min((step + 1) / warmup, math.sqrt(warmup / (step + 1))))
        by_length = sorted(range(len(self.train)), key=lambda index: len(self.train[index]["input_ids"]))
        self.batches = [by_length[start:start + self.batch_size] for start in range(0, len(by_length), self.batch_size)]
        random.Random(seed).shuffle(self.batches)
        self.next_batch = 0

    def _padded(self, rows: list[list[int]], value: int) -> torch.Tensor:
        width = max(map(len, rows))
        return torch.tensor([row + [value] * (width - len(row)) for row in rows])

    def run(self, steps: int) -> list[float]:
        """Train ``steps`` batches; seconds per step (collation included)."""
        config, pad = self.model.config, self.target.pad_token_id
        seconds = []
        self.model.train()
        for _ in range(steps):
            started = time.perf_counter()
            rows = self.train[self.batches[self.next_batch % len(self.batches)]]
            self.next_batch += 1
            input_ids = self._padded(rows["input_ids"], pad)
            labels = self._padded(rows["labels"], -100)
            decoder_input_ids = shift_tokens_right(labels, pad, config.decoder_start_token_id)
            logits = self.model(input_ids=input_ids, attention_mask=(input_ids != pad).long(),
                                decoder_input_ids=decoder_input_ids).logits
            loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100,
                                   label_smoothing=self.label_smoothing)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optimizer.step()
            self.schedule.step()
            self.optimizer.zero_grad(set_to_none=True)
            seconds.append(time.perf_counter() - started)
        return seconds

    def evaluate(self, model) -> float:
        """Beam-4 translation of the dev set by ``model`` and its BLEU, as the reference scored every epoch."""
        model.eval()
        hypotheses = []
        with torch.no_grad():
            for start in range(0, len(self.validation), self.eval_batch_size):
                rows = self.validation[start:start + self.eval_batch_size]
                input_ids = self._padded(rows["input_ids"], self.target.pad_token_id)
                generated = model.generate(input_ids=input_ids,
                                           attention_mask=(input_ids != self.target.pad_token_id).long(),
                                           **self.generation)
                hypotheses += self.target.batch_decode(generated, skip_special_tokens=True)
        references = self.target.batch_decode(
            [[token for token in row if token >= 0] for row in self.validation["labels"]], skip_special_tokens=True)
        return sacrebleu.corpus_bleu(hypotheses, [references]).score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=positive_int, default=60, help="optimizer steps per variant and repeat")
    parser.add_argument("--repeats", type=positive_int, default=3)
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("--tiny", action="store_true", help="2k pairs, 2 steps, 1 repeat; not written to results/")
    options = parser.parse_args()
    if options.tiny:
        options.steps, options.repeats = 2, 1
    torch.set_num_threads(options.threads)

    with tempfile.TemporaryDirectory() as work:
        overrides = [f"output_dir={work}", f"training.max_steps={options.steps}", "training.eval_strategy='no'",
                     "training.save_strategy='no'", "training.load_best_model_at_end=false",
                     "training.logging_strategy='no'", "training.disable_tqdm=true", *(TINY if options.tiny else [])]
        config = load_recipe_config(RECIPE, overrides)
        corpus = load_translation_data(config.data)[0]
        source, target = prepare_tokenizers(config, corpus["train"], training_arguments(config), None)
        encoded = tokenize_translation_data(corpus, source, target, config.data)[0]
        model = build_model(config, source, target)
        marian = to_marian(model)
        trainers = {sampling_name: recipe_trainer(config, encoded, source, target, model, sampling)
                    for sampling_name, sampling in (("recipe", "random"), ("recipe_group_by_length", "group_by_length"))}
        reference = ReferenceLoop(marian, encoded, target, config)

        step_means: dict[str, list[float]] = {name: [] for name in (*trainers, "reference")}
        for _ in range(options.repeats):
            for name, (trainer, clock) in trainers.items():
                clock.seconds.clear()
                trainer.train()
                step_means[name].append(statistics.mean(clock.seconds[1:] or clock.seconds))
            step_means["reference"].append(statistics.mean(reference.run(options.steps)[1:] or [0.0]))

        # Evaluation time depends on how long the translations are, so both sides translate with the same weights
        # (the recipe model's, copied into Marian): the difference is then the Trainer's evaluation loop alone.
        same_weights = to_marian(model)
        eval_seconds: dict[str, list[float]] = {"recipe": [], "reference": []}
        for _ in range(options.repeats):
            for name, evaluate in (("recipe", trainers["recipe"][0].evaluate),
                                   ("reference", lambda: reference.evaluate(same_weights))):
                started = time.perf_counter()
                evaluate()
                eval_seconds[name].append(time.perf_counter() - started)

    steps_per_epoch = math.ceil(len(encoded["train"]) / config.training["per_device_train_batch_size"])
    rows = {}
    for name, means in step_means.items():
        step = statistics.median(means)
        evaluation = statistics.median(eval_seconds["reference" if name == "reference" else "recipe"])
        rows[name] = {"step_seconds": round(step, 4), "eval_seconds": round(evaluation, 2),
                      "epoch_seconds": round(steps_per_epoch * step + evaluation, 1)}
    for row in rows.values():
        row["epoch_time_vs_reference"] = round(row["epoch_seconds"] / rows["reference"]["epoch_seconds"], 3)
        row["step_time_vs_reference"] = round(row["step_seconds"] / rows["reference"]["step_seconds"], 3)
    report = {"steps_per_epoch": steps_per_epoch, "training_pairs": len(encoded["train"]),
              "dev_pairs": len(encoded["validation"]), "steps_timed": options.steps, "repeats": options.repeats,
              "threads": options.threads, "torch": torch.__version__, "machine": platform.machine(), "runs": rows}
    print(json.dumps(report, indent=2))
    if not options.tiny:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "recipe_speed.json").write_text(json.dumps(report, indent=2) + "\n")
        (RESULTS / "recipe_speed.md").write_text(markdown(report))


def markdown(report: dict) -> str:
    lines = [
        "# Seconds per epoch: the translation recipe vs the reference plain loop (issue 13)", "",
        f"Produced by `benchmarks/speed/recipe_speed.py`: {report['training_pairs']} training pairs "
        f"({report['steps_per_epoch']} steps of 64 per epoch), {report['dev_pairs']} dev pairs, "
        f"{report['threads']} threads, mean step time over {report['steps_timed']} steps, median of "
        f"{report['repeats']} interleaved repeats. Ratios < 1 mean faster than the reference.", "",
        "| run | s / step | s / dev evaluation | s / epoch (estimated) | step time vs reference | epoch time vs reference |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, row in report["runs"].items():
        lines.append(f"| {name} | {row['step_seconds']} | {row['eval_seconds']} | {row['epoch_seconds']} | "
                     f"{row['step_time_vs_reference']:.2f}x | {row['epoch_time_vs_reference']:.2f}x |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
