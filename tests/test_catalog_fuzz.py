"""Random YAML documents and randomly mutated recipes: never a traceback, always a verdict with a message."""

from __future__ import annotations

import copy

import yaml
from conftest import GLM_16K, GPTOSS_1, examples, load_seed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openrecipes.catalog.validate import validate_file

SEEDS = [load_seed(GLM_16K), load_seed(GPTOSS_1)]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True),
                    st.text(max_size=20), st.sampled_from(["2026-02-30", "1e400", ".nan", "-1", "0", "x" * 64]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                      max_leaves=12)
FUZZ = settings(max_examples=examples(350), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def paths_of(data, prefix=()):
    if isinstance(data, dict):
        for key, value in data.items():
            yield prefix + (key,)
            yield from paths_of(value, prefix + (key,))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield prefix + (i,)
            yield from paths_of(value, prefix + (i,))


def assert_verdict(path):
    report = validate_file(path)  # must not raise
    if not report.ok:
        assert report.errors and all(e.message for e in report.errors)
    return report


@FUZZ
@given(text=st.text(max_size=300))
def test_random_text_never_crashes(tmp_path, text):
    path = tmp_path / "r.yaml"
    path.write_text(text, encoding="utf-8")
    assert not assert_verdict(path).ok


@FUZZ
@given(doc=values)
def test_random_yaml_documents_never_crash(tmp_path, doc):
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    assert not assert_verdict(path).ok


@FUZZ
@given(seed=st.sampled_from(SEEDS), data=st.data(), value=values)
def test_mutated_recipes_never_crash(tmp_path, seed, data, value):
    recipe = copy.deepcopy(seed)
    path = data.draw(st.sampled_from(sorted(paths_of(recipe), key=str)))
    target = recipe
    for key in path[:-1]:
        target = target[key]
    if data.draw(st.booleans()) and isinstance(target, dict):
        del target[path[-1]]
    else:
        target[path[-1]] = value
    out = tmp_path / "r.yaml"
    out.write_text(yaml.safe_dump(recipe, sort_keys=False), encoding="utf-8")
    assert_verdict(out)
