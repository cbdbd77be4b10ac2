"""Documents: assembly of executed notebooks, the nbconvert exporters, cover, index, templates."""
