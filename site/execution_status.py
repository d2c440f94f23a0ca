"""Sphinx extension: the execution-status table (the directive
`execution-status`, on book/gpu_runs.md), in the spirit of QuantEcon's
status page. Its rows come from reports/execution.json, which
`python3 tools/dev.py outputs` writes as it re-runs each chapter in a fresh
kernel and stores what it printed: per chapter, its code cells, whether
every cell ran, the seconds it took, the day, and the Python, torch and
machine it ran on. The test command's nbval then re-runs every chapter and
compares each output with the stored one (tests/test_execution_status.py
checks that the record covers the notebooks as they are).
"""
import json
from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from site_catalog import N_, _

RECORD = Path("reports") / "execution.json"
STATUS = {"passed": N_("every cell ran"), "failed": N_("a cell failed")}


def rows(srcdir):
    """[(notebook path under book/, its record)], in the chapters' order."""
    runs = json.loads((Path(srcdir) / RECORD).read_text(encoding="utf-8"))
    return sorted(runs.items())


class ExecutionStatus(SphinxDirective):
    def run(self):
        self.env.note_dependency(str(Path(self.env.srcdir) / RECORD))
        head = [_("Chapter"), _("Code cells"), _("Status"), _("Seconds"),
                _("Outputs stored")]
        lines = ["| " + " | ".join(head) + " |",
                 "|" + "---|" * len(head)]
        machines = {}
        for notebook, run in rows(self.env.srcdir):
            number = int(notebook.partition("_")[0])
            chapter = _("Chapter {number}").format(number=number)
            lines.append("| " + " | ".join([
                f"[{chapter}]({notebook})", str(run["code_cells"]),
                _(STATUS[run["status"]]), f"{run['seconds']:.0f}",
                run["date"]]) + " |")
            machines.setdefault(
                f"Python {run['python']}, torch {run['torch']}, "
                f"{run['machine']}", number)
        lines += ["", _("Run with {machines}.").format(
            machines="; ".join(machines))]
        made = self.parse_text_to_nodes("\n".join(lines))
        for node in (n for part in made for n in part.findall(
                nodes.paragraph)):
            # written in the build's language already (site_catalog), and
            # its numbers change with each run: not for the page's catalog
            # (paragraphs only: Sphinx removes an inline that says it)
            node["translatable"] = False
        return made


def setup(app):
    app.add_directive("execution-status", ExecutionStatus)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
