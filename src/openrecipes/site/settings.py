"""The site's one setting file, `site.yaml` at the catalog root: where the "repository" links point.

`repository:` is a web address (https://github.com/owner/openrecipes), a folder relative to the catalog root
(default `.`: the checkout the site is built from, linked as a file:// address), or `none` to hide every
repository link. `files:` optionally gives how one file is addressed, with `{path}` for its repository path
(GitHub: https://github.com/owner/openrecipes/blob/main/{path}); by default a file is `repository/path`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from openrecipes.catalog.yamlio import read_yaml
from openrecipes.errors import UserError

SETTINGS_FILE = "site.yaml"
DEFAULT_REPOSITORY = "."


@dataclass(frozen=True)
class Repository:
    url: str  # the repository's own address
    files: str  # a file's address, with {path}

    def file(self, path: str) -> str:
        return self.files.replace("{path}", quote(path))


def read_repository(catalog_root: Path) -> Repository | None:
    """The repository the links point to, or None when site.yaml says `repository: none`."""
    file = Path(catalog_root) / SETTINGS_FILE
    data = read_yaml(file).data if file.exists() else {}
    if not isinstance(data, dict) or set(data) - {"repository", "files"}:
        raise UserError(f"{file}: expected only the keys repository and files; see docs/site.md")
    repository = str(data.get("repository", DEFAULT_REPOSITORY)).strip()
    if repository.lower() in ("none", ""):
        return None
    scheme = urlsplit(repository).scheme
    if scheme in ("http", "https"):
        url = repository.rstrip("/")
    elif scheme:
        raise UserError(f"{file}: repository: '{repository}' is neither an http(s) address, a folder nor none")
    else:
        folder = (Path(catalog_root) / repository).resolve()
        if not folder.is_dir():
            raise UserError(f"{file}: repository: '{repository}' is not a folder under {catalog_root}; "
                            "give a folder, an https address or none")
        url = folder.as_uri()
    files = str(data.get("files") or url + "/{path}")
    if "{path}" not in files:
        raise UserError(f"{file}: files: '{files}' has no {{path}}; e.g. {url}/blob/main/{{path}}")
    return Repository(url, files)
