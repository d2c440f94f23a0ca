"""What a reader of the book's PDF sees, read from the file itself: each page
rendered at 40 dpi with its text (pypdfium2, the engine of Chromium's own PDF
viewer), the bookmarks, metadata, tags and fonts, and (pikepdf) the named
destinations, images and links. Nothing here knows the book's language.
"""
import re
from dataclasses import dataclass

import numpy as np
import pikepdf
import pypdfium2 as pdfium
import pypdfium2.raw as raw

DPI = 40
GREEN_MARGIN = 60  # a code frame's bar: green this far above red and blue
INK = 160  # darker than a code frame's grey (247) and the page's white
RIGHT_MARGIN = 14 / 25.4 * 72  # whole-book.css's, in points


@dataclass
class Sheet:
    number: int
    text: str
    frames: int  # code frames that start or end on it
    # the lowest holds no ink: a frame that starts at the foot of a page
    last_frame_empty: bool  # and whose code goes on to the next
    ink_past_right_margin: int  # dark pixels: code or output cut at the edge


@dataclass
class Scan:
    sheets: list
    outline: list  # (level, title, page)
    metadata: dict
    tagged: bool
    destinations: dict  # an element id a link points at -> its page
    images: list  # (width, height) in pixels, sorted
    links: list  # (page, URI, or None for a link within the file)


def squeezed(text):
    """Text without whitespace and hyphens: pdfium breaks lines where the page
    does, and reads a hyphen there as "\x02"."""
    return re.sub(r"[\s\x02-]+", "", text)


def greenish(image):
    """Where a pixel of an RGB (or BGR) image is green GREEN_MARGIN above its
    red and blue, in bytes: a red or blue above 255 - GREEN_MARGIN never is,
    and is clamped there so that the sum fits."""
    other = np.maximum(image[:, :, 0], image[:, :, 2])
    np.minimum(other, 255 - GREEN_MARGIN, out=other)
    other += GREEN_MARGIN
    return image[:, :, 1] > other


def sheet(number, page):
    """Render one page: its code frames (runs of rows with green in them, the
    bar left of div.cell_input's code) and its ink."""
    scale = DPI / 72
    image = page.render(scale=scale, draw_annots=False, no_smoothtext=True,
                        no_smoothpath=True, no_smoothimage=True).to_numpy()
    # channel by channel: a reduction over the colour axis costs far more
    dark = (image[:, :, 0] < INK) & (image[:, :, 1] < INK) & (
        image[:, :, 2] < INK)
    edge = int(round((page.get_width() - RIGHT_MARGIN) * scale)) + 1
    green = greenish(image)
    rows = np.flatnonzero(green.any(axis=1))
    runs = np.split(rows, np.flatnonzero(np.diff(rows) > 1) + 1) if len(
        rows) else []
    empty = False
    if runs:
        top, bottom = runs[-1][0], runs[-1][-1] + 1
        # the bar: the columns green on (nearly) every row of the frame
        bar = np.flatnonzero(np.count_nonzero(green[top:bottom], axis=0)
                             >= 0.8 * (bottom - top))
        empty = len(bar) > 0 and not dark[top:bottom, bar.max() + 1:edge].any()
    text = page.get_textpage().get_text_bounded()
    return Sheet(number, text, len(runs), empty,
                 int(np.count_nonzero(dark[:, edge:])))


def scan(path):
    """Read the PDF at `path` page by page."""
    pdf = pdfium.PdfDocument(str(path))
    outline = [(item.level, item.get_title(),
                item.get_dest().get_index() + 1 if item.get_dest() else None)
               for item in pdf.get_toc()]
    sheets = [sheet(number, page) for number, page in enumerate(pdf, 1)]
    metadata, tagged = pdf.get_metadata_dict(), pdf.is_tagged()
    pdf.close()
    with pikepdf.open(path) as pdf:
        numbers = {page.objgen: n for n, page in enumerate(pdf.pages, 1)}
        destinations = {name[1:]: numbers[dest[0].objgen]
                        for name, dest in pdf.Root.Dests.items()}
        # an image's transparency (its /SMask) is part of it, not another
        streams = [o for o in pdf.objects if isinstance(o, pikepdf.Stream)
                   and o.get("/Subtype") == "/Image"]
        masks = {o.SMask.objgen for o in streams if "/SMask" in o}
        images = sorted((int(o.Width), int(o.Height)) for o in streams
                        if o.objgen not in masks)
        links = [(number, str(note.A.URI) if note.get("/A", {}).get("/S")
                  == "/URI" else None)
                 for number, page in enumerate(pdf.pages, 1)
                 for note in page.get("/Annots", [])
                 if note.get("/Subtype") == "/Link"]
    return Scan(sheets, outline, metadata, tagged, destinations, images, links)


def fonts(path, number, chars=None):
    """{(font name, embedded)} of the characters drawn on page `number` (from
    1) that `chars` (a predicate on one character) accepts, or of all: which
    fonts the page's text is set in (a subset's "ABCDEF+" left out)."""
    pdf = pdfium.PdfDocument(str(path))
    textpage = pdf[number - 1].get_textpage()
    found = {}
    for index in range(textpage.count_chars()):
        char = chr(raw.FPDFText_GetUnicode(textpage.raw, index))
        textobj = textpage.get_textobj(index)
        if textobj and (chars is None or chars(char)):
            font = textobj.get_font()
            found[font.get_base_name().rpartition("+")[2]] = font.is_embedded
    pdf.close()
    return set(found.items())
