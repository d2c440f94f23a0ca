"""The Chinese edition's catalogs (issue 20), checked alone: no build.

Every entry of every locale/zh_CN/LC_MESSAGES/book/<page>.po is translated
and not fuzzy, and keeps the code marks, link targets, term targets and math
of its English; so is every entry of book_site.po (the words the site's
extensions write themselves, site/*.py: the note under each title, the PDF's
cover and metadata, the footer's licence line), which holds every message of
those files and keeps the tags and {fields} of its English.

That each page's catalog holds every English string the page has, and that
code and outputs are the notebooks' own, is checked on the built site
(tests/test_site_editions.py).

A failure names the catalog and the English string (msgid). To fix one:
`python3 tools/dev.py i18n`, then translate what it lists
(locale/zh_CN/README.md).
"""
import re
from collections import Counter
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

import i18n  # tools/i18n.py: where the catalogs are
from checks import page_of, short

ROOT = Path(__file__).resolve().parent.parent
CATALOGS = sorted(i18n.CATALOGS.rglob("*.po"))
PAGE_CATALOGS = sorted(i18n.PAGE_CATALOGS.glob("*.po"))


def messages(po):
    with po.open("rb") as handle:
        return [m for m in read_po(handle) if m.id]


def test_there_is_a_catalog_for_every_page():
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = {toc["root"]} | {c["file"] for part in toc["parts"]
                             for c in part["chapters"]}
    assert {page_of(po) for po in PAGE_CATALOGS} == pages
    assert set(CATALOGS) == {*PAGE_CATALOGS, i18n.SITE_CATALOG,
                             i18n.THEME_CATALOG}


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


def test_site_catalog_holds_every_message_of_the_extensions():
    """The drift check of book_site.po: what site/*.py ask for (their
    `_("...")` and `N_("...")`, as `tools/i18n.py update` extracts them) is
    what the catalog has."""
    from babel.messages.extract import extract_from_dir

    asked = [message for _file, _line, message, *_ in extract_from_dir(
        ROOT / "site", keywords={"_": None, "N_": None})]
    held = {m.id for m in messages(i18n.SITE_CATALOG)}
    new = [m for m in asked if m not in held]
    gone = sorted(held - set(asked))
    assert asked and not new and not gone, (
        f"{i18n.SITE_CATALOG.relative_to(ROOT)} differs from site/*.py "
        f"(run `python3 tools/dev.py i18n` and translate): "
        f"new {[short(m) for m in new]}, "
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
    assert not problems, "book_site.po:\n" + "\n".join(problems)


def test_html_marks_are_found():
    english = 'Take <code>{zip}</code>: <a href="{home}">the site</a>.'
    good = '下载 <code>{zip}</code>：<a href="{home}">网站</a>。'
    assert html_marks(english) == html_marks(good)
    for bad in (good.replace("{zip}", "{zip_name}"),
                good.replace('href="{home}"', 'href="home"'),
                good.replace("<code>", "")):
        assert html_marks(english) != html_marks(bad), bad


# --------------------------------------------------------------------------
# One concept, one word (locale/zh_CN/TERMS.md, "Words not to use")

TERMS = i18n.LOCALE / i18n.LANGUAGE / "TERMS.md"


def words_not_to_use():
    """{word: what to use instead}, from the last table of TERMS.md."""
    table = TERMS.read_text().split("## Words not to use", 1)[1]
    rows = re.findall(r"^\| (\S+) \| (.+?) \|$", table, re.M)
    return {word: use for word, use in rows if word != "not"}


def words_outside_code(text):
    """A translation without its code spans; a {term} keeps its text."""
    text = ROLE.sub(lambda m: re.sub(r"\s*<[^<>]+>\s*$", "", m[2]), text)
    return CODE.sub(" ", text)


@pytest.mark.parametrize("po", PAGE_CATALOGS, ids=lambda p: p.stem)
def test_one_word_per_concept(po):
    """A reader meets one Chinese word per concept: none of the words
    TERMS.md retired (撤回 for 移除, 跟踪 for 追踪, ...) comes back."""
    rejected = words_not_to_use()
    problems = [f"  {short(m.id)!r}: {word} (TERMS.md: {use})"
                for m in messages(po) if m.string
                for word, use in rejected.items()
                if word in words_outside_code(m.string)]
    assert not problems, (f"{po.relative_to(ROOT)}:\n" + "\n".join(problems))


def test_words_not_to_use_are_read():
    rejected = words_not_to_use()
    assert {"撤回", "跟踪", "并排", "状态字典"} <= set(rejected)
    assert "并排" not in words_outside_code("`并排` 与 {term}`句柄 <handle>`")
    assert "句柄" in words_outside_code("`并排` 与 {term}`句柄 <handle>`")
