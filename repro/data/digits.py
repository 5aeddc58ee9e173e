"""Real handwritten digits standing in for each dataset, for the `functional` profile.

scikit-learn ships 1,797 real 8x8 grey-scale digit scans (UCI optdigits, about
180 per digit) inside the package, so this source needs no download. It gives
every dataset its own class count K from real images only:

- class c in [0, K) is the number c written with D = ceil(log10 K) decimal digits
  (CIFAR-10: 0-9; CIFAR-100: 00-99; Tiny-ImageNet: 000-199; ImageNet: 000-999);
- an image of class c holds one real scan of each of its digits, the p-th digit
  (most significant first) in colour channel p: red, green, blue. D <= 3 = C for
  every dataset here; a channel without a digit is black, and a one-digit image has
  its scan in every channel (a grey digit);
- each scan is drawn from its split's pool: the scans are split once, per digit, into
  disjoint train and test pools (70 / 30, fixed like a real dataset's split), so no
  test image shares a scan with any training image. The 8 x 8 result is resized to S.

Why this stand-in: the class is a conjunction of real images (every digit of the
number must be read), so K classes are K distinct, balanced, visually grounded
categories whose chance level is exactly 1 / K, and a model that does not learn
stays at it. Stacking the digits in the channels, rather than side by side, keeps
the image at the scans' own 8 px whatever K is (so the resolution is the time
budget's choice) and leaves the class independent of position, which the ResNet
and MobileNet backbones discard in their global pooling; side by side, a CNN stayed
at chance far longer (docs/performance.md, "Digits stacked"). It is easier than the real datasets
(digits, 8 px each), so it shows that a method learns real images; it says nothing
about the paper's numbers.

Digits are not mirror-symmetric (and a mirrored number is another one), so
training on this source keeps the random crops and drops the flips (repro.train.run_data).
Legend: N images, K classes, D digits per image, C channels, S image size.
"""

from __future__ import annotations

import hashlib
import math
from functools import lru_cache

import torch
import torch.nn.functional as F

from repro.data.specs import get_dataset

SCAN = 8  # sklearn's digits are 8 x 8
TEST_FRACTION = 0.3  # of each digit's scans, held out for the test pool
SPLIT_SEED = 0  # the split is part of the data set, not of a run


def _seed(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("/".join(map(str, parts)).encode()).digest()[:7], "little")


def digits_per_image(num_classes: int) -> int:
    """D: decimal digits needed to write every class 0 .. K - 1 (at least one)."""
    return max(1, math.ceil(math.log10(num_classes)))


def chance(name: str) -> float:
    """Accuracy of a constant guess on this source's balanced classes: 1 / K."""
    return 1.0 / get_dataset(name).num_classes


@lru_cache(maxsize=1)
def _scans() -> tuple[torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_digits  # scikit-learn reads them from its own package data

    digits = load_digits()
    values = torch.as_tensor(digits.images, dtype=torch.float32)  # (1797, 8, 8), 0..16
    images = (values * (255.0 / 16.0)).round().to(torch.uint8)
    return images, torch.as_tensor(digits.target, dtype=torch.int64)


def pools(split: str) -> list[torch.Tensor]:
    """Indices into the 1,797 scans of each digit's pool for `split`: [10 x (n_d,)], disjoint across splits."""
    if split not in ("train", "test"):
        raise ValueError(f"unknown split {split!r}; use 'train' or 'test'")
    _, labels = _scans()
    g = torch.Generator().manual_seed(SPLIT_SEED)
    out = []
    for d in range(10):
        idx = torch.nonzero(labels == d).squeeze(1)
        idx = idx[torch.randperm(len(idx), generator=g)]
        n_test = round(len(idx) * TEST_FRACTION)
        out.append(idx[:n_test] if split == "test" else idx[n_test:])
    return out


def pool_size(split: str) -> int:
    return sum(len(p) for p in pools(split))


def digits_tensors(
    name: str, n: int | None = None, image_size: int | None = None, split: str = "train"
) -> tuple[torch.Tensor, torch.Tensor]:
    """(images uint8 (N, C, S, S), labels int64 (N,)) standing in for dataset `name`.

    Deterministic per (name, n, S, split); classes balanced to within one image; with n < K the split
    holds the first n classes of a fixed order, so a test split no larger than the training one holds
    only trained classes. n defaults
    to the split's pool size. For each digit place, a digit's pool is used in a shuffled
    cyclic order, so a scan repeats there only after all of that digit's scans are used.
    """
    spec = get_dataset(name)
    K, C = spec.num_classes, spec.channels
    S = image_size or spec.image_size
    D = digits_per_image(K)
    if D > C:
        raise ValueError(f"{spec.title}: {K} classes need {D} digits, more than its {C} channels")
    n = pool_size(split) if n is None else n
    scans, _ = _scans()
    pool = pools(split)
    g = torch.Generator().manual_seed(_seed("digits", name, split, n, S))
    classes = torch.randperm(K, generator=g)  # which classes take the extra image when K does not divide n
    if n < K:
        # A split smaller than K holds the first n classes of one order per dataset, the same for train and
        # test: a smaller test split then holds only classes the training split has (with independent draws,
        # 512 train / 500 test ImageNet images shared 259 classes, capping accuracy at 52%).
        classes = torch.randperm(K, generator=torch.Generator().manual_seed(_seed("digits classes", name)))
    labels = classes[torch.arange(n) % K][torch.randperm(n, generator=g)]  # (N,)
    x = torch.zeros(n, C, SCAN, SCAN, dtype=torch.uint8)  # (N, C, 8, 8)
    for p in range(D):
        digit = labels // 10 ** (D - 1 - p) % 10  # p-th decimal digit, most significant first
        chosen = torch.empty(n, dtype=torch.int64)
        for d in range(10):
            where = torch.nonzero(digit == d).squeeze(1)
            if len(where):
                order = pool[d][torch.randperm(len(pool[d]), generator=g)]
                chosen[where] = order[torch.arange(len(where)) % len(order)]
        x[:, p] = scans[chosen]
    if D == 1:
        x[:] = x[:, :1]  # a grey digit
    if S != SCAN:
        x = F.interpolate(x.float(), size=(S, S), mode="bilinear", antialias=True, align_corners=False)
        x = x.round().clamp(0, 255).to(torch.uint8)
    return x, labels
