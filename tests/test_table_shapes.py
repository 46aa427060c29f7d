"""Table shapes that break other tools, each as a small fixture of our own
(tests/fixtures/shapes: HTML, and the PDF PyMuPDF printed from it with
make_pdfs.py), read into a faithful grid (Tessera §3.3); and the camelot
report whose unruled header lines and wrapped cells must stay one row."""

from __future__ import annotations

from pathlib import Path

import pytest

from pilar.config import Settings
from pilar.ingest.html import parse_html
from pilar.ingest.pdf import parse_pdf
from pilar.model import Document, ParsedDocument
from tests.conftest import FIXTURES

SHAPES = FIXTURES / "shapes"


def parse(path: Path) -> ParsedDocument:
    media = "application/pdf" if path.suffix == ".pdf" else "text/html"
    doc = Document(doc_id="d", uri=str(path), title=path.stem, media_type=media,
                   sha256="x", n_pages=1)
    reader = parse_pdf if path.suffix == ".pdf" else parse_html
    return reader(path.read_bytes(), doc, Settings())


def rows(parsed: ParsedDocument) -> list[str]:
    """Each row unit's cells paired with their headers (completed text
    without its context)."""
    return [u.completed_text.split(" | ", 1)[1] for u in parsed.units if u.kind == "row"]


@pytest.mark.parametrize("suffix", [".html", ".pdf"])
def test_lists_in_cells_stay_in_their_row(suffix):
    parsed = parse(SHAPES / f"list_cells{suffix}")
    assert not [u for u in parsed.units if u.kind == "list_item"]
    [grid] = parsed.tables
    assert grid.row_kinds == ["header", "body", "body", "body"]
    saturday = next(u for u in parsed.units if u.kind == "row" and u.cells[0] == "Saturday")
    hours = saturday.cells[1].replace("•", "").split()
    assert " ".join(hours) == "10:00 - 13:00 14:00 - 18:30"
    assert saturday.headers[:2] == ("Day", "Hours")
    if suffix == ".html":  # list items kept apart inside the value
        assert saturday.completed_text.endswith(
            "Day: Saturday | Hours: 10:00 - 13:00 / 14:00 - 18:30 | Guided tours: 10:30 / 15:00")


@pytest.mark.parametrize("suffix", [".html", ".pdf"])
def test_first_column_rowspan_header_is_a_row_label(suffix):
    parsed = parse(SHAPES / f"row_label{suffix}")
    assert rows(parsed) == ["Pears: Conference / 412 kg", "Pears: Comice / 188 kg",
                            "Plums: Victoria / 95 kg", "Plums: Opal / 61 kg",
                            "Quinces: Vranja / 40 kg"]


def test_rowspan_label_in_a_header_row_is_never_paired_with_itself():
    # the first row is all th, its first cell spanning down beside values
    html = b"""<table><tr><th rowspan="2">Pears</th><th>Conference</th><th>412 kg</th></tr>
      <tr><td>Comice</td><td>188 kg</td></tr><tr><th>Plums</th><td>Victoria</td><td>95 kg</td></tr>
      <tr><th>Quinces</th><td>Vranja</td><td>40 kg</td></tr></table>"""
    doc = Document(doc_id="d", uri="x.html", title="x", media_type="text/html", sha256="x",
                   n_pages=1)
    parsed = parse_html(html, doc, Settings())
    assert rows(parsed) == ["Pears: Conference / 412 kg", "Pears: Comice / 188 kg",
                            "Plums: Victoria / 95 kg", "Quinces: Vranja / 40 kg"]
    # a label spanning body rows under a real header row files no later row under it
    html = b"""<table><tr><th rowspan="3">Pears</th><th>Variety</th><th>Weight</th></tr>
      <tr><td>Comice</td><td>188 kg</td></tr><tr><td>Conference</td><td>12 kg</td></tr>
      <tr><th>Plums</th><td>Victoria</td><td>95 kg</td></tr></table>"""
    parsed = parse_html(html, doc, Settings())
    assert rows(parsed) == ["Pears | Variety: Comice | Weight: 188 kg",
                            "Pears | Variety: Conference | Weight: 12 kg",
                            "Plums | Variety: Victoria | Weight: 95 kg"]


@pytest.mark.parametrize("suffix", [".html", ".pdf"])
def test_spanning_body_cell_and_header_corner_keep_covered_headers(suffix):
    parsed = parse(SHAPES / f"spans{suffix}")
    cards, points = parsed.tables
    assert cards.header_paths == [("Card",), ("Memory", "Size"), ("Memory", "Type"), ("Power",)]
    got = rows(parsed)
    assert "Card: Kestrel 11 | Memory > Size / Type: 48 GDDR6 | Power: 300 W" in got
    assert points.header_paths[:2] == [("Location", "Region"), ("Location", "Site")]
    assert ("Location > Region: Nordland | Location > Site: Bodo depot | "
            "Technicians > Day > count: 4 | Technicians > Night > count: 1") in got


@pytest.mark.parametrize("suffix", [".html", ".pdf"])
def test_infobox_rows_are_key_value_under_their_group(suffix):
    parsed = parse(SHAPES / f"infobox{suffix}")
    assert rows(parsed) == ["Born: 4 May 1971 / Porto Alegre", "Genres: Folk, chamber pop",
                            "Years active: 1990 - 2011", "Labels: Cormorant Records"]
    years = next(u for u in parsed.units if u.kind == "row" and u.cells[0] == "Years active")
    assert years.context == ("Mira Castellan", "Musical career")


def test_title_from_the_opening_heading_without_a_title_element():
    assert parse(SHAPES / "heading_title.html").document.title == "Tide tables for Selvik"
    para = next(u for u in parse(SHAPES / "heading_title.html").units if u.kind == "paragraph")
    assert para.context == ("Tide tables for Selvik",)  # no repeat of the title heading


def test_unruled_header_lines_and_wrapped_header_stay_one_row(shared_data: Path):
    # camelot's mexican_towns.pdf: "Clave / Entidad" is one wrapped header
    # cell, no rule between its lines; row_span_3.pdf: "No. / of / Cases"
    towns = parse(shared_data / "pdf" / "real" / "mexican_towns.pdf")
    grid = towns.tables[0]
    assert grid.row_kinds[:2] == ["header", "body"]
    assert grid.header_paths[:3] == [("Clave Entidad",), ("Nombre Entidad",),
                                     ("Clave Municipio",)]
    report = parse(shared_data / "pdf" / "real" / "row_span_3.pdf")
    grid = report.tables[0]
    assert grid.row_kinds.count("header") == 1
    assert ("No. of Cases",) in grid.header_paths
    assert ("Date of Start of Outbreak",) in grid.header_paths
    food = next(u for u in report.units if u.kind == "row" and "Trivandrum" in u.cells)
    assert "Disease/ Illness: vi. Food Poisoning | No. of Cases: 950" in food.completed_text


def test_unruled_pdf_wrapped_cell_title_row_and_repeated_header():
    # no rules between rows: "xxxviii. / Dengue/ / Chikungunya" is one cell of
    # one row, the title inside the table spans it, the header below it repeats
    parsed = parse(SHAPES / "outbreaks.pdf")
    [grid] = parsed.tables
    assert grid.row_kinds == ["header", "body", "body", "body", "group", "header", "body",
                              "body"]
    assert ("Name of District",) in grid.header_paths
    dengue = next(u for u in parsed.units if u.kind == "row" and "Westvale" in u.cells)
    assert "Disease: xxxviii. / Dengue/ Chikungunya | Cases: 40 | Deaths: 1" in \
        dengue.completed_text
    late = next(u for u in parsed.units if u.kind == "row" and "Southgate" in u.cells)
    assert late.context[-1] == "Outbreaks of previous weeks reported late"
    assert not [u for u in parsed.units if u.kind == "row" and "Sl. No" in u.text]


def html_doc(html: bytes) -> ParsedDocument:
    doc = Document(doc_id="d", uri="x.html", title="x", media_type="text/html", sha256="x",
                   n_pages=1)
    return parse_html(html, doc, Settings())


@pytest.mark.parametrize("suffix", [".html", ".pdf"])
def test_only_an_exact_repetition_of_the_header_row_is_a_repeated_header(suffix):
    parsed = parse(SHAPES / f"header_case{suffix}")
    options, answers = parsed.tables
    assert options.row_kinds == ["header", "body"]
    assert answers.row_kinds == ["header", "body", "body", "header", "body", "body"]
    assert rows(parsed) == ["A: a | B: b | C: c",
                            "Team: Harbour | Answer: answer | Points: 3",
                            "Team: TEAM | Answer: ANSWER | Points: POINTS",
                            "Team: Lantern | Answer: Answer | Points: 5",
                            "Team: team | Answer: answer | Points: points"]


def test_the_only_body_row_is_never_dropped_as_a_repeated_header():
    lower = html_doc(b"<table><tr><th>A</th><th>B</th></tr><tr><td>a</td><td>b</td></tr></table>")
    assert rows(lower) == ["A: a | B: b"]
    same = html_doc(b"<table><tr><th>A</th><th>B</th></tr><tr><td>A</td><td>B</td></tr></table>")
    assert same.tables[0].row_kinds == ["header", "body"]
    assert rows(same) == ["A: A | B: B"]
    # a repeat between body rows is still a header, whitespace aside
    repeat = html_doc(b"<table><tr><th>Sl. No</th><th>Name</th></tr><tr><td>1</td><td>Ames</td>"
                      b"</tr><tr><td>Sl.  No</td><td>Name\n</td></tr><tr><td>2</td><td>Bly</td>"
                      b"</tr></table>")
    assert repeat.tables[0].row_kinds == ["header", "body", "header", "body"]
    # a row marked up as header cells repeats it loosely (case kept); values never do
    marked = html_doc(b"<table><tr><th>Pos.</th><th>Club</th><th>Pts</th></tr><tr><td>1</td>"
                      b"<td>Arden</td><td>30</td></tr><tr><th>Pos</th><th>Club</th><th>Points</th>"
                      b"</tr><tr><td><b>Pos</b></td><td><b>Club</b></td><td><b>Pts</b></td></tr>"
                      b"<tr><td>pos</td><td>club</td><td>pts</td></tr><tr><th>pos</th><th>club</th>"
                      b"<th>pts</th></tr><tr><td>2</td><td>Bree</td><td>28</td></tr></table>")
    assert marked.tables[0].row_kinds == ["header", "body", "header", "header", "body", "body",
                                          "body"]
    assert rows(marked)[1:3] == ["Pos.: pos | Club: club | Pts: pts",
                                 "Pos.: pos | Club: club | Pts: pts"]


@pytest.mark.parametrize("suffix", [".html", ".pdf"])
def test_th_cells_directly_in_thead_are_the_header_row(suffix):
    parsed = parse(SHAPES / f"thead_cells{suffix}")
    [grid] = parsed.tables
    assert grid.header_paths == [("Station",), ("Elevation (m)",), ("Opened",)]
    assert rows(parsed) == ["Station: Grauhorn | Elevation (m): 2,941 | Opened: 1953",
                            "Station: Kessel Pass | Elevation (m): 2,106 | Opened: 1977",
                            "Station: Lindwurm Hut | Elevation (m): 1,788 | Opened: 2004"]
    if suffix == ".html":
        station = grid.cells[0][0]
        assert station.css_path.endswith("table:nth-of-type(1) > thead:nth-of-type(1) > "
                                          "th:nth-of-type(1)")


def test_loose_cells_and_td_rows_of_thead_are_header_cells():
    loose = html_doc(b"<table><th>K</th><th>V</th><tr><td>x</td><td>1</td></tr></table>")
    assert rows(loose) == ["K: x | V: 1"]
    td_head = html_doc(b"<table><thead><tr><td>Name</td><td>City</td></tr></thead><tbody><tr>"
                       b"<td>Ann</td><td>Oslo</td></tr><tr><td>Bo</td><td>Rome</td></tr></tbody>"
                       b"</table>")
    assert rows(td_head) == ["Name: Ann | City: Oslo", "Name: Bo | City: Rome"]


def test_one_column_table_under_a_header_cell_is_a_table():
    parsed = parse(SHAPES / "one_column.html")
    assert [g.header_paths for g in parsed.tables] == [[("Ingredients",)], [("Method",)]]
    assert rows(parsed) == ["Ingredients: 500 g rye flour / 10 g salt / 400 ml water",
                            "Ingredients: Caraway seeds", "Method: Mix and rest overnight"]
    flour = next(u for u in parsed.units if u.kind == "row" and "rye" in u.text)
    assert flour.cells == ("500 g rye flour\n10 g salt\n400 ml water",)
    assert flour.context == ("Rye bread", "Shopping")
    assert not [u for u in parsed.units if u.kind == "paragraph" and "Caraway" in u.text]
    # one column without a header cell stays flow
    flow = html_doc(b"<table><tr><td>Rye</td></tr><tr><td>Wheat</td></tr></table>")
    assert not flow.tables and [u.text for u in flow.units] == ["Rye", "Wheat"]


@pytest.mark.parametrize("suffix", [".html", ".pdf"])
def test_header_row_of_a_table_without_th_is_inferred_from_content(suffix):
    parsed = parse(SHAPES / f"inferred_header{suffix}")
    kinds = [g.row_kinds[0] for g in parsed.tables]
    # labels over quantities, a corner over years, bold labels; then three
    # tables whose first row is data (numbers in it, all text, a label column
    # with one number in four)
    assert kinds == ["header", "header", "header", "body", "body", "body"]
    got = [line.replace(" / ", " ") for line in rows(parsed)]  # PDF wraps "Cray / Water"
    assert got[:7] == [
        "Reservoir: Holm Fen | Capacity (ML): 12,400 | Level: 81 % | Inspected: 2024-03-02",
        "Reservoir: Cray Water | Capacity (ML): 8,950 | Level: 64 % | Inspected: 2024-02-17",
        "Reservoir: Old Tarn | Capacity (ML): 3,120 | Level: 92 % | Inspected: 2023-11-30",
        "Ferries | 2021: 1,204 | 2022: 1,310 | 2023: 1,451",
        "Footbridges | 2021: 88,210 | 2022: 90,004 | 2023: 93,377",
        "Trail: Ridge Loop | Surface: gravel | Access: all year",
        "Trail: Mere Path | Surface: boardwalk | Access: summer only"]
    assert got[7:9] == ["Holm Fen | 12,400 | 81 %", "Cray Water | 8,950 | 64 %"]
    assert got[9:] == ["Ann Voss | Holm Fen", "Bo Lind | Cray Water", "North sluice | open",
                       "South sluice | closed", "East sluice | open", "West sluice | 12"]


def test_first_row_is_data_when_its_labels_recur_or_its_kind_does_not_change():
    recur = html_doc(b"<table><tr><td>Red</td><td>Blue</td></tr><tr><td>Blue</td><td>4</td></tr>"
                     b"<tr><td>Green</td><td>5</td></tr></table>")
    assert recur.tables[0].row_kinds == ["body", "body", "body"]
    years = html_doc(b"<table><tr><td>1999</td><td>2003</td></tr><tr><td>2004</td><td>2010</td>"
                     b"</tr></table>")
    assert years.tables[0].row_kinds == ["body", "body"]
    phrases = html_doc(b"<table><tr><td>Lynn</td><td>Ret in Assen</td></tr><tr><td>Vos</td>"
                       b"<td>20th and 23rd in Assen</td></tr><tr><td>Ortiz</td>"
                       b"<td>19th and 22nd in Valencia</td></tr></table>")
    assert phrases.tables[0].row_kinds == ["body", "body", "body"]
    upper = html_doc(b"<table><tr><td>NAME</td><td>CITY</td></tr><tr><td>Ann</td><td>Oslo</td>"
                     b"</tr><tr><td>Bo</td><td>Rome</td></tr></table>")
    assert rows(upper) == ["NAME: Ann | CITY: Oslo", "NAME: Bo | CITY: Rome"]


def test_nested_table_is_its_own_grid_referred_to_by_its_cell():
    parsed = parse(SHAPES / "nested.html")
    log, week, calm = parsed.tables
    assert log.header_paths == [("Station",), ("Keeper",), ("Readings",)]
    assert (week.parent_index, calm.parent_index) == (0, 0)
    assert log.cells[1][2].tables == (1,) and log.cells[2][2].tables == (2,)
    assert log.cells[1][2].text == "" and log.cells[2][2].text == "calm week"
    assert rows(parsed) == [
        "Station: Ness Point | Keeper: I. Marr | Readings: [table 1]",
        "Station: Skerry Light | Keeper: O. Rask | Readings: calm week [table 2]",
        "Station: Holm | Keeper: P. Arne | Readings: none",
        "Readings > Day: Mon | Readings > Wind (kn): 14",
        "Readings > Day: Tue | Readings > Wind (kn): 22",
        "Readings: Wed | Readings: 3", "Readings: Thu | Readings: 5"]
    outer = [u for u in parsed.units if u.kind == "row" and u.table_index == 0]
    assert not {"Mon", "14", "Wed", "3"} & {c for u in outer for c in u.cells}
    mon = next(u for u in parsed.units if u.kind == "row" and u.cells[0] == "Mon")
    assert mon.context == ("Field station log", "Ness Point")
    # a table that only frames tables (no values of its own) stays layout
    frame = html_doc(b"<table><tr><th>Logs</th></tr><tr><td><table><tr><th>Day</th><th>Wind</th>"
                     b"</tr><tr><td>Mon</td><td>14</td></tr></table></td></tr></table>")
    [grid] = frame.tables
    assert rows(frame) == ["Day: Mon | Wind: 14"]


@pytest.mark.parametrize("suffix", [".html", ".pdf"])
def test_footnote_markers_are_split_from_values_and_headers_and_linked_to_their_notes(suffix):
    # PDF: <sup> prints as raised small text glued to the value ("1,2502")
    parsed = parse(SHAPES / f"footnotes{suffix}")
    berths, cranes = parsed.tables
    assert berths.header_paths == [("Berth",), ("Depth (m)",), ("Calls",)]
    assert cranes.header_paths == [("Crane",), ("Lift (t)",), ("Reach (m²)",)]  # no note "²"
    north = next(u for u in parsed.units if u.kind == "row" and u.cells[0] == "North quay")
    assert north.cells == ("North quay", "6.5", "1,250")
    assert north.headers == ("Berth", "Depth (m)", "Calls")
    assert rows(parsed)[:3] == [
        "Berth: North quay | Depth (m): 6.5 [a: At mean low water.; 3: Before the 2022 "
        "dredging.] | Calls: 1,250 [2: Counted from pilot logs.]",
        "Berth: Fish dock | Depth (m): 4.1 [a: At mean low water.] | Calls: 980",
        "Berth: Ferry ramp | Depth (m): 3.8 [a: At mean low water.] | Calls: 2,410 [2: Counted "
        "from pilot logs.]"]
    assert berths.cells[1][2].notes == ("2: Counted from pilot logs.",)
    assert rows(parsed)[4:] == [
        "Crane: Heron | Lift (t): 40 [b: Safe working load.; 1: Derated since 2021.] | "
        "Reach (m²): 310",
        "Crane: Stork | Lift (t): 25 [b: Safe working load.] | Reach (m²): 190"]
    # the notes themselves stay evidence
    assert "Safe working load." in [u.text.split(" ", 1)[1] for u in parsed.units
                                    if u.kind == "paragraph"]

def test_superscript_without_a_note_is_text():
    plain = html_doc(b"<table><tr><th>Town</th><th>Area km<sup>2</sup></th></tr><tr><td>Ames</td>"
                     b"<td>12<sup>1</sup></td></tr></table>")
    assert rows(plain) == ["Town: Ames | Area km2: 121"]


def test_table_continued_on_the_next_page_is_one_table_without_a_repeated_header():
    html, pdf = parse(SHAPES / "continued.html"), parse(SHAPES / "continued.pdf")
    assert pdf.document.n_pages == 2
    [grid] = pdf.tables
    assert grid.header_paths == [("No.",), ("Plot",), ("Moisture (%)",), ("Soil",)]
    unwrapped = [line.replace(" / ", " ") for line in rows(pdf)]  # "Plot / W22" wraps
    assert unwrapped == rows(html) and len(unwrapped) == 70
    units = [u for u in pdf.units if u.kind == "row"]
    pages = {u.cells[0]: u.page for u in units}
    assert pages["1"] == 1 and pages["70"] == 2
    assert [u.page for u in units] == sorted(u.page for u in units)  # each row's own page
    assert all(grid.row_pages[u.row_index] == u.page for u in units)
    assert rows(pdf)[-1] == "No.: 70 | Plot: Plot S70 | Moisture (%): 80.0 | Soil: sand"
    late = next(u for u in units if u.page == 2)
    support = next(s for s in pdf.supports if s.support_id == late.support_id)
    assert support.provenance.page == 2 and support.provenance.table_index == 0


def test_table_continued_under_a_repeated_header_counts_a_cut_row_once():
    parsed = parse(SHAPES / "continued_repeat.pdf")
    [grid] = parsed.tables
    assert grid.row_kinds.count("header") == 2  # the repeat on page 2: no unit
    got = rows(parsed)
    assert len(got) == 15
    assert got[9:12] == [
        "No.: 10 | Plot: Plot K10 | Moisture (%): 20.0 | Soil: sand",
        "No.: 11 | Plot: Plot L11 | Moisture (%): 17.1 | Soil: peat over boulder clay",
        "No.: 12 | Plot: Plot M12 | Moisture (%): 94.2 | Soil: clay"]
    pages = [u.page for u in parsed.units if u.kind == "row"]
    assert pages == [1] * 11 + [2] * 4
    # HTML holds the two parts as two tables, each row under its header
    html = parse(SHAPES / "continued_repeat.html")
    assert [g.header_paths for g in html.tables] == [grid.header_paths] * 2


@pytest.mark.parametrize("suffix", [".html", ".pdf"])
def test_unruled_header_wider_than_its_column_keeps_its_values(suffix):
    # PDF: "Audio (thousands)" is centred over a narrower column of figures,
    # past the right edge the text alignment gives the table
    parsed = parse(SHAPES / f"unruled_header{suffix}")
    loans, members = parsed.tables
    assert loans.header_paths == [("Branch",), ("Books (thousands)",), ("Audio (thousands)",)]
    assert members.header_paths == [("Branch",), ("Adults",), ("Children",)]
    got = rows(parsed)
    assert got[0] == "Branch: Eastgate | Books (thousands): 41.2 | Audio (thousands): 3.1"
    assert got[4] == "Branch: Total | Books (thousands): 90.1 | Audio (thousands): 6.5"
    assert got[6] == "Branch: Fernhill | Adults: 1,377"
    assert [u.text for u in parsed.units if u.kind == "paragraph"] == [
        "Loans in the first quarter, thousands of items.", "Figures are provisional."]


@pytest.mark.parametrize("suffix", [".html", ".pdf"])
def test_unruled_header_line_above_the_aligned_rows_is_the_header_row(suffix):
    # PDF: tight 8 pt rows; the bold header's words are set closer than the
    # columns, so text alignment starts the table at "Alabama"
    parsed = parse(SHAPES / f"header_above{suffix}")
    [grid] = parsed.tables
    assert grid.header_paths == [("State",), ("Population",), ("Enrolled",)]
    assert rows(parsed) == ["State: Alabama | Population: 4,903 | Enrolled: 1,830",
                            "State: Alaska | Population: 731",
                            "State: Arizona | Population: 7,278 | Enrolled: 2,950",
                            "State: Arkansas | Population: 3,017",
                            "State: California | Population: 39,512 | Enrolled: 14,210",
                            "State: Total | Population: 55,441 | Enrolled: 18,990"]
    assert [u.text for u in parsed.units if u.kind == "paragraph"] == [
        "School enrolment in the autumn census.", "Blank: not reported."]


def test_ruled_columns_rows_run_together_are_split_by_the_key_column():
    # kind 5: rules under the header, around three rows and above the total
    # only; the rows between run together in one cell per column
    parsed = parse(SHAPES / "merged_rows.pdf")
    [grid] = parsed.tables
    assert grid.header_paths == [("State",), ("Permit",), ("Handgun",), ("Long gun",),
                                 ("Totals",)]
    got = rows(parsed)
    assert len(got) == 13
    assert got[3] == "State: Arkansas | Permit: 12,012 | Handgun: 9,410 | Long gun: 10,843 | " \
                     "Totals: 32,265"
    # a state name wrapped onto two lines stays one row
    assert got[8] == "State: District of / Columbia | Permit: 203 | Handgun: 317 | " \
                     "Long gun: 21 | Totals: 541"
    assert got[11] == "State: Hawaii | Permit: 0 | Handgun: 1,322 | Long gun: 1,075 | Totals: 2,397"
    units = [u for u in parsed.units if u.kind == "row"]
    for c in range(1, 5):  # the column totals add up again
        values = [int(u.cells[c].replace(",", "")) for u in units]
        assert sum(values[:-1]) == values[-1]


def test_columns_set_apart_by_white_space_inside_a_ruled_table():
    # kind 7: a vertical rule after the label column only
    # (page 1 framed, page 2 open at the sides)
    parsed = parse(SHAPES / "mixed.pdf")
    assert [g.header_paths for g in parsed.tables] == [
        [("Station",), ("Min (C)",), ("Max (C)",), ("Rain (mm)",), ("Wind (m/s)",)]] * 2
    got = rows(parsed)
    assert got[0] == "Station: Harbour | Min (C): 12.4 | Max (C): 18.9 | Rain (mm): 31 | " \
                     "Wind (m/s): 4.2"
    assert got[5] == "Station: Ashby Moor | Min (C): 7.9 | Max (C): 14.0 | Rain (mm): 61 | " \
                     "Wind (m/s): 3.1"
    assert got == got[:6] * 2
    assert [u.page for u in parsed.units if u.kind == "row"] == [1] * 6 + [2] * 6


def test_borderless_statement_keeps_amounts_under_their_years_and_labels_in_their_outline():
    # kind 9: indented labels, right-aligned amounts, "$" apart, a period
    # header centred over both years, headings without amounts
    parsed = parse(SHAPES / "statement.pdf")
    grid, sheet = parsed.tables
    assert grid.header_paths == [(), ("Year ended June 30", "2025"),
                                 ("Year ended June 30", "2024")]
    units = {(u.context[-1], u.cells[0]): u for u in parsed.units
             if u.kind == "row" and u.page == 1}
    assert len(units) == 14  # headings are group rows, not units
    products = units[("Cost of sales", "Products")]
    assert products.completed_text.split(" | ", 1)[1] == \
        "Products | Year ended June 30 > 2025: 5,120 | Year ended June 30 > 2024: 4,877"
    assert units[("Net sales", "Products")].cells[1:] == ("$8,412", "$7,905")
    assert units[("Net sales", "Total net sales")].cells[1:] == ("10,730", "9,899")
    assert units[("Operating expenses", "Restructuring")].cells[1:] == ("(35)", "112")
    # a label wrapped onto the line of its amounts is one label, no heading
    assert units[("Operating expenses", "Selling, general and administrative expenses")
                 ].cells[1:] == ("1,097", "1,020")
    # a total back at the headings' indent is outside them
    top = [u for u in parsed.units if u.kind == "row" and u.page == 1 and u.context[-1] not in (
        "Net sales", "Cost of sales", "Operating expenses")]
    assert [u.cells for u in top] == [("Gross profit", "4,804", "4,291"),
                                      ("Operating income", "2,300", "1,841"),
                                      ("Other income (expense), net", "(48)", "27"),
                                      ("Net income", "$2,252", "$1,868")]
    assert grid.row_kinds.count("group") == 3
    # page 2: three levels, a notes column, spaces between thousands, leaders
    assert sheet.header_paths == [(), ("Note",), ("2023",), ("2022",), ("2021",)]
    assert [(u.context[-1], u.completed_text.split(" | ", 1)[1]) for u in parsed.units
            if u.kind == "row" and u.page == 2][:1] == [
        ("Assets > Current assets",
         "Cash and cash equivalents | Note: 4 | 2023: 1 204.5 | 2022: 998.1 | 2021: 1 010.0")]
    assert [u.cells for u in parsed.units if u.kind == "row" and u.page == 2][-1] == (
        "Total assets", "6 492.1", "5 995.8", "5 726.7")


ROUTES = ["Route: Harbour loop | Stops: 14 | Length (km): 11.2 | Weekday trips: 96",
          "Route: Quarry line | Stops: 22 | Length (km): 18.7 | Weekday trips: 64",
          "Route: Millbrook express | Stops: 6 | Length (km): 9.4 | Weekday trips: 120",
          "Route: West Fen circular | Stops: 17 | Length (km): 13.0 | Weekday trips: 48",
          "Route: Ashby shuttle | Stops: 4 | Length (km): 3.1 | Weekday trips: 150"]


def test_unruled_table_on_a_turned_page_and_turned_on_its_page():
    # kind 6: page 1 has /Rotate 90 over upright content; page 2 draws the
    # table sideways on a page without /Rotate
    parsed = parse(SHAPES / "rotated.pdf")
    assert [g.header_paths for g in parsed.tables] == [
        [("Route",), ("Stops",), ("Length (km)",), ("Weekday trips",)]] * 2
    units = [u for u in parsed.units if u.kind == "row"]
    assert rows(parsed) == ROUTES * 2
    assert [u.page for u in units] == [1] * 5 + [2] * 5
    # bboxes are given in the page as displayed (portrait A4 both)
    for u in units:
        box = next(s for s in parsed.supports if s.support_id == u.support_id).provenance.bbox
        assert 0 <= box[0] < box[2] <= 595.5 and 0 <= box[1] < box[3] <= 842.5


def test_right_to_left_table_reads_cells_in_order_and_columns_from_the_right():
    # kind 8: Hebrew (page 1) and Arabic (page 2), the first column on the
    # right, two-word cells; the Arabic figures right-aligned cut through by
    # the text finder
    parsed = parse(SHAPES / "rtl.pdf")
    grid, arabic = parsed.tables
    assert grid.header_paths == [("עיר",), ("תושבים",), ("שטח בקמ״ר",), ("בתי ספר",)]
    assert arabic.header_paths == [("المدينة",), ("السكان",), ("المساحة كم",), ("المدارس",)]
    assert rows(parsed)[5:] == [
        "المدينة: عمان | السكان: 4,061,150 | المساحة كم: 1,680 | المدارس: 312",
        "المدينة: إربد | السكان: 2,003,800 | المساحة كم: 1,572 | المدارس: 208",
        "المدينة: الزرقاء | السكان: 1,581,000 | المساحة كم: 4,761 | المدارس: 190"]
    assert rows(parsed)[:5] == [
        "עיר: חיפה | תושבים: 285,300 | שטח בקמ״ר: 63.7 | בתי ספר: 112",
        "עיר: באר שבע | תושבים: 214,200 | שטח בקמ״ר: 117.5 | בתי ספר: 98",
        "עיר: נתניה | תושבים: 228,100 | שטח בקמ״ר: 29.0 | בתי ספר: 87",
        "עיר: ראשון לציון | תושבים: 260,500 | שטח בקמ״ר: 58.7 | בתי ספר: 104",
        "עיר: אשדוד | תושבים: 226,800 | שטח בקמ״ר: 47.2 | בתי ספר: 91"]
