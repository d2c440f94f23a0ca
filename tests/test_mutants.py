"""The lists of deliberate bugs behind `python3 tools/dev.py mutants` still
apply to today's export cells, and the runner never counts a bug that
applies nowhere as caught. (Running the bugs is too slow for the test
command; this checks that they can be run.)"""
from pathlib import Path

import pytest

import mutants

ROOT = Path(__file__).resolve().parent.parent

EXPORTING = [p for p in sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
             if mutants.export_cells(p)]
LISTS = sorted(mutants.LISTS.glob("*.toml"))


def test_every_chapter_that_exports_code_has_at_least_three_bugs():
    have = {c.stem: len(c.mutants) for c in mutants.chapters()}
    short = {p.stem: have.get(p.stem, 0) for p in EXPORTING
             if have.get(p.stem, 0) < 3}
    assert not short, f"chapters with fewer than 3 listed bugs: {short}"
    assert sum(have.values()) >= 30, have


@pytest.mark.parametrize("path", LISTS, ids=lambda p: p.stem)
def test_every_listed_bug_applies_to_todays_cells(path):
    chapter = mutants.load(path)
    cells = mutants.export_cells(chapter.notebook)
    problems = {m.id: mutants.problem(m, cells) for m in chapter.mutants}
    assert not {k: v for k, v in problems.items() if v}, problems
    for test in chapter.tests:
        assert (ROOT / test).is_file(), test


@pytest.mark.parametrize("path", LISTS, ids=lambda p: p.stem)
def test_every_bug_says_why_it_is_realistic(path):
    for mutant in mutants.load(path).mutants:
        assert len(mutant.why.split()) >= 5, mutant.name


def fake(tmp_path, body):
    book = tmp_path / "book"
    book.mkdir()
    cell = ('{"cell_type": "code", "id": "abc", "metadata": {"tags": '
            '["export"]}, "source": ["def f(x):\\n", "    return x + 1\\n"], '
            '"outputs": [], "execution_count": 1}')
    (book / "01_fake.ipynb").write_text(
        '{"cells": [' + cell + '], "metadata": {}, "nbformat": 4, '
        '"nbformat_minor": 5}')
    lists = tmp_path / "lists"
    lists.mkdir()
    (lists / "01_fake.toml").write_text('tests = []\n' + body)
    return lists


def bug(find, replace, cell="abc"):
    return (f"[[mutant]]\nid = \"b\"\ncell = \"{cell}\"\n"
            f"find = '''{find}'''\nreplace = '''{replace}'''\n"
            "why = \"an off-by-one a person could make\"\n")


@pytest.mark.parametrize("find, replace, cell, expected", [
    ("x + 1", "x + 2", "abc", None),
    ("x - 1", "x + 2", "abc", "occurs 0 times"),
    ("x", "y", "abc", "occurs 2 times"),
    ("x + 1", "x + 1", "abc", "changes nothing"),
    ("x + 1", "x +", "abc", "not valid Python"),
    ("x + 1", "x + 2", "zzz", "no export cell"),
])
def test_the_runner_says_why_a_bug_does_not_apply(
        tmp_path, monkeypatch, find, replace, cell, expected):
    monkeypatch.setattr(mutants, "ROOT", tmp_path)
    lists = fake(tmp_path, bug(find, replace, cell))
    chapter = mutants.load(lists / "01_fake.toml")
    why = mutants.problem(chapter.mutants[0],
                          mutants.export_cells(chapter.notebook))
    assert (why is None) if expected is None else (expected in why), why


def test_a_bug_that_applies_nowhere_fails_the_run(tmp_path, monkeypatch,
                                                  capsys):
    monkeypatch.setattr(mutants, "ROOT", tmp_path)
    monkeypatch.setattr(mutants, "LISTS", fake(tmp_path, bug("x - 1", "x")))
    assert mutants.main([]) == 1
    out = capsys.readouterr().out
    assert "NOT APPLIED  01_fake/b" in out
    assert "mutants: 0 of 1 caught, 0 missed, 1 not applied" in out


def test_a_malformed_list_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(mutants, "ROOT", tmp_path)
    lists = fake(tmp_path, '[[mutant]]\nid = "b"\ncell = "abc"\n')
    with pytest.raises(ValueError, match="exactly the fields"):
        mutants.load(lists / "01_fake.toml")
