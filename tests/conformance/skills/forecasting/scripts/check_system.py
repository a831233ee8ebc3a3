import os
import platform

print(f"{platform.system()} with {os.cpu_count()} CPUs: ok")
