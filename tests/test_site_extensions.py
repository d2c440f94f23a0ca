"""The site's extensions (site/) and the checks' own pieces, tested without a
build: what decides a name's index entry, which browser prints and browses,
how the single page's links are made, what the checks see as a problem."""
from types import SimpleNamespace as Request

import numpy as np
import pytest
from docutils import nodes

import book_pdf
import book_print
import book_search
import languages
import pdf_scan
from checks import Recorder, alt_is_a_description, new_context


def test_index_entries_are_every_name_a_cell_defines():
    source = '''
class Module:
    def state_dict(self):
        pass

    def _load_one(self):
        pass

    def __setattr__(self, name, value):
        pass


class ParameterList(Module):
    def __call__(self, *args):
        pass


def _helper():
    pass


Module.__call__ = Module._helper
Module._version = 1
'''
    assert book_search.defined_names(source, 7, {"__call__"}) == [
        ("Module; class, chapter 7", "Module", "main"),
        ("state_dict(); Module method, chapter 7", "state_dict", "main"),
        ("_load_one(); Module method, chapter 7", "_load_one", "main"),
        ("__setattr__(); Module method, chapter 7", "__setattr__", "main"),
        ("ParameterList; class, chapter 7", "ParameterList", "main"),
        ("__call__(); ParameterList method, chapter 7", "__call__", ""),
        ("_helper(); function, chapter 7", "_helper", "main"),
        ("__call__(); Module method, chapter 7", "__call__", "main")]
    assert book_search.chapter_number("book/05_hooks") == 5
    assert book_search.chapter_number("book/glossary") is None


def test_the_browser_is_the_headless_shell_when_there(tmp_path, monkeypatch):
    shell, full = tmp_path / "shell", tmp_path / "full"
    monkeypatch.setattr(book_print, "BROWSERS", (str(shell), str(full)))
    monkeypatch.delenv("BOOK_CHROMIUM", raising=False)
    assert book_print.chromium() == str(shell)  # none installed: what to install
    full.touch()
    assert book_print.chromium() == str(full)
    shell.touch()
    assert book_print.chromium() == str(shell)
    monkeypatch.setenv("BOOK_CHROMIUM", "/opt/another/chrome")
    assert book_print.chromium() == "/opt/another/chrome"


def test_the_single_page_links_a_section_of_another_page_within_itself():
    tree = nodes.paragraph()
    uris = ["#document-book/05_hooks#handles", "#document-book/05_hooks",
            "#handles", "https://pytorch.org/#x", "genindex.html"]
    tree.extend(nodes.reference("", "", refuri=uri) for uri in uris)
    tree.append(nodes.reference("", "", refid="local"))
    app = Request(builder=Request(name="singlehtml"))
    book_pdf.links_within_the_page(app, tree, "book/intro")
    assert [r.get("refuri") for r in tree.findall(nodes.reference)] == [
        "#handles", *uris[1:], None]
    tree[0]["refuri"] = uris[0]
    book_pdf.links_within_the_page(Request(builder=Request(name="html")),
                                   tree, "book/intro")
    assert tree[0]["refuri"] == uris[0]  # the site's pages are left alone


def test_each_edition_prints_from_its_own_folder():
    assert book_pdf.whole_book_dir("_build/.doctrees").as_posix() == (
        "_build/whole-book")
    assert book_pdf.whole_book_dir("_build/.doctrees-zh").as_posix() == (
        "_build/whole-book-zh")


def test_alt_text_check_tells_a_path_from_a_description():
    assert not alt_is_a_description("../_images/e1b18ba7.png")
    assert not alt_is_a_description("_build/jupyter_execute/e1b18ba7")
    assert not alt_is_a_description("")
    assert not alt_is_a_description(None)
    assert alt_is_a_description("AlexNet as a tree of named modules")
    assert alt_is_a_description("每行一个点：mininn 时间 / torch.nn 时间")


def test_recorder_forgives_only_an_icon_cancelled_by_leaving_the_page():
    told = ["http://127.0.0.1:8000/_static/favicon.svg (HTTP 404)"]
    recorder = Recorder("http://127.0.0.1:8000/", told)
    for url, failure in [
            ("http://127.0.0.1:8000/_static/favicon.svg", "net::ERR_ABORTED"),
            ("http://127.0.0.1:8000/favicon.ico", "net::ERR_ABORTED"),
            ("http://127.0.0.1:8000/_static/favicon.svg", "net::ERR_FAILED"),
            ("http://127.0.0.1:8000/_images/favicon.svg.png",
             "net::ERR_ABORTED"),
            ("http://127.0.0.1:8000/_static/book.css", "net::ERR_ABORTED"),
            ("https://example.org/favicon.ico", "net::ERR_ABORTED")]:
        recorder._failed(Request(url=url, failure=failure))
    _, failed, external = recorder.take()
    assert failed == [
        "http://127.0.0.1:8000/_static/favicon.svg (net::ERR_FAILED)",
        "http://127.0.0.1:8000/_images/favicon.svg.png (net::ERR_ABORTED)",
        "http://127.0.0.1:8000/_static/book.css (net::ERR_ABORTED)",
        "http://127.0.0.1:8000/_static/favicon.svg (HTTP 404)"]
    assert external == ["https://example.org/favicon.ico"]
    assert told == [] and recorder.take() == ([], [], [])  # taken once


LEAKY_PAGE = """<!DOCTYPE html><html><head><title>leaky</title>
<link rel="stylesheet" href="gone.css"></head><body>
<img src="here.svg" alt=""><img src="http://192.0.2.1/far.png" alt="">
<script src="https://cdn.example.org/lib.js"></script>
<script>fetch("gone.json")</script></body></html>"""


@pytest.mark.site
def test_recorder_sees_what_a_page_misses_and_every_request_off_the_machine(
        browser, tmp_path):
    # the server tells what it could not answer; Chromium, as the checks
    # launch it, fails any request that leaves the machine (a name or an
    # address), wherever they run
    (tmp_path / "leaky.html").write_text(LEAKY_PAGE)
    (tmp_path / "here.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>')
    answered = []
    with book_print.serve(tmp_path, errors=answered) as base:
        context, page, recorder = new_context(
            browser, base, answered, viewport={"width": 800, "height": 600})
        why = {}
        page.on("requestfailed", lambda r: why.update({r.url: r.failure}))
        page.goto(base + "leaky.html", wait_until="networkidle")
        errors, failed, external = recorder.take()
        context.close()
    assert sorted(external) == ["http://192.0.2.1/far.png",
                                "https://cdn.example.org/lib.js"]
    # refused by the proxy that is not there: not sent, even where the
    # name resolves and the address answers
    assert {why[url] for url in external} == {
        "net::ERR_PROXY_CONNECTION_FAILED"}
    assert f"{base}gone.css (HTTP 404)" in failed
    assert f"{base}gone.json (HTTP 404)" in failed
    assert not [f for f in failed if "here.svg" in f or "leaky" in f]
    assert errors  # Chromium says each failure on the console too


def test_green_is_found_in_bytes_as_in_wider_integers():
    # greenish() works on the rendered bytes (no int16 copy of each page):
    # the same pixels as G - max(R, B) > GREEN_MARGIN, at the clamp too.
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (64, 64, 4), dtype=np.uint8)
    edges = [(194, 255, 0), (195, 255, 0), (255, 255, 255), (0, 61, 0),
             (0, 60, 0), (0, 255, 194), (0, 255, 195)]
    image[0, :len(edges), :3] = edges
    wide = image[:, :, :3].astype(np.int16)
    expected = (wide[:, :, 1] - np.maximum(wide[:, :, 0], wide[:, :, 2])
                > pdf_scan.GREEN_MARGIN)
    assert (pdf_scan.greenish(image) == expected).all()
    assert list(expected[0, :len(edges)]) == [True, False, False, True,
                                              False, True, False]


def test_a_changed_static_file_site_catalog_or_terms_rewrites_every_page(
        tmp_path, monkeypatch):
    # Sphinx tracks the pages' sources, not these: their digest is a config
    # value of kind "html", and Sphinx writes every page when one changes
    static = tmp_path / "site" / "static" / "book.css"
    catalog = tmp_path / "locale" / "zh_CN" / "LC_MESSAGES" / "book_site.po"
    terms = tmp_path / "TERMS.md"
    for path in (static, catalog, terms):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("v1")
    monkeypatch.setattr(languages, "ROOT", tmp_path)
    monkeypatch.setattr(languages, "TERMS", terms)

    def digest():
        config = Request()
        languages._untracked_files(None, config)
        return config.book_untracked_files

    seen = [digest()]
    for path in (static, catalog, terms):
        path.write_text("v2")
        seen.append(digest())
    assert len(set(seen)) == 4

    class App:  # records what the extension asks of Sphinx
        calls = []

        def __getattr__(self, name):
            return lambda *args, **kwargs: self.calls.append((name, args))

    monkeypatch.setattr(languages, "_fast_chinese_search", lambda: None)
    languages.setup(App())
    assert ("add_config_value", ("book_untracked_files", "", "html")) \
        in App.calls
    assert ("connect", ("config-inited", languages._untracked_files)) \
        in App.calls
