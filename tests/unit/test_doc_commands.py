"""Every command the deploy docs write out is one that exists, with options that exist.

The shell blocks of README.md, docs/deployment.md, docs/notifier.md and the example's README are read as
a shell reads them (continued lines joined, comments dropped, ``$(...)`` checked as commands of their
own, ``cd`` followed), and each command is checked against what it calls:

- ``aws``: the operation and every option exist in botocore's model of the service (the AWS CLI's own
  commands and shortcuts aside), its required members are given, and a ``--query`` reading a stack's
  outputs or parameters names ones the template has;
- ``sam deploy``: ``--capabilities CAPABILITY_IAM`` (the stacks create roles), and every
  ``--parameter-overrides`` key a parameter of the template in the folder it runs from;
- ``helm``: the chart exists, every ``--set`` names a value of the chart, and (with the pinned helm
  built) ``helm template`` with those values renders;
- ``jobsync``: the command line parses its arguments; ``make``: the target exists; files the commands
  read (a Dockerfile, a template to copy) exist where the command runs.
"""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobsync_cli import main as cli
from tests.cfn import load_template
from tests.support import awscli

ROOT = Path(__file__).resolve().parents[2]
DOCS = [
    ROOT / "README.md",
    ROOT / "docs" / "deployment.md",
    ROOT / "docs" / "notifier.md",
    ROOT / "examples" / "train-evaluate-deploy" / "README.md",
]
# The AWS CLI's own commands (not API operations) these docs use.
CLI_COMMANDS = {
    ("ecr", "get-login-password"),
    ("eks", "update-kubeconfig"),
    ("eks", "wait"),
    ("s3", "cp"),
    ("s3", "rm"),
}
STACKS = {
    "jobsync": ROOT / "template.yaml",
    "jobsync-train-evaluate-deploy": ROOT / "examples/train-evaluate-deploy/template.yaml",
}
CHART = ROOT / "charts" / "jobsync"
SUBSTITUTION = "SUBSTITUTED"


def blocks(path: Path) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", path.read_text(), re.S)


PROGRAMS = {"aws", "sam", "helm", "jobsync", "kubectl", "docker", "eksctl", "make", "pip", "git", "cd", "export", "for"}


def lines(block: str) -> list[str]:
    """The command lines of a block (a block may show a command's output too: those lines are not commands)."""
    joined = re.sub(r"\\\n\s*", " ", block)
    out = []
    for line in joined.splitlines():
        first = line.split(None, 1)[0] if line.strip() else ""
        if first in PROGRAMS or re.match(r"^[A-Z_][A-Z0-9_]*=", first):
            out.append(line)
    return out


def substitutions(line: str) -> tuple[str, list[str]]:
    """The line with each ``$(...)`` replaced by a word, and the commands inside them."""
    inner: list[str] = []
    out, i = "", 0
    while i < len(line):
        if line.startswith("$(", i):
            depth, j = 1, i + 2
            while depth:
                depth += {"(": 1, ")": -1}.get(line[j], 0)
                j += 1
            outer, nested = substitutions(line[i + 2 : j - 1])
            inner += [outer, *nested]
            out += SUBSTITUTION
            i = j
        else:
            out += line[i]
            i += 1
    return out, inner


def commands(line: str) -> list[list[str]]:
    """The simple commands of a line, as words (pipes, && and ; split them; assignments dropped)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    found: list[list[str]] = [[]]
    for word in lexer:
        if set(word) <= set("|&;"):
            found.append([])
        else:
            found[-1].append(word)
    out = []
    for words in found:
        while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]) and words[0][0] != "-":
            words = words[1:]
        if words:
            out.append(words)
    return out


def every_command() -> list[tuple[str, Path, list[str]]]:
    """(where, the folder it runs in, words) for every command of every doc."""
    found = []
    for path in DOCS:
        for n, block in enumerate(blocks(path)):
            cwd = ROOT
            for line in lines(block):
                outer, inner = substitutions(line)
                for text in [outer, *inner]:
                    for words in commands(text):
                        where = f"{path.relative_to(ROOT)} block {n + 1}: {' '.join(words)[:80]}"
                        if words[0] == "cd":
                            cwd = cwd / words[1]
                            assert cwd.is_dir(), where
                        found.append((where, cwd, words))
    return found


ALL = every_command()


def by(program: str) -> list[Any]:
    return [pytest.param(cwd, words, id=where) for where, cwd, words in ALL if words[0] == program]


def test_the_docs_have_the_commands_this_test_checks():
    programs = {words[0] for _, _, words in ALL}
    assert {"aws", "sam", "helm", "jobsync", "kubectl", "docker", "eksctl", "make"} <= programs
    assert len(by("aws")) >= 25 and len(by("helm")) >= 6


@pytest.mark.parametrize(("cwd", "words"), by("aws"))
def test_each_aws_command_is_an_operation_with_options_it_has(cwd, words):
    service, command = words[1], words[2]
    if (service, command) in CLI_COMMANDS:
        if (service, command) == ("s3", "cp") and not words[3].startswith("s3://"):
            assert (cwd / words[3]).is_file(), f"aws s3 cp from {words[3]}, which is not in {cwd.relative_to(ROOT)}"
        return
    _, model, params, options = awscli.parse(words)
    query = " ".join(options.get("query", []))
    for kind, key in re.findall(r"(Outputs|Parameters)\[\?(?:OutputKey|ParameterKey)=='(\w+)'\]", query):
        template = load_template(STACKS[params["StackName"]])
        assert key in template[kind], f"stack {params['StackName']} has no {kind[:-1].lower()} {key}"
    if re.fullmatch(r"[a-z][\w.]*", query or "-"):  # a plain path: it must lead through the answer's shape
        shape = model.output_shape
        for part in query.split("."):
            members = {name[0].lower() + name[1:]: m for name, m in shape.members.items()} | shape.members
            assert part in members, f"{' '.join(words[:3])} answers no {query}"
            shape = members[part]


@pytest.mark.parametrize(("cwd", "words"), [p for p in by("sam") if p.values[1][1] in ("deploy", "delete")])
def test_each_sam_deploy_names_the_capability_and_parameters_the_template_has(cwd, words):
    if words[1] == "delete":
        assert "--stack-name" in words
        return
    assert "--capabilities" in words and words[words.index("--capabilities") + 1] == "CAPABILITY_IAM"
    template = load_template(cwd / "template.yaml")
    if "--parameter-overrides" in words:
        pairs = shlex.split(words[words.index("--parameter-overrides") + 1])
        unknown = {pair.split("=", 1)[0] for pair in pairs} - set(template["Parameters"])
        assert not unknown, f"{sorted(unknown)}: not parameters of {(cwd / 'template.yaml').relative_to(ROOT)}"


def chart_values() -> set[str]:
    """Every value path the chart takes (its schema's properties, nested ones joined by dots)."""
    schema = yaml.safe_load((CHART / "values.schema.json").read_text())

    def walk(node: dict[str, Any], prefix: str) -> set[str]:
        out = set()
        for name, sub in (node.get("properties") or {}).items():
            out.add(prefix + name)
            out |= walk(sub, prefix + name + ".")
        return out

    return walk(schema, "")


@pytest.mark.parametrize(("cwd", "words"), by("helm"))
def test_each_helm_command_installs_the_chart_with_values_it_takes(cwd, words):
    if words[1] == "uninstall":
        assert words[2] == "jobsync"
        return
    if words[1] == "template":
        assert (cwd / words[3]).resolve() == CHART
    else:
        assert words[1:3] == ["upgrade", "--install"] and (cwd / words[4]).resolve() == CHART
    known = chart_values()
    values: dict[str, Any] = {}
    for flag, setting in itertools.pairwise(words):
        if flag in ("--set", "--set-string"):
            key, _, value = setting.partition("=")
            key = key.replace("\\.", "\0")
            parts = [p.replace("\0", ".") for p in key.split(".")]
            assert ".".join(parts[:2]) in known or parts[0] in known, f"the chart has no value {key}"
            node = values
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = "x" if value.startswith("$") or "$" in value else value.replace("\\,", ",")
    from e2e import helm

    if "--reuse-values" in words or not helm.available():
        return
    if values.get("completionMode") == "callback":
        values.setdefault("notifier", {}).setdefault("image", {})["repository"] = "registry.example/n"
        values["eventBusName"], values["region"] = "jobsync-jobs", "us-east-1"
    assert helm.template(values, "ml-training")


@pytest.mark.parametrize(("cwd", "words"), [p for p in by("helm") if p.values[1][1] == "template"])
def test_the_rendering_piped_to_kubectl_is_yaml_and_nothing_else(cwd, words):
    """The pipe kubectl reads: every document a Kubernetes object, no line of anything else on stdout."""
    from e2e import helm

    if not helm.available():
        pytest.skip("helm is not built: make chart")
    args = [w.replace("$NAMESPACE", "ml-training") if w.startswith("$") else w for w in words[1:]]
    out = helm.run(*[str(CHART) if a == "charts/jobsync" else a for a in args], "--kube-version", helm.KUBE_VERSION)
    docs = [doc for doc in yaml.safe_load_all(out) if doc is not None]
    assert docs and all(isinstance(doc, dict) and doc.get("apiVersion") and doc.get("kind") for doc in docs)
    assert all(line.startswith(("#", "---", " ", "-")) or ":" in line for line in out.splitlines() if line)


@pytest.mark.parametrize(("cwd", "words"), by("jobsync"))
def test_each_jobsync_command_parses(cwd, words):
    args = [w if not w.startswith("$") else "x" for w in words[1:]]
    args = [a for a in args if not a.startswith("[")]
    try:
        cli.build_parser().parse_args([a.replace("SUBSTITUTED", "x") for a in args if a not in ("PATH]", "NAME]")])
    except SystemExit as err:
        pytest.fail(f"jobsync {' '.join(args)}: exits {err.code}")


@pytest.mark.parametrize(("cwd", "words"), by("make"))
def test_each_make_target_exists(cwd, words):
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))
    assert words[1] in targets


@pytest.mark.parametrize(("cwd", "words"), by("docker"))
def test_the_image_is_built_from_the_notifier_dockerfile_for_named_platforms(cwd, words):
    if words[1:3] != ["buildx", "build"]:
        return
    assert (cwd / words[words.index("-f") + 1]).is_file()
    assert "--platform" in words and "--push" in words
    platforms = set(words[words.index("--platform") + 1].split(","))
    assert platforms <= {"linux/amd64", "linux/arm64"}


def test_the_multi_arch_build_covers_both_architectures_eks_nodes_run():
    builds = [words for _, _, words in ALL if words[:3] == ["docker", "buildx", "build"]]
    assert any(set(w[w.index("--platform") + 1].split(",")) == {"linux/amd64", "linux/arm64"} for w in builds)


def test_a_line_with_a_typo_in_an_option_is_refused():
    """So that the checks above can fail."""
    with pytest.raises(ValueError, match="has no option --kubernetes-group"):
        awscli.parse("aws eks create-access-entry --cluster-name c --principal-arn a --kubernetes-group g")
    with pytest.raises(ValueError, match="needs"):
        awscli.parse("aws eks create-access-entry --cluster-name c")
