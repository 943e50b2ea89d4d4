"""The notebooks run top to bottom, offline, in a real Jupyter kernel (nbclient + ipykernel)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from rxcord.cli.chat import API_KEY_VARIABLES

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
EXPECTED = [
    "01-quickstart",
    "02-stages",
    "03-reasoning-guards",
    "04-delivery",
    "05-live-provider",
    "06-decisions",
]
SECRETS = (
    *API_KEY_VARIABLES.values(),
    "DISCORD_BOT_TOKEN",
    "RXCORD_DISCORD_CHANNEL",
    "RXCORD_DISCORD_BASE_URL",
)
"""Unset for the kernel: with them, notebook 05 would talk to the real provider and Discord."""
PLOTS = {"01-quickstart": 1, "02-stages": 7, "04-delivery": 4, "05-live-provider": 1}
"""Notebooks that draw, and how many pictures they show inline."""
CELL_TIMEOUT = 60


def _read(path: Path) -> nbformat.NotebookNode:
    notebook: nbformat.NotebookNode = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    return notebook


def _outputs(notebook: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]


def test_the_documented_notebooks_are_there() -> None:
    """notebooks/ holds exactly the documented notebooks."""
    assert [path.stem for path in NOTEBOOKS] == EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    """Committed notebooks are valid and have no outputs or execution counts (clean diffs)."""
    notebook = _read(path)
    nbformat.validate(notebook)
    assert notebook.metadata["kernelspec"]["name"] == "python3"
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(cell.outputs == [] and cell.execution_count is None for cell in code)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebook_executes_offline(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every cell runs without error, from the repository root, with no key in the environment."""
    for name in SECRETS:
        monkeypatch.delenv(name, raising=False)
    notebook = _read(path)
    client = NotebookClient(
        notebook, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    )
    client.execute()  # raises CellExecutionError at the first failing cell
    outputs = _outputs(notebook)
    assert not [output for output in outputs if output.output_type == "error"]
    images = [output for output in outputs if "image/png" in output.get("data", {})]
    assert len(images) == PLOTS.get(path.stem, 0)
    if path.stem == "05-live-provider":
        text = "".join(output.get("text", "") for output in outputs)
        assert "running offline" in text
