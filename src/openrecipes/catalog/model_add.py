"""`openrecipes model add`: a config.json in, a validated model card and the config beside it out, or nothing."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from openrecipes.atomic import write_all_or_none
from openrecipes.catalog.hardware import ModelCard
from openrecipes.catalog.hf_config import NAME, card_data, counts, load_config, read_shape, sha256_of
from openrecipes.catalog.yamlio import parse_yaml, read_yaml
from openrecipes.errors import UserError
from openrecipes.textfile import shown

CONFIGS = "configs"  # beside the cards: models/configs/<name>.json
HEADER = ("# Model card derived from its config.json by `openrecipes model add`: every count below is recomputed from\n"
          "# that file (src/openrecipes/catalog/hf_config.py); edit the config and derive again, not this card.\n")


@dataclass(frozen=True)
class Added:
    card: ModelCard
    card_path: Path
    config_path: Path


def add_model(config: Path, name: str, out: Path, origin: str | None) -> Added:
    """Derive the card of the model `config` describes; write the config beside it, then the card."""
    if not NAME.fullmatch(name):
        raise UserError(f"--name {ascii(name)[:60]}: use a lowercase slug of letters, digits, '.', '-' or '_' that "
                        "starts with a letter or digit (e.g. llama-3.1-70b); nothing was written")
    kept = out.parent / CONFIGS / f"{name}.json"
    _no_other_card(name, out, kept)  # before the seconds of counting
    source_text, data = load_config(config)
    shape = read_shape(config, data)
    card_dict = card_data(name, shape, counts(config, data, shape), f"{CONFIGS}/{name}.json", sha256_of(source_text),
                          origin or f"given as {shown(config)}")
    text = HEADER + yaml.safe_dump(card_dict, sort_keys=False, width=110, allow_unicode=True)
    try:  # the text as the catalog will read it back
        card = ModelCard.model_validate(parse_yaml(text, out).data)
    except ValidationError as error:  # a config read_shape accepted always makes a valid card; said in one line
        first = error.errors()[0]
        raise UserError(f"{shown(config)}: the card derived from it: {'.'.join(map(str, first['loc']))}: "
                        f"{first['msg']}; this config cannot be counted exactly") from None
    _may_replace(out)
    if os.path.lexists(kept) and (kept.is_symlink() or not kept.is_file()):
        raise UserError(f"{shown(kept)}: exists and is not a regular file; move it away")
    # The config first, then the card: a kill between the two renames leaves a card whose config.sha256 is not its
    # config's, which every command refuses naming the card (catalog/hardware.py), never a card read with another
    # config's counts.
    write_all_or_none([(kept, source_text), (out, text)])
    return Added(card, out, kept)


def _no_other_card(name: str, out: Path, kept: Path) -> None:
    """No other card in the folder has this name or was derived from configs/<name>.json: writing the config would
    change that card's counts under it, and the catalog would hold two cards of one model."""
    for path in sorted(out.parent.glob("*.yaml")):
        if path.resolve() == out.resolve():
            continue
        try:
            other = ModelCard.model_validate(read_yaml(path).data)
        except (UserError, ValidationError):  # not a card; validate reports it
            continue
        if other.name == name or (other.config is not None and (path.parent / other.config.file).resolve()
                                  == kept.resolve()):
            raise UserError(f"--name {name}: {shown(path)} is already the card of {other.name} (its config "
                            f"{shown(kept)}); nothing was written: choose another --name, or --out {shown(path)} "
                            "to derive that card again")


def _may_replace(out: Path) -> None:
    """An existing file at the card's path is replaced only when it is a model card."""
    if not out.exists() and not out.is_symlink():
        if not out.parent.is_dir():
            raise UserError(f"{shown(out)}: the folder {shown(out.parent)} does not exist; create it or choose --out")
        return
    if not out.is_file():
        raise UserError(f"{shown(out)}: exists and is not a regular file; choose another --out")
    try:
        ModelCard.model_validate(read_yaml(out).data)
    except (UserError, ValidationError):
        raise UserError(f"{shown(out)}: exists and is not a model card; it is left as it is: choose another --out "
                        "or move the file") from None
