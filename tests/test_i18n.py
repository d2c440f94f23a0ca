"""The Chinese edition (issue 20): complete catalogs, no drift, same code.

Two kinds of check:

- on the catalogs alone (fast, no build): every entry of every
  locale/zh_CN/LC_MESSAGES/book/<page>.po is translated and not fuzzy, and
  keeps the code marks, link targets, term targets and math of its English;
  so is every entry of book_files.po (the words book/_ext/book_files.py
  writes itself: the PDF's cover and contents, its metadata, the footer's
  licence line), which holds every message of that file and keeps the tags
  and {fields} of its English;
- on the Chinese site (marked `site`: one build, in the worker that runs this
  file): every English string that Sphinx looked up while building a page
  has an entry in that page's catalog (an English paragraph changed or
  added since the last `python3 tools/dev.py i18n` fails here, by file and
  string), no entry is left over from English that is gone, and every code
  cell and stored output of every chapter is on the Chinese page exactly as
  in the notebook.

A failure names the catalog and the English string (msgid). To fix one:
`python3 tools/dev.py i18n`, then translate what it lists
(locale/zh_CN/README.md).
"""
import copy
import html
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import nbformat
import pytest
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import i18n  # tools/i18n.py: where the editions are built
from site_checks.pdf import squeezed

CATALOGS = sorted(i18n.CATALOGS.rglob("*.po"))
PAGE_CATALOGS = sorted(i18n.PAGE_CATALOGS.glob("*.po"))
ZH_HTML = i18n.ZH_HTML
RECORD = i18n.ZH_DOCTREES / "i18n-messages.json"
TIMINGS = {}


def page_of(po):
    """locale/zh_CN/LC_MESSAGES/book/05_hooks.po -> book/05_hooks."""
    return po.relative_to(i18n.CATALOGS).with_suffix("").as_posix()


def messages(po):
    with po.open("rb") as handle:
        return [m for m in read_po(handle) if m.id]


def short(text, width=110):
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def test_there_is_a_catalog_for_every_page():
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = {toc["root"]} | {c["file"] for part in toc["parts"]
                             for c in part["chapters"]}
    assert {page_of(po) for po in PAGE_CATALOGS} == pages
    assert set(CATALOGS) == {*PAGE_CATALOGS, i18n.SITE_CATALOG}


# --------------------------------------------------------------------------
# The catalogs alone

@pytest.mark.parametrize("po", CATALOGS, ids=lambda p: p.stem)
def test_catalog_is_translated(po):
    """Every entry has Chinese, none is fuzzy (English changed since)."""
    entries = messages(po)
    fuzzy = [m for m in entries if m.fuzzy]
    empty = [m for m in entries if not m.fuzzy and not m.string]
    if fuzzy or empty:
        name = po.relative_to(ROOT)
        lines = [f"{name}: {len(empty)} of {len(entries)} strings "
                 f"untranslated, {len(fuzzy)} fuzzy"]
        lines += [f"  line {m.lineno}, fuzzy (the English changed): "
                  f"{short(m.id)!r}" for m in fuzzy]
        lines += [f"  line {m.lineno}, untranslated: {short(m.id)!r}"
                  for m in empty]
        pytest.fail("\n".join(lines), pytrace=False)


ROLE = re.compile(r"\{(term|ref|numref|doc|eq)\}`([^`]+)`")
CODE = re.compile(r"(`+)(.+?)\1", re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")
MATH = re.compile(r"\$\$.+?\$\$|\$[^$\s][^$]*?\$", re.S)


def marks(text):
    """What a translation must keep: code spans, link targets, role
    targets (the English term of {term}`缓冲区 <buffer>`) and math."""
    found = Counter()
    for role, body in ROLE.findall(text):
        target = re.search(r"<([^<>]+)>\s*$", body)
        found[f"{{{role}}} target {(target.group(1) if target else body)!r}"
              ] += 1
    rest = ROLE.sub(" ", text)
    found.update(f"math {m!r}" for m in MATH.findall(rest))
    rest = MATH.sub(" ", rest)
    found.update(f"code `{m[1]}`" for m in CODE.findall(rest))
    found.update(f"link target {m!r}" for m in LINK.findall(rest))
    return found


@pytest.mark.parametrize("po", CATALOGS, ids=lambda p: p.stem)
def test_translation_keeps_code_links_terms_and_math(po):
    """Code marks stay English and unchanged; links and terms keep their
    targets; math is not translated. Extra code marks are allowed."""
    problems = []
    for m in messages(po):
        if m.fuzzy or not m.string:
            continue
        lost = marks(m.id) - marks(m.string)
        if lost:
            problems.append(f"  {short(m.id)!r}: the Chinese lost "
                            + ", ".join(sorted(lost)))
    assert not problems, (f"{po.relative_to(ROOT)}:\n" + "\n".join(problems))


def test_marks_are_found():
    """The check above sees what it must keep (and a term's English)."""
    english = ("A {term}`buffer` moves with `.to()`; see "
               "[chapter 1](01_registration.ipynb), $2^n$.")
    good = ("{term}`缓冲区 <buffer>` 随 `.to()` 移动；见"
            "[第 1 章](01_registration.ipynb)，$2^n$。")
    assert marks(english) - marks(good) == Counter()
    for bad in (good.replace("`.to()`", "to"),
                good.replace("<buffer>", "<缓冲区>"),
                good.replace("01_registration", "02_traversal"),
                good.replace("$2^n$", "2^n")):
        assert marks(english) - marks(bad), bad


def test_site_catalog_holds_every_message_of_book_files():
    """The drift check of book_files.po: what book_files.py asks for (its
    `_("...")` and `N_("...")`) is what the catalog has."""
    asked = [message for message, _line in i18n.site_messages()]
    held = {m.id for m in messages(i18n.SITE_CATALOG)}
    new = [m for m in asked if m not in held]
    gone = sorted(held - set(asked))
    assert asked and not new and not gone, (
        f"{i18n.SITE_CATALOG.relative_to(ROOT)} differs from "
        f"{i18n.SITE_SOURCE.relative_to(ROOT)} (run `python3 tools/dev.py "
        f"i18n` and translate): new {[short(m) for m in new]}, "
        f"gone {[short(m) for m in gone]}")


HTML_MARK = re.compile(r"<[^>]+>|\{\w+\}")


def html_marks(text):
    """What a translation of an HTML message must keep: its tags (with
    their attributes: a link keeps its target) and its {fields}."""
    return Counter(HTML_MARK.findall(text))


def test_site_translation_keeps_tags_and_fields():
    problems = []
    for m in messages(i18n.SITE_CATALOG):
        if m.string and html_marks(m.id) != html_marks(m.string):
            problems.append(f"  {short(m.id)!r}: lost "
                            f"{sorted(html_marks(m.id) - html_marks(m.string))}"
                            f", added "
                            f"{sorted(html_marks(m.string) - html_marks(m.id))}")
    assert not problems, "book_files.po:\n" + "\n".join(problems)


def test_html_marks_are_found():
    english = 'Take <code>{zip}</code>: <a href="{home}">the site</a>.'
    good = '下载 <code>{zip}</code>：<a href="{home}">网站</a>。'
    assert html_marks(english) == html_marks(good)
    for bad in (good.replace("{zip}", "{zip_name}"),
                good.replace('href="{home}"', 'href="home"'),
                good.replace("<code>", "")):
        assert html_marks(english) != html_marks(bad), bad


# --------------------------------------------------------------------------
# The Chinese site

@pytest.fixture(scope="module")
def zh_site():
    """Build the Chinese site (-W) into _build/html/zh, reusing its
    doctrees; return the messages Sphinx looked up, page by page. The
    Chinese PDF is left to `dev.py book` (BOOK_I18N_PDF=0)."""
    start = time.perf_counter()
    times = os.times()
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "i18n.py"), "build"],
        cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "BOOK_I18N_PDF": "0",
             "PYTHONWARNINGS": "ignore"})
    after = os.times()
    TIMINGS["zh_build_s"] = round(time.perf_counter() - start, 1)
    TIMINGS["zh_build_cpu_s"] = round(
        after.children_user - times.children_user
        + after.children_system - times.children_system, 1)
    log = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
    assert done.returncode == 0, f"the Chinese build failed:\n{log[-6000:]}"
    return json.loads(RECORD.read_text(encoding="utf-8"))


@pytest.mark.site
def test_chinese_site_builds_with_warnings_as_errors(zh_site):
    assert (ZH_HTML / "book" / "intro.html").exists()
    assert set(zh_site) == {page_of(po) for po in PAGE_CATALOGS}
    print("Chinese build:", TIMINGS)


@pytest.mark.site
@pytest.mark.parametrize("po", PAGE_CATALOGS, ids=lambda p: p.stem)
def test_catalog_holds_every_english_string_of_its_page(zh_site, po):
    """The drift check: what the page asks for is what the catalog has."""
    looked_up = zh_site[page_of(po)]
    held = {m.id for m in messages(po)}
    new = [m for m in looked_up if m not in held]
    gone = sorted(held - set(looked_up))
    lines = []
    if new:
        lines.append(f"{po.relative_to(ROOT)} has no entry for "
                     f"{len(new)} English string(s) of {page_of(po)}: new "
                     "or changed English; run `python3 tools/dev.py i18n` "
                     "and translate them")
        lines += [f"  {short(m)!r}" for m in new]
    if gone:
        lines.append(f"{po.relative_to(ROOT)} has {len(gone)} entr(ies) "
                     "whose English is no longer on the page (run "
                     "`python3 tools/dev.py i18n`)")
        lines += [f"  {short(m)!r}" for m in gone]
    assert not lines, "\n".join(lines)


CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))


def expected_blocks(path):
    """Per code cell: its source, and the text of each output box as
    myst-nb renders it from the notebook for either edition (streams
    merged by its own coalesce_streams, as nb_merge_streams asks)."""
    from myst_nb.core.utils import coalesce_streams

    nb = nbformat.read(path, as_version=4)
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tags = cell.metadata.get("tags", [])
        if "remove-cell" in tags:
            continue
        outputs = []
        for out in coalesce_streams(copy.deepcopy(cell.outputs)):
            if out.output_type == "stream":
                outputs.append(out.text)
            elif "text/plain" in out.get("data", {}) and not any(
                    k.startswith("image/") or k == "text/html"
                    for k in out.data):
                outputs.append(out.data["text/plain"])
        cells.append({
            "source": None if "remove-input" in tags else cell.source,
            "outputs": [] if "remove-output" in tags else outputs})
    return cells


CELL = re.compile(r'<div class="cell(?: [^"]*)? docutils container"')
INPUT = re.compile(r'<div class="cell_input[^"]*">.*?<pre>(.*?)</pre>', re.S)
OUTPUT = re.compile(r'<div class="output [^"]*">\s*<div class="highlight">'
                    r"<pre>(.*?)</pre>", re.S)
TAG = re.compile(r"<[^>]+>")


def text_of(pre):
    return html.unescape(TAG.sub("", pre))


def shown_blocks(page):
    """Per code cell of a built page: the text of its source box and of
    each of its output boxes (myst-nb's markup, read with regexes: an
    HTML parser costs ten seconds of CPU for the ten chapters)."""
    body = page.read_text(encoding="utf-8")
    body = body[body.index("<article"):body.rindex("</article>")]
    cells = []
    for chunk in CELL.split(body)[1:]:
        source = INPUT.search(chunk)
        cells.append({
            "source": text_of(source.group(1)) if source else None,
            "outputs": [text_of(pre) for pre in OUTPUT.findall(chunk)]})
    return cells


@pytest.mark.site
@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_code_and_outputs_are_the_notebooks_own(zh_site, path):
    """Code cells and stored outputs on the Chinese page are the notebook's,
    character for character (the English page shows the same notebook)."""
    shown = shown_blocks(ZH_HTML / "book" / f"{path.stem}.html")
    expected = expected_blocks(path)
    assert len(shown) == len(expected), (len(shown), len(expected))
    for number, (got, want) in enumerate(zip(shown, expected), 1):
        if want["source"] is not None:
            assert got["source"].rstrip("\n") == want["source"].rstrip(
                "\n"), f"{path.name}, code cell {number}: source differs"
        assert [o.rstrip("\n") for o in got["outputs"]] == [
            o.rstrip("\n") for o in want["outputs"]], (
            f"{path.name}, code cell {number}: outputs differ")


@pytest.mark.site
def test_every_chinese_page_switches_to_its_english_twin(zh_site):
    """The header's language button leads to the same page in English."""
    for docname in zh_site:
        page = (ZH_HTML / f"{docname}.html").read_text(encoding="utf-8")
        found = re.search(r'<a href="([^"]+)"[^>]*btn-language-switch', page)
        assert found, f"{docname}: no language switch"
        assert 'a.btn-language-switch")' in page, "switch opens a new tab"
        target = (ZH_HTML / docname).parent / found.group(1)
        # the English page sits where the Chinese one does, one level up
        assert target.resolve() == (ZH_HTML.parent / f"{docname}.html"
                                    ).resolve(), (docname, found.group(1))
        assert any((ROOT / f"{docname}{s}").exists()
                   for s in (".md", ".ipynb")), docname


@pytest.mark.site
def test_chinese_search_indexes_chinese_words(zh_site):
    """html_search_language "zh" (jieba): the glossary's Chinese words are
    search terms that lead to the glossary."""
    text = (ZH_HTML / "searchindex.js").read_text(encoding="utf-8")
    index = json.loads(text[text.index("(") + 1:text.rindex(")")])
    glossary = index["docnames"].index("book/glossary")
    hits = index["terms"].get("缓冲区")
    assert hits is not None, "缓冲区 is not a search term"
    assert glossary in (hits if isinstance(hits, list) else [hits])


# -- the Chinese site in a real browser ---------------------------------------
# The same checks as the English site's (tests/site_checks/), on every Chinese
# page: on a phone (400 px) and on a wide screen (1400 px), one visit each.

PHONE, WIDE = {"width": 400, "height": 850}, {"width": 1400, "height": 1000}
CHAPTER_PAGES = {f"book/{path.stem}" for path in CHAPTERS}


def attempt(check, page):
    """A check's result, or what it raised (reported by its own test)."""
    try:
        return check(page)
    except Exception as error:
        return f"{type(error).__name__}: {error}"


@pytest.fixture(scope="module")
def zh_visits(zh_site, browser):
    """{(docname, "phone"|"wide"): (what the page showed, its problems)}.
    On a chapter, its figures too; on the phone, a tap on its first
    solution's title (and on chapter 1, on a section of the Contents); on
    the wide screen's last page, the sidebar button."""
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import book_files
    from site_checks import (contents_drawer_after_a_tap, figures, inspect,
                             js, new_context, page_width,
                             solution_after_tapping_its_title)

    seen, answered = {}, []
    docnames = sorted(zh_site)
    with book_files.serve(ZH_HTML, cache_assets=True,
                          errors=answered) as base:
        for screen, viewport in (("phone", PHONE), ("wide", WIDE)):
            options = ({"is_mobile": True, "has_touch": True}
                       if screen == "phone" else {})
            context, page, recorder = new_context(browser, base, answered,
                                                  viewport, **options)
            for docname in docnames:
                page.goto(base + f"{docname}.html", wait_until="load")
                phone = PHONE["width"] if screen == "phone" else None
                info = inspect(page, phone=phone)
                info["width"] = page_width(page, phone)
                info["base"] = base
                if docname in CHAPTER_PAGES:
                    info["figures"] = figures(page)
                if screen == "phone" and docname in CHAPTER_PAGES:
                    info["solution"] = attempt(
                        solution_after_tapping_its_title, page)
                if screen == "phone" and docname == "book/01_registration":
                    info["drawer"] = attempt(contents_drawer_after_a_tap,
                                             page)
                if screen == "wide" and docname == docnames[-1]:
                    info["fold"] = page.evaluate(js("fold_sidebar"))
                seen[docname, screen] = (info, recorder.take())
            context.close()
    return seen


@pytest.mark.site
def test_every_chinese_page_loads_cleanly_on_a_phone_and_a_wide_screen(
        zh_visits):
    """No console error, failed request or request off the machine; a
    Chinese title; on the phone, nothing wider than the screen."""
    problems = []
    for (docname, screen), (info, (errors, failed, external)) in sorted(
            zh_visits.items()):
        if errors or failed or external:
            problems.append((docname, screen, errors, failed, external))
        if not re.search(r"[\u4e00-\u9fff]", info["title"]):
            problems.append((docname, screen, "title", info["title"]))
        width, inner, over = info["width"]
        if screen == "phone" and width > inner:
            problems.append((docname, screen, "wider than the phone",
                             width, over[:3]))
    assert not problems, problems[:5]


@pytest.mark.site
def test_chinese_contents_drawer_closes_after_a_tap_on_a_phone(zh_visits):
    info, _ = zh_visits["book/01_registration", "phone"]
    drawer = info["drawer"]
    assert drawer and drawer["opened"] and drawer["closed"], drawer
    assert drawer["hash"] == drawer["link"], drawer


def each_page(zh_visits, screen, verdict):
    """{docname: problems} of every page on `screen`, by `verdict` (one
    of site_checks' verdicts, given a page's info and docname)."""
    found = {docname: verdict(info, docname)
             for (docname, seen_on), (info, _) in zh_visits.items()
             if seen_on == screen}
    return {docname: problems for docname, problems in sorted(found.items())
            if problems}


@pytest.mark.site
def test_chinese_outputs_fit_their_box_on_a_wide_screen(zh_visits):
    from site_checks import outputs_too_wide

    wide = each_page(zh_visits, "wide",
                     lambda info, _docname: outputs_too_wide(info))
    assert not wide, wide


@pytest.mark.site
def test_chinese_icons_are_drawn_at_the_size_of_their_text(zh_visits):
    from site_checks import icons_not_drawn

    for screen in ("phone", "wide"):
        problems = each_page(zh_visits, screen,
                             lambda info, _docname: icons_not_drawn(info))
        assert not problems, (screen, problems)


@pytest.mark.site
def test_chinese_code_is_highlighted_with_copy_buttons(zh_visits):
    from site_checks import code_problems

    problems = each_page(zh_visits, "wide", lambda info, docname: (
        code_problems(info, chapter=docname in CHAPTER_PAGES)))
    assert not problems, problems


@pytest.mark.site
def test_chinese_links_lead_to_pages_that_exist(zh_visits):
    """All but the link to the whole book's PDF under each title: this
    build leaves the PDF out (BOOK_I18N_PDF=0, see zh_pdf below)."""
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from book_files import PDF_NAME
    from site_checks import missing_links

    missing = each_page(zh_visits, "wide", lambda info, _docname: [
        link for link in missing_links(info["links"], info["base"], ZH_HTML)
        if link != info["base"] + PDF_NAME])
    assert not missing, missing


@pytest.mark.site
def test_tapping_a_chinese_solution_title_opens_the_solution(zh_visits):
    """On a phone, on every chapter with a solution (the title is the
    translated "Solution to Exercise N.M" with its link to the exercise)."""
    tapped = {docname: zh_visits[docname, "phone"][0]["solution"]
              for docname in sorted(CHAPTER_PAGES)}
    assert any(tapped.values()), "no chapter has a solution"
    wrong = {docname: t for docname, t in tapped.items() if t is not None
             and not (isinstance(t, dict) and t["shown"]
                      and t["hash_after"] == t["hash_before"])}
    assert not wrong, wrong


@pytest.mark.site
def test_chinese_sidebar_button_opens_the_chapter_list_on_a_phone(zh_visits):
    from site_checks import chapter_list_missing

    docnames = sorted({docname for docname, _ in zh_visits})
    missing = each_page(zh_visits, "phone", lambda info, docname: (
        chapter_list_missing(info["primary"], docnames, docname)))
    assert not missing, missing


@pytest.mark.site
def test_chinese_sidebar_button_folds_the_sidebar_on_a_wide_screen(
        zh_visits):
    folded = [info["fold"] for (_, screen), (info, _) in zh_visits.items()
              if screen == "wide" and "fold" in info]
    assert folded and folded[0][0] and not folded[0][1], folded


@pytest.mark.site
def test_every_chinese_image_loads(zh_visits):
    broken = each_page(zh_visits, "wide", lambda info, _docname: [
        i["src"] for i in info["images"] if not i["ok"]])
    assert not broken, broken


@pytest.mark.site
def test_every_chinese_figure_opens_at_full_size_when_tapped(zh_visits):
    from site_checks import figures_not_opening

    shown = sum(len(zh_visits[d, "wide"][0]["figures"]) for d in
                CHAPTER_PAGES)
    assert shown >= len(CHAPTER_PAGES), f"{shown} figures"
    unlinked = each_page(zh_visits, "wide", lambda info, _docname: (
        figures_not_opening(info.get("figures", []))))
    assert not unlinked, unlinked


@pytest.mark.site
def test_chinese_figure_labels_keep_their_size_on_a_phone(zh_visits):
    from site_checks import figures_shrunk

    shrunk = each_page(zh_visits, "phone", lambda info, _docname: (
        figures_shrunk(info.get("figures", []))))
    assert not shrunk, shrunk


@pytest.mark.site
def test_no_chinese_figure_is_linked_twice(zh_site):
    """book_files links each figure to its file once. The Chinese build in
    these tests is incremental (as a translator's are): a page it does not
    write again was wrapped in one more link by every earlier build."""
    nested = re.compile(r'<a class="book-figure"[^>]*>\s*<a class="book-fig')
    twice = [docname for docname in zh_site if nested.search(
        (ZH_HTML / f"{docname}.html").read_text(encoding="utf-8"))]
    assert not twice, twice



EXERCISE_TITLE = re.compile(r'<div class="exercise admonition" id="([^"]+)">'
                            r'\s*<p class="admonition-title">(.*?)</p>', re.S)
SOLUTION_TITLE = re.compile(r'<div class="solution dropdown admonition"[^>]*>'
                            r'\s*<p class="admonition-title">.*?'
                            r'<a class="reference internal" href="#([^"]+)">'
                            r"(.*?)</a></p>", re.S)


def solutions_misnaming_their_exercise(page):
    """The solution titles of a built page ("解答 练习 1.1 (...)") that do
    not end with the title of their exercise, as the exercise shows it."""
    exercises = {label: " ".join(text_of(title).split())
                 for label, title in EXERCISE_TITLE.findall(page)}
    return [(label, " ".join(text_of(title).split()), exercises.get(label))
            for label, title in SOLUTION_TITLE.findall(page)
            if not " ".join(text_of(title).split()).endswith(
                exercises.get(label) or "(no exercise)")]


@pytest.mark.site
def test_chinese_solution_titles_name_their_exercise_in_chinese(zh_site):
    """sphinx-exercise titles a solution from its exercise: the exercise's
    subtitle, translated (languages.ExerciseTitles), is in it."""
    found, wrong = 0, []
    for path in CHAPTERS:
        page = (ZH_HTML / "book" / f"{path.stem}.html").read_text(
            encoding="utf-8")
        found += len(SOLUTION_TITLE.findall(page))
        wrong += solutions_misnaming_their_exercise(page)
    assert found >= len(CHAPTERS), found
    assert not wrong, wrong[:5]

@pytest.mark.site
def test_a_chinese_chapter_downloaded_alone_has_the_note_once(zh_site):
    """Its first cell says what it needs (book_files), once: a page the
    incremental build did not write again got one more note each build."""
    for path in CHAPTERS:
        alone = json.loads((ZH_HTML / "_sources" / "book" / path.name)
                           .read_text(encoding="utf-8"))["cells"]
        notes = [i for i, cell in enumerate(alone) if "downloaded-alone" in
                 cell.get("metadata", {}).get("tags", [])]
        assert notes == [0], (path.name, notes)
        source = json.loads(path.read_text(encoding="utf-8"))["cells"]
        assert [c["source"] for c in alone[1:]] == [
            c["source"] for c in source], path.name

# -- the Chinese PDF ------------------------------------------------------------
# Printing the whole Chinese book (324 pages) costs about 11 CPU-s and 10 s
# on a 2-core EPYC (2026-12-04; 42 CPU-s and a minute when this sample was
# chosen, before shadows were left off paper); `python3 tools/dev.py book`
# prints it. Here the Chinese build's own whole-book page is printed with
# the build's own print_pdf, cut to its cover, contents, introduction and
# one chapter: what is Chinese about the PDF (the cover's words, the font,
# the bookmarks, CJK lines breaking the pages elsewhere) shows in those
# pages for a fraction of the cost.

SAMPLE = "10_performance"
SAMPLE_PAGE = ZH_HTML / "book" / "whole-book-sample.html"
CJK = re.compile(r"[\u4e00-\u9fff]")


def whole_book_sample(text, stems):
    """The whole-book page with only its cover, its contents and the pages
    `stems` (the first page stays: the contents are found by its link)."""
    marker = '<section class="book-page" '
    head, *parts = text.split(marker)
    end = parts[-1].rindex("</article>")
    tail, parts[-1] = parts[-1][end:], parts[-1][:end]
    kept = [p for p in parts
            if p.startswith(tuple(f'id="{stem}--top"' for stem in stems))]
    return head + "".join(marker + part for part in kept) + tail


@pytest.fixture(scope="module")
def zh_pdf(zh_site, browser, tmp_path_factory):
    """(the sample printed, read page by page: site_checks.pdf.Scan; its
    file; what printing it reported)."""
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import book_files
    from site_checks import pdf as pdf_checks

    whole = (ZH_HTML / "book" / book_files.WHOLE_BOOK).read_text(
        encoding="utf-8")
    SAMPLE_PAGE.write_text(whole_book_sample(whole, ["intro", SAMPLE]),
                           encoding="utf-8")
    target = tmp_path_factory.mktemp("zh-pdf") / "sample.pdf"
    start = time.perf_counter()
    try:
        problems = book_files.print_pdf(ZH_HTML, SAMPLE_PAGE, target,
                                        browser=browser)
    finally:
        SAMPLE_PAGE.unlink()
    scan = pdf_checks.scan(target)
    TIMINGS["zh_pdf_sample_s"] = round(time.perf_counter() - start, 1)
    return scan, target, problems


def site_translation(english_start):
    """The Chinese of book_files.po's entry whose English starts so."""
    found = [m.string for m in messages(i18n.SITE_CATALOG)
             if m.id.startswith(english_start)]
    assert len(found) == 1, english_start
    return found[0]


def chinese_title(stem):
    """The title of a Chinese page, as its <h1> shows it (numbered)."""
    page = (ZH_HTML / "book" / f"{stem}.html").read_text(encoding="utf-8")
    article = page[page.index("<article"):]
    return text_of(re.search(r"<h1>(.*?)<a class=\"headerlink", article,
                             re.S).group(1))


@pytest.mark.site
def test_chinese_pdf_prints_with_no_problem(zh_pdf):
    scan, _, problems = zh_pdf
    assert not problems, problems   # console errors, math, images, requests
    assert len(scan.sheets) >= 10, len(scan.sheets)


@pytest.mark.site
def test_chinese_pdf_holds_the_figures_and_no_other_image(zh_pdf):
    """As the English PDF: a shadow printed is a picture of its box."""
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import book_files
    from site_checks import printed_images_not_figures

    scan, _, _ = zh_pdf
    whole = (ZH_HTML / "book" / book_files.WHOLE_BOOK).read_text(
        encoding="utf-8")
    sample = whole_book_sample(whole, ["intro", SAMPLE])
    assert "_images/" in sample, "the sample has no figure to look for"
    problems = printed_images_not_figures(scan.images, sample, ZH_HTML)
    assert not problems, f"{len(problems)}: {problems[:10]}"


@pytest.mark.site
def test_chinese_pdf_cover_and_chapter_have_chinese_text(zh_pdf):
    """The text can be copied out, in Chinese: the cover's words from
    book_files.po, and the chapter's first paragraph."""
    scan, _, _ = zh_pdf
    cover = squeezed(scan.sheets[0].text)
    assert squeezed(site_translation("The whole book,")) in cover, cover
    assert re.search(r"版本[0-9a-f]{7,}（\d{4}-\d\d-\d\d）", cover), cover
    assert "CCBY-SA4.0" in cover and "rebuilding-nn-module-notebooks.zip" in (
        cover)
    contents = squeezed(scan.sheets[1].text)
    assert contents.startswith(squeezed(site_translation("Contents"))), (
        contents)
    page = (ZH_HTML / "book" / f"{SAMPLE}.html").read_text(encoding="utf-8")
    article = page[page.index("<article"):]
    first = text_of(re.search(r"<p>(.*?)</p>", article, re.S).group(1))
    assert len(CJK.findall(first)) >= 10, first
    start = scan.destinations[f"{SAMPLE}--top"]
    text = squeezed(scan.sheets[start - 1].text + scan.sheets[start].text)
    assert squeezed(first)[:40] in text


@pytest.mark.site
def test_chinese_pdf_bookmarks_are_the_chinese_titles(zh_pdf):
    scan, _, _ = zh_pdf
    tops = [(squeezed(title), page) for level, title, page in scan.outline
            if level == 0]
    assert tops == [
        (squeezed(i18n.ZH_OVERRIDES["html_title"]), 1),
        (squeezed(chinese_title("intro")), scan.destinations["intro--top"]),
        (squeezed(chinese_title(SAMPLE)), scan.destinations[f"{SAMPLE}--top"]),
    ], tops
    assert CJK.search(tops[-1][0])


@pytest.mark.site
def test_chinese_pdf_embeds_a_chinese_font(zh_pdf):
    """Every Chinese character of the cover and of the chapter's first page
    is drawn in a font embedded in the file; the fonts that have a name are
    fonts that fontconfig lists for Chinese (fc-list :lang=zh), not a
    fallback that would draw boxes."""
    from site_checks import pdf as pdf_checks

    scan, path, _ = zh_pdf
    used = set()
    for number in (1, scan.destinations[f"{SAMPLE}--top"]):
        used |= pdf_checks.fonts(path, number, chars=CJK.fullmatch)
    assert used and all(embedded for _, embedded in used), used
    named = {name for name, _ in used if name}
    assert named, used
    listed = subprocess.run(["fc-list", ":lang=zh", "postscriptname"],
                            capture_output=True, text=True).stdout
    chinese = set(re.findall(r"postscriptname=(\S+)", listed))
    assert named <= chinese, (named, chinese)


@pytest.mark.site
def test_chinese_pdf_has_no_page_that_ends_in_an_empty_code_frame(zh_pdf):
    scan, _, _ = zh_pdf
    assert sum(sheet.frames for sheet in scan.sheets) >= 5, "no code frames"
    assert not scan.empty_frame_pages(), scan.empty_frame_pages()


@pytest.mark.site
def test_every_chinese_footer_is_in_chinese(zh_site):
    # _config.yml's extra_footer goes through book_files.po (FOOTER)
    chinese = site_translation("Every chapter is re-executed")
    for docname in sorted(zh_site):
        page = (ZH_HTML / f"{docname}.html").read_text(encoding="utf-8")
        footer = page[page.index('<footer class="bd-footer-content'):]
        assert chinese in footer and "by the test suite" not in footer, (
            docname)
