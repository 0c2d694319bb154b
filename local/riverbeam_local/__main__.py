import sys

from riverbeam.cli import ctrl_c_interrupts

from .cli import main

ctrl_c_interrupts()
sys.exit(main())
