"""What the content check of one dataset found (repro.data.check), as data. Torch-free.

A table's result stores the checks made before it trained (ManifestResult.data_checks reads them
back), so that the claims and the report can say what the runs trained on: the split sizes found
against the paper's, and the files that failed their published checksum and were accepted with
--allow-unverified-data.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from repro.data.specs import get_dataset

# DataCheck.checksum for CIFAR's pickles, whose md5s torchvision publishes.
MD5_VERIFIED = "md5 verified"
MD5_MISMATCH = "md5 mismatch"  # refused: the files are not read
MD5_ACCEPTED = "md5 mismatch accepted"  # --allow-unverified-data


@dataclass(frozen=True)
class DataCheck:
    dataset: str
    title: str
    path: str
    classes: int | None = None  # found
    train_size: int | None = None
    test_size: int | None = None
    test_split: str = "test"  # what the paper evaluates on: CIFAR's test set, the others' val set
    checksum: str = ""  # MD5_VERIFIED, MD5_ACCEPTED, "no checksum published", ...
    unverified: tuple[str, ...] = ()  # "<file>: md5 <got> != <expected>", accepted with allow_unverified
    problems: tuple[str, ...] = ()  # any one refuses the dataset
    notes: tuple[str, ...] = field(default=())
    missing: bool = False  # refused because it is absent (not stored: a refused check trains nothing)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def accepted_unverified(self) -> bool:
        """Files that fail their published checksum, accepted with --allow-unverified-data."""
        return self.ok and bool(self.unverified)

    def sizes(self) -> str:
        def n(v: int | None) -> str:
            return "?" if v is None else f"{v:,}"

        return f"{n(self.train_size)} train / {n(self.test_size)} {self.test_split}"

    def size_departure(self) -> str:
        """'200 train / 40 test CIFAR-10 images where the paper has 50,000 / 10,000', or '' when the sizes
        found are the paper's (or were not counted)."""
        spec = get_dataset(self.dataset)
        if None in (self.train_size, self.test_size) or (self.train_size, self.test_size) == (
            spec.train_size,
            spec.test_size,
        ):
            return ""
        return f"{self.sizes()} {self.title} images where the paper has {spec.train_size:,} / {spec.test_size:,}"

    def checksum_departure(self) -> str:
        """'7 CIFAR-10 files fail their published md5 (unverified, accepted with --allow-unverified-data)', or ''."""
        if not self.accepted_unverified:
            return ""
        n = len(self.unverified)
        files = f"{n} {self.title} files fail their" if n != 1 else f"1 {self.title} file fails its"
        return f"{files} published md5 (unverified, accepted with --allow-unverified-data)"

    def summary(self) -> str:
        """One line for the log and the report."""
        if not self.ok:
            return f"{self.title}: refused at {self.path}: " + "; ".join(" ".join(p.split()) for p in self.problems)
        line = f"{self.title}: {self.classes} classes, {self.sizes()}, one batch decoded, {self.checksum}"
        if self.unverified:
            line += "; unverified: " + "; ".join(self.unverified)
        return line + "".join(f"; {note}" for note in self.notes) + f" ({self.path})"

    def provenance(self) -> dict:
        """What a run record and a table's result store about its data."""
        return {
            k: list(v) if isinstance(v, tuple) else v
            for k, v in asdict(self).items()
            if k not in ("problems", "missing")
        }

    def raise_if_failed(self) -> DataCheck:
        """The check itself when it passed; else the refusal, as the error of its kind (repro.data.layout)."""
        from repro.data.layout import DatasetInvalid, DatasetMissing, DatasetUnverified

        if self.ok:
            return self
        if self.missing:
            raise DatasetMissing("\n".join(self.problems))
        if self.checksum == MD5_MISMATCH:  # the message is cifar.unverified_error's, laid out for the terminal
            raise DatasetUnverified("\n".join(self.problems))
        raise DatasetInvalid(f"{self.title} cannot be used as it is:\n" + "\n".join(f"  {p}" for p in self.problems))

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> DataCheck:
        """A check as provenance() stored it (keys it does not know are left out: a later schema)."""
        known = {f.name for f in fields(cls)}
        stored: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known}
        return cls(**stored)
