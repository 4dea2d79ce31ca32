"""docs/seeds-results.md and README.md's seeds summary are written from the published Table 1 and Figure 3 records by the
first page's code (scripts/seeds_results.py), never by hand: the committed files are what the script writes from
published/ now, and a first page without what the page takes writes nothing."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("seeds_results", ROOT / "scripts" / "seeds_results.py")
seeds_results = importlib.util.module_from_spec(spec)
spec.loader.exec_module(seeds_results)


@pytest.fixture(scope="module")
def built():
    return seeds_results.build(ROOT / "published")  # the first page of published/: about 15 s


def test_the_committed_page_and_readme_summary_are_written_from_the_published_records(built):
    """scripts/paper_grid.sh (SEEDS set) writes both again in the commit of every publish."""
    page, block = built
    assert (ROOT / "docs" / "seeds-results.md").read_text(encoding="utf-8") == page, (
        "docs/seeds-results.md differs from the published records: run python scripts/seeds_results.py")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.count(seeds_results.README_BEGIN) == 1
    committed = readme.split(seeds_results.README_BEGIN + "\n")[1].split(seeds_results.README_END)[0]
    assert committed == block, (
        "README.md's seeds summary differs from the published records: run python scripts/seeds_results.py")


def test_the_summary_holds_table1_beside_its_three_seeds_and_the_paper(built):
    """The README's block: the three findings, Table 1 (11 settings) beside seeds 0–2 and the paper, Figure 3 (6
    algorithms and PPO's verdict per task, at every seed and at seeds 0–2), then ε = 0.2 on each of the 7 tasks beside
    the published PPO numbers; the page has every section and each check's finding."""
    page, block = built
    tables = [[line for line in part.splitlines() if line.startswith("| ") and "|---" not in line]
              for part in block.split("\n\n") if part.startswith("| ")]
    assert [len(rows) for rows in tables] == [1 + 11, 1 + 6 + 2, 1 + 7]
    assert "ours, seeds 0–2" in tables[0][0] and "| paper |" in tables[0][0]
    assert tables[1][0].startswith("| algorithm |") and tables[1][-1].startswith("| PPO against the best other")
    assert tables[2][0].startswith("| task | ours, v5 |") and "published PPO at 1M" in tables[2][0]
    for start in seeds_results.FINDINGS:
        assert sum(line.startswith(start) for line in block.splitlines()) == 1, start
    for heading in seeds_results.SECTIONS:
        assert sum(line.startswith(heading) for line in page.splitlines()) == 1, heading
    for check in ("table1_v4", "table1_bootstrap", "swimmer_details"):  # each published: its finding on the page only
        assert sum(line.startswith(f"- **{check}**") for line in page.splitlines()) == 1, check
        assert f"- **{check}**" not in block


def test_a_first_page_without_a_section_writes_nothing(tmp_path, monkeypatch):
    page = "\n".join([*(f"{start}**: x" for start in seeds_results.FINDINGS), "",
                      *(s for s in seeds_results.SECTIONS if not s.startswith("## How many seeds")), ""])
    monkeypatch.setattr(seeds_results, "first_page", lambda published: page)
    readme, out = tmp_path / "README.md", tmp_path / "page.md"
    kept = f"before\n{seeds_results.README_BEGIN}\nold\n{seeds_results.README_END}\nafter\n"
    readme.write_text(kept, encoding="utf-8")
    with pytest.raises(SystemExit, match="no section '## How many seeds"):
        seeds_results.main(["--published", str(tmp_path), "--out", str(out), "--readme", str(readme)])
    assert readme.read_text(encoding="utf-8") == kept and not out.exists()
    # with every section: the block between the markers replaced, the rest of the README kept
    full = page + "## How many seeds each conclusion needs (x)\n\n| a |\n|---|\n| 1 |\n"
    full = full.replace(seeds_results.SECTIONS[0], seeds_results.SECTIONS[0] + "\n\n| t |\n|---|\n| 2 |\n")
    full = full.replace(seeds_results.SECTIONS[1], seeds_results.SECTIONS[1] + "\n\n| f |\n|---|\n| 4 |\n")
    full = full.replace(seeds_results.SECTIONS[3], seeds_results.SECTIONS[3] + "\n\n| r |\n|---|\n| 3 |\n")
    monkeypatch.setattr(seeds_results, "first_page", lambda published: full)
    assert seeds_results.main(["--published", str(tmp_path), "--out", str(out), "--readme", str(readme)]) == 0
    text = readme.read_text(encoding="utf-8")
    assert text.startswith(f"before\n{seeds_results.README_BEGIN}\n- **Table 1**: x\n") and text.endswith(
        f"| r |\n|---|\n| 3 |\n\nThe notes of each table and how many seeds each conclusion needs: "
        f"[docs/seeds-results.md](docs/seeds-results.md).\n{seeds_results.README_END}\nafter\n")
    readme.write_text("no markers\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="no lines"):
        seeds_results.main(["--published", str(tmp_path), "--out", str(out), "--readme", str(readme)])
    assert readme.read_text(encoding="utf-8") == "no markers\n"
