"""Documents: assembling executed notebooks, the nbconvert exporters (HTML, Typst PDF), cover, index."""
