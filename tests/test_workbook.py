"""The workbook (tools/workbook.py): chapter 2 written into a temporary
folder, its checks run on the stubs, on the book's own cells, and on the
book's cells with each bug of tools/mutants/02_traversal.toml typed in
(`dev.py mutants --workbook` does this for every chapter)."""
import ast

import nbformat
import pytest

import mutants
import workbook

CHAPTER = "02_traversal"
SHOWN = "named-modules-ignores-remove-duplicate"


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("workbook") / workbook.NAME
    workbook.write(out, [CHAPTER])
    return out


@pytest.fixture(scope="module")
def proof(written):
    return workbook.proofs(written, [CHAPTER], show=SHOWN)[CHAPTER]


def book_cells():
    (chapter,) = mutants.chapters([CHAPTER])
    return {i: mutants.source(c)
            for i, c in mutants.export_cells(chapter.notebook).items()}


def test_nothing_of_a_solution_is_left_in_the_exercise_cells(written):
    nb = nbformat.read(written / "book" / f"{CHAPTER}.ipynb", as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    others = "\n".join(c.source for c in nbformat.read(
        mutants.ROOT / "book" / f"{CHAPTER}.ipynb", as_version=4).cells
        if "export" not in c.metadata.get("tags", []))
    left = []
    for source in book_cells().values():
        for fn in ast.walk(ast.parse(source)):
            if isinstance(fn, ast.FunctionDef) and fn.name not in workbook.KEEP:
                body = fn.body[1:] if ast.get_docstring(fn) else fn.body
                for node in body:
                    for line in ast.unparse(node).splitlines():
                        if len(line.strip()) > 20 and line.strip() in code \
                                and line.strip() not in others:
                            left.append(line.strip())
    assert left == []
    # nor of the exercises' solutions (their checks stay)
    solutions = [c.source for c in nbformat.read(
        mutants.ROOT / "book" / f"{CHAPTER}.ipynb", as_version=4).cells
        if c.metadata.get("jupyter", {}).get("source_hidden")]
    assert len(solutions) >= 5
    assert [s for s in solutions if s in code] == []
    # signatures and docstrings stay; each stub says what it is
    assert 'def named_modules(self, memo: set | None = None, prefix: str = "",' in code
    assert "raise NotImplementedError('named_modules')" in code
    assert "check('named_modules')" in code


def test_every_check_fails_on_the_stubs_and_passes_on_the_book(proof):
    assert proof["stubs"].keys() == proof["book"].keys()
    assert len(proof["book"]) > 10
    # (a test of a signature, which the stub keeps, may pass)
    assert all(bad > 0 for good, bad in proof["stubs"].values())
    assert all(good > 0 and bad == 0 for good, bad in proof["book"].values())


def test_a_reader_writing_in_order_passes_each_check_as_they_go(proof):
    # the book's cells up to a piece, stubs after: the piece's check passes
    # (its tests need nothing written after it)
    in_order = proof["in order"]
    assert in_order.keys() == proof["book"].keys()
    assert all(good > 0 and bad == 0 for good, bad in in_order.values()), (
        in_order)


def test_every_listed_bug_makes_its_check_fail(proof):
    (chapter,) = mutants.chapters([CHAPTER])
    assert proof["mutants"].keys() == {m.id for m in chapter.mutants}
    first_failing = {
        mutant: next((piece for piece, (_, bad) in counts.items() if bad),
                     None)
        for mutant, (start, counts) in proof["mutants"].items()}
    assert None not in first_failing.values(), first_failing
    # each by its own piece's check, the one right after the bug's cell
    late = {m: piece for m, (start, _) in proof["mutants"].items()
            if (piece := first_failing[m]) != start}
    assert not late, f"caught only by a later check: {late}"


def test_a_reader_sees_what_torch_does_where_their_code_differs(proof):
    # The reader forgets remove_duplicate in named_modules (the first bug
    # of the list), and runs the check cell after it.
    shown = proof["shown"]
    assert shown.startswith("check('named_modules'): ")
    assert "  FAILED  named modules remove duplicate false visits every path" \
        in shown
    assert "torch.nn gives: ['last', 'again', 'again.left', 'again.right']" \
        in shown
    assert "your code:      [" in shown
    assert "Traceback" not in shown and len(shown.splitlines()) < 25


def test_a_long_check_names_only_its_failures():
    # chapter 6's check of _apply runs 167 behaviours: a screenful of
    # "passed" would hide the one that failed
    many = {f"test_case_{i}": True for i in range(workbook.SHORT)}
    assert workbook._table({"test_a_b": True, "test_c": False}) == [
        "  passed  a b", "  FAILED  c"]
    assert workbook._table(many) == [f"  passed  case {i}"
                                     for i in range(workbook.SHORT)]
    assert workbook._table({**many, "test_c": False}) == [
        "  FAILED  c", f"  passed  the other {workbook.SHORT}"]
    assert workbook._table({**many, "test_d": True}) == [
        f"  passed  all {workbook.SHORT + 1}"]


def test_the_page_shows_what_that_check_prints(proof):
    # book/workbook.md quotes the check above; "..." stands for lines left out
    page = (mutants.ROOT / "book" / "workbook.md").read_text(encoding="utf-8")
    (quoted,) = [block for block in page.split("```")
                 if block.lstrip().startswith("check('named_modules')")]
    printed = proof["shown"].splitlines()
    missing = [line for line in quoted.strip("\n").splitlines()
               if line.strip() != "..." and line not in printed]
    assert not missing, missing
