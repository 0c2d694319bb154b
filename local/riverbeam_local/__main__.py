import sys

from .command import ctrl_c_interrupts, main

ctrl_c_interrupts()
sys.exit(main())
