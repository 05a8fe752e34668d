"""The entry module's kernel and attention flags: parsed, ordered, refused with the allowed names."""

import pytest

# The entry module runs where torch does, and imports it: these tests import it when they run (conftest's torch),
# so collecting the suite does not pay torch's import (3 s) in every pytest-xdist worker.
pytestmark = pytest.mark.usefixtures("torch")


def test_kernels_come_back_in_canonical_order():
    from openrecipes.launch.torchtitan.kernels import KERNELS, parse_kernels

    assert parse_kernels("liger-rope,liger-rmsnorm") == ("liger-rmsnorm", "liger-rope")
    assert parse_kernels(",".join(reversed(KERNELS))) == KERNELS


@pytest.mark.parametrize("value", ["liger-layernorm", "liger-rope,liger-rope", ""])
def test_bad_kernel_lists_name_the_allowed_ones(value):
    from openrecipes.launch.torchtitan.kernels import parse_kernels

    with pytest.raises(SystemExit, match="liger-fused-linear-cross-entropy"):
        parse_kernels(value)


def test_bad_attention_names_the_allowed_ones():
    from openrecipes.launch.torchtitan.kernels import parse_attention

    assert parse_attention("sdpa-flash") == "sdpa-flash"
    with pytest.raises(SystemExit, match="sdpa-cudnn"):
        parse_attention("flash")


def test_our_flags_leave_torchtitans_argv():
    from openrecipes.launch.torchtitan.train import EntryOptions, pop_options

    argv = ["train", "--model.name", "qwen3", "--openrecipes.kernels=liger-swiglu,liger-rmsnorm",
            "--openrecipes.attention", "sdpa-flash", "--openrecipes.layers", "4", "--compile.enable"]
    assert pop_options(argv) == EntryOptions(layers=4, kernels=("liger-rmsnorm", "liger-swiglu"),
                                             attention="sdpa-flash")
    assert argv == ["train", "--model.name", "qwen3", "--compile.enable"]
    assert pop_options(argv) == EntryOptions()
