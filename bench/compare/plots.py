#!/usr/bin/python3
"""bench/compare/plots.py: the figures and the report of a bench/compare run, from its results.json.

compare.py calls write(OUT) once it has written OUT/results.json and OUT/results.md; by hand,
`bench/compare/plots.py RESULTS_DIR [--out DIR]` draws them again from RESULTS_DIR. Writes:

  endpoint.png, direct.png, am.png, stream.png, datagram.png: one figure per layer with data, a
      panel per figure of merit: latency, message rate (sizes up to 1 KiB, as compare.py compares
      them) and bandwidth (larger sizes). A unet case and its peer share a colour, one colour per
      pairing. Pairings measured at several sizes are lines over message size (unet solid with
      filled markers, the peer dashed with hollow ones); pairings measured at one size are a row
      each (unet filled, the peer hollow). The --nocoalesce and --noring variants are left out.
  ratios.png: every case's median unet / peer ratio and its min..max spread, by layer.
  report.md, report.html: results.md (the table) and the figures.

Needs python3-matplotlib.
"""
import argparse
import html
import json
import math
import os
import re
import statistics
import sys

# One figure per layer, in this order: (file stem, title, unet_perf test prefix).
LAYERS = (("endpoint", "Endpoint (base level)", "ep_"),
          ("direct", "Direct access", "da_"),
          ("am", "Active messages (uam)", "am_"),
          ("stream", "Stream (ulp)", "stream_"),
          ("datagram", "Datagram (ulp)", "dgram_"))
# A layer figure's panels, by the metric compare.py gave each case (its bw_metric() splits rates
# at 1 KiB): (metric, title, axis label). A case whose metric is not here is in no panel.
PANELS = (("t_typical us", "Latency (lower is better)", "latency [µs]"),
          ("MsgRate Mpps", "Message rate (higher is better)", "message rate [Mpps]"),
          ("BW average MB/s", "Bandwidth (higher is better)", "bandwidth [MB/s]"))
# Cases that repeat a pairing with one unet setting changed: in the ratio chart only.
VARIANTS = ("--nocoalesce", "--noring")
# Figures an older compare.py wrote; a new run removes them, as it does a layer figure it has
# no data for, so nothing stale in OUT reads as this run's.
OLD_FIGURES = ("latency.png", "bandwidth.png")

# Layout, in inches: the axes' left edge and width, and the room on the right for a legend or
# the rows' labels.
LEFT, AXES_W, RIGHT = 0.9, 5.4, 4.6


def load(results_dir):
    with open(os.path.join(results_dir, "results.json")) as f:
        return json.load(f)


def pairing(name):
    """A case's pairing: its name without the size ("ep_lat 8 B vs WRITE" -> "ep_lat vs WRITE").
    The cases of one pairing differ only in size."""
    return re.sub(r" \d+ B\b", "", name, count=1)


def rounds_of(data):
    n = data.get("config", {}).get("rounds", "?")
    return f"{n} round" if n == 1 else f"{n} rounds"


def layer_of(test):
    return next((stem for stem, _, prefix in LAYERS if test.startswith(prefix)), None)


def size_label(size):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def layer_panels(pairs, stem):
    """The layer's cases, variants left out, as {metric: {pairing: [point]}}, pairings in the
    order compare.py ran them; a point is (size, unet median, peer median, case, peer)."""
    panels = {}
    for name, x in pairs.items():
        if layer_of(x["unet_test"]) != stem or any(v in name.split() for v in VARIANTS):
            continue
        point = (x["size"], statistics.median(x["unet"]), statistics.median(x["peer_values"]),
                 name, x["peer"])
        panels.setdefault(x["metric"], {}).setdefault(pairing(name), []).append(point)
    return panels


def context_rows(context):
    """Context peers (no unet twin): (label, median), by tool then size."""
    def key(k):
        tool, size = k.rsplit(" ", 2)[0], int(k.split()[-2])
        return tool, size
    return [(f"{k} · context", statistics.median(context[k]))
            for k in sorted(context, key=key)]


def palette(n):
    import matplotlib
    colours = list(matplotlib.colormaps["tab10"].colors)
    if n > len(colours):
        colours = list(matplotlib.colormaps["tab20"].colors)
    return [colours[i % len(colours)] for i in range(n)]


def draw_lines(ax, series, colour):
    """Pairings measured at several sizes: unet solid, filled markers; peer dashed, hollow
    markers. A segment or point that several pairings share (one run serving several cases:
    ep_lat beside ib_send_lat and ib_write_lat) is striped in all their colours, so no pairing
    hides another."""
    segments, points = {}, {}
    for key, pts in series.items():
        pts = sorted(pts)
        for who, i in (("unet", 1), ("peer", 2)):
            xy = [(p[0], p[i]) for p in pts]
            for a, b in zip(xy, xy[1:]):
                segments.setdefault((who, a, b), []).append(colour[key])
            for p in xy:
                points.setdefault((who, p), []).append(colour[key])
    for (who, a, b), colours in segments.items():
        on, gap = (6.0, 0.0) if who == "unet" else (4.0, 2.5)
        k, period = len(colours), len(colours) * (on + gap)
        for j, c in enumerate(colours):
            if k == 1:
                style = "-" if who == "unet" else (0, (on, gap))
            else:  # sharer j's dashes start at j * (on + gap): together they tile the line
                style = ((period - j * (on + gap)) % period, (on, period - on))
            ax.plot([a[0], b[0]], [a[1], b[1]], color=c, linestyle=style, linewidth=1.8,
                    solid_capstyle="butt", dash_capstyle="butt", zorder=2)
    for (who, (x, y)), colours in points.items():
        if who == "unet":
            alt = colours[1] if len(colours) > 1 else colours[0]
            ax.plot([x], [y], "o", color=colours[0], markerfacecoloralt=alt,
                    fillstyle="left" if len(colours) > 1 else "full", markersize=6.5,
                    markeredgecolor=colours[0], zorder=4)
        else:  # shared hollow markers: concentric rings
            for j, c in enumerate(colours):
                ax.plot([x], [y], "o", markerfacecolor="none", markeredgecolor=c,
                        markeredgewidth=1.6, markersize=9.5 + 4 * j, zorder=3)


def size_axis(ax, sizes):
    """Log2 message sizes, labelled where measured; sizes less than a third of an octave apart
    (am UD's 1000 B beside RC's 1 KiB) share one label."""
    from matplotlib.ticker import FixedLocator, NullFormatter
    sizes = sorted(sizes)
    groups = [[sizes[0]]]
    for s in sizes[1:]:
        if math.log2(s / groups[-1][0]) < 1 / 3:
            groups[-1].append(s)
        else:
            groups.append([s])
    ax.set_xscale("log", base=2)
    ax.set_xlim(sizes[0] / 2 ** 0.5, sizes[-1] * 2 ** 0.5)
    ax.set_xticks([math.prod(g) ** (1 / len(g)) for g in groups])
    ax.set_xticklabels([" / ".join(size_label(s) for s in g) for g in groups])
    ax.xaxis.set_minor_locator(FixedLocator(sizes))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.tick_params(axis="x", which="major", length=0)
    ax.tick_params(axis="x", which="minor", length=4)
    ax.set_xlabel("message size")


def scale(ax, which, values):
    """Linear from 0; log with plain tick labels when the values span more than 20x."""
    from matplotlib.ticker import FuncFormatter
    lo, hi = min(values), max(values)
    setter = ax.set_yscale if which == "y" else ax.set_xscale
    axis = ax.yaxis if which == "y" else ax.xaxis
    if lo > 0 and hi / lo > 20:
        setter("log")
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    else:
        (ax.set_ylim if which == "y" else ax.set_xlim)(0, hi * 1.12)


def lines_panel(ax, series, colour, title, label):
    draw_lines(ax, series, colour)
    pts = [p for s in series.values() for p in s]
    size_axis(ax, {p[0] for p in pts})
    scale(ax, "y", [v for p in pts for v in p[1:3]])
    ax.set_ylabel(label)
    ax.set_title(f"{title}: by message size", loc="left", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.grid(True, axis="x", which="minor", alpha=0.3)
    from matplotlib.lines import Line2D
    handles = []
    for key, pts in series.items():
        peer = pts[0][4]
        handles.append(Line2D([], [], color=colour[key], marker="o", markersize=6,
                              linewidth=1.8, label=f"unet {key}"))
        handles.append(Line2D([], [], color=colour[key], marker="o", markersize=8,
                              markerfacecolor="white", linestyle=(0, (4, 2.5)),
                              linewidth=1.8, label=f"    {peer}"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0,
              fontsize=8, title="solid, ●: unet   dashed, ○: peer", title_fontsize=8,
              frameon=False)


def rows_panel(ax, rows, title, label):
    """Pairings measured at one size, a row each: unet filled, the peer hollow, joined by a
    thin line; rows are (label, colour, unet value or None, peer value)."""
    ys = range(len(rows))
    for y, (_, c, u, p) in zip(ys, rows):
        if u is not None:
            ax.plot([u, p], [y, y], color=c, linewidth=1.2, alpha=0.5, zorder=2)
            ax.plot([u], [y], "o", color=c, markersize=7, zorder=4)
        ax.plot([p], [y], "D" if u is None else "o", markerfacecolor="white", markeredgecolor=c,
                markeredgewidth=1.8, markersize=10, zorder=3)
    for y in range(1, len(rows)):  # the context rows apart from the pairings
        if rows[y][2] is None and rows[y - 1][2] is not None:
            ax.axhline(y - 0.5, color="0.6", linewidth=0.8)
    ax.set_yticks(list(ys))
    ax.set_yticklabels([r[0] for r in rows], fontsize=8)
    ax.yaxis.tick_right()
    ax.tick_params(axis="y", length=0)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    scale(ax, "x", [v for r in rows for v in r[2:4] if v is not None])
    ax.set_xlabel(label)
    lone = ", ◇ peer without a unet twin" if any(r[2] is None for r in rows) else ""
    ax.set_title(f"{title}: at one size (● unet, ○ peer{lone})", loc="left", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)


def layer_figure(path, title, panels, context, device, rounds):
    """Draws one layer's figure; returns False (and draws nothing) if it has no data."""
    import matplotlib.pyplot as plt
    keys = list(dict.fromkeys(k for m in panels.values() for k in m))
    colour = dict(zip(keys, palette(len(keys))))
    plan = []  # (kind, metric title, axis label, data, height in inches)
    for metric, ptitle, label in PANELS:
        by_key = panels.get(metric, {})
        lines = {k: v for k, v in by_key.items() if len({p[0] for p in v}) > 1}
        rows = [(f"{p[3]} · {p[4]}", colour[k], p[1], p[2])
                for k, v in by_key.items() if k not in lines for p in v]
        if metric == PANELS[0][0]:
            rows += [(name, "black", None, v) for name, v in context]
        if lines:
            plan.append(("lines", ptitle, label, lines, max(2.8, 0.32 * 2 * len(lines) + 0.4)))
        if rows:
            plan.append(("rows", ptitle, label, rows, 0.3 * len(rows) + 0.35))
    if not plan:
        return False
    top, above, below = 0.4, 0.35, 0.6  # the suptitle; each panel's title; its x axis
    height = top + sum(above + h + below for *_, h in plan)
    fig = plt.figure(figsize=(LEFT + AXES_W + RIGHT, height))
    y = height - top
    for kind, ptitle, label, data, h in plan:
        y -= above + h
        ax = fig.add_axes([LEFT / fig.get_figwidth(), y / height, AXES_W / fig.get_figwidth(),
                           h / height])
        if kind == "lines":
            lines_panel(ax, data, colour, ptitle, label)
        else:
            rows_panel(ax, data, ptitle, label)
        y -= below
    fig.suptitle(f"{title}: unet vs peers on {device}, median of {rounds}",
                 x=LEFT / fig.get_figwidth(), y=1 - 0.15 / height, ha="left", fontsize=12)
    fig.savefig(path, dpi=110, bbox_inches="tight", pad_inches=0.15)
    plt.close(fig)
    return True


def ratio_text(v):
    """Two significant digits, with no exponent: 0.0043, 0.93, 12, 260."""
    return f"{v:.0f}" if v >= 10 else f"{v:.2g}"


def ratios_figure(path, data):
    """Every case's median unet / peer ratio (log scale, centred on 1), min..max as a whisker,
    coloured by who is better; by layer, in the order compare.py ran them."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
    pairs, summary = data["pairs"], data["summary"]
    order = {stem: i for i, (stem, _, _) in enumerate(LAYERS)}
    titles = {stem: t for stem, t, _ in LAYERS}
    layer = {s["case"]: layer_of(pairs.get(s["case"], {}).get("unet_test", s["case"]))
             for s in summary}
    rows = sorted(summary, key=lambda s: order.get(layer[s["case"]], len(LAYERS)))
    labels, ys, y, last = [], [], 0, object()
    heads = []
    for s in rows:
        if layer[s["case"]] != last:
            last = layer[s["case"]]
            if labels:
                y += 0.4
            heads.append((y, titles.get(last, "other")))
            y += 1
        labels.append(f"{s['case']} · {s['peer']}")
        ys.append(y)
        y += 1
    height = 0.24 * y + 1.6
    fig = plt.figure(figsize=(11, height))
    left, width = 4.3, 5.3
    ax = fig.add_axes([left / 11, 0.9 / height, width / 11, (height - 1.6) / height])
    good, bad = "tab:blue", "tab:orange"
    # The axis holds every median and whiskers up to 4x either way; a whisker beyond is cut at
    # the edge with an arrowhead (one slow round under emulation can reach 100x).
    far = max(abs(math.log(s["ratio_median"])) for s in rows)
    reach = max(abs(math.log(s[k])) for s in rows for k in ("ratio_min", "ratio_max"))
    span = max(math.log(2) * 1.08, far * 1.25, min(reach, math.log(4)) * 1.08)
    lo_x, hi_x = math.exp(-span), math.exp(span)
    cut_lo, cut_hi = math.exp(-0.97 * span), math.exp(0.97 * span)  # arrowheads inside the axes
    for s, yy in zip(rows, ys):
        r = s["ratio_median"]
        better = r < 1 if s["lower_is_better"] else r > 1
        ax.barh(yy, r - 1, left=1, height=0.7, color=good if better else bad, zorder=2)
        lo, hi = max(s["ratio_min"], cut_lo), min(s["ratio_max"], cut_hi)
        ax.errorbar(r, yy, xerr=[[r - lo], [hi - r]], fmt="none", ecolor="0.2", elinewidth=1,
                    capsize=0, zorder=3)
        for end, mark in ((lo, "<" if s["ratio_min"] < cut_lo else "|"),
                          (hi, ">" if s["ratio_max"] > cut_hi else "|")):
            ax.plot([end], [yy], marker=mark, color="0.2", markersize=5, zorder=3)
        spread = f"{ratio_text(s['ratio_min'])}..{ratio_text(s['ratio_max'])}"
        ax.text(1.01, yy, f"{r:.2f}  ({spread})",
                transform=ax.get_yaxis_transform(), va="center", fontsize=8)
    ax.axvline(1, color="black", linewidth=1, zorder=4)
    ax.set_xscale("log")
    ax.set_xlim(lo_x, hi_x)
    # Powers of two (every second or more when the axis is wide); 0.8 and 1.25 too when it
    # ends within 2.2x.
    k = math.floor(span / math.log(2))
    step = max(1, math.ceil((2 * k + 1) / 9))
    ticks = [2.0 ** e for e in range(-k, k + 1) if e % step == 0]
    ticks += [0.8, 1.25] if span < math.log(2.2) else []
    ax.xaxis.set_major_locator(FixedLocator(sorted(ticks)))
    ax.xaxis.set_major_formatter(FuncFormatter(
        lambda v, _: f"{v:g}" if v >= 1 or v == 0.8 else f"1/{round(1 / v)}"))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_yticks(ys + [h[0] for h in heads])
    ax.set_yticklabels(labels + [h[1] for h in heads], fontsize=8)
    for t in ax.get_yticklabels()[len(ys):]:
        t.set_fontweight("bold")
        t.set_fontsize(9)
    ax.tick_params(axis="y", length=0)
    ax.set_ylim(y - 0.4, -0.6)
    for hy, _ in heads[1:]:
        ax.axhline(hy - 0.7, color="0.6", linewidth=0.8)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_xlabel("unet / peer: median over the rounds, whisker min..max (numbers at right)")
    ax.set_title(f"unet / peer per case, {rounds_of(data)} (latency: below 1 is better; "
                 f"rates: above 1)", loc="left", fontsize=10)
    fig.legend(handles=[Patch(color=good, label="unet better"),
                        Patch(color=bad, label="peer better (or equal)")],
               loc="lower left", bbox_to_anchor=(left / 11, 0.05 / height), ncol=2,
               fontsize=8, frameon=False)
    fig.savefig(path, dpi=110, bbox_inches="tight", pad_inches=0.15)
    plt.close(fig)


def md_to_html(md):
    """results.md as HTML: headings, pipe tables (with their alignment row), paragraphs."""
    def inline(text):
        text = html.escape(text)
        text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
        return re.sub(r"`(.+?)`", r"<code>\1</code>", text)

    def table(lines):
        cells = [[c.strip() for c in l.strip().strip("|").split("|")] for l in lines]
        align = ["right" if c.endswith(":") else "left" for c in cells[1]] if len(cells) > 1 \
            and all(re.fullmatch(r":?-+:?", c) for c in cells[1]) else None
        body = cells[2:] if align else cells[1:]
        align = align or ["left"] * len(cells[0])
        out = ["<table>", "<tr>" + "".join(f"<th>{inline(c)}</th>" for c in cells[0]) + "</tr>"]
        for r in body:
            out.append("<tr>" + "".join(f'<td class="{a}">{inline(c)}</td>'
                                        for a, c in zip(align, r)) + "</tr>")
        return out + ["</table>"]

    out, block = [], []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            block.append(line)
            continue
        if block:
            out += table(block)
            block = []
        m = re.match(r"(#{1,6}) (.*)", line)
        if m:
            n = len(m.group(1))
            out.append(f"<h{n}>{inline(m.group(2))}</h{n}>")
        elif line.strip():
            out.append(f"<p>{inline(line)}</p>")
    return "\n".join(out)


CSS = """body { font-family: sans-serif; max-width: 80em; margin: 1em auto; padding: 0 1em; }
table { border-collapse: collapse; font-size: 90%; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; }
th { background: #f0f0f0; } td.right { text-align: right; } td.left { text-align: left; }
img { max-width: 100%; } figure { margin: 1.5em 0; }"""


HOW_TO_READ = ("Every figure is a median over the rounds. In a layer's figure a unet case and "
               "its peer share a colour, one colour per pairing. Pairings measured at several "
               "sizes are lines over message size: unet solid with filled markers, the peer "
               "dashed with hollow ones (a run that serves several pairings is striped in their "
               "colours, its markers split or ringed). Pairings measured at one size are a row "
               "each: unet filled, the peer hollow; context peers without a unet twin are "
               "black diamonds. Rates up to 1 KiB are message rates, above it bandwidth, as "
               "the table compares them. The --nocoalesce and --noring variants are in the "
               "ratio chart only.")
RATIO_CAPTION = ("Every case's median unet / peer ratio (log scale, centred on 1), the whisker "
                 "its min..max over the rounds (cut with an arrowhead past 4x; the figures are "
                 "at the right); blue where unet is better (latency ratio below 1, rate ratio "
                 "above 1), orange where the peer is.")


def reports(out, table_md, figures):
    """report.md and report.html: the table, then the figures; `figures` holds (file name,
    heading, caption or "")."""
    md = [table_md.rstrip(), "", "## Figures", "", HOW_TO_READ, ""]
    for fname, heading, caption in figures:
        md += [f"### {heading}", "", f"![{heading}]({fname})", ""]
        md += [caption, ""] if caption else []
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(md))
    title = next((l[2:] for l in table_md.splitlines() if l.startswith("# ")), "unet vs peers")
    page = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{html.escape(title)}</title>", f"<style>\n{CSS}\n</style></head><body>",
            md_to_html(table_md), "<h2>Figures</h2>", f"<p>{html.escape(HOW_TO_READ)}</p>"]
    for fname, heading, caption in figures:
        cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
        page += [f"<h3>{html.escape(heading)}</h3>",
                 f'<figure><img src="{html.escape(fname)}" alt="{html.escape(heading)}">{cap}'
                 "</figure>"]
    page.append("</body></html>")
    with open(os.path.join(out, "report.html"), "w") as f:
        f.write("\n".join(page) + "\n")


def write(results_dir, out=None):
    """Draws the figures and writes the reports of the run in `results_dir` into `out` (default
    the same directory); returns the names of the files written."""
    import matplotlib
    matplotlib.use("Agg")
    out = out or results_dir
    os.makedirs(out, exist_ok=True)
    data = load(results_dir)
    device = data.get("config", {}).get("device", "?")
    rounds = rounds_of(data)
    figures = []
    if data.get("summary"):
        ratios_figure(os.path.join(out, "ratios.png"), data)
        figures.append(("ratios.png", "unet / peer ratios", RATIO_CAPTION))
    for stem, title, _ in LAYERS:
        fname = f"{stem}.png"
        context = context_rows(data.get("context") or {}) if stem == "stream" else []
        if layer_figure(os.path.join(out, fname), title, layer_panels(data["pairs"], stem),
                        context, device, rounds):
            figures.append((fname, title, ""))
        elif os.path.exists(os.path.join(out, fname)):
            os.remove(os.path.join(out, fname))
    for old in OLD_FIGURES:
        if os.path.exists(os.path.join(out, old)):
            os.remove(os.path.join(out, old))
    try:
        with open(os.path.join(results_dir, "results.md")) as f:
            table_md = f.read()
    except FileNotFoundError:
        table_md = f"# unet vs peers — {device}\n\n(no results.md in {results_dir})\n"
    reports(out, table_md, figures)
    return [f for f, _, _ in figures] + ["report.md", "report.html"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results_dir", help="a compare.py output directory (holds results.json)")
    p.add_argument("--out", default=None, help="where to write (default: RESULTS_DIR)")
    a = p.parse_args()
    files = write(a.results_dir, a.out)
    print(f"plots: wrote {a.out or a.results_dir}/" + ", ".join(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
