"""Standard-library data processing: CSV in, aggregates, JSON out."""

import csv
import io
import json
from collections import defaultdict

DATA = """region,product,units,price
north,widget,10,2.5
south,widget,4,2.5
north,gadget,3,10.0
east,widget,7,2.5
south,gadget,1,10.0
"""


def summarise(text):
    totals = defaultdict(float)
    units = defaultdict(int)
    for row in csv.DictReader(io.StringIO(text)):
        revenue = int(row["units"]) * float(row["price"])  # breakpoint
        totals[row["region"]] += revenue
        units[row["product"]] += int(row["units"])
    return {"revenue": dict(sorted(totals.items())), "units": dict(sorted(units.items()))}


print(json.dumps(summarise(DATA), indent=2, sort_keys=True))
