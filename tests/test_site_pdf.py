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

pytestmark = pytest.mark.site

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


def test_pdf_holds_every_page_of_the_book(pdf):
    assert len(pdf.sheets) >= 10 * len(CHAPTERS), f"{len(pdf.sheets)} pages"
    # the contents link each page: a named destination in the PDF
    assert {f"document-{d}" for d in PAGES[1:]} <= set(pdf.destinations)


def test_pdf_has_no_page_that_ends_in_an_empty_code_frame(pdf):
    # A code cell's frame that starts at the foot of a page while its code
    # goes on to the next leaves an empty box behind (book.css keeps a
    # cell's div.cell_input whole).
    assert sum(sheet.frames for sheet in pdf.sheets) >= 5, "no code frames"
    empty = pdf.empty_frame_pages()
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


def bookmark(docname, edition):
    number = (f"{CHAPTERS.index(docname) + 1}. " if docname in CHAPTERS
              else "")
    return plain(number + expected_title(docname, edition))


def test_pdf_bookmarks_are_the_pages_in_order_where_they_start(pdf, edition):
    # Spaces aside: Chromium drops the one before a heading's last `code`
    # ("someone else'sforward"), and breaks Chinese text where it likes.
    marks = [(plain(title), page) for _, title, page in pdf.outline]
    wanted = [(bookmark(d, edition), pdf.destinations[f"document-{d}"])
              for d in PAGES[1:]]
    assert [m for m in marks if m in wanted] == wanted, marks
    assert len(marks) >= 5 * len(CHAPTERS)  # and their sections


def test_pdf_contents_list_every_page(pdf, edition):
    # sphinx-book-theme prints a page's contents above it: the whole
    # book's, numbered, for the singlehtml page.
    first = plain(pdf.sheets[0].text)
    missing = [d for d in PAGES[1:] if bookmark(d, edition) not in first]
    assert not missing, first


def test_pdf_cover_names_version_notebooks_and_licences(pdf, edition):
    words = " ".join(pdf.sheets[0].text.split())
    assert re.search(r"[0-9a-f]{7,}\D+\d{4}-\d\d-\d\d", words), words
    cover = squeezed(words)
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
