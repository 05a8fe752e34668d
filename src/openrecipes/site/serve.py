"""Serving a built site: loopback by default, files under the site folder only, the CSP sent as a header too.

A stranger's request must not crash, hang or exhaust the server: a bad path (a null byte, an over-long or
undecodable one) gets a quiet 400; a client that has not sent its request line and headers HEADER_DEADLINE_S after
it connected (or after its previous answer) is disconnected, however it trickles them (a per-read timeout alone is
reset by every byte: a byte every few seconds would hold a thread for ever); a read or write that stalls for
CONNECTION_TIMEOUT_S ends the connection; at most MAX_THREADS connections are served at once (more wait in the
listen backlog), enough that a hundred slow clients leave threads for the others; nothing is logged unless asked
for.

What it serves is resolved to a real path, `index.html` included, and must lie inside the folder: a symbolic link out
of it (a folder `serve` did not build may hold one) is a 404. Logs, CSVs, YAML and everything under `evidence/` are
sent as `text/plain; charset=utf-8` with `nosniff`, so they open as text and never run, whatever their name.
"""

from __future__ import annotations

import functools
import http.server
import io
import math
import os
import posixpath
import socket
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

from openrecipes.site.build import CSP
from openrecipes.site.evidence_files import EVIDENCE_FOLDER

# The pages' own CSP (a <meta> tag) cannot forbid framing; only a header can.
HEADER_CSP = f"{CSP}; frame-ancestors 'none'"
CONNECTION_TIMEOUT_S = 10.0
HEADER_DEADLINE_S = 5.0  # a browser sends a request's line and headers in one packet
MAX_THREADS = 256
LISTEN_BACKLOG = 128
MAX_PATH_CHARS = 1024  # the site's longest URL is under 200 characters
PLAIN_TEXT = "text/plain; charset=utf-8"


def _quiet() -> bool:
    return not os.environ.get("OPENRECIPES_SERVE_LOG")


class SiteRequestHandler(http.server.SimpleHTTPRequestHandler):
    """Static files from one folder. No directory listings, nothing outside the folder (symlinks included)."""

    server: SiteServer
    timeout = CONNECTION_TIMEOUT_S  # socket timeout: a silent client is disconnected, its thread freed
    default_request_version = "HTTP/1.0"  # every answer, an error to a malformed request too, has a status line
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      **dict.fromkeys((".txt", ".log", ".csv", ".yaml", ".yml", ".sh", ".out", ".jsonl"), PLAIN_TEXT),
                      ".json": "application/json", ".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml"}

    def setup(self) -> None:
        super().setup()
        self._reader = _DeadlineReader(self.connection, self.timeout)
        self.rfile = io.BufferedReader(self._reader)

    def handle_one_request(self) -> None:
        self._reader.deadline = time.monotonic() + self.server.header_deadline_s
        super().handle_one_request()

    def parse_request(self) -> bool:
        parsed = super().parse_request()  # reads the headers
        self._reader.deadline = math.inf  # the answer may take longer (a large file, a slow reader)
        self.connection.settimeout(self.timeout)
        return parsed

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

    def guess_type(self, path) -> str:  # noqa: ANN001 (http.server's signature)
        """Evidence is text, whatever its name: a page or script a contributor shipped as a log never runs."""
        root = Path(self.directory).resolve()
        if Path(path).is_relative_to(root / EVIDENCE_FOLDER):
            return PLAIN_TEXT
        return super().guess_type(path)

    def translate_path(self, path: str) -> str:
        root = Path(self.directory).resolve()
        parts = [p for p in posixpath.normpath(unquote(urlsplit(path).path)).split("/") if p not in ("", ".", "..")]
        outside = str(root / ".outside-the-site-root")
        try:
            target = root.joinpath(*parts).resolve()
            if target.is_dir():
                target = (target / "index.html").resolve()  # an index.html may be a link too
        except (OSError, ValueError, RuntimeError):  # a name too long, a null byte, a symlink loop: not a page
            return outside
        # resolve() followed every symlink: whatever it names must still lie inside the site folder.
        return str(target) if target.is_relative_to(root) else outside

    def list_directory(self, path):  # noqa: ANN001 (http.server's signature)
        self.send_error(404, "No directory listings")
        return None

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (http.server's signature)
        if not _quiet():
            super().log_message(format, *args)


class _DeadlineReader(socket.SocketIO):
    """The connection's reads, each given only the time left until `deadline` (a per-read timeout alone is reset by
    every byte a client trickles)."""

    def __init__(self, connection: socket.socket, read_timeout: float) -> None:
        super().__init__(connection, "rb")
        self.connection, self.read_timeout, self.deadline = connection, read_timeout, math.inf

    def readinto(self, buffer) -> int | None:  # noqa: ANN001 (io's signature)
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request's line and headers came too slowly")
        self.connection.settimeout(min(left, self.read_timeout))
        return super().readinto(buffer)


class SiteServer(http.server.ThreadingHTTPServer):
    """A threading server with a bounded number of threads, a real listen backlog, and IPv6 when the host is one."""

    request_queue_size = LISTEN_BACKLOG
    daemon_threads = True
    block_on_close = False  # no list of finished threads kept (it would grow with every connection)
    header_deadline_s = HEADER_DEADLINE_S

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
