"""Pictures that must not mislead, checked on the figure objects: a point every sense shares drawn in no one
sense's colour, as many colours as groups, a context-free layer's spellings named as spellings, ring labels kept
inside the plot, and maps set side by side on one colour scale."""

from __future__ import annotations

import numpy as np

from ctxmodels.analysis import clusters
from ctxmodels.viz.scatter import PANEL_PLOT_PX, label_layout, label_places, sense_scatter
from ctxmodels.viz.style import NEUTRAL, OTHER, PALETTE, UNLABELLED, attention_heatmap, sense_colours


def test_a_point_every_sense_shares_is_neutral_in_3d():
    """A static model in 3-D: all 32 occurrences on one point. No sense's dot is drawn there (it would claim that
    sense); the shared point is a neutral grey dot with its count, and both senses keep their legend entries."""
    coords = np.zeros((32, 3))
    labels = ["money"] * 16 + ["river"] * 16
    fig = sense_scatter(coords, labels, [""] * 32, stacks=[list(range(32))], ranges=([-1, 1], [-1, 1], [-1, 1]))
    senses = [t for t in fig.data if t.name in ("money", "river") and len(t.x) == 16]
    assert {t.name for t in senses} == {"money", "river"} and not any(np.any(t.marker.size) for t in senses)
    entries = [t for t in fig.data if t.name in ("money", "river") and t.showlegend is not False]
    assert [(t.name, t.marker.size, t.marker.color) for t in entries] == [("money", 9, PALETTE[0]),
                                                                          ("river", 9, PALETTE[1])]
    assert all(np.isnan(t.x[0]) and t.legendgroup == t.name for t in entries)  # the legend keeps both, undrawn
    [shared] = [t for t in fig.data if t.name.startswith("shared points")]
    assert shared.marker.color == NEUTRAL and list(shared.text) == ["×32"]
    # one sense only: the point is that sense's, drawn in its colour
    fig = sense_scatter(coords, ["money"] * 32, [""] * 32, stacks=[list(range(32))],
                        ranges=([-1, 1], [-1, 1], [-1, 1]))
    money = next(t for t in fig.data if t.name == "money")
    assert len(money.x) == 32 and money.marker.size == 9


def test_every_group_gets_its_own_colour_and_other_is_neutral():
    many = [f"sense {i:02d}" for i in range(14)] + [OTHER, None]  # SemCor's play: 14 senses and the rare ones
    colours = sense_colours(many)
    groups = [colours[f"sense {i:02d}"] for i in range(14)]
    assert len(set(groups)) == 14 and NEUTRAL not in groups
    assert colours[OTHER] == colours[UNLABELLED] == NEUTRAL
    few = sense_colours(["river", "money", "other"])  # a few senses keep the usual palette
    assert few == {"money": PALETTE[0], "river": PALETTE[1], "other": NEUTRAL}


def test_a_context_free_layers_clusters_are_named_as_its_spellings():
    words = ["light", "Light", "lights", "lights", "lighted", "light"]
    spelled = clusters.Clustering(labels=np.array([0, 0, 1, 1, 2, 0]), k=3, silhouettes={})
    names, what = clusters.display_names(spelled, words)
    assert what == "spelling" and names == ["spelling: light", "spelling: light", "spelling: lights",
                                            "spelling: lights", "spelling: lighted", "spelling: light"]
    mixed = clusters.Clustering(labels=np.array([0, 1, 1, 1, 0, 0]), k=2, silhouettes={}, names={0: ["sun"]})
    names, what = clusters.display_names(mixed, words)
    assert what == "cluster" and names[0] == "cluster 1: sun"
    assert clusters.spelling_names(mixed, words) is None


def test_ring_labels_stay_inside_the_plot_and_off_each_other():
    ranges = ([0.0, 1.0], [0.0, 1.0])
    at_top = np.array([[0.5, 0.995]])  # a ring at the top edge: a label above it would be cut off
    assert label_places(ranges, at_top, [30], ["×32"]) != ["top center"]
    at_right_top = np.array([[0.995, 0.995]])
    assert label_places(ranges, at_right_top, [30], ["×12"])[0] in ("bottom center", "middle left")
    two = np.array([[0.5, 0.5], [0.5, 0.5 + 30 / PANEL_PLOT_PX[1]]])  # the second ring right above the first
    places = label_places(ranges, two, [20, 20], ["×5", "×4"])
    assert places[0] != "top center"
    fig = sense_scatter(np.zeros((4, 2)), ["a", "a", "b", "b"], [""] * 4, stacks=[[0, 1, 2, 3]])
    [shared] = [t for t in fig.data if t.name == "shared points"]
    assert shared.cliponaxis is False  # a count drawn whole even where the ring touches an edge
    # a heap of rings a pixel apart (BERT's input layer on SemCor's play): the largest keeps its count, the counts
    # that would land on another are left to the hover, so no two labels overlap
    heap = np.array([[0.5 + 0.001 * k, 0.5] for k in range(6)])
    layout = label_layout(ranges, heap, [30] * 6, [f"×{9 - k}" for k in range(6)])
    assert layout[0][1] and sum(clear for _, clear in layout) < 6
    coords = np.repeat(heap, 2, axis=0)
    fig = sense_scatter(coords, ["a", "b"] * 6, [""] * 12, stacks=[[2 * k, 2 * k + 1] for k in range(6)],
                        ranges=ranges)
    [shared] = [t for t in fig.data if t.name == "shared points"]
    assert shared.text[0] == "×2" and "" in shared.text and len(shared.hovertext) == 6


def test_maps_side_by_side_share_one_colour_scale():
    a, b = np.array([[0.9, 0.1], [0.5, 0.5]]), np.array([[0.6, 0.4], [0.3, 0.7]])
    top = max(a.max(), b.max())
    figs = [attention_heatmap(m, ["x", "y"], zmax=top) for m in (a, b)]
    assert [(f.data[0].zmin, f.data[0].zmax) for f in figs] == [(0, top), (0, top)]
    assert attention_heatmap(b, ["x", "y"]).data[0].zmax is None  # alone: its own largest weight


def test_a_heap_of_shared_points_draws_lighter_smaller_rings():
    """A BERT's input layer on SemCor's play: one shared point per spelling and position, 57 rings in four heaps. Past
    a dozen rings they are drawn thin, light and small, so the dots' colours show through."""
    from ctxmodels.viz import scatter

    rng = np.random.default_rng(0)
    few, many = rng.normal(size=(10, 2)), rng.normal(size=(40, 2))
    pairs = lambda n: [[2 * i, 2 * i + 1] for i in range(n)]  # noqa: E731
    for xy, n in ((np.repeat(few, 2, axis=0), 10), (np.repeat(many, 2, axis=0), 40)):
        fig = scatter.sense_scatter(xy, ["a", "b"] * n, ["s"] * 2 * n, stacks=pairs(n))
        ring = next(t for t in fig.data if t.name == "shared points")
        crowded = n > scatter.CROWDED_RINGS
        assert ring.marker.line.width == (1 if crowded else 2)
        assert (ring.marker.color != "#222") == crowded
