"""The figure functions (``ctxmodels.viz``, which the app's pages call) are pure: data in, a Plotly figure out,
checkable without a browser."""

import math

import numpy as np
import pytest

from ctxmodels.viz import attention as attention_figures
from ctxmodels.viz import blanks as fill_figures
from ctxmodels.viz import elmo_layers as layers_figures
from ctxmodels.viz import overview as overview_figures
from ctxmodels.viz import scatter
from ctxmodels.viz import senses as senses_figures
from ctxmodels.viz import style as figures


def test_sense_scatter_one_trace_per_sense_and_indices_kept():
    coords = np.array([[0, 0], [1, 1], [2, 2], [3, 3]], dtype=float)
    fig = scatter.sense_scatter(coords, ["river", "money", "river", None], ["a", "b", "c", "d"])
    names = [t.name for t in fig.data]
    assert names == sorted(["river", "money", figures.UNLABELLED])
    river = next(t for t in fig.data if t.name == "river")
    assert list(river.customdata) == [0, 2] and list(river.x) == [0, 2]


def test_sense_scatter_rings_the_marked_occurrences_on_top_of_their_dots():
    coords = np.array([[0, 0], [1, 1], [2, 2], [3, 3]], dtype=float)
    fig = scatter.sense_scatter(coords, ["river", "money", "river", None], ["a", "b", "c", "<d>"], marked=[1, 3],
                                marked_name="with <b>water</b>")
    ring = fig.data[-1]  # drawn last, so on top
    assert ring.name == "with &lt;b&gt;water&lt;/b&gt;" and ring.marker.symbol == "circle-open"
    assert list(ring.customdata) == [1, 3] and list(ring.x) == [1, 3] and list(ring.text) == ["b", "<d>"]
    # occurrences that share a point (a static model) are spread into a small sunflower: the ring is on its own dot
    shared = scatter.sense_scatter(np.zeros((4, 2)), ["river", "money", "river", "money"], ["a"] * 4,
                                   stacks=[[0, 1, 2, 3]], marked=[0])
    river = next(t for t in shared.data if t.name == "river")
    assert list(river.customdata) == [0, 2] and shared.data[-1].x[0] == river.x[0] != 0.0
    three_d = scatter.sense_scatter(np.ones((3, 3)), ["a", "a", "b"], ["x", "y", "z"], marked=[2], marked_name="m")
    assert three_d.data[-1].type == "scatter3d" and list(three_d.data[-1].z) == [1.0]
    assert [t.name for t in scatter.sense_scatter(coords, ["a"] * 4, ["x"] * 4).data] == ["a"]  # nothing marked


def test_sense_scatter_3d_and_bad_shapes():
    fig = scatter.sense_scatter(np.zeros((3, 3)), ["a", "a", "b"], ["x", "y", "z"])
    assert fig.data[0].type == "scatter3d"
    with pytest.raises(ValueError):
        scatter.sense_scatter(np.zeros((3, 4)), ["a"] * 3, ["x"] * 3)
    with pytest.raises(ValueError):
        scatter.sense_scatter(np.zeros((3, 2)), ["a"] * 2, ["x"] * 3)


def test_sense_scatter_3d_shares_ranges_in_a_cube_and_counts_a_shared_point():
    """The TensorBoard Projector's view: panels fitted jointly share the three axes' ranges; the occurrences a
    static vector stacks on one point keep their ring and count (no sunflower in a turning cloud)."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(6, 3)), 3 * rng.normal(size=(6, 3))
    ranges = scatter.shared_ranges([a, b])
    assert len(ranges) == 3 and all(lo < c.min() and hi > c.max() for (lo, hi), c in zip(ranges, np.vstack([a, b]).T))
    fig = scatter.sense_scatter(a, ["x"] * 3 + ["y"] * 3, ["h"] * 6, ranges=ranges, marked=[0])
    scene = fig.layout.scene
    assert scene.aspectmode == "cube" and tuple(scene.zaxis.range) == tuple(ranges[2])
    assert scene.xaxis.title.text == "" and not scene.yaxis.showticklabels
    assert [t.type for t in fig.data] == ["scatter3d"] * 4 and fig.data[-1].z[0] == a[0, 2]  # the ring
    box = fig.data[0]  # the shared box's corners, invisible, so that a panel of one point draws it too
    assert box.marker.opacity == 0 and not box.showlegend and list(box.z) == list(ranges[2])
    same = scatter.sense_scatter(np.ones((4, 3)), ["x", "x", "y", "y"], ["h"] * 4, stacks=[[0, 1, 2, 3]])
    ring = same.data[-1]
    assert ring.type == "scatter3d" and ring.name == "shared points" and ring.text == ("×4",)
    assert "x: 2<br>y: 2" in ring.hovertext[0]


def test_highlight_bolds_the_span_and_escapes_html():
    s = "The <bank> of the river"
    assert figures.highlight(s, (4, 10)) == "The <b>&lt;bank&gt;</b> of the river"


def test_layer_panels_one_trace_per_model_sorted_by_layer():
    rows = [{"model": "bert", "layer": 1, "acc": 0.9}, {"model": "bert", "layer": 0, "acc": 0.5},
            {"model": "elmo", "layer": 0, "acc": 0.4}]
    fig = figures.layer_panels(rows, [("acc", "accuracy", "accuracy", {"most frequent sense": 0.5})])
    assert [t.name for t in fig.data] == ["bert", "elmo"]
    assert list(fig.data[0].y) == [0.5, 0.9]


def test_attention_figures_shapes():
    m = np.eye(3)
    heat = figures.attention_heatmap(m, ["a", "b", "a"])
    assert len(set(heat.data[0].y)) == 3  # duplicate tokens stay separate rows
    grid = attention_figures.attention_grid(np.random.rand(2, 3, 4, 4))
    z = np.array(grid.data[0].z, dtype=float)
    assert len(grid.data) == 1 and z.shape == (2 * 5 - 1, 3 * 5 - 1)  # 4 tokens + a 1-cell gap per map
    assert np.nanmax(z[:4, :4]) == 1.0  # each map scaled to its own maximum
    cut = attention_figures.attention_grid(np.random.rand(1, 1, 100, 100), max_tokens=10)
    assert np.array(cut.data[0].z).shape == (10, 10)
    lines = attention_figures.attention_lines(m, ["a", "b", "c"], threshold=0.5)
    segments = sum(len(t.x) // 3 for t in lines.data if t.mode == "lines")
    assert segments == 3
    weak = attention_figures.attention_lines(np.full((3, 3), 1 / 3), ["a", "b", "c"], threshold=0.5)
    assert not [t for t in weak.data if t.mode == "lines"]


def test_head_summary_grid_one_layer_by_head_grid_per_measure():
    from ctxmodels.analysis import attention as att

    maps = att.AttentionMaps(np.random.dirichlet(np.ones(5), size=(3, 4, 5)).astype(np.float32),
                             ["[CLS]", "a", "b", "c", "[SEP]"], [None, 0, 1, 2, None], [None, 0, 0, 0, None])
    summary = att.head_summaries(maps)
    fig = attention_figures.head_summary_grid(summary)
    assert len(fig.data) == len(attention_figures.HEAD_MEASURES)
    for trace, measure in zip(fig.data, attention_figures.HEAD_MEASURES):
        z = np.array(trace.z, dtype=float)
        assert z.shape == (3, 4)
        row = summary[(summary["layer"] == 2) & (summary["head"] == 3)].iloc[0]
        assert z[1, 2] == pytest.approx(row[measure])
    # labelled as layers and heads (a tickprefix on tickvals did not show in the browser)
    assert list(fig.layout.yaxis.ticktext) == ["L1", "L2", "L3"] and fig.layout.yaxis.showticklabels
    assert list(fig.layout.xaxis.ticktext) == ["H1", "H2", "H3", "H4"] and not fig.layout.yaxis2.showticklabels


def test_fill_bars_best_on_top_and_truth_highlighted():
    fig = fill_figures.fill_bars([{"token": "bank", "prob": 0.6}, {"token": "box", "prob": 0.1}], truth="box")
    assert list(fig.data[0].y) == ["box", "bank"]
    assert fig.data[0].marker.color[0] != fig.data[0].marker.color[1]


def test_mix_weights_bars_and_loss_chart():
    fig = layers_figures.mix_weights_bars(["l0", "l1", "l2"], [0.2, 0.5, 0.3], 1.3, [0.6, 0.8, 0.7])
    assert "1.30" in fig.layout.title.text and len(fig.data) == 2
    chart = figures.loss_chart([{"step": 1, "loss": 3.0}, {"step": 2, "eval": {}}, {"step": 3, "loss": 2.0}])
    assert list(chart.data[0].x) == [1, 3]


def test_figures_show_markup_as_text():
    """Plotly reads a subset of HTML in titles, categories, legend names and hover text: a visitor's is escaped."""
    tokens = ["<b>x</b>", "<a href='http://h'>y</a>", "a & b", '"q"']
    heat = figures.attention_heatmap(np.eye(4), tokens, title="<img src=x>")
    assert heat.data[0].y[0] == "&lt;b&gt;x&lt;/b&gt; ·0" and heat.layout.title.text == "&lt;img src=x&gt;"
    bars = fill_figures.fill_bars([{"token": t, "prob": 0.1} for t in tokens], title="“<i>w</i>”")
    assert "<" not in "".join(bars.data[0].y) + bars.layout.title.text
    dots = scatter.sense_scatter(np.zeros((1, 2)), ["<i>s</i>"], ["h"], title="<b>t</b>")
    assert dots.data[0].name == "&lt;i&gt;s&lt;/i&gt;" and "<b>" not in dots.layout.title.text
    assert figures.highlight('say "hi" <now>', (0, 3)) == "<b>say</b> \"hi\" &lt;now&gt;"  # quotes stay quotes


def test_layer_panels_one_figure_one_colour_and_legend_entry_per_model():
    rows = [{"model": m, "layer": i, "layer_name": f"layer {i}", "acc": 0.5 + i / 10, "sim": 0.9 - i / 10,
             "empty": float("nan")} for m in ("elmo", "bert") for i in range(3)]
    fig = figures.layer_panels(rows, [("acc", "accuracy per layer", "accuracy", {"majority": 0.5}),
                                      ("empty", "never drawn", "nothing", None),
                                      ("sim", "self-similarity", "mean cosine", None)])
    assert [a.text for a in fig.layout.annotations if a.text in ("accuracy per layer", "never drawn",
                                                                "self-similarity")] == ["accuracy per layer",
                                                                                         "self-similarity"]
    assert fig.layout.yaxis.title.text == "accuracy" and fig.layout.yaxis2.title.text == "mean cosine"
    assert [t.name for t in fig.data if t.showlegend] == ["elmo", "bert"]
    by_model = {}
    for t in fig.data:
        by_model.setdefault(t.name, set()).add(t.line.color)
    assert all(len(c) == 1 for c in by_model.values()) and by_model["elmo"] != by_model["bert"]
    assert figures.model_colours(["bert", "elmo"])["bert"] == figures.model_colours(["bert"])["bert"]
    with pytest.raises(ValueError, match="no measurement"):
        figures.layer_panels(rows, [("empty", "never drawn", "nothing", None)])


def test_a_long_scatter_title_wraps_instead_of_running_under_the_next_panel():
    """Plotly never wraps a title: a half-width panel's long one ran under its neighbour."""
    title = "minilm-eltec · embeddings (input embeddings: word + position + segment)"
    fig = scatter.sense_scatter(np.zeros((2, 2)), ["a", "b"], ["x", "y"], title=title)
    lines = fig.layout.title.text.split("<br>")
    assert len(lines) == 2 and all(len(line) <= 44 for line in lines)
    assert " ".join(lines) == title
    short = scatter.sense_scatter(np.zeros((2, 2)), ["a", "b"], ["x", "y"], title="elmo-eltec · layer 2 (LSTM)")
    hyphens = scatter.sense_scatter(np.zeros((1, 2)), ["a"], ["x"],
                                    title="elmo-eltec · layer 0 (char CNN) (context-free)")
    assert hyphens.layout.title.text == "elmo-eltec · layer 0 (char CNN)<br>(context-free)"  # not "(context-"
    assert "<br>" not in short.layout.title.text
    # the plot area keeps its height: the figure grows by the extra line
    assert fig.layout.margin.t - short.layout.margin.t == fig.layout.height - short.layout.height > 0
    unbroken = scatter.sense_scatter(np.zeros((1, 2)), ["a"], ["x"], title="runs/" + "x" * 80)
    assert all(len(line) <= 44 for line in unbroken.layout.title.text.split("<br>"))


@pytest.mark.parametrize("layers,heads", [(1, 1), (2, 2), (3, 4), (6, 12), (12, 12), (24, 16), (7, 3)])
def test_head_summary_grid_rows_of_square_cells_for_any_model_size(layers, heads):
    """Rows of three grids whose height fits square cells (one row of six left a strip a few pixels high), and a
    figure that Plotly accepts for every size (a domain a rounding error below 0 was refused)."""
    import pandas as pd

    cells = [(lay, h) for lay in range(1, layers + 1) for h in range(1, heads + 1)]
    summary = pd.DataFrame({"layer": [c[0] for c in cells], "head": [c[1] for c in cells],
                            **{m: np.linspace(0, 1, len(cells)) for m in attention_figures.HEAD_MEASURES}})
    fig = attention_figures.head_summary_grid(summary)
    domains = [fig.layout[f"yaxis{n if n > 1 else ''}"].domain for n in range(1, 7)]
    assert len({d for d in domains}) == 2  # two rows
    top, bottom = sorted(set(domains), reverse=True)
    assert top[1] == 1 and bottom[0] == 0 and bottom[1] < top[0]
    plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    row_px = (top[1] - top[0]) * plot_px
    grid_px = (attention_figures.NOMINAL_CONTENT_PX - 50) * fig.layout.xaxis.domain[1]
    assert row_px == pytest.approx(min(320, max(60, grid_px * layers / heads)), rel=1e-3)


def test_shared_point_labels_keep_off_each_others_rings():
    """Rings a few pixels apart: the label of the lower one goes beside it, not onto the ring above it."""
    rings = np.array([[5.0, 5.0], [5.0, 5.6], [9.0, 1.0]])  # the second ring sits 22 px above the first
    places = scatter.label_places(([0, 10], [0, 10]), rings, [18, 18, 18], ["×9", "×4", "×3"])
    assert places[2] == "top center"  # alone: its label above it, as before
    assert places[1] == "top center" and places[0] != "top center"
    # and in a figure: one label place per ring, the largest ring first
    coords = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 0.2], [0.0, 0.2], [0.0, 0.2], [9.0, 9.0]])
    fig = scatter.sense_scatter(coords, ["a"] * 6, ["h"] * 6, stacks=[[0, 1], [2, 3, 4]])
    ring = fig.data[-1]
    assert list(ring.text) == ["×3", "×2"] and list(ring.customdata) == [2, 0]
    assert list(ring.textposition) == ["top center", "bottom center"]
    # panels that share wider axes draw the rings further apart: both labels fit above them
    wide = scatter.sense_scatter(coords, ["a"] * 6, ["h"] * 6, stacks=[[0, 1], [2, 3, 4]],
                                 ranges=([-1, 10], [-0.2, 0.5]))
    assert list(wide.data[-1].textposition) == ["top center", "top center"]
    assert list(wide.layout.yaxis.range) == [-0.2, 0.5] and wide.layout.yaxis.autorange is False


def test_a_shared_point_of_several_senses_shows_every_sense_inside_its_ring():
    """Issue 15: the static model's one point must show every sense, not the colour drawn last. The dots of a
    mixed stack are spread a few pixels around the shared point, within its ring; a one-sense stack stays put."""
    coords = np.zeros((8, 2))
    coords[6:] = [[4.0, 4.0], [4.0, 4.0]]
    labels = ["money"] * 3 + ["river"] * 3 + ["river", "river"]
    fig = scatter.sense_scatter(coords, labels, ["h"] * 8, stacks=[[0, 1, 2, 3, 4, 5], [6, 7]])
    by_sense = {t.name: np.column_stack([t.x, t.y]) for t in fig.data if t.name in ("money", "river")}
    ring = fig.data[-1]
    assert list(ring.text) == ["×6", "×2"] and (ring.x[0], ring.y[0]) == (0.0, 0.0)
    x_range, y_range = fig.layout.xaxis.range, fig.layout.yaxis.range
    assert fig.layout.xaxis.autorange is False  # the spread must not rescale the axes
    px = np.array(scatter.PANEL_PLOT_PX) / [x_range[1] - x_range[0], y_range[1] - y_range[0]]
    mixed = np.concatenate([by_sense["money"], by_sense["river"][:3]])
    offsets = np.linalg.norm(mixed * px, axis=1)
    assert len({tuple(p) for p in mixed.round(9)}) == 6  # six dots, none hidden under another
    assert offsets.max() + 9 / 2 <= ring.marker.size[0] / 2  # all inside the ring
    assert np.allclose(by_sense["river"][3:], [[4.0, 4.0], [4.0, 4.0]])  # one sense: stacked, as before
    senses = [t for t in fig.data if t.name in ("money", "river")]
    assert all(t.marker.opacity == 1 for t in senses)  # sizes per point would make Plotly fade them to 0.7
    assert fig.layout.legend.itemsizing == "constant"


def test_shared_ranges_centre_points_that_do_not_spread_along_an_axis():
    """A PCA of two distinct vectors (a static model's bank and banks) puts them on one axis, the other holding
    rounding noise of 1e-31: that axis gets the other's span, with the points in its middle, not on its edge."""
    x_range, y_range = scatter.shared_ranges([np.array([[0.0, 4.7e-16], [0.9, 4.7e-16 + 1e-31]])])
    assert y_range[1] - y_range[0] == pytest.approx(x_range[1] - x_range[0])
    assert (y_range[0] + y_range[1]) / 2 == pytest.approx(4.7e-16, abs=1e-12)
    # room for a ring at the edge: 20 px of a 330 px wide panel on each side
    (lo, hi), _ = scatter.shared_ranges([np.array([[0.0, 0.0], [1.0, 1.0]])], margin_px=20)
    assert -lo / (hi - lo) * scatter.PANEL_PLOT_PX[0] == pytest.approx(20)


def test_fill_bars_of_models_side_by_side_share_one_scale():
    """Two models' guesses for the same blanks: each blank's bars end on the larger model's scale, so a 2% guess is
    not drawn as long as the other model's 8% one."""
    a = [[{"token": "bank", "prob": 0.08}, {"token": "box", "prob": 0.02}], [{"token": "way", "prob": 0.3}]]
    b = [[{"token": "road", "prob": 0.023}], [{"token": "end", "prob": 0.02}]]
    scale = fill_figures.shared_bar_scale([a, b])
    assert scale == [0.08, 0.3]
    narrow, shared = fill_figures.fill_bars(b[0]), fill_figures.fill_bars(b[0], x_max=scale[0])
    assert narrow.layout.xaxis.range[1] == pytest.approx(0.023 * 1.12)
    assert shared.layout.xaxis.range[1] == pytest.approx(fill_figures.fill_bars(a[0]).layout.xaxis.range[1])
    assert fill_figures.shared_bar_scale([]) == [] and fill_figures.shared_bar_scale([a, [b[0]]])[1] == 0.3


def test_word_effect_bars_one_row_per_word_in_order_on_a_log_scale():
    effects = {"words": ["She", "put", "<b>money</b>", "in", "the", "[MASK]"], "answer": "bank", "prob": 0.2,
               "hidden_probs": [0.2, 0.05, 0.0125, 0.4, 0.0, None],
               "top_when_hidden": ["bank", "box", "room", "bank", "the", None]}
    fig = fill_figures.word_effect_bars(effects, title="what “bank” rests on")
    bar = fig.data[0]
    assert list(bar.y) == list(range(6)) and fig.layout.yaxis.autorange == "reversed"  # the sentence reads down
    assert list(fig.layout.yaxis.ticktext)[2] == "&lt;b&gt;money&lt;/b&gt;"  # a visitor's markup shows as typed
    assert list(fig.layout.yaxis.ticktext)[5] == "<i>[MASK]</i>"  # not hidden: a row without a bar
    # log2 of how many times more likely the answer is without the word; a word that made it impossible is cut
    assert list(bar.x[:5]) == pytest.approx([0.0, -2.0, -4.0, 1.0, -fill_figures.EFFECT_MAX_LOG2]) and bar.x[5] is None
    assert list(bar.text) == ["×1", "÷4", "÷16", "×2", "÷∞", ""]
    assert fill_figures.times(0.3) == "÷3.3" and fill_figures.times(1.26) == "×1.3"
    assert fill_figures.times(1 / 123.4) == "÷123"
    assert fill_figures.times(2.67e8) == "×2.7·10⁸" and fill_figures.times(1 / 3.3e-6) == "×3.0·10⁵"
    assert fill_figures.times(9e-6) == "÷1.1·10⁵"
    assert bar.marker.color[1] == figures.PALETTE[0] and bar.marker.color[3] == figures.PALETTE[3]
    assert "P(bank) 20.0% → 1.2%" in bar.customdata[2] and "first guess then: room" in bar.customdata[2]
    # a symmetric axis, ÷ left and × right, long enough for the longest bar
    lo, hi = fig.layout.xaxis.range
    assert lo == -hi and hi >= fill_figures.EFFECT_MAX_LOG2
    ticks = list(fig.layout.xaxis.ticktext)
    assert ticks[len(ticks) // 2] == "×1" and ticks[0].startswith("÷") and ticks[-1].startswith("×")
    # at least ÷2 to ×2, or the scale shared with another model's chart
    small = dict(effects, hidden_probs=[0.21, 0.19, None, None, None, None])
    assert fill_figures.word_effect_bars(small).layout.xaxis.range[1] == pytest.approx(1.2)
    assert fill_figures.word_effect_bars(small, x_max=3).layout.xaxis.range[1] == pytest.approx(3.6)


def test_attribution_bars_draw_a_share_of_log_p_as_hiding_draws_a_factor():
    ln2 = math.log(2)
    result = {"words": ["She", "put", "<b>money</b>", "in", "the", "[MASK]"], "answer": "bank", "prob": 0.2,
              "baseline_prob": 0.001, "scores": [0.0, 2 * ln2, 4 * ln2, -ln2, 1000.0, None], "steps": 32,
              "gap": 0.0}
    fig = fill_figures.attribution_bars(result, title="what “bank” rests on")
    bar = fig.data[0]
    assert list(fig.layout.yaxis.ticktext)[2] == "&lt;b&gt;money&lt;/b&gt;"
    assert list(fig.layout.yaxis.ticktext)[5] == "<i>[MASK]</i>"  # a blank: a row without a bar
    # a word that raised the answer by a factor of 4 (2 ln 2 nats) is drawn as hiding one that divides it by 4
    assert list(bar.x[:5]) == pytest.approx([0.0, -2.0, -4.0, 1.0, -fill_figures.EFFECT_MAX_LOG2]) and bar.x[5] is None
    assert list(bar.text[:4]) == ["×1", "÷4", "÷16", "×2"] and bar.text[5] == ""
    assert bar.marker.color[1] == figures.PALETTE[0] and bar.marker.color[3] == figures.PALETTE[3]
    assert "+1.39 nats of log P(bank), a factor of ×4" in bar.customdata[1]
    assert "P(bank) without the word's share" in fig.layout.xaxis.title.text
    # both methods in one chart: two bars per word, the gradients' hatched, with a legend
    hiding = {"words": result["words"], "answer": "bank", "prob": 0.2,
              "hidden_probs": [0.2, 0.05, 0.1, 0.4, 0.1, None], "top_when_hidden": ["x"] * 5 + [None]}
    both = fill_figures.both_methods_bars(hiding, result, title="t")
    assert [t.name for t in both.data] == ["hiding the word", "its share (gradients)"] and both.layout.showlegend
    assert list(both.data[0].x[:2]) == pytest.approx([0.0, -2.0]) and list(both.data[1].x[:2]) == pytest.approx(
        [0.0, -2.0])
    assert both.data[1].marker.pattern.shape == "/" and not both.data[0].marker.pattern.shape
    assert both.layout.barmode == "group" and both.layout.height > fig.layout.height
    assert not fig.layout.showlegend  # one method: no legend
    # one scale for both methods side by side
    hiding = {"words": ["a"], "answer": "bank", "prob": 0.2, "hidden_probs": [0.1], "top_when_hidden": ["x"]}
    assert fill_figures.shared_effect_scale([hiding]) == pytest.approx(1.0)
    assert fill_figures.shared_effect_scale([hiding, dict(result, scores=[3 * ln2, None, None, None, None, None])]) \
        == pytest.approx(3.0)


def test_context_shift_heatmap_layers_down_words_across_the_occurrence_bold_and_empty():
    shifts = {"words": ["the", "<b>bank</b>", "of", "the", "river"], "index": 1, "layer_names": ["emb", "L1", "L2"],
              "shifts": np.array([[0, np.nan, 0, 0, 0], [0.1, np.nan, 0.3, 0.0, 0.05], [0.2, np.nan, 0.1, 0, 0.4]]),
              "hidden_as": "[MASK]"}
    fig = senses_figures.context_shift_heatmap(shifts, title="t")
    heat = fig.data[0]
    assert list(heat.y) == ["emb", "L1", "L2"] and fig.layout.yaxis.autorange == "reversed"
    assert list(fig.layout.xaxis.ticktext) == ["the", "<b>&lt;b&gt;bank&lt;/b&gt;</b>", "of", "the", "river"]
    assert list(fig.layout.xaxis.tickvals) == [0, 1, 2, 3, 4]  # "the" twice stays two columns
    assert [row[1] for row in heat.z] == [None, None, None] and heat.z[2][4] == pytest.approx(0.4)
    assert heat.zmin == 0 and heat.zmax == pytest.approx(0.4)
    assert heat.customdata[1][4] == "L1: with “river” read as [MASK], “&lt;b&gt;bank&lt;/b&gt;” moves by"
    assert senses_figures.context_shift_heatmap(shifts, z_max=0.9).data[0].zmax == pytest.approx(0.9)  # shared scale
    still = dict(shifts, shifts=np.where(np.isnan(shifts["shifts"]), np.nan, 0.0), hidden_as="left out")
    pale = senses_figures.context_shift_heatmap(still)
    assert pale.data[0].zmax > 0 and "with “river” left out" in pale.data[0].customdata[0][4]


def test_query_key_view_lines_up_vectors_products_and_weights():
    rng = np.random.default_rng(0)
    tokens = ["[CLS]", "the", "<b>bank</b>", "[SEP]"]
    T, d = 4, 6
    query, keys = rng.normal(size=d), rng.normal(size=(T, d))
    products = query[None, :] * keys / np.sqrt(d)
    scores = products.sum(1)
    weights = np.exp(scores) / np.exp(scores).sum()
    fig = attention_figures.query_key_view(tokens, 2, query, keys, products, weights, title="layer 1, head 2")
    vectors, prods, bars = fig.data
    assert np.asarray(vectors.z).shape == (T + 1, d)  # the query's row, then a key per token
    assert np.allclose(np.asarray(vectors.z)[0], query, atol=1e-6)
    assert np.allclose(np.asarray(vectors.z)[1:], keys, atol=1e-6)
    z = np.asarray(prods.z, dtype=float)
    assert np.isnan(z[0]).all() and np.allclose(z[1:], products, atol=1e-6)  # no product on the query's row
    labels = list(vectors.y)
    assert list(bars.y) == labels[1:] and np.allclose(bars.x, weights)
    assert list(fig.layout.yaxis.categoryarray) == labels and len(set(labels)) == T + 1
    assert bars.text[2].endswith(f"({scores[2]:+.1f})")  # each bar names its score
    assert labels[0] == "<b>query</b> · &lt;b&gt;bank&lt;/b&gt;"  # a token is shown as typed, never as markup
    assert labels[3] == "<b>&lt;b&gt;bank&lt;/b&gt; ·2</b>"  # the query's own key is bold
    # both heatmaps centred on 0, each with its own symmetric range
    assert vectors.zmid == 0 and vectors.zmax == -vectors.zmin == pytest.approx(np.abs([query, *keys]).max())
    assert prods.zmax == pytest.approx(np.abs(products).max())


def test_neighbour_pos_bars_stack_parts_of_speech_per_layer():
    kinds = [{"layer": "layer 0", "pos": "NOUN", "same": 3, "other": 1}, {"layer": "layer 0", "pos": "VERB",
                                                                        "same": 0, "other": 1},
             {"layer": "layer 1", "pos": "NOUN", "same": 0, "other": 2}, {"layer": "layer 1", "pos": "VERB",
                                                                        "same": 1, "other": 2},
             {"layer": "layer 1", "pos": "ADJ", "same": 0, "other": 0}]
    fig = senses_figures.neighbour_pos_bars(kinds, {"layer 0": "bank, banks", "layer 1": "<b>x</b>"}, 5, title="m")
    by = {(t.name, t.marker.pattern.shape): list(t.x) for t in fig.data}
    # no trace for what never occurs (an adjective); the word itself hatched
    assert by == {("noun", ""): [1, 2], ("noun", "/"): [3, 0], ("verb", ""): [1, 2], ("verb", "/"): [0, 1]}
    assert fig.layout.barmode == "stack" and list(fig.data[0].y) == ["layer 0", "layer 1"]
    assert fig.layout.yaxis.autorange == "reversed"  # the first layer at the top
    assert "&lt;b&gt;x&lt;/b&gt;" in fig.data[0].customdata[1]  # the nearest words shown as typed
    legend = [t.name for t in fig.data if t.showlegend]
    assert legend == ["noun", "verb"]  # one legend entry per part of speech


def test_same_word_lines_draw_the_word_and_any_two_words_per_model():
    results = {"static": {"layer_names": ["static"], "cosine": [1.0], "baseline": [0.3]},
               "elmo": {"layer_names": ["char", "lstm 1", "lstm 2"], "cosine": [1.0, 0.8, float("nan")],
                        "baseline": [0.2, 0.1, 0.15]}}
    fig = overview_figures.same_word_lines(results, "<b>bank</b>", title="t")
    lines = {(t.legendgroup, t.line.dash): t for t in fig.data}
    elmo = lines[("elmo", "solid")]
    assert list(elmo.x) == [0, 1, 2] and list(elmo.y) == [1.0, 0.8, None]  # a missing vector is a gap
    assert list(lines[("elmo", "dot")].y) == [0.2, 0.1, 0.15] and not lines[("elmo", "dot")].showlegend
    assert fig.data[-2].legendgroup == "static"  # the one-layer model is drawn over the others, as a ring
    assert lines[("static", "solid")].marker.symbol == "circle-open"
    assert lines[("static", "solid")].line.color == lines[("static", "dot")].line.color != elmo.line.color
    assert "&lt;b&gt;bank&lt;/b&gt;" in elmo.hovertemplate


def test_blank_change_bars_put_what_gained_right_and_what_lost_left():
    change = {"words": ["nurse", "<b>maid</b>", "fellow"], "prob_a": [0.01, 0.002, 0.04], "prob_b": [0.04, 0.004, 0.01]}
    fig = fill_figures.blank_change_bars(change, title="from A to B")
    bars = fig.data[0]
    assert list(bars.x) == pytest.approx([2.0, 1.0, -2.0])  # log2 of B over A
    assert list(bars.text) == ["×4", "×2", "÷4"]
    assert bars.marker.color[0] != bars.marker.color[2]
    assert list(fig.layout.yaxis.ticktext)[1] == "&lt;b&gt;maid&lt;/b&gt;" and fig.layout.yaxis.autorange == "reversed"
    assert fig.layout.xaxis.range[1] == pytest.approx(2.4)  # symmetric, a little beyond the longest bar
    wide = fill_figures.blank_change_bars(change, x_max=5.0)
    assert wide.layout.xaxis.range[1] == pytest.approx(6.0)  # a scale shared with another model


def test_short_layer_names_fit_a_narrow_column():
    assert [figures.short_layer_name(n) for n in ["embeddings", "layer 6", "layer 0 (char CNN)", "layer 2 (LSTM)",
                                                   "static", "mix"]] == ["emb.", "6", "char CNN", "LSTM 2", "static",
                                                                        "mix"]


def test_dictionary_sense_map_one_panel_per_model_senses_shared_nearest_outlined():
    senses = ["money <b>bank</b>", "river"]
    guesses = {
        "ctx": dict(senses=senses, layer_names=["embeddings", "layer 1"], accuracy=[0.5, 0.9], tagged=1,
                    cosines=np.array([[0.8, 0.8], [0.2, 0.7]]), nearest=[None, 1]),
        "static": dict(senses=senses[::-1], layer_names=["static"], accuracy=[0.6], tagged=None,
                       cosines=np.array([[0.95, np.nan]]), nearest=[0]),
    }
    fig = senses_figures.dictionary_sense_map(guesses)
    heats = [t for t in fig.data if t.type == "heatmap"]
    marks = [t for t in fig.data if t.type == "scatter"]
    rows = ["money &lt;b&gt;bank&lt;/b&gt;", "<b>✓ river</b>"]  # the tagged sense bold, every name as typed
    assert [list(h.y) for h in heats] == [rows, rows]
    assert list(heats[0].x) == ["emb.<br>50%", "1<br>90%"] and list(heats[1].x) == ["static<br>60%"]
    # a cell's shade is how far it is behind its layer's nearest; the text is the cosine itself
    assert heats[0].z[0][1] == pytest.approx(-0.5) and heats[0].z[1][1] == 0 and heats[0].z[0][0] == 0
    assert heats[0].text[0][1] == "0.200" and heats[1].text[0][0] == "" and heats[1].z[0][0] is None
    assert heats[1].text[1][0] == "0.950"  # the static panel's senses come in its own order, matched by name
    # only decided layers are outlined: the tie of the embeddings is not
    assert list(marks[0].x) == ["1<br>90%"] and list(marks[0].y) == [rows[1]]
    assert list(marks[1].y) == [rows[1]]  # static's nearest, "river", is its first sense
    assert [t.xaxis for t in heats] == ["x", "x2"] and fig.layout.xaxis.domain[1] < fig.layout.xaxis2.domain[0]
    assert fig.layout.xaxis.title.text == "<b>ctx</b>" and fig.layout.coloraxis.cmin == pytest.approx(-0.5)


def test_the_drawing_modules_load_no_model_code():
    """The app's pages import the drawing modules of ctxmodels.viz; the views that run a model load theirs when first
    asked for (``ctxmodels.viz.__getattr__``), so drawing alone imports neither torch nor the analysis."""
    import subprocess
    import sys

    code = ("import sys, ctxmodels.viz.style, ctxmodels.viz.scatter, app.kit.figures, app.kit.scatter; "
            "print(sorted(m for m in ('torch', 'ctxmodels.analysis', 'ctxmodels.loading') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
