"""Each metric of pilar.eval.metrics on small hand-computed cases."""

import pytest

from pilar.eval.metrics import (anls, answer_figures, chain_coverage, citation_support, delivered,
                                exact_match, mean_recall, mrr, normalise_answer, recall_at_k)

RANKED = ["a", "b", "c", "d", "e"]


def test_recall_at_k_positions():
    assert recall_at_k(RANKED, "c", 2) == 0.0
    assert recall_at_k(RANKED, "c", 3) == 1.0
    assert recall_at_k(RANKED, "z", 5) == 0.0
    assert recall_at_k(RANKED, ["a", "d"], 2) == 0.5
    assert recall_at_k(RANKED, ["a", "d"], 10) == 1.0


def test_recall_at_k_tie_straddling_k():
    # b, c, d tie at positions 2..4: with k = 3 two of three slots are inside
    scores = [0.9, 0.5, 0.5, 0.5, 0.1]
    assert recall_at_k(RANKED, "d", 3, scores) == pytest.approx(2 / 3)
    assert recall_at_k(RANKED, "b", 3, scores) == pytest.approx(2 / 3)
    assert recall_at_k(RANKED, "b", 1, scores) == 0.0
    assert recall_at_k(RANKED, "d", 4, scores) == 1.0
    # two golds in the tie, one slot of three inside the top 2
    assert recall_at_k(RANKED, ["b", "c"], 2, scores) == pytest.approx(1 / 3)


def test_mean_recall_over_1_to_10():
    # gold at rank 3: recall@1,2 = 0, recall@3..10 = 1 -> 8/10
    assert mean_recall(RANKED, "c") == pytest.approx(0.8)
    assert mean_recall(RANKED, "z") == 0.0
    assert mean_recall(RANKED, "c", ks=(1, 3)) == 0.5


def test_mrr_positions_and_cutoff():
    assert mrr(RANKED, "c") == pytest.approx(1 / 3)
    assert mrr(RANKED, ["d", "b"]) == pytest.approx(1 / 2)
    assert mrr(RANKED, "e", k=4) == 0.0
    assert mrr(RANKED, "z") == 0.0


def test_mrr_ties():
    scores = [0.9, 0.5, 0.5, 0.5, 0.1]
    # one gold in a 3-way tie at ranks 2..4: (1/2 + 1/3 + 1/4) / 3
    assert mrr(RANKED, "c", scores=scores) == pytest.approx((1 / 2 + 1 / 3 + 1 / 4) / 3)
    # two golds in it: first gold at rank 2 w.p. 2/3, rank 3 w.p. 1/3
    assert mrr(RANKED, ["b", "d"], scores=scores) == pytest.approx(2 / 3 / 2 + 1 / 3 / 3)
    # cutoff inside the tie: rank 4 falls outside k = 3
    assert mrr(RANKED, "c", k=3, scores=scores) == pytest.approx((1 / 2 + 1 / 3) / 3)
    # all tied: every order equally likely
    assert mrr(["x", "y"], "y", scores=[1.0, 1.0]) == pytest.approx(0.75)


def test_chain_coverage():
    assert chain_coverage(RANKED, ["a", "c"], 3) == 1.0
    assert chain_coverage(RANKED, ["a", "d"], 3) == 0.0
    assert chain_coverage(RANKED, ["a", "z"], 5) == 0.0
    scores = [0.9, 0.5, 0.5, 0.5, 0.1]
    # b and c both in the top 3 of the tie b,c,d (2 slots): C(2,2)/C(3,2) = 1/3
    assert chain_coverage(RANKED, ["a", "b", "c"], 3, scores) == pytest.approx(1 / 3)
    assert chain_coverage(RANKED, ["a", "d"], 3, scores) == pytest.approx(2 / 3)


def test_bad_rankings_raise():
    with pytest.raises(ValueError, match="distinct"):
        recall_at_k(["a", "a"], "a", 1)
    with pytest.raises(ValueError, match="scores"):
        mrr(RANKED, "a", scores=[1.0])
    with pytest.raises(ValueError, match="k must"):
        recall_at_k(RANKED, "a", 0)
    with pytest.raises(ValueError, match="gold"):
        chain_coverage(RANKED, [], 3)


def test_normalise_answer():
    assert normalise_answer('  "Hello,\n  World!" ') == "hello, world"
    assert normalise_answer("«Zürich»") == "zürich"
    assert normalise_answer("...") == ""


def test_delivered():
    text = "Rank | Name\n1 | Kenenisa  BEKELE\n2 | Haile"
    assert delivered(["kenenisa bekele"], text)
    assert delivered(["Bekele.", "Haile"], text)
    assert not delivered(["Bekele", "Gebrselassie"], text)
    with pytest.raises(ValueError):
        delivered([], text)
    with pytest.raises(ValueError):
        delivered("Bekele", text)


def test_citation_support():
    assert citation_support(["1998"], ["won in 1998", "other"])
    assert citation_support(["a1", "b2"], ["x a1", "y b2"])
    assert not citation_support(["1998"], ["won in 1999"])
    assert not citation_support(["1998"], [])


def test_exact_match():
    assert exact_match("The Beatles.", ["the beatles"]) == 1.0
    assert exact_match("1,000", ["1000"]) == 1.0
    assert exact_match("Beatles", ["the beatles"]) == 0.0
    assert exact_match("b", ["a", "B!"]) == 1.0


def test_anls_edge_cases():
    assert anls("Paris", ["paris "]) == 1.0
    assert anls("abce", ["abcd"]) == pytest.approx(0.75)  # NL 1/4
    assert anls("ab", ["ac"]) == 0.0  # NL exactly 0.5 is not below the threshold
    assert anls("abc", ["abd"]) == pytest.approx(2 / 3)  # NL 1/3
    assert anls("", ["x"]) == 0.0
    assert anls("", [""]) == 1.0
    assert anls("abcd", ["wxyz", "abcf"]) == pytest.approx(0.75)  # best alternative
    assert anls("ab", ["ac"], threshold=0.6) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        anls("x", [])


def test_exact_match_edge_cases():
    assert exact_match("  Ratan\n Planet ", ["ratan planet"]) == 1.0  # spaces collapsed
    assert exact_match("«Zürich»", ["zürich"]) == 1.0  # Unicode punctuation removed
    assert exact_match("", ["x"]) == 0.0
    assert exact_match("...", [""]) == 1.0  # nothing left on either side
    assert exact_match("10,000 m", ["10000 m"]) == 1.0
    assert exact_match("1999-2000", ["19992000"]) == 1.0  # hyphens are punctuation too
    with pytest.raises(ValueError):
        exact_match("x", [])
    with pytest.raises(ValueError):
        exact_match("x", "x")  # a bare string is not a list of answers


def test_anls_case_space_and_length():
    assert anls("RATAN   planet", ["ratan planet"]) == 1.0  # lowercased, spaces collapsed
    assert anls("ratan tower", ["ratan planet"]) == pytest.approx(1 - 5 / 12)  # NL 5/12
    assert anls("ratan planet, kanpur", ["ratan planet"]) == pytest.approx(1 - 8 / 20)
    assert anls("the ratan planet tower", ["ratan planet"]) == pytest.approx(1 - 10 / 22)
    assert anls("ratan planet tower in kanpur", ["ratan planet"]) == 0.0  # NL 16/28 >= 0.5
    assert anls("x", ["", "x"]) == 1.0  # the best alternative counts


def test_answer_figures_of_one_answer():
    # gold parts joined by ", " as one gold string
    got = answer_figures("Bekele, Haile", ["Bekele", "Haile"], ["1 | Bekele", "2 | Haile"])
    assert got == {"EM": 1.0, "ANLS": 1.0, "citation support": 1.0}
    got = answer_figures("Ratan Tower", ["Ratan Planet"], ["Ratan Tower | 27"])
    assert got["EM"] == 0.0 and got["ANLS"] == pytest.approx(7 / 12)
    assert got["citation support"] == 0.0
    assert answer_figures("Ratan Planet", ["Ratan Planet"]) == {"EM": 1.0, "ANLS": 1.0}
    assert answer_figures("x", ["Ratan Planet"], [])["citation support"] == 0.0
    with pytest.raises(ValueError):
        answer_figures("x", [])
