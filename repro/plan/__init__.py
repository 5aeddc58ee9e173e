"""From manifests to run units: a manifest (one paper table) validated into data, a profile applied to it
once, and every (row, seed) run it needs as a RunConfig, whose hash names the run."""
