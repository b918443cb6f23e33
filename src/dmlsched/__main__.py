import sys

from dmlsched.console import main

sys.exit(main())
