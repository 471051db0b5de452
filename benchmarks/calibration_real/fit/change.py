"""Make change with the fewest coins (dynamic programming)."""


def fewest_coins(amount, coins):
    best = [0] + [None] * amount
    for total in range(1, amount + 1):
        options = [best[total - c] for c in coins if c <= total and best[total - c] is not None]
        best[total] = min(options) + 1 if options else None
    return best[amount]


print(fewest_coins(11, [1, 2, 5]), fewest_coins(7, [2, 4]), fewest_coins(6, [1, 3, 4]))
