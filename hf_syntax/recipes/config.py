"""Strict experiment configs: YAML/JSON files -> nested dataclasses, rejecting keys nobody reads.

Why strict: a typo such as ``lerning_rate`` in a free-form dict is silently ignored and the run trains with the
default; here it is an error that names the key, where it was found and the closest known key.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import json
import math
import re
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

from hf_syntax.saved_files import decode_utf8

ConfigT = TypeVar("ConfigT")


class ConfigError(ValueError):
    """A config file or override that cannot be used (the message names the key and the fix)."""


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping, naming both lines: PyYAML keeps the last
    one silently, so a second ``training:`` section replaced the first, or a study's second run of a name the first.
    A key that overrides one merged in by ``<<: *anchor`` is not a duplicate."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first_lines = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                if not isinstance(key, typing.Hashable):  # SafeLoader refuses it below
                    continue
                if key in first_lines:
                    raise yaml.constructor.ConstructorError(  # no marks: one line, naming both lines
                        problem=f"the key {key!r} is given twice, on lines {first_lines[key]} and "
                                f"{key_node.start_mark.line + 1} (YAML would keep only the second); merge them into one")
                first_lines[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


def unique_json_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``' ``object_pairs_hook`` refusing a key given twice in one object, which ``json`` (like PyYAML)
    would drop for the second silently."""
    mapping = {}
    for key, value in pairs:
        if key in mapping:
            raise ValueError(f"the key {key!r} is given twice in one object (JSON would keep only the second); merge "
                             f"them into one")
        mapping[key] = value
    return mapping


def read_config_file(path: str | Path) -> dict[str, Any]:
    """A YAML (``.yaml``/``.yml``) or JSON (``.json``) file whose top level is a mapping."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{path} is a folder; give the config file (YAML or JSON), e.g. training/configs/"
                          f"demo_ja_en.yaml")
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    text = decode_utf8(path.read_bytes(), str(path), "Save it as UTF-8 (e.g. iconv -f latin1 -t utf-8, naming its "
                                                     "real encoding).", ConfigError)
    try:
        raw = json.loads(text, object_pairs_hook=unique_json_keys) if path.suffix == ".json" else \
            yaml.load(text, UniqueKeyLoader)
    except (ValueError, yaml.YAMLError) as error:  # ValueError: a JSON error, a key given twice
        raise ConfigError(f"cannot parse {path}: {error}") from error
    if not isinstance(raw, dict):
        raise ConfigError(f"{path} must contain a mapping of config sections at its top level, got {type(raw).__name__}")
    return raw


def apply_overrides(raw: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``section.key=value`` strings (value parsed as YAML, so ``10``, ``true``, ``null`` work) to a copy."""
    result = json.loads(json.dumps(raw))
    for override in overrides:
        dotted_key, separator, value_text = override.partition("=")
        if not separator or not dotted_key:
            raise ConfigError(f"override {override!r} must look like key=value, the key dotted below its section: "
                              f"e.g. training.max_steps=100 in a translation config, max_steps=100 in a GLUE one")
        *parents, leaf = dotted_key.split(".")
        node = result
        for parent in parents:
            if node.get(parent) is None:  # absent, or a section left empty (``features:``)
                node[parent] = {}
            child = node[parent]
            if not isinstance(child, dict):
                raise ConfigError(f"override {override!r}: {parent!r} is a value, not a section")
            node = child
        try:
            node[leaf] = yaml.load(value_text, UniqueKeyLoader)
        except (ValueError, yaml.YAMLError) as error:  # ValueError: a date such as 2020-13-01
            # a key given twice says its own fix; otherwise the text is no YAML value (or meant as a text)
            fix = "" if isinstance(error, yaml.constructor.ConstructorError) else \
                f"; close its brackets and quotes, or quote a text, e.g. --set '{dotted_key}=\"...\"'"
            raise ConfigError(f"override {override!r}: cannot read its value as YAML: {_one_line(error)}{fix}") \
                from None
    return result


def _one_line(error: Exception) -> str:
    """A YAML error in one line: PyYAML's own spans several, quoting the text with a caret under the spot."""
    if isinstance(error, yaml.MarkedYAMLError):
        where = f" at character {error.problem_mark.column + 1}" if error.problem_mark else ""
        return "; ".join(filter(None, (error.context, error.problem))) + where
    return str(error)


def _options(annotation: Any) -> tuple:
    """The members of a union annotation (``int | None`` -> ``(int, NoneType)``), or the annotation alone."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)


def _enum_of(annotation: Any) -> type[enum.Enum] | None:
    """The Enum a ``SomeStrategy | str`` annotation stands for (its string values are the allowed strings)."""
    return next((option for option in _options(annotation)
                 if isinstance(option, type) and issubclass(option, enum.Enum)), None)


def _accepts(annotation: Any, value: Any) -> bool:
    """Whether ``value`` fits a simple annotation (str/int/float/bool/None/dict/list/Literal, enums given as their
    string values, and unions of them)."""
    if annotation is Any:
        return True
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        choices = _enum_of(annotation)
        if choices is not None and isinstance(value, str):
            return value in {member.value for member in choices}
        return any(_accepts(option, value) for option in typing.get_args(annotation))
    if origin is typing.Literal:
        return value in typing.get_args(annotation)
    if annotation is type(None):
        return value is None
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is not None:
        return isinstance(value, origin)
    return isinstance(value, annotation)


INTEGER = re.compile(r"[+-]?\d+")


def _converted(annotation: Any, value: Any) -> Any:
    """``value`` as the number an int/float field expects when YAML left it a string (or as the tuple a tuple field
    expects when YAML gave a list, its items converted the same way).

    YAML 1.1 (PyYAML) reads ``1e-9`` (no dot) or ``1E5`` as strings; passing those on would fail deep inside
    the Trainer. Anything else is returned unchanged.
    """
    options = _options(annotation)
    tuple_type = next((option for option in options if typing.get_origin(option) is tuple), None)
    if isinstance(value, list) and tuple_type is not None:  # YAML has no tuples
        item_type = typing.get_args(tuple_type)[0] if typing.get_args(tuple_type) else Any
        return tuple(_converted(item_type, item) for item in value)
    if not isinstance(value, str) or str in options or _enum_of(annotation) is not None:
        return value
    if int in options and INTEGER.fullmatch(value.strip()):
        return int(value)
    if float in options:
        try:
            return float(value)
        except ValueError:
            return value
    return value


def describe_type(annotation: Any) -> str:
    """A reader's name for an annotation: ``int``, ``float or null``, ``one of ['no', 'steps', 'epoch']``."""
    choices = _enum_of(annotation)
    if choices is not None:
        return f"one of {[member.value for member in choices]}"
    if typing.get_origin(annotation) is typing.Literal:
        return f"one of {list(typing.get_args(annotation))}"
    names = []
    for option in _options(annotation):
        if option is type(None):
            names.append("null")
        elif typing.get_origin(option) is typing.Literal:
            names.append(" or ".join(repr(choice) for choice in typing.get_args(option)))
        else:
            names.append(getattr(typing.get_origin(option) or option, "__name__", str(option)))
    return " or ".join(names)


def check_arguments(values: dict[str, Any], cls: type, where: str, recipe_keys: tuple[str, ...] = ()
                    ) -> dict[str, Any]:
    """``values`` for the dataclass ``cls`` (e.g. ``Seq2SeqTrainingArguments``), checked key by key.

    Unknown keys are errors with the closest known key (``recipe_keys``, the section's keys the recipe reads itself,
    are candidates too: a misspelt one is far more likely than a TrainingArguments field); numbers YAML left as
    strings are converted; a value of the wrong type is an error naming the key and the type the field expects.
    """
    hints = typing.get_type_hints(cls)
    known = {item.name for item in dataclasses.fields(cls)}
    checked = {}
    for key, value in values.items():
        if key not in known:
            close = difflib.get_close_matches(key, [*recipe_keys, *known], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"unknown config key {where}.{key}{hint}: not a {cls.__name__} field")
        value = _converted(hints[key], value)
        if not _accepts(hints[key], value):
            # YAML 1.1 reads an unquoted no/yes/off/on as a boolean: say how to keep the word.
            quote = f" (YAML read the word as {value!r}; quote it, e.g. {key}: 'no')" if isinstance(value, bool) else ""
            raise ConfigError(
                f"{where}.{key} = {value!r} has the wrong type: {cls.__name__}.{key} expects "
                f"{describe_type(hints[key])}{quote}"
            )
        checked[key] = value
    return checked


TRAINING_VALUE_FLOORS = {
    # key: (lowest value, whether that value itself is allowed, a value that trains)
    "learning_rate": (0, False, "5e-4"),
    "per_device_train_batch_size": (1, True, "32"),
    "per_device_eval_batch_size": (1, True, "32"),
    "gradient_accumulation_steps": (1, True, "1"),
    "num_train_epochs": (0, False, "3"),
    "logging_steps": (0, False, "50"),
    "eval_steps": (0, False, "500"),
    "save_steps": (0, False, "500"),
    "warmup_steps": (0, True, "0"),
    "weight_decay": (0, True, "0.0"),
    "max_grad_norm": (0, True, "1.0"),
    # accepted by transformers, then a failure inside torch at the first step (or, for eval_accumulation_steps 0, a
    # ZeroDivisionError at the first evaluation, after training)
    "adam_beta1": (0, True, "0.9"),
    "adam_beta2": (0, True, "0.999"),
    "adam_epsilon": (0, True, "1e-8"),
    "dataloader_num_workers": (0, True, "0"),
    "eval_accumulation_steps": (1, True, "1"),
}
"""TrainingArguments values below which a run cannot train: transformers accepts them and fails (or trains nothing)
only once the data is prepared, or never."""
TRAINING_VALUE_CEILINGS = {"adam_beta1": "0.9", "adam_beta2": "0.999"}
"""TrainingArguments values that must stay below 1 (Adam's decay rates), with a value that trains."""
INFINITY_MEANS_NO_LIMIT = {"max_grad_norm"}  # .inf: no clipping, the gradient norm still logged


def check_finite(where: str, value: Any, example: str | None = None) -> None:
    """Refuse NaN or an infinite number at ``where``: both pass the floor checks (nan <= 0 is False, inf > 0 is True)
    and cannot train. The message names a value that works (``example``), or else the key's default."""
    if not isinstance(value, float) or math.isfinite(value):
        return
    fix = f"e.g. {where}={example}" if example else "or leave the key out for its default"
    problem = "is not a number; give a number" if math.isnan(value) else "cannot train: give a finite number"
    raise ConfigError(f"{where} = {value!r} {problem}, {fix}")


def check_training_values(values: dict[str, Any], where: str = "training") -> None:
    """Refuse a TrainingArguments value no run can train with (``learning_rate: 0``, a batch of 0), naming the key
    and a value that works, before any data is read. ``num_train_epochs`` is unused when ``max_steps`` is set."""
    for key, value in values.items():  # NaN passes every comparison below (nan < 0 is False)
        if isinstance(value, float) and math.isnan(value):
            check_finite(f"{where}.{key}", value)
    for key, (lowest, allowed, example) in TRAINING_VALUE_FLOORS.items():
        value = values.get(key)
        if value is None or (key == "num_train_epochs" and values.get("max_steps", -1) > 0):
            continue
        if not (key in INFINITY_MEANS_NO_LIMIT and value == math.inf):
            check_finite(f"{where}.{key}", value, example)
        if value < lowest or (value == lowest and not allowed):
            raise ConfigError(f"{where}.{key} = {value!r} cannot train: it must be {'>=' if allowed else '>'} "
                              f"{lowest}, e.g. {where}.{key}={example}")
        if key in TRAINING_VALUE_CEILINGS and value >= 1:
            raise ConfigError(f"{where}.{key} = {value!r} cannot train: it must be below 1, e.g. "
                              f"{where}.{key}={example}")
    check_reporting(values.get("report_to"), where)


def check_reporting(report_to, where: str = "training") -> None:
    """Every integration ``report_to`` names must be installed: transformers refused one that is not only when the
    Trainer started, after the tokenizer had trained and the data was prepared."""
    from transformers.integrations.integration_utils import get_available_reporting_integrations

    requested = [report_to] if isinstance(report_to, str) else list(report_to or [])
    available = get_available_reporting_integrations()
    missing = [name for name in requested if name not in ("none", "all", *available)]
    if missing:
        raise ConfigError(f"{where}.report_to names {missing}, which cannot report from this machine (not "
                          f"installed; installed here: {available or 'none'}): install it, or set "
                          f"{where}.report_to=none")


def build_dataclass(cls: type[ConfigT], raw: Any, where: str) -> ConfigT:
    """Instantiate dataclass ``cls`` from ``raw``, recursing into dataclass-typed fields; ``where`` names the spot."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a mapping, got {type(raw).__name__}: {raw!r}")
    hints = typing.get_type_hints(cls)
    fields = {field.name: field for field in dataclasses.fields(cls)}
    unknown = [key for key in raw if key not in fields]
    if unknown:
        key = unknown[0]
        close = difflib.get_close_matches(key, fields, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"unknown config key {where}.{key}{hint}; known keys in {where}: {sorted(fields)}")
    values = {}
    for name, value in raw.items():
        annotation = hints[name]
        nested = [arg for arg in (annotation, *typing.get_args(annotation)) if dataclasses.is_dataclass(arg)]
        value = _converted(annotation, value)
        if nested and value is not None:
            values[name] = build_dataclass(nested[0], value, f"{where}.{name}")
        elif not _accepts(annotation, value):
            raise ConfigError(f"{where}.{name} = {value!r} has the wrong type; expected {describe_type(annotation)}")
        else:
            values[name] = value
    try:
        return cls(**values)
    except TypeError as error:  # a required field is missing
        raise ConfigError(f"{where}: {error}") from error


def load_config(cls: type[ConfigT], path: str | Path | None, overrides: list[str] = ()) -> ConfigT:
    """The dataclass ``cls`` from a YAML/JSON file (or nothing) with ``key=value`` overrides applied to it; the one
    way every recipe reads its config."""
    return build_dataclass(cls, apply_overrides(read_config_file(path) if path is not None else {}, list(overrides)),
                           "config")


RECIPES = ("translation", "glue")
"""The values of a config file's ``recipe:`` key; a file without the key is a translation config."""


def recipe_of(path: str | Path) -> str:
    """The recipe a config file is for: its ``recipe:`` key, ``translation`` when it has none."""
    raw = read_config_file(path)
    recipe = raw.get("recipe", "translation")
    if "recipe" not in raw and "task" in raw:
        raise ConfigError(f"{path} names a GLUE task but no recipe; add the line `recipe: glue` to it")
    check_choice(recipe, RECIPES, f"{path}: recipe")
    return recipe


def check_recipe(recipe: str, expected: str) -> None:
    """A recipe's own config must say it is for that recipe (or nothing): a GLUE file run as translation is refused."""
    if recipe != expected:
        raise ConfigError(f"recipe = {recipe!r}: this config is for the {recipe} recipe, not {expected}; run it with "
                          f"`hf-syntax train --config FILE`, which picks the recipe from this key")


def check_choice(value: Any, choices: tuple, where: str) -> None:
    """Reject a value outside ``choices`` with a message naming the key and the allowed values."""
    if value not in choices:
        raise ConfigError(f"{where} = {value!r} is not allowed; choose one of {list(choices)}")
