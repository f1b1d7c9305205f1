from shop.cart import Cart


def test_total_counts_quantities() -> None:
    cart = Cart()
    cart.add("apple", 50, quantity=3)
    cart.add("pear", 70)
    assert cart.total_cents() == 220
