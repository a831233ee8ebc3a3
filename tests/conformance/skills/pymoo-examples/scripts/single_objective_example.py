"""Minimise a 1-D function by grid search."""


def run_single_objective_optimization():
    xs = [i / 10 for i in range(-20, 21)]
    return min(xs, key=lambda x: (x - 0.5) ** 2)


if __name__ == "__main__":
    print(f"best x = {run_single_objective_optimization()}")
