"""A grid of slide thumbnails (needs LibreOffice)."""
import sys

from office.soffice import get_soffice_env


def main():
    env = get_soffice_env()
    print(f"thumbnails of {sys.argv[1]} with SAL_USE_VCLPLUGIN={env['SAL_USE_VCLPLUGIN']}")


if __name__ == "__main__":
    main()
