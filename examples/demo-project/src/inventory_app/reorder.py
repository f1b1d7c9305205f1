"""Which items to reorder, and how many."""

from __future__ import annotations

from inventory_app.stock import Stock


def reorder_suggestions(stock: Stock, *, target_multiple: int = 2) -> dict[str, int]:
    """Items at or below their reorder level, with the quantity that brings them back up."""
    suggestions: dict[str, int] = {}
    for sku, item in stock.items.items():
        held = stock.quantities.get(sku, 0)
        if held <= item.reorder_level:
            suggestions[sku] = item.reorder_level * target_multiple - held
    return suggestions
