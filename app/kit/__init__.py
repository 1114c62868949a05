"""What the pages share: the model registry, URL state, limits, presentation mode, errors, shared figures."""
