"""Shared by the site tests: the bundled and hostile catalogs, and a built site served on a free loopback port."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HOSTILE_CATALOG = REPO / "tests/fixtures/site/hostile-catalog"
HOSTILE_SLUG = "gpt-oss-20b/h200/hostile-recipe"
# The payloads tests/fixtures/site/hostile-catalog carries; each must reach the page as text only.
PAYLOADS = ('<script>window.__pwned=1;alert("script")</script>', '"><img src=x onerror="window.__pwned=1;alert(1)">',
            '</pre></textarea><svg onload="window.__pwned=1;alert(1)">',
            '<a href="javascript:alert(1)" id="injected-link">click</a>')


@contextmanager
def serving(root: Path, host: str = "127.0.0.1"):
    """`openrecipes serve`'s server on a free port of `host`, in a thread; yields the server. It looks for the stop
    request every 20 ms (the standard library's 0.5 s would be most of a short test)."""
    from openrecipes.site.serve import make_server

    server = make_server(root, host, 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def served(root: Path):
    """The folder served on 127.0.0.1 and a free port; yields the base URL."""
    with serving(root) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
