"""`repro rho --all --figure`: the settings' labels are placed so that none covers another or a star."""

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from repro.rho.figure import LABEL_PLACES, STAR_SIZE, _separate, star_boxes


def _labelled(stars: list[tuple[float, float, str]]):
    fig = Figure(figsize=(6, 4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(1e-3, 1e2)
    ax.set_ylim(1e-2, 1e2)
    labels = []
    for x, y, text in stars:
        ax.scatter([x], [y], marker="*", s=STAR_SIZE)
        labels.append(ax.annotate(text, (x, y), xytext=LABEL_PLACES[0][0], textcoords="offset points", fontsize=7))
    return fig, labels


def _boxes(fig, labels):
    renderer = fig.canvas.get_renderer()
    return [label.get_window_extent(renderer) for label in labels], star_boxes(fig, labels)


# Table 6's two CIFAR settings at the top left of the figure: the first's label, placed below right, runs
# under the second's star.
CROWDED = [(0.002, 46.0, "cifar10_dw072_moe: 46%, paper ~49% (explainer)"), (0.025, 43.0, "cifar10_std_h2048_moe: 43%")]


def test_the_default_place_would_cover_the_neighbouring_star():
    fig, labels = _labelled(CROWDED)
    (first, _), (_, second_star) = zip(*_boxes(fig, labels))
    assert first.overlaps(second_star)


def test_no_label_covers_another_label_or_another_setting_s_star():
    fig, labels = _labelled(
        CROWDED + [(0.0025, 24.0, "cifar10_dw_h128_moe: 24%"), (1.8, 45.0, "r18_backbone_moe: 45%")]
    )
    _separate(fig, labels)
    boxes, stars = _boxes(fig, labels)
    for i, box in enumerate(boxes):
        assert not any(box.overlaps(b) for j, b in enumerate(boxes) if j != i), labels[i].get_text()
        assert not any(box.overlaps(s) for j, s in enumerate(stars) if j != i), labels[i].get_text()


def test_a_label_with_room_stays_below_right_of_its_star():
    fig, labels = _labelled([(0.01, 1.0, "alone: 1%")])
    _separate(fig, labels)
    assert tuple(labels[0].get_position()) == LABEL_PLACES[0][0]
    assert labels[0].get_horizontalalignment() == "left"
