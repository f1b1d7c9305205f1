"""A small stock-keeping library: items, stock levels and reorder suggestions."""

from inventory_app.reorder import reorder_suggestions
from inventory_app.stock import Item, Stock

__all__ = ["Item", "Stock", "reorder_suggestions"]
