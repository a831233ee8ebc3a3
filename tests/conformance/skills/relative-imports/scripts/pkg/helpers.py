def greeting():
    return "hello from a package"
