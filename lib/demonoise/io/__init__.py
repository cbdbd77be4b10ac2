"""I/O layer: Eurostat formats in, tidy tables out; tidy tables -> :class:`~demonoise.counts.Counts`;
NUTS region metadata; the user CSV template.

Imports only the data model (:mod:`demonoise.counts`, :mod:`demonoise.errors`).
"""
