"""Sphinx extension: lighter pages, with nothing a reader sees changed.

After the build (and after the PDFs are printed from the site as built), in
the HTML output folder:

- Every style sheet under ``_static`` loses the rules that can match no
  element of the site: a selector is dropped when it names a class that no
  page and no script of the site contains, as a word, anywhere. The theme's
  sheets are Bootstrap and every component of pydata-sphinx-theme,
  sphinx-design and myst-nb: 400 kB on every page, of which the book uses a
  fraction. What a script may add at run time stays, since the words of
  every script count (``classList.add("show")``), and so does every class
  that starts with a word of a script ending in a hyphen (Bootstrap builds
  ``bs-tooltip-auto`` from ``bs-``). Dark mode, the phone's drawers, the
  search page and the PDF's page keep every rule they can use.
- Every figure a cell drew (a PNG under ``_images``, 1.5 MB in all) is
  stored again with a palette of 256 colours, when that is smaller and no
  pixel moves by more than FIGURE_TOLERANCE in any channel: a matplotlib
  figure is a few flat colours and their anti-aliased edges, so the palette
  PNG is a third of the size and looks the same, at the same pixels (the
  retina 2x stays). A figure with transparency is left as it is. The
  notebooks, their stored outputs and the PDF keep the PNGs as drawn.
  Quantising takes 0.1 s a figure; the result is kept under the doctree
  folder by the hash of the figure, so a build that meets the same figure
  again (every build but the first) copies it.
"""
import hashlib
import io
import re
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

# The structure of a style sheet: strings and comments (whose braces do
# not count), and the braces and semicolons around rules.
CSS_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|/\*.*?\*/'
                       r"|[{};]", re.S)
LEADING_COMMENTS = re.compile(r"(?:\s*/\*.*?\*/)*\s*", re.S)
# At-rules whose block holds rules (pruned in turn); any other (@font-face,
# @keyframes, @page) is kept as it is.
NESTING = ("@media", "@supports", "@container", "@layer", "@document")
CLASS = re.compile(r"\.(-?[A-Za-z_][\w-]*)")
# The bytes of a word (of a class name): any other byte splits words.
WORD_BYTES = (b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
              b"0123456789_-")
SPLIT_WORDS = bytes(c if c in WORD_BYTES else 32 for c in range(256))
SOURCE_MAP = re.compile(r"\s*/\*# sourceMappingURL=[^*]*\*/\s*$")


def top_level(text):
    """(start, open, close) of each block at the top level of `text`: its
    prelude is text[start:open], its body text[open + 1:close]; statements
    with no block (``@charset "UTF-8";``) are left between them."""
    blocks, depth, start, opened = [], 0, 0, None
    for token in CSS_TOKEN.finditer(text):
        mark = token.group()
        if mark == "{":
            if depth == 0:
                opened = token.start()
            depth += 1
        elif mark == "}":
            depth -= 1
            if depth == 0:
                blocks.append((start, opened, token.start()))
                start = token.end()
        elif mark == ";" and depth == 0:
            start = token.end()
    return blocks


def split_selectors(prelude):
    """A selector list split at its commas, not those inside brackets,
    parentheses or strings."""
    parts, depth, last = [], 0, 0
    for token in re.finditer(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|'
                             r"[\[\]()]|,", prelude):
        mark = token.group()
        if mark in "[(":
            depth += 1
        elif mark in "])":
            depth -= 1
        elif mark == "," and depth == 0:
            parts.append(prelude[last:token.start()])
            last = token.end()
    parts.append(prelude[last:])
    return parts


def required_classes(selector):
    """The classes an element must have for `selector` to match anything:
    those outside parentheses (`:not(.x)` matches without .x) and outside
    attribute selectors and strings. None when the selector escapes a
    character (it is then kept)."""
    if "\\" in selector:
        return None
    bare = re.sub(r'"(?:[^"])*"|\'(?:[^\'])*\'', "", selector)
    bare = re.sub(r"\[[^\]]*\]", "", bare)
    while True:
        inner = re.sub(r"\([^()]*\)", "", bare)
        if inner == bare:
            break
        bare = inner
    return CLASS.findall(bare)


class Words:
    """The words of the site's pages and scripts: a class is in use if it
    is one of them, or starts with one that ends in a hyphen."""

    def __init__(self, words):
        self.words = set(words)
        self.prefixes = tuple(sorted(w for w in self.words
                                     if w.endswith("-") and len(w) > 2))

    def __contains__(self, name):
        return name in self.words or name.startswith(self.prefixes)


def prune_css(text, words, dropped=None):
    """`text` without the rules whose every selector needs a class that is
    not in `words`; at-rules that are left empty go too. The selectors
    left out are appended to `dropped`, a list, when one is given."""
    out, done = [], 0
    for start, opened, close in top_level(text):
        out.append(text[done:start])
        done = close + 1
        prelude, body = text[start:opened], text[opened + 1:close]
        lead = LEADING_COMMENTS.match(prelude).group()
        out.append(lead)
        head = prelude[len(lead):]
        if head.startswith("@"):
            if head.lower().startswith(NESTING):
                body = prune_css(body, words, dropped)
                if not body.strip():
                    continue
            out.append(f"{head}{{{body}}}")
            continue
        kept = []
        for selector in split_selectors(head):
            needed = required_classes(selector)
            if needed is None or all(name in words for name in needed):
                kept.append(selector)
            elif dropped is not None:
                dropped.append(selector.strip())
        if kept:
            out.append(f"{','.join(kept)}{{{body}}}")
    out.append(text[done:])
    return "".join(out)


def own_files(outdir, pattern):
    """The files under `outdir` that match `pattern` (a glob), less those of
    another edition built into a folder of it: the Chinese site, zh/ with
    its own _static, is written by its own build, at the same time as the
    English one under test."""
    others = [p.parent for p in outdir.rglob("_static")
              if p.parent != outdir]
    return [p for p in outdir.rglob(pattern)
            if not any(o in p.parents for o in others)]


def site_words(outdir):
    """Every word of every page and script of this edition (own_files: 5 MB
    of text in 0.15 s: bytes.translate and split, not a regular
    expression)."""
    words = set()
    for path in [*own_files(outdir, "*.html"), *own_files(outdir, "*.js")]:
        words.update(path.read_bytes().translate(SPLIT_WORDS).split())
    return Words(w.decode("ascii") for w in words)


def prune_style_sheets(outdir):
    static = outdir / "_static"
    if not static.is_dir():
        return
    words = site_words(outdir)
    before = after = 0
    for sheet in sorted(static.rglob("*.css")):
        if "mathjax" in sheet.relative_to(static).parts:
            continue
        text = sheet.read_text(encoding="utf-8")
        light = prune_css(text, words)
        before += len(text.encode())
        if light != text:
            # The source map describes the sheet as it was.
            light = SOURCE_MAP.sub("\n", light)
            sheet.write_text(light, encoding="utf-8")
            sheet.with_name(sheet.name + ".map").unlink(missing_ok=True)
        after += len(light.encode())
    logger.info(f"page_weight: style sheets {before:,} -> {after:,} bytes")


# --------------------------------------------------------------------------
# The figures: palette PNGs.

# The most any channel of any pixel may move (of 255). Anti-aliased edges
# of a figure move by 1-5 with 256 colours (MAXCOVERAGE, no dithering).
FIGURE_TOLERANCE = 8
FIGURE_CACHE = "page_weight_figures"  # under the doctree folder


def palette_png(data):
    """The PNG `data` as a 256-colour palette PNG, or None when that would
    be no smaller, move a pixel by more than FIGURE_TOLERANCE, or lose
    transparency."""
    import numpy as np
    from PIL import Image

    image = Image.open(io.BytesIO(data))
    if image.format != "PNG" or image.mode == "P":
        return None
    if image.mode in ("RGBA", "LA"):
        if image.getchannel("A").getextrema()[0] < 255:
            return None
    elif image.mode not in ("RGB", "L"):
        return None
    rgb = image.convert("RGB")
    palette = rgb.quantize(256, method=Image.Quantize.MAXCOVERAGE,
                           dither=Image.Dither.NONE)
    moved = np.abs(np.asarray(palette.convert("RGB"), dtype=np.int16)
                   - np.asarray(rgb, dtype=np.int16)).max()
    if moved > FIGURE_TOLERANCE:
        return None
    out = io.BytesIO()
    keep = {k: image.info[k] for k in ("dpi",) if k in image.info}
    palette.save(out, "PNG", **keep)
    small = out.getvalue()
    return small if len(small) < len(data) else None


def lighten_figures(outdir, cache):
    """Each PNG of `outdir`/_images as palette_png makes it, through
    `cache` (a folder: <sha256 of the figure>.png, empty where the figure
    stays as it is); cache entries no figure used are deleted."""
    images = outdir / "_images"
    if not images.is_dir():
        return
    cache.mkdir(parents=True, exist_ok=True)
    used, before, after = set(), 0, 0
    for path in sorted(images.glob("*.png")):
        data = path.read_bytes()
        entry = cache / (hashlib.sha256(data).hexdigest() + ".png")
        used.add(entry.name)
        if entry.exists():
            small = entry.read_bytes() or None
        else:
            small = palette_png(data)
            entry.write_bytes(small or b"")
        before += len(data)
        if small:
            path.write_bytes(small)
        after += len(small or data)
    for old in cache.glob("*.png"):
        if old.name not in used:
            old.unlink()
    logger.info(f"page_weight: figures {before:,} -> {after:,} bytes")


def build_finished(app, exception):
    if exception is not None or app.builder.name != "html":
        return
    outdir = Path(app.outdir)
    prune_style_sheets(outdir)
    lighten_figures(outdir, Path(app.doctreedir) / FIGURE_CACHE)


def setup(app):
    # Last: after book_files (900) and languages (950) have written the
    # whole-book page and printed the PDFs from the site as built.
    app.connect("build-finished", build_finished, priority=990)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
