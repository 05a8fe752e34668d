"""The entry module's kernel and attention flags: parsed, ordered, refused with the allowed names."""

import pytest

from openrecipes.engines.torchtitan.kernels import KERNELS, parse_attention, parse_kernels
from openrecipes.engines.torchtitan.train import EntryOptions, pop_options


def test_kernels_come_back_in_canonical_order():
    assert parse_kernels("liger-rope,liger-rmsnorm") == ("liger-rmsnorm", "liger-rope")
    assert parse_kernels(",".join(reversed(KERNELS))) == KERNELS


@pytest.mark.parametrize("value", ["liger-layernorm", "liger-rope,liger-rope", ""])
def test_bad_kernel_lists_name_the_allowed_ones(value):
    with pytest.raises(SystemExit, match="liger-fused-linear-cross-entropy"):
        parse_kernels(value)


def test_bad_attention_names_the_allowed_ones():
    assert parse_attention("sdpa-flash") == "sdpa-flash"
    with pytest.raises(SystemExit, match="sdpa-cudnn"):
        parse_attention("flash")


def test_our_flags_leave_torchtitans_argv():
    argv = ["train", "--model.name", "qwen3", "--openrecipes.kernels=liger-swiglu,liger-rmsnorm",
            "--openrecipes.attention", "sdpa-flash", "--openrecipes.layers", "4", "--compile.enable"]
    assert pop_options(argv) == EntryOptions(layers=4, kernels=("liger-rmsnorm", "liger-swiglu"),
                                             attention="sdpa-flash")
    assert argv == ["train", "--model.name", "qwen3", "--compile.enable"]
    assert pop_options(argv) == EntryOptions()
