"""The small building blocks every layer uses: the name registry, the schema checks, atomic files, the caches
outside a results folder, device labels and the terminal's width rules. Nothing here imports the rest of repro."""
