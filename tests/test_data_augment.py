"""Batch-wise random crop + flip and normalisation: golden values, invariants, two equal forms."""

import pytest
import torch
import torch.nn.functional as F

from repro.data.augment import (
    crop_flip,
    crop_flip_gather,
    crop_flip_grouped,
    crop_padding,
    draw_crop_flip,
    normalize,
    random_crop_flip,
)


def test_padding_is_an_eighth_of_the_side():
    assert (crop_padding(32), crop_padding(64), crop_padding(224)) == (4, 8, 28)


@pytest.mark.parametrize("form", [crop_flip_gather, crop_flip_grouped])
def test_golden_crop_and_flip(form):
    image = torch.tensor([[1, 2], [3, 4]], dtype=torch.uint8).view(1, 1, 2, 2)
    padded = F.pad(image, (1, 1, 1, 1))  # 4x4, the 2x2 image in the middle
    batch = padded.expand(3, 1, 4, 4)
    dy, dx = torch.tensor([0, 2, 1]), torch.tensor([0, 1, 2])
    out = form(batch, (2, 2), dy, dx, torch.tensor([False, False, True]))
    assert out[0, 0].tolist() == [[0, 0], [0, 1]]  # top-left window
    assert out[1, 0].tolist() == [[3, 4], [0, 0]]  # bottom rows
    assert out[2, 0].tolist() == [[0, 2], [0, 4]]  # right columns [[2, 0], [4, 0]], mirrored


def test_gather_and_grouped_forms_agree():
    g = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (97, 3, 40, 40), dtype=torch.uint8, generator=g)
    for _ in range(5):
        dy, dx, flips = draw_crop_flip(97, 4, g)
        assert torch.equal(
            crop_flip_gather(images, (32, 32), dy, dx, flips), crop_flip_grouped(images, (32, 32), dy, dx, flips)
        )
    assert crop_flip(images, (32, 32), dy, dx, flips).is_contiguous()


def test_each_output_is_a_window_of_the_padded_image_mirrored_where_flipped():
    g = torch.Generator().manual_seed(1)
    images = torch.randint(1, 256, (64, 3, 32, 32), dtype=torch.uint8, generator=g)
    dy, dx, flips = draw_crop_flip(64, 4, torch.Generator().manual_seed(2))
    out = random_crop_flip(images, 4, torch.Generator().manual_seed(2))
    padded = F.pad(images, (4, 4, 4, 4))
    assert out.shape == images.shape and out.dtype == torch.uint8
    for i in range(64):
        window = padded[i, :, dy[i] : dy[i] + 32, dx[i] : dx[i] + 32]
        assert torch.equal(out[i], window.flip(-1) if flips[i] else window)
    centre = out[:, :, 4:28, 4:28]  # never reaches the zero border
    assert (centre > 0).all()


def test_offsets_cover_the_range_and_flips_are_fair():
    dy, dx, flips = draw_crop_flip(20_000, 4, torch.Generator().manual_seed(3))
    assert sorted(dy.unique().tolist()) == list(range(9)) == sorted(dx.unique().tolist())
    assert abs(flips.float().mean().item() - 0.5) < 0.02  # 0.02 is 5.7 standard errors
    assert not draw_crop_flip(100, 4, torch.Generator().manual_seed(3), flip=False)[2].any()


def test_same_seed_same_augmentation():
    images = torch.randint(0, 256, (32, 3, 32, 32), dtype=torch.uint8)
    a = random_crop_flip(images, 4, torch.Generator().manual_seed(7))
    b = random_crop_flip(images, 4, torch.Generator().manual_seed(7))
    c = random_crop_flip(images, 4, torch.Generator().manual_seed(8))
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_normalize_golden_and_layout():
    images = torch.tensor([0, 51, 255], dtype=torch.uint8).view(1, 3, 1, 1).expand(2, 3, 2, 2)
    x = normalize(images, mean=(0.0, 0.2, 0.5), std=(1.0, 0.5, 0.25))
    assert x.dtype == torch.float32
    assert torch.allclose(x[0, :, 0, 0], torch.tensor([0.0, 0.0, 2.0]), atol=1e-6)
    laid_out = normalize(images, (0.5,) * 3, (0.5,) * 3, channels_last=True)
    assert laid_out.is_contiguous(memory_format=torch.channels_last)
