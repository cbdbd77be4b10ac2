"""The kernel side: what report notebooks display (tables, boxes, charts, sections) and their Typst twins."""
