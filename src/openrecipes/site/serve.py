"""Serving a built site: loopback by default, files under the site folder only, the CSP sent as a header too."""

from __future__ import annotations

import functools
import http.server
import os
import posixpath
from pathlib import Path
from urllib.parse import unquote, urlsplit

from openrecipes.site.build import CSP


class SiteRequestHandler(http.server.SimpleHTTPRequestHandler):
    """Static files from one folder. No directory listings, nothing outside the folder (symlinks included)."""

    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".yaml": "text/plain; charset=utf-8", ".json": "application/json",
                      ".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml"}

    def end_headers(self) -> None:
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def translate_path(self, path: str) -> str:
        root = Path(self.directory).resolve()
        parts = [p for p in posixpath.normpath(unquote(urlsplit(path).path)).split("/") if p not in ("", ".", "..")]
        target = root.joinpath(*parts).resolve()
        if target.is_dir():
            target = target / "index.html"
        # resolve() followed any symlink: whatever it names must still lie inside the site folder.
        return str(target) if target.is_relative_to(root) else str(root / ".outside-the-site-root")

    def list_directory(self, path):  # noqa: ANN001 (http.server's signature)
        self.send_error(404, "No directory listings")
        return None

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (http.server's signature)
        if os.environ.get("OPENRECIPES_SERVE_LOG"):
            super().log_message(format, *args)


def make_server(root: Path, host: str = "127.0.0.1", port: int = 8000) -> http.server.ThreadingHTTPServer:
    handler = functools.partial(SiteRequestHandler, directory=str(Path(root).resolve()))
    return http.server.ThreadingHTTPServer((host, port), handler)
