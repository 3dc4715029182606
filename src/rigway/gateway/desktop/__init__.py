"""Session-scoped desktop operations: screen, dirty rects, observe, targets, input, apps."""
