"""Run a few coroutines."""
import asyncio
import sys


async def fetch(i):
    await asyncio.sleep(0)
    return i * i


async def main(n):
    return await asyncio.gather(*(fetch(i) for i in range(n)))


print(asyncio.run(main(int(sys.argv[1]))))
