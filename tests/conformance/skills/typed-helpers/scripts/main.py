from typed import describe

print(describe([1, 2, 3]))
