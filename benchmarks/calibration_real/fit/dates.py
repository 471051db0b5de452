"""Date arithmetic: due dates, weekdays and days left."""

from datetime import date, timedelta

start = date(2024, 2, 20)
terms = {"net30": 30, "net15": 15, "net7": 7}


def due(issued, term):
    return issued + timedelta(days=terms[term])


invoices = [("A-1", "net30"), ("A-2", "net7"), ("A-3", "net15")]
schedule = {}
for number, term in invoices:
    when = due(start, term)
    schedule[number] = (when.isoformat(), when.strftime("%A"))
today = date(2024, 3, 1)
overdue = [n for n, (iso, _) in schedule.items() if date.fromisoformat(iso) < today]
print(schedule, overdue)
