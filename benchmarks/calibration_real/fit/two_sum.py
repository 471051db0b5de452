"""Pairs of prices that add up to a budget."""

prices = [12, 7, 3, 15, 8, 5, 10]
budget = 20


def pairs_with_sum(values, target):
    seen = {}
    found = []
    for index, value in enumerate(values):
        partner = target - value
        if partner in seen:
            found.append((seen[partner], index))
        seen[value] = index
    return found


matches = pairs_with_sum(prices, budget)
names = [(prices[i], prices[j]) for i, j in matches]
print(matches, names)
