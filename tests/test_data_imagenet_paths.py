"""The three ImageFolder input paths give the same crops from the same draws; errors name the file."""

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision import transforms

from repro.data.crops import CropBox, draw_resized_crop, draw_train, eval_view, train_view
from repro.data.imagenet import PATHS, choose_path, default_workers, image_folder_loader
from repro.data.jpeg import ImageDecodeError, decode_batch, read_bytes

RAW = dict(mean=(0.0, 0.0, 0.0), std=(1 / 255,) * 3)  # "normalised" batches hold the grey levels 0..255


def write_jpegs(root, classes=3, per_class=6, size=(500, 375), seed=0):
    """Gradients plus noise (JPEG's hard case), some portrait, some greyscale: every branch of the decoders."""
    rng = np.random.default_rng(seed)
    w, h = size
    y, x = np.mgrid[0:h, 0:w]
    for c in range(classes):
        (root / f"c{c}").mkdir(parents=True)
        for i in range(per_class):
            rgb = np.stack([(x * 255 / w + 30 * i) % 256, y * 255 / h, ((x + y) * 0.3 + 50 * c) % 256], -1)
            image = Image.fromarray((rgb + rng.normal(0, 25, rgb.shape)).clip(0, 255).astype(np.uint8))
            if i % 3 == 1:
                image = image.transpose(Image.Transpose.ROTATE_90)  # portrait 375x500
            if i % 3 == 2:
                image = image.convert("L")
            image.save(root / f"c{c}" / f"{i}.JPEG", quality=90)
    return root


def batches(root, pipeline, train, workers=0, seed=1, epoch=0, size=224):
    loader = image_folder_loader(
        root, 8, train=train, image_size=size, workers=workers, seed=seed, pipeline=pipeline, **RAW
    )
    loader.set_epoch(epoch)
    xs, ys = zip(*loader)
    return torch.cat(xs), torch.cat(ys)


@pytest.mark.parametrize("height, width", [(375, 500), (500, 375), (64, 64), (10, 1000), (1000, 10), (1, 1)])
def test_the_crop_draw_is_torchvisions_random_resized_crop(height, width):
    image = torch.zeros(3, height, width)
    for seed in range(50):
        torch.manual_seed(seed)
        theirs = transforms.RandomResizedCrop.get_params(image, [0.08, 1.0], [3 / 4, 4 / 3])
        torch.manual_seed(seed)
        box = draw_resized_crop(height, width)
        assert (box.top, box.left, box.height, box.width) == theirs


def test_the_centre_fallback_clamps_the_ratio():
    # 10 tries cannot fit a 3/4..4/3 box into 10x1000: the largest centred box of ratio 4/3
    assert draw_resized_crop(10, 1000, torch.Generator().manual_seed(0)) == CropBox(0, 493, 10, 13)


def test_draws_depend_only_on_seed_epoch_and_index():
    assert draw_train(375, 500, 1, 2, 3) == draw_train(375, 500, 1, 2, 3)
    draws = {draw_train(375, 500, 1, e, i) for e in range(3) for i in range(20)}
    assert len(draws) == 60
    flips = [draw_train(375, 500, 0, 0, i)[1] for i in range(400)]
    assert 160 < sum(flips) < 240  # p = 1/2


def test_views_on_pil_and_tensor_images_agree_to_one_grey_level():
    rgb = np.random.default_rng(0).integers(0, 256, (120, 90, 3), dtype=np.uint8)
    pil, tensor = Image.fromarray(rgb), torch.from_numpy(rgb).permute(2, 0, 1)
    box = CropBox(10, 5, 70, 80)
    for a, b in [
        (train_view(pil, box, True, 32), train_view(tensor, box, True, 32)),
        (train_view(pil, box, False, 200), train_view(tensor, box, False, 200)),  # upsampling
        (eval_view(pil, 32), eval_view(tensor, 32)),
    ]:
        a = torch.from_numpy(np.array(a)).permute(2, 0, 1).int()
        assert a.shape == b.shape and (a - b.int()).abs().max() <= 1


@pytest.mark.parametrize("train", [True, False])
def test_decode_path_gives_the_pil_paths_crops(tmp_path, train):
    """Same draws, two decoders and two resamplers: measured mean 0.03 (train) / 0.002 (eval) grey levels, max 1.

    Both decoders are libjpeg-turbo (same pixels); PIL and torch compute the same antialiased
    bilinear filter in different fixed point, which rounds a few pixels one level apart.
    """
    root = write_jpegs(tmp_path)
    x_pil, y_pil = batches(root, "pil", train)
    x_dec, y_dec = batches(root, "decode_cpu", train)
    assert x_pil.shape == x_dec.shape == (16 if train else 18, 3, 224, 224)  # train drops the partial batch
    assert torch.equal(y_pil, y_dec)
    diff = (x_pil - x_dec).abs()
    assert diff.max() <= 1.0 and diff.mean() < 0.1
    per_image = diff.flatten(1).mean(1)  # (B,): every image agrees, not just most
    assert per_image.max() < 0.5
    if train:
        other = batches(root, "decode_cpu", train, epoch=1)[0]
        assert (other - x_dec).abs().mean() > 10  # new epoch, new crops: the agreement above is not trivial


@pytest.mark.slow  # spawns worker processes
def test_crops_do_not_depend_on_the_worker_count(tmp_path):
    root = write_jpegs(tmp_path, classes=2, per_class=4, size=(80, 60))
    for pipeline in ("pil", "decode_cpu"):
        x0, y0 = batches(root, pipeline, True, workers=0, size=32)
        x2, y2 = batches(root, pipeline, True, workers=2, size=32)
        assert torch.equal(x0, x2) and torch.equal(y0, y2)


def test_the_gpu_paths_main_process_decode_runs_here_on_the_cpu(tmp_path):
    """decode_cuda's code (workers hand over bytes, the loop decodes and crops) with the CPU as its device."""
    root = write_jpegs(tmp_path, classes=2, per_class=4, size=(120, 90))
    expected = batches(root, "decode_cpu", True, size=64)
    loader = image_folder_loader(root, 8, train=True, image_size=64, workers=0, seed=1, pipeline="decode_cpu", **RAW)
    loader.pipeline, loader.loader.collate_fn.decode = "decode_cuda", False  # as on CUDA, with device cpu
    x, y = next(iter(loader))
    assert torch.equal(x, expected[0]) and torch.equal(y, expected[1])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("train", [True, False])
def test_gpu_decode_gives_the_pil_paths_crops(tmp_path, train):
    """nvJPEG's IDCT and chroma upsampling differ from libjpeg-turbo's: a looser bound than on the CPU."""
    root = write_jpegs(tmp_path)
    x_pil = batches(root, "pil", train)[0]
    loader = image_folder_loader(
        root, 8, train=train, image_size=224, workers=0, seed=1, device="cuda", pipeline="decode_cuda", **RAW
    )
    x_gpu = torch.cat([x.cpu() for x, _ in loader])
    diff = (x_pil - x_gpu).abs()
    assert diff.mean() < 2 and diff.flatten(1).mean(1).max() < 4


def test_path_choice_and_worker_default(tmp_path):
    assert choose_path("cpu") == "decode_cpu" and choose_path(torch.device("cuda", 1)) == "decode_cuda"
    assert set(PATHS) == {"pil", "decode_cpu", "decode_cuda"} and default_workers() >= 1
    root = write_jpegs(tmp_path, classes=1, per_class=1, size=(8, 8))
    with pytest.raises(ValueError, match="decode_cuda needs a CUDA device"):
        image_folder_loader(root, 8, train=True, pipeline="decode_cuda")
    with pytest.raises(ValueError, match="unknown input path 'nvdec'"):
        image_folder_loader(root, 8, train=True, pipeline="nvdec")


def test_loader_says_which_path_ran_and_outputs_bf16_channels_last(tmp_path):
    root = write_jpegs(tmp_path, classes=2, per_class=2, size=(64, 48))
    loader = image_folder_loader(
        root, 4, train=True, image_size=32, workers=0, dtype=torch.bfloat16, channels_last=True
    )
    assert loader.pipeline == "decode_cpu"
    x, _ = next(iter(loader))
    assert x.dtype == torch.bfloat16 and x.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("workers", [0, pytest.param(1, marks=pytest.mark.slow)])
@pytest.mark.parametrize("pipeline", ["pil", "decode_cpu"])
def test_a_zero_byte_jpeg_is_named_from_a_worker(tmp_path, pipeline, workers):
    root = write_jpegs(tmp_path, classes=2, per_class=2, size=(64, 48))
    (root / "c1" / "empty.JPEG").write_bytes(b"")
    loader = image_folder_loader(root, 8, train=True, image_size=32, workers=workers, pipeline=pipeline)
    with pytest.raises(ImageDecodeError) as err:
        list(loader)
    first = str(err.value).splitlines()[0]
    assert first.startswith(str(root / "c1" / "empty.JPEG")) and "0 bytes" in first and "Caught" not in first


def test_a_damaged_jpeg_in_a_batch_is_named_and_the_others_decode(tmp_path):
    root = write_jpegs(tmp_path, classes=1, per_class=3, size=(64, 48))
    paths = sorted(str(p) for p in (root / "c0").iterdir())
    datas = [read_bytes(p) for p in paths]
    images = decode_batch(datas, paths, torch.device("cpu"))
    assert [tuple(im.shape) for im in images] == [(3, 48, 64), (3, 64, 48), (3, 48, 64)]
    datas[1] = datas[1][:2].clone()  # a JPEG marker and nothing after it
    with pytest.raises(ImageDecodeError, match=rf"^{paths[1]}: cannot decode this image \(2 bytes; "):
        decode_batch(datas, paths, torch.device("cpu"))
    png = tmp_path / "really_a_png.JPEG"  # as one ImageNet training file is
    Image.new("RGB", (5, 4), (9, 8, 7)).save(png, format="PNG")
    (image,) = decode_batch([read_bytes(png)], [str(png)], torch.device("cpu"))
    assert image[:, 0, 0].tolist() == [9, 8, 7]
