"""`repro rho`'s terminal tables (80 columns: ids and numbers never wrap, long text goes below) and JSON."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from repro.rho.paper_settings import Reference, Zone

LABELS = {"head_only": "head-only MoE", "as_built": "as built", "routed": "--route", "target": "--target"}
SIDES: dict[Zone, str] = {"below_floor": "below {f}", "below_threshold": "below {t}", "above_threshold": "above {t}"}


def side(reference: Reference, zone: Zone) -> str:
    return SIDES[zone].format(f=reference.floor.printed, t=reference.threshold.printed)


def _table(*columns: str) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    for i, name in enumerate(columns):
        table.add_column(name, no_wrap=True, justify="left" if i == 0 else "right")
    return table


def _gmac(macs: int) -> str:
    return f"{macs / 1e9:#.4g}".rstrip(".")  # four significant digits, for a CIFAR CNN's 0.002056 as for 1.815


def _rho(value: float) -> str:
    return f"{value:.2%}" if value >= 0.001 else f"{value:.3%}"


def describe_model(data: dict) -> str:
    h, w = data["input_shape"][1:]
    source = f"torchvision, {data['family']}" if data["source"] == "torchvision" else "registry backbone"
    return f"{data['model']} ({source}) at {h}x{w}, {data['classes']} classes"


def print_analysis(console: Console, data: dict, reference: Reference) -> None:
    console.print(escape(describe_model(data)), highlight=False)
    table = _table("Placement", "Layers", "E", "k", "h", "GMAC", "ρ", "Paper's side")
    for r in data["results"]:
        layers = "—" if r["kind"] in ("head_only", "as_built") else str(len(r["layers"]))
        table.add_row(
            _label(r),
            layers,
            _int(r["experts"]),
            _int(r["top_k"]),
            _int(r["hidden"]),
            _gmac(r["total_macs"]),
            _rho(r["rho"]),
            side(reference, r["zone"]),
        )
    console.print(table)
    for r in data["results"]:
        if r["layers"]:
            console.print(f"layers routed by {_label(r)}: " + ", ".join(r["layers"]), markup=False, highlight=False)
        if r["kind"] == "target":
            if not r["reached"]:
                console.print(
                    f"no placement reaches {r['target']:.2%}: routing every candidate layer gives {r['rho']:.2%}",
                    markup=False,
                )
            elif not r["layers"]:
                console.print(f"{r['target']:.2%} is reached without routing a layer", markup=False)
    if any(r["kind"] == "as_built" for r in data["results"]):
        console.print("This backbone routes as built: every rho above includes its own MoE layers.", markup=False)
    for zone in dict.fromkeys(r["zone"] for r in data["results"]):
        console.print(f"{side(reference, zone)}: {reference.describe(zone)}", markup=False, highlight=False)
    print_check(console, data)
    print_reference(console, reference)


def _label(result: dict) -> str:
    return LABELS[result["kind"]] + (f" {result['target']:g}" if result["kind"] == "target" else "")


def _int(value: int | None) -> str:
    return "—" if value is None else str(value)


def print_check(console: Console, data: dict) -> None:
    problems = [p for r in data["results"] for p in r["problems"]]
    checked = sum(r["modules_checked"] for r in data["results"])
    if problems:
        console.print(f"[red]FLOP check failed[/] ({len(problems)} disagreement(s); the first below)")
        console.print(escape(problems[0]), highlight=False)
    else:
        console.print(f"[green]FLOP check: analytic = fvcore = torch/2 for all {checked} module counts[/]")


def print_layers(console: Console, data: dict) -> None:
    table = _table("Layer", "Kind", "MMAC", "Share")
    total = data["dense_macs"]
    for layer in data["layers"]:
        table.add_row(layer["name"], layer["kind"], f"{layer['dense'] / 1e6:,.2f}", f"{layer['dense'] / total:.2%}")
    console.print(table)
    console.print(
        f"{len(data['layers'])} routable layers: convolutions, and linear layers applied at every position "
        "of a feature map; MMAC and share of the network as given.",
        markup=False,
    )


def print_reference(console: Console, reference: Reference) -> None:
    t = reference.threshold
    console.print(
        f"The paper's settings either side of its {t.printed} threshold (Section {t.section}), from Table 6:",
        markup=False,
    )
    table = _table("Row", "Paper's ρ", "Side")
    for s in reference.settings:
        printed = (s.printed + (" *" if s.from_explainer else "")) if s.printed else "—"
        table.add_row(s.row, printed, f"{s.side} {t.printed}")
    console.print(table)
    for s in reference.settings:
        console.print(f"  {s.row}: {s.label}", markup=False, highlight=False)
    if any(s.from_explainer for s in reference.settings):
        console.print("  * from the AI-written explainer, not the paper's text", markup=False)


def print_survey(console: Console, rows: list[dict], reference: Reference) -> None:
    table = _table("Model", "GMAC", "ρ head-only", "Paper's side")
    for row in sorted(rows, key=lambda r: r.get("rho", -1), reverse=True):
        if "rho" not in row:
            table.add_row(row["model"], "—", "—", "skipped")
            continue
        table.add_row(row["model"], _gmac(row["total_macs"]), _rho(row["rho"]), side(reference, row["zone"]))
    console.print(table)
    for row in rows:
        if "skipped" in row:
            console.print(f"skipped {row['model']}: {row['skipped']}", markup=False, highlight=False)


def reference_json(reference: Reference) -> dict[str, Any]:
    return {
        "threshold": reference.threshold.__dict__,
        "floor": reference.floor.__dict__,
        "settings": [s.__dict__ for s in reference.settings],
    }
