"""`repro bench`: speed of the latency harness's heads, the data path, training, and capacity assignment.

    latency   every method's head (and whole model) at one dataset's shapes: ms per
              batch, ratio to the dense head, operator calls; operator calls against E
              (repro.bench.heads, timed by repro.measure.timing)
    data      images/s of the training data path alone (repro.bench.data)
    train     end-to-end training images/s, fast path against the usual way (repro.bench.train)
    capacity  the greedy capacity assignment (Section 3.3) per batch against the
              batched expert forward it feeds (repro.bench.heads)
    moe-conv  MoEConv2d's training step on each exact path and on the one measured time
              chooses, against its dense convolution (repro.bench.moe_conv)
    smoke     `verify-all --profile smoke` in a fresh folder with an empty cache: its phase
              table, wall and CPU seconds, and the ratio to this machine's previous run
              (repro.bench.smoke, phases from repro.results.timings)
    gpu       the prepared device check: training images/s and memory of each table's
              heaviest model, kill/resume, Expert Choice in bf16, as a JSON the cost
              model calibrates from (repro.bench.gpu, schema in repro.bench.gpu_calibration);
              with Table 5's dense twin and the ImageNet input paths
    fixed-costs each run's fixed cost and first epoch against its steady state, read
              from a results folder (repro.bench.fixed_costs)

Each prints a table whose ratios are the result; absolute times carry the device. The
commands are repro.cli.bench's group (repro.cli.bench_models, repro.cli.bench_training, repro.cli.bench_costs);
torch is imported when one runs, not when `repro --help` lists them.
"""

from __future__ import annotations

# The datasets `bench latency` knows (their shapes: repro.bench.heads.SHAPES, checked to agree by the tests).
LATENCY_DATASETS = ("cifar100", "tiny_imagenet", "imagenet")
