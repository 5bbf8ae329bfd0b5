"""The documentation holds together: the README stays an overview, every relative link of the
README and of docs/ resolves (files and `#anchors`), and every `docs/*.md` or
`benchmarks/results/` path the code and the docs name exists."""

import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parents[1]
README_MAX_LINES = 300
# Guides written on other branches at the same time; linked already, checked once they exist.
PENDING = {"docs/guides/pretraining_data_at_scale.md", "docs/guides/backends.md"}
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"```.*?```", flags=re.S)


def markdown_files() -> list[pathlib.Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def anchors(path: pathlib.Path) -> set[str]:
    """GitHub's heading anchors: lowercase, punctuation but `-` and `_` dropped, spaces to
    `-`; a repeated heading gets `-1`, `-2`, ..."""
    found, seen = set(), {}
    for heading in re.findall(r"^#+ (.*)$", CODE.sub("", path.read_text("utf-8")), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def test_anchors_follow_github(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# TPUs: `--strategy tpu`\n## Serving\n## Serving\n```\n# not a heading\n```\n",
        encoding="utf-8",
    )
    assert anchors(page) == {"tpus---strategy-tpu", "serving", "serving-1"}


def test_the_readme_is_an_overview():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move the detail into "
        "docs/guides/ and link it"
    )


def test_every_relative_link_resolves():
    broken = []
    for document in markdown_files():
        for target in LINK.findall(CODE.sub("", document.read_text(encoding="utf-8"))):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            resolved = (document.parent / path).resolve() if path else document
            name = resolved.relative_to(REPO).as_posix() if resolved.is_relative_to(REPO) else None
            if name in PENDING and not resolved.exists():
                continue
            if name is None or not resolved.exists():
                broken.append(f"{document.relative_to(REPO)}: {target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{document.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_named_documents_and_results_exist():
    named = re.compile(r"(docs/[\w/]+\.md|benchmarks/results/[\w./-]+\.(?:json|png))")
    sources = [*markdown_files()]
    for folder in ("keras_albert", "tools", "examples", "benchmarks"):
        sources += sorted((REPO / folder).rglob("*.py"))
    missing = []
    for source in sources:
        for name in named.findall(source.read_text(encoding="utf-8")):
            if name not in PENDING and not (REPO / name).exists():
                missing.append(f"{source.relative_to(REPO)}: {name}")
    assert not missing, "\n".join(missing)
