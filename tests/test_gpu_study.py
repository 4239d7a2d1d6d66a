"""benchmarks/gpu_study.py and scripts/gpu_study.sh (``hf-syntax study`` there) end to end, on this CPU: a study prepared here, run "there" in
a copy of the repository where spaCy cannot be imported and ../shared does not exist (as on the GPU machine),
and its finished run unpacked here for the driver's report."""

import gzip
import json
import os
import shutil
import subprocess
import sys
import tarfile
from importlib import resources
from pathlib import Path

import pytest
import yaml

from test_compare_driver import load_benchmark
from test_training_recipe import tiny_config

from hf_syntax.study.processes import prepare
from hf_syntax.study.records import BlindSource, tokenizer_fingerprint
from hf_syntax.study.report import report
from hf_syntax.study.study_file import Study

pytest.importorskip("ja_ginza", reason="needs GiNZA (the parser the study's feature run reads)")

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = Path(str(resources.files("hf_syntax") / "sample_data" / "small_parallel_enja"))
CODE = ("benchmarks", "scripts", "training", "hf_syntax")
BLIND = (SAMPLE / "heldout.ja").read_text(encoding="utf-8").splitlines(keepends=True)[:6]


def repository(folder: Path) -> Path:
    """A checkout made of links to this one's code, with the study files written into it."""
    folder.mkdir(parents=True)
    for name in CODE:
        (folder / name).symlink_to(ROOT / name)
    return folder


def write_study(repo: Path) -> None:
    """A Transformer_dep+rel run on GiNZA's parse of 40 sample pairs, read from ../shared like the real studies."""
    data = "../shared/data/tiny"
    config = tiny_config(Path("runs/unused"), max_steps=2, eval_steps=2, save_steps=2, logging_steps=1)
    config["data"].update(train={"source": f"{data}/train.ja", "target": f"{data}/train.en"},
                          validation={"source": f"{data}/valid.ja", "target": f"{data}/valid.en"}, test=None,
                          max_train_pairs=None)
    (repo / "tiny.yaml").write_text(yaml.safe_dump(config))
    parsed = ["data.dataset=runs/tiny/data", "data.train=null", "data.validation=null"]
    # The config by its absolute path: the driver reads a relative one in its own checkout first (this one's ROOT).
    (repo / "study.yaml").write_text(yaml.safe_dump({
        "config": str(repo / "tiny.yaml"), "work_dir": "runs/tiny", "results": "results/tiny", "reference": f"{data}/valid.en",
        "source": f"{data}/valid.ja", "baseline": "dep_rel", "common": ["tokenizer.path=runs/tiny/data/tokenizer", "data.max_eval_pairs=8"],
        "prepare": [{"creates": "runs/tiny/data", "command": [
            "hf-syntax", "preprocess", "--source", f"{data}/train.ja", "--target", f"{data}/train.en",
            "--validation-source", f"{data}/valid.ja", "--validation-target", f"{data}/valid.en",
            "--src-parser", "spacy:ja_ginza", "--pretokenized", "--features", "dep_depths", "--vocab-size", "600",
            "--max-length", "32", "--out", "runs/tiny/data"]}],
        "runs": {"dep_rel": {"label": "Transformer_dep+rel", "set": ["model.type=transformer_dep_rel", *parsed]}},
    }))


@pytest.fixture(scope="module")
def study_round_trip(tmp_path_factory):
    top = tmp_path_factory.mktemp("gpu_study")
    shared = top / "shared" / "data" / "tiny"
    shared.mkdir(parents=True)
    with gzip.open(SAMPLE / "train.ja.gz", "rt", encoding="utf-8") as ja, gzip.open(SAMPLE / "train.en.gz", "rt",
                                                                                     encoding="utf-8") as en:
        (shared / "train.ja").write_text("".join(line for _, line in zip(range(40), ja)), encoding="utf-8")
        (shared / "train.en").write_text("".join(line for _, line in zip(range(40), en)), encoding="utf-8")
    for name in ("valid.ja", "valid.en"):
        shutil.copyfile(SAMPLE / name, shared / name)
    (top / "shared" / "data" / "blind").mkdir()
    (top / "shared" / "data" / "blind" / "heldout.ja").write_text("".join(BLIND), encoding="utf-8")

    here = repository(top / "here")
    write_study(here)
    gpu_study = load_benchmark("gpu_study")
    os.chdir(here)
    try:
        prepare(Study.load(Path("study.yaml")))
        gpu_study.prepare(Path("study.yaml"), Path("../shared/data/blind/heldout.ja"), "spacy:ja_ginza", True)
    finally:
        os.chdir(ROOT)

    there = repository(top / "device" / "repo")  # its ../shared is absent, as on the GPU machine
    write_study(there)
    shutil.copytree(here / ".gpu_study", there / ".gpu_study")
    (there / "spacy").mkdir()  # first on the path there (scripts/gpu_env.sh puts the checkout first): no spaCy
    (there / "spacy" / "__init__.py").write_text("raise ImportError('no spaCy on this machine')\n")
    out = top / "out"
    result = subprocess.run(
        ["bash", "scripts/gpu_study.sh", str(out), "300", "study.yaml", "--runs", "dep_rel", "--seeds", "5",
         "--jobs", "1"], cwd=there, env={**os.environ, "PYTHON": sys.executable}, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    os.chdir(here)
    try:
        gpu_study.unpack(Path("study.yaml"), out / "runs.tgz")
        records = report(Study.load(Path("study.yaml")), blind=BlindSource(Path("../shared/data/blind/heldout.ja")))
    finally:
        os.chdir(ROOT)
    return top, here, there, out, records, result.stdout


def test_a_run_trained_without_a_parser_comes_back_as_a_finished_record_with_its_blind_translation(study_round_trip):
    top, here, there, _, records, log = study_round_trip
    check = subprocess.run([sys.executable, "-c", "import spacy"], cwd=there, capture_output=True, text=True)
    assert "no spaCy on this machine" in check.stderr  # there, parsing could not have happened
    assert (there / ".." / "shared").is_symlink()
    (record,) = records
    assert (record["name"], record["seed"], record["model_type"]) == ("dep_rel", 5, "transformer_dep_rel")
    assert record["device"] == "cpu" and record["steps"] == 2 and record["blind"] == "../shared/data/blind/heldout.ja"
    assert record["tokenizer_sha256"] == tokenizer_fingerprint(here / "runs" / "tiny" / "data" / "tokenizer")
    blind = (here / "results" / "tiny" / "blind" / "dep_rel.seed5.txt").read_text(encoding="utf-8").splitlines()
    assert len(blind) == len(BLIND) and any(blind)
    assert "packed 1 finished run(s)" in log
    scored = json.loads((here / "runs/tiny/dep_rel/seed5/reference_cross_entropy.json").read_text())
    assert scored["sentences"] == 100 and record["dev_cross_entropy"] == round(scored["cross_entropy"], 4) > 0


def test_what_comes_back_is_the_record_without_weights_and_is_never_unpacked_twice(study_round_trip, capsys):
    top, here, there, out, _, _ = study_round_trip
    with tarfile.open(out / "runs.tgz") as archive:
        names = archive.getnames()
    assert "runs/tiny/dep_rel/seed5/summary.json" in names and "runs/tiny/dep_rel/seed5/model/config.json" in names
    assert not [name for name in names if name.endswith((".safetensors", ".pt", ".pth", ".bin"))]
    checkpoint = "runs/tiny/dep_rel/seed5/checkpoint-2"  # its save time comes back: a study times epochs by it
    assert int((here / checkpoint).stat().st_mtime) == int((there / checkpoint).stat().st_mtime)
    settings = json.loads((here / "runs/tiny/dep_rel/seed5/driver_settings.json").read_text())
    assert [(entry["threads"], entry["jobs"]) for entry in settings] == [(1, 1)] and settings[0]["reference_seconds"] > 0
    gpu_study = load_benchmark("gpu_study")
    os.chdir(here)
    try:
        with pytest.raises(SystemExit) as stopped:
            gpu_study.main(["unpack", "study.yaml", str(out / "runs.tgz")])
    finally:
        os.chdir(ROOT)
    assert stopped.value.code == 2
    assert "already exist here: move them away first" in capsys.readouterr().err  # not another exit-2 error
    scored = here / "runs/tiny/dep_rel/seed5/reference_cross_entropy.json"  # scored there, where the weights were
    kept = scored.read_text()
    scored.unlink()
    os.chdir(here)
    try:  # a run that came back without weights and without its score has none, and the report still runs
        (record,) = report(Study.load(Path("study.yaml")))
    finally:
        os.chdir(ROOT)
        scored.write_text(kept)
    assert "dev_cross_entropy" not in record and record["dev_bleu_per_epoch"]


def test_prepare_carries_the_data_without_caches_the_shared_files_and_the_blind_trees(study_round_trip):
    top, here, _, _, _, _ = study_round_trip
    prepared = here / ".gpu_study"
    assert sorted(path.relative_to(prepared / "shared").as_posix() for path in (prepared / "shared").rglob("*")
                  if path.is_file()) == ["data/blind/heldout.ja", "data/tiny/train.en", "data/tiny/train.ja",
                                         "data/tiny/valid.en", "data/tiny/valid.ja"]
    with tarfile.open(prepared / "prepared.tar.gz") as archive:
        names = archive.getnames()
    assert "runs/tiny/data/dataset_dict.json" in names and not [name for name in names if "/cache-" in name]
    arguments = (prepared / "compare_args").read_text().split()
    assert arguments == ["--blind", "../shared/data/blind/heldout.ja", "--blind-trees", ".gpu_study/heldout.ja.conllu",
                         "--source-trees", ".gpu_study/valid.ja.conllu"]
    trees = (prepared / "heldout.ja.conllu").read_text(encoding="utf-8")
    assert trees.count("# sent_id") == len(BLIND)
    assert (prepared / "valid.ja.conllu").read_text(encoding="utf-8").count("# sent_id") == 100


def test_a_prepared_data_folder_that_is_a_link_travels_as_its_files(study_round_trip):
    """A checkout whose runs/ data is a link to another (a worktree sharing one parse of the corpus) packs the files
    the link points to: the archive once held the link alone, and the GPU machine had no data."""
    top, here, _, _, _, _ = study_round_trip
    linked = repository(top / "linked")
    write_study(linked)
    (linked / "runs" / "tiny").mkdir(parents=True)
    (linked / "runs" / "tiny" / "data").symlink_to(here / "runs" / "tiny" / "data")
    os.chdir(linked)
    try:
        load_benchmark("gpu_study").prepare(Path("study.yaml"), Path("../shared/data/blind/heldout.ja"), None, False)
    finally:
        os.chdir(ROOT)
    with tarfile.open(linked / ".gpu_study" / "prepared.tar.gz") as archive:
        assert archive.getmember("runs/tiny/data/dataset_dict.json").isfile()


def test_a_study_whose_models_read_no_tree_is_prepared_without_a_parser(study_round_trip):
    _, here, _, _, _, _ = study_round_trip
    os.chdir(here)
    try:
        load_benchmark("gpu_study").prepare(Path("study.yaml"), Path("../shared/data/blind/heldout.ja"), None, False,
                                            out=Path("plain"))
    finally:
        os.chdir(ROOT)
    assert (here / "plain" / "compare_args").read_text().split() == ["--blind", "../shared/data/blind/heldout.ja"]
    assert not list((here / "plain").glob("*.conllu"))


def test_extra_tests_travel_with_a_tree_free_study_and_are_refused_where_they_would_need_the_parser(study_round_trip):
    _, here, _, _, _, _ = study_round_trip
    gpu_study = load_benchmark("gpu_study")
    pair = (Path("../shared/data/tiny/valid.ja"), Path("../shared/data/tiny/valid.en"))
    os.chdir(here)
    try:
        gpu_study.prepare(Path("study.yaml"), Path("../shared/data/blind/heldout.ja"), None, False,
                          out=Path("with_test"), extra_tests=[pair])
        with pytest.raises(gpu_study.StudyError, match="would need the parser there"):
            gpu_study.prepare(Path("study.yaml"), Path("../shared/data/blind/heldout.ja"), "spacy:ja_ginza", True,
                              out=Path("refused"), extra_tests=[pair])
        with pytest.raises(gpu_study.StudyError, match="under ../shared"):
            gpu_study.prepare(Path("study.yaml"), Path("../shared/data/blind/heldout.ja"), None, False,
                              out=Path("refused"), extra_tests=[(Path("study.yaml"), Path("tiny.yaml"))])
    finally:
        os.chdir(ROOT)
    assert (here / "with_test" / "compare_args").read_text().split() == [
        "--blind", "../shared/data/blind/heldout.ja",
        "--extra-test", "../shared/data/tiny/valid.ja", "../shared/data/tiny/valid.en"]
    assert (here / "with_test" / "shared" / "data" / "tiny" / "valid.en").is_file()
    assert not (here / "refused").exists()
