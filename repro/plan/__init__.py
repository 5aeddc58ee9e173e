"""From manifests to plans: a manifest (one paper table) validated into data, a profile applied to it once, every
(row, seed) run it needs as a RunConfig whose hash names the run, and a table's frozen plan (table_plan.py) that
every stage below reads."""
