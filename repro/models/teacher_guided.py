"""Teacher-guided routing (after TGR-MoE, "Teacher-Guided Routing for Sparse Vision MoE"), on the paper's head.

Shapes: B batch, D features (d_in), T teacher features (the dense head's first width),
E experts, N rows kept for k-means, O classes.

The student is the paper's sparse head unchanged (router of Eq. 1, capacity, k = 1
experts, L_lb and L_ent; repro.models.sparse_moe). TGR adds a teacher router built from
a pretrained dense teacher's intermediate features and trains the student router
toward its choices:

    t(h)   = ReLU(W_1 h + b_1)                    teacher features: the dense head's first layer   (B, T)
    c      = kmeans(t(h_n), E)                    teacher router: E centres in teacher space       (E, T)
    z_b    = argmin_e ||t(h_b) - c_e||^2          the teacher's assignment                         (B,)
    L_t    = CE(l~_b / tau, z_b)                  student router toward it (l~ of Eq. 1)           ()
    aux    = lambda_lb L_lb + lambda_ent L_ent + lambda_t L_t

Adapted to a CNN backbone feeding a routed head of MLP experts:
- The teacher is the dense run of the same seed and configuration. The head builds the
  dense twin's head (F -> teacher_hidden -> O) before any student parameter, so with
  the same seed it starts from the dense run's very weights; for the first
  `teacher_epochs` (paper timeline) the model *is* that dense model (the student's
  parameters take no gradient and draw no random numbers), i.e. the dense run replayed.
  At the switch the teacher is frozen and its router fitted by k-means on the
  first-layer features of the last kept training rows; z_b is then recomputed for every
  batch from the current backbone features. Run records keep no weights today, so this
  replay is how the teacher's features are obtained inside one run; `use_dense_twin`
  loads a saved dense model instead (the replay is then skipped). A run resumed exactly
  at the switch has lost the kept rows and fits on its first student batch instead.
- TGR's teacher router reads a ViT teacher's token features; here the teacher's own
  head layer reads the shared backbone's pooled features, one routing decision per image.
- k-means into E groups stands in for TGR's teacher router, so that the teacher has
  exactly one group per expert; group e is expert e's target (the labels' order is arbitrary).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from repro.models.configs import DenseHeadConfig, TeacherGuidedConfig
from repro.models.base import check_features, check_head
from repro.models.heads import DenseHead
from repro.models.kmeans import Reservoir, kmeans, nearest
from repro.models.sparse_moe import SparseMoEHead


class TeacherGuidedHead(SparseMoEHead):
    """The paper's sparse head with its router supervised by a dense teacher (beyond the paper), (B, in_features)
    -> (B, num_classes); `cfg` (TeacherGuidedConfig: SparseMoEConfig's fields and the teacher's) gives both. Without
    `teacher` (a dense head) it first replays the dense twin for `teacher_epochs`, then fits k-means to the
    teacher's features and adds the router's cross-entropy toward them to aux_loss(). The module docstring has
    the equations and the adaptation."""

    cfg: TeacherGuidedConfig
    centres: torch.Tensor  # buffers: c, (E, T)
    fitted: torch.Tensor  # bool, ()

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        cfg: TeacherGuidedConfig,
        teacher: DenseHead | None = None,
        centres: torch.Tensor | None = None,
    ) -> None:
        check_head(self, in_features, num_classes, cfg, TeacherGuidedConfig)
        # The dense twin's head first: it takes the random draws build_dense takes after the backbone.
        twin = teacher or DenseHead(in_features, num_classes, DenseHeadConfig(cfg.teacher_hidden, cfg.teacher_dropout))
        self.replay = teacher is None  # plain attribute, read by on_epoch_start during super().__init__
        self.replaying = self.replay
        # The student draws its initial weights from a stream of its own, so the global RNG after the
        # model is built (dropout masks, on CPU) is the dense run's too.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(torch.initial_seed() + 1)
            super().__init__(in_features, num_classes, cfg)
        self.teacher = twin
        first = twin.mlp[0]
        assert isinstance(first, nn.Linear)  # a DenseHead's mlp starts with one
        width = first.out_features
        self.register_buffer("centres", torch.zeros(cfg.num_experts, width) if centres is None else centres.clone())
        self.register_buffer("fitted", torch.tensor(centres is not None))
        self.reservoir = Reservoir(cfg.kmeans_samples)

    def on_epoch_start(self, epoch: int, num_epochs: int) -> None:
        super().on_epoch_start(epoch, num_epochs)
        self.replaying = self.replay and epoch < self.cfg.teacher_epochs

    def schedule_state(self) -> dict[str, float | int]:
        return {**super().schedule_state(), "teacher_phase": int(self.replaying)}

    @torch.no_grad()
    def teacher_features(self, h: torch.Tensor) -> torch.Tensor:
        """t(h) = ReLU(W_1 h + b_1), the frozen teacher's first hidden layer: (B, D) -> (B, T)."""
        return F.relu(self.teacher.mlp[0](h))

    @torch.no_grad()
    def fit_teacher_router(self, rows: torch.Tensor) -> None:
        """c = kmeans(t(rows), E): the teacher router, from feature rows (N, D)."""
        c = self.cfg
        self.centres.copy_(kmeans(self.teacher_features(rows), c.num_experts, c.kmeans_iters, c.kmeans_seed))
        self.fitted.fill_(True)

    def teacher_assignment(self, h: torch.Tensor) -> torch.Tensor:
        """z_b, the teacher router's expert for each sample: (B, D) -> (B,)."""
        return nearest(self.teacher_features(h), self.centres)

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # (B, D) -> (B, O)
        check_features(self, h, self.in_features)
        if self.replaying:  # the dense twin, training as the dense run does
            if self.training:
                self.reservoir.add(h)
            self._aux, self._routing = None, None
            return self.teacher(h)
        out = super().forward(h)
        if not self.training:
            return out
        if not bool(self.fitted):
            kept = self.reservoir.take()
            self.fit_teacher_router(kept if kept is not None and kept.shape[0] >= self.cfg.num_experts else h)
        z = self.teacher_assignment(h)  # (B,)
        scores = self.router.with_utility(self.router(h)) / self.tau  # (B, E), l~ / tau with gradient
        assert self._aux is not None and self._routing is not None  # SparseMoEHead.forward, in training
        self._aux = self._aux + self.cfg.teacher_weight * F.cross_entropy(scores, z)
        self._routing["extra"]["teacher_agreement"] = (scores.detach().argmax(-1) == z).float().mean()
        return out


def use_dense_twin(head: TeacherGuidedHead, dense_model_state: dict[str, torch.Tensor]) -> None:
    """Take the teacher from a trained dense model's state dict (a Classifier's: 'head.mlp.*'), skip the replay."""
    own = {k.removeprefix("head."): v for k, v in dense_model_state.items() if k.startswith("head.")}
    head.teacher.load_state_dict(own)
    head.replay = head.replaying = False
    head.fitted.fill_(False)


def build_teacher_guided(in_features: int, num_classes: int, **params) -> nn.Module:
    """The teacher-guided head: (B, in_features) features -> (B, num_classes) logits;
    `params` are TeacherGuidedConfig's fields (repro.models.configs), checked there."""
    return TeacherGuidedHead(in_features, num_classes, TeacherGuidedConfig(**params))
