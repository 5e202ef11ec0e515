"""Deterministic metrics (retrieval, text overlap) and the statistics that say how sure a score is."""
