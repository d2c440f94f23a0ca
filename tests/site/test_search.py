"""The index and the search as a map of mininn (site/book_search.py): a
search for any public name of mininn puts the cell that defines it first,
in both editions, and the Chinese edition's search knows Chinese words."""
import json
import re

import nbformat
import pytest

import book_search
import export
from checks import (ANSWERED, CHAPTERS, EDITIONS, new_context, page_id,
                    search_results, source_of)

WIDE = {"width": 1400, "height": 1000}


def public_definitions():
    """{bare name: {docnames of the chapters that define it}} for every
    public class, function and method that an export cell defines (the
    exporter's own `definitions`): what a reader may type into the search
    box."""
    where = {}
    for docname in CHAPTERS:
        nb = nbformat.read(source_of(docname), as_version=4)
        for cell in nb.cells:
            if "export" not in cell.metadata.get("tags", []):
                continue
            for _, name, owner in export.definitions(cell.source):
                if book_search.public(name) and (
                        owner is None or book_search.public(owner)):
                    where.setdefault(name, set()).add(docname)
    return where


def test_every_public_name_of_mininn_is_searched_for():
    import mininn

    names = public_definitions()
    methods = {key.partition(".")[2] for key in mininn.METHODS
               if all(book_search.public(part) for part in key.split("."))}
    assert methods and methods <= set(names), methods - set(names)
    assert set(mininn.__all__) <= set(names), set(mininn.__all__) - set(names)


@pytest.fixture(scope="module", params=EDITIONS)
def searched(request, browser, site):
    """(edition, {query: the first results, as the search page ranks
    them}, what went wrong on the search page)."""
    edition = request.param
    context, page, recorder = new_context(browser, site[edition], ANSWERED,
                                          viewport=WIDE)
    found = search_results(page, site[edition], sorted(public_definitions()))
    problems = recorder.take()
    context.close()
    return edition, found, problems


@pytest.mark.site
def test_search_puts_the_cell_that_defines_a_name_first(searched):
    # Sphinx's search ranks index entries first, but skips one more than
    # twice as long as the query: "load_state_dict() (Module method)" was
    # never found for "load_state_dict".
    _, found, problems = searched
    assert not any(problems), problems
    wrong = {}
    for name, docnames in sorted(public_definitions().items()):
        first = (found[name] or ["(nothing)"])[0]
        page, _, anchor = first.partition("#")
        if page not in docnames or not anchor.startswith("mininn-"):
            wrong[name] = (first, sorted(page_id(d) for d in docnames))
    assert not wrong, (f"{len(wrong)} of {len(found)} names do not find "
                       f"their defining cell first: {wrong}")


@pytest.mark.site
def test_search_finds_the_chapter_about_what_is_searched(searched):
    _, found, _ = searched
    assert found["state_dict"][0].startswith("book/07_state_dict#")
    assert found["register_forward_hook"][0].startswith("book/05_hooks#")


INDEX_ENTRY = re.compile(
    r"(class|function|[A-Za-z_][A-Za-z0-9_]* method), chapter \d+")


@pytest.mark.site
@pytest.mark.parametrize("edition", EDITIONS)
def test_index_entries_say_what_and_where_and_leave_out_helpers(site,
                                                                edition):
    index = (EDITIONS[edition] / "genindex.html").read_text(encoding="utf-8")
    links = re.findall(r'<a href="([^"]*#mininn-[^"]*)">(?:<strong>)?(.*?)'
                       r"(?:</strong>)?</a>", index)
    assert len(links) >= len(public_definitions())
    bad = [text for _, text in links if not INDEX_ENTRY.fullmatch(text)]
    assert not bad, bad[:10]
    names = re.findall(r"<li>([^<]+?)(?:\(\))?\s*<ul>", index)
    helpers = [n for n in names if not book_search.public(n.strip())]
    assert not helpers, helpers


@pytest.mark.site
def test_chinese_search_indexes_chinese_words(site):
    """html_search_language "zh" (jieba): the glossary's Chinese words are
    search terms that lead to the glossary."""
    text = (EDITIONS["zh"] / "searchindex.js").read_text(encoding="utf-8")
    index = json.loads(text[text.index("(") + 1:text.rindex(")")])
    glossary = index["docnames"].index("book/glossary")
    hits = index["terms"].get("缓冲区")
    assert hits is not None, "缓冲区 is not a search term"
    assert glossary in (hits if isinstance(hits, list) else [hits])
