"""Serving a built site: loopback by default, files under the site folder only, the CSP sent as a header too.

A stranger's request must not crash, hang or exhaust the server: a bad path (a null byte, an over-long or
undecodable one) gets a quiet 400, an idle connection is closed after CONNECTION_TIMEOUT_S, at most MAX_THREADS
connections are served at once (more wait in the listen backlog), and nothing is logged unless asked for.
"""

from __future__ import annotations

import functools
import http.server
import os
import posixpath
import socket
import threading
from pathlib import Path
from urllib.parse import unquote, urlsplit

from openrecipes.site.build import CSP

# The pages' own CSP (a <meta> tag) cannot forbid framing; only a header can.
HEADER_CSP = f"{CSP}; frame-ancestors 'none'"
CONNECTION_TIMEOUT_S = 10.0
MAX_THREADS = 64
LISTEN_BACKLOG = 128
MAX_PATH_CHARS = 1024  # the site's longest URL is under 200 characters


def _quiet() -> bool:
    return not os.environ.get("OPENRECIPES_SERVE_LOG")


class SiteRequestHandler(http.server.SimpleHTTPRequestHandler):
    """Static files from one folder. No directory listings, nothing outside the folder (symlinks included)."""

    timeout = CONNECTION_TIMEOUT_S  # socket timeout: a silent client is disconnected, its thread freed
    default_request_version = "HTTP/1.0"  # every answer, an error to a malformed request too, has a status line
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".yaml": "text/plain; charset=utf-8", ".json": "application/json",
                      ".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml"}

    def end_headers(self) -> None:
        self.send_header("Content-Security-Policy", HEADER_CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def send_head(self):  # noqa: ANN201 (http.server's signature)
        if not self._readable_path():
            self.send_error(400, "Bad request path")
            return None
        return super().send_head()

    def _readable_path(self) -> bool:
        """Short, decodable as UTF-8, and free of control characters (a null byte among them)."""
        if len(self.path) > MAX_PATH_CHARS:
            return False
        try:
            path = unquote(urlsplit(self.path).path, errors="strict")
        except (UnicodeDecodeError, ValueError):
            return False
        return not any(ord(ch) < 0x20 or ch == "\x7f" for ch in path)

    def translate_path(self, path: str) -> str:
        root = Path(self.directory).resolve()
        parts = [p for p in posixpath.normpath(unquote(urlsplit(path).path)).split("/") if p not in ("", ".", "..")]
        outside = str(root / ".outside-the-site-root")
        try:
            target = root.joinpath(*parts).resolve()
            if target.is_dir():
                target = target / "index.html"
        except (OSError, ValueError, RuntimeError):  # a name too long, a null byte, a symlink loop: not a page
            return outside
        # resolve() followed any symlink: whatever it names must still lie inside the site folder.
        return str(target) if target.is_relative_to(root) else outside

    def list_directory(self, path):  # noqa: ANN001 (http.server's signature)
        self.send_error(404, "No directory listings")
        return None

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (http.server's signature)
        if not _quiet():
            super().log_message(format, *args)


class SiteServer(http.server.ThreadingHTTPServer):
    """A threading server with a bounded number of threads, a real listen backlog, and IPv6 when the host is one."""

    request_queue_size = LISTEN_BACKLOG
    daemon_threads = True
    block_on_close = False  # no list of finished threads kept (it would grow with every connection)

    def __init__(self, address: tuple[str, int], handler) -> None:  # noqa: ANN001 (socketserver's signature)
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self._slots = threading.BoundedSemaphore(MAX_THREADS)
        super().__init__(address, handler)

    def process_request(self, request, client_address) -> None:  # noqa: ANN001
        self._slots.acquire()  # at MAX_THREADS, further connections wait in the listen backlog
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address) -> None:  # noqa: ANN001
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request, client_address) -> None:  # noqa: ANN001
        if not _quiet():
            super().handle_error(request, client_address)


def make_server(root: Path, host: str = "127.0.0.1", port: int = 8000) -> SiteServer:
    handler = functools.partial(SiteRequestHandler, directory=str(Path(root).resolve()))
    return SiteServer((host, port), handler)
