"""The class report's bar charts, drawn as small inline SVG.

SVG keeps the page one self-contained file and spares ``grade`` matplotlib at its end. The caller decides what to
draw; this module only draws, escapes every string (step names come from students' notebooks) and returns
``Markup``. Same input, same bytes. Each chart is an image with a name and a description that lists its numbers
(every bar's tooltip), and ``numbers`` gives them as a table for whoever can neither see nor hover over a bar.
"""

from itertools import count

from markupsafe import Markup, escape

FONT = 12  # px; the page's font, inherited
CHAR = 0.6 * FONT  # the estimated width of a character
PAGE = 960  # px: the page is at most 60rem wide; a wider chart is drawn at this width (CSS scales it down)
ROW = 22  # px per horizontal bar
NOTE = 11  # px: the text after a bar
LONGEST = 80  # characters of a label drawn; the tooltip has it all
GRID, AXIS, INK = "#ddd", "#888", "#222"  # the bars' colours are the caller's: at least 3:1 on white


def _n(x) -> str:
    """A coordinate with at most 1 decimal."""
    return f"{x:.1f}".removesuffix(".0")


def _ticks(top) -> list:
    """Integer ticks from 0 that cover ``top``: at most 6, on a 1-2-5 step."""
    step = next(m * 10**e for e in count() for m in (1, 2, 5) if max(top, 1) <= 5 * m * 10**e)
    return list(range(0, -(-max(top, 1) // step) * step + 1, step))


def _text(x, y, text, anchor="middle", extra="") -> str:
    """Text centred vertically on y."""
    place = f'x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}" dominant-baseline="central"'
    return f"<text {place}{extra}>{escape(text)}</text>"


def _bar(x, y, width, height, color, title) -> str:
    return (
        f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(width)}" height="{_n(height)}" fill="{color}">'
        f"<title>{escape(title)}</title></rect>"
    )


def _svg(width, height, name, description, parts) -> Markup:
    """The chart: an image named ``name`` (its title, shown on hover too), described by ``description``."""
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(name)}" '
        f'viewBox="0 0 {_n(width)} {_n(height)}" width="{_n(min(width, PAGE))}" '
        f'font-family="inherit" font-size="{FONT}" fill="{INK}">'
        f"<title>{escape(name)}</title><desc>{escape(description)}</desc>" + "".join(parts) + "</svg>"
    )


def numbers(headers, rows) -> Markup:
    """A chart's numbers as a table, folded under it."""
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return Markup(f"<details><summary>the numbers</summary><table><tr>{head}</tr>{body}</table></details>")


def columns(values, titles, xticks, xlabel, ylabel, name, color) -> Markup:
    """Vertical bars of integer ``values``, equally wide from ``xticks[0]`` to ``xticks[-1]``, each with its
    tooltip ``titles[i]``; y from 0 with integer ticks."""
    left, top, width, height = 50, 8, 640, 180
    yticks = _ticks(max(values))
    lo, hi, unit = xticks[0], xticks[-1], height / yticks[-1]
    x = lambda v: left + (v - lo) / (hi - lo) * width
    parts = []
    for t in yticks:
        y = top + height - t * unit
        parts += [f'<line x1="{left}" x2="{left + width}" y1="{_n(y)}" y2="{_n(y)}" stroke="{GRID}"/>']
        parts += [_text(left - 6, y, str(t), "end")]
    bin_width = width / len(values)
    for i, (v, title) in enumerate(zip(values, titles)):
        if v:
            parts += [_bar(left + i * bin_width, top + height - v * unit, bin_width - 1, v * unit, color, title)]
    parts += [f'<line x1="{left}" x2="{left + width}" y1="{top + height}" y2="{top + height}" stroke="{AXIS}"/>']
    parts += [_text(x(t), top + height + 12, str(t)) for t in xticks]
    parts += [_text(left + width / 2, top + height + 32, xlabel)]
    parts += [_text(14, top + height / 2, ylabel, extra=f' transform="rotate(-90 14 {_n(top + height / 2)})"')]
    description = "; ".join(title for v, title in zip(values, titles) if v)
    return _svg(left + width + 20, top + height + 44, name, description, parts)


def rows(bars, xlabel, name, xmax=None, xticks=None) -> Markup:
    """Horizontal bars, the first on top: ``bars`` is ``[(label, value, colour, note, title)]``, the label
    left of the bar, the note after it, the title its tooltip. x from 0 to ``xmax`` (default: the last tick;
    default ticks: integers that cover the values)."""
    xticks = xticks or _ticks(max(value for _, value, *_ in bars))
    labels = [label if len(label) <= LONGEST else label[: LONGEST - 1] + "…" for label, *_ in bars]
    left = CHAR * max(map(len, labels)) + 12
    top, plot = 8, max(360, 720 - left)
    x = lambda v: left + v / (xmax or xticks[-1]) * plot
    bottom = top + ROW * len(bars)
    parts = []
    for t in xticks:
        parts += [f'<line x1="{_n(x(t))}" x2="{_n(x(t))}" y1="{top}" y2="{bottom}" stroke="{GRID}"/>']
        parts += [_text(x(t), bottom + 12, str(t))]
    for i, (text, (_, value, color, note, title)) in enumerate(zip(labels, bars)):
        y = top + i * ROW
        parts += [_text(left - 6, y + ROW / 2, text, "end"), _bar(left, y + 3, x(value) - left, ROW - 6, color, title)]
        if note:
            parts += [_text(x(value) + 4, y + ROW / 2, note, "start", f' font-size="{NOTE}"')]
    parts += [f'<line x1="{_n(left)}" x2="{_n(left)}" y1="{top}" y2="{bottom}" stroke="{AXIS}"/>']
    parts += [_text(left + plot / 2, bottom + 32, xlabel)]
    right = max(x(value) + 8 + 0.6 * NOTE * len(note) for _, value, _, note, _ in bars)  # the notes fit
    description = "; ".join(title for *_, title in bars)
    return _svg(max(left + plot + 10, right), bottom + 44, name, description, parts)
