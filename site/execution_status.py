"""Sphinx extension: the directive `execution-status` (book/gpu_runs.md), a
table of each chapter's last run from reports/execution.json, which
`python3 tools/dev.py outputs` writes as it re-runs each chapter."""
import json
from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from site_catalog import N_, _

RECORD = Path("reports") / "execution.json"
STATUS = {"passed": N_("every cell ran"), "failed": N_("a cell failed")}


class ExecutionStatus(SphinxDirective):
    def run(self):
        record = Path(self.env.srcdir) / RECORD
        self.env.note_dependency(str(record))
        head = [_("Chapter"), _("Code cells"), _("Status"), _("Seconds"),
                _("Outputs stored")]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        machines = {}
        runs = json.loads(record.read_text(encoding="utf-8"))
        for notebook, run in sorted(runs.items()):
            number = int(notebook.partition("_")[0])
            chapter = _("Chapter {number}").format(number=number)
            lines.append("| " + " | ".join([
                f"[{chapter}]({notebook})", str(run["code_cells"]),
                _(STATUS[run["status"]]), f"{run['seconds']:.0f}",
                run["date"]]) + " |")
            machines.setdefault(f"Python {run['python']}, torch "
                                f"{run['torch']}, {run['machine']}")
        lines += ["", _("Run with {machines}.").format(
            machines="; ".join(machines))]
        made = self.parse_text_to_nodes("\n".join(lines))
        for part in made:
            for node in part.findall(nodes.paragraph):
                # in the build's language already, new numbers each run:
                # not for the catalog (Sphinx ignores it on an inline)
                node["translatable"] = False
        return made


def setup(app):
    app.add_directive("execution-status", ExecutionStatus)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
