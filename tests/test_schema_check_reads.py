"""`schema --check --root R` reads R's schema file as any catalog file is read: a FIFO is refused without blocking, a
link out of R (to /dev/zero) is refused unread, and the check still passes on the committed schema."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import REPO, openrecipes

SCHEMA = Path("schema/recipe.schema.yaml")


@pytest.mark.parametrize("make", [os.mkfifo, lambda p: p.symlink_to("/dev/zero"),
                                  lambda p: p.symlink_to(REPO / SCHEMA), os.mkdir])
def test_schema_check_refuses_a_fifo_a_device_or_a_link_out_in_one_line(tmp_path, make):
    (tmp_path / "schema").mkdir()
    make(tmp_path / SCHEMA)
    result = openrecipes("schema", "--check", "--root", tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0 and "recipe.schema.yaml" in result.stderr


def test_schema_check_passes_on_the_committed_schema(tmp_path):
    (tmp_path / "schema").mkdir()
    shutil.copy(REPO / SCHEMA, tmp_path / SCHEMA)
    assert openrecipes("schema", "--check", "--root", tmp_path).returncode == 0
