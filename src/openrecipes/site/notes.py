"""Recipe and model notes as HTML, from a small, safe Markdown subset written by our own code.

Understood (markdown-it-py, every other Markdown rule off): paragraphs, bullet lists ("- "), code spans (`...`),
links written [text](path) to a file of the repository, and bare repository paths (recipes/..., runs/...), which
become links where the file exists. Every piece of the input is escaped before it is placed in the markup, and a
link only ever points where `link` sends a repository path (a recipe page or the repository's file view): never to
an address written in the text, so a note cannot inject markup, script or a foreign link.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import takewhile

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup, escape

# A repository path as notes write it: a top-level folder of the catalog, then path characters.
_PATH = r"(?:recipes|runs|models|hardware|rules|schema|docs|data|benchmarks|patches|scripts|src|tests)/[\w./+-]*\w"
_BARE_PATH = re.compile(r"(?<![\w/.])" + _PATH)

Link = Callable[[str], "str | None"]


class _NoteMarkdown(MarkdownIt):
    """Every link target goes to `link` as written, which says where (if anywhere) it leads."""

    def validateLink(self, url: str) -> bool:  # noqa: N802 (markdown-it's name)
        return True

    def normalizeLink(self, url: str) -> str:  # noqa: N802
        return url


_MARKDOWN = _NoteMarkdown("zero").enable(["list", "backticks", "link", "newline"])


def _anchor(href: str | None, inner: Markup) -> Markup:
    return Markup('<a href="{}">{}</a>').format(href, inner) if href else inner


def _text(text: str, link: Link) -> Markup:
    """Plain text, escaped, with its bare repository paths linked."""
    out, last = [], 0
    for match in _BARE_PATH.finditer(text):
        out += [escape(text[last:match.start()]), _anchor(link(match[0]), escape(match[0]))]
        last = match.end()
    return Markup("").join([*out, escape(text[last:])])


def _inline(tokens: list[Token], link: Link) -> Markup:
    out: list[Markup] = []
    tokens_left = iter(tokens)
    for token in tokens_left:
        if token.type == "code_inline":
            target = link(token.content) if re.fullmatch(_PATH, token.content) else None
            out.append(_anchor(target, Markup("<code>{}</code>").format(token.content)))
        elif token.type == "link_open":
            inner = list(takewhile(lambda t: t.type != "link_close", tokens_left))  # the link_close is consumed too
            out.append(_anchor(link(str(token.attrs["href"])), escape("".join(t.content for t in inner))))
        elif token.type in ("softbreak", "hardbreak"):
            out.append(Markup(" "))
        else:
            out.append(_text(token.content, link))
    return Markup("").join(out)


def inline(text: str, link: Link) -> Markup:
    """One line of text: code spans, repository links and paths marked up, everything else escaped."""
    return _inline(_MARKDOWN.parseInline(text)[0].children or [], link)


def render(text: str, link: Link) -> Markup:
    """Paragraphs and bullet lists of a note; a single line break inside a paragraph or item is a space."""
    blocks: list[Markup] = []
    items: list[Markup] | None = None  # the items of the list being read
    for token in _MARKDOWN.parse(text):
        if token.type == "bullet_list_open":
            items = []
        elif token.type == "bullet_list_close" and items is not None:
            blocks.append(Markup("<ul>{}</ul>").format(Markup("").join(items)))
            items = None
        elif token.type == "inline":
            body = _inline(token.children or [], link)
            if items is not None:
                items.append(Markup("<li>{}</li>").format(body))
            else:
                blocks.append(Markup("<p>{}</p>").format(body))
    return Markup("\n").join(blocks)
