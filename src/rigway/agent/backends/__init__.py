"""Desktop backends: one module (or package) per platform behind `base.Desktop`."""
