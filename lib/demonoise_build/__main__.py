"""``python -m demonoise_build [--check]``: rebuild the embedded datasets (or check them)."""

from demonoise_build.make import main

raise SystemExit(main())
