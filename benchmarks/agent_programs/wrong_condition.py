def count_passing(scores, threshold):
    passed = 0
    for s in scores:
        if s > threshold:
            passed += 1
    return passed


result = count_passing([50, 60, 70], 60)
print(result)
