"""Documents: assembly of executed notebooks, the nbconvert exporters (HTML, Typst PDF),
cover, index, where notebooks and templates are found."""
