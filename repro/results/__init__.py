"""What runs produced, as data: metric paths, measurements and results.json (measurements.py), where a
command's time went (timings.py), and where a number came from (provenance.py)."""
