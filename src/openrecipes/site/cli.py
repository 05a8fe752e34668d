"""CLI of the site room: `openrecipes site build` and `openrecipes serve`."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer

from openrecipes.catalog.cli import CatalogOption
from openrecipes.catalog.paths import default_catalog_root
from openrecipes.catalog.store import load_catalog
from openrecipes.errors import UserError

site_app = typer.Typer(help="The static website built from the catalog.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(site_app, name="site")
    app.command("serve")(serve)


@site_app.command("build")
def build(
    out: Annotated[Path, typer.Option("--out", help="folder to write the site into (new, empty or a previous build)")],
    catalog: CatalogOption = None,
) -> None:
    """Write the static site: works from any static host and offline (no CDN, fonts or external scripts)."""
    from openrecipes.site.build import build_site, output_folder

    output_folder(out)  # a bad --out is told before the catalog is read
    report = build_site(load_catalog(catalog or default_catalog_root()), out)
    page, size = max(report.pages.items(), key=lambda item: item[1])
    typer.echo(f"wrote {len(report.pages)} pages to {report.out} (largest {page}, {size / 1024:.0f} KB); "
               f"open {report.out / 'index.html'}")


def serve(
    catalog: CatalogOption = None,
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="port to listen on (0: any free port)")] = 8000,
    host: Annotated[
        str, typer.Option("--host", help="address to bind; anything but loopback shares the site")] = "127.0.0.1",
) -> None:
    """Build the site into a temporary folder and serve it on http://127.0.0.1:PORT/ until Ctrl-C."""
    from openrecipes.site.build import build_site
    from openrecipes.site.serve import make_server

    if not host or any(not ch.isprintable() or ch.isspace() for ch in host):  # before the site is built
        raise UserError(f"--host {host!r}: give an address or name (127.0.0.1, ::1, 0.0.0.0 to share the site)")
    loaded = load_catalog(catalog or default_catalog_root())
    with tempfile.TemporaryDirectory(prefix="openrecipes-site-") as folder:
        site = Path(folder) / "site"  # its build lock lies beside it, inside the temporary folder
        build_site(loaded, site)
        try:
            server = make_server(site, host, port)
        except (OSError, ValueError, TypeError, OverflowError) as error:  # in use, no such address, a bad host
            reason = getattr(error, "strerror", None) or str(error)
            raise UserError(f"cannot listen on {host}:{port} ({reason}); pick another --host or --port") from None
        shown_host = f"[{host}]" if ":" in host else host
        typer.echo(f"OpenRecipes on http://{shown_host}:{server.server_address[1]}/  (Ctrl-C stops)")
        with server:
            try:
                server.serve_forever()
            except KeyboardInterrupt:
                typer.echo("stopped")
