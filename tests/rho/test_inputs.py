"""The command's inputs, checked without torch: sizes, layer patterns, target rho."""

import pytest

from repro.rho.model_list import RhoInputError
from repro.rho.inputs import check_target, parse_pattern, parse_size

RESNET_NAMES = [
    "conv1",
    "layer3",
    "layer3.0",
    "layer3.0.conv1",
    "layer3.0.conv2",
    "layer3.0.downsample.0",
    "layer3.1.conv1",
    "layer4.0.conv1",
    "layer4.1.conv2",
    "fc",
]


@pytest.mark.parametrize("text, size", [("224", (224, 224)), ("224x160", (224, 160)), ("64X32", (64, 32))])
def test_sizes(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "x", "224x", "2.5", "-3", "0", "1025", "224x224x3"])
def test_bad_sizes_are_refused_naming_the_option(text):
    with pytest.raises(RhoInputError, match="--size"):
        parse_size(text)


@pytest.mark.parametrize(
    "pattern, names",
    [
        ("layer3.*.conv*", ["layer3.0.conv1", "layer3.0.conv2", "layer3.1.conv1"]),
        (
            "layer[34].*.conv[12]",
            ["layer3.0.conv1", "layer3.0.conv2", "layer3.1.conv1", "layer4.0.conv1", "layer4.1.conv2"],
        ),
        ("layer[34].[!0].conv1", ["layer3.1.conv1"]),
        ("layer3.*", ["layer3.0"]),  # `*` stays within one segment
        (
            "layer3.**",
            ["layer3", "layer3.0", "layer3.0.conv1", "layer3.0.conv2", "layer3.0.downsample.0", "layer3.1.conv1"],
        ),  # `**` spans any number, none included
        ("**.conv2", ["layer3.0.conv2", "layer4.1.conv2"]),
        ("layer?.0.conv1", ["layer3.0.conv1", "layer4.0.conv1"]),
        ("fc", ["fc"]),
    ],
)
def test_patterns_match_segment_by_segment(pattern, names):
    p = parse_pattern(pattern)
    assert [n for n in RESNET_NAMES if p.matches(n)] == names


@pytest.mark.parametrize(
    "pattern, why",
    [
        ("layer4..conv1", "segment 2 is empty"),
        (".conv1", "segment 1 is empty"),
        ("conv1.", "segment 2 is empty"),
        ("layer4.*.conv[12", "not a name glob"),
        ("layer4/0", "not a name glob"),
        ("**", "matches every module"),
        ("**.**", "matches every module"),
        ("layer[]", "not a name glob"),
    ],
)
def test_bad_patterns_are_refused_naming_the_segment(pattern, why):
    with pytest.raises(RhoInputError, match="--route") as info:
        parse_pattern(pattern)
    assert why in str(info.value)


@pytest.mark.parametrize("value", [0.0, 1.0, 7.0, -0.1])
def test_target_is_a_fraction(value):
    with pytest.raises(RhoInputError, match="between 0 and 1"):
        check_target(value)
    assert check_target(0.07) == 0.07
