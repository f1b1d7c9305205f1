"""Items and the quantities held of each."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Item:
    sku: str
    name: str
    unit_price_cents: int
    reorder_level: int = 10


@dataclass
class Stock:
    items: dict[str, Item] = field(default_factory=dict)
    quantities: dict[str, int] = field(default_factory=dict)

    def add_item(self, item: Item, quantity: int = 0) -> None:
        if item.sku in self.items:
            raise ValueError(f"duplicate SKU {item.sku!r}")
        self.items[item.sku] = item
        self.quantities[item.sku] = quantity

    def receive(self, sku: str, quantity: int) -> int:
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        self.quantities[sku] = self.quantities.get(sku, 0) + quantity
        return self.quantities[sku]

    def ship(self, sku: str, quantity: int) -> int:
        # BUG (kept on purpose for the code reviewer): no check for negative stock.
        self.quantities[sku] = self.quantities[sku] - quantity
        return self.quantities[sku]

    def value_cents(self) -> int:
        return sum(self.items[sku].unit_price_cents * qty for sku, qty in self.quantities.items())
