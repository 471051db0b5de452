"""Moving averages of daily temperatures and the warmest window."""

temps = [12.5, 14.0, 13.2, 16.8, 18.1, 17.5, 15.0, 19.2]


def moving_average(values, window):
    out = []
    total = sum(values[:window])
    out.append(total / window)
    for i in range(window, len(values)):
        total += values[i] - values[i - window]
        out.append(round(total / window, 2))
    return out


averages = moving_average(temps, 3)
warmest = max(range(len(averages)), key=averages.__getitem__)
print(averages, warmest)
