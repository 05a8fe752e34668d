"""Recipe and published-entry YAML opens in the browser as text, on `openrecipes serve` and on any plain static host
(`python -m http.server`): the site's links point at a .yaml.txt twin of each file, byte for byte the catalog's;
the .yaml itself stays for tools and the Download link, and `serve` sends it as UTF-8 plain text with nosniff."""

from __future__ import annotations

import functools
import http.server
import re
import threading
import urllib.request
from contextlib import contextmanager

from site_helpers import REPO, served

RECIPE = "recipes/qwen3-8b/h200/torchtitan-stock-fsdp2"
RECORD_PAGE = "models/deepseek-v3/gb200/public-record.html"


@contextmanager
def static_host(root):
    """The standard library's static server (`python -m http.server`), quiet, on a free port."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def _get(url: str) -> tuple[str, str, bytes]:
    with urllib.request.urlopen(url) as response:
        return response.headers["Content-Type"], response.headers.get("X-Content-Type-Options", ""), response.read()


def test_yaml_links_open_as_text_on_a_plain_static_host_and_on_serve(bundled_site):
    out = bundled_site.out
    recipe_page = (out / f"{RECIPE}.html").read_text(encoding="utf-8")
    assert f'href="../../../{RECIPE}.yaml.txt" class="yaml-text"' in recipe_page
    assert f'href="../../../{RECIPE}.yaml" download' in recipe_page  # the real file, for tools
    record_page = (out / RECORD_PAGE).read_text(encoding="utf-8")
    entry_links = re.findall(r'<a class="small" href="([^"]+)">entry YAML</a>', record_page)
    assert entry_links and all(link.endswith(".yaml.txt") for link in entry_links)
    entry = entry_links[0].replace("../", "").removesuffix(".txt")
    for path in (f"{RECIPE}.yaml", entry):
        source = (REPO / path).read_bytes()
        assert (out / f"{path}.txt").read_bytes() == source == (out / path).read_bytes()
    with static_host(out) as base:
        kind, _, body = _get(base + f"{RECIPE}.yaml.txt")
        assert kind.startswith("text/plain") and body == (REPO / f"{RECIPE}.yaml").read_bytes()
    with served(out) as base:
        for path in (f"{RECIPE}.yaml", f"{RECIPE}.yaml.txt", entry):
            kind, sniff, _ = _get(base + path)
            assert (kind, sniff) == ("text/plain; charset=utf-8", "nosniff"), path


def test_summary_points_of_a_plot_link_the_yaml_as_text(bundled_site):
    index = (bundled_site.out / "index.html").read_text(encoding="utf-8")
    links = re.findall(r'href="(recipes/[^"]+\.yaml[^"]*)"', index)
    assert links and all(link.endswith(".yaml.txt") for link in links)
