"""The data-path benchmark (repro.bench.data): both sides do the same work, and the report is consistent."""

import torch
import torch.nn.functional as F

from repro.bench.data import PILImages, bench_data, usual_transform
from repro.data.augment import crop_flip, normalize
from repro.data.specs import get_dataset


def test_the_usual_pipeline_and_ours_produce_the_same_augmented_images():
    spec = get_dataset("cifar10")
    image = torch.randint(0, 256, (1, 3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    padded = F.pad(image, (4, 4, 4, 4)).expand(162, 3, 40, 40)
    offsets = torch.arange(81)
    dy, dx = (offsets // 9).repeat(2), (offsets % 9).repeat(2)
    flips = torch.arange(162) >= 81
    ours = normalize(crop_flip(padded, (32, 32), dy, dx, flips), spec.mean, spec.std)  # every possible output
    dataset = PILImages(image.permute(0, 2, 3, 1).numpy(), [3], usual_transform(spec.mean, spec.std))
    torch.manual_seed(0)
    for _ in range(20):
        theirs, label = dataset[0]
        distance = (ours - theirs).abs().flatten(1).max(1).values  # (162,)
        assert distance.min() < 1e-5 and label == 3


def test_report_is_consistent_and_the_tensor_path_is_faster():
    report = bench_data(n_images=1024, batch_size=256, repeats=2, workers=(0,))
    rates = report["images_per_s"]
    assert set(rates) == {"dataloader_workers0", "tensor_loader"}
    assert len(report["rounds"]["tensor_loader"]) == 2
    assert report["speedup"]["dataloader_workers0"] == rates["tensor_loader"] / rates["dataloader_workers0"]
    assert report["speedup"]["dataloader_workers0"] > 2  # about 10x on a 2-core CPU
