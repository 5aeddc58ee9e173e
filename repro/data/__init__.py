"""Datasets: what each one is (specs), how to load it, and synthetic stand-ins."""

from repro.data.specs import DATASETS, DatasetSpec, get_dataset

__all__ = ["DATASETS", "DatasetSpec", "get_dataset"]
