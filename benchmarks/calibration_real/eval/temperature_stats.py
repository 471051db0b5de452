"""Weekly temperature statistics with the statistics module."""

import statistics

week = {"mon": 18.2, "tue": 21.5, "wed": 19.8, "thu": 24.1, "fri": 22.0, "sat": 17.3, "sun": 20.6}

values = list(week.values())
mean = round(statistics.mean(values), 2)
median = statistics.median(values)
spread = round(statistics.stdev(values), 3)
above = [day for day, t in week.items() if t > mean]
fahrenheit = {day: round(t * 9 / 5 + 32, 1) for day, t in week.items()}
print(mean, median, spread, above, fahrenheit["thu"])
