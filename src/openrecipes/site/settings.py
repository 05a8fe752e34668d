"""The site's one setting file, `site.yaml` at the catalog root: where the "repository" links point.

`repository:` is the repository's https address (https://github.com/owner/openrecipes) or `none` to hide every
repository link; a served site cannot open a file:// address, so a folder is refused. `files:` gives how one file
is addressed, with `{path}` for its repository path and optionally `{commit}` for the commit the site is built from
(the catalog's git HEAD, so every link is pinned); by default `repository/blob/{commit}/{path}`, GitHub's form.
A catalog without site.yaml links no repository.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from openrecipes.catalog.yamlio import read_yaml
from openrecipes.errors import UserError

SETTINGS_FILE = "site.yaml"
DEFAULT_TOKEN_BUDGET = 1_000_000_000  # the tokens the pages' time-to-train and cost are worked out for
UNPINNED = "main"  # the branch a link names where the catalog is not a git checkout


@dataclass(frozen=True)
class Repository:
    url: str  # the repository's own address
    files: str  # a file's address, with {path} (its {commit} filled in)

    def file(self, path: str, line: int | None = None) -> str:
        address = self.files.replace("{path}", quote(path))
        return f"{address}#L{line}" if line else address


def catalog_commit(catalog_root: Path) -> str:
    """The commit the catalog is checked out at, for links pinned to it; `main` outside a git checkout."""
    try:
        done = subprocess.run(["git", "-C", str(catalog_root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return UNPINNED
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and len(commit) == 40 else UNPINNED


def read_token_budget(catalog_root: Path) -> int:
    """The token budget the boards and Plan pages work time-to-train and cost out for (site.yaml token_budget:)."""
    file = Path(catalog_root) / SETTINGS_FILE
    data = read_yaml(file).data if file.exists() else {}
    budget = data.get("token_budget", DEFAULT_TOKEN_BUDGET) if isinstance(data, dict) else DEFAULT_TOKEN_BUDGET
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise UserError(f"{file}: token_budget: '{budget}' is not a whole number of tokens above 0; "
                        "e.g. token_budget: 1000000000")
    return budget


def read_repository(catalog_root: Path) -> Repository | None:
    """The repository the links point to, or None when site.yaml says `repository: none` or is absent."""
    file = Path(catalog_root) / SETTINGS_FILE
    if not file.exists():
        return None
    data = read_yaml(file).data
    if not isinstance(data, dict) or set(data) - {"repository", "files", "token_budget"}:
        raise UserError(f"{file}: expected only the keys repository, files and token_budget; see docs/site.md")
    repository = str(data.get("repository") or "none").strip()
    if repository.lower() == "none":
        return None
    if urlsplit(repository).scheme != "https" or not urlsplit(repository).netloc:
        raise UserError(f"{file}: repository: '{repository}' is not an https address; give the repository's "
                        "address (https://github.com/OWNER/openrecipes) or none")
    url = repository.rstrip("/")
    files = str(data.get("files") or url + "/blob/{commit}/{path}")
    if "{path}" not in files:
        raise UserError(f"{file}: files: '{files}' has no {{path}}; e.g. {url}/blob/{{commit}}/{{path}}")
    if urlsplit(files).scheme != "https":
        raise UserError(f"{file}: files: '{files}' is not an https address; e.g. {url}/blob/{{commit}}/{{path}}")
    return Repository(url, files.replace("{commit}", catalog_commit(catalog_root)))
