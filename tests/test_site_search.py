"""The index and the search as a map of mininn (site/book_search.py): a
search for any name mininn defines, private ones included, puts the cell
that defines it first, in both editions (a name Module also defines, at
Module's cell), and the Chinese edition's search knows Chinese words."""
import json
import re

import nbformat
import pytest

import book_search
import languages
from checks import (ANSWERED, CHAPTERS, EDITIONS, PAGES, english_chrome, js,
                    new_context, page_id, source_of, translations)

WIDE = {"width": 1400, "height": 1000}

# The methods the book is built around, private all but one: each must
# lead to Module's own cell, not a container's or a hook's.
BOOK_METHODS = ("_apply", "_call_impl", "_wrapped_call_impl",
                "_save_to_state_dict", "_load_from_state_dict", "__call__")


def defining_chapters():
    """({bare name: {docnames of the chapters that define it}},
    {name: {docnames of the chapters that define it on Module}}) for every
    class, function and method that an export cell defines, private ones
    included (book_search's `definitions`: the exporter's, and the methods
    bound by assignment): what a reader may type into the search box."""
    where, on_module = {}, {}
    for docname in CHAPTERS:
        nb = nbformat.read(source_of(docname), as_version=4)
        for cell in nb.cells:
            if "export" not in cell.metadata.get("tags", []):
                continue
            for _, name, owner in book_search.definitions(cell.source):
                where.setdefault(name, set()).add(docname)
                if owner == "Module":
                    on_module.setdefault(name, set()).add(docname)
    return where, on_module


def definitions():
    """{name: {the chapters whose cell a search for it must put first}}:
    those that define it, or, for a name Module defines too (`__call__`,
    `__init__`), those that define it on Module."""
    where, on_module = defining_chapters()
    return where | on_module


def test_every_name_of_mininn_is_searched_for():
    import mininn

    where, on_module = defining_chapters()
    methods = {key.partition(".")[2] for key in mininn.METHODS}
    assert methods <= set(where), methods - set(where)
    assert set(mininn.__all__) <= set(where), set(mininn.__all__) - set(where)
    # Every function Module holds, however it got there (`Module.__call__ =
    # Module._wrapped_call_impl` included), is known as Module's.
    held = {name for name, value in vars(mininn.Module).items()
            if getattr(value, "__module__", "").startswith("mininn")
            and callable(value)}
    assert held <= set(on_module), held - set(on_module)
    assert set(BOOK_METHODS) <= set(on_module)


# Chinese typed as a reader types it, without spaces, and where the search
# must lead first: a glossary term to its definition (the glossary's index
# entry), a phrase to the chapter whose headings hold its words.
CHINESE_PHRASES = {
    "注册缓冲区": "book/01_registration",        # register a buffer
    "遍历子模块": "book/02_traversal",           # walk the submodules
    "前向钩子": "book/05_hooks",                 # forward hook
    "反向钩子梯度": "book/05_hooks",             # backward hook, gradient
    "移动模型": "book/06_apply",                 # move a model
    "随机种子": "book/09_capstone",              # random seed
    "训练模式": "book/glossary#term-training-mode",
    "持久缓冲区": "book/glossary#term-persistent-buffer",
    "全局钩子": "book/glossary#term-global-hook",
    "导出单元格": "book/glossary#term-export-cell",
    "锁页内存": "book/glossary#term-pinned-memory",
}


@pytest.fixture(scope="module", params=EDITIONS)
def searched(request, browser, site):
    """(edition, {query: the first results, as the search page ranks
    them}, what went wrong on the search page)."""
    edition = request.param
    context, page, recorder = new_context(browser, site[edition], ANSWERED,
                                          viewport=WIDE)
    queries = sorted(definitions()) + (
        list(CHINESE_PHRASES) if edition == "zh" else [])
    # every query ranked at once, by the search page's own searchtools.js
    page.goto(site[edition] + "search.html", wait_until="load")
    page.wait_for_function(
        "() => typeof Search !== 'undefined' && !!Search._index",
        timeout=20_000)
    found = page.evaluate(js("search"), queries)
    # the search page's own words (the page the crawl does not walk)
    found["(words)"] = page.evaluate(js("english"))
    # The text a result quotes from a page, and what the page shows
    # first and last: its title, its last paragraph, its note on the zip.
    found["(snippet)"] = page.evaluate("""async (url) => {
      const html = await (await fetch(url)).text();
      const shown = new DOMParser().parseFromString(html, "text/html");
      const text = (e) => e ? e.textContent.replace("#", "").trim() : null;
      const paragraphs = shown.querySelectorAll("article.bd-article p");
      return {text: Search.htmlToText(html, "").trim(),
              title: text(shown.querySelector("article.bd-article h1")),
              last: text(paragraphs[paragraphs.length - 1]),
              note: text(shown.querySelector("p.book-downloads"))};
    }""", site[edition] + "book/06_apply.html")
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
    for name, docnames in sorted(definitions().items()):
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


@pytest.mark.site
def test_chinese_search_page_shows_no_english_but_names(searched):
    edition, found, _ = searched
    if edition != "zh":
        pytest.skip("the Chinese edition's words")
    problems = english_chrome(found["(words)"])
    assert not problems, problems


@pytest.mark.site
def test_search_quotes_the_prose_not_the_page_chrome(searched):
    # the header's buttons (".zip .pdf 中文 Light Dark System Settings"),
    # the note under the title, the contents list, previous/next: none
    _, found, _ = searched
    snippet = found["(snippet)"]
    assert snippet["title"] and snippet["note"] and snippet["last"]
    assert snippet["text"].startswith(snippet["title"]), snippet["text"][:200]
    assert snippet["text"].endswith(snippet["last"]), snippet["text"][-200:]
    assert snippet["note"] not in snippet["text"]


INDEX_ENTRY = {  # the second level of an entry, in the edition's language
    "en": re.compile(
        r"(class|function|[A-Za-z_][A-Za-z0-9_]* method), chapter \d+"),
    "zh": re.compile(r"(类|函数|[A-Za-z_][A-Za-z0-9_]* 的方法)，第 \d+ 章")}
MODULE_METHOD = {"en": "Module method", "zh": "Module 的方法"}


@pytest.mark.site
@pytest.mark.parametrize("edition", EDITIONS)
def test_index_entries_say_what_and_where_for_every_name(site, edition):
    index = (EDITIONS[edition] / "genindex.html").read_text(encoding="utf-8")
    # {first level: [(bold, second level), ...]} for each entry with a
    # cell (an anchor "mininn-...") under it.
    entries = {}
    for name, under in re.findall(r"<li>\s*([^<]+?)(?:\(\))?\s*<ul>(.*?)"
                                  r"</ul></li>", index, re.DOTALL):
        for bold, text in re.findall(
                r'<a href="[^"]*#mininn-[^"]*">(<strong>)?(.*?)'
                r"(?:</strong>)?</a>", under):
            entries.setdefault(name.strip(), []).append((bool(bold), text))
    missing = set(definitions()) - set(entries)
    assert not missing, sorted(missing)
    bad = [text for found in entries.values() for _, text in found
           if not INDEX_ENTRY[edition].fullmatch(text)]
    assert not bad, bad[:10]
    # The main (bold) entry of a name Module defines is Module's alone:
    # ParameterList.__call__ is there, after it.
    _, on_module = defining_chapters()
    wrong = {name: found for name, found in entries.items()
             if any(bold != (name not in on_module
                             or text.startswith(MODULE_METHOD[edition]))
                    for bold, text in found)}
    assert not wrong, wrong


def chinese_index():
    text = (EDITIONS["zh"] / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1:text.rindex(")")])


@pytest.mark.site
def test_chinese_search_indexes_chinese_words(site):
    """html_search_language "zh" (jieba): the glossary's Chinese words are
    search terms that lead to the glossary."""
    index = chinese_index()
    glossary = index["docnames"].index("book/glossary")
    hits = index["terms"].get("缓冲区")
    assert hits is not None, "缓冲区 is not a search term"
    assert glossary in (hits if isinstance(hits, list) else [hits])


@pytest.mark.site
def test_every_term_of_the_term_table_is_a_search_word(site):
    """jieba cut a word it did not know into pieces, and the search drops
    one-character pieces (优化器 -> 优化 + 器): the word could never be
    found. Every word of TERMS.md that the Chinese text uses is whole in
    the index (languages.py's user dictionary)."""
    index = chinese_index()
    text = "".join(message for docname in PAGES
                   for message in translations(docname).values())
    words = languages.term_table_words(languages.TERMS.read_text(
        encoding="utf-8"))
    used = [word for word in words if word in text]
    assert len(used) >= 100, used
    missing = [word for word in used if word not in index["terms"]
               and word not in index["titleterms"]]
    assert not missing, f"{len(missing)} of {len(used)}: {missing}"


def test_the_term_table_gives_its_chinese_words():
    table = ("| English | 中文 | note |\n|---|---|---|\n"
             "| buffer | 缓冲区 | |\n"
             "| persistent / non-persistent buffer | 持久缓冲区 / 非持久缓冲区 | |\n"
             "| meta device | meta 设备 | `meta` |\n"
             "| layer | 层 | 线性层 |\n"
             "| tie | 绑定, 绑定的权重 | |\n")
    assert languages.term_table_words(table) == [
        "缓冲区", "持久缓冲区", "非持久缓冲区", "设备", "绑定", "绑定的权重"]


@pytest.mark.site
def test_chinese_phrases_typed_without_spaces_find_their_place_first(
        searched):
    """The browser cuts a Chinese query into the index's words
    (search_scorer.js's splitQuery): 注册缓冲区 is 注册 + 缓冲区."""
    edition, found, _ = searched
    if edition != "zh":
        pytest.skip("Chinese queries")
    wrong = {query: found[query][:3] for query, place in
             CHINESE_PHRASES.items()
             if not found[query] or not (found[query][0] == place or (
                 "#" not in place
                 and found[query][0].partition("#")[0] == place))}
    assert not wrong, wrong
