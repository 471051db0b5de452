"""A click command called from Python without standalone mode (no sys.exit), with a choice, a
multiple option and a return value: `click_inventory.py --item apple=3 --item pear=5 --sort qty`."""

import click


@click.command()
@click.option("--item", "items", multiple=True, help="NAME=QTY")
@click.option("--sort", type=click.Choice(["name", "qty"]), default="name")
@click.option("--min-qty", type=click.IntRange(0, 100), default=0)
def inventory(items, sort, min_qty):
    stock = {}
    for item in items:
        name, _, qty = item.partition("=")
        stock[name] = stock.get(name, 0) + int(qty)
    rows = [(n, q) for n, q in stock.items() if q >= min_qty]  # breakpoint
    rows.sort(key=(lambda r: r[1]) if sort == "qty" else (lambda r: r[0]))
    for name, qty in rows:
        click.echo(f"{name:<10}{qty:>5}")
    return len(rows)


if __name__ == "__main__":
    import sys

    shown = inventory.main(sys.argv[1:], standalone_mode=False)
    print(f"{shown} rows")
