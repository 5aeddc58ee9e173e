"""`repro rho MODEL`: would sparse routing help here? rho for any torchvision CNN or registry backbone.

Every input is checked before torch is imported (names, patterns, sizes, MoE settings), so a
typo costs well under a second and never prints a traceback. Exit codes: 0 counted and
checked, 1 a FLOP count disagreed between the three counters, 2 refused input, 130 stopped.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, NoReturn, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from repro.cli.common import settings
from repro.core.terminal import print_words
from repro.models.configs import ConfigError, MoEConvBackboneConfig
from repro.rho.model_list import FAMILIES, RhoInputError, known_names, resolve_model, torchvision_cnns
from repro.rho.inputs import check_target, parse_pattern, parse_size
from repro.rho.paper_settings import TORCHVISION_DATASET, default_setting, head_config, load_reference
from repro.rho import rho_tables as render

MAX_CLASSES = 100_000  # ImageNet-21K has 21,841: beyond this is a typo, not a dataset

_LEFT_OUT = ", ".join(f"{f.module} ({', '.join(f.models)})" for f in FAMILIES if f.excluded)
HELP = f"""Where rho (routed share of inference FLOPs) lands on a CNN before you train it: a head-only sparse
MoE in place of its classifier, chosen layers routed as MoEConv2d banks (--route), or the fewest layers
whose routing reaches a target (--target); each against the paper's threshold and floor (Sections 4.5,
4.6, 5.3), with Table 6's settings beside it. FLOPs only: no weights, no data; every count is checked
analytic = fvcore = torch/2. MODEL: any torchvision classification CNN or registry backbone (--list). Left out, as
transformers whose attention no conv bank routes: {_LEFT_OUT}."""


def _err() -> Console:
    return Console(stderr=True, soft_wrap=True)  # messages verbatim: paths and names are not wrapped


def _fail(message: str) -> NoReturn:
    """The error wrapped at words within the terminal (a name is never cut), as every command's (cli.common)."""
    print_words(_err(), Text.assemble(("error: ", "bold red"), message))
    raise typer.Exit(2)


def rho_command(
    model: Optional[str] = typer.Argument(None, help="A torchvision CNN (e.g. convnext_tiny) or a registry backbone."),
    all_models: bool = typer.Option(False, "--all", help="Every torchvision CNN: head-only rho and total FLOPs."),
    list_models: bool = typer.Option(False, "--list", help="Name every model `repro rho` counts, and stop."),
    size: Optional[str] = typer.Option(
        None, "--size", help="Input side or HxW in pixels. Default: the model's dataset (torchvision: ImageNet, 224)."
    ),
    classes: Optional[int] = typer.Option(
        None, "--classes", help="Classes (d_out). Default: the dataset's (ImageNet: 1000)."
    ),
    experts: Optional[int] = typer.Option(
        None, "--experts", "-E", help="Experts E of the head and of every bank. Default: the paper's, 8."
    ),
    hidden: Optional[int] = typer.Option(
        None,
        "--hidden",
        "-H",
        help="Expert width h (d_in -> h -> h -> d_out). Default: Table 6's for the dataset (ImageNet: 512).",
    ),
    head_k: Optional[int] = typer.Option(None, "--head-k", help="Top-k of the head. Default: the paper's, 1."),
    route: Optional[list[str]] = typer.Option(
        None, "--route", help="Layers to route as MoE banks, by name pattern, e.g. 'layer3.*.conv*' (repeatable)."
    ),
    route_k: Optional[int] = typer.Option(None, "--route-k", help="Top-k of each bank. Default: Section 4.6's, 2."),
    target: Optional[float] = typer.Option(
        None,
        "--target",
        help="Find the fewest layers (deepest first; among --route's when given) whose routing reaches this rho.",
    ),
    layers: bool = typer.Option(False, "--layers", help="List the model's routable layers and their MACs."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
    figure: Optional[Path] = typer.Option(
        None, "--figure", help="With --all: draw rho against total FLOPs to this PNG file."
    ),
) -> None:
    with _refusals():
        console = Console()  # made per call: it reads the terminal's width (COLUMNS) now
        if list_models:
            console.print("\n".join(known_names()), markup=False, highlight=False)
            return
        if (model is None) == (not all_models):
            raise RhoInputError("give one MODEL, or --all for every torchvision CNN (--list names them)")
        if all_models and (route or target is not None or layers):
            raise RhoInputError("--route, --target and --layers name one model's layers: give MODEL, not --all")
        if figure is not None and not all_models:
            raise RhoInputError("--figure draws every torchvision CNN: use it with --all")
        if figure is not None and (figure.suffix.lower() != ".png" or not figure.parent.is_dir()):
            raise RhoInputError(f"--figure {figure}: expected a .png file in an existing folder")
        spec = resolve_model(model) if model else torchvision_cnns()[0]  # --all: every one at the ImageNet setting
        patterns = tuple(parse_pattern(p) for p in route or [])
        if target is not None:
            check_target(target)
        setting = default_setting(spec, settings().manifests, settings().readings)
        head = _options(lambda: head_config(setting, experts, hidden, head_k), "--head-k")
        bank = _options(
            lambda: MoEConvBackboneConfig(
                num_experts=setting.route_experts if experts is None else experts,
                top_k=setting.route_top_k if route_k is None else route_k,
            ),
            "--route-k",
        )
        shape = parse_size(size) if size else None
        if classes is not None and not 1 <= classes <= MAX_CLASSES:
            raise RhoInputError(f"--classes {classes}: expected between 1 and {MAX_CLASSES:,}")
        reference = load_reference(settings().manifests, settings().readings)

        warnings.filterwarnings("ignore", message=".*torch.jit.script.*", category=FutureWarning)  # fvcore traces
        from repro.rho.analysis import Request, analyse  # torch from here on
        from repro.rho.networks import Network

        request = Request(head, bank.num_experts, bank.top_k, patterns, target, layers)
        shape = shape or setting.size
        classes = classes or setting.classes
        if all_models:
            _survey(console, setting, shape, classes, request, reference, as_json, figure)
            return
        analysis = analyse(Network(spec, setting, shape, classes), request, reference)
        data = analysis.as_dict()
        if as_json:
            typer.echo(json.dumps({**data, "reference": render.reference_json(reference)}, indent=2))
        else:
            if layers:
                render.print_layers(console, data)
            render.print_analysis(console, data, reference)
        if analysis.problems:
            raise typer.Exit(1)


rho_command.__doc__ = HELP


@contextmanager
def _refusals() -> Iterator[None]:
    """Refused input as an error line (exit 2), Ctrl-C as a line saying nothing was written (exit 130)."""
    try:
        yield
    except RhoInputError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _err().print("[bold yellow]stopped; nothing was written[/]")
        raise typer.Exit(130)


OPTIONS = {"num_experts": "--experts", "expert_hidden": "--hidden"}


def _options(make, top_k_option: str):
    """A config built from the command's options; its range errors named by option."""
    try:
        return make()
    except ConfigError as exc:
        raise RhoInputError(
            "; ".join(
                f"{OPTIONS.get(name, top_k_option if name == 'top_k' else name)} {value!r}: must be {allowed}"
                for name, value, allowed in exc.problems
            )
        ) from None


def _survey(console: Console, setting, shape, classes, request, reference, as_json: bool, figure: Path | None) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from repro.rho.survey import count_one, setting_points

    wall, cpu, load = time.perf_counter(), time.process_time(), os.getloadavg()
    models = torchvision_cnns()
    rows = []
    with Progress(
        TextColumn("{task.description:<22}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_err(),
        transient=False,
    ) as progress:
        task = progress.add_task("counting", total=len(models) + 1)
        for spec in models:
            progress.update(task, description=spec.name)
            rows.append(count_one(spec, setting, shape, classes, request, reference))
            progress.advance(task)
        progress.update(task, description="Table 6 settings")
        points = setting_points(reference, settings().cache, settings().manifests, settings().readings)
        progress.advance(task)
    wall_s, cpu_s = round(time.perf_counter() - wall, 1), round(time.process_time() - cpu, 1)
    load_before, load_after = [round(x, 2) for x in load], [round(x, 2) for x in os.getloadavg()]
    timing = {"wall_s": wall_s, "cpu_s": cpu_s, "load_before": load_before, "load_after": load_after}
    h, w = shape
    head = request.head
    title = (
        f"Head-only sparse MoE (E={head['num_experts']}, h={head['expert_hidden']}, k={head['top_k']}) in place "
        f"of the classifier of every torchvision CNN at {h}x{w}, {classes} classes ({TORCHVISION_DATASET})"
    )
    if figure is not None:
        from repro.rho.figure import draw

        draw(rows, points, reference, title, figure)
    problems = [p for r in rows for p in r.get("problems", [])] + [p for pt in points for p in pt["problems"]]
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "models": rows,
                    "settings": points,
                    "time": timing,
                    "figure": str(figure or ""),
                    "input_shape": [3, h, w],
                    "classes": classes,
                    "head": head,
                    "reference": render.reference_json(reference),
                },
                indent=2,
            )
        )
    else:
        console.print(escape(title), highlight=False)
        render.print_survey(console, rows, reference)
        checked = sum(r.get("modules_checked", 0) for r in rows)
        console.print(
            f"{len([r for r in rows if 'rho' in r])} models, {checked} module counts; "
            f"{wall_s:.0f} s wall, {cpu_s:.0f} CPU-s (this process); load average "
            f"{' '.join(str(x) for x in load_before)} before, "
            f"{' '.join(str(x) for x in load_after)} after",
            markup=False,
        )
        if figure is not None:
            console.print(f"wrote {figure}", markup=False)
        if problems:
            console.print(f"[red]FLOP check failed[/]: {escape(problems[0])}", highlight=False)
        else:
            console.print("[green]FLOP check: analytic = fvcore = torch/2 for every module of every model[/]")
    if problems:
        raise typer.Exit(1)
