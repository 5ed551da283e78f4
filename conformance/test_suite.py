"""The conformance suite as pytest tests (see conformance/pytest_plugin.py):

pytest --pyargs aclnn_conformance.conformance --aclnn-backend reference
"""

from __future__ import annotations

import pytest

from .pytest_plugin import run_case


@pytest.mark.aclnn_case
def test_case(aclnn_case, request: pytest.FixtureRequest) -> None:
    if aclnn_case is not None:
        run_case(request.config, aclnn_case)
