"""Teacher-guided routing (repro.models.teacher_guided): the dense twin, its k-means router, L_t, FLOPs."""

import pytest
import torch
import torch.nn.functional as F

from repro.models.flops import count_flops
from repro.models import Component, build_model
from repro.models.aux_losses import entropy_loss, load_balance_loss
from repro.models.configs import DenseHeadConfig, TeacherGuidedConfig
from repro.models.heads import DenseHead
from repro.models.teacher_guided import TeacherGuidedHead, use_dense_twin

D, O = 2, 3  # noqa: E741 (O: outputs, the legend's letter, repro/models/experts.py)


def given_teacher() -> tuple[DenseHead, torch.Tensor]:
    """A teacher with t(h) = ReLU(h) and centres (0, 0), (5, 5)."""
    t = DenseHead(D, O, DenseHeadConfig(hidden=(2,), dropout=0.0))
    with torch.no_grad():
        t.mlp[0].weight.copy_(torch.eye(2))
        t.mlp[0].bias.zero_()
    return t, torch.tensor([[0.0, 0.0], [5.0, 5.0]])


def head(**kw) -> TeacherGuidedHead:
    teacher, centres = given_teacher()
    kw = {"num_experts": 2, "expert_hidden": 4, "dropout": 0.0, "key_dim": 4, "capacity_factor": 4.0, **kw}
    return TeacherGuidedHead(D, O, TeacherGuidedConfig(**kw), teacher=teacher, centres=centres)


def test_teacher_assignment_golden():
    m = head()
    h = torch.tensor([[1.0, 0.0], [4.0, 6.0], [-3.0, -3.0], [3.0, 2.5]])
    # t = [1,0], [4,6], [0,0], [3,2.5]: nearest of (0,0), (5,5)
    assert m.teacher_assignment(h).tolist() == [0, 1, 0, 1]


def test_aux_adds_the_router_cross_entropy_to_the_teacher():
    m = head(teacher_weight=0.7, load_balance_weight=0.3, entropy_weight=0.2).train()
    m.on_epoch_start(20, 50)
    h = torch.tensor([[1.0, 0.0], [4.0, 6.0], [-3.0, -3.0], [3.0, 2.5]])
    m(h)
    p, mask = m._routing["probs"], m._routing["mask"]
    scores = m.router(h) / m.tau
    want = (
        0.3 * load_balance_loss(p, mask)
        + 0.2 * entropy_loss(p)
        + 0.7 * F.cross_entropy(scores, torch.tensor([0, 1, 0, 1]))
    )
    torch.testing.assert_close(m.aux_loss().detach(), want.detach())
    m.aux_loss().backward()
    assert m.router.w_r.weight.grad.abs().sum() > 0  # the teacher reaches the router
    assert m.teacher.mlp[0].weight.grad is None  # the teacher is frozen
    agree = (scores.argmax(-1) == torch.tensor([0, 1, 0, 1])).float().mean()
    assert m.routing_stats()["teacher_agreement"].item() == pytest.approx(agree.item())


def test_the_teacher_starts_as_the_dense_twin_of_the_same_seed():
    def model(head_name, params):
        torch.manual_seed(7)
        return build_model("cifar10", Component("cifar_standard"), Component(head_name, params))

    dense = model("dense", {"hidden": [64, 32]})
    tg = model("teacher_guided", {"expert_hidden": 32, "teacher_hidden": [64, 32]})
    for (k, a), (_, b) in zip(dense.backbone.state_dict().items(), tg.backbone.state_dict().items()):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=k)
    for (k, a), b in zip(dense.head.state_dict().items(), tg.head.teacher.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=k)


def test_replay_is_the_dense_head_then_the_student_fits_its_teacher_router():
    torch.manual_seed(0)
    m = TeacherGuidedHead(
        D,
        O,
        TeacherGuidedConfig(
            num_experts=2,
            expert_hidden=4,
            key_dim=4,
            dropout=0.0,
            teacher_hidden=(6,),
            teacher_dropout=0.0,
            teacher_epochs=10,
        ),
    )
    m.train().on_epoch_start(0, 50)
    h = torch.tensor([[0.0, 0.0], [0.1, 0.0], [9.0, 9.0], [9.0, 8.9]])
    torch.testing.assert_close(m(h), m.teacher(h))
    assert m.routing_stats() == {} and m.aux_loss().item() == 0.0 and m.schedule_state()["teacher_phase"] == 1
    m.on_epoch_start(10, 50)
    m(torch.randn(4, D))
    assert m.fitted  # fitted on the replay's rows, not this batch
    from repro.models.kmeans import kmeans

    want = kmeans(m.teacher_features(h), 2, m.cfg.kmeans_iters, m.cfg.kmeans_seed)
    torch.testing.assert_close(m.centres, want)


def test_use_dense_twin_loads_a_trained_dense_model():
    torch.manual_seed(1)
    dense = build_model("cifar10", Component("cifar_standard"), Component("dense", {"hidden": [64, 32]}))
    tg = build_model(
        "cifar10",
        Component("cifar_standard"),
        Component("teacher_guided", {"expert_hidden": 32, "teacher_hidden": [64, 32]}),
    )
    use_dense_twin(tg.head, dense.state_dict())
    torch.testing.assert_close(tg.head.teacher.mlp[0].weight, dense.head.mlp[0].weight, rtol=0, atol=0)
    tg.head.on_epoch_start(0, 50)
    assert not tg.head.replaying  # a loaded teacher is not replayed


def test_trains_a_step_in_both_phases_and_flops_are_the_students():
    model = build_model(
        "cifar10",
        Component("cifar_standard"),
        Component("teacher_guided", {"expert_hidden": 32, "teacher_hidden": [1024, 32]}),
    )
    model.train()
    for epoch in (0, 10):
        model.head.on_epoch_start(epoch, 50)
        x, y = torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))
        loss = F.cross_entropy(model(x), y) + model.head.aux_loss()
        assert torch.isfinite(loss)
        loss.backward()
        model.head.after_backward()
    assert model.head.aux_loss().item() > 0
    report = count_flops(model, (3, 32, 32))
    assert report.problems == []
    d, e, dk, hid, o = model.head.experts.in_features, 8, 64, 32, 10
    assert report.head == d * e + d * dk + dk * e + (d * hid + hid * hid + hid * o)  # the teacher never runs


def test_a_replayed_step_is_the_dense_runs_step():
    def one_step(head_name, params):
        torch.manual_seed(5)
        model = build_model("cifar10", Component("cifar_standard"), Component(head_name, params), image_size=16)
        model.train()
        if head_name == "teacher_guided":
            model.head.on_epoch_start(0, 50)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        x, y = torch.randn(8, 3, 16, 16), torch.arange(8) % 10  # drawn after the build: the same batch
        F.cross_entropy(model(x), y).backward()
        opt.step()
        return model

    dense = one_step("dense", {"hidden": [64, 32]})  # dropout 0.3: the masks must match too
    tg = one_step("teacher_guided", {"expert_hidden": 32, "teacher_hidden": [64, 32]})
    for a, b in zip(dense.backbone.parameters(), tg.backbone.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    for a, b in zip(dense.head.parameters(), tg.head.teacher.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
