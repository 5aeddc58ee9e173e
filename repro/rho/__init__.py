"""`repro rho`: where rho lands on any CNN before it is trained (beyond the paper).

The paper's rule of thumb (Sections 4.5, 4.6, 5.3): sparse routing helps only where the routed
computation is a substantial share of inference FLOPs, rho = FLOPs_routed / FLOPs_total. This
package answers "where would rho be?" for every torchvision CNN and every registry backbone,
counting FLOPs only (no weights, no data), three ways (repro.models.flops):

    catalog     which models, torch-free (names are checked before torch is imported)
    inputs      the command's inputs, validated torch-free: size, patterns, target
    reference   the paper's thresholds and Table 6 settings, read from the manifest and paper tables
    networks    build a model on the meta device, probe its smallest input, the head-only model
    placement   routable layers, layer-name patterns, MoE banks in place of chosen layers
    target      the fewest layers (deepest first) whose routing reaches a target rho (pure Python)
    analysis    one model's results, counted and checked (typed outcomes)
    render      the tables (80 columns) and JSON
    figure      head-only rho against total FLOPs for every torchvision CNN
    command     the Typer command
"""
