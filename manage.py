#!/usr/bin/env python
"""Django's command-line utility for xworkmate in a checkout (installed: `xworkmate manage`)."""

import sys

from xworkmate.console import manage

if __name__ == "__main__":
    manage(sys.argv)
