"""Training one run: the loop (loop.py), its engine (engine.py), its data (run_data.py), its routing as recorded
(routing.py), checkpoints that let a killed run resume (checkpoints.py), the memory it needs (memory.py), and the
digit-pretrained backbone weights of the functional profile (digit_weights.py)."""
