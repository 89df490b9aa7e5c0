"""The daemon unit tier: its shared fakes (``daemon_fakes``) sit beside this file."""

from __future__ import annotations

import sys
from pathlib import Path

# With importlib mode a test's own directory is not on the path; the fakes module needs it.
sys.path.insert(0, str(Path(__file__).parent))
