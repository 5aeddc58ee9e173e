"""Initialisation of the CIFAR / Tiny-ImageNet CNNs: activation scale through the stack at init.

Without BatchNorm the depthwise-separable stack under PyTorch's default init shrinks the signal
~18x in second moment per separable unit, and its biases swamp what is left: the flattened
features barely depend on the input and the model does not learn (tools/investigate/FINDINGS.md).
He init (the default) keeps every ReLU output at unit order.
"""

import pytest
import torch
from torch import nn

from repro.models.backbones import BACKBONES, ConvBackboneConfig


def relu_stds_and_input_share(name: str, **params) -> tuple[list[float], float]:
    torch.manual_seed(0)
    net = BACKBONES.get(name).builder((3, 32, 32), **params)
    stds: list[float] = []
    for m in net.modules():
        if isinstance(m, nn.ReLU):
            m.register_forward_hook(lambda mod, i, o: stds.append(o.std().item()))
    with torch.no_grad():
        f = net(torch.randn(64, 3, 32, 32))  # unit-variance input, as after normalisation
    across, const = f.var(0).mean().item(), f.mean(0).pow(2).mean().item()
    return stds, across / (across + const)


@pytest.mark.parametrize("name", ["cifar_depthwise", "cifar_standard"])
def test_he_init_keeps_activations_at_unit_order(name):
    assert ConvBackboneConfig().init == "he"
    stds, share = relu_stds_and_input_share(name)
    assert len(stds) == 4
    assert all(0.3 < s < 1.5 for s in stds), stds
    assert share > 0.05  # the features carry the input


def test_torch_default_init_starves_the_depthwise_stack():
    stds, share = relu_stds_and_input_share("cifar_depthwise", init="torch")
    he, _ = relu_stds_and_input_share("cifar_depthwise")
    assert stds[-1] < 0.2 < he[-1]
    assert share < 1e-3  # features are the bias pattern, nearly the same for every input


def test_he_init_weights_and_biases():
    net = BACKBONES.get("cifar_depthwise").builder((3, 32, 32))
    dw, pw = net.blocks[1][0], net.blocks[1][1]  # block 2: depthwise 3x3 (fan_in 9), pointwise 1x1 (fan_in 24)
    assert dw.groups == 24 and pw.kernel_size == (1, 1)
    assert dw.weight.std().item() == pytest.approx((1 / 9) ** 0.5, rel=0.1)  # gain 1: no ReLU follows
    assert pw.weight.std().item() == pytest.approx((2 / 24) ** 0.5, rel=0.1)  # gain sqrt(2): ReLU follows
    assert all(m.bias.abs().max().item() == 0 for m in (dw, pw))
    with pytest.raises(ValueError):
        ConvBackboneConfig(init="xavier")
