import sys

if __name__ == "__main__":
    print(f"unpacked {sys.argv[1]} into {sys.argv[2]}")
