"""The character list of PyMuPDF's table finder, built faster.

``pymupdf.table.find_tables`` starts by turning every character of its clip
into a dict (``make_chars``: a ``Rect``, a ``Point`` and a ``Matrix`` per
character, each transformed through MuPDF). On the born-digital PDF bench
corpus that was a quarter of the CPU of a parse (~20 µs per character,
~2,000 characters per call). :func:`make_chars` builds the same dicts, key
for key and bit for bit, with the two coordinate transforms done for the
whole clip at once in float32, as MuPDF does them (``fz_transform_rect``,
``fz_transform_point``). It only takes pages whose text-space matrix is an
axis flip or identity plus a shift (every page the finder sees unrotated);
for any other matrix it hands the page to PyMuPDF's own function.
:func:`install` puts it in place of PyMuPDF's (the finder looks the name up
at each call).
"""

from __future__ import annotations

import numpy as np
import pymupdf
import pymupdf.table as ptable

_PYMUPDF_MAKE_CHARS = ptable.make_chars
"""PyMuPDF's own ``make_chars``, for the pages :func:`make_chars` does not take."""


def _simple(ctm: pymupdf.Matrix) -> bool:
    """Whether ``ctm`` maps x and y each by a sign and a shift only: then
    every product of a transform is exact and only the shift rounds, so
    numpy's float32 sums give MuPDF's float results (fused multiply-add or not)."""
    a, b, c, d, _, _ = (float(np.float32(v)) for v in ctm)
    return b == 0 and c == 0 and abs(a) == 1 and abs(d) == 1


def make_chars(page: pymupdf.Page, clip=None):
    """Fill the finder's character list for ``page`` within ``clip`` and
    return the text page it read, exactly as ``pymupdf.table.make_chars``
    does (same dicts in the same order; see the module docstring)."""
    ctm = page.transformation_matrix
    if not _simple(ctm):
        return _PYMUPDF_MAKE_CHARS(page, clip=clip)
    chars = ptable.CHARS._list()
    page_number = page.number + 1
    doctop_base = page.rect.height * page.number
    textpage = page.get_textpage(clip=clip, flags=ptable.FLAGS)
    blocks = page.get_text("rawdict", textpage=textpage)["blocks"]
    runs = []  # (line direction, upright, span facts, its chars sorted by x0)
    for block in blocks:
        for line in block["lines"]:
            ldir = line["dir"]
            ldir = (round(ldir[0], 4), round(ldir[1], 4))
            for span in sorted(line["spans"], key=lambda s: s["bbox"][0]):
                bold = bool(span["flags"] & pymupdf.TEXT_FONT_BOLD or span["char_flags"] & 8)
                runs.append((ldir, span["font"], span["size"], bold,
                             pymupdf.sRGB_to_pdf(span["color"]),
                             sorted(span["chars"], key=lambda ch: ch["bbox"][0])))
    n = sum(len(r[-1]) for r in runs)
    if not n:
        return textpage
    raw = np.array([(*ch["bbox"], *ch["origin"]) for r in runs for ch in r[-1]],
                   dtype=np.float32).reshape(n, 6)
    a, _, _, d, e, f = (np.float32(v) for v in ctm)
    # fz_transform_rect: corners swapped where the axis flips, then y*d + f
    # (the finder keeps only y of the transformed box)
    ys = raw[:, [3, 1]] if d < 0 else raw[:, [1, 3]]
    y_ctm = (ys * d + f).tolist()
    origin = np.stack([raw[:, 4] * a + e, raw[:, 5] * d + f], axis=1).tolist()
    k = 0
    for (c0, s0), fontname, fontsize, bold, color, span_chars in runs:
        upright = s0 == 0
        for char in span_chars:
            x0, top, x1, bottom = char["bbox"]
            ox, oy = origin[k]
            y0, y1 = y_ctm[k]
            k += 1
            chars.append({
                "adv": x1 - x0 if upright else bottom - top,
                "bottom": bottom,
                "doctop": top + doctop_base,
                "fontname": fontname,
                "height": bottom - top,
                "matrix": (c0, -s0, s0, c0, ox, oy),
                "ncs": "DeviceRGB",
                "non_stroking_color": color,
                "non_stroking_pattern": None,
                "object_type": "char",
                "page_number": page_number,
                "size": fontsize if upright else bottom - top,
                "stroking_color": color,
                "stroking_pattern": None,
                "bold": bold,
                "text": char["c"],
                "top": top,
                "upright": upright,
                "width": x1 - x0,
                "x0": x0,
                "x1": x1,
                "y0": y0,
                "y1": y1,
            })
    return textpage


VERIFIED = frozenset({"2.0"})
"""PyMuPDF versions whose ``make_chars`` :func:`make_chars` was checked against
(key for key, bit for bit: ``tests/test_pdf_parse.py``); on any other the
finder keeps its own."""


def install() -> bool:
    """Have PyMuPDF's table finder build its characters with :func:`make_chars`
    when the installed PyMuPDF is one of :data:`VERIFIED` (a newer one may
    build them otherwise); returns whether it did."""
    if pymupdf.pymupdf_version not in VERIFIED:
        return False
    ptable.make_chars = make_chars
    return True
