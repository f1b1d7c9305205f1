"""A fetched page as text for a model: HTML turned into Markdown by markdownify, other text
as it came, decoded with the charset the server named (else UTF-8; bad bytes replaced)."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FLATTENED_NOTE",
    "HTML_TYPES",
    "ConvertedPage",
    "decode_text",
    "html_to_markdown",
    "looks_binary",
]

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})

# Elements whose content is no reading matter: scripts, styles, forms' inner workings, media.
_DROPPED = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object")
_BLANK_RUNS = re.compile(r"\n{3,}")
_SNIFFED_BYTES = 8192
_TITLE_CHARS = 300
FLATTENED_NOTE = (
    "[The page nests its HTML too deeply to convert to Markdown; its text follows without "
    "formatting or links.]"
)


def looks_binary(data: bytes) -> bool:
    """Whether bytes of unknown type are not text (a NUL in the first 8 KiB, as git and
    ripgrep decide)."""
    return b"\0" in data[:_SNIFFED_BYTES]


def decode_text(data: bytes, charset: str | None) -> str:
    encoding = "utf-8"
    if charset:
        try:
            encoding = codecs.lookup(charset).name
        except LookupError:
            encoding = "utf-8"
    if data.startswith(codecs.BOM_UTF8):
        encoding = "utf-8-sig"
    return data.decode(encoding, errors="replace")


@dataclass(frozen=True, slots=True)
class ConvertedPage:
    title: str | None
    """The ``<title>``, on one line (``None``: the page has none)."""
    markdown: str
    """The rest of the page (``<head>`` left out)."""


def html_to_markdown(html: str | bytes, base_url: str) -> ConvertedPage:
    """Markdown of ``html`` (bytes when the server named no charset: the page's own
    ``<meta charset>`` then decides); relative links and images are made absolute against
    ``base_url`` so that the model can fetch them. A page nested too deeply for the converter
    (it recurses per element) comes back as plain text after :data:`FLATTENED_NOTE`."""
    from urllib.parse import urljoin

    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text().split())[:_TITLE_CHARS] if title_tag else None
    for element in soup(["head", "title", *_DROPPED]):
        element.decompose()
    for attribute, tags in (("href", ("a", "link")), ("src", ("img",))):
        for tag in soup.find_all(tags):
            value = tag.get(attribute)
            if isinstance(value, str) and value and not value.startswith(("#", "data:")):
                try:
                    tag[attribute] = urljoin(base_url, value)
                except ValueError:
                    continue
    options: dict[str, Any] = {"heading_style": "ATX", "bullets": "-", "strip_document": "strip"}
    try:
        markdown = MarkdownConverter(**options).convert_soup(soup)
    except RecursionError:
        text = "\n".join(line.strip() for line in soup.get_text("\n").splitlines())
        flat = FLATTENED_NOTE + "\n\n" + _BLANK_RUNS.sub("\n\n", text).strip()
        return ConvertedPage(title or None, flat)
    return ConvertedPage(title or None, _BLANK_RUNS.sub("\n\n", markdown).strip())
