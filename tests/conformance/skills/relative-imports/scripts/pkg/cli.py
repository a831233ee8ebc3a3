from .helpers import greeting

if __name__ == "__main__":
    print(greeting())
