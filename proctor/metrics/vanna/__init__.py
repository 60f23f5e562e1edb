"""Vanna's evaluators, scored as Vanna 2.0.2 scores them."""
