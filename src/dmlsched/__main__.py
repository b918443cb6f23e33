import sys

from dmlsched.cli import main

sys.exit(main())
