"""Evaluation: metrics (:mod:`pilar.eval.metrics`) shared by ``pilar eval``
and ``bench/``, so each figure is computed in one place."""
