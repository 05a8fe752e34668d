"""Recipe and model notes as HTML, from a small, safe Markdown subset written by our own code.

Understood: paragraphs (blank lines), bullet lists ("- "), code spans (`...`), links written [text](path) to a
file of the repository, and bare repository paths (recipes/..., runs/...), which become links where the file
exists. Every piece of the input is escaped before it is placed in the markup, and a link only ever points
where `link` sends a repository path (a recipe page or the repository's file view): never to an address
written in the text, so a note cannot inject markup, script or a foreign link.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from markupsafe import Markup, escape

# A repository path as notes write it: a top-level folder of the catalog, then path characters.
_PATH = r"(?:recipes|runs|models|hardware|rules|schema|docs|data|benchmarks|patches|scripts|src|tests)/[\w./+-]*\w"
_INLINE = re.compile(r"`(?P<code>[^`]+)`|\[(?P<text>[^\]]+)\]\((?P<target>[^)\s]+)\)"
                     r"|(?P<path>(?<![\w/.])" + _PATH + ")")
_BULLET = re.compile(r"^\s*[-*]\s+")

Link = Callable[[str], "str | None"]


def _anchor(href: str | None, inner: Markup) -> Markup:
    return Markup('<a href="{}">{}</a>').format(href, inner) if href else inner


def inline(text: str, link: Link) -> Markup:
    """One line of text: code spans, repository links and paths marked up, everything else escaped."""
    out, last = [], 0
    for match in _INLINE.finditer(text):
        out.append(escape(text[last:match.start()]))
        last = match.end()
        if match["code"] is not None:
            code = match["code"]
            target = link(code) if re.fullmatch(_PATH, code) else None
            out.append(_anchor(target, Markup("<code>{}</code>").format(code)))
        elif match["text"] is not None:
            out.append(_anchor(link(match["target"]), escape(match["text"])))
        else:
            out.append(_anchor(link(match["path"]), escape(match["path"])))
    out.append(escape(text[last:]))
    return Markup("").join(out)


def render(text: str, link: Link) -> Markup:
    """Paragraphs and bullet lists of a note; a single line break inside a paragraph or item is a space."""
    blocks = []
    for block in re.split(r"\n\s*\n", text.strip()):
        lines = [line for line in block.splitlines() if line.strip()]
        if lines and _BULLET.match(lines[0]):
            items: list[str] = []
            for line in lines:
                if _BULLET.match(line):
                    items.append(_BULLET.sub("", line))
                else:
                    items[-1] += " " + line.strip()
            body = Markup("").join(Markup("<li>{}</li>").format(inline(item, link)) for item in items)
            blocks.append(Markup("<ul>{}</ul>").format(body))
        elif lines:
            blocks.append(Markup("<p>{}</p>").format(inline(" ".join(line.strip() for line in lines), link)))
    return Markup("\n").join(blocks)
