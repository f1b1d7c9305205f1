"""A shopping cart."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Line:
    sku: str
    price_cents: int
    quantity: int = 1


@dataclass
class Cart:
    lines: list[Line] = field(default_factory=list)

    def add(self, sku: str, price_cents: int, quantity: int = 1) -> None:
        if quantity <= 0:
            raise ValueError(f"quantity must be positive, got {quantity}")
        self.lines.append(Line(sku, price_cents, quantity))

    def total_cents(self) -> int:
        return sum(line.price_cents for line in self.lines)
