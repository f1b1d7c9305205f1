from inventory_app import Item, Stock, reorder_suggestions


def test_receive_and_reorder() -> None:
    stock = Stock()
    stock.add_item(Item("A-1", "bolt", 25, reorder_level=5), quantity=3)
    assert stock.receive("A-1", 2) == 5
    assert reorder_suggestions(stock) == {"A-1": 5}
