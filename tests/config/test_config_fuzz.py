"""Random YAML for the variant, study and protocol loaders: each document either loads or is refused with
one ConfigError line, in bounded time and memory (no traceback, no expansion of what it holds)."""
from __future__ import annotations

import dataclasses
import shutil
import time
import tracemalloc
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppo.config.errors import ConfigError
from ppo.config.experiments import load_variant
from ppo.config.protocols import SETTINGS, load_protocol
from ppo.config.run_config import ALGORITHM_SETTINGS, RunConfig
from ppo.config.settings import Objective
from ppo.pipeline.study import SCALE_KEYS, STUDY_KEYS, load_study

ROOT = Path(__file__).resolve().parents[2]
FIELDS = sorted({f.name for cls in (RunConfig, Objective, *ALGORITHM_SETTINGS.values()) for f in dataclasses.fields(cls)}
                | STUDY_KEYS | SCALE_KEYS | set(SETTINGS) | {"label", "preset", "overrides", "paper_row", "setting", "param"})
WORDS = ["ppo_mujoco_paper", "trpo_mujoco", "ppo_atari_paper", "Hopper-v5", "Pendulum-v1", "ALE/Pong-v5", "clip_0.2",
         "clip_*", "no_clip", "smoke", "paper2017", "../x", "$(touch PWNED)", "a b", "", "ε"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=-10**30, max_value=10**30),
                    st.floats(), st.text(max_size=20), st.sampled_from(WORDS))
keys = st.one_of(st.sampled_from(FIELDS), st.text(max_size=10), st.integers(), st.booleans(), st.none())
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(keys, inner, max_size=4)), max_leaves=20)
# Text near YAML's syntax: anchors, aliases, tags, flow collections, block scalars, complex keys.
raw_yaml = st.text(alphabet="{}[]:,&*!|>'\"-? \n#abx01.~\\%@`\t", max_size=200)


def either(*options):
    return st.one_of(*options, values)


# Lines that end a document with a hostile value in one of its fields: a cycle, an alias bomb, deep nesting.
BOMB = "b0: &b0 [x, x, x, x, x, x, x, x]\n" + "".join(f"b{i}: &b{i} [{', '.join([f'*b{i - 1}'] * 8)}]\n" for i in range(1, 9))
hostile = st.tuples(st.sampled_from(FIELDS), st.sampled_from(["&c [*c]", "&c {k: *c}", "*b8", "[" * 3000 + "]" * 3000,
                                                              "9" * 5000, "!!binary aGk=", "!!set {a, b}"]))


def document(structured) -> st.SearchStrategy[str]:
    dumped = structured.map(lambda d: yaml.safe_dump(d, allow_unicode=True))
    with_hostile = st.tuples(dumped, hostile).map(lambda t: BOMB + t[0] + f"{t[1][0]}: {t[1][1]}\n")
    return st.one_of(dumped, raw_yaml, st.tuples(dumped, raw_yaml).map("".join), with_hostile)


claims = st.fixed_dictionaries({}, optional={  # ppo/config/experiments.py load_claim
    "direction": either(st.sampled_from(["better", "worse", "none"])),
    "tasks": either(st.lists(st.sampled_from(["Hopper", "HalfCheetah", "Hopper-v5", "", "a b"]), max_size=3)),
    "margin": either(st.floats(min_value=-1, max_value=2)),
    "mechanism": either(st.fixed_dictionaries({}, optional={
        "stat": either(st.sampled_from(["kl", "approx_kl", "early_stop_fraction", "kl_div"])),
        "op": either(st.sampled_from(["<", ">", ">="])), "value": either(st.just("anchor"), st.floats())}))})
variant_docs = document(st.fixed_dictionaries(
    {"label": either(st.just("fuzz")), "preset": either(st.sampled_from(WORDS[:3]))},
    optional={"overrides": st.dictionaries(keys, values, max_size=5), "paper_row": values, "claim": either(claims)}))
study_docs = document(st.fixed_dictionaries({
    "tasks": either(st.lists(st.sampled_from(WORDS[3:6]), min_size=1, max_size=2)),
    "variants": either(st.lists(st.sampled_from(["clip_0.2", "no_clip", "fuzz*", "a2c"]), min_size=1, max_size=2)),
    "anchor": either(st.just("clip_0.2")),
    "scales": either(st.fixed_dictionaries({"smoke": either(st.fixed_dictionaries(
        {"label": either(st.just("smoke")), "total_steps": either(st.just(4096)), "seeds": either(st.just(1))},
        optional={"tasks": values, "reduced": values}))}))},
    optional={"report": values}))
protocol_docs = document(st.fixed_dictionaries({
    "description": values,
    "settings": either(st.dictionaries(st.sampled_from(SETTINGS), scalars, max_size=len(SETTINGS))),
    "sources": either(st.dictionaries(st.sampled_from(SETTINGS), scalars, max_size=len(SETTINGS)))}))

SECONDS, BYTES = 10.0, 64 * 2**20
FUZZ = settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def experiments(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fuzz") / "experiments"
    shutil.copytree(ROOT / "experiments", folder)
    return folder


def loads_or_refuses(load) -> None:
    tracemalloc.start()
    start = time.perf_counter()
    try:
        load()
    except ConfigError as err:
        message = str(err)
        assert message and "\n" not in message and len(message) < 3000, message[:3000]
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert time.perf_counter() - start < SECONDS
    assert peak < BYTES, f"{peak / 2**20:.0f} MiB"


@FUZZ
@given(text=variant_docs)
def test_variant_loader(experiments, text):
    (experiments / "variants" / "fuzz.yaml").write_text(text)
    loads_or_refuses(lambda: load_variant("fuzz", experiments, total_steps=4096))


@FUZZ
@given(text=study_docs)
def test_study_loader(experiments, text):
    (experiments / "studies" / "fuzz.yaml").write_text(text)
    loads_or_refuses(lambda: load_study("fuzz", "smoke", None, experiments))


@FUZZ
@given(text=protocol_docs)
def test_protocol_loader(experiments, text):
    (experiments / "protocols" / "fuzz.yaml").write_text(text)
    loads_or_refuses(lambda: load_protocol("fuzz", experiments))
