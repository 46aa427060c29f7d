"""The faithful grid (pilar.ingest.tables) and row units (pilar.ingest.units)
on source-independent input, as the PDF parser feeds them (Tessera §3.3)."""

from __future__ import annotations

from pilar.ingest.tables import SourceCell, build_grid, inherit
from pilar.ingest.units import block_units, row_units, split_text


def H(text: str, rowspan: int = 1, colspan: int = 1, **kw) -> SourceCell:
    return SourceCell(text, is_header=True, rowspan=rowspan, colspan=colspan, **kw)


def D(text: str, rowspan: int = 1, colspan: int = 1, **kw) -> SourceCell:
    return SourceCell(text, rowspan=rowspan, colspan=colspan, **kw)


def grid_of(rows, **kw):
    kw.setdefault("table_index", 0)
    return build_grid(rows, doc_id="d", page=1, **kw)


def texts(grid) -> list[list[str]]:
    return [[cell.text for cell in row] for row in grid.cells]


def test_spans_resolve_into_a_rectangle_sharing_cells():
    grid = grid_of([
        [H("Year", rowspan=2), H("Single", rowspan=2), H("Peak chart positions", colspan=2)],
        [H("US"), H("UK")],
        [D("1961", rowspan=2), D("Every Beat of My Heart"), D("6"), D("—")],
        [D("Letter Full of Tears"), D("19"), D("—")],
    ])
    assert texts(grid) == [
        ["Year", "Single", "Peak chart positions", "Peak chart positions"],
        ["Year", "Single", "US", "UK"],
        ["1961", "Every Beat of My Heart", "6", "—"],
        ["1961", "Letter Full of Tears", "19", "—"],
    ]
    assert grid.row_kinds == ["header", "header", "body", "body"]
    assert grid.header_paths == [("Year",), ("Single",), ("Peak chart positions", "US"),
                                 ("Peak chart positions", "UK")]
    # the rowspan cell is one GridCell in both rows, id of its origin slot
    assert grid.cells[2][0] is grid.cells[3][0]
    assert grid.cells[3][0].cell_id == "d:t0:r2c0" and grid.cells[3][0].origin == (2, 0)
    assert grid.cells[0][2].cell_id == grid.cells[0][3].cell_id == "d:t0:r0c2"


def test_row_units_pair_cells_with_header_paths():
    grid = grid_of([
        [H("Year", rowspan=2), H("Single", rowspan=2), H("Peak chart positions", colspan=2)],
        [H("US"), H("UK")],
        [D("1961"), D("Every Beat of My Heart"), D("6"), D("")],
    ], caption="Singles", section_path=("Gladys Knight", "Discography"))
    supports: list = []
    [unit] = row_units(grid, supports, "Gladys Knight")
    assert unit.completed_text == ("Gladys Knight > Discography > Singles | Year: 1961 | "
                                   "Single: Every Beat of My Heart | Peak chart positions > US: 6")
    assert unit.cells == ("1961", "Every Beat of My Heart", "6")
    assert unit.headers == ("Year", "Single", "Peak chart positions > US")
    assert unit.context == ("Gladys Knight", "Discography", "Singles")
    assert (unit.unit_id, unit.support_id) == ("d:1:u0", "d:1:s0")
    [support] = supports
    assert support.kind == "row" and support.provenance.provenance_id == "d:1:p0"
    assert (support.provenance.table_index, support.provenance.row,
            support.provenance.col) == (0, 2, None)
    assert support.provenance.cell_ids == ("d:t0:r2c0", "d:t0:r2c1", "d:t0:r2c2")


def test_title_group_and_keyvalue_rows():
    grid = grid_of([
        [H("1990 season", colspan=3)],
        [H("Week"), H("Opponent"), H("Result")],
        [D("Regular season", colspan=3)],
        [D("1"), D("Bears"), D("W 21–7")],
        [D("Playoffs", colspan=3)],
        [D("2"), D("Lions"), D("L 3–10")],
    ])
    assert grid.title == "1990 season"
    assert grid.row_kinds == ["title", "header", "group", "body", "group", "body"]
    assert grid.group_labels[3] == "Regular season" and grid.group_labels[5] == "Playoffs"
    units = row_units(grid, [], "Page")
    assert [u.completed_text for u in units] == [
        "Page > 1990 season > Regular season | Week: 1 | Opponent: Bears | Result: W 21–7",
        "Page > 1990 season > Playoffs | Week: 2 | Opponent: Lions | Result: L 3–10",
    ]

    box = grid_of([[H("Gladys Knight", colspan=2)], [H("Born:"), D("May 28, 1944")],
                   [H("Background", colspan=2)], [H("Genres"), D("R&B\nsoul")]],
                  kind="infobox")
    assert box.row_kinds == ["title", "keyvalue", "group", "keyvalue"]
    units = row_units(box, [], "Gladys Knight")
    assert [u.completed_text for u in units] == [
        "Gladys Knight | Born: May 28, 1944",
        "Gladys Knight > Background | Genres: R&B / soul",
    ]
    assert units[1].cells == ("Genres", "R&B\nsoul")


def test_first_row_without_th_as_header_and_bold_hint():
    plain = grid_of([[D("Name"), D("Goals")], [D("Ann"), D("12")], [D("Bo"), D("7")]])
    assert plain.row_kinds == ["header", "body", "body"]
    assert plain.header_paths == [("Name",), ("Goals",)]
    numbers = grid_of([[D("1"), D("2")], [D("3"), D("4")]])
    assert numbers.row_kinds == ["body", "body"]
    bold = grid_of([[D(""), D("Party", emphasis=True), D("Votes", emphasis=True)],
                    [D(""), D("Labor"), D("324,135")]])
    assert bold.row_kinds == ["header", "body"]
    assert bold.header_paths == [(), ("Party",), ("Votes",)]


def test_caps_and_collapse_keep_the_grid_small():
    warnings: list[str] = []
    grid = grid_of([[H("h", colspan=10_000)], [D("a", rowspan=65_534), D("b")]],
                   warnings=warnings, max_span=1000)
    assert texts(grid) == [["h", "h"], ["a", "b"]]  # 998 span-only columns dropped
    assert warnings == ["table 0: rowspan/colspan over 1000 capped"]
    warnings.clear()
    wide = grid_of([[D(str(i)) for i in range(30)] for _ in range(3)], max_cols=10,
                   max_rows=2, warnings=warnings)
    assert (wide.n_rows, wide.n_cols) == (2, 10)
    assert warnings == ["table 0: 3 rows, kept the first 2",
                        "table 0: more than 10 columns, cells beyond dropped"]
    assert grid_of([]).cells == [] and grid_of([[]]).cells == []


def test_ragged_rows_are_padded_with_empty_cells():
    grid = grid_of([[H("A"), H("B"), H("C")], [D("1")], [D("2"), D("x"), D("y")]])
    assert texts(grid) == [["A", "B", "C"], ["1", "", ""], ["2", "x", "y"]]
    assert grid.cells[1][2].cell_id == "d:t0:r1c2"
    assert [u.cells for u in row_units(grid, [], "")] == [("1",), ("2", "x", "y")]


def test_nested_table_inherits_title_headers_and_row_label():
    parent = grid_of([[H("Season 2004", colspan=2)], [H("Year"), H("Results")],
                      [D("2004"), D("<nested>")]])
    child = grid_of([[H("Round"), H("Opponent")], [D("1"), D("Bears")]], table_index=1)
    inherit(child, parent, 2, 1)
    assert child.parent_index == 0 and child.title == "Season 2004"
    assert child.header_paths == [("Results", "Round"), ("Results", "Opponent")]
    [unit] = row_units(child, [], "Page")
    assert unit.completed_text == ("Page > Season 2004 > 2004 | Results > Round: 1 | "
                                   "Results > Opponent: Bears")


def test_pdf_style_rows_union_bboxes_and_split_blocks():
    grid = grid_of([[H("A", bbox=(0, 0, 10, 5)), H("B", bbox=(10, 0, 20, 5))],
                    [D("1", bbox=(0, 5, 10, 10)), D("2", bbox=(10, 5, 20, 12))]])
    supports: list = []
    row_units(grid, supports, "Doc")
    assert supports[0].provenance.bbox == (0, 5, 20, 12)
    assert supports[0].provenance.css_path is None

    assert split_text("aaa bbb ccc", 7) == [(0, 7), (8, 11)]
    assert split_text("x" * 10, 4) == [(0, 4), (4, 8), (8, 10)]
    text = " ".join(["word"] * 30)
    units = block_units("paragraph", text, [], doc_id="d", page=2, page_title="T",
                        section_path=("T", "Intro"), max_chars=60)
    assert all(len(u.completed_text) <= 60 and len(u.text) <= 60 for u in units)
    assert " ".join(u.text for u in units) == text
    assert units[0].completed_text.startswith("T > Intro | word word")
    assert [u.unit_id for u in units[:2]] == ["d:2:u0", "d:2:u1"]
