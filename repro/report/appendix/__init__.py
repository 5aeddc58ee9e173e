"""The Artifact Appendix (the ACM / cTuning structure), generated from the configuration, never typed in.

    container.py   the Dockerfile, the compose files and pyproject.toml, read as data
    claim_rows.py  one row per claim: finding, command, hardware, cost, rule and expected result, badge,
                   readings; with results, the verdict and the run records behind it
    parts.py       the parts as typed data: check-list items, data sets, weights, the Appendix
    sections.py    the prose parts worded from the facts: abstract, check-list, hardware, software,
                   installation, workflow, evaluation, customisation, notes
    build.py       the facts computed once and the Appendix assembled, in the standard order
    render.py      Markdown and LaTeX, and write_appendix: the files beside each report

`repro appendix` (repro.cli.appendix) writes one on demand; docs/artifact-appendix.md describes it.
"""

from repro.report.appendix.build import Appendix, Inputs, build_appendix
from repro.report.appendix.render import APPENDIX_NAME, FORMATS, appendix_inputs, render, write_appendix

__all__ = [
    "APPENDIX_NAME",
    "Appendix",
    "FORMATS",
    "Inputs",
    "appendix_inputs",
    "build_appendix",
    "render",
    "write_appendix",
]
