"""Primes below a bound with the sieve of Eratosthenes."""


def sieve(limit):
    is_prime = [True] * limit
    is_prime[0] = is_prime[1] = False
    for n in range(2, int(limit**0.5) + 1):
        if is_prime[n]:
            for multiple in range(n * n, limit, n):
                is_prime[multiple] = False
    return [n for n, flag in enumerate(is_prime) if flag]


primes = sieve(30)
twin = [(p, p + 2) for p in primes if p + 2 in primes]
print(primes)
print(twin)
