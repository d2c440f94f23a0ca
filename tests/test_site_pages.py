"""Every page of both editions in a real browser.

Each edition is read twice: forwards by its "next" links in light mode on a
wide screen (1400 px), from the site's root; backwards by its "previous" links
in dark mode on a phone (390 px, touch), where a section of the Contents and
a solution's title are tapped on every chapter. Each page must load with no
console error, no failed request and no request that leaves the machine; show
its title in its edition's language; render its math (no stray backslash)
and highlight its code; load every image, with alt text; fit its outputs in
their box on the wide screen and its width on the phone, where the sidebar
buttons open the chapter list and the Contents; and lead to the same page in
the other edition. The checks are in checks.py (JavaScript in js/).
"""
import os
import re
from functools import cache
from urllib.parse import urljoin, urlparse

import pytest
import yaml

import book_pdf
import book_zip
from checks import (ANSWERED, CHAPTERS, EDITIONS, PAGES, ROOT,
                    alt_is_a_description, contents_drawer_after_a_tap,
                    english_chrome, expected_title, figures_cut_without_cue,
                    js, new_context, normalise, page_id,
                    solution_after_tapping_its_title, source_of, translations)

pytestmark = pytest.mark.site

WIDE = {"width": 1400, "height": 1000}     # a desktop: the widest column
PHONE = {"width": 390, "height": 844}      # a phone: sidebars become dialogs
SCREENS = {  # the screen, its colour scheme, the way through the book
    "wide": (WIDE, "light", "a.right-next", {}),
    "phone": (PHONE, "dark", "a.left-prev",
              {"is_mobile": True, "has_touch": True}),
}
SHOTS = ROOT / "_build" / "screenshots"
CJK = re.compile(r"[\u4e00-\u9fff]")


def cases(docnames, screens=tuple(SCREENS)):
    return [pytest.param(edition, docname, screen,
                         id=f"{edition}-{page_id(docname)}-{screen}")
            for edition in EDITIONS for docname in docnames
            for screen in screens]


def follow(page, selector):
    """Click a navigation link like a reader; return the page it opened."""
    link = page.locator(selector)
    if not link.count():
        return None
    with page.expect_navigation(wait_until="load"):
        link.first.click()
    return page.url


def walk(browser, base, edition, screen):
    """Read the edition on `screen` (SCREENS); return {docname: what the
    page showed, "walked": the pages the links led to, and what the last
    page's buttons did}."""
    viewport, scheme, selector, options = SCREENS[screen]
    phone = screen == "phone"
    context, page, recorder = new_context(
        browser, base, ANSWERED, viewport=viewport, color_scheme=scheme,
        **options)
    order = PAGES if not phone else PAGES[::-1]
    seen, walked = {}, []
    for i, docname in enumerate(order):
        url = urljoin(base, docname + ".html")
        if i == 0 and not phone:
            # The reader arrives at the site's root, which redirects.
            page.goto(base, wait_until="load")
            page.wait_for_url(re.compile(r"book/intro\.html$"))
        elif i == 0:
            page.goto(url, wait_until="load")
        else:
            walked.append(follow(page, selector))
        if page.url != url:  # the link led elsewhere, or nowhere
            page.goto(url, wait_until="load")
        info = page.evaluate(js("inspect"), viewport["width"] if phone
                             else None)
        if edition == "zh" and not phone:
            info["english"] = page.evaluate(js("english"))
        if os.environ.get("BOOK_SCREENSHOTS") == "1":
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(type="jpeg", quality=80, path=str(
                SHOTS / f"{edition}-{page_id(docname)}-{screen}.jpg"))
        if phone and docname in CHAPTERS:
            info["drawer"] = contents_drawer_after_a_tap(page)
            info["solution"] = solution_after_tapping_its_title(page)
        info["problems"] = recorder.take()
        seen[docname] = info
    seen["walked"] = walked
    if not phone:
        # On the last page, on the wide screen: the sidebar button folds
        # the chapter list away, and the theme switch goes auto -> dark for
        # a reader whose system is light.
        seen["fold"] = page.evaluate(js("fold_sidebar"))
        modes = []
        for _ in range(3):
            page.locator("button.theme-switch-button").first.click()
            modes.append(page.evaluate(
                "document.documentElement.dataset.theme"))
        seen["switch"] = modes, recorder.take()
    else:
        page.goto(urljoin(base, "genindex.html"), wait_until="load")
        seen["genindex"] = (page.evaluate(js("inspect"), PHONE["width"]),
                            recorder.take())
        if edition == "zh":
            seen["genindex_english"] = page.evaluate(js("english"))
    context.close()
    return seen


@pytest.fixture(scope="session")
def visits(browser, site):
    """visits(edition, screen): the walk of walk(), made once."""
    return cache(lambda edition, screen: walk(browser, site[edition],
                                              edition, screen))


def shown(visits, edition, docname, screen):
    return visits(edition, screen)[docname]


# --------------------------------------------------------------------------
# Every page, on both screens.

@pytest.mark.parametrize("edition,docname,screen", cases(PAGES))
def test_page_loads_with_no_error_and_no_failed_request(visits, edition,
                                                        docname, screen):
    errors, failed, external = shown(visits, edition, docname,
                                     screen)["problems"]
    assert not errors, errors
    assert not failed, failed
    assert not external, ("requests that would leave the machine", external)


@pytest.mark.parametrize("edition,docname,screen", cases(PAGES))
def test_page_has_one_search_box(visits, edition, docname, screen):
    # The second, empty navbar of sphinx-book-theme #999 had its own.
    assert shown(visits, edition, docname, screen)["searchBoxes"] == 1


@pytest.mark.parametrize("edition,docname,screen", cases(PAGES))
def test_page_leads_to_the_same_page_in_the_other_edition(
        visits, site, edition, docname, screen):
    switch = shown(visits, edition, docname, screen)["language"]
    other = "zh" if edition == "en" else "en"
    assert switch and switch["href"] == site[other] + docname + ".html"
    assert switch["target"] is None, "the switch opens a new tab"


@pytest.mark.parametrize("edition,docname,screen", cases(PAGES, ["wide"]))
def test_page_shows_its_title(visits, edition, docname, screen):
    info = shown(visits, edition, docname, screen)
    assert info["headingVisible"]
    assert normalise(info["title"]) == expected_title(docname, edition)
    tab = normalise(info["documentTitle"])  # with _toc.yml's number
    if info["sectionNumber"]:
        tab = tab.removeprefix(info["sectionNumber"] + " ")
    assert tab.startswith(expected_title(docname, edition))


RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\$[^$\s][^$\n]*\$")


@pytest.mark.parametrize("edition,docname,screen", cases(PAGES, ["wide"]))
def test_page_renders_its_math(visits, edition, docname, screen):
    info = shown(visits, edition, docname, screen)
    assert not RAW_TEX.findall(info["prose"]), "TeX left unrendered"
    if info["mathCount"]:
        assert info["mathjaxLoaded"], "MathJax did not load"
        assert info["mathRendered"] == info["mathCount"]


@pytest.mark.parametrize("edition,docname,screen", cases(PAGES, ["wide"]))
def test_rendered_math_shows_no_backslash(visits, edition, docname, screen):
    # A backslash in rendered math is TeX that MathJax did not read, such
    # as `\_` inside `\text{}` ("fan\_in").
    stray = [m["text"] for m in shown(visits, edition, docname,
                                      screen)["mathText"]
             if "\\" in m["text"] or m["backslashGlyphs"]]
    assert not stray, f"math shows a backslash: {stray}"


# Lexers of stored outputs and plain blocks, not coloured. "default" is a
# fence with no language: coloured as Python where it parses, else plain.
PLAIN_LEXERS = {"none", "text", "myst-ansi", "ipythontb", "output",
                "default"}


@pytest.mark.parametrize("edition,docname,screen", cases(PAGES, ["wide"]))
def test_page_code_is_highlighted_with_copy_buttons(visits, edition,
                                                    docname, screen):
    code = [b for b in shown(visits, edition, docname, screen)["blocks"]
            if b["lexer"] not in PLAIN_LEXERS]
    if docname in CHAPTERS:
        assert any(b["cell"] for b in code), "no code cell on a chapter"
    bad = [f"not highlighted: {b}" for b in code if not b["coloured"]]
    bad += [f"no copy button: {b}" for b in code if not b["copy"]]
    assert not bad, bad


@pytest.mark.parametrize("edition,docname,screen", cases(CHAPTERS, ["wide"]))
def test_code_cells_show_they_scroll_and_shrink_on_a_phone(
        visits, edition, docname, screen):
    # a phone's column holds about 40 characters of 14 px code, 48 of 12 px
    phone, wide = ([b for b in shown(visits, edition, docname, s)["blocks"]
                    if b["cell"]] for s in ("phone", "wide"))
    assert phone and all(b["cue"] for b in phone + wide)
    assert {b["px"] for b in phone} == {12}
    assert {b["px"] for b in wide} == {14}


@pytest.mark.parametrize("edition,docname,screen", cases(PAGES, ["wide"]))
def test_page_loads_every_image(visits, edition, docname, screen):
    images = shown(visits, edition, docname, screen)["images"]
    assert not [i["src"] for i in images if not i["ok"]]


@pytest.mark.parametrize("edition,docname,screen", cases(PAGES, ["wide"]))
def test_page_images_have_alt_text_that_is_not_a_path(visits, edition,
                                                      docname, screen):
    # myst-nb writes the file path as alt text unless the cell's metadata
    # gives one: "mystnb": {"image": {"alt": "..."}}.
    bad = [f"{i['src'].rpartition('/')[2]} (alt={i['alt']!r})"
           for i in shown(visits, edition, docname, screen)["images"]
           if not alt_is_a_description(i["alt"])]
    assert not bad, f"images without alt text: {bad}"


@pytest.mark.parametrize("edition,docname,screen", cases(PAGES, ["wide"]))
def test_page_links_lead_to_pages_that_exist(visits, site, edition, docname,
                                             screen):
    # each link under the site leads to a page or a folder's index.html
    root = urlparse(site[edition]).path
    missing = []
    for link in shown(visits, edition, docname, screen)["links"]:
        path = EDITIONS[edition] / urlparse(link).path[len(root):]
        if not path.exists() or path.is_dir() and not (
                path / "index.html").exists():
            missing.append(link)
    assert not missing


@pytest.mark.parametrize("edition,docname,screen", cases(PAGES, ["phone"]))
def test_page_is_readable_in_dark_mode(visits, edition, docname, screen):
    info = shown(visits, edition, docname, screen)
    assert info["theme"] == "dark"
    red, green, blue = map(int, re.findall(r"\d+", info["background"])[:3])
    assert red + green + blue < 3 * 80, info["background"]


@pytest.mark.parametrize("edition,docname,screen", cases(CHAPTERS, ["wide"]))
def test_output_box_holds_88_characters_on_a_wide_screen(visits, edition,
                                                         docname, screen):
    # The hygiene test keeps every output line to 88 characters.
    columns = shown(visits, edition, docname, screen)["columns"]
    assert columns is None or columns >= 88, columns


@pytest.mark.parametrize("edition,docname,screen", cases(PAGES, ["wide"]))
def test_outputs_fit_their_box_on_a_wide_screen(visits, edition, docname,
                                                screen):
    wide = [f"output #{w['index']}: {w['scrollWidth']} px in a {w['box']} "
            f"px box, {w['chars']} characters: {w['line']!r}"
            for w in shown(visits, edition, docname, screen)["wide"]]
    assert not wide, f"{len(wide)} outputs scroll sideways:\n" + "\n".join(
        wide)


@pytest.mark.parametrize("edition,docname,screen", cases(PAGES, ["phone"]))
def test_page_fits_a_phone_screen(visits, edition, docname, screen):
    info = shown(visits, edition, docname, screen)
    assert info["scrollWidth"] <= PHONE["width"], (
        f"{info['scrollWidth']} px wide on a {PHONE['width']} px screen, "
        "because of:\n" + "\n".join(info["overflow"]))


@pytest.mark.parametrize("edition,docname,screen", cases(PAGES, ["phone"]))
def test_sidebar_button_opens_the_chapter_list_on_a_phone(
        visits, edition, docname, screen):
    tapped = shown(visits, edition, docname, screen)["primary"]
    assert tapped and tapped["open"], "the button opened nothing"
    listed = {href.partition("#")[0].rpartition("/")[2]
              for href in tapped["shown"]}
    missing = {page_id(d) + ".html" for d in PAGES if d != docname} - listed
    assert not missing, f"missing from the list: {sorted(missing)}"
    # the book's title once, as the link home (not again as a page)
    assert tapped["titles"] == 1


@pytest.mark.parametrize("edition,docname,screen", cases(CHAPTERS, ["phone"]))
def test_contents_drawer_shows_the_sections_and_closes_after_a_tap(
        visits, edition, docname, screen):
    drawer = shown(visits, edition, docname, screen)["drawer"]
    assert drawer and drawer["opened"], "the Contents did not open"
    assert sum(href.startswith("#") for href in drawer["shown"]) >= 3
    assert drawer["closed"], "the Contents stayed open over the page"
    assert drawer["hash"] == drawer["link"], drawer


@pytest.mark.parametrize("edition,docname,screen", cases(CHAPTERS, ["phone"]))
def test_tapping_a_solution_title_opens_the_solution(visits, edition,
                                                     docname, screen):
    tapped = shown(visits, edition, docname, screen)["solution"]
    if tapped is None:
        pytest.skip(f"{page_id(docname)} has no solution")
    assert tapped["shown"], tapped
    assert tapped["hash_after"] == tapped["hash_before"], (
        "the tap followed the title's link instead", tapped)


# --------------------------------------------------------------------------
# What a page offers: the downloads, the licences, exercises, figures.

@pytest.mark.parametrize("edition,docname,screen", cases(CHAPTERS, ["wide"]))
def test_chapter_download_menu_offers_the_zip_first(
        visits, site, builds, edition, docname, screen):
    info = shown(visits, edition, docname, screen)
    base = urlparse(site[edition]).path
    menu = [urlparse(h).path for h in info["menu"]]
    pdf = [base + book_pdf.PDF_NAME] if builds[edition]["pdf"] else []
    assert menu[:1 + len(pdf)] == [base + book_zip.ZIP_NAME, *pdf]
    assert f"{base}_sources/{docname}.ipynb" in menu, menu
    assert not info["launch"], "launch buttons need a public repository"


@pytest.mark.parametrize("edition,docname,screen", cases(PAGES, ["wide"]))
def test_page_links_the_runnable_zip_the_pdf_and_the_index(
        visits, site, builds, edition, docname, screen):
    # the PDF where this build printed one (dev.py test --pdf)
    base = urlparse(site[edition]).path
    info = shown(visits, edition, docname, screen)
    notes = [urlparse(h).path for h in info["notes"]]
    pdf = [base + book_pdf.PDF_NAME] if builds[edition]["pdf"] else []
    assert notes == [base + book_zip.ZIP_NAME, base + book_zip.WORKBOOK_NAME,
                     *pdf, base + "genindex.html"]
    # in the edition's language (book_site.po)
    assert bool(CJK.search(info["noteText"])) == (edition == "zh"), (
        info["noteText"])


@pytest.mark.parametrize("edition,docname,screen", cases(PAGES, ["wide"]))
def test_every_footer_names_the_licences_in_its_language(
        visits, site, edition, docname, screen):
    info = shown(visits, edition, docname, screen)
    base = urlparse(site[edition]).path
    links = {a["text"]: urlparse(a["href"]).path for a in info["licence"]}
    assert links.get("LICENSE") == base + book_zip.LICENCE_FILES[0], links
    assert links.get("LICENSE-text") == base + book_zip.LICENCE_FILES[1]
    assert "CC BY-SA 4.0" in links
    # _config.yml's sentence, or its translation (book_site.po)
    english = "by the test suite" in info["footer"]
    assert english == (edition == "en"), info["footer"]


@pytest.mark.parametrize("edition,docname,screen", cases(CHAPTERS, ["wide"]))
def test_chapter_title_is_numbered_once(visits, edition, docname, screen):
    # _toc.yml numbers the chapters; a title typed "# 5. Hooks" would
    # show "5. 5. Hooks".
    title = normalise(shown(visits, edition, docname, screen)["title"])
    assert not re.match(r"\d+\.\s", title), (
        f"the title {title!r} carries its own number; _toc.yml numbers it")


@pytest.mark.parametrize("edition,docname,screen", cases(CHAPTERS, ["wide"]))
def test_exercises_are_numbered_within_their_chapter(visits, edition,
                                                     docname, screen):
    info = shown(visits, edition, docname, screen)
    chapter = (info["sectionNumber"] or "").rstrip(".")
    numbers = [re.sub(r"^\D*", "", e["number"].strip())
               for e in info["exercises"]]
    assert numbers == [f"{chapter}.{k}" for k in range(1, len(numbers) + 1)]


@pytest.mark.parametrize("edition,docname,screen", cases(CHAPTERS, ["wide"]))
def test_solutions_are_labelled_linked_and_hidden_until_asked(
        visits, edition, docname, screen):
    info = shown(visits, edition, docname, screen)
    numbers = {e["id"]: e["number"].strip() for e in info["exercises"]}
    assert len(info["solutions"]) == len(numbers)
    for solution in info["solutions"]:
        assert solution["href"] in numbers, solution
        # "Solution to Exercise 2.1 (...)", "练习 2.1 解答（...）"
        label = {"en": " (", "zh": " 解答（"}[edition]
        assert f"{numbers[solution['href']]}{label}" in solution["title"], (
            solution)
        assert solution["dropdown"] and not solution["shown"], solution


@pytest.mark.parametrize("edition,docname,screen", cases(CHAPTERS, ["wide"]))
def test_every_figure_opens_at_full_size_when_tapped(visits, edition,
                                                     docname, screen):
    # a figure opens alone when it links to its own file
    assert not [f["src"] for f in shown(visits, edition, docname,
                                        screen)["figures"]
                if not (f["link"] or "").endswith("/" + f["src"])]


@pytest.mark.parametrize("edition,docname,screen", cases(CHAPTERS, ["wide"]))
def test_figures_have_twice_the_pixels_they_are_shown_at(visits, edition,
                                                         docname, screen):
    # Sharp on a retina screen, on a phone and on paper. book/helpers.py
    # makes the notebooks store retina PNGs; outputs stored before that
    # fail here until `tools/dev.py outputs` re-runs their chapter.
    soft = [f"{f['src']} {f['naturalWidth']} px shown at {f['shown']:.0f}"
            for f in shown(visits, edition, docname, screen)["figures"]
            if not f["svg"] and f["naturalWidth"] < 2 * f["shown"] - 1]
    assert not soft, f"{len(soft)} figures under 2x: {soft}"


@pytest.mark.parametrize("edition,docname,screen", cases(CHAPTERS, ["phone"]))
def test_figure_labels_keep_their_size_on_a_phone(visits, edition, docname,
                                                  screen):
    # On a phone a figure is shown at the size it was drawn for (its labels
    # as large as on a wide screen), in a box that scrolls sideways.
    shrunk = [f"{f['src']} at {f['shown']:.0f} of {f['asked']:.0f} px"
              for f in shown(visits, edition, docname, screen)["figures"]
              if f["shown"] < 0.95 * min(f["asked"], 2000)]
    assert not shrunk, shrunk


@pytest.mark.parametrize("edition,docname,screen", cases(CHAPTERS, ["phone"]))
def test_every_figure_shows_whole_on_a_phone_or_says_it_scrolls(
        visits, edition, docname, screen):
    found = shown(visits, edition, docname, screen)["figures"]
    cut = figures_cut_without_cue(found)
    assert not cut, cut


# the figures whose meaning runs left to right, drawn narrow for a phone
NARROW = {"book/01_registration": 1, "book/06_apply": 1,
          "book/07_state_dict": 1, "book/08_checkpoints": 1,
          "book/10_performance": 1}


@pytest.mark.parametrize("edition,docname,screen", cases(CHAPTERS))
def test_a_phone_shows_the_narrow_drawing_whole_and_a_wide_screen_never(
        visits, edition, docname, screen):
    found = shown(visits, edition, docname, screen)["figures"]
    narrow = [f for f in found if f["narrow"]]
    assert len(narrow) == (NARROW.get(docname, 0) if screen == "phone"
                           else 0)
    assert not [f for f in narrow if f["cue"]]
    assert not figures_cut_without_cue(narrow)


@pytest.mark.parametrize("docname", CHAPTERS)
def test_the_chinese_edition_shows_figures_drawn_in_chinese(visits,
                                                            docname):
    # myst-nb names an image by its bytes: the same name is the same PNG
    english, chinese = ({f["src"] for f in shown(visits, edition, docname,
                                                 "wide")["figures"]}
                        for edition in ("en", "zh"))
    assert chinese and len(chinese) == len(english)
    assert not english & chinese, english & chinese


# --------------------------------------------------------------------------
# Each edition as a whole.

@pytest.mark.parametrize("edition", EDITIONS)
def test_the_home_page_leads_to_the_introduction(visits, edition):
    # The wide walk starts at the root: the intro's visit recorded any
    # error of the redirect too.
    info = visits(edition, "wide")[PAGES[0]]
    assert not any(info["problems"])
    assert normalise(info["title"]) == expected_title(PAGES[0], edition)


@pytest.mark.parametrize("edition", EDITIONS)
def test_next_links_walk_the_whole_book_in_order(visits, site, edition):
    seen = visits(edition, "wide")
    assert seen["walked"] == [site[edition] + d + ".html" for d in PAGES[1:]]
    assert seen[PAGES[-1]]["next"] is None


@pytest.mark.parametrize("edition", EDITIONS)
def test_previous_links_walk_back_to_the_start(visits, site, edition):
    seen = visits(edition, "phone")
    assert seen["walked"] == [site[edition] + d + ".html"
                              for d in PAGES[-2::-1]]
    assert seen[PAGES[0]]["prev"] is None


@pytest.mark.parametrize("edition", EDITIONS)
def test_chapters_are_numbered_in_reading_order(visits, edition):
    numbers = [visits(edition, "wide")[d]["sectionNumber"] for d in CHAPTERS]
    assert numbers == [f"{i}." for i in range(1, len(CHAPTERS) + 1)]


@pytest.mark.parametrize("edition", EDITIONS)
def test_every_chapter_has_figures(visits, edition):
    shown_ = sum(len(visits(edition, "wide")[d]["figures"]) for d in CHAPTERS)
    assert shown_ >= len(CHAPTERS), f"{shown_} figures"


@pytest.mark.parametrize("edition", EDITIONS)
def test_sidebar_button_folds_the_sidebar_on_a_wide_screen(visits, edition):
    before, after = visits(edition, "wide")["fold"]
    assert before and not after


@pytest.mark.parametrize("edition", EDITIONS)
def test_the_theme_switch_turns_dark_mode_on(visits, edition):
    modes, problems = visits(edition, "wide")["switch"]
    assert modes[0] == "dark", modes
    assert not any(problems), problems


@pytest.mark.parametrize("edition", EDITIONS)
def test_the_index_fits_a_phone_screen(visits, edition):
    info, problems = visits(edition, "phone")["genindex"]
    assert info["scrollWidth"] <= PHONE["width"], (
        f"genindex.html is {info['scrollWidth']} px wide: {info['overflow']}")
    assert not any(problems), problems


def glossary_terms():
    """The terms of book/glossary.md, in order: the unindented lines of its
    glossary block."""
    text = (ROOT / "book" / "glossary.md").read_text()
    block = re.search(r"```\{glossary\}\n(.*?)\n```", text, re.S).group(1)
    return [line.strip() for line in block.splitlines()
            if line.strip() and not line[0].isspace()
            and not line.startswith(":")]


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_chinese_page_shows_no_english_but_code_and_names(visits, docname):
    # the theme's and the extensions' words (tooltips, menus, footer,
    # search box, exercise labels) come in Chinese (issue 39, section 3)
    found = english_chrome(shown(visits, "zh", docname, "wide")["english"])
    assert not found, found


def test_chinese_index_shows_no_english_but_names(visits):
    found = english_chrome(visits("zh", "phone")["genindex_english"])
    assert not found, found


@pytest.mark.parametrize("edition", EDITIONS)
def test_glossary_defines_exactly_the_book_terms(visits, edition):
    terms = [t.strip() for t in visits(edition, "wide")["book/glossary"]
             ["terms"]]
    english = glossary_terms()
    assert len(english) >= 11
    if edition == "en":
        assert terms == english
    else:  # each term as the glossary's catalog translates it
        assert terms == [translations("book/glossary").get(t) or t
                         for t in english]


def test_chinese_titles_are_chinese():
    # the Chinese titles the checks above expect are Chinese indeed
    assert all(CJK.search(expected_title(d, "zh")) for d in PAGES)


def test_table_of_contents_lists_every_chapter_in_order():
    chapters = sorted(p.relative_to(ROOT).with_suffix("").as_posix()
                      for p in (ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
    assert PAGES == ["book/intro", *chapters, "book/workbook",
                     "book/glossary", "book/gpu_runs"]
    assert all(source_of(d).exists() for d in PAGES)


def test_the_footer_sentence_is_the_one_the_catalog_translates():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    footer = config["html"]["extra_footer"]
    assert " ".join(footer.split()) == book_zip.FOOTER


# --------------------------------------------------------------------------
# The language switch keeps the reader's section.

ELEMENT_ID = re.compile(r'<[a-z0-9]+ [^>]*?\bid="([^"]+)"')


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_both_editions_give_a_section_the_same_id(site, docname):
    # What lets the switch carry location.hash: Sphinx keeps the ids of
    # sections (made from the English headings), glossary terms and
    # figures when it translates them.
    ids = {edition: ELEMENT_ID.findall(
               (folder / f"{docname}.html").read_text(encoding="utf-8"))
           for edition, folder in EDITIONS.items()}
    assert ids["zh"] == ids["en"]


@pytest.mark.parametrize("edition", EDITIONS)
def test_language_switch_opens_the_other_edition_at_the_same_section(
        browser, site, edition):
    """A reader at a section of a chapter (the middle one of those whose
    headings the catalog translates as they stand) switches language: the
    other edition's page opens at that section, its heading the
    translation of the one left."""
    docname = next(d for d in CHAPTERS if page_id(d).startswith("05_"))
    english = translations(docname)
    context, page, recorder = new_context(browser, site[edition], ANSWERED,
                                          viewport=WIDE)
    page.goto(site["en"] + docname + ".html", wait_until="load")
    headings = page.evaluate(
        """() => [...document.querySelectorAll("section > h2")].map(h =>
             [h.parentElement.id, h.textContent.replace(/^[\\d.]+\\s*/, "")
                                            .replace(/#$/, "").trim()])""")
    sections = [(id_, title) for id_, title in headings if title in english]
    assert len(sections) >= 3, headings
    section, title = sections[len(sections) // 2]
    other = "zh" if edition == "en" else "en"
    expected = {"en": title, "zh": english[title]}

    page.goto(f"{site[edition]}{docname}.html#{section}", wait_until="load")
    left = page.evaluate(js("section_at_top"), section)
    assert left["hash"] == section and left["heading"].endswith(
        expected[edition]), left
    with page.expect_navigation(wait_until="load"):
        page.locator("a.btn-language-switch").first.click()
    page.wait_for_timeout(200)  # the browser scrolls to the hash
    landed = page.evaluate(js("section_at_top"), section)
    assert page.url.startswith(site[other] + docname + ".html")
    assert landed["hash"] == section, (page.url, landed)
    assert landed["heading"].endswith(expected[other]), landed
    assert landed["scrolled"] > 0 and 0 <= landed["top"] < landed[
        "height"] / 4, f"{section} is not at the top of the window: {landed}"
    assert not any(recorder.take())
    context.close()


BREAK_AFTER = re.compile(  # as in site/static/book.js
    r"(?<=[A-Za-z0-9)]\.)(?=\S)|(?<=[A-Za-z0-9]_)(?=[A-Za-z0-9])")


@pytest.mark.parametrize("edition,docname,screen", cases(PAGES))
def test_table_identifiers_break_only_after_a_dot_or_underscore(
        visits, edition, docname, screen):
    # ch5's "Three kinds of gradient hook" on a phone: `register_ho` /
    # `ok(fn)` before; `register_full_` / `backward_hook` now. Each "." or
    # single "_" inside a name carries a <wbr> (book.js), and the code
    # wraps nowhere else (book.css).
    chrome = shown(visits, edition, docname, screen)["chrome"]
    assert not [c["text"] for c in chrome["tableCode"]
                if c["wrap"] != "normal"
                or c["breaks"] < len(BREAK_AFTER.findall(c["text"]))]


@pytest.mark.parametrize("edition,docname,screen", cases(PAGES))
def test_header_has_no_fullscreen_button_on_a_phone(visits, edition,
                                                    docname, screen):
    # a phone's browser cannot honour it for a page
    fullscreen = shown(visits, edition, docname, screen)["chrome"]["fullscreen"]
    assert fullscreen == (screen == "wide")


@pytest.mark.parametrize("edition,docname,screen", cases(CHAPTERS, ["wide"]))
def test_a_chapter_printed_from_the_browser_keeps_its_number(
        visits, edition, docname, screen):
    info = shown(visits, edition, docname, screen)
    assert info["sectionNumber"]
    assert info["chrome"]["printedNumber"] == info["sectionNumber"]
