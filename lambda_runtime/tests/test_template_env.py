"""Every function's environment as SAM CLI resolves it for ``sam local``: nothing left blank.

SAM CLI resolves the template's intrinsics itself (not CloudFormation) and sets a variable it could not
resolve to an empty string, silently; a setting the Lambdas refuse when blank then fails every local call.
Its own resolver is asked here, in the SAM CLI's environment, for each completion mode.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from lambda_runtime import sam

RESOLVE = """
import json, sys
from samcli.lib.providers.provider import Stack
from samcli.lib.providers.sam_function_provider import SamFunctionProvider
from samcli.yamlhelper import yaml_parse

parameters = json.loads(sys.argv[1])
template = yaml_parse(open("template.yaml").read())
provider = SamFunctionProvider([Stack("", "", "template.yaml", parameters, template)], True)
print(json.dumps({f.name: (f.environment or {}).get("Variables", {}) for f in provider.get_all()}))
"""


@pytest.mark.parametrize("mode", ["poll", "watch", "callback"])
def test_sam_local_resolves_every_variable_of_every_function(mode: str) -> None:
    try:
        python = sam.require_sam().parent / "python"
    except sam.SamError as err:
        pytest.skip(str(err))
    parameters = {**sam.PARAMETERS, "CompletionMode": mode}
    done = subprocess.run(
        [str(python), "-c", RESOLVE, json.dumps(parameters)], cwd=sam.ROOT, capture_output=True, text=True, check=True
    )
    functions = json.loads(done.stdout.splitlines()[-1])
    assert set(sam.FUNCTIONS.values()) <= set(functions)
    unresolved = {
        f"{name}.{key}": value
        for name, variables in functions.items()
        for key, value in variables.items()
        if value is None or isinstance(value, (dict, list))
    }
    assert unresolved == {}
