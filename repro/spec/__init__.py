"""What the paper says and how it is run: the profiles every table runs at (profiles.toml), the readings of
what the text leaves open (readings.toml), and the numbers the text reports (paper_tables/)."""
