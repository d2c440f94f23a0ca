"""Each edition's build, read from its files: no warning, MathJax cut to
what renders the math, and the Chinese edition's promises (issue 20): every
English string that Sphinx looked up while building a page has an entry in
that page's catalog (an English paragraph changed or added since the last
`python3 tools/dev.py i18n` fails here, by file and string), no entry is
left over from English that is gone, and every code cell and stored output
of every chapter is on each edition's page exactly as in the notebook.
"""
import copy
import json
import re

import nbformat
import pytest
from babel.messages.pofile import read_po

import i18n
from checks import (BUILT, CHAPTERS, EDITIONS, ROOT, page_id, page_of, short,
                    source_of, text_of)

pytestmark = pytest.mark.site


@pytest.mark.parametrize("edition", EDITIONS)
def test_edition_builds_with_zero_warnings(builds, edition):
    if BUILT:
        pytest.skip("BOOK_SITE_BUILT=1: testing the sites built before")
    built = builds[edition]
    problems = [line for line in built["log"].splitlines()
                if re.search(r"WARNING|ERROR|CRITICAL", line)]
    assert built["returncode"] == 0 and not problems, (
        f"the {edition} build failed:\n"
        + "\n".join(problems or built["log"].splitlines()[-60:]))


@pytest.mark.parametrize("edition", EDITIONS)
def test_mathjax_ships_only_what_renders_the_math(site, edition):
    # Every page loads with no failed request (test_pages.py), so what is
    # left is enough; the full MathJax tree is 24 MB.
    tree = EDITIONS[edition] / "_static" / "mathjax"
    size = sum(p.stat().st_size for p in tree.rglob("*") if p.is_file())
    assert (tree / "tex-chtml.js").exists()
    assert size < 3_000_000, f"{size:,} bytes of MathJax"


# --------------------------------------------------------------------------
# The catalogs against what the Chinese build looked up.

PAGE_CATALOGS = sorted(i18n.PAGE_CATALOGS.glob("*.po"))


@pytest.fixture(scope="module")
def looked_up(site):
    """{page: the messages the Chinese build looked up}
    (translated_messages.RecordMessages)."""
    record = i18n.ZH_DOCTREES / "i18n-messages.json"
    return json.loads(record.read_text(encoding="utf-8"))


def test_the_chinese_build_looked_up_every_page(looked_up):
    assert set(looked_up) == {page_of(po) for po in PAGE_CATALOGS}


@pytest.mark.parametrize("po", PAGE_CATALOGS, ids=lambda p: p.stem)
def test_catalog_holds_every_english_string_of_its_page(looked_up, po):
    """The drift check: what the page asks for is what the catalog has."""
    asked = looked_up[page_of(po)]
    with po.open("rb") as handle:
        held = {m.id for m in read_po(handle) if m.id}
    new = [m for m in asked if m not in held]
    gone = sorted(held - set(asked))
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


# --------------------------------------------------------------------------
# Code and outputs, byte for byte.

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


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("docname", CHAPTERS, ids=page_id)
def test_code_and_outputs_are_the_notebooks_own(site, edition, docname):
    """Code cells and stored outputs on each edition's page are the
    notebook's, character for character."""
    shown = shown_blocks(EDITIONS[edition] / f"{docname}.html")
    expected = expected_blocks(source_of(docname))
    assert len(shown) == len(expected), (len(shown), len(expected))
    for number, (got, want) in enumerate(zip(shown, expected), 1):
        if want["source"] is not None:
            assert got["source"].rstrip("\n") == want["source"].rstrip(
                "\n"), f"code cell {number}: source differs"
        assert [o.rstrip("\n") for o in got["outputs"]] == [
            o.rstrip("\n") for o in want["outputs"]], (
            f"code cell {number}: outputs differ")


EXERCISE_TITLE = re.compile(r'<div class="exercise admonition" id="([^"]+)">'
                            r'\s*<p class="admonition-title">(.*?)</p>', re.S)
SOLUTION_TITLE = re.compile(r'<div class="solution dropdown admonition"[^>]*>'
                            r'\s*<p class="admonition-title">.*?'
                            r'<a class="reference internal" href="#([^"]+)">'
                            r"(.*?)</a></p>", re.S)


def exercise_titles(page):
    """{label: the title an exercise of a built page shows}."""
    return {label: " ".join(text_of(title).split())
            for label, title in EXERCISE_TITLE.findall(page)}


def solution_title(exercise):
    """What a solution's title ends with: its exercise's title, "Exercise
    1.1 (...)", and in Chinese order "练习 1.1 解答（...）"."""
    return re.sub(r"^(练习 [\d.]+)（", r"\1 解答（", exercise)


def solutions_misnaming_their_exercise(page):
    """The solution titles of a built page ("练习 1.1 解答（...）") that do
    not end with the title of their exercise, as the exercise shows it."""
    exercises = exercise_titles(page)
    return [(label, " ".join(text_of(title).split()), exercises.get(label))
            for label, title in SOLUTION_TITLE.findall(page)
            if not " ".join(text_of(title).split()).endswith(
                solution_title(exercises.get(label) or "(no exercise)"))]



@pytest.mark.parametrize("edition", EDITIONS)
def test_solution_titles_name_their_exercise_in_the_edition_language(
        site, edition):
    """sphinx-exercise titles a solution from its exercise: the exercise's
    subtitle, translated in the Chinese edition (translated_messages.py),
    is in it."""
    found, wrong, unchinese = 0, [], []
    for docname in CHAPTERS:
        page = (EDITIONS[edition] / f"{docname}.html").read_text(
            encoding="utf-8")
        found += len(SOLUTION_TITLE.findall(page))
        wrong += solutions_misnaming_their_exercise(page)
        # Chinese order, full-width brackets, no space before them
        unchinese += [title for title in exercise_titles(page).values()
                      if edition == "zh" and not re.fullmatch(
                          r"练习 \d+\.\d+（.+）", title)]
    assert found >= len(CHAPTERS), found
    assert not wrong, wrong[:5]
    assert not unchinese, unchinese[:5]


@pytest.mark.site
def test_chinese_footer_has_no_space_after_full_width_punctuation(site):
    # site/templates/author.html: "作者：《…》的作者们", not "作者： 《…";
    # book_zip's licence line after the sentence: "。文字", not "。 文字"
    page = (EDITIONS["zh"] / "book" / "intro.html").read_text(encoding="utf-8")
    footer = " ".join(page[page.index('<footer class="bd-footer-content">'):]
                      .split())
    author = re.search(r'<p class="component-author">(.*?)</p>', footer)
    assert author.group(1).strip().startswith("作者：《"), author.group(1)
    sentences = text_of(re.search(r'<div class="extra_footer">(.*?)</div>',
                                  footer).group(1)).strip()
    assert not re.search(r"[：。] ", sentences), sentences
