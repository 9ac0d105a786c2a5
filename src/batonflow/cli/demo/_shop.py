"""The demo's shop: orders, products, refunds and complaints in memory, and the methods the agents call as tools."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Annotated, Literal, TextIO

from pydantic import Field

__all__ = ["Complaint", "Order", "Product", "Refund", "Shop", "print_changes"]

ComplaintCategory = Literal["delivery", "product", "staff", "other"]
# Bounded free text: a small model's runaway string is cut where the bound says (llama.cpp's grammar enforces
# maxLength), instead of at max_tokens, which would leave the call's JSON unfinished.
Reason = Annotated[str, Field(max_length=80)]
Query = Annotated[str, Field(max_length=60)]

# -- the shop: what the tools read and change ------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class Order:
    id: str
    items: list[str]
    amount: float
    status: Literal["shipped", "delivered", "refunded"]


@dataclass(slots=True, kw_only=True)
class Product:
    id: str
    name: str
    price: float
    specs: str


@dataclass(slots=True, kw_only=True)
class Refund:
    order_id: str
    amount: float
    reason: str


@dataclass(slots=True, kw_only=True)
class Complaint:
    ticket: str
    order_id: str
    category: ComplaintCategory
    text: str


def _sample_orders() -> dict[str, Order]:
    orders = [
        Order(id="1042", items=["X200 headphones"], amount=59.0, status="delivered"),
        Order(id="1043", items=["K3 kettle", "L7 desk lamp"], amount=74.5, status="delivered"),
        Order(id="1044", items=["X100 earbuds"], amount=29.0, status="shipped"),
    ]
    return {o.id: o for o in orders}


def _sample_products() -> dict[str, Product]:
    products = [
        Product(id="X200", name="X200 wireless headphones", price=59.0, specs="bluetooth 5.3, noise cancelling, 30 h"),
        Product(id="X100", name="X100 earbuds", price=29.0, specs="bluetooth 5.0, 6 h, no noise cancelling"),
        Product(id="K3", name="K3 kettle", price=34.5, specs="1.7 l, 2200 W, steel"),
        Product(id="L7", name="L7 desk lamp", price=40.0, specs="LED, 3 brightness levels, USB-C"),
    ]
    return {p.id: p for p in products}


@dataclass(slots=True, kw_only=True)
class Shop:
    """An in-memory shop. Its methods are the agents' tools: they answer in sentences a model can read, and
    turn bad input (an unknown order, a second refund) into an answer rather than an exception."""

    orders: dict[str, Order] = field(default_factory=_sample_orders)
    products: dict[str, Product] = field(default_factory=_sample_products)
    refunds: list[Refund] = field(default_factory=list)
    complaints: list[Complaint] = field(default_factory=list)

    def lookup_order(self, order_id: str) -> str:
        """Look up an order: its items, amount and status.

        Args:
            order_id: the order number, such as 1042
        """
        order = self._order(order_id)
        if order is None:
            return self._unknown_order(order_id)
        return f"Order {order.id}: {', '.join(order.items)}; {order.amount:.2f} EUR; status {order.status}."

    def issue_refund(self, order_id: str, reason: Reason) -> str:
        """Refund an order in full.

        Args:
            order_id: the order number, such as 1042
            reason: why the customer wants the refund
        """
        order = self._order(order_id)
        if order is None:
            return self._unknown_order(order_id)
        if order.status == "refunded":
            return f"Order {order.id} was already refunded; no second refund was issued."
        order.status = "refunded"
        self.refunds.append(Refund(order_id=order.id, amount=order.amount, reason=reason))
        return f"Refunded {order.amount:.2f} EUR for order {order.id} ({', '.join(order.items)})."

    def file_complaint(self, order_id: str, category: ComplaintCategory, text: Reason) -> str:
        """File a complaint about an order and return its ticket id.

        Args:
            order_id: the order number, such as 1043
            category: what the complaint is about
            text: the complaint in the customer's words
        """
        order = self._order(order_id)
        if order is None:
            return self._unknown_order(order_id)
        ticket = f"T-{1001 + len(self.complaints)}"
        self.complaints.append(Complaint(ticket=ticket, order_id=order.id, category=category, text=text))
        return f"Complaint filed as ticket {ticket} for order {order.id} ({category})."

    def search_products(self, query: Query) -> str:
        """Search the products by name and features.

        Args:
            query: words to look for, such as: noise cancelling headphones
        """
        words = {w for w in re.findall(r"[a-z0-9.]+", query.lower()) if len(w) > 2}

        def score(p: Product) -> int:
            return sum(w in f"{p.id} {p.name} {p.specs}".lower() for w in words)

        found = sorted((p for p in self.products.values() if score(p)), key=score, reverse=True)
        if not found:
            return f"No product matches {query}. We sell: {', '.join(p.name for p in self.products.values())}."
        return " ".join(f"{p.id}: {p.name}, {p.price:.2f} EUR ({p.specs})." for p in found[:3])

    def get_product(self, product_id: str) -> str:
        """Get one product's details.

        Args:
            product_id: the product id, such as X200
        """
        product = self.products.get(product_id.strip().upper())
        if product is None:
            return f"No product {product_id}: expected one of {', '.join(self.products)}."
        return f"{product.name} ({product.id}): {product.price:.2f} EUR; {product.specs}."

    def _order(self, order_id: str) -> Order | None:
        # The number wherever it is: small models write "#1042", ",1042" or "order 1042".
        number = re.search(r"\d+", order_id)
        return self.orders.get(number.group()) if number else None

    def _unknown_order(self, order_id: str) -> str:
        return f"No order {order_id}: expected an order number such as {', '.join(self.orders)}."


def print_changes(shop: Shop, out: TextIO) -> None:
    print("\n== what the tools changed in the shop ==", file=out)
    for refund in shop.refunds:
        print(f"refund issued: order {refund.order_id}, {refund.amount:.2f} EUR (reason: {refund.reason})", file=out)
    for c in shop.complaints:
        print(f"ticket filed:  {c.ticket} for order {c.order_id} [{c.category}]: {c.text}", file=out)
    if not shop.refunds and not shop.complaints:
        print("nothing: no refund issued, no complaint filed", file=out)
    print(f"orders now:    {', '.join(f'{o.id} {o.status}' for o in shop.orders.values())}", file=out)
