"""Page assets: content-versioned URLs, a day of caching, 404 for anything else."""

from __future__ import annotations

from pathlib import Path

from rigway.gateway.static_files import StaticFiles


def test_url_changes_with_the_content(tmp_path: Path) -> None:
    script = tmp_path / "viewer.js"
    script.write_text("one()")
    before = StaticFiles(tmp_path, "/assets/").url("viewer.js")
    script.write_text("two()")
    after = StaticFiles(tmp_path, "/assets/").url("viewer.js")
    assert before.startswith("/assets/viewer.js?v=")
    assert before != after


def test_known_files_are_served_typed_and_cached(tmp_path: Path) -> None:
    (tmp_path / "page.css").write_text("body {}")
    response = StaticFiles(tmp_path, "/assets").response("page.css")
    assert response.status_code == 200
    assert response.media_type == "text/css; charset=utf-8"
    assert response.headers["cache-control"] == "public, max-age=86400"


def test_anything_else_is_404(tmp_path: Path) -> None:
    (tmp_path / "page.css").write_text("body {}")
    (tmp_path / "nested").mkdir()
    files = StaticFiles(tmp_path, "/assets")
    for name in ("missing.js", "nested", "../page.css", ""):
        assert files.response(name).status_code == 404
