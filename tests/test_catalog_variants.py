"""Hardware variants: every entry names the part it ran on; validate refuses a missing or unknown variant."""

from __future__ import annotations

import copy

import pytest
from conftest import GPTOSS_1, REPO, load_seed, openrecipes, write_recipe

from openrecipes.catalog.hardware import load_reference_tables, resolve_gpu, variant_of_system
from openrecipes.catalog.validate import recipe_files, validate_file
from openrecipes.errors import UserError

RECORD_TITAN = REPO / "recipes/llama-3.1-8b/h100/record-titan-202412-bf16-8gpu-fsdp8.yaml"
RECORD_MBRIDGE = REPO / "recipes/llama-3.1-8b/h100/record-mbridge-25.11-fp8cs-8gpu-fsdp8-gbs128-mbs1.yaml"


def test_each_type_means_its_rented_variant():
    tables = load_reference_tables()
    assert resolve_gpu("H100", tables) == ("H100", "H100-SXM5-80GB")
    assert resolve_gpu("h200", tables) == ("H200", "H200-SXM-141GB")
    assert resolve_gpu("H100-SXM-96GB-500W", tables) == ("H100", "H100-SXM-96GB-500W")
    spec = tables.variants["H100-SXM-96GB-500W"]
    assert (spec.power_w, spec.memory_gb, spec.memory_bandwidth_tb_s) == (500, 96, 2.4)
    assert tables.gpus["H100"].power_w == 700


def test_an_unknown_gpu_lists_every_type_and_variant():
    with pytest.raises(UserError) as error:
        resolve_gpu("H100-PCIe-40GB")
    assert "H100-SXM5-80GB" in str(error.value) and "H100-SXM-96GB-500W" in str(error.value)


def test_every_entry_names_a_variant_of_its_type():
    tables = load_reference_tables()
    for path in recipe_files([REPO / "recipes"]):
        entry = validate_file(path, tables).entry
        assert entry is not None and tables.variants[entry.gpu.variant].type == entry.gpu.type, path


def test_record_variants_come_from_the_sources_system_names():
    tables = load_reference_tables()
    assert variant_of_system("DGX-H100", tables) == "H100-SXM5-80GB"
    assert validate_file(RECORD_MBRIDGE).entry.gpu.variant == "H100-SXM5-80GB"
    assert validate_file(RECORD_TITAN).entry.gpu.variant == "H100-SXM-96GB-500W"


def _errors(tmp_path, data):
    return {e.field: e.message for e in validate_file(write_recipe(tmp_path, data)).errors}


def test_an_entry_without_a_variant_fails_naming_the_field_and_the_choices(tmp_path):
    data = copy.deepcopy(load_seed(GPTOSS_1))
    del data["gpu"]["variant"]
    message = _errors(tmp_path, data)["gpu.variant"]
    assert "is missing" in message and "H200-SXM-141GB" in message


@pytest.mark.parametrize(("variant", "expected"), [("H200-NVL-141GB", "unknown GPU variant"),
                                                   ("H100-SXM5-80GB", "is a H100, not a H200")])
def test_a_wrong_variant_fails_listing_the_known_ones(tmp_path, variant, expected):
    data = copy.deepcopy(load_seed(GPTOSS_1))
    data["gpu"]["variant"] = variant
    message = _errors(tmp_path, data)["gpu.variant"]
    assert expected in message and "H200-SXM-141GB" in message


def test_a_record_entry_whose_variant_contradicts_its_system_fails(tmp_path):
    data = copy.deepcopy(load_seed(RECORD_TITAN))
    data["gpu"]["variant"] = "H100-SXM5-80GB"
    assert "expected H100-SXM-96GB-500W" in _errors(tmp_path, data)["gpu.variant"]


def test_validate_cli_names_the_file_and_field_of_a_missing_variant(tmp_path):
    data = copy.deepcopy(load_seed(RECORD_MBRIDGE))
    del data["gpu"]["variant"]
    path = write_recipe(tmp_path, data)
    done = openrecipes("validate", path)
    assert done.returncode == 1
    assert path.name in done.stdout + done.stderr and "gpu.variant" in done.stdout
