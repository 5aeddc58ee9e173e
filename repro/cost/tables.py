"""The tables `repro list` and `repro plan` print: costs per manifest and profile, totals, the plan."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from repro.cost.command import Rates, command_time
from repro.cost.estimate import Cost, CostModel, device_time, duration, hours
from repro.manifest import Manifest

if TYPE_CHECKING:  # repro.cost.plan reads the power analysis (scipy): `repro list` does not need it
    from repro.cost.plan import ClaimNeed, Plan


def _cost_cells(cost: Cost, wall_s: float, basis: str) -> list[str]:
    """Runs, epochs, device time, the command's wall time and what that figure is (fitted, measured, reference)."""
    if not cost.runs:
        return ["0", "0", "-", duration(wall_s), basis]
    return [str(cost.runs), f"{cost.epochs:,}", device_time(cost.device_seconds, cost.kind), duration(wall_s), basis]


def list_table(manifests: list[Manifest], model: CostModel, invalid: dict[str, str],
               rates: Rates = Rates()) -> tuple[Table, Table, set[str]]:
    """(per manifest and profile, totals per profile over distinct runs, the sources of the figures). A table's
    wall time is `repro <id>` alone; a profile's, `repro verify-all` (repro.cost.command)."""
    table = Table()
    # Ids and profile names are what a user types next (`repro <id> --profile <name>`): never cut short.
    table.add_column("Id", no_wrap=True, min_width=max([len(m.id) for m in manifests] + [2]))
    for name in ("Reproduces", "Rows", "Claims"):
        table.add_column(name)
    table.add_column("Profile", no_wrap=True, min_width=max([len(n) for m in manifests for n in m.profiles] + [7]))
    for name in ("Runs", "Epochs", "Device", "Wall", "From"):
        table.add_column(name)
    sources: set[str] = set()
    for m in manifests:
        first = True
        for name in m.profiles:
            cost = model.cost([(m, name)])
            if m.profiles[name].include and not cost.runs:
                continue  # a plan's profile that trains nothing here
            sources.update(cost.sources)
            head = ([m.id, escape(m.paper_ref.split(",")[0]), str(len(m.rows)), str(len(m.claims))]
                    if first else ["", "", "", ""])
            alone = command_time([m], name, model, rates, verify_all=False)
            table.add_row(*head, name, *_cost_cells(cost, alone.seconds, alone.basis()))
            first = False
    for mid, problem in invalid.items():
        table.add_row(mid, f"[red]invalid manifest[/]: {escape(problem)}", "", "", "", "", "", "", "", "")
    totals = Table("Profile", "Distinct runs", "Epochs", "Device", "Wall (verify-all)", "From",
                   title="Totals over every manifest: a run shared by tables counts once")
    for name in sorted({n for m in manifests for n in m.profiles}):
        mine = [m for m in manifests if name in m.profiles]
        cost = model.cost([(m, name) for m in mine])
        if cost.runs:
            whole = command_time(mine, name, model, rates)
            totals.add_row(name, *_cost_cells(cost, whole.seconds, whole.basis()))
    return table, totals, sources


def needs_table(needs: list[ClaimNeed], plan: Plan) -> Table:
    order = {c.need.key: i for i, c in enumerate(plan.chosen)}
    added = {c.need.key: c for c in plan.chosen}
    why_out = {n.key: why for n, why in plan.left_out}
    table = Table("Claim", "Weight", "Seeds", "Rows", "Runs", "GPU-h alone", "GPU-h added", "Plan",
                  title=f"Empirical claims: {len(plan.chosen)} of {len(needs)} in the plan")
    for n in sorted(needs, key=lambda n: (n.key not in order, order.get(n.key, 0), -n.weight, n.key)):
        c = added.get(n.key)
        verdict = (f"[green]#{order[n.key] + 1}[/]" + (f", {c.shared} runs shared" if c.shared else "")
                   if c else f"[yellow]left out[/]: {escape(why_out[n.key])}")
        table.add_row(n.key, f"{n.weight:g}", f"{n.seeds or '-'} [dim]({escape(n.seeds_why)})[/]", str(len(n.rows)),
                      str(len(n.runs)), hours(n.gpu_seconds), hours(c.added_s) if c else "", verdict)
    return table
