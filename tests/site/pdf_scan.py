"""What a reader of the book's PDF sees, read from the file itself.

One pass over the pages renders each at 40 dpi (pypdfium2, the PDF engine
of Chromium's own viewer) and extracts its text. From the pixels:

- whether the page's last code frame (the grey box with the green bar on
  its left, `div.cell_input` on the website) holds any text: a frame that
  starts at the foot of a page and whose code went on to the next page
  leaves an empty box behind;
- whether anything dark is printed past the right margin (code or an output
  cut at the edge of the sheet).

From the file: its bookmarks, metadata, whether it is tagged, where each
named destination (an element id that a link points at) lands, the pixel
size of every image it holds, and where each of its links leads.
Nothing here knows the book's language: the Chinese edition can scan its
own PDF with the same functions.
"""
import ctypes
import re
from dataclasses import dataclass, field

DPI = 40
# The green bar of a code cell: green well above red and blue.
GREEN_MARGIN = 60
# Ink: darker than the frame's grey (247) and the page's white.
INK = 160


@dataclass
class Sheet:
    number: int
    text: str
    frames: int                 # code frames that start or end on it
    last_frame_empty: bool      # its last (lowest) code frame holds no ink
    last_frame_height: float    # that frame's height, in points
    ink_past_right_margin: int  # dark pixels right of the text column


@dataclass
class Scan:
    sheets: list = field(default_factory=list)
    outline: list = field(default_factory=list)  # (level, title, page)
    metadata: dict = field(default_factory=dict)
    tagged: bool = False
    destinations: dict = field(default_factory=dict)  # name -> page
    images: list = field(default_factory=list)  # (width, height), sorted
    links: list = field(default_factory=list)  # (page, URI or None: within)

    def empty_frame_pages(self):
        return [s.number for s in self.sheets if s.last_frame_empty]


def squeezed(text):
    """A page's text without its whitespace and hyphens: pdfium breaks lines
    (and Chinese text) where the page did, not where the source did, and
    reads the hyphen of a word broken at a line's end ("pre-hook") as
    "\x02"."""
    return re.sub(r"[\s\x02-]+", "", text)


def greenish(image):
    """Where a pixel of an RGB (or BGR) image is green well above its red
    and blue: GREEN_MARGIN above the larger of them. In bytes, without a
    wider copy of the image: a pixel whose red or blue is above 255 -
    GREEN_MARGIN can never be, and is clamped there so the sum fits."""
    import numpy as np

    other = np.maximum(image[:, :, 0], image[:, :, 2])
    np.minimum(other, 255 - GREEN_MARGIN, out=other)
    other += GREEN_MARGIN
    return image[:, :, 1] > other


def last_frame(green):
    """(top row, bottom row, first column right of the bar) of the lowest
    green-barred frame, given where an image is green (greenish), or
    None."""
    import numpy as np

    rows = np.flatnonzero(green.any(axis=1))
    if not len(rows):
        return None
    gaps = np.flatnonzero(np.diff(rows) > 1)
    top = rows[gaps[-1] + 1] if len(gaps) else rows[0]
    bottom = rows[-1]
    # The bar: columns green on (nearly) every row of the run.
    counts = np.count_nonzero(green[top:bottom + 1], axis=0)
    bar = np.flatnonzero(counts >= 0.8 * (bottom - top + 1))
    if not len(bar):
        return None
    return int(top), int(bottom), int(bar.max()) + 1


def frame_runs(green):
    """How many runs of rows with green in them (code frames) a page has."""
    import numpy as np

    rows = np.flatnonzero(green.any(axis=1))
    return 0 if not len(rows) else int(np.count_nonzero(np.diff(rows) > 1)) + 1


def scan(path, right_margin_mm=14.0, text=True):
    """Read the PDF at `path` page by page (see the module's docstring)."""
    import numpy as np
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    pdf = pdfium.PdfDocument(str(path))
    result = Scan()
    result.images = images(path)
    result.links = links(path)
    result.metadata = pdf.get_metadata_dict()
    result.tagged = bool(raw.FPDFCatalog_IsTagged(pdf.raw))
    for item in pdf.get_toc():
        dest = item.get_dest()
        result.outline.append((item.level, item.get_title(),
                               dest.get_index() + 1 if dest else None))
    count = raw.FPDF_CountNamedDests(pdf.raw)
    for index in range(count):
        size = ctypes.c_long(0)
        raw.FPDF_GetNamedDest(pdf.raw, index, None, ctypes.byref(size))
        buffer = ctypes.create_string_buffer(size.value)
        dest = raw.FPDF_GetNamedDest(pdf.raw, index, buffer,
                                     ctypes.byref(size))
        if dest:
            name = buffer.raw[:size.value].decode("utf-16-le").rstrip("\0")
            result.destinations[name] = raw.FPDFDest_GetDestPageIndex(
                pdf.raw, dest) + 1
    scale = DPI / 72
    for index in range(len(pdf)):
        page = pdf[index]
        width, _ = page.get_size()
        image = page.render(
            scale=scale, draw_annots=False, no_smoothtext=True,
            no_smoothpath=True, no_smoothimage=True,
        ).to_numpy()
        # Ink: all three colours darker than INK (channel by channel: a
        # reduction over the colour axis costs several times more).
        dark = image[:, :, 0] < INK
        dark &= image[:, :, 1] < INK
        dark &= image[:, :, 2] < INK
        green = greenish(image)
        edge = int(round((width - right_margin_mm / 25.4 * 72) * scale)) + 1
        frame = last_frame(green)
        empty, height = False, 0.0
        if frame:
            top, bottom, left = frame
            empty = not dark[top:bottom + 1, left:edge].any()
            height = (bottom - top + 1) / scale
        words = ""
        if text:
            textpage = page.get_textpage()
            words = textpage.get_text_bounded()
            textpage.close()
        result.sheets.append(Sheet(
            number=index + 1, text=words, frames=frame_runs(green),
            last_frame_empty=empty, last_frame_height=height,
            ink_past_right_margin=int(np.count_nonzero(dark[:, edge:]))))
        page.close()
    pdf.close()
    return result


def images(path):
    """[(width, height)] in pixels of every image the PDF at `path` holds,
    sorted; an image's transparency (its /SMask, an image too) is part of
    it, not another."""
    import pikepdf

    with pikepdf.open(path) as pdf:
        streams = [o for o in pdf.objects if isinstance(o, pikepdf.Stream)
                   and o.get("/Subtype") == "/Image"]
        masks = {o.SMask.objgen for o in streams if "/SMask" in o}
        return sorted((int(o.Width), int(o.Height)) for o in streams
                      if o.objgen not in masks)


def links(path):
    """[(page, URI)] of every link of the PDF at `path`, in page order; the
    URI is None for a link within the file (to a page or a named
    destination)."""
    import pikepdf

    found = []
    with pikepdf.open(path) as pdf:
        for number, page in enumerate(pdf.pages, start=1):
            for note in page.get("/Annots", []):
                if note.get("/Subtype") != "/Link":
                    continue
                action = note.get("/A")
                uri = (str(action.URI) if action is not None
                       and action.get("/S") == "/URI" else None)
                found.append((number, uri))
    return found


def fonts(path, number, chars=None):
    """{(font name, embedded)} of the characters drawn on page `number`
    (from 1) that `chars` (a predicate on one character) accepts, or of
    all of them: which fonts the text of a page is set in. The name is the
    PDF's (a subset's "ABCDEF+" prefix left out)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    pdf = pdfium.PdfDocument(str(path))
    page = pdf[number - 1]
    textpage = page.get_textpage()
    found = {}
    for index in range(textpage.count_chars()):
        char = chr(raw.FPDFText_GetUnicode(textpage.raw, index))
        if chars is not None and not chars(char):
            continue
        font = raw.FPDFTextObj_GetFont(
            raw.FPDFText_GetTextObject(textpage.raw, index))
        if not font:
            continue
        size = raw.FPDFFont_GetBaseFontName(font, None, 0)
        buffer = ctypes.create_string_buffer(size)
        raw.FPDFFont_GetBaseFontName(font, buffer, size)
        name = buffer.value.decode("latin-1").rpartition("+")[2]
        found[name] = bool(raw.FPDFFont_GetIsEmbedded(font))
    textpage.close()
    page.close()
    pdf.close()
    return set(found.items())
