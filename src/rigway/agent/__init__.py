"""The Rigway host agent: link, dispatch, safety and desktop backends."""
