"""Training one run: the loop and its engine (loop.py), checkpoints that let a killed run resume
(checkpoints.py), and the digit-pretrained backbone weights of the functional profile (digit_weights.py)."""
