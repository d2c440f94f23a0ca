"""The PDF of the whole book, in both editions, read page by page
(pdf_scan.py): its bookmarks, contents, cover, tags and fonts, its figures
and no other image, and no page that ends in an empty code frame or prints
past its margin. Each edition's build prints its own (site/book_pdf.py,
from Sphinx's singlehtml page of the book)."""
import re
import subprocess
from functools import cache

import pytest
import yaml
from babel.messages.pofile import read_po

import book_pdf
import book_print
import book_zip
import i18n
import pdf_scan
from checks import (CHAPTERS, EDITIONS, PAGES, ROOT, expected_title,
                    normalise, printed_images_not_figures, text_of)
from pdf_scan import squeezed

pytestmark = [pytest.mark.site, pytest.mark.pdf]

CJK = re.compile(r"[\u4e00-\u9fff]")
WHOLE_BOOK = {"en": ROOT / "_build" / "whole-book",
              "zh": book_pdf.whole_book_dir(i18n.ZH_DOCTREES)}


@cache
def scanned(edition):
    return pdf_scan.scan(EDITIONS[edition] / book_pdf.PDF_NAME)


@pytest.fixture(scope="module", params=EDITIONS)
def edition(request, site):
    """Each edition, once its PDF is built (the `site` fixture)."""
    if not book_print.pdf_possible()[0]:
        pytest.skip(f"no PDF: {book_print.pdf_possible()[1]}")
    return request.param


@pytest.fixture(scope="module")
def pdf(edition):
    return scanned(edition)


def page_html(edition):
    return (WHOLE_BOOK[edition] / book_pdf.WHOLE_BOOK).read_text(
        encoding="utf-8")


def site_translation(english_start, edition):
    """The message of book_site.po that starts so, in the edition's
    language."""
    with i18n.SITE_CATALOG.open("rb") as po:
        (message,) = [m for m in read_po(po)
                      if m.id and m.id.startswith(english_start)]
    return message.id if edition == "en" else message.string


def test_every_page_links_the_pdf_from_its_note_and_menu(edition):
    # the pages the crawl reads are built without the PDF (dev.py test);
    # printed, every page's note and every chapter's menu lead to it
    for docname in PAGES:
        page = (EDITIONS[edition] / f"{docname}.html").read_text(
            encoding="utf-8")
        links = re.findall(rf'href="([./]*{re.escape(book_pdf.PDF_NAME)})"',
                           page)
        assert len(links) >= (2 if docname in CHAPTERS else 1), docname


def test_pdf_holds_every_page_of_the_book(pdf):
    assert len(pdf.sheets) >= 10 * len(CHAPTERS), f"{len(pdf.sheets)} pages"
    # the contents link each page: a named destination in the PDF
    assert {f"document-{d}" for d in PAGES[1:]} <= set(pdf.destinations)


def test_pdf_has_no_page_that_ends_in_an_empty_code_frame(pdf):
    # A code cell's frame that starts at the foot of a page while its code
    # goes on to the next leaves an empty box behind (book.css keeps a
    # cell's div.cell_input whole).
    assert sum(sheet.frames for sheet in pdf.sheets) >= 5, "no code frames"
    empty = [sheet.number for sheet in pdf.sheets if sheet.last_frame_empty]
    assert not empty, f"{len(empty)} pages end in an empty code frame: " \
        f"{empty[:40]}"


def test_pdf_holds_the_figures_and_no_other_image(pdf, edition):
    # Chromium prints what PDF cannot draw (a blurred shadow) as a picture
    # of its box, at print resolution: the 100 shadows of the exercises
    # and solutions were 287 JPEGs (book.css leaves shadows off paper).
    problems = printed_images_not_figures(pdf.images, page_html(edition),
                                          WHOLE_BOOK[edition])
    assert not problems, f"{len(problems)}: {problems[:10]}"


def test_links_of_the_printed_page_lead_within_it(site, edition):
    # In the PDF a link to another file of the printed page's folder leads
    # nowhere: a section of another page is a link within the one page
    # (book_pdf.links_within_the_page), an id on it; a figure, its file.
    text = page_html(edition)
    article = text[text.index("<article"):text.rindex("</article>")]
    ids = set(re.findall(r' id="([^"]+)"', text))
    broken = [href for href in re.findall(r' href="([^"]*)"', article)
              if not re.match(r"[a-z]+:", href) and not (
                  href[1:] in ids if href.startswith("#")
                  else (WHOLE_BOOK[edition] / href).is_file())]
    assert not broken, broken[:10]


def test_pdf_prints_nothing_past_the_right_margin(pdf):
    cut = [s.number for s in pdf.sheets if s.ink_past_right_margin]
    assert not cut, f"ink past the right margin on pages {cut[:40]}"


def plain(text):
    """Text to compare with what pdfium reads: no spaces, straight quotes."""
    return squeezed(normalise(text))


def bookmark(docname, edition, squeeze=True):
    number = (f"{CHAPTERS.index(docname) + 1}. " if docname in CHAPTERS
              else "")
    title = normalise(number + expected_title(docname, edition))
    return plain(title) if squeeze else title


# The pages in the order they are printed: the glossary last
# (book_pdf.PrintBook), then the index of definitions.
PRINTED = [d for d in PAGES[1:] if d != book_pdf.GLOSSARY] + [
    book_pdf.GLOSSARY]


def test_pdf_bookmarks_are_the_pages_in_order_where_they_start(pdf, edition):
    # Each page a top-level bookmark, titled as its heading, spaces
    # included (Chromium's own dropped the one before a heading's last
    # `code`: "someone else'sforward"; book_print.print_pdf).
    marks = [(level, normalise(title), page)
             for level, title, page in pdf.outline]
    wanted = [(0, bookmark(d, edition, squeeze=False),
               pdf.destinations[f"document-{d}"]) for d in PRINTED]
    assert [m for m in marks if m in wanted] == wanted, marks
    assert len(marks) >= 5 * len(CHAPTERS)  # and their sections
    assert pdf.destinations["document-" + PRINTED[-1]] < \
        pdf.destinations["book-index"] == marks[-1][2]


def test_pdf_bookmarks_say_each_title_once(pdf):
    # Chromium doubled a heading that opened a sheet: "7.7. 7.7. Parity
    # Parity", "9.2. 9.2. 数据：…数据：…".
    doubled = [title for _, title, _ in pdf.outline
               if re.search(r"(\S.{6,}\S)\s*\1", title)
               or re.match(r"([\d.]+) \1", title)]
    assert not doubled, doubled


def test_pdf_contents_give_the_page_of_every_page(pdf, edition):
    # PrintBook's contents, after the title page and the colophon, with
    # the page each entry starts on (Paged.js's target-counter).
    sheets = [plain(sheet.text) for sheet in pdf.sheets[:4]]
    (contents,) = [text for text in sheets if bookmark(CHAPTERS[0], edition)
                   in text]
    wrong = [d for d in PRINTED if bookmark(d, edition) + str(
        pdf.destinations[f"document-{d}"]) not in contents]
    assert not wrong, contents


def test_pdf_pages_carry_their_number_and_chapter(pdf, edition):
    # whole-book.css's margin boxes: every sheet but the title page has
    # its number at the foot; every sheet of a page of the book, its
    # title at the head, but for the sheet it starts on.
    unnumbered = [s.number for s in pdf.sheets[1:]
                  if str(s.number) not in s.text.split()]
    assert not unnumbered, f"no page number on {unnumbered[:20]}"
    starts = [pdf.destinations[f"document-{d}"] for d in PRINTED] + [
        pdf.destinations["book-index"]]
    heads = [bookmark(d, edition) for d in PRINTED]
    headless = [(head, number) for head, start, end in zip(
        heads, starts, starts[1:]) for number in range(start + 1, end)
        if head not in plain(pdf.sheets[number - 1].text)]
    assert not headless, f"no running head: {headless[:20]}"


INDEX_ENTRY = re.compile(r'<li><a href="#([^"]+)"><code>(.*?)</code></a> '
                         r'<span>(.*?)</span>')


def test_pdf_index_gives_the_page_of_every_definition(pdf, edition):
    # The index of definitions, last: each name the chapters define, what
    # and where it is, and the page of its cell.
    entries = INDEX_ENTRY.findall(page_html(edition))
    assert len(entries) >= 100, len(entries)
    index = plain("".join(s.text for s in pdf.sheets[
        pdf.destinations["book-index"] - 1:]))
    wrong = [(name, what) for target, name, what in entries
             if plain(text_of(name + what)) + str(pdf.destinations[target])
             not in index]
    assert not wrong, f"{len(wrong)} of {len(entries)}: {wrong[:5]}"


def test_pdf_links_lead_within_it_or_to_public_addresses(pdf):
    # Not to the server the page was printed from (the figures linked to
    # http://127.0.0.1:36799/_images/...), nor anywhere else off the web.
    within = [page for page, uri in pdf.links if uri is None]
    assert len(within) >= 100, len(within)
    local = [(page, uri) for page, uri in pdf.links if uri is not None and (
        not uri.startswith("https://")
        or re.match(r"https://(localhost|127\.|\[::1\])", uri))]
    assert not local, local[:10]


def test_pdf_leaves_folded_plotting_code_out(pdf, edition):
    # A folded cell that draws a figure prints one line in place of its
    # code; other folded code prints under a neutral label, with no
    # "Hide code cell source" (or 隐藏代码), no ▼ and no "Click to hide"
    # (print.css).
    text = "".join(sheet.text for sheet in pdf.sheets)
    words = {"en": ("Hide code", "Show code", "Click to"),
             "zh": (i18n.ZH_OVERRIDES["nb_code_prompt_hide"],
                    i18n.ZH_OVERRIDES["nb_code_prompt_show"])}[edition]
    assert not [w for w in words + ("\u25bc",) if w in text]
    note = site_translation("Plotting code: in the notebook.", edition)
    assert text.count(note) >= 5
    assert site_translation("Code folded on the website", edition) in text


def test_pdf_captions_are_not_set_light(pdf, edition):
    # The theme's captions, weight 300, printed in DejaVu Sans ExtraLight.
    html_text = page_html(edition)
    caption = text_of(re.search(r'<span class="caption-number">(.*?)</span>',
                                html_text).group(1))
    page = next(s.number for s in pdf.sheets
                if plain(caption) in plain(s.text))
    used = pdf_scan.fonts(EDITIONS[edition] / book_pdf.PDF_NAME, page)
    assert used and not [name for name, _ in used if "Light" in name], used


def test_pdf_title_page_and_colophon(pdf, edition):
    # The title page: the book's title, subject, authors and version; the
    # colophon after it: what the PDF is, the notebooks, the licences.
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    overrides = i18n.ZH_OVERRIDES if edition == "zh" else {}
    title = squeezed(pdf.sheets[0].text)
    for wanted in (overrides.get("html_title", config["title"]),
                   overrides.get("author", config["author"])):
        assert squeezed(wanted) in title, (wanted, title)
    words = " ".join(pdf.sheets[0].text.split())
    assert re.search(r"[0-9a-f]{7,}\D+\d{4}-\d\d-\d\d", words), words
    cover = squeezed(pdf.sheets[1].text)
    about = "The whole book, from the sources of the website."
    assert squeezed(site_translation(about, edition))[:20] in cover, cover
    assert squeezed(book_zip.ZIP_NAME) in cover
    assert "CCBYSA4.0" in cover and "MIT" in cover


def test_pdf_is_tagged_and_names_its_title_and_author(pdf, edition):
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    overrides = i18n.ZH_OVERRIDES if edition == "zh" else {}
    assert pdf.tagged
    assert pdf.metadata["Title"] == overrides.get("html_title",
                                                  config["title"])
    assert pdf.metadata["Author"] == overrides.get("author",
                                                   config["author"])
    assert "CC BY-SA 4.0" in pdf.metadata["Keywords"]


SOLUTION = re.compile(r'<div class="solution dropdown admonition"[^>]*>\s*'
                      r'<p class="admonition-title">(.*?)</p>\s*'
                      r'<section id="solution-content">(.*?)</section>', re.S)


def test_pdf_prints_every_solution_open_under_its_exercise(pdf, edition):
    # A PDF's text comes in the order it was drawn, not read: the words of
    # a solution are looked for on its title's page and the next.
    sheets = [plain(s.text) for s in pdf.sheets] + [""]
    solutions = SOLUTION.findall(page_html(edition))
    assert len(solutions) >= len(CHAPTERS)
    for title, body in solutions:
        title = plain(text_of(title))
        found = [i for i, text in enumerate(sheets) if title in text]
        assert found, title
        words = plain(text_of(body))[:40]
        assert words and words in sheets[found[0]] + sheets[found[0] + 1], (
            title, words)


@pytest.fixture(scope="module")
def chinese_pdf(site):
    return scanned("zh")


def test_chinese_pdf_sets_its_chapters_in_chinese(chinese_pdf):
    """The chapter's first paragraph, in Chinese, on its first page."""
    pdf, sample = chinese_pdf, "book/10_performance"
    page = (EDITIONS["zh"] / f"{sample}.html").read_text(encoding="utf-8")
    article = page[page.index("<article"):]
    first = text_of(re.search(r"<p>(.*?)</p>", article, re.S).group(1))
    assert len(CJK.findall(first)) >= 10, first
    start = pdf.destinations[f"document-{sample}"]
    text = squeezed(pdf.sheets[start - 1].text + pdf.sheets[start].text)
    assert squeezed(first)[:40] in text


def test_chinese_pdf_embeds_a_chinese_font(chinese_pdf):
    """Every Chinese character of the cover and of a chapter's first page
    is drawn in a font embedded in the file; the fonts that have a name are
    fonts that fontconfig lists for Chinese (fc-list :lang=zh), not a
    fallback that would draw boxes."""
    path = EDITIONS["zh"] / book_pdf.PDF_NAME
    used = set()
    start = chinese_pdf.destinations["document-book/10_performance"]
    for number in (1, start):
        used |= pdf_scan.fonts(path, number, chars=CJK.fullmatch)
    assert used and all(embedded for _, embedded in used), used
    named = {name for name, _ in used if name}
    listed = subprocess.run(["fc-list", ":lang=zh", "postscriptname"],
                            capture_output=True, text=True).stdout
    chinese = set(re.findall(r"postscriptname=(\S+)", listed))
    assert named and named <= chinese, (named, chinese)
